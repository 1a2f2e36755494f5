"""Hydra's YAML copies are checked for secrets quickly (LibYAML) and rewritten only when one
is there; anything the quick reading could misread (dates) gets the full check."""

from __future__ import annotations

from pathlib import Path

from mcu_exp import redact
from mcu_exp.redact import REDACTED, _nothing_to_mask, redact_yaml_file, remember


def test_clean_files_are_left_alone_and_secrets_still_masked(tmp_path: Path) -> None:
    clean = tmp_path / "config.yaml"
    text = "model:\n  name: smollm2\n  base_url: http://host:8000/v1\nepsilon: 1e-3\nurl: ${oc.env:X,null}\n"
    clean.write_text(text)
    assert _nothing_to_mask(clean)
    redact_yaml_file(clean)
    assert clean.read_text() == text
    secret = tmp_path / "hydra.yaml"
    secret.write_text("model:\n  api_key: sk-abcdefghijklmnop\n  base_url: http://user:pw1234567@host/v1\n")
    assert not _nothing_to_mask(secret)
    redact_yaml_file(secret)
    masked = secret.read_text()
    assert "sk-abcdefghijklmnop" not in masked and "pw1234567" not in masked and REDACTED in masked


def test_a_date_sends_the_file_to_the_full_check(tmp_path: Path) -> None:
    remember(["2031-05-17"])  # OmegaConf reads the bare date below as this string
    path = tmp_path / "overrides.yaml"
    path.write_text("- when=1\n- day: 2031-05-17\n")
    assert not _nothing_to_mask(path)
    redact_yaml_file(path)
    try:
        assert "2031-05-17" not in path.read_text()
    finally:
        redact._known.discard("2031-05-17")  # other tests' log lines stay as written


def test_a_shared_file_is_checked_once_until_it_changes_or_a_new_secret_is_remembered(tmp_path: Path) -> None:
    """Every job of a sweep checks its ``multirun.yaml``; a process checks it again only when the
    file was replaced or edited, or when a job remembered a secret the last check did not know."""
    from mcu_exp import app

    path = tmp_path / "multirun.yaml"
    path.write_text("task:\n- decision.epsilon=0.1,0.2\nurl: http://host/v1\nnote: swordfish-1234\n")
    app.redact_shared_file(path)
    assert path in app._checked and "swordfish-1234" in path.read_text()  # clean: left as written
    checked = app._checked[path]
    app.redact_shared_file(path)
    assert app._checked[path] == checked
    try:
        remember(["swordfish-1234"])
        app._remembered.add("swordfish-1234")  # what _protect_secrets does with a job's secrets
        app.redact_shared_file(path)
        assert "swordfish-1234" not in path.read_text()  # checked again, now masked
    finally:
        redact._known.discard("swordfish-1234")
        app._remembered.discard("swordfish-1234")
    replaced = tmp_path / "new.yaml"
    replaced.write_text("api_key: sk-abcdefghijklmnop\n")
    replaced.replace(path)  # another file at the same path
    app.redact_shared_file(path)
    assert "sk-abcdefghijklmnop" not in path.read_text()
    app._checked.pop(path)
