"""Synthetic data of any size, written block by block straight into a store.

Rows are generated one block at a time from the stream ``(seed, block)`` and
appended to the store, so memory is bounded by one block plus O(d) for the
feature popularity table and the true weight vector (26 MB each at the
URL-like d = 3.2 M), never by n.

The generator (all knobs explicit):

* nnz per row ~ 1 + Poisson(nnz_per_row - 1), at most d (``nnz_per_row >= 1``);
* feature popularity Zipf-like: feature of rank r is drawn with probability
  proportional to ``(r + 1) ** -zipf_exponent`` (0 gives uniform); ranks are
  assigned to feature ids by a seeded permutation, so popular features are
  scattered over the index range as in real data (and renumbering by
  frequency has something to do);
* values: 1.0 (``binary_values``) or ``|N(0, 1)|``, then each row scaled to norm
  ``exp(row_norm_spread * N(0, 1))`` (spread 0: every row has norm 1; the
  ``R / R_bar`` ratio of the seed papers grows with the spread);
* correlated rows: with probability ``correlation`` a row copies the
  features of one of ``n_prototypes`` prototype rows (then adds its own
  draws), which makes ``sigma^2`` large (the SDNA cases);
* labels: ``sign(x . w_true)`` flipped with probability ``label_noise``
  (classification) or ``x . w_true + noise * N(0, 1)`` (regression), with
  ``w_true ~ N(0, 1)`` from the seed.
"""

from __future__ import annotations

import numpy as np
import scipy.sparse as sp

from daskdca.store import DEFAULT_BLOCK_ROWS, INT32_LIMIT, _writing

__all__ = ["LABEL_NOISE", "TARGET_NOISE", "make_classification", "make_regression"]

#: :func:`make_classification`'s default share of flipped labels.
LABEL_NOISE = 0.05
#: :func:`make_regression`'s default standard deviation of the targets' noise.
TARGET_NOISE = 0.1


def _check_positive_int(name, value):
    if isinstance(value, bool) or not isinstance(value, (int, np.integer)) or value < 1:
        raise ValueError(f"{name} must be a positive int, got {value!r}.")
    return int(value)


def _check_fraction(name, value):
    if not (isinstance(value, (int, float)) and 0.0 <= value <= 1.0):
        raise ValueError(f"{name} must be in [0, 1], got {value!r}.")
    return float(value)


def _check_nnz_per_row(value):
    """``nnz_per_row`` as a float: a finite number >= 1, since every row draws ``1 + Poisson(nnz_per_row - 1)``
    features (a smaller value would give one a row, not its mean)."""
    if isinstance(value, bool) or not (isinstance(value, (int, float)) and np.isfinite(value) and value >= 1):
        raise ValueError(f"nnz_per_row must be a finite number >= 1 (every row draws 1 + Poisson(nnz_per_row - 1) "
                         f"features, at least one), got {value!r}; use e.g. nnz_per_row=1.")
    return float(value)


def _check_nonnegative(name, value):
    if not (isinstance(value, (int, float)) and np.isfinite(value) and value >= 0):
        raise ValueError(f"{name} must be a finite number >= 0, got {value!r}.")
    return float(value)


class _Generator:
    def __init__(self, n_features, nnz_per_row, zipf_exponent, row_norm_spread, correlation,
                 n_prototypes, binary_values, seed):
        self.d = n_features
        self.nnz_per_row = nnz_per_row
        self.row_norm_spread = row_norm_spread
        self.correlation = correlation
        self.binary_values = binary_values
        self.seed = seed
        rng = np.random.default_rng([seed, 0xDA7A])
        ranks = np.arange(1, n_features + 1, dtype=np.float64)
        weights = ranks ** -zipf_exponent
        self.cdf = np.cumsum(weights)
        self.cdf /= self.cdf[-1]
        self.feature_of_rank = rng.permutation(n_features).astype(np.int64)
        self.w_true = rng.standard_normal(n_features)
        self.prototypes = [np.unique(self._draw_features(rng, max(1, int(round(nnz_per_row)))))
                           for _ in range(n_prototypes)] \
            if correlation > 0 else []

    def _draw_features(self, rng, k):
        ranks = np.searchsorted(self.cdf, rng.random(k), side="right")
        return self.feature_of_rank[np.minimum(ranks, self.d - 1)]

    def block(self, block_index, n_rows):
        rng = np.random.default_rng([self.seed, block_index])
        counts = np.minimum(1 + rng.poisson(max(0.0, self.nnz_per_row - 1.0), n_rows), self.d)
        rows = np.repeat(np.arange(n_rows, dtype=np.int64), counts)
        cols = self._draw_features(rng, int(counts.sum()))
        if self.correlation > 0:
            copies = np.flatnonzero(rng.random(n_rows) < self.correlation)
            chosen = rng.integers(0, len(self.prototypes), copies.shape[0])
            extra_rows = [np.full(self.prototypes[c].shape[0], r, dtype=np.int64) for r, c in zip(copies, chosen)]
            extra_cols = [self.prototypes[c] for c in chosen]
            if extra_rows:
                rows = np.concatenate([rows] + extra_rows)
                cols = np.concatenate([cols] + extra_cols)
        # drops duplicate features within a row, sorts; np.unique's hash table took 70x a sort
        # on these keys (numpy 2.4: 9.8 s against 0.14 s for 4.8 M), the same result
        key = np.sort(rows * self.d + cols)
        key = key[np.concatenate(([True], key[1:] != key[:-1]))]
        rows, cols = key // self.d, key % self.d
        values = np.ones(key.shape[0]) if self.binary_values else np.abs(rng.standard_normal(key.shape[0]))
        X = sp.csr_matrix((values, (rows, cols)), shape=(n_rows, self.d))
        norms = np.sqrt(np.asarray(X.multiply(X).sum(axis=1)).ravel())
        target = np.exp(self.row_norm_spread * rng.standard_normal(n_rows))
        scale = np.where(norms > 0, target / np.where(norms > 0, norms, 1.0), 0.0)
        X = sp.csr_matrix(sp.diags(scale) @ X)
        return X, np.asarray(X @ self.w_true).ravel(), rng


