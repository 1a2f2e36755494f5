"""Batching across programs in the embedded backend, on the tiny random Llama: the batch plan, rows
of several prompts in one decode batch (each attending only to its own prompt), and texts that
equal per-program decoding, do not depend on the batch's other programs, repeat run to run and
land under the same cache keys."""

from __future__ import annotations

import dataclasses
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path

import pytest

from mcu_exp.config import ModelConfig
from mcu_exp.llm import CachedGenerator, GenerationRequest, LocalBackend, SampleJob, request_for
from mcu_exp.llm.cache import sample_keys
from mcu_exp.llm.contract import Sample
from mcu_exp.proxies.prompts import summary_messages

N = 4


def _method(j: int) -> str:
    """Java methods of quite different lengths, so the prompts of one batch differ in length."""
    body = "\n".join(f"    x = x * {i + 2} + {j};" for i in range(3 * j))
    return f"int f{j}(int x) {{\n{body}\n    return x;\n}}"


@pytest.fixture(scope="module")
def requests_(tiny_cfg: ModelConfig) -> list[GenerationRequest]:
    return [request_for(tiny_cfg, summary_messages(_method(j), "Java"), n=N, seed=5) for j in range(4)]


def _stream(backend: LocalBackend, requests: Sequence[GenerationRequest]) -> list[tuple[int, int, Sample]]:
    return list(backend.stream([SampleJob(r, tuple(range(r.n))) for r in requests]))


def _by_request(items: list[tuple[int, int, Sample]], count: int) -> list[dict[int, str]]:
    texts: list[dict[int, str]] = [{} for _ in range(count)]
    for position, index, sample in items:
        assert index not in texts[position]
        texts[position][index] = sample.text
    return texts


def _per_program(backend: LocalBackend, requests: Sequence[GenerationRequest]) -> list[dict[int, str]]:
    """Each request decoded alone, the way the backend decoded before batching across programs."""
    out = []
    for request in requests:
        prefix = backend.decoder.prefill(backend.prompt_ids(request.messages))
        out.append({i: s.text for i, s in backend.decoder.decode(request, prefix, range(request.n))})
    return out


@contextmanager
def _decode_batches(backend: LocalBackend) -> Iterator[list[int]]:
    """The row count of every one-token forward pass (decode steps; prefills have more tokens)."""
    rows: list[int] = []

    def hook(_module: object, args: tuple[object, ...], kwargs: dict[str, object]) -> None:
        ids = kwargs.get("input_ids")
        if ids is not None and ids.shape[1] == 1:  # type: ignore[attr-defined]
            rows.append(int(ids.shape[0]))  # type: ignore[attr-defined]

    handle = backend.model.register_forward_pre_hook(hook, with_kwargs=True)
    try:
        yield rows
    finally:
        handle.remove()


def test_rows_join_the_batch_as_others_finish_and_their_texts_do_not_depend_on_when(
    tiny: LocalBackend, requests_: list[GenerationRequest], monkeypatch: pytest.MonkeyPatch
):
    # A's rows stop after 2 tokens while B's run on: C's rows take A's slots mid-batch, and the
    # batch is back to 2 N rows (static batches would decode C only after B, N rows at a time).
    short = dataclasses.replace(requests_[0], max_new_tokens=2)
    long = [dataclasses.replace(r, max_new_tokens=12, stop=()) for r in requests_[1:3]]
    monkeypatch.setattr(tiny, "max_batch_size", 2 * N)
    with _decode_batches(tiny) as rows:
        texts = _by_request(_stream(tiny, [short, *long]), 3)
    assert rows[:3] == [2 * N, N, 2 * N]
    assert rows.count(2 * N) >= 4
    assert texts == _per_program(tiny, [short, *long])
    # Joining at the start, after 2 steps or in a batch of its own gives the same texts.
    assert texts[2] == _by_request(_stream(tiny, [long[1]]), 1)[0]
    assert texts[2] == _by_request(_stream(tiny, [long[1], short, long[0]]), 3)[0]


