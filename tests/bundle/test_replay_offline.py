"""``mcu-exp bundle replay`` on an offline machine: the README's bundle (exported without its
data) replays from the copy of the data a first run kept in the user cache, with no
``$MCU_EXP_DATA`` and every download address unreachable; with neither the data nor a cache it
stops in one line saying how to give it the data."""

from __future__ import annotations

from pathlib import Path
from types import SimpleNamespace

import pytest

from mcu_exp.bundle.replay import replay
from mcu_exp.data import DatasetError, load_dataset
from mcu_exp.data import download as dl
from mcu_exp.pipeline import run_job
from mcu_exp.user_cache import CACHE_ENV

REPO = Path(__file__).resolve().parents[2]
BUNDLE = REPO / "docs" / "bundles" / "default-run.zip"
OFFLINE = "http://127.0.0.1:9/"  # nothing listens there: a download fails at once


@pytest.fixture
def offline(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """An empty user cache; every dataset's download pointed at a closed port."""
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "xdg"))
    monkeypatch.delenv(CACHE_ENV, raising=False)
    for variable in ("MCU_EXP_SCALABRINO_URL", "MCU_EXP_STAKELAB_URL", "MCU_EXP_ATOMS_URL"):
        monkeypatch.setenv(variable, OFFLINE)
    return tmp_path / "xdg" / "mcu_exp" / "data"


@pytest.mark.slow
def test_a_bundle_without_data_replays_offline_from_the_user_cache(
    offline: Path, data_root: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setenv("MCU_EXP_DATA", str(data_root))
    load_dataset(
        SimpleNamespace(name="scalabrino", format="scalabrino", root=None, download=False, limit=None, questions=None)
    )
    assert dl.is_verified(offline / "scalabrino")
    monkeypatch.delenv("MCU_EXP_DATA")
    monkeypatch.chdir(tmp_path)
    checks = replay(BUNDLE, run_job, tmp_path / "replay")
    printed = capsys.readouterr().out
    assert [check.difference for check in checks] == [None], [check.line() for check in checks]
    assert f"data: {offline / 'scalabrino'} (user cache, sha256 verified)" in printed
    assert "1,000 of 1,000 samples from the cache" in printed


def test_a_bundle_without_data_and_no_cache_stops_in_one_line(
    offline: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("MCU_EXP_DATA", raising=False)
    with pytest.raises(DatasetError) as caught:
        replay(BUNDLE, run_job, tmp_path / "replay")
    message = str(caught.value)
    assert "\n" not in message
    assert message.startswith(f"downloading {OFFLINE}") and "point MCU_EXP_DATA or dataset.root" in message
    assert not (offline / "scalabrino").exists()
