"""``cache.url`` before anything connects: the URL checks every job runs first (one line, the
password never echoed), the ``MCU_EXP_CACHE_URL`` default, and an unreachable server named in
one line. The store itself runs on a real PostgreSQL in tests/services/test_shared_cache.py."""

from __future__ import annotations

from pathlib import Path

import pytest

from mcu_exp.config.schema import typed_config
from mcu_exp.job.validate import config_problems
from mcu_exp.llm.cache import GenerationCache, open_generation_cache
from mcu_exp.scoring.score_cache import ScoreCache
from mcu_exp.store.postgres import StoreError
from support.compose import compose
from support.postgres import free_port


def problems(*overrides: str) -> list[str]:
    cfg = typed_config(compose(*overrides))
    return [p for p in config_problems(cfg) if p.startswith("cache.")]


def test_cache_url_defaults_to_the_environment_and_else_to_the_sqlite_files(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("MCU_EXP_CACHE_URL", raising=False)
    assert typed_config(compose()).cache.url is None
    monkeypatch.setenv("MCU_EXP_CACHE_URL", "postgresql://me@db-host:5433/mcu")
    assert typed_config(compose()).cache.url == "postgresql://me@db-host:5433/mcu"
    assert problems() == []


@pytest.mark.parametrize(
    ("url", "needle"),
    [
        ("mysql://me@db/mcu", "cache.url=mysql://me@db/mcu: expected postgresql://user@host:port/database"),
        ("postgresql://me:s3cret-pw@db/mcu", "cache.url: the URL holds a password"),
        ("postgresql://me@db/mcu?password=s3cret-pw", "cache.url: the URL holds a password"),
    ],
)
def test_a_bad_cache_url_is_one_line_that_never_shows_the_password(url: str, needle: str) -> None:
    found = problems(f"cache.url='{url}'")
    assert len(found) == 1 and found[0].startswith(needle) and "\n" not in found[0]
    assert "s3cret-pw" not in found[0]


def test_an_unreachable_server_is_one_line_naming_the_url(tmp_path: Path) -> None:
    url = f"postgresql://nobody@127.0.0.1:{free_port()}/mcu?connect_timeout=2"
    for opener in (GenerationCache, ScoreCache, lambda u: open_generation_cache(tmp_path, u)):
        with pytest.raises(StoreError) as caught:
            opener(url)
        message = str(caught.value)
        assert message.startswith(f"cache.url={url}: cannot connect (") and "\n" not in message
    assert not list(tmp_path.iterdir())  # nothing fell back to a SQLite file


@pytest.mark.parametrize(
    "url",
    [
        "mysql://me:s3cret-pw@db/mcu",
        "postgresql://me:s3cret-pw@db/mcu",
        "postgresql://me@db/mcu?password=s3cret-pw",
        "postgresql://me:s3cret-pw@127.0.0.1:{port}/mcu?connect_timeout=2",
    ],
)
def test_the_cache_command_never_prints_a_password_given_in_url(
    url: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    from mcu_exp.cli.cache import main

    for action in ("import", "export"):
        with pytest.raises(SystemExit) as code:
            main([action, str(tmp_path), "--url", url.format(port=free_port()), "--quiet"])
        out, err = capsys.readouterr()
        assert code.value.code == 1 and err.startswith(f"mcu-exp cache {action}: error: --url"), err
        assert "s3cret-pw" not in out + err and err.count("\n") == 1
        assert "run's params" not in err and "cache.url" not in err  # the command's own option, not a job's key
