"""Run the ``mcu-exp`` command with a real SIGINT delivered at a chosen point inside OmegaConf.

``python signal_in_omegaconf.py PHASE N ARGS…``: the process sends itself SIGINT at the N-th
time a ListConfig's ``append`` sets its new item (the item slot already holds None), counting
from the start (``PHASE=import``: Hydra's own modules build their configs while importing) or
from once ``mcu_exp.app`` has been imported (``PHASE=compose``: Hydra composing the job). There an
interrupted OmegaConf fails in its own clean-up and raises an AttributeError with no
KeyboardInterrupt left in the chain. Nothing of the application is replaced: the signal is real
and the command's own handlers see it.
"""

from __future__ import annotations

import os
import signal
import sys
import threading
from types import FrameType
from typing import Any

PHASE, N = sys.argv[1], int(sys.argv[2])
_seen = 0


def _at_a_new_list_item(frame: FrameType, event: str) -> bool:
    """Whether ``frame`` is a ListConfig's ``append`` setting the item it just made room for."""
    caller = frame.f_back
    if event != "call" or frame.f_code.co_name != "_set_item_impl" or caller is None:
        return False
    if caller.f_code.co_name != "append" or not caller.f_code.co_filename.endswith("listconfig.py"):
        return False
    return PHASE == "import" or getattr(sys.modules.get("mcu_exp.app"), "main", None) is not None


def _tracer(frame: FrameType, event: str, arg: Any) -> None:
    """Count the points (:func:`_at_a_new_list_item`) and send SIGINT at the N-th."""
    global _seen
    if not _at_a_new_list_item(frame, event):
        return
    _seen += 1
    if _seen == N:
        sys.settrace(None)
        threading.settrace(None)  # type: ignore[arg-type]
        os.kill(os.getpid(), signal.SIGINT)


sys.argv = ["mcu-exp", *sys.argv[3:]]
sys.settrace(_tracer)

from mcu_exp.entry import main  # imported under the tracer on purpose

main()
