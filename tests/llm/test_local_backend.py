"""The embedded backend: n texts per request, seeds, per-sample independence, stops, batching and
shared-prefix attention on the tiny random Llama; real summaries from SmolLM2."""

from __future__ import annotations

import dataclasses
from collections.abc import Iterable

import pytest

from mcu_exp.config import ModelConfig
from mcu_exp.llm import GenerationRequest, LocalBackend, Sample, SampleJob, request_for
from mcu_exp.proxies.prompts import summary_messages

CODE = "public int max(int a, int b) {\n    return a > b ? a : b;\n}"


def _samples(backend: LocalBackend, request: GenerationRequest, indices: Iterable[int]) -> dict[int, Sample]:
    """Stream one job and check each wanted index came back exactly once."""
    wanted = list(indices)
    got = [(i, s) for _, i, s in backend.stream([SampleJob(request, tuple(wanted))])]
    assert sorted(i for i, _ in got) == sorted(wanted)
    return dict(got)


def _texts(samples: dict[int, Sample]) -> dict[int, str]:
    return {i: s.text for i, s in samples.items()}


def _check_usage(samples: dict[int, Sample], request: GenerationRequest) -> None:
    for sample in samples.values():
        assert sample.text.strip() and "\n\n" not in sample.text
        assert sample.finish_reason in ("stop", "length")
        assert 0 < sample.completion_tokens <= request.max_new_tokens
        assert sample.prompt_tokens > 20
        if sample.finish_reason == "length":
            assert sample.completion_tokens == request.max_new_tokens


@pytest.fixture(scope="module")
def request_(tiny_cfg: ModelConfig) -> GenerationRequest:
    return request_for(tiny_cfg, summary_messages(CODE, "Java"), n=3, seed=11)


@pytest.fixture(scope="module")
def first_run(tiny: LocalBackend, request_: GenerationRequest) -> dict[int, Sample]:
    return _samples(tiny, request_, range(3))


def test_n_non_empty_texts_with_usage(first_run: dict[int, Sample], request_: GenerationRequest):
    assert len(first_run) == 3
    _check_usage(first_run, request_)
    assert len({s.text for s in first_run.values()}) > 1


def test_same_seed_same_texts_other_seed_other_texts(
    tiny: LocalBackend, request_: GenerationRequest, first_run: dict[int, Sample]
):
    assert _texts(_samples(tiny, request_, range(3))) == _texts(first_run)
    other = _samples(tiny, dataclasses.replace(request_, seed=12), range(3))
    assert [other[i].text for i in range(3)] != [first_run[i].text for i in range(3)]


def test_a_sample_does_not_depend_on_the_other_indices_in_its_batch(
    tiny: LocalBackend, request_: GenerationRequest, first_run: dict[int, Sample]
):
    assert _samples(tiny, request_, [2])[2] == first_run[2]
    assert _samples(tiny, request_, [1, 0]) == {0: first_run[0], 1: first_run[1]}


def test_stop_strings_trim_the_text_and_end_decoding(
    tiny: LocalBackend, request_: GenerationRequest, first_run: dict[int, Sample]
):
    # Stop at the first space: a text becomes what preceded its first space.
    stopped = _samples(tiny, dataclasses.replace(request_, stop=(" ",)), range(3))
    assert any(" " in first_run[i].text for i in range(3))
    for i, sample in stopped.items():
        full = first_run[i].text
        assert " " not in sample.text
        if " " in full:
            assert sample.text == full[: full.index(" ")]
            assert sample.finish_reason == "stop"
            assert sample.completion_tokens <= first_run[i].completion_tokens
    assert any(stopped[i].completion_tokens < first_run[i].completion_tokens for i in range(3))


def test_batches_are_capped_by_max_batch_size(
    tiny: LocalBackend, request_: GenerationRequest, first_run: dict[int, Sample], monkeypatch: pytest.MonkeyPatch
):
    monkeypatch.setattr(tiny, "max_batch_size", 2)
    assert _texts(_samples(tiny, request_, range(3))) == _texts(first_run)


def test_shared_prefix_attention_matches_per_row_caches(
    tiny: LocalBackend, request_: GenerationRequest, first_run: dict[int, Sample], monkeypatch: pytest.MonkeyPatch
):
    assert tiny.decoder.shared_prefix  # a Llama passes the load-time probe
    monkeypatch.setattr(tiny.decoder, "shared_prefix", False)
    assert _texts(_samples(tiny, request_, range(3))) == _texts(first_run)


@pytest.mark.llm
def test_smollm2_writes_summaries_of_the_method(smollm: LocalBackend, smollm_cfg: ModelConfig):
    request = request_for(smollm_cfg, summary_messages(CODE, "Java"), n=3, seed=11)
    sampled = _samples(smollm, request, range(3))
    _check_usage(sampled, request)
    assert len({s.text for s in sampled.values()}) > 1
    assert any("max" in s.text.lower() for s in sampled.values())
    greedy = _samples(smollm, dataclasses.replace(request, temperature=0.0), range(2))
    assert greedy[0] == greedy[1] and "max" in greedy[0].text.lower()
