"""Bad input to the estimators and ``daskdca.fit`` is refused with a message that names the value and the fix
(docs/reliability.md, "Bad input"); the resume bookkeeping is in tests/test_method_contract.py.

A. Labels are compared with predictions by value: a store or an array whose label values are not among the
   model's ``classes_`` is refused with both sets named (a 0/1 set scored by a -1/+1 model counted every 0 as
   wrong without a word).
B. Messages name what the caller set: ``C`` (not the ``lam`` it becomes), ``class_weight`` and the class (not
   the row weights they become), a store given to an estimator's ``fit``; NumPy scalars are numbers.
"""

import pathlib
import re
import warnings

import numpy as np
import pytest
from sklearn.exceptions import ConvergenceWarning
from sklearn.metrics import accuracy_score

import daskdca
from daskdca import SDCAClassifier, SDCAClassifierCV, SDCARegressor
from daskdca.validation import _check_int, _check_local_iters
from daskdca.store import open_store, write_store

N, D = 120, 5


@pytest.fixture(autouse=True)
def _quiet():
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ConvergenceWarning)
        yield


def _data(seed=0):
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(N, D))
    score = X @ np.array([1.0, -0.5, 0.3, 0.0, 0.2]) + 0.3 * rng.normal(size=N)
    return X, score


X, SCORE = _data()
PM = np.where(SCORE > 0, 1, -1)               # -1/+1
ZO = (SCORE > 0).astype(np.int64)             # 0/1
THREE = np.digitize(SCORE, [-0.5, 0.5])       # 0/1/2
NAMES = np.where(SCORE > 0, "sick", "healthy")


def _fitted(y, **kwargs):
    return SDCAClassifier("logistic", C=1.0, tol=1e-4, max_iter=50, **kwargs).fit(X, y)


@pytest.fixture(scope="module")
def models():
    return {"pm": _fitted(PM), "zo": _fitted(ZO), "three": _fitted(THREE), "names": _fitted(NAMES),
            "bool": _fitted(SCORE > 0)}


@pytest.fixture(scope="module")
def stores(tmp_path_factory):
    root = tmp_path_factory.mktemp("stores")
    labels = {"pm": PM, "zo": ZO, "one_two": ZO + 1, "three": THREE, "plus_only": np.ones(N),
              "three_as_pm": np.where(THREE == 2, 1, np.where(THREE == 1, -1, 3))}
    # unshuffled: the stored rows are the rows of X
    return {name: write_store(str(root / f"{name}.zarr"), X, y, block_rows=50, shuffle=False)
            for name, y in labels.items()}


# ---------------------------------------------------------------------------------------------------------------
# A. label encodings that do not match

# (model, labels of the data scored, where: "array" / "store" / "path" / "pathlike", words of the message)
REFUSED_LABELS = [
    ("pm", "zo", "array", [r"\[0, 1\]", r"\[-1, 1\]", r"\{0: -1, 1: 1\}"]),
    ("pm", "zo", "store", [r"\[0\.0, 1\.0\]", r"\[-1, 1\]"]),
    ("pm", "zo", "path", [r"\[0\.0, 1\.0\]", r"\[-1, 1\]"]),
    ("pm", "zo", "pathlike", [r"\[0\.0, 1\.0\]", r"\[-1, 1\]"]),
    ("pm", "zo", "handle", [r"\[0\.0, 1\.0\]", r"\[-1, 1\]"]),
    ("zo", "pm", "array", [r"\[-1, 1\]", r"\[0, 1\]", r"\{-1: 0, 1: 1\}"]),
    ("zo", "pm", "store", [r"\[-1\.0, 1\.0\]", r"\[0, 1\]"]),
    ("zo", "one_two", "array", [r"\[1, 2\]", r"\[0, 1\]"]),
    ("zo", "one_two", "store", [r"\[1\.0, 2\.0\]", r"\[0, 1\]"]),
    ("pm", "three", "array", [r"\[0, 1, 2\]", r"\[-1, 1\]"]),
    ("pm", "three_as_pm", "store", [r"\[-1\.0, 1\.0, 3\.0\]", r"\[3\.0\] are not among"]),
    ("three", "pm", "array", [r"\[-1, 1\]", r"\[0, 1, 2\]"]),
    ("three", "pm", "store", [r"\[-1\.0, 1\.0\]", r"\[0, 1, 2\]"]),
    ("pm", "names", "array", [r"'healthy', 'sick'", r"\[-1, 1\]"]),
    ("names", "pm", "array", [r"\[-1, 1\]", r"'healthy', 'sick'", "labels of dtype <U7"]),
    ("names", "pm", "store", [r"\[-1\.0, 1\.0\]", "labels of dtype <U7"]),
    ("names", "zo", "store", [r"\[0\.0, 1\.0\]", "labels of dtype <U7"]),
    ("pm", "nan", "array", [r"nan", r"\[-1, 1\]"]),
    ("pm", "halves", "array", [r"-0\.5, 0\.5", r"\[-1, 1\]"]),
]

