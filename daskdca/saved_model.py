"""A fitted linear model saved as data: one ``.npz`` file, never a pickle.

The model is the solution of

    ``min_(w, b) 1/n sum_i phi(y_i (x_i.w + b)) + lam g(w, b/s)``,
    ``g(v) = (1 - rho)/2 ||v||^2 + rho ||v||_1``

(``rho = l1_ratio``: 0 is the L2 penalty ``lam/2 ||v||^2``, 1 the L1 penalty
``lam ||v||_1``, between them the elastic net; without an intercept ``b = 0``
and ``v = w``), as fitted by ``daskdca fit ... [--l1-ratio RHO] --save MODEL``.
With an intercept it is LIBLINEAR's: a virtual constant feature of value
``s = intercept_scaling`` whose weight ``w_b = b/s`` is penalised like the
others, and ``b = s * w_b``.

The file holds only numeric and text arrays, written by :func:`numpy.savez`,
so ``np.load(path, allow_pickle=False)`` reads it: like daskdca's stores and
checkpoints it is data, never code (README, "Security").  Its arrays:

============== ============================ =====================================================
name           dtype, shape                 meaning
============== ============================ =====================================================
format         str, ()                      ``"daskdca-linear-model"``
format_version int64, ()                    :data:`FORMAT_VERSION`
coef           float64, (n_features,)       ``w``
intercept      float64, ()                  ``b`` (0.0 without an intercept)
fit_intercept  bool, ()                     whether ``b`` was fitted
intercept_scaling float64, ()               ``s`` (1.0 and unused without an intercept)
classes        numeric, (2,) or (0,)        the two labels; ``classes[1]`` is the positive one
                                            (+1 in the loss); empty for regression
loss           str, ()                      the loss name (``daskdca.losses.LOSSES``)
loss_params    str, ()                      the loss's parameters as a JSON object, e.g.
                                            ``{"gamma": 1.0}`` for the smoothed hinge
lam            float64, ()                  ``lam`` (LIBLINEAR's ``C = 1/(lam n)``)
l1_ratio       float64, ()                  ``rho`` in [0, 1], the L1 share of the penalty (0.0: pure
                                            L2); version 3 on, read as 0.0 from versions 1 and 2
n_samples      int64, ()                    ``n``, the training rows
n_features     int64, ()                    columns of the training data (``coef``'s length)
primal, dual,  float64, ()                  the certificate: ``P``, ``D`` and ``P - D`` of the
gap                                         augmented problem with the penalty of ``l1_ratio``, as
                                            :func:`daskdca.fit` returned it
converged      bool, ()                     ``gap <= tol |primal|``
rounds         int64, ()                    rounds behind the model
epochs         float64, ()                  coordinate steps / n
tol            float64, ()                  the relative gap asked for
solver         str, ()                      the method's name
random_state   int64, ()                    the seed of every random stream
feature_index_ int64, ()                    where the training file's feature indices start: 1
base                                        (LIBSVM's), 0 (a zero-based file), -1 (not a file, or
                                            unknown); version 4 on, read as -1 from versions 1-3
============== ============================ =====================================================

Integrity (version >= 2): the zip archive's comment, the last 32 bytes of
the file, is ``daskdca-xxh3-64:`` and the XXH3-64 (16 hex digits) of every
byte before those 16 digits, so a changed byte anywhere in the file is refused
(:func:`load_model` checks it before it parses anything).  Every field is
then checked on its own and against the others (:func:`check_model`): types
and shapes, finite numbers, ``l1_ratio`` in [0, 1], a known loss with its
parameters, two distinct labels for a classification loss and none for
regression, no intercept without ``fit_intercept``, ``gap = primal - dual >=
0``, ``primal`` at least the penalty ``lam g(w, b/s)`` of the saved weights
(the mean loss is >= 0; :func:`daskdca.problem.objectives` computes the
penalty, as it does for the fit's certificate), ``converged`` agreeing
with ``gap <= tol |primal|``, a known solver, ``l1_sdca`` (the pure L1
method, which ``solver="auto"`` runs for ``l1_ratio = 1``) only with
``l1_ratio = 1`` and ``l1_ratio > 0`` only with a solver that has an
``l1_ratio``.  These checks need no data: they bind ``l1_ratio`` to the
certificate only through that penalty bound and the solver, and the checksum
is what refuses any other change of it.

Versions: 1, the first format (no checksum; still read, with every field
checked, but not covered by a checksum: save such files again to cover them);
2, the same fields and the checksum trailer; 3 (:data:`FORMAT_VERSION`), the
field ``l1_ratio``, so that the certificate of an L1 or elastic-net fit is
checked against its own penalty.  Files of versions 1 and 2 are read with
``l1_ratio = 0.0`` (their certificates are of the L2 problem); each version
has exactly its own fields, so a version-2 file with ``l1_ratio`` or a
version-3 file without it is refused; 4, the field ``feature_index_base``, so
that ``daskdca predict`` reads a file's indices as the training file's were
read (a zero-based model on a test file without a feature 0 would have read
it one-based, every feature one column off).  Files of versions 1 to 3 are
read with ``feature_index_base = -1``: a file's indices are then detected
from the file, as before.
"""

