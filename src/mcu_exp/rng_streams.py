"""Named random streams, one per program and per kind of draw.

Every per-program draw of a job (P1's calibration/test split, P2's reference r*, P3's judge,
the seeds of the generation requests) reads its own stream, seeded by ``(seed, CRC-32 of
the program id, CRC-32 of the stream name)``. Two consequences:

- draws of different kinds are independent even when their configured seeds are equal
  (P3's judge is not the author of P2's r* by construction, as it was when both used
  ``(seed, program id)``);
- a program's draws depend only on its id, the seed and the stream: adding, dropping or
  reordering other programs never moves them.

The stream names live here, so that no two kinds of draw share one by accident.
"""

from __future__ import annotations

import zlib

import numpy as np

SPLIT = "split"  # P1's calibration/test split (proxy.split_seed)
REFERENCE = "reference"  # P2's r* from the expert pool (experts.reference_seed)
JUDGE = "judge"  # P3's judge from the expert pool (proxy.judge_seed)
TARGET_SUMMARIES = "target summaries"  # seed of the target's summary request (proxy.sample_seed)
OUTPUTS = "outputs"  # seed of p0_output's request for a program's printed output (proxy.sample_seed)

_SEED_BITS = 31  # APIs take 32-bit signed seeds
_UINT64 = 2**64


def expert_summaries(label: str) -> str:
    """The stream of expert ``label``'s summary requests (its member ``seed``)."""
    return f"expert summaries:{label}"


def judgments(summary_index: int) -> str:
    """The stream of the judge request for summary ``summary_index`` (the judge's member ``seed``)."""
    return f"judgments:{int(summary_index)}"


def answers(question_id: str, run: int) -> str:
    """The stream of P0's request for run ``run`` of question ``question_id`` (proxy.sample_seed)."""
    return f"answers:{question_id}:{int(run)}"


def _crc(text: str) -> int:
    return zlib.crc32(text.encode("utf-8"))


def program_rng(seed: int, program_id: str, stream: str) -> np.random.Generator:
    """A generator seeded by ``(seed, CRC-32(program id), CRC-32(stream))``.

    A negative ``seed`` is taken modulo 2**64 (NumPy's seed words are unsigned), so every
    integer seed is accepted and seeds 0..2**63 keep their own streams.
    """
    return np.random.default_rng([int(seed) % _UINT64, _crc(program_id), _crc(stream)])


def program_seed(seed: int, program_id: str, stream: str) -> int:
    """A request seed for one program and stream: a non-negative int below 2**31."""
    return int(program_rng(seed, program_id, stream).integers(2**_SEED_BITS))


def draw_index(size: int, seed: int, program_id: str, stream: str) -> int:
    """A seeded draw of one of ``size`` items for one program, from ``stream``."""
    if size < 1:
        raise ValueError(f"cannot draw from an empty set for program {program_id!r} ({stream})")
    return int(program_rng(seed, program_id, stream).integers(size))
