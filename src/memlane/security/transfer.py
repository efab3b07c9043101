"""The JSONL export format at the file edge: open paths, write checked lines, read lines back checked one by one.

Import and export share one rule set (``check_item``), so an export never holds a line its import would reject.
"""

from __future__ import annotations

import json
import os
import tempfile
from collections.abc import Iterable, Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass, replace
from pathlib import Path
from typing import IO

from pydantic import ValidationError as PydanticValidationError

from memlane.errors import ImportFormatError, MemlaneError, ValidationError
from memlane.models import TYPED_KINDS, MemoryItem
from memlane.security.validation import (
    INT64_MAX,
    Limits,
    check_id,
    check_int,
    check_label,
    check_metadata,
    check_path,
    check_text,
    check_time,
    check_utf8,
    first_error,
    to_utc,
)

EXPORT_FORMAT = 1
#: How many times the metadata size and key budget of ``add`` a derived (typed) memory may use.
DERIVED_SCALE = 64


@dataclass(frozen=True)
class ImportLine:
    """One memory read from an export file, with the line it came from."""

    lineno: int
    item: MemoryItem


def check_item(item: MemoryItem, limits: Limits) -> MemoryItem:
    """A stored memory whose every field is within the limits ``Memory.add`` applies; times normalised to UTC."""
    item.id = check_id(item.id, what="id", max_chars=limits.id_chars)
    item.user_id = check_id(item.user_id, what="user_id", max_chars=limits.id_chars)
    check_id(item.content_hash, what="content_hash", max_chars=128)
    for key in ("agent_id", "session_id", "superseded_by"):
        value = getattr(item, key)
        if value is not None:
            check_id(value, what=key, max_chars=limits.id_chars)
    check_label(item.role, what="role", max_chars=limits.role_chars)
    check_label(item.speaker, what="speaker", max_chars=limits.name_chars)
    for key in ("category", "intent"):
        check_label(getattr(item, key), what=key, max_chars=limits.name_chars)
    check_text(item.text, max_chars=limits.text_chars)
    item.timestamp = check_time(item.timestamp, what="timestamp", limits=limits)
    for key in ("created_at", "updated_at", "event_time", "event_end", "valid_from", "valid_until", "last_accessed"):
        value = getattr(item, key)
        if value is not None:
            setattr(item, key, to_utc(value, what=key))
    check_int(item.access_count, what="access_count", low=0, high=INT64_MAX)
    if item.position is not None:
        check_int(item.position, what="position", low=0, high=INT64_MAX)
    # A typed memory's metadata is the union of its sources' (each within the limits of add): same depth and value
    # rules, a larger size budget, so that nothing memlane derived itself is refused on the way out.
    derived = item.kind in TYPED_KINDS
    budget = DERIVED_SCALE if derived else 1
    item.metadata = check_metadata(
        item.metadata,
        "metadata",
        replace(limits, metadata_bytes=limits.metadata_bytes * budget, metadata_keys=limits.metadata_keys * budget),
    )
    most = limits.batch * budget
    if len(item.entities) > most:
        raise ValidationError(f"entities lists {len(item.entities)} names, more than the limit of {most}")
    for name in item.entities:
        check_text(name, max_chars=limits.text_chars, what="entities")
    for i, src in enumerate(item.sources):
        check_id(src.memory_id, what=f"sources[{i}].memory_id", max_chars=limits.id_chars)
        check_label(src.role, what=f"sources[{i}].role", max_chars=limits.role_chars)
        check_label(src.name, what=f"sources[{i}].name", max_chars=limits.name_chars)
        if src.timestamp is not None:
            src.timestamp = to_utc(src.timestamp, what=f"sources[{i}].timestamp")
        src.metadata = check_metadata(src.metadata, f"sources[{i}].metadata", limits)
    return item


def _open_error(path: Path, exc: OSError, doing: str) -> ValidationError:
    reason = exc.strerror or type(exc).__name__
    return ValidationError(f"cannot {doing} {str(path)[:200]!r}: {reason}")


def write_export(
    dest: str | Path | IO[str], header: dict[str, object], items: Iterable[MemoryItem], limits: Limits
) -> int:
    """Write the header and one line per memory; a path is written whole or not at all (temporary file, rename).

    Every memory is checked first: one that import would reject stops the export with its id named.
    """
    if isinstance(dest, str | Path):
        path = Path(check_path(dest, what="export destination"))  # also refuses text that is not valid UTF-8
        with _atomic_file(path) as fh:
            return _write_lines(fh, header, items, limits)
    if not callable(getattr(dest, "write", None)):
        raise ValidationError(f"export destination must be a path or a writable text stream, got {type(dest).__name__}")
    try:
        return _write_lines(dest, header, items, limits)
    except (OSError, TypeError) as exc:
        raise ValidationError(f"cannot write to the export stream: {exc}") from None