from __future__ import annotations

import contextlib
import dataclasses
import io
import json
import math
import os
import tempfile
import zipfile
from typing import NamedTuple

import numpy as np
import xxhash

from daskdca.prediction import decision_scores, labels, probabilities

__all__ = ["FORMAT", "FORMAT_VERSION", "SavedModel", "save_model", "load_model", "check_model", "atomic_output"]

#: The ``format`` field of every saved model file.
FORMAT = "daskdca-linear-model"
#: The version :func:`save_model` writes.
#: 1: the first format (coef, intercept, classes, loss, lam and the certificate).
#: 2: the same fields; the file ends with the checksum trailer (_TRAILER), required.
#: 3: version 2 plus ``l1_ratio``, the L1 share of the penalty.  Versions 1 and 2 are still read (as ``l1_ratio = 0``).
#: 4: version 3 plus ``feature_index_base``, where the training file's feature indices start (-1 from 1 to 3).
FORMAT_VERSION = 4
READ_VERSIONS = (1, 2, 3, 4)
# The zip comment that ends a file of version >= 2: this prefix, then the XXH3-64 of every byte before the
# digest, as 16 hex digits (the zip format allows a comment of up to 65,535 bytes at the end of the
# archive: PKWARE APPNOTE.TXT 4.3.16; numpy's npz reader ignores it).
_TRAILER = b"daskdca-xxh3-64:"
_DIGITS = 16
# Slack of the certificate's checks: the saved P, D and gap are float64 copies of what the fit computed
# (gap = P - D exactly, converged = gap <= tol |P|); this only absorbs rounding of hand-made models.
_SLACK = 1e-9

_FLOATS_V1 = ("intercept", "intercept_scaling", "lam", "primal", "dual", "gap", "epochs", "tol")
_FLOATS = _FLOATS_V1 + ("l1_ratio",)
_INTS = ("n_samples", "n_features", "rounds", "random_state")
_BOOLS = ("fit_intercept", "converged")
_TEXTS = ("loss", "loss_params", "solver")
# The fields each format version added: a file of version v has exactly those of the versions <= v.
_ADDED_FIELDS = {1: ("format", "format_version", "coef", "classes") + _FLOATS_V1 + _INTS + _BOOLS + _TEXTS,
                 2: (),
                 3: ("l1_ratio",),
                 4: ("feature_index_base",)}
# The value of a field a file's version does not have: the L2 penalty of versions 1 and 2, and an unknown
# index base (detected from each file) before version 4.
_ABSENT = {"l1_ratio": 0.0, "feature_index_base": -1}
# feature_index_base: LIBSVM's one-based indices, a zero-based file's, or unknown (not fitted on a file).
INDEX_BASES = (1, 0, -1)


def _version_fields(version):
    """The fields of a file of format ``version`` (one of READ_VERSIONS)."""
    return tuple(name for added, names in sorted(_ADDED_FIELDS.items()) if added <= version for name in names)


