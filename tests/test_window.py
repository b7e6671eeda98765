"""The out-of-core sliding window of blocks (``CoCoAPlus(window_blocks=W)``, daskdca.methods.dual.sweep_window).

The window's sweep is replayed by a readable NumPy construction of its visiting order from the same random
streams, run as one call of the SDCA kernel over all rows in memory: the bits must be the same.  Then the
settings' checks, and the passes a windowed sweep needs against one permutation of all rows.
"""

import warnings

import numpy as np
import pytest

from daskdca.driver import InProcess, in_process_partitions, run_rounds
from daskdca.kernels.sampling import permutation_order, sub_block_stream
from daskdca.kernels.sdca import local_sdca
from daskdca.losses import get_loss
from daskdca.methods import CoCoAPlus, SDCA
from daskdca.methods.base import DataInfo
from daskdca.methods.cocoa import WINDOW_BLOCKS
from daskdca.partitions import MemoryPartition
from daskdca.problem import max_column_nnz

from conftest import load_dataset

STARTS = [0, 40, 90, 150, 200, 270]  # five blocks of heart's 270 rows, of unequal sizes


@pytest.fixture(scope="module")
def heart():
    X, y = load_dataset("heart")
    return X.tocsr(), np.where(y > 0, 1.0, -1.0)


@pytest.fixture(scope="module")
def a9a():
    X, y = load_dataset("a9a")
    return X.tocsr(), np.where(y > 0, 1.0, -1.0)


class _Blocks:
    """A partition read block by block (``whole()`` is None), as out of core, from rows in memory."""

    def __init__(self, part, starts):
        self.mp = MemoryPartition(part.rows, np.asarray(starts, dtype=np.int64))
        self.n_rows, self.block_starts = self.mp.n_rows, self.mp.block_starts

    def whole(self):
        return None

    def pieces(self, order=None):
        return self.mp.pieces(order)


def reference_window_order(seed, round_index, starts, window):
    """The rows one windowed sweep of a one-partition store visits, in order (partition 0, every row once).

    Blocks in the partition's seeded order; block ``j``'s rows in the permutation of its own stream; each
    block's permutation cut into ``window`` near-equal chunks, chunk ``c`` of the block at position ``p``
    going to segment ``p + c``; each segment's rows (its chunks one after another) in the permutation of the
    segment's stream.
    """
    nb = len(starts) - 1
    blocks = permutation_order(seed, round_index, 0, nb, nb, 0)
    segments = [[] for _ in range(nb + window - 1)]
    for p, j in enumerate(blocks):
        lo, hi = starts[j], starts[j + 1]
        stream = (1 << 62) | (0 << 31) | int(j)  # the block's stream (daskdca.methods.dual._block_stream)
        rows = permutation_order(seed, round_index, stream, hi - lo, hi - lo, 0) + lo
        for c, chunk in enumerate(np.array_split(rows, window)):
            segments[p + c].append(chunk)
    order = []
    for s, chunks in enumerate(segments):
        rows = np.concatenate(chunks)
        stream = sub_block_stream(0, (1 << 40) + s)
        order.append(rows[permutation_order(seed, round_index, stream, rows.size, rows.size, 0)])
    return np.concatenate(order)


def _one_partition(X, y, loss, lam):
    parts, _ = in_process_partitions(X, y, 1, 0)
    info = DataInfo(n=X.shape[0], d=X.shape[1], partition_sizes=(X.shape[0],), loss=get_loss(loss), lam=lam,
                    max_column_nnz=max_column_nnz(X))
    return parts[0], info


@pytest.mark.parametrize("window", [2, 3, WINDOW_BLOCKS])
@pytest.mark.parametrize("loss", ["logistic", "squared_hinge"])
def test_windowed_sweep_is_the_kernel_on_the_reference_order(heart, loss, window):
    X, y = heart
    lam = 1e-3
    part, info = _one_partition(X, y, loss, lam)
    executor = InProcess([_Blocks(part, STARTS)], info, 7)
    plan = executor.setup(CoCoAPlus(window_blocks=window, shrinking=False, acceleration=None))
    G, Ls = executor.init(plan)
    rows = part.rows
    alpha, w, unused = np.zeros(X.shape[0]), np.zeros(X.shape[1]), np.zeros(0)
    lossobj = get_loss(loss)
    for r in range(3):
        G, Ls, _ = executor.run(plan, G, Ls, r, 1)
        order = reference_window_order(7, r, STARTS, window)
        assert np.array_equal(np.sort(order), np.arange(X.shape[0]))  # every row once a pass
        local_sdca(rows.indptr, rows.indices, rows.data, rows.y, rows.weight, rows.sqnorm, alpha, w, unused, order,
                   int(lossobj.kind), lossobj.param, lam * X.shape[0], 1.0, False)
        np.testing.assert_array_equal(Ls[0].alpha, alpha)
        np.testing.assert_array_equal(G.w, w)