@contextmanager
def _atomic_file(path: Path) -> Iterator[IO[str]]:
    try:
        if path.is_dir():
            raise ValidationError(f"cannot write export {str(path)[:200]!r}: it is a directory")
        fd, tmp = tempfile.mkstemp(prefix=f".{path.name[:50]}.", suffix=".tmp", dir=path.parent)
    except OSError as exc:
        raise _open_error(path, exc, "write export") from None
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as fh:
            yield fh
        os.replace(tmp, path)
    except OSError as exc:
        Path(tmp).unlink(missing_ok=True)
        raise _open_error(path, exc, "write export") from None
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise


def _write_lines(fh: IO[str], header: dict[str, object], items: Iterable[MemoryItem], limits: Limits) -> int:
    fh.write(json.dumps(header) + "\n")
    n = 0
    for item in items:
        try:
            checked = check_item(item, limits)  # items are read fresh from the store for this export
        except ValidationError as exc:
            raise ValidationError(f"memory {item.id[:80]!r} cannot be exported: {exc}") from None
        fh.write(checked.model_dump_json() + "\n")
        n += 1
    return n


def read_export(source: str | Path | IO[str], limits: Limits) -> list[ImportLine]:
    """Every memory of an export file, each checked with the rules of ``Memory.add``; the first bad line raises
    ``ImportFormatError`` naming its line number and field.
    """
    if isinstance(source, str | Path):
        path = Path(check_path(source, what="import source"))  # also refuses text that is not valid UTF-8
        try:
            with open(path, "rb") as fh:
                return _read_lines(fh, limits)
        except IsADirectoryError:
            raise ValidationError(f"cannot read import file {str(path)[:200]!r}: it is a directory") from None
        except OSError as exc:
            raise _open_error(path, exc, "read import file") from None
    if not hasattr(source, "__iter__") or isinstance(source, bytes | bytearray | Mapping):
        raise ValidationError(f"import source must be a path or a readable stream, got {type(source).__name__}")
    try:
        return _read_lines(source, limits)
    except OSError as exc:
        raise ValidationError(f"cannot read the import stream: {exc}") from None


def _decoded(lines: Iterable[str | bytes]) -> Iterator[tuple[int, str]]:
    lineno = 0
    it = iter(lines)
    while True:
        lineno += 1
        try:
            raw = next(it)
        except StopIteration:
            return
        except UnicodeDecodeError:
            raise ImportFormatError(f"line {lineno} is not valid UTF-8 text") from None
        if not isinstance(raw, str | bytes):
            raise ValidationError(f"import source line {lineno} is a {type(raw).__name__}, not text")
        if isinstance(raw, bytes):
            try:
                raw = raw.decode("utf-8")
            except UnicodeDecodeError:
                raise ImportFormatError(f"line {lineno} is not valid UTF-8 text") from None
        yield lineno, raw


def _read_lines(lines: Iterable[str | bytes], limits: Limits) -> list[ImportLine]:
    decoded = _decoded(lines)
    first = next(decoded, None)
    if first is None:
        raise ImportFormatError("import file is empty")
    try:
        header = json.loads(first[1])
    except (json.JSONDecodeError, RecursionError):
        raise ImportFormatError("line 1 is not a memlane export header (not JSON)") from None
    if not isinstance(header, dict) or header.get("memlane_export") != EXPORT_FORMAT:
        raise ImportFormatError(f"line 1 is not a memlane export header (format {EXPORT_FORMAT})")
    out: list[ImportLine] = []
    seen: dict[str, int] = {}
    for lineno, line in decoded:
        if not line.strip():
            continue
        try:
            check_utf8(line, "line")
            item = check_item(MemoryItem.model_validate_json(line), limits)
        except PydanticValidationError as exc:
            raise ImportFormatError(f"line {lineno}: {first_error(exc)}") from None
        except MemlaneError as exc:
            raise ImportFormatError(f"line {lineno}: {exc}") from None
        if item.id in seen:
            raise ImportFormatError(f"line {lineno}: id {item.id[:80]!r} is already used on line {seen[item.id]}")
        seen[item.id] = lineno
        out.append(ImportLine(lineno, item))
    return out