ARRAY_LABELS = {"pm": PM, "zo": ZO, "one_two": ZO + 1, "three": THREE, "names": NAMES,
                "nan": np.where(PM > 0, 1.0, np.nan), "halves": PM / 2.0}


def _scored(stores, labels, where):
    if where == "array":
        return X, ARRAY_LABELS[labels]
    store = stores[labels]
    return {"store": store.url, "path": store.url, "pathlike": pathlib.Path(store.url),
            "handle": open_store(store.url)}[where], None


@pytest.mark.parametrize("model, labels, where, words", REFUSED_LABELS,
                         ids=[f"{m}-on-{lab}-{w}" for m, lab, w, _ in REFUSED_LABELS])
def test_score_refuses_labels_that_are_not_the_models_classes(models, stores, model, labels, where, words):
    est = models[model]
    data, y = _scored(stores, labels, where)
    with pytest.raises(ValueError, match="not among those classes") as info:
        est.score(data, y)
    message = str(info.value)
    for word in words:
        assert re.search(word, message), (word, message)
    assert "relabel" in message and "fit on the same encoding" in message


# (model, labels, where): accepted, and scored as accuracy_score of the predictions
ACCEPTED_LABELS = [
    ("pm", "pm", "array"), ("pm", "pm", "store"), ("pm", "pm", "pathlike"), ("zo", "zo", "array"),
    ("three", "three", "array"), ("three", "three", "store"), ("names", "names", "array"),
    ("pm", "plus_only", "store"),        # a subset of the classes
    ("pm", "pm_float", "array"),         # -1.0/+1.0 equal -1/+1 by value
    ("pm", "pm_int8", "array"),          # another integer dtype
    ("bool", "zo", "array"),             # False/True equal 0/1 by value
    ("pm", "pm_list", "array"),
]
ARRAY_LABELS.update(pm_float=PM.astype(np.float64), pm_int8=PM.astype(np.int8), pm_list=PM.tolist())


@pytest.mark.parametrize("model, labels, where", ACCEPTED_LABELS,
                         ids=[f"{m}-on-{lab}-{w}" for m, lab, w in ACCEPTED_LABELS])
def test_score_accepts_labels_among_the_classes(models, stores, model, labels, where):
    est = models[model]
    data, y = _scored(stores, labels, where)
    got = est.score(data, y)
    if where == "array":
        want = accuracy_score(np.asarray(y).astype(est.classes_.dtype), est.predict(X))
    else:
        want = accuracy_score(np.asarray(stores[labels].group["y"][:]), est.predict(X))
    assert got == pytest.approx(want)


@pytest.mark.parametrize("model, labels", [("pm", "zo"), ("zo", "pm"), ("three", "pm"), ("names", "zo")])
def test_prediction_on_a_store_needs_no_labels(models, stores, model, labels):
    est = models[model]
    np.testing.assert_array_equal(est.predict(stores[labels].url), est.predict(X))


