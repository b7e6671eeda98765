"""Checkpoints: the fields of every state written as zarr arrays, read back and checked.

The tasks that write and read a state (:func:`_save_state`,
:func:`_load_state`, generically over the state's NamedTuple fields), the
checks of a resumed state (:func:`_check_resumed`,
:func:`_check_resumed_local`), the check that every worker can use a local
checkpoint folder (:func:`_check_workers_share`, :func:`_probe_path`), the
checkpoint's metadata (:func:`_checkpoint_meta`,
:func:`_prepare_checkpoint`) and :data:`CHECKPOINT_FORMAT` and
:data:`DEFAULT_CHECKPOINT_EVERY`.
"""

from __future__ import annotations

import contextlib
import importlib
import os
import posixpath
import re
import shutil
import uuid

import numpy as np
import zarr

from daskdca.partitions import objective_sums_part

# Chains restart from a checkpoint this often unless told otherwise: between
# restarts the scheduler keeps every round's task states (docs/references.md, note N9).
DEFAULT_CHECKPOINT_EVERY = 10
# 3: a one-vs-rest fit keeps its states wrapped with the problems that stopped (daskdca.methods.multiclass)
CHECKPOINT_FORMAT = 3


# --- checkpoints: the fields of every state, generically --------------------

def _class_path(obj):
    cls = type(obj)
    return f"{cls.__module__}:{cls.__qualname__}"


def _class_from_path(path):
    module, _, name = path.partition(":")
    obj = importlib.import_module(module)
    for part in name.split("."):
        obj = getattr(obj, part)
    return obj


def _save_state(out, url, prefix):
    """Task: write each field of the NamedTuple state of ``out`` as a zarr array; returns its class path."""
    state = out[0]
    _write_fields(zarr.open_group(url, mode="a"), prefix, state)
    return _class_path(state)


def _is_state(value):
    """Whether ``value`` is a NamedTuple state (a field may hold one: a one-vs-rest plan's wrapped states)."""
    return isinstance(value, tuple) and hasattr(value, "_fields")


def _write_fields(group, prefix, state):
    """Each field of ``state`` as the array ``{prefix}_{field}``; a field that is itself a NamedTuple state
    gets an empty array of that name carrying its class path, and its fields under ``{prefix}_{field}_``."""
    for field in state._fields:
        value = getattr(state, field)
        if _is_state(value):
            marker = group.create_array(f"{prefix}_{field}", shape=(0,), dtype=np.int8, overwrite=True)
            marker.attrs["daskdca_class"] = _class_path(value)
            _write_fields(group, f"{prefix}_{field}", value)
            continue
        values = np.asarray(value)
        scalar = values.ndim == 0
        if scalar:  # a 0-d field (e.g. a step size) is stored as one element
            values = values.reshape(1)
        arr = group.create_array(f"{prefix}_{field}", shape=values.shape, dtype=values.dtype, overwrite=True,
                                 chunks=tuple(max(1, min(s, 2**20)) for s in values.shape))
        arr[...] = values
        arr.attrs["daskdca_scalar"] = scalar


def _load_state(url, prefix, class_path):
    """Task: the state written by :func:`_save_state`, with the shapes it was written with."""
    return _read_fields(zarr.open_group(url, mode="r"), prefix, _class_from_path(class_path), url)


def _read_fields(group, prefix, cls, url):
    names = [f"{prefix}_{f}" for f in cls._fields]
    missing = [name for name in names if name not in group]
    if missing:
        raise ValueError(f"checkpoint {url!r} is missing the arrays {missing}; it is damaged. "
                         "Start a new fit (resume=False) or use another checkpoint path.")
    fields = []
    for name in names:
        arr = group[name]
        nested = arr.attrs.get("daskdca_class")
        if nested is not None:  # a NamedTuple field (_write_fields)
            fields.append(_read_fields(group, name, _class_from_path(nested), url))
            continue
        values = arr[...]
        fields.append(values.reshape(()) if arr.attrs.get("daskdca_scalar", False) else values)
    return cls(*fields)


