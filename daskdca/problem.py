"""The in-memory problem: one CSR matrix split into contiguous row partitions.

``Problem`` holds validated data only; it does not validate user input (the
API layer does) and it knows nothing of Dask.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np
import scipy.sparse as sp

from daskdca.kernels.sdca import objective_sums
from daskdca.losses import Loss

__all__ = ["Problem", "even_partition_offsets"]


def even_partition_offsets(n, n_partitions):
    """Row boundaries of ``n_partitions`` contiguous blocks whose sizes differ by at most 1."""
    sizes = np.full(n_partitions, n // n_partitions, dtype=np.int64)
    sizes[: n % n_partitions] += 1
    return np.concatenate(([0], np.cumsum(sizes)))


@dataclass(frozen=True, eq=False)
class Problem:
    """``min_w 1/n sum_i phi_i(x_i.w) + lam/2 ||w||^2`` on in-memory CSR data.

    Parameters
    ----------
    X : scipy.sparse.csr_matrix of shape (n, d)
        Canonical CSR (sorted, no duplicates), float64 or float32 values.
    y : ndarray of shape (n,)
        float64 labels in {-1, +1} (classification losses) or targets.
    loss : Loss
    lam : float
        Regularisation ``lam > 0``.
    partition_offsets : ndarray of int64, shape (K + 1,)
        Row boundaries of the K partitions, from 0 to n.
    """

    X: sp.csr_matrix
    y: np.ndarray
    loss: Loss
    lam: float
    partition_offsets: np.ndarray
    sqnorm: np.ndarray = field(init=False)  # ||x_i||^2, derived from X

    def __post_init__(self):
        sqnorm = np.asarray(self.X.multiply(self.X).sum(axis=1), dtype=np.float64).ravel()
        object.__setattr__(self, "sqnorm", sqnorm)  # frozen dataclass: set once here

    @property
    def n(self) -> int:
        return self.X.shape[0]

    @property
    def d(self) -> int:
        return self.X.shape[1]

    @property
    def lam_n(self) -> float:
        return self.lam * self.n

    @property
    def n_partitions(self) -> int:
        return len(self.partition_offsets) - 1

    @property
    def csr_arrays(self):
        """``(indptr, indices, data)`` as the kernels take them."""
        return self.X.indptr, self.X.indices, self.X.data

    def w_from_alpha(self, alpha):
        """``w(alpha) = X^T alpha / (lam n)``, computed from scratch in float64."""
        return np.asarray(self.X.T @ alpha, dtype=np.float64) / self.lam_n

    def objectives(self, w, alpha):
        """``(P(w), D(alpha))`` from one pass over the data.

        ``D`` uses ``||w||^2`` for ``||w(alpha)||^2``; that is exact only when
        ``w == w(alpha)``, which :func:`certified_objectives` guarantees.
        """
        indptr, indices, data = self.csr_arrays
        loss_sum, conj_sum = objective_sums(
            indptr, indices, data, self.y, alpha, w, 0, self.n,
            int(self.loss.kind), self.loss.param,
        )
        return self.objectives_from_sums(loss_sum, conj_sum, w)

    def objectives_from_sums(self, loss_sum, conj_sum, w):
        """``(P(w), D(alpha))`` from the two sums of :func:`~daskdca.kernels.sdca.objective_sums`."""
        reg = 0.5 * self.lam * float(w @ w)
        return loss_sum / self.n + reg, -conj_sum / self.n - reg

    def certified_objectives(self, alpha):
        """``(w(alpha), P(w(alpha)), D(alpha))`` with ``w`` rebuilt from ``alpha`` alone."""
        w = self.w_from_alpha(alpha)
        primal, dual = self.objectives(w, alpha)
        return w, primal, dual
