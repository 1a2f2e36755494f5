"""YAML from a user is scanned before it is built (:mod:`mcu_exp.yaml_limits`): an alias bomb,
an alias to a node holding it, or absurd nesting is refused in one line and at once; the
anchors a config really uses, and text that is not YAML (left to its loader), pass."""

from __future__ import annotations

import time
from pathlib import Path

import pytest
import yaml

from mcu_exp.config.schema import load_written_config
from mcu_exp.yaml_limits import MAX_ALIAS_NODES, YamlLimitError, check_yaml, check_yaml_folder, safe_load

LAUGHS = "\n".join(
    ['a: &a ["x","x","x","x","x","x","x","x","x"]']
    + [f"{c}: &{c} [" + ",".join([f"*{p}"] * 9) + "]" for p, c in zip("abcdefgh", "bcdefghi")]
)


def test_the_billion_laughs_is_refused_at_once() -> None:
    started = time.monotonic()
    with pytest.raises(YamlLimitError, match=r"^laughs\.yaml: YAML aliases expand to more than 10,000 nodes"):
        check_yaml(LAUGHS, "laughs.yaml")
    with pytest.raises(YamlLimitError, match="config.yaml: YAML aliases"):
        load_written_config(LAUGHS)  # a bundle's config.yaml: OmegaConf would build 9**9 nodes
    assert time.monotonic() - started < 2


@pytest.mark.parametrize(
    ("text", "words"),
    [
        ("a: &a [*a]", "alias *a refers to a node that holds it"),
        ("a: &a {b: {c: *a}}", "alias *a refers to a node that holds it"),
        ("[" * 100 + "]" * 100, "nested deeper than 64 levels"),
    ],
)
def test_self_reference_and_deep_nesting_are_refused(text: str, words: str) -> None:
    with pytest.raises(YamlLimitError, match=words.replace("*", r"\*")):
        check_yaml(text, "f.yaml")


def test_ordinary_anchors_and_broken_yaml_pass() -> None:
    shared = "base: &base {temperature: 0.5, top_p: 0.9}\nfast: {<<: *base, n: 1}\nslow: *base\n"
    assert safe_load(shared, "models.yaml")["fast"] == {"temperature": 0.5, "top_p": 0.9, "n": 1}
    wide = "a: &a [" + ",".join(["1"] * (MAX_ALIAS_NODES // 4)) + "]\nb: [*a, *a, *a]\n"
    check_yaml(wide, "wide.yaml")  # aliases adding 3/4 of the limit
    check_yaml("a: [1, 2", "broken.yaml")  # not YAML: its loader names the error
    with pytest.raises(yaml.YAMLError) as raised:
        safe_load("a: [1, 2", "broken.yaml")
    assert not isinstance(raised.value, YamlLimitError)


def test_a_folder_is_scanned_file_by_file(tmp_path: Path) -> None:
    (tmp_path / "model").mkdir()
    (tmp_path / "config.yaml").write_text("defaults: [_self_]\n")
    check_yaml_folder(tmp_path)
    (tmp_path / "model" / "laughs.yaml").write_text(LAUGHS)
    with pytest.raises(YamlLimitError, match="model/laughs.yaml"):
        check_yaml_folder(tmp_path)
