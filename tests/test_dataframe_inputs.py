"""Data frames, Parquet and labels of any type as input: pandas and dask DataFrames to ``daskdca.fit``, the
estimators and ``write_store``; Parquet through ``write_store`` and ``daskdca convert``; lazy predictions on
a dask DataFrame; string and bool labels on dask input and in a store."""

import json

import numpy as np
import pytest

pd = pytest.importorskip("pandas")
dd = pytest.importorskip("dask.dataframe")
pytest.importorskip("pyarrow")
distributed = pytest.importorskip("distributed")

import dask.array as da  # noqa: E402

import daskdca  # noqa: E402
from daskdca.cli import main  # noqa: E402
from daskdca.store import StoreError, open_store, write_store  # noqa: E402

pytestmark = pytest.mark.filterwarnings("ignore:Dask currently has limited support:UserWarning")

FEATURES = ["age", "dose", "score"]


@pytest.fixture(scope="module")
def client():
    with distributed.LocalCluster(n_workers=2, threads_per_worker=1, processes=True, dashboard_address=None,
                                  silence_logs=40) as cluster, distributed.Client(cluster) as c:
        yield c


@pytest.fixture(scope="module")
def frame():
    """300 rows: two float columns and an int one, and string labels of a noisy linear rule."""
    rng = np.random.default_rng(7)
    n = 300
    df = pd.DataFrame({"age": rng.standard_normal(n), "dose": rng.integers(0, 5, n),
                       "score": rng.standard_normal(n)})
    df["label"] = np.where(df.age + 0.3 * df.dose - 0.6 + 0.3 * rng.standard_normal(n) > 0, "sick", "well")
    return df


def _arrays(df):
    return df[FEATURES].to_numpy(dtype=np.float64), df["label"].to_numpy()


def _blocks(store):
    return [store.read_block(k) for k in range(store.n_blocks)]


def _same_blocks(a, b):
    assert a.n_blocks == b.n_blocks
    for (Xa, ya), (Xb, yb) in zip(_blocks(a), _blocks(b)):
        assert (Xa != Xb).nnz == 0 and np.array_equal(ya, yb)


# ----------------------------------------------------------------- pandas


def test_fit_on_a_pandas_frame_gives_the_numpy_bits_and_keeps_the_names(frame):
    X, y = _arrays(frame)
    ref = daskdca.fit(X, y, loss="logistic", lam=1e-2)
    model = daskdca.fit(frame, y="label", loss="logistic", lam=1e-2)
    assert np.array_equal(model.coef_, ref.coef_)
    assert model.feature_names_in_.tolist() == FEATURES
    assert model.classes_.tolist() == ["sick", "well"]
    assert np.array_equal(model.predict(frame[FEATURES]), ref.predict(X))
    # the label given as a Series instead of a column name: the same fit
    again = daskdca.fit(frame[FEATURES], frame["label"], loss="logistic", lam=1e-2)
    assert np.array_equal(again.coef_, ref.coef_)
    with pytest.raises(ValueError, match=r"differ from the fitted feature names"):
        model.decision_function(frame[["dose", "age", "score"]])


def test_estimator_on_a_pandas_frame_keeps_feature_names_and_the_numpy_bits(frame):
    X, y = _arrays(frame)
    ref = daskdca.SDCAClassifier(loss="logistic").fit(X, y)
    clf = daskdca.SDCAClassifier(loss="logistic").fit(frame[FEATURES], frame["label"])
    assert np.array_equal(clf.coef_, ref.coef_) and clf.intercept_ == ref.intercept_
    assert clf.feature_names_in_.tolist() == FEATURES
    assert np.array_equal(clf.predict(frame[FEATURES]), ref.predict(X))
    assert np.array_equal(clf.predict_proba(frame[FEATURES]), ref.predict_proba(X))
    assert clf.score(frame[FEATURES], frame["label"]) == ref.score(X, y)
    reg = daskdca.SDCARegressor().fit(frame[FEATURES], frame["score"] * 2.0)
    assert reg.feature_names_in_.tolist() == FEATURES