def test_a_program_larger_than_the_free_slots_is_split_across_them(
    tiny: LocalBackend, requests_: list[GenerationRequest], monkeypatch: pytest.MonkeyPatch
):
    monkeypatch.setattr(tiny, "max_batch_size", N + N // 2)  # the second program joins in two slices
    with _decode_batches(tiny) as rows:
        texts = _by_request(_stream(tiny, requests_), len(requests_))
    assert rows[0] == N + N // 2
    assert texts == _per_program(tiny, requests_)


def test_rows_of_several_programs_decode_in_one_batch(tiny: LocalBackend, requests_: list[GenerationRequest]):
    with _decode_batches(tiny) as rows:
        _stream(tiny, requests_)
    assert rows and rows[0] == N * len(requests_)
    assert len(rows) <= max(r.max_new_tokens for r in requests_)  # one batch for all four programs


def test_batched_texts_equal_per_program_decoding(tiny: LocalBackend, requests_: list[GenerationRequest]):
    lengths = {len(tiny.prompt_ids(r.messages)) for r in requests_}
    assert len(lengths) == len(requests_)  # each row must use its own prompt's positions
    for requests in (requests_, [dataclasses.replace(r, temperature=0.0) for r in requests_]):
        assert _by_request(_stream(tiny, requests), len(requests)) == _per_program(tiny, requests)


def test_a_program_texts_do_not_depend_on_the_programs_in_its_batch(
    tiny: LocalBackend, requests_: list[GenerationRequest], monkeypatch: pytest.MonkeyPatch
):
    together = _by_request(_stream(tiny, requests_), len(requests_))
    alone = [_by_request(_stream(tiny, [r]), 1)[0] for r in requests_]
    assert together == alone
    reordered = _by_request(_stream(tiny, requests_[::-1]), len(requests_))[::-1]
    assert reordered == together
    monkeypatch.setattr(tiny, "max_batch_size", 6)  # batches of one program and a half
    assert _by_request(_stream(tiny, requests_), len(requests_)) == together


def test_requests_with_their_own_settings_share_a_batch(tiny: LocalBackend, requests_: list[GenerationRequest]):
    mixed = [
        requests_[0],
        dataclasses.replace(requests_[1], max_new_tokens=3),
        dataclasses.replace(requests_[2], temperature=0.0, stop=(" ",)),
        dataclasses.replace(requests_[3], max_new_tokens=0),
    ]
    with _decode_batches(tiny) as rows:
        items = _stream(tiny, mixed)
    assert N < rows[0] <= 3 * N  # programs share the batch; the request with no tokens to write takes no row
    texts = _by_request(items, len(mixed))
    assert texts[:3] == _per_program(tiny, mixed[:3])
    assert texts[3] == dict.fromkeys(range(N), "")
    assert all(s.completion_tokens <= 3 for p, _, s in items if p == 1)


def test_same_requests_same_samples_in_the_same_order(tiny: LocalBackend, requests_: list[GenerationRequest]):
    first = _stream(tiny, requests_)
    assert _stream(tiny, requests_) == first
    assert len({s.text for _, _, s in first}) > len(requests_)  # sampled: texts differ within a program


def test_without_shared_prefix_programs_decode_one_after_another(
    tiny: LocalBackend, requests_: list[GenerationRequest], monkeypatch: pytest.MonkeyPatch
):
    expected = _by_request(_stream(tiny, requests_), len(requests_))
    monkeypatch.setattr(tiny.decoder, "shared_prefix", False)
    with _decode_batches(tiny) as rows:
        texts = _by_request(_stream(tiny, requests_), len(requests_))
    assert rows[0] == N
    assert texts == expected


def test_batched_samples_are_stored_under_their_own_keys(
    tiny: LocalBackend, requests_: list[GenerationRequest], tmp_path: Path
):
    generator = CachedGenerator(None, tmp_path, progress=False, backend=tiny)
    try:
        results = generator.generate(requests_)
        identity = generator.identity()
        stored = generator.cache.get_many(k for r in requests_ for k in sample_keys(identity, r, range(r.n)))
    finally:
        generator.close()
    assert len(stored) == N * len(requests_)
    for request, result, texts in zip(requests_, results, _per_program(tiny, requests_)):
        keys = sample_keys(identity, request, range(request.n))
        assert [stored[k].text for k in keys] == [texts[i] for i in range(request.n)]
        assert [s.text for s in result.samples] == [texts[i] for i in range(request.n)]