def test_the_regressor_scores_any_targets(stores):
    reg = SDCARegressor(C=1.0, tol=1e-4, max_iter=50).fit(X, SCORE)
    for name in ("zo", "pm", "one_two"):
        assert np.isfinite(reg.score(stores[name].url))
        assert np.isfinite(reg.score(X, ARRAY_LABELS[name]))


# ---------------------------------------------------------------------------------------------------------------
# B. messages that name what the caller set

C_CASES = [
    (SDCAClassifier, dict(C=1e308), PM, "C=1e+308", "= 0.0"),
    (SDCAClassifier, dict(C=1e307), PM, "C=1e+307", "= 0.0"),
    (SDCAClassifier, dict(C=1e-320), PM, "C=1e-320", "= inf"),
    (SDCAClassifier, dict(C=5e-324), PM, "C=5e-324", "= inf"),
    # lam = 1/(C n) finite and > 0 but C n past 1e300: the fit's sums overflowed (a gap of inf)
    (SDCAClassifier, dict(C=1e299), PM, "C=1e+299", "= "),
    (SDCAClassifier, dict(C=np.float64(1e308)), PM, "C=1e+308", "= 0.0"),
    (SDCAClassifier, dict(C=1e308), THREE, "C=1e+308", "= 0.0"),
    (SDCARegressor, dict(C=1e308), SCORE, "C=1e+308", "= 0.0"),
    (SDCARegressor, dict(C=1e-320), SCORE, "C=1e-320", "= inf"),
    (SDCAClassifierCV, dict(Cs=[1.0, 1e308], cv=3), PM, "C=1e+308", "= 0.0"),
    (SDCAClassifierCV, dict(Cs=[1e-320, 1.0], cv=3), PM, "C=1e-320", "= inf"),
]


@pytest.mark.parametrize("cls, params, y, named, lam", C_CASES,
                         ids=[f"{c.__name__}-{i}" for i, (c, *_rest) in enumerate(C_CASES)])
def test_a_C_whose_C_n_is_out_of_range_is_named(cls, params, y, named, lam):
    with pytest.raises(ValueError) as info:
        cls(max_iter=5, **params).fit(X, y)
    message = str(info.value)
    assert message.startswith(named) and f"lam = 1/(C n) {lam}" in message
    assert "use a C with C n between" in message and "lam must be" not in message


BAD_CLASS_WEIGHTS = [
    ({-1: -1.0, 1: 1.0}, PM, "class -1 the weight -1.0"),
    ({-1: 1.0, 1: -0.5}, PM, "class 1 the weight -0.5"),
    ({-1: np.nan, 1: 1.0}, PM, "class -1 the weight nan"),
    ({-1: 1.0, 1: np.inf}, PM, "class 1 the weight inf"),
    ({-1: 0.0, 1: 0.0}, PM, "every class the weight 0"),
    ({0: 0.0, 1: 0.0}, ZO, "every class the weight 0"),
    ({0: -2.0, 1: 1.0}, ZO, "class 0 the weight -2.0"),
    ({0: 1.0, 1: 1.0, 2: -1.0}, THREE, "class 2 the weight -1.0"),
    ({0: np.nan, 1: 1.0, 2: 1.0}, THREE, "class 0 the weight nan"),
    ({0: 0.0, 1: 0.0, 2: 0.0}, THREE, "every class the weight 0"),
    ({"healthy": -1.0, "sick": 1.0}, NAMES, "class 'healthy' the weight -1.0"),
]
WEIGHT_FITS = {
    "estimator": lambda cw, y: SDCAClassifier(class_weight=cw, max_iter=5).fit(X, y),
    "estimator-minibatch": lambda cw, y: SDCAClassifier(class_weight=cw, max_iter=5,
                                                        solver="minibatch_sdca").fit(X, y),
    "cv": lambda cw, y: SDCAClassifierCV(Cs=2, cv=3, class_weight=cw, max_iter=5).fit(X, y),
    "fit": lambda cw, y: daskdca.fit(X, y, class_weight=cw, max_epochs=5),
}


