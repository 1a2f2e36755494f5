"""Pinned download and checksum verification, served by a local http.server (never the internet)."""

from __future__ import annotations

import shutil
import urllib.parse
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from mcu_exp.data import DatasetError, load_dataset, resolve_root
from mcu_exp.data import download as dl
from support.file_server import serve_folder


@pytest.fixture
def mirror(scalabrino_dir: Path, tmp_path: Path) -> Path:
    """The repository layout of the pinned commit, filled from the local copy."""
    root = tmp_path / "mirror"
    csv_target = root / dl.EVALUATIONS_PATH
    csv_target.parent.mkdir(parents=True)
    shutil.copy(scalabrino_dir / "evaluations.csv", csv_target)
    snippets = root / dl.SNIPPETS_PATH
    snippets.mkdir(parents=True)
    for name in dl.SNIPPET_FILES:
        shutil.copy(scalabrino_dir / "snippets" / name, snippets / name)
    return root


@pytest.fixture
def server(mirror: Path) -> Iterator[str]:
    """Base URL of an HTTP server on 127.0.0.1 serving the mirror."""
    with serve_folder(mirror) as url:
        yield url


@pytest.fixture
def cache(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """An empty user cache; MCU_EXP_DATA unset so resolution reaches the cache."""
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "xdg"))
    monkeypatch.delenv("MCU_EXP_DATA", raising=False)
    monkeypatch.delenv(dl.BASE_URL_ENV, raising=False)
    return tmp_path / "xdg" / "mcu_exp" / "data" / "scalabrino"


def _leftovers(cache: Path) -> list[str]:
    return sorted(p.name for p in cache.parent.iterdir()) if cache.parent.exists() else []


def test_pinned_urls_point_at_the_commit_with_dollar_encoded() -> None:
    urls = dl.file_urls(dl.DEFAULT_BASE_URL)
    assert len(urls) == 1 + len(dl.SNIPPET_FILES) == 51
    for url in urls.values():
        assert url.startswith(f"https://raw.githubusercontent.com/{dl.REPOSITORY}/{dl.COMMIT}/")
        assert "$" not in url
    snippet_urls = [u for k, u in urls.items() if k.startswith("snippets/")]
    assert all("%24" in u for u in snippet_urls)
    assert [urllib.parse.unquote(u.rsplit("/", 1)[1]) for u in snippet_urls] == list(dl.SNIPPET_FILES)


def test_pinned_names_and_sums_match_the_local_copy(scalabrino_dir: Path) -> None:
    assert sorted(p.name for p in (scalabrino_dir / "snippets").iterdir()) == sorted(dl.SNIPPET_FILES)
    assert dl.checksum_problems(scalabrino_dir) == []


def test_download_verifies_caches_and_is_reused(
    server: str, cache: Path, monkeypatch: pytest.MonkeyPatch, dataset_cfg: Any
) -> None:
    cfg = dataset_cfg(format="scalabrino", download=True)
    assert resolve_root(cfg, url=server) == cache
    assert dl.is_verified(cache)
    assert _leftovers(cache) == ["scalabrino"]  # no temporary folder left behind
    # A second run uses the verified cache: the (unreachable) download URL is never contacted.
    monkeypatch.setenv(dl.BASE_URL_ENV, "http://127.0.0.1:9/")
    dataset = load_dataset(cfg)
    assert dataset.source.endswith("(user cache, sha256 verified)")
    assert len(dataset.programs) == len(dl.SNIPPET_FILES)


def test_base_url_from_environment(server: str, cache: Path, monkeypatch: pytest.MonkeyPatch, dataset_cfg: Any) -> None:
    monkeypatch.setenv(dl.BASE_URL_ENV, server.rstrip("/"))
    dataset = load_dataset(dataset_cfg(format="scalabrino", download=True))
    assert dataset.source.endswith("(downloaded, sha256 verified)")
    assert dl.is_verified(cache)


@pytest.mark.parametrize(
    ("victim", "named"),
    [
        (dl.EVALUATIONS_PATH, "evaluations.csv"),
        (f"{dl.SNIPPETS_PATH}/{dl.SNIPPET_FILES[7]}", r"snippets/\*\.java"),
    ],
    ids=["evaluations", "snippet"],
)
def test_corrupted_file_is_reported_and_nothing_cached(
    server: str, mirror: Path, cache: Path, victim: str, named: str, dataset_cfg: Any
) -> None:
    path = mirror / victim
    data = bytearray(path.read_bytes())
    data[len(data) // 2] ^= 0x01
    path.write_bytes(bytes(data))
    with pytest.raises(
        DatasetError,
        match=rf"downloaded {named} .*fails verification: .*sha256.*nothing was cached",
    ):
        resolve_root(dataset_cfg(format="scalabrino", download=True), url=server)
    assert not cache.exists()
    assert _leftovers(cache) == []


def test_missing_remote_file_is_reported_and_nothing_cached(server: str, mirror: Path, cache: Path) -> None:
    (mirror / dl.SNIPPETS_PATH / dl.SNIPPET_FILES[0]).unlink()
    with pytest.raises(DatasetError, match=r"downloading http://127\.0\.0\.1:\d+/.*%24.* failed: HTTP 404"):
        dl.download(cache, url=server)
    assert _leftovers(cache) == []


def test_unverified_cache_is_replaced_by_a_verified_download(server: str, cache: Path, dataset_cfg: Any) -> None:
    cache.mkdir(parents=True)
    (cache / "evaluations.csv").write_text("participant_id\n")
    cfg = dataset_cfg(format="scalabrino", download=False)
    with pytest.raises(DatasetError, match="fails verification"):
        resolve_root(cfg)
    cfg.download = True
    assert resolve_root(cfg, url=server) == cache
    assert dl.is_verified(cache)
    assert _leftovers(cache) == ["scalabrino"]