@dataclasses.dataclass(frozen=True)
class SavedModel:
    """A fitted binary classifier or regressor, with its duality-gap certificate.

    Scores are ``X @ coef + intercept``; a classifier predicts ``classes[1]``
    where the score is > 0 and ``classes[0]`` elsewhere, as
    :meth:`daskdca.LinearModel.predict` and :class:`daskdca.SDCAClassifier` do.
    A frozen dataclass: each parameter is also the attribute of that name;
    :meth:`from_fit` and :func:`load_model` build it.

    Parameters
    ----------
    coef : ndarray of float64, shape (n_features,)
        The weights ``w`` of the data's features (without the intercept's).
    intercept : float
        ``b = intercept_scaling * w_b`` with an intercept, else 0.0.
    fit_intercept : bool
        Whether the model has LIBLINEAR's regularised intercept.
    intercept_scaling : float
        The value ``s`` of the virtual constant feature (1.0 when unused).
    classes : ndarray of shape (2,) or None
        The labels as numbers; ``classes[1]`` is +1 in the loss.  None for
        the squared loss (regression).
    loss : str
        The loss name.
    loss_params : dict
        The loss's parameters (``{"gamma": ...}`` for the smoothed hinge).
    lam : float
        Regularisation of the fitted problem.
    n_samples, n_features : int
        Rows and columns of the training data.
    primal, dual, gap : float
        The certificate: ``P(w)``, ``D(alpha)`` and ``P - D >= P(w) - min P``,
        of the problem with the penalty of ``l1_ratio``.
    converged : bool
        Whether ``gap <= tol * |primal|``.
    rounds : int
        Rounds behind the model.
    epochs : float
        Coordinate steps behind the model divided by ``n_samples``.
    tol : float
        The relative gap asked for.
    solver : str
        The method's name.
    random_state : int
        The seed of every random stream of the fit.
    l1_ratio : float, default=0.0
        ``rho`` in [0, 1], the L1 share of the penalty
        ``lam ((1 - rho)/2 ||w||^2 + rho ||w||_1)`` (``daskdca.fit``'s
        ``l1_ratio``): 0.0 is the L2 penalty, 1.0 the L1 penalty.
    feature_index_base : int, default=-1
        Where the feature indices of the svmlight file the model was fitted
        on start: 1 (LIBSVM's format), 0 (a zero-based file) or -1 (fitted
        on other data, or saved before format version 4).  ``daskdca
        predict`` reads a file's indices with the same base.
    """

    coef: np.ndarray
    intercept: float
    fit_intercept: bool
    intercept_scaling: float
    classes: np.ndarray | None
    loss: str
    loss_params: dict
    lam: float
    n_samples: int
    n_features: int
    primal: float
    dual: float
    gap: float
    converged: bool
    rounds: int
    epochs: float
    tol: float
    solver: str
    random_state: int
    l1_ratio: float = 0.0
    feature_index_base: int = -1

    @classmethod
    def from_fit(cls, model, *, n_samples, tol, intercept_scaling=None, feature_index_base=-1):
        """The saved form of a :class:`daskdca.LinearModel`.

        Parameters
        ----------
        model : daskdca.LinearModel
            A model returned by :func:`daskdca.fit`.
        n_samples : int
            Rows of the training data (``lam = 1/(C n_samples)``).
        tol : float
            The ``tol`` the fit was given.
        intercept_scaling : float or None, default=None
            None when the model has no intercept.  Otherwise the model was
            fitted on the data with a last column of constant value
            ``intercept_scaling``: its last weight ``w_b`` becomes the
            intercept ``intercept_scaling * w_b`` and is dropped from ``coef``.
        feature_index_base : {1, 0, -1}, default=-1
            Where the training file's feature indices started (-1: not fitted
            on a file).

        Returns
        -------
        SavedModel
            The saved form, ready for :func:`save_model`.  Its ``l1_ratio``
            is that of ``model.plan_`` (0.0 where the plan has none), the L1
            share the fit's certificate was computed with.

        Raises
        ------
        ValueError
            The labels are not numbers (they could not be saved without
            pickle), or ``intercept_scaling`` is not a finite number > 0.
        """
        coef = np.array(model.coef_, dtype=np.float64).ravel()
        # the L1 share the certificate was computed with: the plan's, as the drivers read it (an L1SDCA
        # solver has l1_ratio 0 as a setting and a plan of l1_ratio 1)
        l1_ratio = float(getattr(model.plan_, "l1_ratio", 0.0))
        if intercept_scaling is None:
            intercept, fit_intercept, scaling = 0.0, False, 1.0
        else:
            scaling = float(intercept_scaling)
            if not (math.isfinite(scaling) and scaling > 0):
                raise ValueError(f"intercept_scaling must be a finite number > 0, got {intercept_scaling!r}.")
            coef, intercept, fit_intercept = coef[:-1].copy(), float(scaling * coef[-1]), True
        loss = model.loss
        params = dataclasses.asdict(loss) if dataclasses.is_dataclass(loss) else {}
        return cls(
            coef=coef, intercept=intercept, fit_intercept=fit_intercept, intercept_scaling=scaling,
            classes=_check_classes(model.classes_), loss=str(loss.name),
            loss_params={k: float(v) for k, v in params.items()}, lam=float(model.lam),
            n_samples=int(n_samples), n_features=int(coef.shape[0]), primal=float(model.primal_),
            dual=float(model.dual_), gap=float(model.gap_), converged=bool(model.converged_),
            rounds=int(model.n_rounds_), epochs=float(model.n_epochs_), tol=float(tol),
            solver=str(model.solver.name), random_state=int(model.random_state_), l1_ratio=l1_ratio,
            feature_index_base=int(feature_index_base),
        )

    def decision_function(self, X):
        """Compute the scores ``X @ coef + intercept`` of the rows of X.

        Parameters
        ----------
        X : ndarray or scipy sparse matrix of shape (n_rows, d)
            ``d <= n_features``: missing trailing columns are zero (as an
            svmlight file whose largest index is smaller than the model's).

        Returns
        -------
        ndarray of float64, shape (n_rows,)
            The scores.

        Raises
        ------
        ValueError
            X has more columns than the model has features.
        """
        d = X.shape[1]
        self.check_n_features(d)
        return decision_scores(X, self.coef[np.newaxis, :d], self.intercept)

    def check_n_features(self, d, where="the data"):
        """Raise ValueError when ``d`` columns exceed the model's ``n_features``.

        Parameters
        ----------
        d : int
            The columns of the data.
        where : str, default="the data"
            What the data is, for the message.

        Raises
        ------
        ValueError
            When ``d > n_features``.
        """
        if d > self.n_features:
            raise ValueError(f"{where} has {d} features but the model was fitted with {self.n_features}; "
                             "predict on data with the training data's features (an svmlight file with "
                             "fewer features is padded with zeros, one with more cannot be scored).")

    def predict(self, X):
        """Predict labels (``classes[1]`` where the score is > 0), or the targets for regression.

        Parameters
        ----------
        X : ndarray or scipy sparse matrix of shape (n_rows, d)
            As :meth:`decision_function` takes it.

        Returns
        -------
        ndarray of shape (n_rows,)
            The labels, or the predicted targets.
        """
        return self.labels_of(self.decision_function(X))

    def labels_of(self, scores):
        """The labels of given scores (the scores themselves for regression).

        Parameters
        ----------
        scores : array-like
            Scores, as :meth:`decision_function` returns them.

        Returns
        -------
        ndarray
            ``classes[1]`` where the score is > 0 and ``classes[0]``
            elsewhere; the scores for regression.
        """
        if self.classes is None:
            return scores
        return labels(np.asarray(scores), self.classes)

    def proba_of(self, scores):
        """``P(classes[1]) = 1 / (1 + exp(-score))`` (logistic loss only).

        As every daskdca model computes it
        (:func:`daskdca.prediction.probabilities`).

        Parameters
        ----------
        scores : array-like
            Scores, as :meth:`decision_function` returns them.

        Returns
        -------
        ndarray of float64
            ``P(classes[1])`` of each score, in the shape of ``scores``.

        Raises
        ------
        ValueError
            For a model not fitted with the logistic loss.
        """
        if self.loss != "logistic":
            raise ValueError(f"probabilities need a model fitted with the logistic loss; this one has "
                             f"loss {self.loss!r}, whose score is not a log-odds. Predict labels or scores.")
        scores = np.asarray(scores, dtype=np.float64)
        return probabilities(scores.ravel())[:, 1].reshape(scores.shape)

    def predict_proba(self, X):
        """``P(classes[1] | x) = 1 / (1 + exp(-score))`` per row (logistic loss only).

        Parameters
        ----------
        X : ndarray or scipy sparse matrix of shape (n_rows, d)
            As :meth:`decision_function` takes it.

        Returns
        -------
        ndarray of float64, shape (n_rows,)
            ``P(classes[1])`` of each row.

        Raises
        ------
        ValueError
            For a model not fitted with the logistic loss.
        """
        return self.proba_of(self.decision_function(X))


