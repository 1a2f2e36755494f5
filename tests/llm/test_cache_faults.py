"""Cache files that cannot be used are one line naming the file and the way out (a job's
advice, or the cache command's own): a cache file that is a folder, a cache folder that is a
file, a SQLite file of another layout, text that is not UTF-8, a full disk."""

from __future__ import annotations

import sqlite3
from collections.abc import Iterator
from pathlib import Path

import pytest

from mcu_exp.cli.cache import main as cache_main
from mcu_exp.llm.cache import GenerationCache, open_generation_cache
from mcu_exp.llm.contract import Sample
from mcu_exp.scoring.score_cache import ScoreCache
from mcu_exp.store.faults import StoreFault
from support.small_disk import fill, small_disk

URL = "postgresql://nobody@127.0.0.1:1/mcu?connect_timeout=1"  # never reached: the folder fails first


def one_line(caught: pytest.ExceptionInfo[BaseException], *needles: str) -> str:
    message = str(caught.value)
    assert isinstance(caught.value, ValueError) and "\n" not in message, message
    for needle in needles:
        assert needle in message, message
    return message


def test_a_cache_file_that_is_a_folder_and_a_cache_dir_that_is_a_file(tmp_path: Path) -> None:
    (tmp_path / "generations.sqlite").mkdir()
    (tmp_path / "bertscore.sqlite").mkdir()
    with pytest.raises(StoreFault) as caught:
        open_generation_cache(tmp_path)
    one_line(caught, f"generation cache {tmp_path / 'generations.sqlite'} is a folder; expected a SQLite file")
    with pytest.raises(StoreFault) as caught:
        ScoreCache.in_dir(tmp_path)
    one_line(caught, f"score cache {tmp_path / 'bertscore.sqlite'} is a folder")
    as_file = tmp_path / "cache"
    as_file.write_text("not a folder\n")
    for opener in (open_generation_cache, ScoreCache.in_dir):
        with pytest.raises(StoreFault) as caught:
            opener(as_file)
        one_line(caught, f"{as_file} is a file; expected a folder", "point cache.dir at a folder")


def test_a_sqlite_file_of_another_layout_is_named_when_opened(tmp_path: Path) -> None:
    with sqlite3.connect(tmp_path / "generations.sqlite") as conn:
        conn.execute("CREATE TABLE samples (id INTEGER, body TEXT)")
        conn.execute("INSERT INTO samples VALUES (1, 'someone else''s table')")
    with pytest.raises(StoreFault) as caught:
        open_generation_cache(tmp_path)
    one_line(caught, "is a SQLite database of another layout (no such column", "move it aside")
    with sqlite3.connect(tmp_path / "bertscore.sqlite") as conn:
        conn.execute("CREATE TABLE pair_scores (a INTEGER)")
    scores = ScoreCache.in_dir(tmp_path)
    with pytest.raises(StoreFault) as caught:
        scores.get_scores([b"k"])
    one_line(caught, "score cache", "another layout (no such column: key)", "its scores are computed again")


def test_text_that_is_not_utf8_is_named_when_read(tmp_path: Path) -> None:
    folder = tmp_path / "cache"
    GenerationCache(folder / "generations.sqlite").close()
    with sqlite3.connect(folder / "generations.sqlite") as conn:  # a row another tool wrote
        conn.execute("INSERT INTO samples VALUES ('k', CAST(x'ff61' AS TEXT), 'stop', 1, 1, 0, '{}')")
    with GenerationCache(folder / "generations.sqlite") as cache, pytest.raises(StoreFault) as caught:
        cache.get_many(["k"])
    one_line(caught, "holds text that is not UTF-8", "move it aside", "rerun")
    with GenerationCache(folder / "generations.sqlite") as cache, pytest.raises(StoreFault) as caught:
        list(cache.rows("samples"))  # what cache import reads
    one_line(caught, "holds text that is not UTF-8")


def test_cache_import_gives_its_own_advice_not_a_jobs(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    (tmp_path / "a" / "generations.sqlite").mkdir(parents=True)
    (tmp_path / "b").mkdir()
    with sqlite3.connect(tmp_path / "b" / "generations.sqlite") as conn:
        conn.execute("CREATE TABLE samples (id INTEGER)")
    for folder, needle in (("a", "is a folder; expected a SQLite file"), ("b", "of another layout")):
        with pytest.raises(SystemExit) as code:
            cache_main(["import", str(tmp_path / folder), "--url", URL, "--quiet"])
        err = capsys.readouterr().err
        assert code.value.code == 1 and err.count("\n") == 1, err
        assert err.startswith("mcu-exp cache import: error: generation cache ") and needle in err, err
        assert "run the command again" in err and "rerun" not in err and "generated again" not in err, err


@pytest.fixture
def disk(tmp_path: Path) -> Iterator[Path]:
    with small_disk(tmp_path / "disk") as mounted:
        yield mounted


def test_a_full_disk_under_the_caches_is_one_line_saying_so(disk: Path) -> None:
    folder = disk / "cache"
    cache = open_generation_cache(folder)
    scores = ScoreCache.in_dir(folder)
    fill(disk)
    rows = [(f"key-{i}", Sample("x" * 4000, "stop", 1, 1), {"index": i}) for i in range(200)]
    with pytest.raises(StoreFault) as caught:
        cache.put_many(rows)
    one_line(caught, f"generation cache {folder / 'generations.sqlite'}: the disk is full", "free space")
    with pytest.raises(StoreFault) as caught:
        scores.put_scores([(i.to_bytes(8, "big") * 8, 0.5) for i in range(5000)])
    one_line(caught, f"score cache {folder / 'bertscore.sqlite'}: the disk is full", "free space")
    cache.close()
    scores.close()
