"""Publishing a store atomically: the checked destination of a write (:class:`_Destination`), its
temporary sibling folder with a locked marker file, the cleanup of folders left by killed writes, and the
final ``renameat2`` rename or exchange (on object stores: the write in place, committed by the
``complete`` attribute)."""

from __future__ import annotations

import contextlib
import ctypes
import errno
import json
import os
import shutil
import socket
import time
import uuid

from daskdca.store.format import _TMP_SUFFIX, TMP_MARKER, StoreError, _check_bool
from daskdca.store.reader import open_store

try:  # POSIX advisory locks: a temporary folder's writer holds one while it lives
    import fcntl
except ImportError:  # pragma: no cover - Windows
    fcntl = None

_AT_FDCWD = -100
_RENAME_NOREPLACE = 1
_RENAME_EXCHANGE = 2


def _load_renameat2():
    try:
        fn = ctypes.CDLL(None, use_errno=True).renameat2
    except (OSError, AttributeError):  # pragma: no cover - not glibc >= 2.28
        return None
    fn.argtypes = [ctypes.c_int, ctypes.c_char_p, ctypes.c_int, ctypes.c_char_p, ctypes.c_uint]
    fn.restype = ctypes.c_int
    return fn


_RENAMEAT2 = _load_renameat2()


def _renameat2(src, dst, flags):
    """Linux ``renameat2``; False where the system or file system does not support the flag."""
    if _RENAMEAT2 is None:
        return False
    if _RENAMEAT2(_AT_FDCWD, os.fsencode(src), _AT_FDCWD, os.fsencode(dst), flags) == 0:
        return True
    err = ctypes.get_errno()
    if err in (errno.ENOSYS, errno.EINVAL, errno.EOPNOTSUPP):
        return False
    raise OSError(err, os.strerror(err), src, None, dst)


def _local_path(url):
    """The local file-system path of ``url``, or None for another fsspec protocol."""
    if url.startswith("file://"):
        return url[len("file://"):]
    if "://" in url or "::" in url:
        return None
    return url


# Root attributes of a daskdca checkpoint folder (daskdca/engine/checkpoint.py): the folder mark written
# at its creation and the record of its complete slot.
_CHECKPOINT_KEYS = ("daskdca_checkpoint", "daskdca_checkpoint_folder")


def _zarr_json_kind(text):
    """'store' (a daskdca store, complete or not), 'checkpoint' (a daskdca checkpoint folder), 'array' (a
    zarr array), 'group' (another zarr group) or None, from the text of a ``zarr.json``."""
    try:
        doc = json.loads(text)
    except (ValueError, UnicodeDecodeError):
        return None
    if not isinstance(doc, dict):
        return None
    attrs = doc.get("attributes")
    if isinstance(attrs, dict):
        if any(key in attrs for key in _CHECKPOINT_KEYS):
            return "checkpoint"
        meta = attrs.get("daskdca")
        if isinstance(meta, dict) and "format_version" in meta:
            return "store"
    return "array" if doc.get("node_type") == "array" else "group"


def _is_daskdca_store_json(text):
    return _zarr_json_kind(text) == "store"


def _local_kind(folder):
    """What the ``zarr.json`` in local ``folder`` says it is (see :func:`_zarr_json_kind`), None without one."""
    try:
        with open(os.path.join(folder, "zarr.json"), "rb") as f:
            return _zarr_json_kind(f.read())
    except OSError:
        return None


def _local_state(path):
    """'missing', 'empty', 'store' (a daskdca store, complete or not), 'checkpoint', 'file' or 'other'."""
    if not os.path.lexists(path):
        return "missing"
    if not os.path.isdir(path):
        return "file"
    if not os.listdir(path):
        return "empty"
    kind = _local_kind(path)
    return kind if kind in ("store", "checkpoint") else "other"


_NESTING_WORDS = {"store": "daskdca store", "checkpoint": "daskdca checkpoint folder"}


def _nesting_error(url, outer, kind):
    return ValueError(f"the output {url!r} lies inside the {_NESTING_WORDS[kind]} {outer!r}; daskdca never writes "
                      f"a store inside a store or a checkpoint (replacing or removing {outer!r} would take the "
                      "new store with it, and the outer one would hold files it does not list). Write the store "
                      "to a path outside it.")


