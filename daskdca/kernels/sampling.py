"""Counter-based random streams for the local solvers.

Every stream is a pure function of ``(random_state, round, partition)``: a task
that is replayed after a worker loss, or a round computed in-process instead
of on a cluster, draws exactly the same indices.  The generator is splitmix64
(Steele, Lea, Flood, "Fast splittable pseudorandom number generators",
OOPSLA 2014), which is small, has no hidden global state, and gives the same
bits on every platform and in every thread.
"""

from __future__ import annotations

import numpy as np
from numba import njit

__all__ = ["stream_seed", "sub_block_stream", "permutation_order", "iid_order", "minibatch_indices",
           "minibatch_schedule"]

_GOLDEN = np.uint64(0x9E3779B97F4A7C15)
_MIX1 = np.uint64(0xBF58476D1CE4E5B9)
_MIX2 = np.uint64(0x94D049BB133111EB)
_S30 = np.uint64(30)
_S27 = np.uint64(27)
_S31 = np.uint64(31)
_S11 = np.uint64(11)
_S3 = np.uint64(3)
_SUB_BLOCK_BIT = np.uint64(1 << 61)
_TWO_M53 = 1.0 / 9007199254740992.0  # 2**-53


@njit(nogil=True, cache=True)
def _mix(z):
    z = (z ^ (z >> _S30)) * _MIX1
    z = (z ^ (z >> _S27)) * _MIX2
    return z ^ (z >> _S31)


@njit(nogil=True, cache=True)
def stream_seed(random_state, round_index, partition):
    """The 64-bit state of the stream for one (random_state, round, partition)."""
    s = _mix(np.uint64(random_state) + _GOLDEN)
    s = _mix(s ^ (np.uint64(round_index) + _GOLDEN))
    s = _mix(s ^ (np.uint64(partition) + _GOLDEN))
    return s


@njit(nogil=True, cache=True)
def _sub_block_stream(stream, index):
    s = _mix(np.uint64(stream) + _GOLDEN)
    s = _mix(s ^ (np.uint64(index) + _GOLDEN))
    return (s >> _S3) | _SUB_BLOCK_BIT


def sub_block_stream(stream, index):
    """The stream id of sub-block ``index`` of the rows that draw from ``stream`` (a partition or block stream).

    A partition's threads (``CoCoAPlus(threads=T)``) each sweep a sub-block
    of its rows with their own permutation, drawn from
    ``(random_state, round, sub_block_stream(stream, b))``.  The id is a
    splitmix64 hash of ``(stream, index)`` with bit 61 set and bit 62 clear,
    so it is never a partition id (below ``2**31``) nor one of the streams
    with bit 62 set (out-of-core blocks, global steps).
    """
    return int(_sub_block_stream(stream, index))


@njit(nogil=True, cache=True)
def _next_below(state, n):
    """Advance ``state`` (a 1-element uint64 array) and return an int in [0, n)."""
    state[0] += _GOLDEN
    u = (_mix(state[0]) >> _S11) * _TWO_M53  # uniform in [0, 1) on a 2**-53 grid
    k = np.int64(u * n)
    return min(k, n - 1)


@njit(nogil=True, cache=True)
def permutation_order(random_state, round_index, partition, n_rows, n_steps, row_offset):
    """``n_steps`` row indices: consecutive random permutations of ``n_rows`` rows.

    Each permutation is a Fisher-Yates shuffle; indices are shifted by
    ``row_offset`` so that a partition stored inside a larger CSR matrix gets
    the indices of its own rows.
    """
    state = np.empty(1, dtype=np.uint64)
    state[0] = stream_seed(random_state, round_index, partition)
    out = np.empty(n_steps, dtype=np.int64)
    if n_steps == n_rows:  # one permutation (a sweep's usual order), shuffled in place: the same draws, one array
        for k in range(n_rows):
            out[k] = k + row_offset  # the shuffle moves values, never changes them
        _shuffle(state, out)
        return out
    perm = np.arange(n_rows, dtype=np.int64)
    t = 0
    while t < n_steps:
        _shuffle(state, perm)
        take = min(n_rows, n_steps - t)
        for k in range(take):
            out[t + k] = perm[k] + row_offset
        t += take
    return out


@njit(nogil=True, cache=True)
def _shuffle(state, perm):
    """Fisher-Yates shuffle of ``perm`` in place, drawing from ``state``."""
    for k in range(perm.shape[0] - 1, 0, -1):
        j = _next_below(state, k + 1)
        tmp = perm[k]
        perm[k] = perm[j]
        perm[j] = tmp


@njit(nogil=True, cache=True)
def iid_order(random_state, round_index, partition, n_rows, n_steps, row_offset):
    """``n_steps`` row indices drawn uniformly with replacement."""
    state = np.empty(1, dtype=np.uint64)
    state[0] = stream_seed(random_state, round_index, partition)
    out = np.empty(n_steps, dtype=np.int64)
    for t in range(n_steps):
        out[t] = _next_below(state, n_rows) + row_offset
    return out


@njit(nogil=True, cache=True)
def minibatch_indices(random_state, round_index, partition, n_rows, batch_size, row_offset):
    """A uniformly random subset of ``batch_size`` distinct rows (tau-nice sampling).

    Floyd's algorithm (Bentley & Floyd, CACM 30(9), 1987): O(batch_size)
    expected work whatever ``n_rows`` is.  The result is sorted, which keeps
    row access in memory order; the mini-batch step does not depend on the
    order within a batch.
    """
    state = np.empty(1, dtype=np.uint64)
    state[0] = stream_seed(random_state, round_index, partition)
    chosen = set()
    chosen.add(np.int64(-1))  # lets numba type the set; removed below
    chosen.discard(np.int64(-1))
    for j in range(n_rows - batch_size, n_rows):
        t = _next_below(state, j + 1)
        if t in chosen:
            chosen.add(np.int64(j))
        else:
            chosen.add(np.int64(t))
    out = np.empty(batch_size, dtype=np.int64)
    k = 0
    for v in chosen:
        out[k] = v + row_offset
        k += 1
    out.sort()
    return out


@njit(nogil=True, cache=True)
def minibatch_schedule(random_state, first_iteration, n_iterations, partition_offsets, tau):
    """Batches of ``n_iterations`` (C, b)-distributed mini-batch iterations.

    Row ``t`` holds ``tau`` distinct rows from each of the C partitions
    (``b = C tau``, Takáč et al. 2015 [TRS15] §3, sampling 3); the rows drawn from partition
    ``c`` in iteration ``j`` come from the stream ``(random_state, j, c)``,
    exactly as a cluster task for iteration ``j`` on partition ``c`` draws them.
    """
    n_partitions = partition_offsets.shape[0] - 1
    out = np.empty((n_iterations, n_partitions * tau), dtype=np.int64)
    for t in range(n_iterations):
        for c in range(n_partitions):
            start = partition_offsets[c]
            rows = minibatch_indices(random_state, first_iteration + t, c,
                                     partition_offsets[c + 1] - start, tau, start)
            out[t, c * tau:(c + 1) * tau] = rows
    return out
