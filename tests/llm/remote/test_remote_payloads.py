"""Request building and response parsing per provider, as dicts, without a network."""

from __future__ import annotations

import importlib.util
import inspect
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pytest
from omegaconf import OmegaConf

from mcu_exp.config import ModelConfig
from mcu_exp.llm.contract import GenerationRequest, Message
from mcu_exp.llm.factory import backend_identity, settings
from mcu_exp.llm.providers import anthropic as anthropic_p
from mcu_exp.llm.providers import google as google_p
from mcu_exp.llm.providers import openai as openai_p
from mcu_exp.llm.providers import vllm as vllm_p
from mcu_exp.llm.providers._common import sample_seed
from mcu_exp.llm.providers._errors import MalformedResponse, MissingDependency

CONF = Path(__file__).resolve().parents[3] / "conf" / "model"
REQ = GenerationRequest(
    messages=(Message("system", "You summarise code."), Message("user", "int f() { return 1; }")),
    n=4,
    temperature=0.7,
    top_p=0.9,
    max_new_tokens=32,
    stop=("\n\n", "END", "<1>", "<2>", "<3>", "<4>"),
    seed=3,
)


def model(name: str) -> ModelConfig:
    """A shipped model config as the pipeline hands it to the LLM layer: a ModelConfig instance."""
    merged = OmegaConf.merge(OmegaConf.structured(ModelConfig), OmegaConf.load(CONF / f"{name}.yaml"))
    return OmegaConf.to_object(merged)  # type: ignore[return-value]


def cfg(**fields: Any) -> ModelConfig:
    return ModelConfig(**{"name": "m", "backend": "openai", "model_id": "mid", **fields})


def test_openai_payload_asks_n_samples_with_a_per_index_seed() -> None:
    params = openai_p.build_chat_params(REQ, cfg(), count=3, first=1)
    assert params == {
        "model": "mid",
        "messages": [
            {"role": "system", "content": "You summarise code."},
            {"role": "user", "content": "int f() { return 1; }"},
        ],
        "temperature": 0.7,
        "top_p": 0.9,
        "max_tokens": 32,
        "n": 3,
        "seed": sample_seed(REQ, 1),
        "stop": ["\n\n", "END", "<1>", "<2>"],
    }
    assert openai_p.build_chat_params(REQ, cfg(), 1, 2)["seed"] != params["seed"]
    assert "n" not in openai_p.build_chat_params(REQ, cfg(), 1, 0)


def test_gpt5_quirks_drop_sampling_and_use_max_completion_tokens() -> None:
    params = openai_p.build_chat_params(REQ, model("gpt-5"), count=1, first=0)
    assert "temperature" not in params and "top_p" not in params and "stop" not in params
    assert "max_tokens" not in params and params["max_completion_tokens"] == 32 + 1024
    assert params["reasoning_effort"] == "minimal" and params["model"] == "gpt-5-2025-08-07"


def test_openai_parsing_orders_choices_applies_all_stops_and_splits_usage() -> None:
    data = {
        "choices": [
            {"index": 1, "message": {"content": "second <4> tail"}, "finish_reason": "stop"},
            {"index": 0, "message": {"content": "first"}, "finish_reason": "length"},
            {"index": 2, "message": {"content": None}, "finish_reason": "content_filter"},
        ],
        "usage": {"prompt_tokens": 12, "completion_tokens": 31},
    }
    result = openai_p.parse_chat_completion(data, REQ.stop)
    assert [(s.text, s.finish_reason) for s in result.samples] == [
        ("first", "length"),
        ("second ", "stop"),
        ("", "filtered"),
    ]  # content_filter: filtered, counted as such
    assert sum(s.prompt_tokens for s in result.samples) == 12
    assert sum(s.completion_tokens for s in result.samples) == 31
    with pytest.raises(MalformedResponse):
        openai_p.parse_chat_completion({"choices": None}, ())