def _check_classes(classes):
    """The labels as a numeric array of shape (2,), or None (regression)."""
    if classes is None:
        return None
    values = np.asarray(classes)
    if values.dtype.kind not in "biuf":
        raise ValueError(f"the labels {values.tolist()[:2]!r} (dtype {values.dtype}) are not numbers; a saved "
                         "model holds numeric labels only (anything else would need pickle). Encode the labels "
                         "as numbers, e.g. -1 and +1, and fit again.")
    if values.shape != (2,):
        raise ValueError(f"a saved model holds two labels (binary), got {values.shape[0]}.")
    return values.copy()


def _arrays(model):
    classes = model.classes if model.classes is not None else np.zeros(0, dtype=np.float64)
    arrays = {"format": np.array(FORMAT), "format_version": np.array(FORMAT_VERSION, dtype=np.int64),
              "coef": np.asarray(model.coef, dtype=np.float64), "classes": np.asarray(classes),
              "loss_params": np.array(json.dumps(model.loss_params, sort_keys=True))}
    for name in _FLOATS:
        arrays[name] = np.array(getattr(model, name), dtype=np.float64)
    for name in _INTS + ("feature_index_base",):
        arrays[name] = np.array(getattr(model, name), dtype=np.int64)
    for name in _BOOLS:
        arrays[name] = np.array(getattr(model, name), dtype=np.bool_)
    for name in ("loss", "solver"):
        arrays[name] = np.array(str(getattr(model, name)))
    return arrays


