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