def _make(url, task, n_rows, n_features, nnz_per_row, zipf_exponent, row_norm_spread, correlation,
          n_prototypes, label_noise, noise, binary_values, seed, block_rows, compression, float32,
          storage_options, progress, overwrite):
    n_rows = _check_positive_int("n_rows", n_rows)
    n_features = _check_positive_int("n_features", n_features)
    block_rows = _check_positive_int("block_rows", block_rows)
    n_prototypes = _check_positive_int("n_prototypes", n_prototypes)
    if isinstance(seed, bool) or not isinstance(seed, (int, np.integer)) or seed < 0:
        raise ValueError(f"seed must be a non-negative int, got {seed!r}.")
    gen = _Generator(n_features, _check_nnz_per_row(nnz_per_row),
                     _check_nonnegative("zipf_exponent", zipf_exponent),
                     _check_nonnegative("row_norm_spread", row_norm_spread),
                     _check_fraction("correlation", correlation), n_prototypes, bool(binary_values), int(seed))
    label_noise = _check_fraction("label_noise", label_noise)
    noise = _check_nonnegative("noise", noise)
    params = {"task": task, "n_rows": n_rows, "n_features": n_features, "nnz_per_row": nnz_per_row,
              "zipf_exponent": zipf_exponent, "row_norm_spread": row_norm_spread, "correlation": correlation,
              "n_prototypes": n_prototypes, "label_noise": label_noise, "noise": noise,
              "binary_values": bool(binary_values), "seed": int(seed)}
    bar = None
    if progress:
        from tqdm.auto import tqdm

        bar = tqdm(total=n_rows, desc="generating", unit="row", unit_scale=True)
    with _writing(url, storage_options, overwrite=overwrite, block_rows=block_rows, compression=compression,
                  float32=float32,
                  source=f"daskdca.datasets.make_{task}",
                  index_dtype=np.int64 if n_features > INT32_LIMIT else np.int32) as w:
        for k, start in enumerate(range(0, n_rows, block_rows)):
            rows = min(block_rows, n_rows - start)
            X, margin, rng = gen.block(k, rows)
            if task == "classification":
                y = np.where(margin > 0, 1.0, -1.0)
                flip = rng.random(rows) < label_noise
                y[flip] = -y[flip]
            else:
                y = margin + noise * rng.standard_normal(rows)
            w.append(X, y)
            if bar is not None:
                bar.update(rows)
        if bar is not None:
            bar.close()
        # rows drawn i.i.d. are in random order: no partition sees a different distribution
        return w.finish(n_features=n_features, extra_attrs={"generator": params, "shuffled": True})