def _local_enclosing(target):
    """The nearest folder above the (absolute) ``target`` that is a daskdca store or checkpoint: (path, kind) or
    None.  Symbolic links are resolved first."""
    folder = os.path.dirname(os.path.realpath(target))
    while True:
        kind = _local_kind(folder)
        if kind in _NESTING_WORDS:
            return folder, kind
        parent = os.path.dirname(folder)
        if parent == folder:
            return None
        folder = parent


def _local_nested(store):
    """The first daskdca store or checkpoint strictly below the store folder ``store``: (path, kind) or None.

    The chunk folders (``c``) of the store's own zarr arrays are not walked.
    """
    for folder, dirs, _ in os.walk(store):
        if folder != store:
            kind = _local_kind(folder)
            if kind in _NESTING_WORDS:
                return folder, kind
            if kind == "array" and "c" in dirs:
                dirs.remove("c")
        dirs.sort()
    return None


def _foreign_entries(entries, array_entries):
    """The entries of a store folder that a daskdca store does not hold: anything but its ``zarr.json`` and
    its arrays' folders, and in those anything but their ``zarr.json`` and chunk folder ``c`` (not walked).
    Replacing the store would delete them with it.

    ``entries`` are the folder's ``(name, is_dir, zarr_kind)`` (``zarr_kind`` of a folder's ``zarr.json``,
    :func:`_zarr_json_kind`), ``array_entries(name)`` an array folder's ``(name, is_dir)``.
    """
    foreign = []
    for name, is_dir, kind in entries:
        if name == "zarr.json" and not is_dir:
            continue
        if is_dir and kind == "array":
            foreign.extend(f"{name}/{entry}" for entry, entry_is_dir in array_entries(name)
                           if not (entry == "zarr.json" or (entry == "c" and entry_is_dir)))
            continue
        foreign.append(name)
    return foreign


def _local_foreign(store):
    """:func:`_foreign_entries` of the local store folder ``store`` (a linked folder is foreign)."""
    def is_dir(path):
        return os.path.isdir(path) and not os.path.islink(path)

    entries = [(name, is_dir(os.path.join(store, name)),
                _local_kind(os.path.join(store, name)) if is_dir(os.path.join(store, name)) else None)
               for name in sorted(os.listdir(store))]
    return _foreign_entries(entries, lambda name: [(entry, os.path.isdir(os.path.join(store, name, entry)))
                                                   for entry in sorted(os.listdir(os.path.join(store, name)))])


def _remote_enclosing(url, storage_options):
    """As :func:`_local_enclosing` for an fsspec URL: one read of ``zarr.json`` per folder above it."""
    import fsspec

    fs, path = fsspec.core.url_to_fs(url, **storage_options)
    parts = path.rstrip("/").split("/")
    for depth in range(len(parts) - 1, 0, -1):
        folder = "/".join(parts[:depth])
        if not folder:
            continue
        try:
            text = fs.cat_file(f"{folder}/zarr.json")
        except (FileNotFoundError, OSError, ValueError):
            continue
        kind = _zarr_json_kind(text)
        if kind in _NESTING_WORDS:
            return folder, kind
    return None


def _remote_state(url, storage_options):
    import fsspec

    fs, path = fsspec.core.url_to_fs(url, **storage_options)
    path = path.rstrip("/")
    try:
        if _is_daskdca_store_json(fs.cat_file(f"{path}/zarr.json")):
            return "store"
    except (FileNotFoundError, OSError):
        pass
    if fs.isfile(path):
        return "file"
    try:
        return "other" if fs.ls(path) else "missing"
    except FileNotFoundError:
        return "missing"


def _remote_foreign(url, storage_options):
    """:func:`_foreign_entries` of a store at an fsspec URL: one listing of the store and one of each array."""
    import fsspec

    fs, path = fsspec.core.url_to_fs(url, **storage_options)
    path = path.rstrip("/")

    def listing(folder):
        return [(entry["name"].rstrip("/").rsplit("/", 1)[-1], entry["type"] == "directory")
                for entry in sorted(fs.ls(folder, detail=True), key=lambda e: e["name"])]

    def kind(name):
        try:
            return _zarr_json_kind(fs.cat_file(f"{path}/{name}/zarr.json"))
        except (FileNotFoundError, OSError):
            return None

    entries = [(name, is_dir, kind(name) if is_dir else None) for name, is_dir in listing(path)]
    return _foreign_entries(entries, lambda name: listing(f"{path}/{name}"))