@pytest.mark.parametrize("fit", sorted(WEIGHT_FITS))
@pytest.mark.parametrize("class_weight, y, words", BAD_CLASS_WEIGHTS,
                         ids=[f"case{i}" for i in range(len(BAD_CLASS_WEIGHTS))])
def test_bad_class_weights_name_class_weight_and_the_class(fit, class_weight, y, words):
    with pytest.raises(ValueError) as info:
        WEIGHT_FITS[fit](class_weight, y)
    message = str(info.value)
    assert message.startswith("class_weight gives") and words in message, message
    assert "positive weight" in message or "a weight >= 0" in message


@pytest.mark.parametrize("fit", ["estimator", "cv", "fit"])
def test_class_weights_that_zero_every_row_with_sample_weight_name_class_weight(fit):
    weight = np.where(PM > 0, 0.0, 1.0)  # the +1 rows weigh 0, and class -1 gets weight 0
    class_weight = {-1: 0.0, 1: 1.0}
    with pytest.raises(ValueError, match=r"class_weight=\{-1: 0\.0, 1: 1\.0\} times sample_weight is zero for "
                                         "every row.*give a class whose rows"):
        if fit == "fit":
            daskdca.fit(X, PM, class_weight=class_weight, sample_weight=weight, max_epochs=5)
        elif fit == "cv":
            SDCAClassifierCV(Cs=2, cv=3, class_weight=class_weight, max_iter=5).fit(X, PM, sample_weight=weight)
        else:
            SDCAClassifier(class_weight=class_weight, max_iter=5).fit(X, PM, sample_weight=weight)


STORE_INPUTS = ["missing-path", "path", "pathlike", "handle"]


@pytest.mark.parametrize("cls, y", [(SDCAClassifier, PM), (SDCAClassifierCV, PM), (SDCARegressor, SCORE)],
                         ids=["classifier", "cv", "regressor"])
@pytest.mark.parametrize("given", STORE_INPUTS)
def test_an_estimator_given_a_store_to_fit_says_how_to_fit_one(stores, cls, y, given):
    store = stores["pm"]
    X_given = {"missing-path": "path/to/store.zarr", "path": store.url, "pathlike": pathlib.Path(store.url),
               "handle": store}[given]
    shown = "path/to/store.zarr" if given == "missing-path" else store.url
    with pytest.raises(TypeError) as info:
        cls().fit(X_given, y)
    message = str(info.value)
    assert f"{cls.__name__}.fit takes arrays" in message and repr(shown) in message
    assert f"daskdca.fit({shown!r}) without y" in message and "take a store without y" in message
    assert "could not convert" not in message


# NumPy scalars are numbers: each gives the bits of the Python number
NUMPY_FIT_PARAMS = [
    ("local_iters", np.int64(2), 2, dict(solver="sdca")),
    ("local_iters", np.int32(2), 2, dict(solver="cocoa+")),
    ("local_iters", np.float64(0.5), 0.5, dict(solver="sdca")),
    ("local_iters", np.float32(0.5), 0.5, dict(solver="cocoa+")),
    ("local_iters", np.uint8(3), 3, dict(solver="auto")),
    ("max_rounds", np.int64(7), 7, dict(solver="sdca")),
    ("max_epochs", np.int64(3), 3, dict(solver="minibatch_sdca")),
    ("max_epochs", np.float32(2.5), 2.5, dict(solver="sdca")),
    ("n_partitions", np.int64(3), 3, dict(solver="cocoa+")),
    ("batch_size", np.int64(16), 16, dict(solver="minibatch_sdca")),
    ("batch_size", np.int32(8), 8, dict(solver="minibatch_sdca")),
    ("verbose", np.int64(0), 0, dict(solver="sdca")),
    ("random_state", np.int64(5), 5, dict(solver="sdca")),
    ("random_state", np.uint32(5), 5, dict(solver="cocoa+")),
    ("lam", np.float64(0.01), 0.01, dict(solver="sdca")),
    ("tol", np.float64(1e-3), 1e-3, dict(solver="sdca")),
]