def test_anthropic_sampling_travels_in_extra_body_when_the_sdk_lacks_it() -> None:
    params = anthropic_p.build_message_params(REQ, model("claude-opus-4-1"), sampling_args=False)
    assert params["system"] == "You summarise code."
    assert params["messages"] == [{"role": "user", "content": "int f() { return 1; }"}]
    assert params["extra_body"] == {"temperature": 0.7}  # top_p dropped: Opus 4.1 takes one of them
    assert "temperature" not in params and "top_p" not in params
    assert params["stop_sequences"] == ["END", "<1>", "<2>", "<3>", "<4>"]  # no whitespace-only stop
    assert params["max_tokens"] == 32 and params["model"] == "claude-opus-4-1-20250805"
    direct = anthropic_p.build_message_params(REQ, cfg(backend="anthropic"), sampling_args=True)
    assert direct["temperature"] == 0.7 and direct["top_p"] == 0.9 and "extra_body" not in direct


def test_installed_anthropic_sdk_signature_matches_what_the_backend_assumes() -> None:
    sdk = pytest.importorskip("anthropic")
    client = sdk.AsyncAnthropic(api_key="x", max_retries=0)
    accepts = "temperature" in inspect.signature(client.messages.create).parameters
    params = anthropic_p.build_message_params(REQ, cfg(backend="anthropic"), sampling_args=accepts)
    assert set(params) - {"extra_body"} <= set(inspect.signature(client.messages.create).parameters)


def test_anthropic_parsing() -> None:
    data = {
        "type": "message",
        "content": [{"type": "text", "text": "sums two ints\n\nmore"}],
        "stop_reason": "end_turn",
        "usage": {"input_tokens": 9, "output_tokens": 4},
    }
    sample = anthropic_p.parse_message(data, ("\n\n",)).samples[0]
    assert (sample.text, sample.finish_reason, sample.prompt_tokens) == ("sums two ints", "stop", 9)
    with pytest.raises(MalformedResponse):
        anthropic_p.parse_message({"type": "error"}, ())


def test_gemini_payload_uses_candidate_count_and_thinking_budget() -> None:
    params = google_p.build_generate_params(REQ, model("gemini-2.5-pro"), count=4, first=0)
    assert params["model"] == "gemini-2.5-pro"
    assert params["contents"] == [{"role": "user", "parts": [{"text": "int f() { return 1; }"}]}]
    config = params["config"]
    assert config["candidate_count"] == 4 and config["system_instruction"] == "You summarise code."
    assert config["thinking_config"] == {"thinking_budget": 128}
    assert config["max_output_tokens"] == 32 + 1024 and len(config["stop_sequences"]) == 5


def test_gemini_parsing_skips_thoughts_and_counts_them_as_output() -> None:
    data = {
        "candidates": [
            {"index": 1, "content": {"parts": [{"text": "b"}]}, "finish_reason": "MAX_TOKENS"},
            {
                "index": 0,
                "content": {"parts": [{"text": "hmm", "thought": True}, {"text": "a"}]},
                "finish_reason": "STOP",
            },
        ],
        "usage_metadata": {"prompt_token_count": 7, "candidates_token_count": 6, "thoughts_token_count": 50},
    }
    result = google_p.parse_generate_response(data, (), 2)
    assert [(s.text, s.finish_reason) for s in result.samples] == [("a", "stop"), ("b", "length")]
    assert result.completion_tokens == 56
    blocked = google_p.parse_generate_response({"prompt_feedback": {"block_reason": "SAFETY"}}, (), 3)
    assert [s.finish_reason for s in blocked.samples] == ["filtered"] * 3  # a blocked prompt: filtered
    with pytest.raises(MalformedResponse):
        google_p.parse_generate_response({}, (), 1)


def test_vllm_sampling_is_per_sample_and_reasoning_is_stripped() -> None:
    kw = vllm_p.sampling_kwargs(REQ, model("phi-4-reasoning"), index=5)
    assert kw == {
        "n": 1,
        "temperature": 0.7,
        "top_p": 0.9,
        "max_tokens": 32 + 8192,
        "stop": [],
        "seed": sample_seed(REQ, 5),
    }  # stops apply after the reasoning
    assert vllm_p.sampling_kwargs(REQ, model("qwen2.5-14b"), 5)["stop"] == list(REQ.stop)
    out = SimpleNamespace(
        prompt_token_ids=[1, 2, 3],
        outputs=[
            SimpleNamespace(
                text="<think>let me see\n\nyes</think>\n It returns one.\n\nMore.",
                finish_reason="length",
                token_ids=[4, 5],
            )
        ],
    )
    sample = vllm_p.parse_output(out, "</think>", ("\n\n",))
    assert (sample.text, sample.finish_reason, sample.prompt_tokens, sample.completion_tokens) == (
        "It returns one.",
        "stop",
        3,
        2,
    )
    unfinished = SimpleNamespace(
        prompt_token_ids=[1],
        outputs=[SimpleNamespace(text="<think>still thinking", finish_reason="length", token_ids=[4])],
    )
    assert vllm_p.parse_output(unfinished, "</think>").finish_reason == "length"


