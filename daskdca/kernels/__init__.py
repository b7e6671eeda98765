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
    "warm_up",
]


def warm_up():
    """Compile (or load from numba's cache) the kernels every round calls, on a one-row problem.

    The Dask engine runs this once per worker process (a worker plugin), so
    that the first round does not pay the compilation.
    """
    import numpy as np

    from daskdca.kernels.catalyst import catalyst_step
    from daskdca.kernels.newton import cholesky_solve, dual_point, ladder_loss_sums, newton_sums, newton_system
    from daskdca.kernels.sdca import local_sdca, minibatch_sdca, movable_rows, movable_sdca, objective_sums_movable

    indptr = np.array([0, 1], dtype=np.int64)
    indices = np.array([0], dtype=np.int32)
    data = np.array([1.0])
    one = np.ones(1)
    unweighted = np.empty(0)
    for kind in range(5):
        local_sdca(indptr, indices, data, one, unweighted, one, np.zeros(1), np.zeros(1), np.zeros(1),
                   np.zeros(1, dtype=np.int64), kind, 1.0, 1.0, 1.0, True)
        movable_rows(indptr, indices, data, one, unweighted, one, np.zeros(1), np.zeros(1), 0, 1, kind, 1.0, 1.0,
                     1.0)
        objective_sums(indptr, indices, data, one, unweighted, np.zeros(1), np.zeros(1), 0, 1, kind, 1.0)
        objective_sums_movable(indptr, indices, data, one, unweighted, one, np.zeros(1), np.zeros(1), 0, 1, kind,
                               1.0, 1.0, 1.0)
        movable_sdca(indptr, indices, data, one, unweighted, one, np.zeros(1), np.zeros(1),
                     np.zeros(1, dtype=np.int64), 1, kind, 1.0, 1.0, 0.0)
        minibatch_sdca(indptr, indices, data, one, unweighted, one, np.zeros(1), np.zeros(1), np.zeros(1),
                       np.zeros((1, 1), dtype=np.int64), kind, 1.0, 1.0)
    # the primal Newton method's kernels (the loss kind is a runtime argument: one call compiles them)
    newton_sums(indptr, indices, data, one, unweighted, np.zeros(1), 0, 1, 3, 0.0, np.zeros(2), np.zeros(2))
    ladder_loss_sums(indptr, indices, data, one, unweighted, np.zeros(1), np.zeros(1), 0, 1, 3, 0.0, one, np.zeros(1))
    dual_point(indptr, indices, data, one, unweighted, np.zeros(1), 0, 1, 3, 0.0)
    cholesky_solve(newton_system(one, 1, 1.0, 1.0), one)
    catalyst_step(one, one, one, one, 1.0, 0.0, 1.0)  # the combine of CoCoA+ inside Catalyst
