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
  0, all m vectors kept): √(m − 1), its maximum.
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
    return np.eye(len(w)) - inv_sqrt[:, None] * w * inv_sqrt[None, :]


@register_measure("ssc")
def ssc(similarity: np.ndarray) -> float:
    """1 − SSC (mean pairwise similarity): P1's historical α."""
    return 1.0 - mean_pairwise(similarity)


@register_measure("eigv")
def eigv(similarity: np.ndarray) -> float:
    """U_EigV = Σ_j max(0, 1 − λ_j), λ the eigenvalues of the normalised Laplacian."""
    eigenvalues = np.linalg.eigvalsh(normalized_laplacian(similarity))
    return float(np.clip(1.0 - eigenvalues, 0.0, None).sum())


@register_measure("deg")
def deg(similarity: np.ndarray) -> float:
    """U_Deg = trace(m·I − D) / m²."""
    w = affinity(similarity)
    m = len(w)
    return float((m * m - w.sum()) / (m * m))


@register_measure("ecc")
def ecc(similarity: np.ndarray) -> float:
    """U_Ecc: Frobenius norm of the centred spectral embedding (eigenvalues < 0.9)."""
    eigenvalues, vectors = np.linalg.eigh(normalized_laplacian(similarity))  # ascending
    kept = max(1, int(np.count_nonzero(eigenvalues < ECC_EIGENVALUE_THRESHOLD)))
    embedding = vectors[:, :kept]  # row j: response j's coordinates
    return float(np.linalg.norm(embedding - embedding.mean(axis=0), "fro"))
