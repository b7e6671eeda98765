"""Out of core, a round of plain SDCA / CoCoA+ (and Catalyst's, for the original problem) certifies its starting
state exactly, and the driver certifies the converged state without reading the data again
(``RoundReport.certified``).

The sweep adds ``X_b^T alpha_b`` of each block's starting duals as the block is read; with the gap sums at the
state's ``w`` these give ``P(w) - D(alpha)`` with ``w(alpha)`` rebuilt from the duals.  Checked here: the
returned ``(w, alpha, P, D)`` against ``P`` and ``D`` recomputed in NumPy from them, the reads of the data
(one per sweep, none for the certificate), and the plans that must not take the shortcut.
"""

import numpy as np
import pytest

from daskdca.driver import InProcess, in_process_partitions, run_rounds
from daskdca.losses import get_loss
from daskdca.methods import CoCoAPlus, SDCA
from daskdca.methods.base import DataInfo
from daskdca.partitions import MemoryPartition
from daskdca.problem import max_column_nnz

import reference_kernels as ref
from conftest import load_dataset
from references import primal_objective


class _CountedBlocks:
    """A partition read block by block (``whole()`` is None), as out of core, counting its passes."""

    def __init__(self, rows, starts):
        self.mp = MemoryPartition(rows, np.asarray(starts, dtype=np.int64))
        self.n_rows, self.block_starts = self.mp.n_rows, self.mp.block_starts
        self.passes = 0

    def whole(self):
        return None

    def pieces(self, order=None):
        self.passes += 1
        return self.mp.pieces(order)

    def labels(self):  # the labels alone (a store reads them without the rows): not a pass
        return self.mp.labels()


@pytest.fixture(scope="module")
def a9a():
    X, y = load_dataset("a9a")
    return X.tocsr()[:8000], np.where(y[:8000] > 0, 1.0, -1.0)


def _blocks(X, y, n_partitions, n_blocks):
    """The rows as ``n_partitions`` partitions (the drivers' seeded split) of ``n_blocks`` blocks each."""
    parts, order = in_process_partitions(X, y, n_partitions, 0)
    out = []
    for part in parts:
        starts = np.linspace(0, part.n_rows, n_blocks + 1).astype(np.int64)
        out.append(_CountedBlocks(part.rows, starts))
    return out, order


def _fit(X, y, loss, lam, method, n_partitions, n_blocks=6, tol=1e-6):
    parts, order = _blocks(X, y, n_partitions, n_blocks)
    info = DataInfo(n=X.shape[0], d=X.shape[1], partition_sizes=tuple(p.n_rows for p in parts), loss=get_loss(loss),
                    lam=lam, max_column_nnz=max_column_nnz(X))
    executor = InProcess(parts, info, 0, row_order=order)
    result = run_rounds(executor, executor.setup(method), tol=tol, max_rounds=200)
    return result, parts


def _recomputed(X, y, result, loss, lam):
    dual, _ = ref.dual_objective(X, y, result.alpha, lam, loss)
    return primal_objective(X, y, result.w, lam, loss), dual


@pytest.mark.parametrize("loss, method, n_partitions, lam, tol", [
    ("logistic", SDCA(), 1, 1e-4, 1e-6),
    ("squared_hinge", SDCA(), 1, 1e-4, 1e-6),  # shrinking: the sweep visits the movable rows only
    ("logistic", CoCoAPlus(acceleration=None), 2, 1e-3, 1e-4),  # the partitions' X_k^T alpha_k added in order
])
def test_the_round_certificate_is_the_recomputed_one_and_reads_nothing_more(a9a, loss, method, n_partitions, lam,
                                                                             tol):
    X, y = a9a
    result, parts = _fit(X, y, loss, lam, method, n_partitions, tol=tol)
    assert result.converged and result.plan.certifies_rounds
    primal, dual = _recomputed(X, y, result, loss, lam)
    assert result.primal == pytest.approx(primal, rel=1e-12)
    assert result.dual == pytest.approx(dual, rel=1e-12)
    assert result.gap == pytest.approx(primal - dual, rel=1e-6, abs=1e-14)
    assert 0.0 <= result.gap <= tol * result.primal
    # one pass a sweep: the rounds kept and the one that measured the last of them; no pass to certify
    for part in parts:
        assert part.passes == result.n_rounds + 1
    # the returned w is the state's own; w(alpha) rebuilt from the duals differs from it by rounding only
    _, w_alpha = ref.dual_objective(X, y, result.alpha, lam, loss)
    np.testing.assert_allclose(result.w, w_alpha, rtol=1e-9, atol=1e-12)


def test_a_fit_stopped_by_its_budget_is_certified_from_the_data(a9a):
    """Without a measured round to stand on (max_rounds reached), the certificate reads the data: two passes."""
    X, y = a9a
    result, parts = _fit(X, y, "logistic", 1e-6, SDCA(), 1, tol=1e-14)
    assert not result.converged and result.n_rounds == 200
    assert parts[0].passes == result.n_rounds + 2
    primal, dual = _recomputed(X, y, result, "logistic", 1e-6)
    assert result.primal == pytest.approx(primal, rel=1e-12) and result.dual == pytest.approx(dual, rel=1e-12)


def test_catalyst_certifies_the_original_problem_in_its_rounds(a9a):
    """Catalyst's rounds solve proximal problems, but the inner sweep's X^T alpha and gap sums at the iterate w
    give the original problem's P(w) - D(alpha) exactly: no pass to certify."""
    X, y = a9a
    result, parts = _fit(X, y, "logistic", 1e-4, CoCoAPlus(acceleration="catalyst"), 2)
    assert result.converged and type(result.plan).__name__ == "CatalystPlan" and result.plan.inner.certifies_rounds
    # one pass for kappa's sum of squared norms, one a sweep (the rounds and the one measuring the last)
    assert all(part.passes == 1 + result.n_rounds + 1 for part in parts)
    primal, dual = _recomputed(X, y, result, "logistic", 1e-4)
    assert result.primal == pytest.approx(primal, rel=1e-12) and result.dual == pytest.approx(dual, rel=1e-12)
    assert 0.0 <= result.gap <= 1e-6 * result.primal


def test_memory_partitions_keep_the_certificate_pass(a9a):
    """A partition in memory is cheap to read again: its rounds do not gather X^T alpha, and the driver certifies
    with the passes of :meth:`InProcess.certify` (x^T alpha, then the sums)."""
    X, y = a9a
    parts, _ = in_process_partitions(X, y, 1, 0)
    info = DataInfo(n=X.shape[0], d=X.shape[1], partition_sizes=(X.shape[0],), loss=get_loss("logistic"), lam=1e-4,
                    max_column_nnz=max_column_nnz(X))
    executor = InProcess(parts, info, 0)
    plan = executor.setup(SDCA())
    G, Ls = executor.init(plan)
    _, _, report = executor.run(plan, G, Ls, 0, 1)
    assert report.measured and not report.certified