def _check_resumed(out, fresh, where):
    """Task: a loaded state (in its output pair) against a freshly initialised one of the same plan; returns ``out``.

    Every float field must be finite, and one that starts with values (duals,
    ``w``, row norms) keeps its initial shape; a field that starts empty (a
    round's pending steps) and an integer or boolean field (an active set, a
    batch) keep their rank.  A field that holds a state is checked the same way.
    """
    _check_fields(out[0], fresh, where)
    return out


def _check_fields(state, fresh, where):
    if type(state) is not type(fresh):
        raise ValueError(f"{where} holds a {type(state).__name__}, this fit's method keeps a "
                         f"{type(fresh).__name__}; the checkpoint is damaged. Start a new fit (resume=False).")
    for field, value, init in zip(state._fields, state, fresh):
        if _is_state(init):
            _check_fields(value, init, f"{where}, field {field!r}")
            continue
        value, init = np.asarray(value), np.asarray(init)
        bad = value.ndim != init.ndim
        if value.dtype.kind == "f":
            bad = bad or (init.size and value.shape != init.shape) or not np.all(np.isfinite(value))
        if bad or value.dtype.kind != init.dtype.kind:
            raise ValueError(f"{where}: field {field!r} has shape {value.shape} and dtype {value.dtype} "
                             f"(the method starts it as {init.shape}, {init.dtype}, finite); the checkpoint is "
                             "damaged. Start a new fit (resume=False) or use another checkpoint path.")


def _check_resumed_local(plan, part, L_out, G_out, ctx, info, where):
    """Task: the loaded local state, checked like :func:`_check_resumed` and its dual point in the
    loss's dual domain (a finite conjugate), so the certificate of the resumed fit means something."""
    L_out = _check_resumed(L_out, plan.init_local(part, ctx), where)
    alpha = plan.dual_point(part, L_out[0], G_out[0])
    conj_sum = objective_sums_part(part, alpha, np.zeros(np.shape(alpha)[:-1] + (info.d,)), info.loss)[..., 1]
    if not np.all(np.isfinite(conj_sum)):
        raise ValueError(f"{where}: the dual variables lie outside the dual domain of the {info.loss.name} loss "
                         "(an infinite conjugate); the checkpoint is damaged. Start a new fit (resume=False).")
    return L_out


def _resumable_meta(url, signature):
    """The metadata of the last complete checkpoint under ``url``, checked to belong to the fit of
    ``signature`` and to this daskdca's format (a ValueError names what differs and the fix)."""
    meta = _checkpoint_meta(url)
    if meta is None:
        raise ValueError(f"resume=True but {url!r} holds no complete daskdca checkpoint; "
                         "run once with checkpoint=PATH first.")
    if meta.get("format") != CHECKPOINT_FORMAT:
        raise ValueError(f"checkpoint {url!r} has format {meta.get('format')!r}, this daskdca writes "
                         f"{CHECKPOINT_FORMAT}; start a new fit (resume=False).")
    if meta["signature"] != signature:
        differ = sorted(k for k in set(meta["signature"]) | set(signature)
                        if meta["signature"].get(k) != signature.get(k))
        raise ValueError(f"checkpoint {url!r} belongs to a different fit (these differ: {differ}); "
                         "use the same data, loss, lam, solver and random_state, or a new path.")
    return meta


def _history_of(meta):
    """The history records a checkpoint holds (a one-vs-rest fit's lists, one value per problem, as arrays)."""
    from daskdca.driver import HistoryRecord

    return [HistoryRecord(*(np.asarray(v) if isinstance(v, list) else v for v in rec)) for rec in meta["history"]]


