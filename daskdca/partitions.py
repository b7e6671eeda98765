"""Partitions: the rows one local step sees, in memory or read block by block from a store.

A method's local step receives a partition and reads its rows through
:meth:`pieces`, which yields ``(rows, lo, hi, local_start)``: CSR rows
``rows[lo:hi]`` that are the partition's rows ``local_start ...``.  A
:class:`MemoryPartition` holds its rows (one array set, with the row offsets
of the store blocks they came from); a :class:`StorePartition` reads one store
block at a time, so a worker holds one block, not its partition.  Methods
that can sweep all of a partition's rows at once ask :meth:`whole`, which is
None out of core.

Squared row norms of a store block are its ``row_sqnorm``, which the block
checksum covers and which the writer computed with the same
:func:`~daskdca.problem.row_sqnorms` that gives the norms of in-memory arrays,
so a fit depends only on verified data arrays and both paths give the same
bits (reading them saves recomputing them every round out of core).

In memory, rows go to partitions by a seeded random permutation
(:func:`random_row_order`): data files are often sorted by label, and
contiguous partitions of sorted rows each see a different distribution, which
makes CoCoA+ hundreds of times slower (benchmarks/RESULTS.md, "Method protocol").

This module knows no Dask and no method.
"""

from __future__ import annotations

from concurrent.futures import ThreadPoolExecutor
from typing import NamedTuple

import numpy as np
import scipy.sparse as sp

from daskdca.kernels.crammer_singer import crammer_singer_objective_sums
from daskdca.kernels.multinomial import multinomial_objective_sums
from daskdca.kernels.sampling import permutation_order
from daskdca.kernels.sdca import objective_sums, xt_add
from daskdca.losses import CrammerSinger, Softmax
from daskdca.problem import row_sqnorms

__all__ = [
    "MemoryPartition",
    "OneVsRest",
    "OneVsRestPartition",
    "Rows",
    "StorePartition",
    "even_sizes",
    "gram_matvec_part",
    "in_caller_order",
    "in_partition_order",
    "objective_sums_part",
    "random_row_order",
    "rows_from_csr",
    "softmax_rows",
    "sqnorm_sum_part",
    "xt_alpha_part",
]

# The row-assignment permutation draws from the stream (random_state, this, 0);
# no round of a fit has this index.
ROW_ASSIGNMENT_ROUND = (1 << 62) | 1


#: ``Rows.weight`` of an unweighted problem: every row's loss has weight 1
UNWEIGHTED = np.empty(0)


class Rows(NamedTuple):
    """CSR rows in memory, with signed labels (or targets), squared row norms and row weights.

    ``weight[i]`` multiplies row ``i``'s loss (``sample_weight`` times
    ``class_weight``); the empty :data:`UNWEIGHTED` means every weight is 1.
    """

    indptr: np.ndarray
    indices: np.ndarray
    data: np.ndarray
    y: np.ndarray
    sqnorm: np.ndarray
    n_features: int
    weight: np.ndarray = UNWEIGHTED

    @property
    def n_rows(self) -> int:
        return self.indptr.shape[0] - 1

    def csr(self, lo=0, hi=None):
        """Rows ``[lo, hi)`` (all by default) as a SciPy CSR matrix over the same ``data`` and ``indices``
        (views, not a copy: a row slice of a CSR matrix copies them)."""
        hi = self.n_rows if hi is None else hi
        a, b = self.indptr[lo], self.indptr[hi]
        return sp.csr_matrix((self.data[a:b], self.indices[a:b], self.indptr[lo:hi + 1] - a),
                             shape=(hi - lo, self.n_features))


