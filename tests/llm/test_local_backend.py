"""The embedded SmolLM2 backend: n texts per request, seeds, per-sample independence, stops."""

from __future__ import annotations

import dataclasses

import pytest

from mcu_exp.llm import SampleJob, request_for
from mcu_exp.proxies.prompts import summary_messages

pytestmark = pytest.mark.llm

CODE = "public int max(int a, int b) {\n    return a > b ? a : b;\n}"


def _texts(backend, request, indices):
    got = {i: s for _, i, s in backend.stream([SampleJob(request, tuple(indices))])}
    assert sorted(got) == sorted(indices)
    return got


@pytest.fixture(scope="module")
def request_(smollm_cfg):
    return request_for(smollm_cfg, summary_messages(CODE, "Java"), n=3, seed=11)


@pytest.fixture(scope="module")
def first_run(smollm, request_):
    return _texts(smollm, request_, range(3))


def test_n_non_empty_texts_with_usage(first_run, request_):
    assert len(first_run) == 3
    for sample in first_run.values():
        assert sample.text.strip() and "\n\n" not in sample.text
        assert sample.finish_reason in ("stop", "length")
        assert 0 < sample.completion_tokens <= request_.max_new_tokens
        assert sample.prompt_tokens > 20
        if sample.finish_reason == "length":
            assert sample.completion_tokens == request_.max_new_tokens
    assert len({s.text for s in first_run.values()}) > 1


def test_same_seed_same_texts_other_seed_other_texts(smollm, request_, first_run):
    again = _texts(smollm, request_, range(3))
    assert {i: s.text for i, s in again.items()} == {i: s.text for i, s in first_run.items()}
    other = _texts(smollm, dataclasses.replace(request_, seed=12), range(3))
    assert [other[i].text for i in range(3)] != [first_run[i].text for i in range(3)]


def test_a_sample_does_not_depend_on_the_other_indices_in_its_batch(smollm, request_, first_run):
    alone = _texts(smollm, request_, [2])
    assert alone[2] == first_run[2]


def test_stop_strings_trim_the_text(smollm, request_, first_run):
    # Stop at the first space: a text becomes what preceded its first space.
    stopped = _texts(smollm, dataclasses.replace(request_, stop=(" ",)), range(3))
    assert any(" " in first_run[i].text for i in range(3))
    for i, sample in stopped.items():
        full = first_run[i].text
        assert " " not in sample.text
        if " " in full:
            assert sample.text == full[: full.index(" ")]
            assert sample.finish_reason == "stop"
            assert sample.completion_tokens <= first_run[i].completion_tokens


def test_batches_are_capped_by_max_batch_size(smollm, request_, first_run, monkeypatch: pytest.MonkeyPatch):
    monkeypatch.setattr(smollm, "max_batch_size", 2)
    chunked = _texts(smollm, request_, range(3))
    assert {i: s.text for i, s in chunked.items()} == {i: s.text for i, s in first_run.items()}


def test_shared_prefix_attention_matches_per_row_caches(smollm, request_, first_run, monkeypatch: pytest.MonkeyPatch):
    assert smollm.decoder.shared_prefix  # SmolLM2 (Llama) passes the load-time probe
    monkeypatch.setattr(smollm.decoder, "shared_prefix", False)
    copied = _texts(smollm, request_, range(3))
    assert {i: s.text for i, s in copied.items()} == {i: s.text for i, s in first_run.items()}
