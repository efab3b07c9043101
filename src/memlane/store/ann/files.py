"""The on-disk layout of one index: a data file per saved generation and ``meta.json``, the commit record.

A save writes the new data file under a fresh name, flushes it, then replaces ``meta.json`` atomically (temp file,
fsync, rename, directory fsync). ``meta.json`` names the data file and its size, so a crash at any point leaves either
the previous generation or the new one readable, never a torn mix; files no ``meta.json`` names are swept on save.
"""

from __future__ import annotations

import contextlib
import os
import shutil
import uuid
from collections.abc import Iterator
from pathlib import Path

import numpy as np
from pydantic import ValidationError as PydanticValidationError

from memlane.errors import StoreError
from memlane.store.ann.types import F32, I64, IndexMeta

META = "meta.json"
LOCK = ".lock"

try:  # POSIX advisory locks; elsewhere one process per store is assumed
    import fcntl
except ImportError:  # pragma: no cover - Windows
    fcntl = None  # type: ignore[assignment]


@contextlib.contextmanager
def folder_lock(folder: Path, *, exclusive: bool) -> Iterator[None]:
    """Hold the index folder's lock across processes: exclusive to save or remove, shared to load.

    Without it, one process's save could sweep the data file another process is writing or about to read.
    """
    folder.mkdir(parents=True, exist_ok=True)
    if fcntl is None:  # pragma: no cover
        yield
        return
    fd = os.open(folder / LOCK, os.O_RDWR | os.O_CREAT, 0o600)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX if exclusive else fcntl.LOCK_SH)
        yield
    finally:
        os.close(fd)  # closing releases the lock


def remove_folder(folder: Path) -> None:
    """Delete an index folder and every vector it holds (under the exclusive lock, so no save races it)."""
    if not folder.exists():
        return
    try:
        with folder_lock(folder, exclusive=True):
            for entry in list(folder.iterdir()):
                if entry.name != LOCK:
                    with contextlib.suppress(OSError):
                        if entry.is_dir():
                            shutil.rmtree(entry)
                        else:
                            entry.unlink()
    except FileNotFoundError:  # another process removed it while this one waited for the lock (two opens sweeping)
        return
    with contextlib.suppress(OSError):
        (folder / LOCK).unlink()
        folder.rmdir()


def fsync_dir(folder: Path) -> None:
    """Make a rename inside ``folder`` durable (a no-op where directories cannot be opened)."""
    try:
        fd = os.open(folder, os.O_RDONLY)
    except OSError:  # pragma: no cover - platforms without directory handles
        return
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


def fsync_file(path: Path) -> None:
    """Flush a file's data to disk."""
    with open(path, "rb+") as fh:
        os.fsync(fh.fileno())


def new_data_name(kind: str) -> str:
    """A fresh data-file name for a generation (never reused, so a reader of the old one is never disturbed)."""
    return f"{kind}-{uuid.uuid4().hex[:12]}.{'usearch' if kind == 'hnsw' else 'npy'}"


def read_meta(folder: Path) -> IndexMeta | None:
    """The committed metadata, or ``None`` when there is none or it is unreadable or names a missing/short file."""
    try:
        meta = IndexMeta.model_validate_json((folder / META).read_bytes())
    except (OSError, PydanticValidationError, ValueError):
        return None
    files = [(meta.data_file, meta.data_bytes)] + ([(meta.rows_file, meta.rows_bytes)] if meta.rows_file else [])
    try:
        if any((folder / name).stat().st_size != size for name, size in files):
            return None
    except OSError:
        return None
    return meta


def commit_meta(folder: Path, meta: IndexMeta) -> None:
    """Atomically make ``meta`` the committed record, then remove data files of older generations.

    Call it under ``folder_lock(folder, exclusive=True)``.
    """
    fsync_file(folder / meta.data_file)
    if meta.rows_file:
        fsync_file(folder / meta.rows_file)
    tmp = folder / f".{META}.{uuid.uuid4().hex[:8]}.tmp"
    tmp.write_text(meta.model_dump_json(indent=1), encoding="utf-8")
    fsync_file(tmp)
    os.replace(tmp, folder / META)
    fsync_dir(folder)
    for stale in folder.iterdir():
        if stale.name not in (META, LOCK, meta.data_file, meta.rows_file):
            with contextlib.suppress(OSError):
                stale.unlink()


def save_exact(path: Path, keys: I64, vectors: F32) -> None:
    """Keys, then matrix, as two ``.npy`` records one after the other in one file: ``load_exact`` reads each
    straight into an array of its own, which the index then adopts without copying it.
    """
    with open(path, "wb") as fh:
        np.save(fh, np.ascontiguousarray(keys, dtype=np.int64), allow_pickle=False)
        np.save(fh, np.ascontiguousarray(vectors, dtype=np.float32), allow_pickle=False)


def load_exact(path: Path, dim: int) -> tuple[I64, F32]:
    """Keys and matrix saved by ``save_exact``; a wrong shape or a torn file is a ``StoreError``."""
    try:
        with open(path, "rb") as fh:
            keys = np.asarray(np.load(fh, allow_pickle=False), dtype=np.int64)
            vectors = np.asarray(np.load(fh, allow_pickle=False), dtype=np.float32)
            if fh.read(1):
                raise ValueError("bytes after the matrix")
    except (OSError, ValueError, EOFError) as e:
        raise StoreError(f"cannot read the vector index {path}: {e}") from e
    if vectors.ndim != 2 or vectors.shape != (len(keys), dim):
        raise StoreError(f"the vector index {path} holds {vectors.shape}, not ({len(keys)}, {dim})")
    return keys, vectors