@contextlib.contextmanager
def atomic_output(path, *, overwrite=False, mode="wb"):
    """Write a file all at once: a temporary file in the same folder, renamed onto ``path`` when complete.

    Readers see either no file (or the old one) or the whole new one, never
    a partial write; an error inside the block leaves ``path`` untouched and
    removes the temporary file.

    Parameters
    ----------
    path : str or os.PathLike
        The file to write.
    overwrite : bool, default=False
        Replace an existing file.  Without it an existing ``path`` raises
        FileExistsError, checked before the block runs and again, atomically
        (a hard link, which never replaces), when the file is published.
    mode : {"wb", "w"}, default="wb"
        Binary or text (UTF-8) file object to yield.

    Yields
    ------
    file object
        The temporary file, open for writing.

    Raises
    ------
    FileExistsError
        ``path`` exists and ``overwrite`` is False.
    IsADirectoryError
        ``path`` is a folder.
    FileNotFoundError
        The folder of ``path`` does not exist.
    """
    if mode not in ("wb", "w"):
        raise ValueError(f"mode must be 'wb' or 'w', got {mode!r}.")
    path = os.fspath(path)
    check_output_path(path, overwrite=overwrite)
    folder = os.path.dirname(os.path.abspath(path))
    fd, tmp = tempfile.mkstemp(dir=folder, prefix=f".{os.path.basename(path)}.", suffix=".tmp")
    try:
        with os.fdopen(fd, mode, **({} if "b" in mode else {"encoding": "utf-8", "newline": "\n"})) as handle:
            os.fchmod(handle.fileno(), 0o666 & ~_umask())  # mkstemp's 0600 would make the output private
            yield handle
            handle.flush()
            os.fsync(handle.fileno())
        if overwrite:
            os.replace(tmp, path)
        else:
            _publish_no_replace(tmp, path)
        with contextlib.suppress(OSError):  # make the rename durable where the platform allows
            dir_fd = os.open(folder, os.O_RDONLY)
            try:
                os.fsync(dir_fd)
            finally:
                os.close(dir_fd)
    finally:
        with contextlib.suppress(FileNotFoundError):
            os.unlink(tmp)


def _umask():
    mask = os.umask(0o022)
    os.umask(mask)
    return mask


def _exists_message(path):
    return f"{path!r} exists; pass overwrite=True (CLI: --overwrite) to replace it, or pick another path."


def _publish_no_replace(tmp, path):
    """Move ``tmp`` to ``path`` unless ``path`` exists, atomically where hard links work."""
    try:
        os.link(tmp, path)  # fails with FileExistsError instead of replacing
    except FileExistsError:
        raise FileExistsError(_exists_message(path)) from None
    except OSError:  # no hard links on this file system: check, then rename
        if os.path.lexists(path):
            raise FileExistsError(_exists_message(path)) from None
        os.replace(tmp, path)


def check_output_path(path, *, overwrite=False, inputs=()):
    """Raise the error :func:`atomic_output` would raise for ``path``, before any work is done.

    Parameters
    ----------
    path : str or os.PathLike
        The file to be written.
    overwrite : bool, default=False
        Whether an existing file may be replaced.
    inputs : sequence of str or os.PathLike, default=()
        The files or folders (a store) the same command reads: the output may
        be none of them, nor lie inside one.

    Raises
    ------
    FileExistsError, IsADirectoryError, FileNotFoundError
        As :func:`atomic_output`.
    ValueError
        When the output is, or lies inside, one of ``inputs``.
    """
    path = os.fspath(path)
    for source in inputs:
        source = os.fspath(source)
        if not os.path.exists(source):
            continue
        same = os.path.exists(path) and os.path.samefile(path, source)
        inside = os.path.realpath(path).startswith(os.path.realpath(source).rstrip(os.sep) + os.sep)
        if same or inside:
            raise ValueError(f"the output {path!r} {'is' if same else 'lies inside'} the input {source!r}; "
                             "writing it would destroy what this command reads. Give another output path.")
    if os.path.isdir(path):
        raise IsADirectoryError(f"{path!r} is a folder; give a file name for the output.")
    if os.path.lexists(path) and not overwrite:
        raise FileExistsError(_exists_message(path))
    folder = os.path.dirname(os.path.abspath(path))
    if not os.path.isdir(folder):
        raise FileNotFoundError(f"the folder {folder!r} of the output {path!r} does not exist; create it first.")


def save_model(path, model, *, overwrite=False):
    """Write ``model`` to ``path`` as one ``.npz`` file, atomically.

    Parameters
    ----------
    path : str or os.PathLike
        The file to write, used as given (no suffix is added; ``.npz`` is
        the convention).
    model : SavedModel
        The model, e.g. ``SavedModel.from_fit(daskdca.fit(...), ...)``.
    overwrite : bool, default=False
        Replace an existing file; without it an existing ``path`` raises
        FileExistsError and is left untouched.

    Raises
    ------
    FileExistsError
        ``path`` exists and ``overwrite`` is False.
    ValueError
        The model has impossible fields (:func:`check_model`); nothing is
        written.
    """
    if not isinstance(model, SavedModel):
        raise TypeError(f"model must be a SavedModel, got {type(model).__name__}; use SavedModel.from_fit(...).")
    check_model(model, where="the model to save")
    arrays = _arrays(model)
    buffer = io.BytesIO()
    np.savez(buffer, **arrays)
    with zipfile.ZipFile(buffer, "a") as archive:  # rewrites the central directory with the comment
        archive.comment = _TRAILER + b"0" * _DIGITS
    content = bytearray(buffer.getvalue())
    content[-_DIGITS:] = _digest(bytes(content[:-_DIGITS]))
    with atomic_output(path, overwrite=overwrite) as handle:
        handle.write(content)


def _digest(content):
    """The 16 hex digits of the XXH3-64 of ``content`` (ASCII bytes)."""
    return xxhash.xxh3_64_hexdigest(content).encode("ascii")