def test_one_block_and_window_one_keep_the_block_sweep(heart):
    """``window_blocks=1`` is the block-after-block sweep; a one-block partition is swept whole whatever W."""
    X, y = heart
    part, info = _one_partition(X, y, "logistic", 1e-3)

    def after_two_rounds(method, starts):
        executor = InProcess([_Blocks(part, starts)], info, 3)
        plan = executor.setup(method)
        G, Ls = executor.init(plan)
        for r in range(2):
            G, Ls, _ = executor.run(plan, G, Ls, r, 1)
        return G.w

    plain = CoCoAPlus(acceleration=None, window_blocks=1)
    windowed = CoCoAPlus(acceleration=None, window_blocks=4)
    assert not np.array_equal(after_two_rounds(plain, STARTS), after_two_rounds(windowed, STARTS))
    np.testing.assert_array_equal(after_two_rounds(plain, [0, 270]), after_two_rounds(windowed, [0, 270]))
    in_memory = InProcess([part], info, 3)
    plan = in_memory.setup(windowed)
    G, Ls = in_memory.init(plan)
    for r in range(2):
        G, Ls, _ = in_memory.run(plan, G, Ls, r, 1)
    np.testing.assert_array_equal(G.w, after_two_rounds(windowed, [0, 270]))


def test_window_blocks_default_and_checks():
    assert CoCoAPlus().resolved_window_blocks == WINDOW_BLOCKS
    assert SDCA().resolved_window_blocks == WINDOW_BLOCKS
    assert CoCoAPlus(threads=2).resolved_window_blocks == 1
    assert CoCoAPlus(local_solver="sdna").resolved_window_blocks == 1
    assert CoCoAPlus(l1_ratio=0.5).resolved_window_blocks == 1
    assert CoCoAPlus(window_blocks=3).resolved_window_blocks == 3
    for bad in (0, -1, 2.5, True, "8"):
        with pytest.raises(ValueError, match="window_blocks must be a positive int or None"):
            CoCoAPlus(window_blocks=bad)
    for kwargs in ({"threads": 2}, {"local_solver": "sdna"}, {"l1_ratio": 0.5}):
        with pytest.raises(ValueError, match="window_blocks=4 interleaves"):
            CoCoAPlus(window_blocks=4, **kwargs)
        assert CoCoAPlus(window_blocks=1, **kwargs).resolved_window_blocks == 1


@pytest.mark.filterwarnings("ignore:daskdca.fit reached max_rounds")
def test_window_needs_about_the_passes_of_the_whole_sweep(a9a):
    """a9a (32,561 rows) in 16 blocks, logistic at lam n = 0.33, to a certified 1e-4: the whole sweep's
    passes, give or take 50%, where block after block needs many more (a property of this data, measured
    in benchmarks/RESULTS.md; asserted here as passes, never as seconds)."""
    X, y = a9a
    lam = 1e-5
    part, info = _one_partition(X, y, "logistic", lam)
    starts = np.linspace(0, X.shape[0], 17).astype(np.int64)

    def rounds(parts, method):
        executor = InProcess(parts, info, 0)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            result = run_rounds(executor, executor.setup(method), tol=1e-4, max_rounds=200)
        return result.n_rounds if result.converged else np.inf

    whole = rounds([part], SDCA())
    windowed = rounds([_Blocks(part, starts)], SDCA())
    blocks = rounds([_Blocks(part, starts)], SDCA(window_blocks=1))
    assert windowed <= 1.5 * whole + 1
    assert blocks > windowed


