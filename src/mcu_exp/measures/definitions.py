"""The built-in uncertainty measures: SSC and the graph measures of Lin, Trivedi & Sun (2024).

All of them read one program's k × k similarity matrix S (P1: pairwise BERTScore-F1 of its
summaries) and return an uncertainty, higher = less consistent. The graph measures use the
weights W = (S + Sᵀ)/2 clipped to [0, 1] with diagonal 1 (:func:`~mcu_exp.measures.registry.affinity`),
the degrees D = diag(Σ_j' W_jj') (each ≥ 1, so D^{-1/2} exists) and the normalised Laplacian
L = I − D^{-1/2} W D^{-1/2}, whose eigenvalues lie in [0, 2] with smallest 0.
m = k is the number of responses.

- ``ssc`` = 1 − SSC, SSC = the mean of W's entries above the diagonal, i.e. the mean
  pairwise similarity over pairs i < j, unclipped: exactly P1's historical α
  (:meth:`mcu_exp.scoring.BertScorer.ssc_many` sums the same entries in the same order).
  Needs m ≥ 2. Range [0, 1] for similarities in [0, 1]. Identical responses: 0.
- ``eigv`` = U_EigV = Σ_j max(0, 1 − λ_j) over L's eigenvalues: a continuous count of
  semantic sets. Identical responses (W = 11ᵀ): eigenvalues 0 and 1 (m − 1 times), so
  U_EigV = 1, its minimum (one set; not 0); unrelated responses (W = I): L = 0, U_EigV = m.
- ``deg`` = U_Deg = trace(m·I − D)/m² = 1 − mean(W) (diagonal included). Identical: 0;
  unrelated: 1 − 1/m.
- ``ecc`` = U_Ecc: response j is embedded as v_j = (u_1j, …, u_rj), its coordinates in the
  eigenvectors u of L whose eigenvalue is below :data:`ECC_EIGENVALUE_THRESHOLD` (0.9, as
  lm-polygraph's default; at least the smallest eigenvalue's vector); the embeddings are
  centred, v'_j = v_j − mean_j' v_j', and U_Ecc = ‖[v'_1 … v'_m]‖_F, the Frobenius norm
  of the centred m × r embedding matrix (the Euclidean norm of the per-response distances
  ‖v'_j‖ to the centre, C_Ecc(s_j) = −‖v'_j‖ in the paper). The norm depends only on the
  span of the kept eigenvectors, not on the basis an eigensolver picks within a repeated
  eigenvalue. Identical: 0 (the one kept vector is constant); unrelated (every eigenvalue
  0, all m vectors kept): √(m − 1), its maximum. In effect a count: with r kept vectors,
  U_Ecc² = r − Σ_i (1ᵀu_i)²/m, and when the degrees are equal the first kept vector is
  constant and the others sum to 0, so U_Ecc = √(r − 1) exactly; on BERTScore-like matrices
  (near-equal degrees) it lies a little above that (0.003–0.009 on Scalabrino's summaries),
  so it steps (√2 → 1 → 0 …) as an eigenvalue crosses 0.9, and between steps only that small
  part, how unequal the degrees are, moves. With one kept vector (similar responses: all
  programs at r = 1) that part alone ranks the programs.

``eigv``, ``deg`` and ``ecc`` also have vectorised versions over a stack of matrices
(``*_many``), which :mod:`mcu_exp.measures.sizing` uses to average them over many subsets.
"""

from __future__ import annotations

import numpy as np

from mcu_exp.measures.registry import affinity, register_measure

ECC_EIGENVALUE_THRESHOLD = 0.9  # U_Ecc embeds by the eigenvectors of L with eigenvalue below this


def mean_pairwise(similarity: np.ndarray) -> float:
    """SSC: the mean of the symmetrised matrix's entries above the diagonal (pairs i < j)."""
    s = np.asarray(similarity, dtype=float)
    if len(s) < 2:
        raise ValueError(f"SSC needs at least 2 responses; got {len(s)}")
    w = (s + s.T) / 2.0  # exact for a symmetric matrix: x + x and the halving do not round
    return float(w[np.triu_indices(len(w), 1)].mean())