def _mark_complete(url, *, slot, round_index, n_epochs, signature, local_class, global_class, history):
    """Write the metadata that makes ``slot`` the last complete checkpoint (after every state is written)."""
    zarr.open_group(url, mode="a").attrs["daskdca_checkpoint"] = {
        "format": CHECKPOINT_FORMAT, "complete": True, "slot": slot, "round": round_index, "n_epochs": n_epochs,
        "signature": signature, "local_class": local_class, "global_class": global_class,
        "history": [[np.asarray(value).tolist() for value in rec] for rec in history]}


def _probe_path(url, token):
    """Worker task: read the driver's probe file under ``url`` and write one of its own; None or the error."""
    try:
        with open(os.path.join(url, f".daskdca-probe-{token}")) as f:
            if f.read() != token:
                return f"{url!r} holds a different probe file here: not the folder this process writes"
        mine = os.path.join(url, f".daskdca-probe-{token}-{uuid.uuid4().hex[:8]}")
        with open(mine, "w") as f:
            f.write(token)
        os.remove(mine)
    except OSError as exc:
        return f"{type(exc).__name__}: {exc}"
    return None


def _check_workers_share(client, url):
    """Every worker can read what this process writes under the local checkpoint folder ``url``, and write there.

    The workers write the checkpoint and read it back, so a folder they cannot
    see would fail only mid-fit.
    """
    if "://" in str(url) or not os.path.isdir(url):
        return  # an fsspec URL is shared by definition; a missing folder fails in resume's own check
    token = uuid.uuid4().hex
    probe = os.path.join(url, f".daskdca-probe-{token}")
    try:
        with open(probe, "w") as f:
            f.write(token)
    except OSError as exc:
        raise ValueError(f"checkpoint={url!r} cannot be written by this process ({type(exc).__name__}: "
                         f"{exc.strerror or exc}); give a folder this process and every worker can write.") from None
    try:
        answers = client.run(_probe_path, url, token)
    finally:
        os.remove(probe)
    failed = {worker: error for worker, error in answers.items() if error}
    if failed:
        raise ValueError(f"checkpoint={url!r}, but {len(failed)} of {len(answers)} workers cannot use it "
                         f"({'; '.join(f'{w}: {e}' for w, e in sorted(failed.items()))}); give a path on a file "
                         "system shared by this process and every worker (or no checkpoint: the round state "
                         "then stays in Dask).")


def _checkpoint_meta(url):
    with contextlib.suppress(Exception):
        meta = zarr.open_group(url, mode="r").attrs.asdict().get("daskdca_checkpoint")
        if isinstance(meta, dict) and meta.get("complete"):
            return meta
    return None


# What a checkpoint folder may hold: the group's zarr.json, the state arrays that _save_state writes
# ("slot0_global_w", "slot1_local3_alpha"), and the probe files of _check_workers_share (a killed driver
# may leave one).  Anything else was put there by someone else and is never removed.
_OWN_ENTRY = re.compile(r"^(zarr\.json|slot[01]_(global|local[0-9]+)_[A-Za-z_][A-Za-z0-9_]*"
                        r"|\.daskdca-probe-[0-9a-f]{32}(-[0-9a-f]{8})?)$")
#: the root attribute a checkpoint folder carries from its creation, before its first complete checkpoint
FOLDER_MARK = "daskdca_checkpoint_folder"


def _is_checkpoint_folder(url):
    """Whether ``url`` holds a daskdca checkpoint group (complete or not)."""
    with contextlib.suppress(Exception):
        attrs = zarr.open_group(url, mode="r").attrs.asdict()
        return FOLDER_MARK in attrs or isinstance(attrs.get("daskdca_checkpoint"), dict)
    return False


def _entries(url):
    """The names directly under a checkpoint location (local folder or fsspec URL), or None if it does not exist."""
    if "://" not in str(url):
        if not os.path.exists(url):
            return None
        if not os.path.isdir(url):
            raise ValueError(f"checkpoint={url!r} is a file; give a directory path for the checkpoint.")
        return sorted(os.listdir(url))
    import fsspec

    fs, path = fsspec.core.url_to_fs(url)
    if not fs.exists(path):
        return None
    if not fs.isdir(path):
        raise ValueError(f"checkpoint={url!r} is a file; give a directory path for the checkpoint.")
    return sorted(posixpath.basename(p.rstrip("/")) for p in fs.ls(path, detail=False))