def rows_from_csr(X, y, weight=None, sqnorm=None) -> Rows:
    """:class:`Rows` of a canonical CSR matrix (int64 indptr), float64 labels and row weights (None: all 1).

    ``sqnorm``: the rows' squared norms when they are known (a store's verified ``row_sqnorm``, computed by
    the same :func:`~daskdca.problem.row_sqnorms`); None computes them.
    """
    X = sp.csr_matrix(X)
    sqnorm = row_sqnorms(X.indptr, X.data) if sqnorm is None else np.asarray(sqnorm, dtype=np.float64)
    weight = UNWEIGHTED if weight is None else np.ascontiguousarray(weight, dtype=np.float64)
    return Rows(X.indptr.astype(np.int64, copy=False), X.indices, X.data,
                np.asarray(y, dtype=np.float64), sqnorm, X.shape[1], weight)


def even_sizes(n, n_partitions):
    """``n_partitions`` sizes that differ by at most one and add up to ``n``."""
    sizes = np.full(n_partitions, n // n_partitions, dtype=np.int64)
    sizes[: n % n_partitions] += 1
    return sizes


def random_row_order(n, random_state):
    """The seeded permutation that assigns rows to in-memory partitions.

    Partition k gets rows ``order[offsets[k]:offsets[k + 1]]`` in that order.
    """
    return permutation_order(random_state, ROW_ASSIGNMENT_ROUND, 0, n, n, 0)


def in_partition_order(values, row_order):
    """``values`` (one entry per row on the last axis, in the caller's row order) in the partitions' row order.

    ``row_order[j]`` is the caller's row of the ``j``-th row in partition
    order (:func:`random_row_order`); None: the two orders are the same.
    """
    return values if row_order is None else values[..., row_order]


def in_caller_order(values, row_order):
    """``values`` (one entry per row on the last axis, in the partitions' row order) in the caller's row order:
    the inverse of :func:`in_partition_order`."""
    if row_order is None:
        return values
    out = np.empty_like(values)
    out[..., row_order] = values
    return out


class MemoryPartition(NamedTuple):
    """A partition held in memory.

    ``block_starts`` are the row offsets of the store blocks the rows came
    from (``[0, n_rows]`` for rows that came from an array), so that
    reductions over pieces add in the same order as out of core.
    """

    rows: Rows
    block_starts: np.ndarray

    @property
    def n_rows(self) -> int:
        return self.rows.n_rows

    def whole(self):
        return self.rows

    def labels(self):
        """``(y, weight)`` of the partition's rows (weight empty when unweighted), in its row order."""
        return self.rows.y, self.rows.weight

    def pieces(self, order=None):
        starts = self.block_starts
        for j in range(len(starts) - 1) if order is None else order:
            lo, hi = int(starts[j]), int(starts[j + 1])
            yield self.rows, lo, hi, lo


def _signed(y, positive_label):
    if positive_label is None:
        return np.asarray(y, dtype=np.float64)
    return np.where(y == positive_label, 1.0, -1.0)


def load_block_rows(store, k, positive_label) -> Rows:
    """Read (and verify) store block ``k``, its row weights in a weighted store, and sign its labels."""
    X, y, sqnorm, weight = store.read_block(k, with_sqnorm=True, with_weight=True)
    return rows_from_csr(X, _signed(y, positive_label), weight, sqnorm)


class StorePartition(NamedTuple):
    """A partition left in the store: blocks ``[first, stop)``, read when needed."""

    store: object
    first: int
    stop: int
    positive_label: object

    @property
    def block_starts(self):
        offsets = np.asarray(self.store.block_row_offsets[self.first:self.stop + 1], dtype=np.int64)
        return offsets - offsets[0]

    @property
    def n_rows(self) -> int:
        return int(self.block_starts[-1])

    def whole(self):
        return None

    def labels(self):
        """``(y, weight)`` of the partition's rows (weight empty when unweighted), signed as its blocks are,
        read without the rows and NOT verified (:meth:`~daskdca.store.CSRStore.read_labels`): for a choice
        that the verified reads of :meth:`pieces` certify later."""
        offsets = self.store.block_row_offsets
        y, weight = self.store.read_labels(int(offsets[self.first]), int(offsets[self.stop]))
        weight = UNWEIGHTED if weight is None else np.ascontiguousarray(weight, dtype=np.float64)
        return np.asarray(_signed(y, self.positive_label), dtype=np.float64), weight

    def pieces(self, order=None):
        """The blocks in ``order`` (None: store order), each read and verified in its turn.

        The next block is read in a background thread while the caller works
        on the one just yielded (reading, decompressing and verifying a block
        release the interpreter while the numba sweeps do not need it), so at
        most two blocks beyond the caller's are in flight.  A block that fails
        its checks raises when its turn comes, as without the read-ahead.
        """
        starts = self.block_starts
        order = [int(j) for j in (range(len(starts) - 1) if order is None else order)]
        if len(order) < 2:
            for j in order:
                rows = load_block_rows(self.store, self.first + j, self.positive_label)
                yield rows, 0, rows.n_rows, int(starts[j])
            return
        with ThreadPoolExecutor(max_workers=1, thread_name_prefix="daskdca-read-ahead") as pool:
            ahead = pool.submit(load_block_rows, self.store, self.first + order[0], self.positive_label)
            for t, j in enumerate(order):
                rows = ahead.result()
                if t + 1 < len(order):
                    ahead = pool.submit(load_block_rows, self.store, self.first + order[t + 1], self.positive_label)
                yield rows, 0, rows.n_rows, int(starts[j])

    def load(self) -> MemoryPartition:
        """All blocks read into one :class:`MemoryPartition` (the task that keeps a partition in memory)."""
        blocks = [load_block_rows(self.store, k, self.positive_label) for k in range(self.first, self.stop)]
        if len(blocks) == 1:
            return MemoryPartition(blocks[0], self.block_starts)
        X = sp.vstack([b.csr() for b in blocks], format="csr")
        rows = Rows(X.indptr.astype(np.int64), X.indices, X.data, np.concatenate([b.y for b in blocks]),
                    np.concatenate([b.sqnorm for b in blocks]), blocks[0].n_features,
                    np.concatenate([b.weight for b in blocks]))
        return MemoryPartition(rows, self.block_starts)


class OneVsRest(NamedTuple):
    """The K binary problems of a multi-class fit: problem ``k`` is ``labels[k]`` against the rest.

    ``labels[k]`` is the value a row's stored label equals for class ``k``
    (the class index in memory, the label value in a store);
    ``positive_weights[k]`` multiplies the loss of class ``k``'s rows in
    problem ``k`` (``class_weight``, LIBLINEAR's one-vs-rest ``Cp = C w_k``;
    the other rows keep their ``sample_weight``).
    """

    labels: tuple
    positive_weights: tuple

    @property
    def n_classes(self) -> int:
        return len(self.labels)


def binary_labels(y, weight, label, positive_weight):
    """Labels ``y`` and row weights ``weight`` as the binary problem "``label`` against the rest".

    Labels in {-1, +1}; a positive weight of 1 leaves the weights as they
    are (an unweighted problem stays :data:`UNWEIGHTED`).  Returns
    ``(y, weight)``.
    """
    positive = y == label
    if positive_weight != 1.0:
        factor = np.where(positive, float(positive_weight), 1.0)
        weight = factor if weight.size == 0 else weight * factor
    return np.where(positive, 1.0, -1.0), weight


def binary_rows(rows, label, positive_weight):
    """``rows`` as the binary problem "``label`` against the rest" (:func:`binary_labels`).

    Problem ``k`` sees the very arrays a binary fit of ``y == label`` sees.
    """
    y, weight = binary_labels(rows.y, rows.weight, label, positive_weight)
    return rows._replace(y=y, weight=weight)


class ClassView(NamedTuple):
    """Binary problem ``k`` of a :class:`OneVsRestPartition`: the same rows, labels ``+1`` for class ``k``."""

    part: object
    label: float
    positive_weight: float

    @property
    def n_rows(self) -> int:
        return self.part.n_rows

    @property
    def block_starts(self):
        return self.part.block_starts

    def whole(self):
        rows = self.part.whole()
        return None if rows is None else binary_rows(rows, self.label, self.positive_weight)

    def labels(self):
        """``(y, weight)`` of the binary problem (:func:`binary_labels`)."""
        return binary_labels(*self.part.labels(), self.label, self.positive_weight)

    def pieces(self, order=None):
        source = view = None
        for rows, lo, hi, start in self.part.pieces(order):
            if rows is not source:  # in memory every piece is the same Rows: label it once
                source, view = rows, binary_rows(rows, self.label, self.positive_weight)
            yield view, lo, hi, start


class OneVsRestPartition(NamedTuple):
    """A partition of a multi-class fit: ``part``'s rows carry the stored labels, ``problems`` the K problems.

    :meth:`view` is binary problem ``k`` (a partition like any other); the
    reductions below take a ``(K, n_k)`` dual point for such a partition and
    return one result per problem, each computed exactly as for the view.
    """

    part: object
    problems: OneVsRest

    @property
    def n_rows(self) -> int:
        return self.part.n_rows

    @property
    def block_starts(self):
        return self.part.block_starts

    @property
    def n_classes(self) -> int:
        return self.problems.n_classes

    def whole(self):
        return self.part.whole()

    def labels(self):
        """``(y, weight)`` of the rows, their stored labels (:meth:`view` makes each problem's)."""
        return self.part.labels()

    def pieces(self, order=None):
        return self.part.pieces(order)

    def view(self, k) -> ClassView:
        return ClassView(self.part, self.problems.labels[k], self.problems.positive_weights[k])

    def load(self):
        """The partition with its rows read into memory (see :meth:`StorePartition.load`)."""
        return OneVsRestPartition(self.part.load(), self.problems)


def store_partition_ranges(n_blocks, n_partitions):
    """Contiguous runs of blocks, as even as possible: ``[(first, stop), ...]``."""
    bounds = np.linspace(0, n_blocks, n_partitions + 1).round().astype(int)
    return [(int(a), int(b)) for a, b in zip(bounds[:-1], bounds[1:])]


def row_view(values, rows, lo, start):
    """The part of a partition-length array that lines up with ``rows`` (a view).

    A piece ``(rows, lo, hi, start)`` holds partition rows ``start ...`` at
    ``rows[lo:hi]``, so entry ``i`` of ``rows`` is entry ``start - lo + i`` of
    the partition.
    """
    return values[start - lo:start - lo + rows.n_rows]


# Reductions over one partition, piece by piece; the drivers sum them over
# partitions with daskdca.methods.base.tree_reduce.

def _per_problem(function, part, alpha, *args):
    """``function`` on each binary problem of a :class:`OneVsRestPartition` (``alpha`` and the per-problem
    arguments carry the class axis first), stacked."""
    return np.stack([function(part.view(k), alpha[k], *(a[k] for a in args)) for k in range(part.n_classes)])


def softmax_rows(rows, problems):
    """``(cls, weight)`` of rows that carry stored labels, for the softmax loss of the classes ``problems`` names
    (and the Crammer-Singer loss, alike).

    ``cls[i]`` is the index ``k`` with ``problems.labels[k] == rows.y[i]``;
    ``weight[i]`` is the row's weight (``rows.weight``, 1 when unweighted)
    times its class's ``problems.positive_weights`` entry (``class_weight``:
    in the multinomial and Crammer-Singer problems a class weight multiplies
    the loss of that class's rows, as scikit-learn's ``LogisticRegression``
    and LIBLINEAR's ``-s 4`` do), or :data:`UNWEIGHTED` when every weight is 1.
    """
    labels = np.asarray(problems.labels, dtype=np.float64)
    sorter = np.argsort(labels, kind="stable")
    cls = sorter[np.searchsorted(labels, rows.y, sorter=sorter)].astype(np.int64)
    class_weights = np.asarray(problems.positive_weights, dtype=np.float64)
    if np.all(class_weights == 1.0):
        return cls, rows.weight
    factor = class_weights[cls]
    return cls, (factor if rows.weight.size == 0 else rows.weight * factor)


def objective_sums_part(part, alpha, w, loss):
    """``[sum_i phi_i(x_i.w), sum_i phi_i*(-alpha_i)]`` over the partition's rows.

    For a :class:`OneVsRestPartition` ``alpha`` is ``(K, n_k)``, ``w``
    ``(K, d)`` and the result ``(K, 2)``, one row per problem; with the
    softmax loss (:class:`~daskdca.losses.Softmax`, a multinomial fit) the
    same shapes give the one pair of the multinomial problem
    (:func:`~daskdca.kernels.multinomial.multinomial_objective_sums`), and
    with the Crammer-Singer loss (:class:`~daskdca.losses.CrammerSinger`)
    the pair of that problem
    (:func:`~daskdca.kernels.crammer_singer.crammer_singer_objective_sums`).
    """
    if isinstance(loss, (Softmax, CrammerSinger)):
        sums = multinomial_objective_sums if isinstance(loss, Softmax) else crammer_singer_objective_sums
        loss_sum = conj_sum = 0.0
        for rows, lo, hi, start in part.pieces():
            cls, weight = softmax_rows(rows, part.problems)
            ls, cs = sums(rows.indptr, rows.indices, rows.data, cls, weight,
                          alpha[:, start - lo:start - lo + rows.n_rows], w, lo, hi)
            loss_sum, conj_sum = loss_sum + ls, conj_sum + cs
        return np.array([loss_sum, conj_sum])
    if isinstance(part, OneVsRestPartition):
        return _per_problem(lambda view, a, v: objective_sums_part(view, a, v, loss), part, alpha, w)
    loss_sum = conj_sum = 0.0
    for rows, lo, hi, start in part.pieces():
        ls, cs = objective_sums(rows.indptr, rows.indices, rows.data, rows.y, rows.weight,
                                row_view(alpha, rows, lo, start),
                                w, lo, hi,
                                int(loss.kind), loss.param)
        loss_sum, conj_sum = loss_sum + ls, conj_sum + cs
    return np.array([loss_sum, conj_sum])


def xt_alpha_part(part, alpha, lam_n):
    """``X_k^T alpha_k / lam_n`` for the partition (``(K, d)`` for a ``(K, n_k)`` one-vs-rest ``alpha``)."""
    if isinstance(part, OneVsRestPartition):
        return _per_problem(lambda view, a: xt_alpha_part(view, a, lam_n), part, alpha)
    out = None
    for rows, lo, hi, start in part.pieces():
        # row after row, as SciPy's X^T alpha adds them (the same bits), without building a SciPy matrix (0.7 ms
        # of a 25 ms fit of a9a's 32,561 rows)
        piece = np.zeros(rows.n_features)
        xt_add(rows.indptr, rows.indices, rows.data, row_view(alpha, rows, lo, start), lo, hi, piece)
        out = piece if out is None else out + piece
    return out / lam_n


def sqnorm_sum_part(part):
    """``sum_i ||x_i||^2`` over the partition's rows, as a 1-element float64 array (summed like the d-vectors)."""
    total = np.zeros(1)
    for rows, lo, hi, _ in part.pieces():
        total += rows.sqnorm[lo:hi].sum()
    return total


def gram_matvec_part(part, v):
    """``X~_k^T X~_k v`` with unit-norm rows (a power-iteration step for ``sigma^2``)."""
    out = np.zeros_like(v)
    for rows, lo, hi, _ in part.pieces():
        norms = np.sqrt(rows.sqnorm[lo:hi])
        scale = np.divide(1.0, norms, out=np.zeros_like(norms), where=norms > 0)
        Xn = sp.diags(scale) @ rows.csr(lo, hi)
        out += np.asarray(Xn.T @ (Xn @ v)).ravel()
    return out