def normalized_laplacian(similarity: np.ndarray) -> np.ndarray:
    """L = I − D^{-1/2} W D^{-1/2} of the graph :func:`affinity` builds."""
    w = affinity(similarity)
    inv_sqrt = 1.0 / np.sqrt(w.sum(axis=1))
    out: np.ndarray = np.eye(len(w)) - inv_sqrt[:, None] * w * inv_sqrt[None, :]
    return out


@register_measure("ssc", size_free=True)
def ssc(similarity: np.ndarray) -> float:
    """1 − SSC (mean pairwise similarity): P1's historical α."""
    return 1.0 - mean_pairwise(similarity)


def _affinity_many(similarity: np.ndarray) -> np.ndarray:
    """:func:`affinity` of each matrix of a (count, m, m) stack."""
    w = np.clip((similarity + np.swapaxes(similarity, -1, -2)) / 2.0, 0.0, 1.0)
    idx = np.arange(w.shape[-1])
    w[:, idx, idx] = 1.0
    out: np.ndarray = w
    return out


def _laplacian_many(similarity: np.ndarray) -> np.ndarray:
    """:func:`normalized_laplacian` of each matrix of a stack."""
    w = _affinity_many(similarity)
    inv_sqrt = 1.0 / np.sqrt(w.sum(axis=-1))
    out: np.ndarray = np.eye(w.shape[-1]) - inv_sqrt[:, :, None] * w * inv_sqrt[:, None, :]
    return out


def eigv_many(similarity: np.ndarray) -> np.ndarray:
    """U_EigV of each matrix of a (count, m, m) stack."""
    eigenvalues = np.linalg.eigvalsh(_laplacian_many(similarity))
    out: np.ndarray = np.clip(1.0 - eigenvalues, 0.0, None).sum(axis=-1)
    return out


def deg_many(similarity: np.ndarray) -> np.ndarray:
    """U_Deg of each matrix of a (count, m, m) stack."""
    w = _affinity_many(similarity)
    m = w.shape[-1]
    out: np.ndarray = (m * m - w.sum(axis=(-1, -2))) / (m * m)
    return out


def ecc_many(similarity: np.ndarray, threshold: float = ECC_EIGENVALUE_THRESHOLD) -> np.ndarray:
    """U_Ecc of each matrix of a (count, m, m) stack."""
    eigenvalues, vectors = np.linalg.eigh(_laplacian_many(similarity))
    kept = np.maximum(1, np.count_nonzero(eigenvalues < threshold, axis=-1))
    centred = vectors - vectors.mean(axis=-2, keepdims=True)
    column_norms = (centred**2).sum(axis=-2)  # (count, m): squared norm of each centred eigenvector
    mask = np.arange(column_norms.shape[-1]) < kept[:, None]
    out: np.ndarray = np.sqrt(np.where(mask, column_norms, 0.0).sum(axis=-1))
    return out


@register_measure("eigv", batched=eigv_many)
def eigv(similarity: np.ndarray) -> float:
    """U_EigV = Σ_j max(0, 1 − λ_j), λ the eigenvalues of the normalised Laplacian."""
    eigenvalues = np.linalg.eigvalsh(normalized_laplacian(similarity))
    return float(np.clip(1.0 - eigenvalues, 0.0, None).sum())


@register_measure("deg", batched=deg_many)
def deg(similarity: np.ndarray) -> float:
    """U_Deg = trace(m·I − D) / m²."""
    w = affinity(similarity)
    m = len(w)
    return float((m * m - w.sum()) / (m * m))


@register_measure("ecc", batched=ecc_many, params={"threshold": ECC_EIGENVALUE_THRESHOLD})
def ecc(similarity: np.ndarray, threshold: float = ECC_EIGENVALUE_THRESHOLD) -> float:
    """U_Ecc: Frobenius norm of the centred spectral embedding (eigenvalues < ``threshold``,
    0.9 by default; ``proxy.measure_params.threshold``)."""
    eigenvalues, vectors = np.linalg.eigh(normalized_laplacian(similarity))  # ascending
    kept = max(1, int(np.count_nonzero(eigenvalues < threshold)))
    embedding = vectors[:, :kept]  # row j: response j's coordinates
    return float(np.linalg.norm(embedding - embedding.mean(axis=0), "fro"))
