"""Layer 1: numba kernels on one in-memory CSR block, samplers and ESO weights.

Nothing here imports Dask.  See :mod:`daskdca.kernels.sdca` for the local
solvers, :mod:`daskdca.kernels.sampling` for the random streams and
:mod:`daskdca.kernels.eso` for safe mini-batch step weights.
"""

from daskdca.kernels.sampling import (
    iid_order,
    minibatch_indices,
    minibatch_schedule,
    permutation_order,
    stream_seed,
)
from daskdca.kernels.sdca import local_sdca, minibatch_sdca, objective_sums

__all__ = [
    "iid_order",
    "local_sdca",
    "minibatch_indices",
    "minibatch_schedule",
    "minibatch_sdca",
    "objective_sums",
    "permutation_order",
    "stream_seed",
]
