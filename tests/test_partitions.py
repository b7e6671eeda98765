"""Random in-memory partitions: sorted files cost CoCoA+ nothing."""

import numpy as np
import pytest
import scipy.sparse as sp

import daskdca
from daskdca.partitions import even_sizes, random_row_order
from daskdca.problem import row_sqnorms

import reference_kernels as ref


def _sorted_by_label(n=20_000, d=20, seed=0):
    """A generated logistic problem with all negatives first, as many real files are."""
    rng = np.random.default_rng(seed)
    X = rng.standard_normal((n, d))
    y = np.where(X @ rng.standard_normal(d) + 0.5 * rng.standard_normal(n) > 0, 1.0, -1.0)
    order = np.argsort(y, kind="stable")
    return sp.csr_matrix(X[order]), y[order]


# 4 partitions repeats the 2-partition case's check (suite time): it runs with -m slow
@pytest.mark.parametrize("n_partitions", [2, pytest.param(4, marks=pytest.mark.slow)])
def test_cocoa_on_sorted_rows_needs_no_more_rounds_than_on_shuffled_rows(n_partitions):
    X, y = _sorted_by_label()
    shuffle = np.random.default_rng(1).permutation(X.shape[0])
    kwargs = dict(loss="logistic", lam=1e-4, solver="cocoa+", n_partitions=n_partitions, tol=1e-4)
    on_sorted = daskdca.fit(X, y, **kwargs)
    on_shuffled = daskdca.fit(X[shuffle], y[shuffle], **kwargs)
    assert on_sorted.converged_ and on_shuffled.converged_
    assert on_sorted.n_rounds_ <= 1.5 * on_shuffled.n_rounds_
    # results stay in the caller's row order: the duals, read in X's order here, give the certified dual
    assert ref.dual_objective(X, y, on_sorted.dual_coef_, 1e-4, "logistic")[0] == pytest.approx(on_sorted.dual_,
                                                                                                rel=1e-9)


def test_random_partitions_are_seeded_and_cover_every_row_once():
    order = random_row_order(1000, 3)
    np.testing.assert_array_equal(np.sort(order), np.arange(1000))
    np.testing.assert_array_equal(order, random_row_order(1000, 3))
    assert not np.array_equal(order, random_row_order(1000, 4))
    assert list(even_sizes(10, 3)) == [4, 3, 3]


def _finish_tree(nodes, n_items, combine):
    """The nodes of the tree over ``n_items`` that span runs, from the runs' own nodes (as the Dask engine does)."""
    from daskdca.methods.base import tree_nodes

    root = (0, 0)
    for root, children in tree_nodes(n_items):
        if root not in nodes and all(child in nodes for child in children):
            nodes[root] = combine(*[nodes[child] for child in children])
    return nodes[root]