def _lock_nowait(fd):
    """Take the marker's exclusive lock without waiting: True if taken."""
    if fcntl is None:  # pragma: no cover - Windows: liveness from the pid only
        return None
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except BlockingIOError:
        return False
    except OSError:  # a file system without locks
        return None
    return True


def _pid_alive(pid):
    try:
        os.kill(int(pid), 0)
    except ProcessLookupError:
        return False
    except (PermissionError, ValueError, TypeError, OverflowError):
        return True
    return True


def _remove_marked(path):
    """Remove one of our temporary folders, its marker last (so a killed removal is found again)."""
    for entry in os.scandir(path):
        if entry.name == TMP_MARKER:
            continue
        if entry.is_dir(follow_symlinks=False):
            shutil.rmtree(entry.path, ignore_errors=True)
        else:
            with contextlib.suppress(FileNotFoundError):
                os.unlink(entry.path)
    with contextlib.suppress(FileNotFoundError):
        os.unlink(os.path.join(path, TMP_MARKER))
    with contextlib.suppress(OSError):
        os.rmdir(path)


def _clean_leftovers(target):
    """Remove temporary folders of killed writes to ``target``; returns their names.

    Only folders named ``<target name>.tmp-<16 hex>`` that hold our marker
    naming this target, whose writer is gone (its lock can be taken, or,
    without locks, its pid on this host has exited), are touched.  A store
    that a killed replacement had moved aside (``old`` inside the folder)
    goes back to ``target`` if nothing is there.
    """
    parent, name = os.path.split(target)
    removed = []
    try:
        entries = list(os.scandir(parent or "."))
    except OSError:
        return removed
    for entry in entries:
        if not (entry.name.startswith(name) and _TMP_SUFFIX.fullmatch(entry.name[len(name):])):
            continue
        if not entry.is_dir(follow_symlinks=False):
            continue
        try:
            fd = os.open(os.path.join(entry.path, TMP_MARKER), os.O_RDWR)
        except OSError:
            continue  # no marker: not ours
        try:
            try:
                info = json.loads(os.read(fd, 4096) or b"{}")
            except ValueError:
                continue
            if not isinstance(info, dict) or info.get("daskdca_temp") != 1 or info.get("target") != name:
                continue
            locked = _lock_nowait(fd)
            if locked is False:
                continue  # its writer is alive
            if locked is None and (info.get("host") != socket.gethostname() or _pid_alive(info.get("pid"))):
                continue
            old = os.path.join(entry.path, "old")
            if os.path.isdir(old) and not os.path.lexists(target):
                os.rename(old, target)  # a replacement killed between its two renames
            _remove_marked(entry.path)
            removed.append(entry.name)
        finally:
            os.close(fd)
    return removed


def _same_or_inside(a, b):
    """True if path ``a`` is ``b`` or lies inside it."""
    return a == b or a.startswith(b.rstrip(os.sep) + os.sep)