def test_the_window_fits_the_smallest_workers_memory():
    """routes.window_for_memory: half the smallest limit over twice a block's bytes, less the block read ahead;
    at least 1, at most the default; the default where a worker has no limit."""
    from daskdca.routes import WINDOW_BLOCK_COPIES, WINDOW_MEMORY_SHARE, Workers, window_for_memory

    mib = 2**20
    block = 50 * mib
    workers = Workers(nthreads=(1, 1), memory_limits=(700 * mib, 12 * 1024 * mib))
    expected = int(WINDOW_MEMORY_SHARE * 700 * mib // (WINDOW_BLOCK_COPIES * block)) - 1
    assert window_for_memory(block, workers) == expected == 2
    assert window_for_memory(block, Workers((1,), (12 * 1024 * mib,))) == WINDOW_BLOCKS
    assert window_for_memory(block, Workers((1,), (150 * mib,))) == 1  # never below one block
    assert window_for_memory(block, Workers((1, 1), (0, 700 * mib))) == WINDOW_BLOCKS  # a worker without a limit
    assert window_for_memory(block, Workers((), ())) == WINDOW_BLOCKS


def test_a_bounded_window_keeps_what_the_user_gave():
    from daskdca.methods import MinibatchSDCA, with_window_at_most
    from daskdca.methods.multiclass import OneVsRestMethod

    assert with_window_at_most(CoCoAPlus(), 2) == CoCoAPlus(window_blocks=2)
    assert with_window_at_most(SDCA(), 3) == SDCA(window_blocks=3)
    user = CoCoAPlus(window_blocks=8)
    assert with_window_at_most(user, 2) is user
    small = CoCoAPlus()
    assert with_window_at_most(small, WINDOW_BLOCKS) is small  # the default fits: unchanged
    threaded = CoCoAPlus(threads=2)  # its window is 1 block already
    assert with_window_at_most(threaded, 1) is threaded
    assert with_window_at_most(MinibatchSDCA(), 1) == MinibatchSDCA()
    ovr = with_window_at_most(OneVsRestMethod(SDCA(), 3, tol=1e-4), 2)
    assert ovr.method == SDCA(window_blocks=2) and ovr.n_classes == 3 and ovr.tol == 1e-4


def test_a_cluster_fit_out_of_core_bounds_its_window_and_a_resume_keeps_it(tmp_path, monkeypatch):
    """The window the workers' memory allows is fixed at the start (the plan's settings say it); a fit resumed
    after the driver died keeps the window its checkpoint recorded, whatever the workers allow now, and ends
    with the undisturbed bits."""
    distributed = pytest.importorskip("distributed")
    import daskdca
    import daskdca.engine as engine
    from conftest import DriverDied, driver_dies_at
    from daskdca.store import write_store

    X, y = load_dataset("a9a")
    X, y = X[:6000], y[:6000]
    store = write_store(tmp_path / "a.zarr", X, y, block_rows=500, seed=1)  # 12 blocks, 6 a partition
    bounded = []

    def allow(blocks):
        def window_for_memory(block_bytes, workers):
            bounded.append(blocks)
            return blocks
        return window_for_memory

    kwargs = dict(loss="logistic", lam=1e-4, solver="cocoa+", n_partitions=2, in_memory=False, tol=0.0,
                  max_rounds=8, random_state=3, checkpoint_every=2)
    with distributed.LocalCluster(n_workers=2, threads_per_worker=1, processes=True, dashboard_address=None,
                                  silence_logs=40) as cluster, distributed.Client(cluster) as client, \
            warnings.catch_warnings():
        warnings.simplefilter("ignore")
        monkeypatch.setattr(engine, "window_for_memory", allow(3))
        undisturbed = daskdca.fit(store, client=client, checkpoint=tmp_path / "a", **kwargs)
        assert undisturbed.plan_.settings.window_blocks == 3 and bounded == [3]
        with pytest.raises(DriverDied):
            daskdca.fit(store, client=client, checkpoint=tmp_path / "b", callback=driver_dies_at(5), **kwargs)
        monkeypatch.setattr(engine, "window_for_memory", allow(5))
        resumed = daskdca.fit(store, client=client, checkpoint=tmp_path / "b", resume=True, **kwargs)
        assert bounded == [3, 3]  # the resume read its window from the checkpoint
        other = daskdca.fit(store, client=client, **kwargs)
    assert resumed.plan_.settings.window_blocks == 3
    np.testing.assert_array_equal(resumed.coef_, undisturbed.coef_)
    np.testing.assert_array_equal(resumed.dual_coef_, undisturbed.dual_coef_)
    # a fresh fit on workers that allow more blocks holds more, with other bits
    assert other.plan_.settings.window_blocks == 5 and not np.array_equal(other.coef_, undisturbed.coef_)


def test_partitions_are_held_in_memory_within_a_quarter_of_each_worker():
    """routes.held_in_memory: each worker's share of the data at most a quarter of the smallest limit (loading a
    partition holds about twice it); workers without a limit hold anything, and do not lift the limits of the
    others; no workers known holds nothing."""
    from daskdca.routes import Workers, held_in_memory

    gib = 2**30
    two = Workers((1, 1), (4 * gib, 4 * gib))
    assert held_in_memory(2 * gib, two) and not held_in_memory(2 * gib + 1, two)
    assert not held_in_memory(3 * gib // 2, Workers((1, 1), (gib, 8 * gib)))  # the smallest worker bounds it
    assert held_in_memory(100 * gib, Workers((1, 1), (0, 0)))
    assert not held_in_memory(100 * gib, Workers((1, 1), (0, 4 * gib)))  # the limited worker's share: 50 GiB
    assert held_in_memory(2 * gib, Workers((1, 1), (0, 4 * gib)))
    assert not held_in_memory(1, Workers((), ()))
