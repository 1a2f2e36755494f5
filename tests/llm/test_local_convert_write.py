"""Writing a converted model folder (:mod:`mcu_exp.llm.converted`) with the tiny Llama standing
in for a de-quantised GGUF model: found again only when complete, atomic under Ctrl-C, keyed by
a full content hash remembered across processes; the cache location; ``mcu-exp model``'s
one-line error."""

from __future__ import annotations

import dataclasses
import hashlib
import json
import os
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest

from mcu_exp.config import ModelConfig
from mcu_exp.llm import LocalBackend, converted
from mcu_exp.llm.converted import CONVERT_ENV, CONVERTED_DIR, HASH_MEMO_DIR, MANIFEST, TMP_PREFIX
from mcu_exp.llm.weights import Weights
from mcu_exp.user_cache import CACHE_ENV
from support.local_llm import worker_env


@pytest.fixture(scope="module")
def plain(tiny_cfg: ModelConfig) -> LocalBackend:
    """The tiny Llama with its own linear layers (a packed model keeps no weights to write)."""
    backend = LocalBackend(dataclasses.replace(tiny_cfg, settings={"packed_linear": False}))
    backend.load()
    return backend


@pytest.fixture
def gguf(tmp_path: Path) -> Weights:
    """A stand-in GGUF file: only its bytes matter to the folder's key."""
    path = tmp_path / "pkg" / "tiny.Q4_1.gguf"
    path.parent.mkdir()
    path.write_bytes(b"GGUF" + bytes(range(256)) * 64)
    return Weights(path.parent, path.name, "llm-tiny", "1.0")


class InterruptedTokenizer:
    """A tokenizer whose files are being written when Ctrl-C arrives."""

    def save_pretrained(self, folder: Any) -> None:
        raise KeyboardInterrupt


def test_a_written_folder_is_found_and_loads_as_the_same_model(plain: LocalBackend, gguf: Weights, tmp_path: Path):
    import torch
    from transformers import AutoModelForCausalLM, AutoTokenizer

    root = tmp_path / "converted"
    assert converted.find(gguf, "float32", root) is None
    folder = converted.write(plain.model, plain.tokenizer, gguf, "float32", root)
    sha = hashlib.sha256((gguf.folder / str(gguf.gguf_file)).read_bytes()).hexdigest()
    assert folder == root / f"tiny.Q4_1-{sha}-float32"
    assert converted.find(gguf, "float32", root) == folder
    assert converted.find(gguf, "bfloat16", root) is None  # another dtype is another folder
    made = json.loads((folder / MANIFEST).read_text())
    assert made["source"] | {"path": None} == {
        "file": "tiny.Q4_1.gguf",
        "path": None,
        "size": 16388,
        "sha256": sha,
        "package": "llm-tiny",
        "package_version": "1.0",
    }
    model = AutoModelForCausalLM.from_pretrained(folder, dtype=torch.float32, local_files_only=True)
    ours = plain.model.state_dict()
    assert ours.keys() == model.state_dict().keys()
    assert all(torch.equal(model.state_dict()[k], v) for k, v in ours.items())
    assert (
        AutoTokenizer.from_pretrained(folder, local_files_only=True)("int x;").input_ids
        == plain.tokenizer("int x;").input_ids
    )


def test_ctrl_c_during_the_write_leaves_nothing_that_a_load_would_take(
    plain: LocalBackend, gguf: Weights, tmp_path: Path
):
    root = tmp_path / "converted"
    with pytest.raises(KeyboardInterrupt):
        converted.write(plain.model, InterruptedTokenizer(), gguf, "float32", root)
    assert converted.find(gguf, "float32", root) is None
    assert sorted(p.name for p in root.iterdir()) == [HASH_MEMO_DIR]  # no final folder, no temporary one
    assert converted.write(plain.model, plain.tokenizer, gguf, "float32", root) == converted.find(gguf, "float32", root)


def test_an_incomplete_or_foreign_folder_is_not_loaded(gguf: Weights, tmp_path: Path):
    root = tmp_path / "converted"
    folder, sha = converted.folder_for(gguf.folder / str(gguf.gguf_file), "float32", root)
    folder.mkdir(parents=True)
    (folder / "model.safetensors").write_bytes(b"half")
    assert converted.find(gguf, "float32", root) is None  # no manifest: not a finished conversion
    (folder / MANIFEST).write_text(json.dumps({"dtype": "float32", "source": {"sha256": "0" * 64}}))
    assert converted.find(gguf, "float32", root) is None  # made from another file
    (folder / MANIFEST).write_text(json.dumps({"dtype": "float32", "source": {"sha256": sha}}))
    assert converted.find(gguf, "float32", root) == folder


def test_a_packed_model_is_not_written(tiny: LocalBackend, gguf: Weights, tmp_path: Path):
    assert tiny.packed_layers > 0
    with pytest.raises(ValueError, match="packed"):
        converted.write(tiny.model, tiny.tokenizer, gguf, "float32", tmp_path / "converted")
    assert converted.find(gguf, "float32", tmp_path / "converted") is None


def test_temporary_folders_of_dead_conversions_are_removed(plain: LocalBackend, gguf: Weights, tmp_path: Path):
    root = tmp_path / "converted"
    old, recent = root / f"{TMP_PREFIX}old", root / f"{TMP_PREFIX}recent"
    for folder in (old, recent):
        folder.mkdir(parents=True)
    two_days_ago = time.time() - 2 * 86400
    os.utime(old, (two_days_ago, two_days_ago))
    converted.write(plain.model, plain.tokenizer, gguf, "float32", root)
    assert not old.exists() and recent.exists()  # a running conversion's folder is left alone