def _check_trailer(content, path):
    """Whether ``content`` ends with a checksum trailer; a trailer that does not match raises ValueError."""
    if len(content) < len(_TRAILER) + _DIGITS or content[-_DIGITS - len(_TRAILER):-_DIGITS] != _TRAILER:
        return False
    if content[-_DIGITS:] != _digest(content[:-_DIGITS]):
        raise ValueError(f"{path!r}: the file does not match its checksum (XXH3-64 {content[-_DIGITS:]!r} "
                         f"recorded, {_digest(content[:-_DIGITS])!r} computed): it was changed or damaged "
                         "after it was saved. Fit and save the model again (daskdca fit ... --save MODEL).")
    return True


def _problems(model):
    """What is impossible about the fields of ``model`` (a :class:`SavedModel`): a list of messages."""
    from daskdca.losses import LOSSES
    from daskdca.methods import REGISTRY, takes_l1_ratio
    from daskdca.methods.l1 import L1SDCA

    # the methods a fit can name: those of REGISTRY, and L1SDCA, which solver="auto" runs for l1_ratio=1
    # (daskdca.routes; a user asks for it by l1_ratio, not by name)
    solvers = {**REGISTRY, L1SDCA.name: L1SDCA}
    problems = []
    coef = model.coef
    if not isinstance(coef, np.ndarray) or coef.dtype != np.float64 or coef.ndim != 1 or coef.size < 1:
        shape = getattr(coef, "shape", None)
        problems.append(f"coef is {type(coef).__name__} of shape {shape}, not a float64 vector of >= 1 entries")
    elif not np.all(np.isfinite(coef)):
        problems.append(f"coef holds the non-finite value {float(coef[~np.isfinite(coef)][0])!r}")
    base = model.feature_index_base
    if isinstance(base, bool) or not isinstance(base, (int, np.integer)) or base not in INDEX_BASES:
        problems.append(f"feature_index_base is {base!r}, not one of {list(INDEX_BASES)}")
    numbers = {name: getattr(model, name) for name in _FLOATS}
    for name, value in numbers.items():
        if isinstance(value, bool) or not isinstance(value, (float, int, np.floating, np.integer)) \
                or not math.isfinite(value):
            problems.append(f"{name} is {value!r}, not a finite number")
    for name in _INTS:
        value = getattr(model, name)
        if isinstance(value, bool) or not isinstance(value, (int, np.integer)):
            problems.append(f"{name} is {value!r}, not an int")
    for name in _BOOLS:
        if not isinstance(getattr(model, name), (bool, np.bool_)):
            problems.append(f"{name} is {getattr(model, name)!r}, not True or False")
    for name in ("loss", "solver"):
        if not isinstance(getattr(model, name), str):
            problems.append(f"{name} is {getattr(model, name)!r}, not a str")
    if problems:  # the checks below compare values of the right types
        return problems
    if model.lam <= 0:
        problems.append(f"lam is {model.lam!r}; the regularisation of a fitted model is > 0")
    if model.intercept_scaling <= 0:
        problems.append(f"intercept_scaling is {model.intercept_scaling!r}; it is > 0")
    if not model.fit_intercept and (model.intercept != 0.0 or model.intercept_scaling != 1.0):
        problems.append(f"fit_intercept is False but intercept is {model.intercept!r} and intercept_scaling "
                        f"{model.intercept_scaling!r} (a model without an intercept has 0.0 and 1.0)")
    if model.n_features != getattr(coef, "shape", (None,))[0]:
        problems.append(f"n_features is {model.n_features} but coef has {coef.shape[0]} entries")
    if model.n_samples < 1:
        problems.append(f"n_samples is {model.n_samples}; a fit has >= 1 rows")
    if model.rounds < 0:
        problems.append(f"rounds is {model.rounds}; it is >= 0")
    if model.epochs < 0:
        problems.append(f"epochs is {model.epochs!r}; it is >= 0")
    if model.tol < 0:
        problems.append(f"tol is {model.tol!r}; it is >= 0")
    if not 0 <= model.l1_ratio <= 1:
        problems.append(f"l1_ratio is {model.l1_ratio!r}; the L1 share of the penalty is in [0, 1]")
    if not 0 <= model.random_state < 2**63:
        problems.append(f"random_state is {model.random_state}; it is in [0, 2**63)")
    if model.solver not in solvers:
        problems.append(f"solver is {model.solver!r}, not one of {sorted(solvers)}")
    elif model.solver == L1SDCA.name and model.l1_ratio != 1:
        problems.append(f"solver is {model.solver!r}, which solves the pure L1 problem (l1_ratio 1), but l1_ratio "
                        f"is {model.l1_ratio!r}")
    elif model.l1_ratio != 0 and not takes_l1_ratio(solvers[model.solver]):
        takers = sorted(name for name, cls in solvers.items() if takes_l1_ratio(cls))
        problems.append(f"l1_ratio is {model.l1_ratio!r} but the solver {model.solver!r} fits the L2 penalty only "
                        f"(an L1 share is fitted by {takers})")
    loss = LOSSES.get(model.loss)
    if loss is None:
        problems.append(f"loss is {model.loss!r}, not one of {sorted(LOSSES)}")
    else:
        params = model.loss_params
        fields = sorted(f.name for f in dataclasses.fields(loss)) if dataclasses.is_dataclass(loss) else []
        if not isinstance(params, dict) or sorted(params) != fields:
            problems.append(f"loss_params {params!r} do not name the parameters {fields} of the {model.loss} loss")
        elif any(isinstance(v, bool) or not isinstance(v, (int, float)) or not math.isfinite(v)
                 for v in params.values()):
            problems.append(f"loss_params {params!r} hold a value that is not a finite number")
        else:
            try:
                loss(**params)
            except (TypeError, ValueError) as exc:
                problems.append(f"loss_params {params!r}: {exc}")
        classes = model.classes
        if loss.is_classification and classes is None:
            problems.append(f"the {model.loss} loss classifies, but the model has no class labels")
        if not loss.is_classification and classes is not None:
            problems.append(f"the {model.loss} loss is a regression, but the model has class labels "
                            f"{np.asarray(classes).tolist()}")
    if model.classes is not None:
        classes = np.asarray(model.classes)
        if classes.shape != (2,) or classes.dtype.kind not in "biuf":
            problems.append(f"classes has dtype {classes.dtype} and shape {classes.shape}, not two numbers")
        elif classes.dtype.kind == "f" and not np.all(np.isfinite(classes)):
            problems.append(f"classes {classes.tolist()} hold a non-finite label")
        elif classes[0] == classes[1]:
            problems.append(f"classes {classes.tolist()} are two equal labels; a binary model has two distinct "
                            "ones")
    primal, dual, gap = model.primal, model.dual, model.gap
    slack = _SLACK * max(1.0, abs(primal), abs(dual))
    if 0 <= model.l1_ratio <= 1 and model.lam > 0 and model.intercept_scaling > 0:
        penalty = _penalty(model)
        if primal < penalty - slack:
            problems.append(f"primal is {primal!r}, below the penalty {penalty!r} of coef{_intercept_words(model)} "
                            f"at lam {model.lam!r} and l1_ratio {model.l1_ratio!r}; the primal objective (a mean "
                            "loss >= 0 plus that penalty) is >= it")
    elif primal < -slack:
        problems.append(f"primal is {primal!r}; the primal objective (a mean loss plus a penalty) is >= 0")
    if abs(gap - (primal - dual)) > slack:
        problems.append(f"gap is {gap!r} but primal - dual is {primal - dual!r}")
    elif gap < -slack:
        problems.append(f"gap is {gap!r}; the duality gap is >= 0 (weak duality)")
    met = gap <= model.tol * abs(primal)
    if model.converged and gap > model.tol * abs(primal) + slack:
        problems.append(f"converged is True but gap {gap!r} > tol {model.tol!r} * |primal| {abs(primal)!r}")
    elif not model.converged and met and gap < model.tol * abs(primal) - slack:
        problems.append(f"converged is False but gap {gap!r} <= tol {model.tol!r} * |primal| {abs(primal)!r}")
    return problems