def test_vllm_prompts_for_models_without_a_chat_template() -> None:
    wizard = vllm_p.completion_prompt(REQ, model("wizardcoder-15b"))
    assert wizard.startswith("Below is an instruction") and "You summarise code.\n\nint f()" in wizard
    assert wizard.endswith("### Response:")
    assert vllm_p.completion_prompt(REQ, model("starcoder2-15b")).endswith("Assistant:")
    assert vllm_p.engine_kwargs(model("qwen3-14b")) == {
        "model": "Qwen/Qwen3-14B",
        "tensor_parallel_size": 1,
        "max_model_len": 8192,
        "dtype": "bfloat16",
    }


def test_vllm_without_the_package_says_what_to_install() -> None:
    if importlib.util.find_spec("vllm") is not None:
        pytest.skip("vllm is installed here")
    with pytest.raises(MissingDependency, match=r"pip install 'mcu_exp\[vllm\]'"):
        vllm_p.create_backend(model("qwen2.5-14b"))


REMOTE_MODELS = ["gpt-3.5-turbo", "gpt-4", "gpt-4o", "gpt-5", "claude-opus-4-1", "gemini-2.5-pro"]
VLLM_MODELS = ["phi-4-reasoning", "qwen2.5-14b", "qwen3-14b", "wizardcoder-15b", "starcoder2-15b", "codellama-13b"]


@pytest.mark.parametrize("name", REMOTE_MODELS + VLLM_MODELS)
def test_every_model_config_is_valid_and_keys_on_the_model(name: str) -> None:
    m = model(name)
    assert m.name == name
    ident = backend_identity(m)
    assert ident["backend"] == m.backend and ident["model_id"] == m.model_id
    if name in REMOTE_MODELS:
        assert m.price_input_per_mtok and m.price_output_per_mtok  # cost previews need them
        assert "as of" in (CONF / f"{name}.yaml").read_text()
    else:
        own = settings(m)  # vllm's own settings, typed from the YAML's `settings:`
        assert m.backend == "vllm" and own.tensor_parallel_size >= 1 and own.max_model_len


def test_identity_leaves_out_key_limits_and_official_base_url() -> None:
    base = cfg(backend="openai", base_url="http://127.0.0.1:1/v1", api_key_env="MY_KEY")
    ident = openai_p.identity(base)
    assert ident == {"backend": "openai", "model_id": "mid"}
    assert openai_p.identity(cfg(max_concurrency=1, timeout_s=1.0, max_retries=0)) == ident
    assert openai_p.identity(cfg(quirks={"params": {"reasoning_effort": "low"}})) != ident


@pytest.mark.parametrize("name", ["gpt-5", "gemini-2.5-pro", "phi-4-reasoning"])
def test_a_dictconfig_gives_the_same_payload_and_identity_as_the_dataclass(name: str) -> None:
    typed = model(name)
    assert isinstance(typed, ModelConfig) and isinstance(typed.quirks, dict)
    node = OmegaConf.structured(typed)
    assert backend_identity(node) == backend_identity(typed)
    if typed.backend == "vllm":
        assert vllm_p.sampling_kwargs(REQ, node, 1) == vllm_p.sampling_kwargs(REQ, typed, 1)
    elif typed.backend == "google":
        assert google_p.build_generate_params(REQ, node, 2, 0) == google_p.build_generate_params(REQ, typed, 2, 0)
    else:
        assert openai_p.build_chat_params(REQ, node, 2, 0) == openai_p.build_chat_params(REQ, typed, 2, 0)