@pytest.mark.parametrize("n_items", [1, 2, 7, 8, 9, 10, 17, 64, 65, 100])
def test_runs_of_items_reduce_to_the_bits_of_the_whole_tree(n_items):
    """Splitting the items into runs (one per worker), reducing each run's whole nodes in the run and the rest
    across runs, calls ``combine`` on the same children in the same order as ``tree_reduce``: the expression
    strings are equal, and so are the float sums (which depend on the order)."""
    from daskdca.methods.base import tree_reduce, tree_reduce_within

    def concat(*children):
        return "(" + "+".join(children) + ")"

    rng = np.random.default_rng(n_items)
    values = rng.standard_normal(n_items) * 10.0 ** rng.integers(-8, 8, n_items)
    for n_runs in {1, 2, 3, 5, n_items}:
        if n_runs > n_items:
            continue
        bounds = [k * n_items // n_runs for k in range(n_runs + 1)]  # contiguous runs, unequal where they must be
        for items, combine in (([str(k) for k in range(n_items)], concat), (list(values), lambda *c: sum(c, 0.0))):
            nodes = {}
            for a, b in zip(bounds[:-1], bounds[1:]):
                nodes.update(tree_reduce_within(items[a:b], a, n_items, combine))
            assert _finish_tree(nodes, n_items, combine) == tree_reduce(items, combine)


@pytest.mark.parametrize("weighted", [False, True])
def test_a_loaded_store_partition_is_the_vstack_of_its_blocks(tmp_path, weighted):
    """``StorePartition.load`` holds the rows, labels, norms and weights of
    ``scipy.sparse.vstack`` of the blocks it spans, with the stored index dtype and an int64 ``indptr``."""
    from daskdca.partitions import StorePartition, load_block_rows

    rng = np.random.default_rng(3)
    dense = rng.standard_normal((500, 40)) * (rng.random((500, 40)) < 0.1)
    dense[7] = 0.0  # an empty row
    X = sp.csr_matrix(dense)
    y = np.where(rng.standard_normal(500) > 0, 1.0, -1.0)
    weight = rng.uniform(0.5, 2.0, 500) if weighted else None
    store = daskdca.write_store(tmp_path / "s.zarr", X, y, block_rows=60, shuffle=False, sample_weight=weight)
    part = StorePartition(store, 2, store.n_blocks - 1, None)  # an inner run of blocks
    rows = part.load().rows
    blocks = [load_block_rows(store, k, None) for k in range(2, store.n_blocks - 1)]
    joined = sp.vstack([b.csr() for b in blocks], format="csr")
    assert rows.indptr.dtype == np.int64 and rows.indices.dtype == blocks[0].indices.dtype
    np.testing.assert_array_equal(rows.indptr, joined.indptr)
    np.testing.assert_array_equal(rows.indices, joined.indices)
    np.testing.assert_array_equal(rows.data, joined.data)
    lo, hi = int(store.block_row_offsets[2]), int(store.block_row_offsets[store.n_blocks - 1])
    np.testing.assert_array_equal(rows.y, y[lo:hi])
    np.testing.assert_array_equal(rows.csr().toarray(), X[lo:hi].toarray())
    np.testing.assert_array_equal(rows.sqnorm, np.concatenate([b.sqnorm for b in blocks]))
    if weighted:
        np.testing.assert_array_equal(rows.weight, weight[lo:hi])
    else:
        assert rows.weight.size == 0  # unweighted: every weight 1


@pytest.mark.parametrize("index_dtype, value_dtype",
                         [(np.int64, np.float64), (np.int32, np.float32), (np.int32, np.int32)])
def test_row_sqnorms_sum_in_numpys_reduceat_order(index_dtype, value_dtype):
    # rows of every length through 300 (NumPy's pairwise sum: sequential below 8, eight sums to 128, halves above)
    # and some long ones, with values over many scales so that any other order changes bits
    rng = np.random.default_rng(3)
    lengths = np.concatenate([np.arange(301), [0, 1000, 4099]])
    indptr = np.concatenate([[0], np.cumsum(lengths)]).astype(index_dtype)
    data = rng.standard_normal(indptr[-1]) * np.exp(rng.uniform(-15, 15, indptr[-1]))
    data = (data * 1e-3).astype(value_dtype) if value_dtype == np.int32 else data.astype(value_dtype)
    expected = np.zeros(lengths.size)
    rows = np.flatnonzero(lengths > 0)
    expected[rows] = np.add.reduceat(data.astype(np.float64) ** 2, indptr[rows])
    got = row_sqnorms(indptr, data)
    assert got.dtype == np.float64
    np.testing.assert_array_equal(got, expected)
    if value_dtype == np.int32:
        return  # integer squares sum exactly in any order
    # the order matters on these values: summed left to right (np.cumsum is sequential), many rows differ
    squares = data.astype(np.float64) ** 2
    left_to_right = np.array([np.cumsum(squares[a:b])[-1] if b > a else 0.0 for a, b in zip(indptr[:-1], indptr[1:])])
    assert (left_to_right != expected).sum() > 10