class _Destination:
    """Where a store is written and how it is published (see the module docstring).

    ``work_url`` is where the new store is built: ``<tmp>/store`` for a local
    target, the target itself for another fsspec URL.  ``scratch(name)``
    gives room for temporary stores (staging, shuffle buckets) removed at the
    end.  Nothing that this object did not create is ever removed.
    """

    def __init__(self, url, storage_options, *, overwrite, inputs=()):
        self.url = url
        self.storage_options = storage_options
        self.overwrite = _check_bool("overwrite", overwrite)
        self.local = _local_path(url)
        self.inputs = [os.fspath(p) for p in inputs if p is not None]
        self.tmp = None
        self._fd = None
        self._scratch = []
        self._wrote_in_place = False
        self._made = []  # parent folders this write created, outermost first
        self.writer_id = uuid.uuid4().hex

    # -- checks before anything is written
    def _check_inputs(self):
        for inp in self.inputs:
            inp_local = _local_path(inp)
            if self.local is not None and inp_local is not None:
                a, b = os.path.realpath(inp_local), os.path.realpath(self.local)
            else:
                a, b = inp.rstrip("/"), self.url.rstrip("/")
            if _same_or_inside(a, b):
                raise ValueError(f"the output {self.url!r} is or contains the input {inp!r}; a write there could "
                                 "destroy its own input. Write the store to another path.")
            if _same_or_inside(b, a):
                raise ValueError(f"the output {self.url!r} lies inside the input {inp!r}. Write the store to "
                                 "another path.")

    def _refuse(self, state, where):
        if state == "file":
            raise FileExistsError(f"{where!r} exists and is a file, not a daskdca store; daskdca will not "
                                  "replace it. Pick another path for the store.")
        if state == "other":
            raise FileExistsError(f"{where!r} exists and is not a daskdca store; daskdca never writes into "
                                  "other folders (nothing was changed). Pick another path, e.g. a new "
                                  "folder name ending in .zarr.")
        if state == "checkpoint":
            raise FileExistsError(f"{where!r} is a daskdca checkpoint folder, not a store; daskdca never writes "
                                  "a store into it (nothing was changed). Pick another path for the store.")
        if state == "store" and not self.overwrite:
            raise FileExistsError(f"{where!r} is an existing daskdca store; pass overwrite=True (CLI: "
                                  "--overwrite) to replace it, or pick another path.")

    def _check_nesting(self, state):
        """A store is never written inside a store or a checkpoint, nor around one (docs/reliability.md)."""
        if self.local is None:
            found = _remote_enclosing(self.url, self.storage_options)
            if found:
                raise _nesting_error(self.url, *found)
            return
        found = _local_enclosing(self.target)
        if found:
            raise _nesting_error(self.url, *found)
        if state == "store":  # the store being replaced: nothing of anyone else's may live inside it
            self._check_own_entries()

    def _check_own_entries(self):
        """The store being replaced holds nothing daskdca did not write: no store or checkpoint below it (local),
        no file or folder of anyone else's (replacing it deletes everything in it)."""
        if self.local is not None:
            nested = _local_nested(self.target)
            if nested:
                raise ValueError(f"the output {self.url!r} is a daskdca store that holds the "
                                 f"{_NESTING_WORDS[nested[1]]} {nested[0]!r}; replacing it would delete that "
                                 "too. Move it out first, or write the store to another path.")
            foreign = _local_foreign(self.target)
        else:
            foreign = _remote_foreign(self.url, self.storage_options)
        if foreign:
            more = f" and {len(foreign) - 5} more" if len(foreign) > 5 else ""
            raise ValueError(f"the output {self.url!r} is a daskdca store that also holds "
                             f"{', '.join(repr(n) for n in foreign[:5])}{more}, which daskdca did not write; "
                             "replacing the store would delete them. Move them out first, or write the store to "
                             "another path (nothing was changed).")

    def begin(self):
        """Check the target, clean leftovers of killed writes, create the temporary folder."""
        self._check_inputs()
        if self.local is None:
            self._check_nesting(None)
            state = _remote_state(self.url, self.storage_options)
            self._refuse(state, self.url)
            if state == "store":  # written over in place, and removed whole if the write fails
                self._check_own_entries()
            self.work_url = self.url
            return self
        target = os.path.abspath(self.local)
        self.target = target
        if os.path.islink(target):  # the rename would replace the link, not write where it points
            raise ValueError(f"the output {self.url!r} is a symbolic link (to {os.readlink(target)!r}); daskdca "
                             f"writes a store at a real path: give {os.path.realpath(target)!r} itself, or "
                             "another path (nothing was changed).")
        self._check_nesting(None)  # before anything, even the cleanup, happens inside a store or checkpoint
        if os.path.isdir(os.path.dirname(target)):
            # first: a store that a killed replacement moved aside goes back before the target is judged
            self.cleaned = _clean_leftovers(target)
        state = _local_state(target)
        self._refuse(state, self.url)
        self._check_nesting(state)
        self._make_parents(os.path.dirname(target))
        tmp = f"{target}.tmp-{uuid.uuid4().hex[:16]}"
        os.mkdir(tmp)
        self.tmp = tmp
        fd = os.open(os.path.join(tmp, TMP_MARKER), os.O_CREAT | os.O_EXCL | os.O_RDWR, 0o644)
        self._fd = fd
        _lock_nowait(fd)
        os.write(fd, json.dumps({"daskdca_temp": 1, "target": os.path.basename(target), "pid": os.getpid(),
                                 "host": socket.gethostname(), "started": time.time()}).encode())
        self.work_url = os.path.join(tmp, "store")
        return self

    def _make_parents(self, folder):
        """Create the missing folders of ``folder``, remembering them (a failed write removes them again)."""
        missing = []
        while folder and not os.path.isdir(folder):
            missing.append(folder)
            parent = os.path.dirname(folder)
            if parent == folder:
                break
            folder = parent
        for path in reversed(missing):
            os.makedirs(path, exist_ok=True)
            self._made.append(path)

    def scratch(self, name):
        """URL of a temporary location for ``name``, removed when the write ends."""
        if self.tmp is not None:
            return os.path.join(self.tmp, name)
        url = f"{self.url.rstrip('/')}.tmp-{uuid.uuid4().hex[:16]}"
        self._scratch.append(url)
        return url

    def note_in_place_write(self):
        self._wrote_in_place = self.local is None

    def check_before_commit(self, group):
        """Object stores: the attributes still name this writer (else another one started)."""
        if self.local is not None:
            return
        current = group.attrs.asdict().get("daskdca", {})
        if current.get("writer") != self.writer_id:
            raise StoreError(f"another writer started writing {self.url!r} while this one ran; this write is "
                             "abandoned. Write again, one writer per path.")

    def publish(self, checksums):
        """Move the finished store to the target (local) and check what is there now."""
        if self.local is not None:
            self._publish_local()
        store = open_store(self.url, self.storage_options)
        if list(store._meta.block_checksums) != list(checksums):
            raise StoreError(f"another writer replaced {self.url!r} at the same time; the store there now is "
                             "complete but holds the other writer's data.")
        self.close()
        return store

    def _publish_local(self):
        src, target = self.work_url, self.target
        state = _local_state(target)
        if state == "store" and self.overwrite:
            self._check_own_entries()  # again: something may have been put there while this write ran
            if not _renameat2(src, target, _RENAME_EXCHANGE):
                aside = os.path.join(self.tmp, "old")
                os.rename(target, aside)
                try:
                    os.rename(src, target)
                except BaseException:
                    os.rename(aside, target)
                    raise
            return  # the old store is inside self.tmp now and goes with it
        if state in ("file", "other", "store"):
            raise FileExistsError(f"{self.url!r} was created by another writer while this one ran; nothing was "
                                  "replaced and this write was discarded.")
        if state == "empty":
            with contextlib.suppress(OSError):
                os.rmdir(target)
        try:
            if not _renameat2(src, target, _RENAME_NOREPLACE):
                os.rename(src, target)
        except OSError as exc:
            if exc.errno in (errno.EEXIST, errno.ENOTEMPTY, errno.EISDIR, errno.ENOTDIR):
                raise FileExistsError(f"{self.url!r} was created by another writer while this one ran; nothing "
                                      "was replaced and this write was discarded.") from exc
            raise

    def close(self):
        """Remove what this write created besides the published store."""
        if self.tmp is not None:
            _remove_marked(self.tmp)
            self.tmp = None
        if self._fd is not None:
            os.close(self._fd)
            self._fd = None
        for url in self._scratch:
            _remove(url, self.storage_options)
        self._scratch = []

    def abandon(self):
        """After a failure: remove the temporary folder (local) or the partial in-place write."""
        if self._wrote_in_place:
            _remove(self.url, self.storage_options)
        self.close()
        for path in reversed(self._made):  # only the folders this write created, and only while empty
            with contextlib.suppress(OSError):
                os.rmdir(path)
        self._made = []


def _remove(url, storage_options):
    """Best-effort removal of a store this module created (remote URLs, scratch)."""
    with contextlib.suppress(Exception):
        import fsspec

        fs, path = fsspec.core.url_to_fs(url, **(storage_options or {}))
        if fs.exists(path):
            fs.rm(path, recursive=True)


@contextlib.contextmanager
def _destination(url, storage_options, *, overwrite, inputs=()):
    """A checked destination; its temporary files are removed whatever happens."""
    dest = _Destination(url, storage_options, overwrite=overwrite, inputs=inputs)
    try:
        yield dest.begin()
    except BaseException:
        dest.abandon()
        raise
    else:
        dest.close()