def make_classification(url, n_rows, n_features, *, nnz_per_row=50.0, zipf_exponent=1.1, row_norm_spread=0.0,
                        correlation=0.0, n_prototypes=16, label_noise=LABEL_NOISE, binary_values=True, seed=0,
                        block_rows=DEFAULT_BLOCK_ROWS, compression="zstd", float32=False, storage_options=None,
                        progress=False, overwrite=False):
    """Write a binary classification store of ``n_rows x n_features`` block by block.

    Labels are in {-1, +1}: ``sign(x . w_true)``, flipped with probability
    ``label_noise``; see the module docstring for the generator.  The store
    is published only once complete.

    Parameters
    ----------
    url : str or os.PathLike
        Where to write the store (local path or fsspec URL; see
        :func:`daskdca.store.write_store` for what may be there).
    n_rows : int
        Rows, ``>= 1``.
    n_features : int
        Features ``d``, ``>= 1``.
    nnz_per_row : float, default=50.0
        Mean features drawn per row, ``>= 1``: ``1 + Poisson(nnz_per_row -
        1)``, at most ``d`` (a feature drawn twice in a row counts once).
    zipf_exponent : float, default=1.1
        The feature of popularity rank ``r`` is drawn with probability
        proportional to ``(r + 1) ** -zipf_exponent``; 0 gives uniform.
    row_norm_spread : float, default=0.0
        Each row is scaled to norm ``exp(row_norm_spread * N(0, 1))``; 0:
        every row has norm 1.
    correlation : float, default=0.0
        The probability, in [0, 1], that a row also copies the features of
        one of ``n_prototypes`` prototype rows.
    n_prototypes : int, default=16
        Prototype rows for ``correlation``.
    label_noise : float, default=0.05
        The probability, in [0, 1], that a row's label is flipped.
    binary_values : bool, default=True
        Values 1.0 before the row scaling, else ``|N(0, 1)|``.
    seed : int, default=0
        Seed of every random stream (``w_true``, the features, the values,
        the labels); the same arguments give the same store.
    block_rows : int, default=32768
        Rows per block (each generated from its own stream ``(seed, block)``).
    compression : {"zstd", "zstd:LEVEL", "none"}, default="zstd"
        The arrays' codec, as :func:`daskdca.store.write_store` takes it.
    float32 : bool, default=False
        Store values as float32.
    storage_options : dict or None, default=None
        The fsspec options of ``url``.
    progress : bool, default=False
        Show a progress bar of the rows written (tqdm).
    overwrite : bool, default=False
        Replace an existing daskdca store at ``url``.

    Returns
    -------
    CSRStore
        The handle of the complete store.

    See Also
    --------
    make_regression : The same rows with real targets.
    """
    return _make(url, "classification", n_rows, n_features, nnz_per_row, zipf_exponent, row_norm_spread,
                 correlation, n_prototypes, label_noise, 0.0, binary_values, seed, block_rows, compression,
                 float32, storage_options, progress, overwrite)


def make_regression(url, n_rows, n_features, *, nnz_per_row=50.0, zipf_exponent=1.1, row_norm_spread=0.0,
                    correlation=0.0, n_prototypes=16, noise=TARGET_NOISE, binary_values=True, seed=0,
                    block_rows=DEFAULT_BLOCK_ROWS, compression="zstd", float32=False, storage_options=None,
                    progress=False, overwrite=False):
    """Write a regression store: ``y = x.w_true + noise * N(0, 1)``.

    The rows are generated as :func:`make_classification`'s (module
    docstring), block by block; the store is published only once complete.

    Parameters
    ----------
    url : str or os.PathLike
        Where to write the store (local path or fsspec URL; see
        :func:`daskdca.store.write_store` for what may be there).
    n_rows : int
        Rows, ``>= 1``.
    n_features : int
        Features ``d``, ``>= 1``.
    nnz_per_row : float, default=50.0
        Mean features drawn per row, ``>= 1``: ``1 + Poisson(nnz_per_row -
        1)``, at most ``d`` (a feature drawn twice in a row counts once).
    zipf_exponent : float, default=1.1
        The feature of popularity rank ``r`` is drawn with probability
        proportional to ``(r + 1) ** -zipf_exponent``; 0 gives uniform.
    row_norm_spread : float, default=0.0
        Each row is scaled to norm ``exp(row_norm_spread * N(0, 1))``; 0:
        every row has norm 1.
    correlation : float, default=0.0
        The probability, in [0, 1], that a row also copies the features of
        one of ``n_prototypes`` prototype rows.
    n_prototypes : int, default=16
        Prototype rows for ``correlation``.
    noise : float, default=0.1
        The standard deviation of the targets' Gaussian noise, ``>= 0``.
    binary_values : bool, default=True
        Values 1.0 before the row scaling, else ``|N(0, 1)|``.
    seed : int, default=0
        Seed of every random stream (``w_true``, the features, the values,
        the labels); the same arguments give the same store.
    block_rows : int, default=32768
        Rows per block (each generated from its own stream ``(seed, block)``).
    compression : {"zstd", "zstd:LEVEL", "none"}, default="zstd"
        The arrays' codec, as :func:`daskdca.store.write_store` takes it.
    float32 : bool, default=False
        Store values as float32.
    storage_options : dict or None, default=None
        The fsspec options of ``url``.
    progress : bool, default=False
        Show a progress bar of the rows written (tqdm).
    overwrite : bool, default=False
        Replace an existing daskdca store at ``url``.

    Returns
    -------
    CSRStore
        The handle of the complete store.

    See Also
    --------
    make_classification : The same rows with labels in {-1, +1}.
    """
    return _make(url, "regression", n_rows, n_features, nnz_per_row, zipf_exponent, row_norm_spread,
                 correlation, n_prototypes, 0.0, noise, binary_values, seed, block_rows, compression,
                 float32, storage_options, progress, overwrite)