class _PenaltyOnly(NamedTuple):
    """The ``info`` of :func:`daskdca.problem.objectives` for a penalty alone (a loss sum of 0 over ``n`` rows)."""

    n: int
    lam: float


def _penalty(model):
    """``lam g(w, b/s)``: the penalty of ``l1_ratio`` at the saved weights, the intercept's weight included.

    :func:`daskdca.problem.objectives`, which computes every fit's
    certificate, gives it as the primal of a loss sum of zero.
    """
    from daskdca.problem import objectives

    weights = model.coef
    if model.fit_intercept:
        weights = np.append(weights, model.intercept / model.intercept_scaling)
    penalty, _ = objectives(_PenaltyOnly(n=1, lam=float(model.lam)), np.zeros(2), weights, weights,
                            float(model.l1_ratio))
    return float(penalty)


def _intercept_words(model):
    return " and intercept / intercept_scaling" if model.fit_intercept else ""


def check_model(model, where="the model"):
    """Raise ValueError naming every impossible field of ``model``.

    Parameters
    ----------
    model : SavedModel
        The model to check.
    where : str, default="the model"
        How the message names the model (a file name when loading).

    Raises
    ------
    ValueError
        A field has the wrong type or shape, is not finite, or contradicts
        another (see the module docstring).
    """
    problems = _problems(model)
    if problems:
        raise ValueError(f"{where} has impossible fields: {'; '.join(problems)}. A model written by daskdca never "
                         "has them: the file was changed or damaged, or was not written by daskdca; fit and save "
                         "the model again (daskdca fit ... --save MODEL).")