def _shown(names, limit=5):
    more = f" and {len(names) - limit} more" if len(names) > limit else ""
    return ", ".join(repr(n) for n in names[:limit]) + more


def _refuse_inside_a_store(url):
    """A checkpoint is never written inside a daskdca store or another checkpoint (a local path): replacing or
    removing that one would take the checkpoint with it, and a store holds only its own arrays."""
    if "://" in str(url):
        return
    from daskdca.store.publish import _local_enclosing

    found = _local_enclosing(os.path.abspath(os.fspath(url)))
    if found is not None:
        outer, kind = found
        what = "daskdca store" if kind == "store" else "daskdca checkpoint folder"
        raise ValueError(f"checkpoint={os.fspath(url)!r} lies inside the {what} {outer!r}; daskdca never writes a "
                         "checkpoint there. Give a folder outside it.")


def _prepare_checkpoint(url, *, overwrite=False, resume=False):
    """Check the checkpoint location before a fit writes there; returns the entries a fresh fit will replace.

    A checkpoint folder holds only what daskdca wrote there.  A new or empty
    location is used as it is.  A folder that holds anything else is refused
    (nothing in it is touched), and so is an old daskdca checkpoint unless the
    caller asked to continue it (``resume=True``, checked against the fit
    later) or to replace it (``overwrite=True``: only daskdca's own entries
    are removed, by :func:`_clear_checkpoint`).
    """
    _refuse_inside_a_store(url)
    names = _entries(url)
    if not names:
        return []
    foreign = [n for n in names if not _OWN_ENTRY.match(n)]
    if not _is_checkpoint_folder(url):
        raise ValueError(
            f"checkpoint={url!r} is a folder that holds other files ({_shown(names)}), not a daskdca checkpoint; "
            "daskdca will not write into it. Give a new or empty folder.")
    if foreign:
        raise ValueError(
            f"checkpoint={url!r} holds a daskdca checkpoint and also {len(foreign)} entr"
            f"{'y' if len(foreign) == 1 else 'ies'} daskdca did not write ({_shown(foreign)}); daskdca will not "
            "write into or replace it. Move those out, or give a new folder.")
    if resume:
        return []
    if not overwrite:
        meta = _checkpoint_meta(url)
        held = f"round {meta['round']}" if meta else "no complete round yet"
        raise ValueError(
            f"checkpoint={url!r} already holds a daskdca checkpoint ({held}); pass resume=True to continue that "
            "fit, overwrite=True to replace it, or give a new folder.")
    return names


def _clear_checkpoint(url, names):
    """Remove ``names`` (daskdca's own entries, from :func:`_prepare_checkpoint`) and start an empty checkpoint
    group marked as one; anything else found there now is left alone and refused."""
    if "://" not in str(url):
        os.makedirs(url, exist_ok=True)
        for name in names:
            path = os.path.join(url, name)
            if os.path.isdir(path) and not os.path.islink(path):
                shutil.rmtree(path)
            elif os.path.lexists(path):
                os.remove(path)
    else:
        import fsspec

        fs, path = fsspec.core.url_to_fs(url)
        for name in names:
            target = posixpath.join(path, name)
            if fs.exists(target):
                fs.rm(target, recursive=True)
    left = _entries(url) or []
    if left:
        raise ValueError(f"checkpoint={url!r} gained entries daskdca did not write ({_shown(left)}) while the fit "
                         "started; daskdca will not write into it. Move those out, or give a new folder.")
    group = zarr.open_group(url, mode="a")
    group.attrs[FOLDER_MARK] = CHECKPOINT_FORMAT