@pytest.mark.parametrize("name, numpy_value, python_value, extra", NUMPY_FIT_PARAMS,
                         ids=[f"{n}-{type(v).__name__}" for n, v, _, _ in NUMPY_FIT_PARAMS])
def test_fit_takes_numpy_scalars_as_numbers(name, numpy_value, python_value, extra):
    kwargs = dict(loss="logistic", lam=0.01, tol=1e-8, max_epochs=20, **extra)
    a = daskdca.fit(X, PM, **{**kwargs, name: numpy_value})
    b = daskdca.fit(X, PM, **{**kwargs, name: python_value})
    np.testing.assert_array_equal(a.coef_, b.coef_)
    assert a.n_rounds_ == b.n_rounds_ and a.n_epochs_ == b.n_epochs_


NUMPY_ESTIMATOR_PARAMS = [
    ("C", np.float64(0.5), 0.5), ("C", np.float32(0.5), float(np.float32(0.5))), ("C", np.int64(2), 2),
    ("max_iter", np.int64(7), 7), ("n_partitions", np.int64(1), 1), ("verbose", np.int64(0), 0),
    ("intercept_scaling", np.int64(2), 2), ("tol", np.float32(1e-3), float(np.float32(1e-3))),
    ("random_state", np.int64(3), 3),
]


@pytest.mark.parametrize("cls, y", [(SDCAClassifier, PM), (SDCARegressor, SCORE)], ids=["classifier", "regressor"])
@pytest.mark.parametrize("name, numpy_value, python_value", NUMPY_ESTIMATOR_PARAMS,
                         ids=[f"{n}-{type(v).__name__}" for n, v, _ in NUMPY_ESTIMATOR_PARAMS])
def test_estimators_take_numpy_scalars_as_numbers(cls, y, name, numpy_value, python_value):
    a = cls(**{name: numpy_value}).fit(X, y)
    b = cls(**{name: python_value}).fit(X, y)
    np.testing.assert_array_equal(a.coef_, b.coef_)
    np.testing.assert_array_equal(a.intercept_, b.intercept_)


BAD_LOCAL_ITERS = [True, False, np.bool_(True), 0, -1, np.int64(0), np.float64(-0.5), float("nan"), float("inf"),
                   np.float64("nan"), "2", None, [1]]


@pytest.mark.parametrize("value", BAD_LOCAL_ITERS, ids=[repr(v) for v in BAD_LOCAL_ITERS])
def test_bad_local_iters_names_the_value_and_the_fix(value):
    with pytest.raises(ValueError, match=r"local_iters must be a finite number > 0 .*got .*use e\.g\. "
                                         r"local_iters=1\.0"):
        daskdca.fit(X, PM, solver="sdca", local_iters=value)


@pytest.mark.parametrize("value, want", [(2, 2), (np.int64(2), 2), (np.uint16(2), 2), (2.5, 2.5),
                                         (np.float32(0.25), 0.25), (np.float64(1.0), 1.0)])
def test_local_iters_keeps_its_kind_of_number(value, want):
    got = _check_local_iters(value)
    assert got == want and type(got) is type(want)


# the cluster-only integers (checkpoint_every) pass the same check as max_rounds and n_partitions
INT_CHECKS = [(np.int64(3), True), (np.int32(3), True), (np.uint8(3), True), (3, True), (True, False),
              (np.bool_(True), False), (3.0, False), (np.float64(3.0), False), ("3", False), (0, False)]


@pytest.mark.parametrize("value, accepted", INT_CHECKS, ids=[repr(v) for v, _ in INT_CHECKS])
def test_the_integer_check_takes_numpy_integers_and_refuses_bool(value, accepted):
    if accepted:
        got = _check_int("checkpoint_every", value, low=1, hint="use e.g. 10")
        assert got == 3 and type(got) is int
    else:
        with pytest.raises(ValueError, match=r"checkpoint_every must be .*got .*use e\.g\. 10"):
            _check_int("checkpoint_every", value, low=1, hint="use e.g. 10")