def _scalar(data, name, kind, path):
    value = data[name]
    if value.shape != () or value.dtype.kind not in kind:
        raise ValueError(f"{path!r}: the field {name!r} has dtype {value.dtype} and shape {value.shape}, "
                         "not a scalar of the saved-model format; the file is damaged.")
    return value[()]


def _missing_words(missing):
    if "l1_ratio" in missing:
        return (" (l1_ratio, the L1 share of the penalty that its certificate is of: without it the certificate "
                "cannot be checked against its objective)")
    return ""


def load_model(path):
    """Read a model written by :func:`save_model` (no pickle is ever read).

    Parameters
    ----------
    path : str or os.PathLike
        The ``.npz`` file.

    Returns
    -------
    SavedModel
        The model, its fields checked.

    Raises
    ------
    FileNotFoundError
        No file at ``path``.
    ValueError
        The file is not a daskdca saved model, is damaged, does not match
        its checksum (versions 2 and 3; version-1 files have none), has a
        format version this daskdca does not read, lacks a field of its
        version or has one its version does not have, or holds impossible
        fields (:func:`check_model`).  Files of versions 1 and 2 are read
        with ``l1_ratio = 0.0``.
    """
    path = os.fspath(path)
    if not os.path.exists(path):
        raise FileNotFoundError(f"{path!r} does not exist.")
    if os.path.isdir(path):
        raise IsADirectoryError(f"{path!r} is a folder, not a saved model (a .npz file from --save).")
    not_a_model = f"{path!r} is not a daskdca saved model (a .npz file written by --save)"
    with open(path, "rb") as handle:
        content = handle.read()
    if content[:4] != b"PK\x03\x04":  # np.savez writes a zip archive
        raise ValueError(f"{not_a_model}: it is not a .npz (zip) archive.")
    covered = _check_trailer(content, path)  # before parsing: any changed byte is named as such
    try:
        data = np.load(io.BytesIO(content), allow_pickle=False)
        if not isinstance(data, np.lib.npyio.NpzFile):
            raise ValueError("it holds a single NumPy array")
        with data:
            fields = {name: data[name] for name in data.files}
    except (ValueError, OSError, EOFError, zipfile.BadZipFile, KeyError) as exc:
        raise ValueError(f"{not_a_model}: {type(exc).__name__}: {exc}") from None
    if "format" not in fields or fields["format"].shape != () or str(fields["format"][()]) != FORMAT:
        raise ValueError(f"{not_a_model}: it has no format field {FORMAT!r}.")
    version = int(_scalar(fields, "format_version", "iu", path))
    if version not in READ_VERSIONS:
        raise ValueError(f"{path!r} is a saved model of format version {version}; this daskdca reads "
                         f"version 1 (files without a checksum) to {FORMAT_VERSION} only. Use the daskdca "
                         "version that wrote it, or fit again.")
    known = _version_fields(version)
    missing = [name for name in known if name not in fields]
    if missing:
        raise ValueError(f"{path!r}: the saved model lacks the fields {missing}, which format version {version} "
                         f"has{_missing_words(missing)}; the file is damaged or was not written by daskdca. Fit "
                         "and save the model again (daskdca fit ... --save MODEL).")
    extra = sorted(set(fields) - set(known))
    if extra:
        raise ValueError(f"{path!r}: the saved model has the fields {extra}, which format version {version} "
                         "does not have; the file was changed or was not written by daskdca. Fit and save again.")
    if version >= 2 and not covered:
        raise ValueError(f"{path!r}: a version-{version} saved model ends with its checksum "
                         f"({_TRAILER.decode()}...), and this file does not: it was changed or damaged after "
                         "it was saved. Fit and save the model again (daskdca fit ... --save MODEL).")
    coef = fields["coef"]  # its values, and every other field, are checked by check_model below
    if coef.ndim != 1 or coef.dtype != np.float64:
        raise ValueError(f"{path!r}: coef is not a float64 vector (dtype {coef.dtype}, shape {coef.shape}); the "
                         "file is damaged. Fit and save the model again.")
    values = {name: float(_scalar(fields, name, "f", path)) if name in fields else _ABSENT[name] for name in _FLOATS}
    values.update({name: int(_scalar(fields, name, "iu", path)) for name in _INTS})
    values["feature_index_base"] = (int(_scalar(fields, "feature_index_base", "iu", path))
                                    if "feature_index_base" in fields else _ABSENT["feature_index_base"])
    values.update({name: bool(_scalar(fields, name, "b", path)) for name in _BOOLS})
    values.update({name: str(_scalar(fields, name, "U", path)) for name in _TEXTS})
    try:
        params = json.loads(values["loss_params"])
    except ValueError:
        params = None
    if not isinstance(params, dict):
        raise ValueError(f"{path!r}: loss_params is not a JSON object; the file is damaged.")
    values["loss_params"] = params
    classes = fields["classes"]
    classes = None if classes.shape == (0,) else classes
    model = SavedModel(coef=coef, classes=classes, **values)
    check_model(model, where=repr(path))
    return model