def _sha_in_new_process(path: Path, root: Path) -> str:
    code = (
        "import sys; from pathlib import Path; from mcu_exp.llm.converted import gguf_sha256; "
        "print(gguf_sha256(Path(sys.argv[1]), Path(sys.argv[2])))"
    )
    res = subprocess.run(
        [sys.executable, "-c", code, str(path), str(root)],
        env=worker_env(),
        capture_output=True,
        text=True,
        timeout=60,
        check=True,
    )
    return res.stdout.strip()


def test_the_full_hash_is_remembered_by_path_size_and_mtime(tmp_path: Path):
    path, root = tmp_path / "m.gguf", tmp_path / "converted"
    path.write_bytes(b"a" * 5000)
    first = hashlib.sha256(b"a" * 5000).hexdigest()
    assert _sha_in_new_process(path, root) == first
    assert len(list((root / HASH_MEMO_DIR).iterdir())) == 1
    stat = path.stat()
    path.write_bytes(b"b" * 5000)  # same size, and the old mtime put back: only the memo can answer
    os.utime(path, ns=(stat.st_atime_ns, stat.st_mtime_ns))
    assert _sha_in_new_process(path, root) == first  # the file was not read again
    os.utime(path, ns=(stat.st_atime_ns, stat.st_mtime_ns + 10**9))
    assert _sha_in_new_process(path, root) == hashlib.sha256(b"b" * 5000).hexdigest()


def test_the_cache_location_and_the_off_switch_come_from_the_environment(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
):
    monkeypatch.setenv(CACHE_ENV, str(tmp_path / "mine"))
    monkeypatch.delenv(CONVERT_ENV, raising=False)
    assert converted.converted_root() == tmp_path / "mine" / CONVERTED_DIR and converted.enabled()
    monkeypatch.delenv(CACHE_ENV)
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "xdg"))
    assert converted.converted_root() == tmp_path / "xdg" / "mcu_exp" / CONVERTED_DIR
    monkeypatch.setenv(CONVERT_ENV, "0")
    assert not converted.enabled()


def test_model_convert_refuses_a_model_without_a_gguf_file_in_one_line(capsys: pytest.CaptureFixture[str]):
    from mcu_exp.app import config_dir
    from mcu_exp.cli.model import main

    with pytest.raises(SystemExit) as exit_:
        main(["convert", "model=gpt-4o"], config_dir())
    assert exit_.value.code == 1
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1 and "'gpt-4o'" in err and "model.gguf_file" in err


def test_the_fast_converter_maps_llama_metadata_and_refuses_what_it_does_not_reproduce(gguf: Weights):
    from mcu_exp.llm import gguf_convert

    metadata = {
        "general.architecture": "llama",
        "general.name": "Tiny",
        "llama.block_count": 2,
        "llama.attention.head_count": [4],
        "llama.rope.freq_base": 10000.0,
        "tokenizer.ggml.tokens": 321,
        "tokenizer.ggml.bos_token_id": 1,
        "general.file_type": 3,
    }
    config = gguf_convert.config_dict(metadata, ("token_embd.weight", "blk.0.attn_q.weight"))
    assert config["model_type"] == "llama" and config["_model_name_or_path"] == "Tiny"
    assert config["num_hidden_layers"] == 2 and config["num_attention_heads"] == 4  # a 1-list is its value
    assert config["rope_theta"] == 10000.0 and config["bos_token_id"] == 1
    assert config["tie_word_embeddings"] is True and config["vocab_size"] == 321  # no output.weight; token count
    assert gguf_convert.config_dict(metadata, ("output.weight",))["tie_word_embeddings"] is False
    with pytest.raises(gguf_convert.Unsupported, match="qwen2"):
        gguf_convert.config_dict({**metadata, "general.architecture": "qwen2"}, ())
    with pytest.raises(gguf_convert.Unsupported, match="Mistral"):
        gguf_convert.config_dict({**metadata, "general.name": "mistral"}, ())
    with pytest.raises(gguf_convert.Unsupported, match="unreadable"):  # not a GGUF the reader knows
        gguf_convert.check(gguf.folder / str(gguf.gguf_file))


def test_a_gguf_neither_converter_reads_fails_in_one_line_and_writes_nothing(
    gguf: Weights, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
):
    from mcu_exp.config import ModelConfig
    from mcu_exp.llm.errors import BackendError

    monkeypatch.setenv(CACHE_ENV, str(tmp_path / "cache"))
    monkeypatch.delenv(CONVERT_ENV, raising=False)
    cfg = ModelConfig(
        name="broken",
        backend="local",
        model_id=str(gguf.folder),
        gguf_file=gguf.gguf_file,
        device="cpu",
        dtype="float32",
        num_threads=1,
    )
    with pytest.raises(BackendError) as error:
        LocalBackend(cfg).load()
    assert len(str(error.value).splitlines()) == 1 and str(gguf.folder) in str(error.value)
    root = tmp_path / "cache" / CONVERTED_DIR
    assert not root.exists() or {p.name for p in root.iterdir()} <= {
        HASH_MEMO_DIR
    }  # no folder, not even a temporary one
