"""Ctrl-C at awkward moments: inside a string run by ``exec`` (dataclasses build methods that
way while Hydra imports), inside a library that swallows it or turns it into another error,
inside a finaliser (where Python would print "Exception ignored" and drop it)."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from mcu_exp import interrupts
from mcu_exp.interrupts import INTERRUPTED_EXIT, interrupted_by

CAUGHT_INSIDE_EXEC = """
from mcu_exp.interrupts import exit_interrupted
try:
    exec("raise KeyboardInterrupt", {})
except KeyboardInterrupt:
    exit_interrupted("interrupted while starting; nothing ran")
"""


def test_an_interrupt_caught_after_an_exec_string_exits_130_not_by_sigint(tmp_path: Path) -> None:
    """Run as ``python -m`` (how the tests and ``make`` start jobs), CPython would end such a
    process by SIGINT (-2 to a parent) however it was caught."""
    (tmp_path / "caught_inside_exec.py").write_text(CAUGHT_INSIDE_EXEC)
    done = subprocess.run(
        [sys.executable, "-m", "caught_inside_exec"], cwd=tmp_path, capture_output=True, text=True, timeout=60
    )
    assert done.returncode == INTERRUPTED_EXIT, done.stderr
    assert done.stderr == "mcu-exp: interrupted while starting; nothing ran\n"


def _interrupted_cleanup() -> None:
    """A library's context manager whose clean-up fails while a Ctrl-C unwinds it."""
    try:
        raise KeyboardInterrupt
    finally:
        raise AttributeError("'NoneType' object has no attribute '_invalidate_flags_cache'")  # replaces it


def test_an_error_raised_while_a_ctrl_c_unwound_counts_as_the_ctrl_c() -> None:
    with pytest.raises(RuntimeError) as wrapped:
        try:
            _interrupted_cleanup()
        except AttributeError as exc:
            raise RuntimeError("composition failed") from exc
    assert interrupted_by(wrapped.value)
    with pytest.raises(RuntimeError) as plain:
        try:
            {}["key"]
        except KeyError as exc:
            raise RuntimeError("composition failed") from exc
    assert not interrupted_by(plain.value)


def test_an_error_with_no_trace_of_the_ctrl_c_counts_once_a_signal_is_recorded(monkeypatch: pytest.MonkeyPatch) -> None:
    """OmegaConf's errors drop the KeyboardInterrupt from their chain (``from None``); the
    signal's record is what tells, and without one the same error is an ordinary error."""
    cut = RuntimeError("ListConfig construction failed")
    cut.__suppress_context__ = True
    monkeypatch.setattr(interrupts, "_requested", False)
    assert not interrupted_by(cut)
    monkeypatch.setattr(interrupts, "_requested", True)
    assert interrupted_by(cut)
    with pytest.raises(KeyboardInterrupt):
        interrupts.raise_if_interrupted(cut)


def test_a_swallowed_ctrl_c_is_raised_again_at_the_next_check(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(interrupts, "_requested", False)
    previous = signal.signal(signal.SIGINT, signal.default_int_handler)
    try:
        interrupts.watch()
        interrupts.check()  # nothing asked yet: no-op
        try:  # a library that catches everything
            os.kill(os.getpid(), signal.SIGINT)
            time.sleep(5)
        except BaseException:  # noqa: BLE001
            pass
        with pytest.raises(KeyboardInterrupt):
            interrupts.check()
    finally:
        signal.signal(signal.SIGINT, previous)


def test_a_process_that_ignores_sigint_keeps_ignoring_it(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(interrupts, "_requested", False)
    previous = signal.signal(signal.SIGINT, signal.SIG_IGN)
    try:
        interrupts.watch()
        assert signal.getsignal(signal.SIGINT) is signal.SIG_IGN
    finally:
        signal.signal(signal.SIGINT, previous)


INSIDE_A_FINALISER = """
import os, signal, sys, time
from mcu_exp import interrupts
from mcu_exp.interrupts import exit_interrupted

class Finalised:
    def __del__(self):
        os.kill(os.getpid(), signal.SIGINT)
        time.sleep(0.5)  # the signal's handler runs here, inside the finaliser

interrupts.watch()
try:
    Finalised()
    time.sleep(20)
    print("the signal was lost")
except KeyboardInterrupt:
    exit_interrupted("interrupted")
"""


def test_a_ctrl_c_inside_a_finaliser_stops_the_job_after_it_without_a_trace(tmp_path: Path) -> None:
    """Main: "Exception ignored in: <function Finalised.__del__>" and its traceback, then the job
    went on as if nothing happened. Now the signal waits for the finaliser to return."""
    (tmp_path / "inside_a_finaliser.py").write_text(INSIDE_A_FINALISER)
    done = subprocess.run(
        [sys.executable, "inside_a_finaliser.py"],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=60,
        preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL),
    )
    assert (done.returncode, done.stderr, done.stdout) == (INTERRUPTED_EXIT, "mcu-exp: interrupted\n", "")