def test_categorical_and_string_columns_are_refused_with_the_fix(frame, tmp_path):
    bad = frame.assign(colour=pd.Categorical(["red", "blue"] * (len(frame) // 2)), note="x")
    message = r"2 columns that are not numbers: 'colour' \(category\), 'note' \((object|str|string)\).*Encode them"
    with pytest.raises(ValueError, match=message):
        daskdca.fit(bad, y="label")
    with pytest.raises(ValueError, match=message):
        daskdca.SDCAClassifier().fit(bad.drop(columns="label"), bad["label"])
    with pytest.raises(ValueError, match=message):
        write_store(tmp_path / "bad.zarr", bad, "label")
    with pytest.raises(ValueError, match=message):
        write_store(tmp_path / "bad.zarr", dd.from_pandas(bad, npartitions=2), "label")
    assert not (tmp_path / "bad.zarr").exists()
    clf = daskdca.SDCAClassifier().fit(frame[FEATURES], frame["label"])
    with pytest.raises(ValueError, match=r"'note' \((object|str|string)\)"):
        clf.predict(frame[FEATURES].assign(note="x"))
    with pytest.raises(ValueError, match=r"X has no column 'lable'; its columns are"):
        daskdca.fit(frame, y="lable")
    with pytest.raises(ValueError, match=r"y='label' names a label column, which needs X to be a pandas or dask"):
        daskdca.fit(frame[FEATURES].to_numpy(), y="label")


def test_missing_or_mixed_labels_are_refused(frame, tmp_path):
    labels = frame["label"].astype(object).copy()
    labels.iloc[5] = None
    with pytest.raises(ValueError, match=r"missing label \(None\) at row 5"):
        write_store(tmp_path / "a.zarr", frame[FEATURES], labels)
    labels.iloc[5] = 3
    with pytest.raises(TypeError, match=r"labels of the types \['numeric', 'str'\]"):
        write_store(tmp_path / "a.zarr", frame[FEATURES], labels)


@pytest.mark.parametrize("dtype", ["Int64", "boolean", "Float64", "category"])
def test_nullable_and_categorical_labels_fit_as_their_numpy_values(frame, dtype):
    """pandas' nullable integers, booleans and floats and categories of numbers are labels as scikit-learn
    takes them: the estimators refused them ("Unknown label type") and ``score`` on a categorical failed."""
    X = frame[FEATURES].to_numpy(dtype=np.float64)
    plain = (frame["label"] == "sick").to_numpy()
    plain = plain if dtype == "boolean" else plain.astype(np.int64) + 3
    labels = pd.Series(plain, dtype=dtype)
    expected = daskdca.SDCAClassifier(loss="logistic").fit(X, plain)
    clf = daskdca.SDCAClassifier(loss="logistic").fit(X, labels)
    np.testing.assert_array_equal(clf.classes_, expected.classes_)
    np.testing.assert_array_equal(clf.coef_, expected.coef_)
    assert clf.score(X, labels) == expected.score(X, plain)
    assert np.array_equal(daskdca.fit(X, labels, loss="logistic", lam=1e-3).coef_,
                          daskdca.fit(X, plain, loss="logistic", lam=1e-3).coef_)
    missing = labels.copy()
    missing.iloc[4] = pd.NA if dtype != "category" else np.nan
    with pytest.raises(ValueError, match=r"missing label .* at row 4"):
        daskdca.SDCAClassifier().fit(X, missing)


def test_a_frame_without_y_says_y_is_missing_and_names_the_label_candidates(frame, tmp_path):
    # the string label column left in X: y is missing (not "encode 'label' with get_dummies")
    missing = (r"y is missing: X is a pandas DataFrame and no labels were given\. If a column of X holds the labels, "
               r"name it: y='label' \(X's columns that are not numbers, so cannot be features: 'label'\); or pass "
               r"the labels themselves as y=array")
    with pytest.raises(ValueError, match=missing) as info:
        daskdca.fit(frame)
    assert "get_dummies" not in str(info.value)
    with pytest.raises(ValueError, match=missing):
        write_store(tmp_path / "nolabels.zarr", frame, None)
    assert not (tmp_path / "nolabels.zarr").exists()
    # every column numeric: no candidate to name, so the columns and both ways to pass y
    numeric = frame[FEATURES].assign(label=(frame["label"] == "sick").astype(int))
    with pytest.raises(ValueError, match=r"y is missing: X is a pandas DataFrame .* name it: y=\"column name\" "
                                         r"\(X's columns: \['age', 'dose', 'score', 'label'\]\); or pass the "
                                         r"labels themselves as y=array of shape \(n_samples,\)\.") as info:
        daskdca.fit(numeric, loss="logistic")
    assert "y is required when X is an array" not in str(info.value)
    # a dask DataFrame: refused from its metadata, before any cluster is started or a partition read
    with pytest.raises(ValueError, match=r"y is missing: X is a dask DataFrame .* name it: y='label'"):
        daskdca.fit(dd.from_pandas(frame, npartitions=2))
    with pytest.raises(ValueError, match=r"y is missing: X is a dask DataFrame .* y=\"column name\""):
        daskdca.fit(dd.from_pandas(numeric, npartitions=2))
    # y given, another column not numbers: still the encoding fix, naming that column
    with pytest.raises(ValueError, match=r"1 column that is not numbers: 'note'.*get_dummies"):
        daskdca.fit(frame.assign(note="x"), y="label")
    # the estimators: y is a required argument; left out, Python names it, and y=None with a frame gets the same
    # message as daskdca.fit, naming the label column where there is one
    with pytest.raises(TypeError, match="required positional argument: 'y'"):
        daskdca.SDCAClassifier().fit(frame[FEATURES])
    with pytest.raises(ValueError, match=r"y is missing: X is a pandas DataFrame .* y=\"column name\""):
        daskdca.SDCAClassifier().fit(numeric, None)
    for estimator in (daskdca.SDCAClassifier(), daskdca.SDCARegressor()):
        with pytest.raises(ValueError, match=missing):
            estimator.fit(frame, None)


# ----------------------------------------------------------------- stores, Parquet, the CLI


def test_write_store_of_frames_and_parquet_gives_the_same_store(frame, tmp_path):
    X, y = _arrays(frame)
    codes = (y == "well").astype(np.float64)  # sorted names: "sick" -> 0, "well" -> 1
    ref = write_store(tmp_path / "ref.zarr", X, codes, shuffle=False, block_rows=100)
    frame.to_parquet(tmp_path / "data.parquet")
    dd.from_pandas(frame, npartitions=3).to_parquet(tmp_path / "parts.parquet")
    stores = [write_store(tmp_path / "pandas.zarr", frame, "label", shuffle=False, block_rows=100),
              write_store(tmp_path / "dask.zarr", dd.from_pandas(frame, npartitions=4), "label", shuffle=False,
                          block_rows=100),
              write_store(tmp_path / "file.zarr", tmp_path / "data.parquet", "label", shuffle=False, block_rows=100),
              write_store(tmp_path / "parts.zarr", str(tmp_path / "parts.parquet"), "label", shuffle=False,
                          block_rows=100)]
    for store in stores:
        _same_blocks(store, ref)
        assert store.attrs["format_version"] == 4
        assert store.label_names.tolist() == ["sick", "well"] and store.label_values.tolist() == [0.0, 1.0]
        assert store.feature_names.tolist() == FEATURES
        assert store.classes.tolist() == ["sick", "well"]
    assert ref.attrs["format_version"] == 3 and ref.label_names is None and ref.feature_names is None
    assert stores[2].attrs["source"] == str(tmp_path / "data.parquet")
    # shuffled (out of core for dask input) and rewritten: the names go with the rows
    shuffled = write_store(tmp_path / "shuffled.zarr", dd.from_pandas(frame, npartitions=3), "label", block_rows=64)
    assert shuffled.label_names.tolist() == ["sick", "well"] and shuffled.feature_names.tolist() == FEATURES
    stored_X = np.vstack([b.toarray() for b, _ in _blocks(shuffled)])
    stored_y = shuffled.labels_of(np.concatenate([labels for _, labels in _blocks(shuffled)]))
    order = np.lexsort(stored_X.T[::-1])
    assert np.array_equal(stored_X[order], X[np.lexsort(X.T[::-1])])
    assert np.array_equal(stored_y[order], y[np.lexsort(X.T[::-1])])
    copy = daskdca.rewrite_store(shuffled, tmp_path / "copy.zarr", renumber_features=True)
    assert copy.label_names.tolist() == ["sick", "well"] and copy.feature_names.tolist() == FEATURES


def test_a_store_with_label_names_is_verified(frame, tmp_path):
    import zarr

    store = write_store(tmp_path / "s.zarr", frame, "label")
    group = zarr.open_group(str(tmp_path / "s.zarr"), mode="r+")
    meta = dict(group.attrs["daskdca"])
    group.attrs["daskdca"] = {**meta, "label_names": ["well", "sick"]}  # swapped: predictions would flip
    with pytest.raises(StoreError, match=r"label_names.*changed"):
        open_store(store.url)
    group.attrs["daskdca"] = meta
    assert open_store(store.url).label_names.tolist() == ["sick", "well"]


def test_prediction_on_a_store_checks_its_feature_names_as_a_frames(frame, tmp_path):
    import warnings

    named = write_store(tmp_path / "named.zarr", frame, "label", block_rows=128)
    renumbered = write_store(tmp_path / "renumbered.zarr", frame, "label", block_rows=128, renumber_features=True)
    assert named.feature_names.tolist() == FEATURES and renumbered.feature_permutation is not None
    X, _ = _arrays(frame)
    model = daskdca.fit(frame, y="label", loss="logistic", lam=1e-2)
    clf = daskdca.SDCAClassifier(loss="logistic").fit(frame[FEATURES], frame["label"])
    for fitted in (model, clf):
        expected = fitted.decision_function(frame[FEATURES])
        labels = fitted.predict(frame[FEATURES])
        accuracy = fitted.score(frame[FEATURES], frame["label"])
        with warnings.catch_warnings():
            warnings.simplefilter("error")  # the fit's names on the store: no feature-name warning
            for store in (named, renumbered, str(tmp_path / "named.zarr")):
                rows = open_store(store).row_permutation if isinstance(store, str) else store.row_permutation
                assert np.allclose(fitted.decision_function(store), expected[rows], rtol=1e-12, atol=1e-12)
                assert fitted.predict(store).tolist() == labels[rows].tolist()
                assert fitted.score(store) == pytest.approx(accuracy)
    # other names (or the same in another order) are refused as a DataFrame's columns are
    swapped = write_store(tmp_path / "swapped.zarr", frame[["dose", "age", "score", "label"]], "label")
    renamed = write_store(tmp_path / "renamed.zarr", frame.rename(columns={"dose": "Dose"}), "label")
    # the message says what differs
    for store, shown in ((swapped, r"the same names in another order \(first at position 0: 'dose', fitted 'age'\)"),
                         (renamed, r"not seen at fit: \['Dose'\]; seen at fit but missing: \['dose'\]")):
        for fitted in (model, clf):
            for method in ("predict", "decision_function", "score"):
                with pytest.raises(ValueError, match=r"The feature names should match those that were passed "
                                                     r"during fit: the feature names recorded by the store .*"
                                                     r" differ from the fitted feature names "
                                                     r"\(feature_names_in_\), " + shown):
                    getattr(fitted, method)(store)
    # a store without names (written from arrays) keeps scikit-learn's warning for arrays
    plain = write_store(tmp_path / "plain.zarr", X, (frame["label"] == "well").to_numpy(dtype=float))
    for fitted in (model, clf):
        with pytest.warns(UserWarning, match="X does not have valid feature names") as record:
            fitted.predict(plain)
        assert {r.filename for r in record} == {__file__}  # the user's line


def test_cli_converts_parquet_with_a_label_column(frame, tmp_path, capsys):
    frame.to_parquet(tmp_path / "data.parquet")
    out = tmp_path / "cli.zarr"
    assert main(["convert", str(tmp_path / "data.parquet"), str(out), "--label-column", "label",
                 "--block-rows", "100", "--no-shuffle"]) == 0
    assert "300 rows x 3 features" in capsys.readouterr().out
    ref = write_store(tmp_path / "ref.zarr", frame, "label", shuffle=False, block_rows=100)
    store = open_store(out)
    _same_blocks(store, ref)
    assert store.label_names.tolist() == ["sick", "well"] and store.feature_names.tolist() == FEATURES
    assert main(["convert", str(tmp_path / "data.parquet"), str(tmp_path / "x.zarr")]) == 2
    assert "--label-column NAME" in capsys.readouterr().err
    assert main(["convert", str(tmp_path / "data.parquet"), str(tmp_path / "x.zarr"), "--label-column", "nope"]) == 2
    assert "has no column 'nope'" in capsys.readouterr().err
    # the svmlight reader's options are refused, not ignored
    for option in (["--n-features", "3"], ["--zero-based", "true"], ["--chunk-mb", "1"]):
        assert main(["convert", str(tmp_path / "data.parquet"), str(tmp_path / "x.zarr"), "--label-column", "label",
                     *option]) == 2
        assert f"{option[0]} applies to svmlight input only" in capsys.readouterr().err
    # a store of string labels cannot become a saved model, which holds numbers: said before fitting
    assert main(["fit", str(out), "--quiet"]) == 2
    assert "not numbers" in capsys.readouterr().err


# ----------------------------------------------------------------- dask input on a cluster


def test_string_labels_on_a_dask_array_fit_like_numpy(frame, client, tmp_path):
    X, y = _arrays(frame)
    ref = daskdca.fit(X, y, loss="logistic", lam=1e-2, tol=1e-12)
    Xd = da.from_array(X, chunks=(100, 3))
    for labels in (da.from_array(y.astype(object), chunks=100), da.from_array(y.astype(str), chunks=70), y):
        model = daskdca.fit(Xd, labels, loss="logistic", lam=1e-2, tol=1e-12, client=client)
        assert model.classes_.tolist() == ["sick", "well"]
        np.testing.assert_allclose(model.coef_, ref.coef_, rtol=0, atol=1e-10)
        assert np.array_equal(model.predict(X), ref.predict(X))
    store = write_store(tmp_path / "a.zarr", Xd, da.from_array(y.astype(object), chunks=100), shuffle=False)
    assert store.label_names.tolist() == ["sick", "well"]
    fitted = daskdca.fit(store, loss="logistic", lam=1e-2, tol=1e-12, client=client)
    assert fitted.classes_.tolist() == ["sick", "well"]
    np.testing.assert_allclose(fitted.coef_, ref.coef_, rtol=0, atol=1e-10)
    clf = daskdca.SDCAClassifier(loss="logistic", fit_intercept=False).fit(X, y)
    assert clf.score(store) == clf.score(X, y)  # the store's codes scored as the names


def test_dask_input_messages_name_x_and_y_not_the_fits_staging_store(frame, client):
    """Dask input is staged into a store of the fit's own, which the user never sees: unknown chunk sizes,
    too few chunks for ``n_partitions``, one class in y and partitions sorted by label are told in terms of X
    and y, with their fixes, and the route's reason counts the partitions that ran.  They crashed on a NaN
    chunk size or named the temporary store (and its ``block_rows`` or ``rewrite_store`` as the fix)."""
    X, y = _arrays(frame)
    unknown = dd.from_pandas(frame[FEATURES], npartitions=3).to_dask_array()
    with pytest.raises(ValueError, match=r"known chunk sizes; call X\.compute_chunk_sizes\(\)"):
        daskdca.fit(unknown, y, lam=1e-2, client=client)
    Xd = da.from_array(X, chunks=(100, 3))
    with pytest.raises(ValueError, match=r"X has only 3 row chunks.*X\.rechunk\(\{0: 60\}\)"):
        daskdca.fit(Xd, y, lam=1e-2, n_partitions=5, client=client)
    with pytest.raises(ValueError, match=r"needs 2 to 64 label values \(classes\), but y has 1") as info:
        daskdca.fit(Xd, np.full(300, "sick"), lam=1e-2, client=client)
    assert "daskdca-data" not in str(info.value)
    order = np.argsort(y, kind="stable")  # sorted by label: the partitions' fractions are 0 and 1
    with pytest.warns(UserWarning, match=r"partitions of X \(runs of its row chunks.*Shuffle the rows") as record:
        daskdca.fit(da.from_array(X[order], chunks=(150, 3)), y[order], lam=1e-2, n_partitions=2, client=client,
                    max_rounds=2)
    assert not any("daskdca-data" in str(r.message) for r in record)
    # one chunk on two workers: one partition ran, and the route says so (it said "2 partition(s)" only)
    one = daskdca.fit(da.from_array(X, chunks=(300, 3)), y, lam=1e-2, in_memory=False, client=client)
    assert one.route_.n_partitions == 1 and one.route_.reason.endswith("1 ran, as X has 1 row chunk(s)")


def test_shuffled_rows_in_small_partitions_do_not_warn(frame, client):
    """Labels in a random order spread across 3 partitions of 100 rows by chance only: no warning (the spread of
    0.1 alone warned on random rows)."""
    X, y = _arrays(frame)
    import warnings

    from sklearn.exceptions import ConvergenceWarning

    with warnings.catch_warnings():
        warnings.simplefilter("error", UserWarning)
        warnings.simplefilter("ignore", ConvergenceWarning)  # one round only
        for seed in range(5):
            order = np.random.default_rng(seed).permutation(300)
            daskdca.fit(da.from_array(X[order], chunks=(100, 3)), y[order], loss="logistic", lam=1e-2,
                        n_partitions=3, client=client, max_rounds=1, tol=1e-1)


def test_bool_and_three_class_labels_on_dask_input(frame, client):
    X, y = _arrays(frame)
    flags = y == "sick"
    ref = daskdca.fit(X, flags, loss="logistic", lam=1e-2, tol=1e-12)
    model = daskdca.fit(da.from_array(X, chunks=(100, 3)), da.from_array(flags, chunks=100), loss="logistic",
                        lam=1e-2, tol=1e-12, client=client)
    assert model.classes_.tolist() == [False, True] and model.classes_.dtype == bool
    np.testing.assert_allclose(model.coef_, ref.coef_, rtol=0, atol=1e-10)
    three = np.where(frame["score"] > 0.7, "high", y)
    ref3 = daskdca.fit(X, three, lam=1e-2, tol=1e-10)
    model3 = daskdca.fit(dd.from_pandas(frame.assign(label=three), npartitions=3), "label", lam=1e-2, tol=1e-10,
                         client=client, class_weight=None)
    assert model3.classes_.tolist() == ["high", "sick", "well"]
    np.testing.assert_allclose(model3.coef_, ref3.coef_, rtol=0, atol=1e-8)


def test_fit_on_a_dask_frame_keeps_names_and_predicts_lazily(frame, client):
    X, y = _arrays(frame)
    ref = daskdca.fit(X, y, loss="logistic", lam=1e-2, tol=1e-12)
    ddf = dd.from_pandas(frame, npartitions=3)
    model = daskdca.fit(ddf, y="label", loss="logistic", lam=1e-2, tol=1e-12, client=client)
    assert model.feature_names_in_.tolist() == FEATURES and model.classes_.tolist() == ["sick", "well"]
    np.testing.assert_allclose(model.coef_, ref.coef_, rtol=0, atol=1e-10)
    features = ddf[FEATURES]
    labels = model.predict(features)
    assert isinstance(labels, dd.Series) and labels.npartitions == 3 and labels.divisions == ddf.divisions
    assert np.array_equal(labels.compute().to_numpy(), model.predict(X))
    scores = model.decision_function(features)
    assert isinstance(scores, dd.Series)
    assert np.array_equal(scores.compute().to_numpy(), model.decision_function(X))


def test_fit_reads_a_parquet_path_with_its_label_column(frame, client, tmp_path):
    """daskdca.fit("x.parquet", y="label"): the file is read lazily as a dask DataFrame and fitted as one (the
    same model as the frame's); a Parquet folder too; without y the message names the label column."""
    ddf = dd.from_pandas(frame, npartitions=3)
    ref = daskdca.fit(ddf, y="label", loss="logistic", lam=1e-2, tol=1e-12, client=client)
    path = tmp_path / "x.parquet"
    frame.to_parquet(path)
    folder = tmp_path / "dataset"
    ddf.to_parquet(folder)
    for source in (path, str(folder)):
        model = daskdca.fit(source, y="label", loss="logistic", lam=1e-2, tol=1e-12, client=client)
        assert model.feature_names_in_.tolist() == FEATURES and model.classes_.tolist() == ["sick", "well"]
        np.testing.assert_allclose(model.coef_, ref.coef_, rtol=0, atol=1e-10)
    with pytest.raises(ValueError, match=r"y is missing: X is a dask DataFrame .* y='label'"):
        daskdca.fit(path, loss="logistic", lam=1e-2, client=client)


def test_sample_weight_with_dask_input_is_the_weighted_optimum(frame, client, tmp_path):
    """sample_weight (in memory or a dask array) with a dask array or DataFrame X: the store carries the weights
    and the fit reaches the in-memory weighted optimum; shuffled writes refuse them with the fix."""
    import dask.array as da

    X, y = _arrays(frame)
    weight = np.random.default_rng(3).uniform(0.2, 3.0, X.shape[0])
    ref = daskdca.fit(X, y, loss="logistic", lam=1e-2, tol=1e-12, sample_weight=weight)
    unweighted = daskdca.fit(X, y, loss="logistic", lam=1e-2, tol=1e-12)
    assert abs(ref.primal_ - unweighted.primal_) > 1e-3  # the weights matter here
    Xd = da.from_array(X, chunks=(100, X.shape[1]))
    ddf = dd.from_pandas(frame, npartitions=3)
    for data, labels, given in ((Xd, y, weight), (Xd, y, da.from_array(weight, chunks=100)),
                                (ddf, "label", weight)):
        model = daskdca.fit(data, labels, loss="logistic", lam=1e-2, tol=1e-12, client=client, sample_weight=given)
        np.testing.assert_allclose(model.coef_, ref.coef_, rtol=0, atol=1e-8)
        assert model.primal_ == pytest.approx(ref.primal_, rel=1e-10)
    store = write_store(tmp_path / "weighted.zarr", Xd, y, sample_weight=weight, shuffle=False)
    assert store.weighted and np.array_equal(np.asarray(store.group["sample_weight"][:]), weight)
    with pytest.raises(ValueError, match="shuffle=False and renumber_features=False"):
        write_store(tmp_path / "shuffled.zarr", Xd, y, sample_weight=weight, shuffle=True)
    with pytest.raises(ValueError, match="sample_weight must be >= 0"):
        daskdca.fit(Xd, y, loss="logistic", lam=1e-2, client=client, sample_weight=-weight)


def test_estimator_on_a_dask_frame_predicts_lazily_on_its_partitions(frame, client):
    X, y = _arrays(frame)
    ref = daskdca.SDCAClassifier(loss="logistic").fit(X, y)
    ddf = dd.from_pandas(frame, npartitions=4)
    clf = daskdca.SDCAClassifier(loss="logistic").fit(ddf[FEATURES], ddf["label"])
    assert np.array_equal(clf.coef_, ref.coef_) and clf.feature_names_in_.tolist() == FEATURES
    for method, kind in (("decision_function", dd.Series), ("predict_proba", dd.DataFrame)):
        lazy = getattr(clf, method)(ddf[FEATURES])
        assert isinstance(lazy, kind) and lazy.npartitions == 4 and lazy.divisions == ddf.divisions
        # BLAS sums a dense block of rows in an order that may depend on the block's height
        np.testing.assert_allclose(lazy.compute().to_numpy(), getattr(ref, method)(X), rtol=1e-13, atol=1e-13)
    labels = clf.predict(ddf[FEATURES])
    assert isinstance(labels, dd.Series) and labels.divisions == ddf.divisions
    assert np.array_equal(labels.compute().to_numpy(), ref.predict(X))
    assert clf.predict_proba(ddf[FEATURES]).columns.tolist() == ["sick", "well"]
    assert clf.score(ddf[FEATURES], ddf["label"]) == ref.score(X, y)
    with pytest.raises(ValueError, match="feature names should match"):
        clf.predict(ddf[["dose", "age", "score"]])
    # a dask array still gives a lazy dask array with X's chunks
    lazy = clf.predict(da.from_array(X, chunks=(100, 3)))
    assert isinstance(lazy, da.Array) and lazy.chunks == ((100, 100, 100),)


def test_bool_label_column_is_stored_as_json_bools(frame, tmp_path):
    data = frame[FEATURES].assign(flag=frame["label"] == "sick")
    store = write_store(tmp_path / "s.zarr", data, "flag", shuffle=False)
    doc = json.loads((tmp_path / "s.zarr" / "zarr.json").read_text())["attributes"]["daskdca"]
    assert doc["label_names"] == [False, True] and doc["feature_names"] == FEATURES
    assert store.label_names.dtype == bool
    stored = np.concatenate([labels for _, labels in _blocks(store)])
    assert np.array_equal(store.labels_of(stored), data["flag"].to_numpy())
