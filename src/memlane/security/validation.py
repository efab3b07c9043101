"""Checks on every value a caller hands in (API, CLI, import, REST, MCP): each bad value is refused before
anything is written, with a ``ValidationError`` that names the field and the limit it broke.
"""

from __future__ import annotations

import json
import math
import os
import re
import unicodedata
from collections.abc import Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any, Final, TypeVar

from pydantic import ValidationError as PydanticValidationError

from memlane.errors import MissingScopeError, UnknownFilterError, ValidationError
from memlane.models import Filters, Message, parse_time

T = TypeVar("T")

#: The widest integer SQLite (and most JSON consumers) hold exactly: a signed 64-bit integer.
INT64_MAX = 2**63 - 1


@dataclass(frozen=True)
class Limits:
    """The bound on every field a caller can set; ``Limits.from_config`` takes the id and text sizes from a Config.

    Times a caller gives (a message's timestamp) must lie within ``[time_min, time_max)`` so that date arithmetic
    on them (relative dates, decay) cannot leave the calendar; time bounds of filters may use the whole calendar.
    """

    id_chars: int = 256
    text_chars: int = 32_000
    role_chars: int = 64
    name_chars: int = 256
    metadata_bytes: int = 64_000
    metadata_depth: int = 32
    metadata_keys: int = 1_000
    metadata_key_chars: int = 256
    batch: int = 10_000
    list_limit: int = 1_000_000
    offset: int = 10**12
    top_k: int = 1_000
    time_min: datetime = datetime(1000, 1, 1, tzinfo=UTC)
    time_max: datetime = datetime(9000, 1, 1, tzinfo=UTC)

    @property
    def cursor_chars(self) -> int:
        """The longest page cursor a caller hands back: an id and a time stamp with its separators."""
        return self.id_chars + 64

    @classmethod
    def from_config(cls, config: Any) -> Limits:
        """The default limits with ``config.max_id_chars`` and ``config.max_text_chars``."""
        return cls(id_chars=int(config.max_id_chars), text_chars=int(config.max_text_chars))


DEFAULT_LIMITS = Limits()


def _name(value: object) -> str:
    return type(value).__name__


def check_utf8(text: str, what: str) -> None:
    """Reject strings that no store can keep: those that cannot be encoded as UTF-8 (lone surrogates from bad
    decoding), and those holding U+0000, which PostgreSQL's text and JSON types refuse (SQLite keeps it, so without
    this a store would accept on one backend what it refuses on another).
    """
    try:
        text.encode("utf-8")
    except UnicodeEncodeError as exc:
        raise ValidationError(f"{what} is not valid UTF-8 (lone surrogate at character {exc.start})") from None
    nul = text.find("\x00")
    if nul >= 0:
        raise ValidationError(f"{what} must not contain U+0000 (NUL, at character {nul})")


def _no_controls(text: str, what: str) -> None:
    for i, ch in enumerate(text):
        if unicodedata.category(ch) == "Cc":
            raise ValidationError(f"{what} must not contain control characters (U+{ord(ch):04X} at character {i})")


def check_id(value: object, *, what: str, max_chars: int) -> str:
    """A non-empty identifier: a string of at most ``max_chars`` characters, valid UTF-8, no control characters."""
    if value is None or (isinstance(value, str) and not value.strip()):
        if what == "user_id":
            raise MissingScopeError("user_id is required: every memory belongs to a user scope")
        raise ValidationError(f"{what} is required and must not be empty")
    if not isinstance(value, str):
        raise ValidationError(f"{what} must be a string, got {_name(value)}")
    if len(value) > max_chars:
        raise ValidationError(f"{what} is {len(value)} characters, more than the limit of {max_chars}")
    check_utf8(value, what)
    _no_controls(value, what)
    return value


def require_scope(user_id: object, *, max_chars: int, what: str = "user_id") -> str:
    """A valid ``user_id`` (``MissingScopeError`` when absent)."""
    return check_id(user_id, what=what, max_chars=max_chars)


def optional_id(value: object, *, max_chars: int, what: str) -> str | None:
    """``None``, or a valid id string."""
    return None if value is None else check_id(value, what=what, max_chars=max_chars)


def check_label(value: object, *, what: str, max_chars: int, required: bool = False) -> str | None:
    """A short label (a role or a speaker's name): at most ``max_chars`` characters, no control characters."""
    if value is None and not required:
        return None
    if not isinstance(value, str):
        raise ValidationError(f"{what} must be a string, got {_name(value)}")
    if required and not value.strip():
        raise ValidationError(f"{what} must not be empty")
    if len(value) > max_chars:
        raise ValidationError(f"{what} is {len(value)} characters, more than the limit of {max_chars}")
    check_utf8(value, what)
    _no_controls(value, what)
    return value


def check_text(text: object, *, max_chars: int, what: str = "text") -> str:
    """A non-empty, valid UTF-8 string within the size limit (bytes are decoded as UTF-8)."""
    if isinstance(text, bytes):
        try:
            text = text.decode("utf-8")
        except UnicodeDecodeError as exc:
            raise ValidationError(f"{what} is not valid UTF-8 (byte {exc.start})") from None
    if not isinstance(text, str):
        raise ValidationError(f"{what} must be a string, got {_name(text)}")
    if not text.strip():
        raise ValidationError(f"{what} is empty")
    if len(text) > max_chars:
        raise ValidationError(f"{what} is {len(text)} characters, more than the limit of {max_chars}")
    check_utf8(text, what)
    return text


def check_int(value: object, *, what: str, low: int, high: int) -> int:
    """An ``int`` (not a bool, not a string) within ``[low, high]``."""
    if isinstance(value, bool) or not isinstance(value, int):
        raise ValidationError(f"{what} must be an integer from {low} to {high}, got {_name(value)}")
    if not low <= value <= high:
        shown = value if abs(value) < 10**30 else f"an integer of {len(str(abs(value)))} digits"
        raise ValidationError(f"{what} must be an integer from {low} to {high}, got {shown}")
    return value


def check_float(value: object, *, what: str, low: float, high: float) -> float:
    """A finite number (int or float, not a bool or a string) within ``[low, high]``."""
    if isinstance(value, bool) or not isinstance(value, int | float):
        raise ValidationError(f"{what} must be a number from {low:g} to {high:g}, got {_name(value)}")
    try:
        number = float(value)
    except OverflowError:
        number = math.inf
    if not math.isfinite(number) or not low <= number <= high:
        raise ValidationError(f"{what} must be a number from {low:g} to {high:g}, got {value!r:.40}")
    return number


def check_bool(value: object, *, what: str) -> bool:
    """``True`` or ``False`` exactly."""
    if not isinstance(value, bool):
        raise ValidationError(f"{what} must be True or False, got {_name(value)}")
    return value


def to_utc(value: object, *, what: str) -> datetime:
    """An ISO 8601 string, a datetime or epoch seconds as an aware UTC datetime on the calendar."""
    if isinstance(value, bytes | bytearray):
        raise ValidationError(f"{what} must be an ISO 8601 string, a datetime or epoch seconds, got {_name(value)}")
    try:
        return parse_time(value)  # type: ignore[arg-type]
    except ValueError as exc:
        raise ValidationError(f"{what}: {exc}") from None


def check_time(value: object, *, what: str, limits: Limits = DEFAULT_LIMITS) -> datetime:
    """A caller-given time, within ``[limits.time_min, limits.time_max)``."""
    when = to_utc(value, what=what)
    if not limits.time_min <= when < limits.time_max:
        raise ValidationError(
            f"{what} must lie from {limits.time_min.date().isoformat()} to before "
            f"{limits.time_max.date().isoformat()} (UTC), got {when.isoformat()}"
        )
    return when


def _path(where: str, step: str) -> str:
    """A field path for error messages, its middle elided once it grows long."""
    path = where + step
    return path if len(path) <= 120 else f"{path[:40]}...{path[-60:]}"


def check_metadata(metadata: object, what: str = "metadata", limits: Limits = DEFAULT_LIMITS) -> dict[str, Any]:
    """A JSON object within the limits: string keys, at most ``metadata_depth`` levels of nesting,
    ``metadata_keys`` keys in all, values that are strings, finite numbers, 64-bit integers, booleans or null,
    and ``metadata_bytes`` bytes once serialised. Returns a plain-JSON copy.
    """
    if metadata is None:
        return {}
    if not isinstance(metadata, Mapping):
        raise ValidationError(f"{what} must be a mapping, got {_name(metadata)}")
    if not metadata:  # the common case of a message without metadata: nothing to walk or serialise
        return {}
    keys = 0
    stack: list[tuple[object, str, int]] = [(metadata, what, 1)]
    while stack:  # iterative, so a hostile nesting depth cannot exhaust the Python stack
        value, where, depth = stack.pop()
        if isinstance(value, Mapping):
            if depth > limits.metadata_depth:
                raise ValidationError(f"{where} nests deeper than the limit of {limits.metadata_depth} levels")
            for key, sub in value.items():
                if not isinstance(key, str):
                    raise ValidationError(f"{where} keys must be strings, got {_name(key)}")
                if len(key) > limits.metadata_key_chars:
                    raise ValidationError(
                        f"{where} has a key of {len(key)} characters, more than the limit of "
                        f"{limits.metadata_key_chars}"
                    )
                check_utf8(key, f"{where} key")
                keys += 1
                if keys > limits.metadata_keys:
                    raise ValidationError(f"{what} has more than the limit of {limits.metadata_keys} keys")
                stack.append((sub, _path(where, f".{key[:40]}"), depth + 1))
        elif isinstance(value, list | tuple):
            if depth > limits.metadata_depth:
                raise ValidationError(f"{where} nests deeper than the limit of {limits.metadata_depth} levels")
            if len(value) > limits.metadata_keys:
                raise ValidationError(f"{where} has more than the limit of {limits.metadata_keys} items")
            stack.extend((sub, _path(where, f"[{i}]"), depth + 1) for i, sub in enumerate(value))
        elif isinstance(value, str):
            check_utf8(value, where)
        elif isinstance(value, bool) or value is None:
            continue
        elif isinstance(value, int):
            if not -INT64_MAX - 1 <= value <= INT64_MAX:
                raise ValidationError(f"{where} is an integer outside the 64-bit range (at most {INT64_MAX})")
        elif isinstance(value, float):
            if not math.isfinite(value):
                raise ValidationError(f"{where} must be a finite number, got {value}")
        else:
            raise ValidationError(
                f"{where} must be a JSON value (string, number, boolean, null, list or mapping), got {_name(value)}"
            )
    encoded = json.dumps(metadata, ensure_ascii=False, allow_nan=False)
    size = len(encoded.encode("utf-8"))
    if size > limits.metadata_bytes:
        raise ValidationError(f"{what} is {size} bytes as JSON, more than the limit of {limits.metadata_bytes}")
    result: dict[str, Any] = json.loads(encoded)
    return result


def check_path(value: object, *, what: str, max_chars: int = 4096) -> str | Path:
    """A file path or store URL: a string or ``os.PathLike`` of valid UTF-8, without NUL, within ``max_chars``."""
    if not isinstance(value, str | os.PathLike):
        raise ValidationError(f"{what} must be a string or a path, got {_name(value)}")
    text = os.fspath(value)
    if not isinstance(text, str):
        raise ValidationError(f"{what} must be a text path, got {_name(text)}")
    if not text.strip() or "\x00" in text:
        raise ValidationError(f"{what} {text[:80]!r} is not a usable path")
    if len(text) > max_chars:
        raise ValidationError(f"{what} is {len(text)} characters, more than the limit of {max_chars}")
    check_utf8(text, what)
    return value if isinstance(value, Path) else text


def check_callback(value: T, *, what: str) -> T:
    """``None`` or something callable."""
    if value is not None and not callable(value):
        raise ValidationError(f"{what} must be callable, got {_name(value)}")
    return value


# The name pydantic gives one branch of a union in an error's location ("str-enum[MemoryKind]",
# "list[str-enum[MemoryKind]]"): a part of its schema, not of the input.
_UNION_BRANCH: Final = re.compile(r"[a-z][a-z-]*\[.*\]")


def first_error(exc: PydanticValidationError) -> str:
    """The first problem pydantic found, as ``field: message``, at the place in the input it concerns.

    A value that fits no branch of a union (``kind: ["fact", 3]`` against ``kind: MemoryKind | list[MemoryKind]``)
    fails in every branch; the deepest of those failures names the item at fault (``kind[1]``), where the first
    would name the branch that did not apply. Branch names are pydantic's, not the input's, and are left out.
    """
    errors = exc.errors()
    first = errors[0]
    head = tuple(first.get("loc", ()))[:1]
    same = [e for e in errors if tuple(e.get("loc", ()))[:1] == head] if head else [first]
    err = max(same, key=lambda e: len(e.get("loc", ())))  # max keeps the first of equal depth
    where = ""
    for part in err.get("loc", ()):
        if isinstance(part, int):
            where += f"[{part}]"
        elif not _UNION_BRANCH.fullmatch(part):
            where += f".{part}" if where else part
    return f"{where or 'value'}: {err.get('msg', 'invalid')}"


@contextmanager
def located(*loc: str | int) -> Iterator[None]:
    """Give a ``ValidationError`` raised inside, that names no field yet, the field ``loc``."""
    try:
        yield
    except ValidationError as exc:
        if not exc.loc:
            exc.loc = loc
        raise


def check_message(msg: Message, *, what: str, limits: Limits, loc: tuple[str | int, ...] = ()) -> Message:
    """A message whose role, speaker, content, timestamp and metadata are all within the limits."""
    with located(*loc, "role"):
        check_label(msg.role, what=f"{what} role", max_chars=limits.role_chars, required=True)
    with located(*loc, "name"):
        check_label(msg.name, what=f"{what} name", max_chars=limits.name_chars)
    with located(*loc, "content"):
        check_text(msg.content, max_chars=limits.text_chars, what=f"{what} content")
    if msg.timestamp is not None:
        with located(*loc, "timestamp"):
            check_time(msg.timestamp, what=f"{what} timestamp", limits=limits)
    with located(*loc, "metadata"):
        check_metadata(msg.metadata, what=f"{what} metadata", limits=limits)
    return msg


def check_messages(messages: object, limits: Limits = DEFAULT_LIMITS) -> list[Message]:
    """Coerce and check what ``Memory.add`` takes: a string, a message (or its dict) or a list of them."""
    if isinstance(messages, str | Message | Mapping):
        seq: Sequence[Any] = [messages]
    elif isinstance(messages, list | tuple):
        seq = messages
    else:
        raise ValidationError(f"messages must be a string, a message or a list of them, not {_name(messages)}")
    if not seq:
        raise ValidationError("no messages to add", loc=("messages",))
    if len(seq) > limits.batch:
        raise ValidationError(
            f"{len(seq)} messages in one call, more than the limit of {limits.batch}", loc=("messages",)
        )
    out: list[Message] = []
    for i, raw in enumerate(seq):
        if isinstance(raw, Message):
            msg = raw
        elif isinstance(raw, str):
            msg = Message(role="user", content=raw)
        elif isinstance(raw, Mapping):
            if any(not isinstance(k, str) for k in raw):
                raise ValidationError(f"message {i} keys must be strings", loc=("messages", i))
            try:
                msg = Message.model_validate(dict(raw))
            except PydanticValidationError as exc:
                raise ValidationError(f"message {i} is invalid: {first_error(exc)}", loc=("messages", i)) from None
        else:
            raise ValidationError(
                f"message {i} must be a string, a dict or a Message, not {_name(raw)}", loc=("messages", i)
            )
        out.append(check_message(msg, what=f"message {i}", limits=limits, loc=("messages", i)))
    return out


_ID_FILTERS = ("session_id", "agent_id")
_LABEL_FILTERS = {"role": "role_chars", "speaker": "name_chars"}


def check_filters(filters: object, limits: Limits = DEFAULT_LIMITS) -> Filters:
    """Search and list filters: known keys only, ids and labels within their limits, times on the calendar."""
    if filters is None:
        return Filters()
    if isinstance(filters, Filters):
        raw: dict[str, Any] = {k: getattr(filters, k) for k in filters.model_fields_set}
    elif isinstance(filters, Mapping):
        if any(not isinstance(k, str) for k in filters):
            raise ValidationError("filters keys must be strings")
        raw = dict(filters)
    else:
        raise ValidationError(f"filters must be a mapping, not {_name(filters)}")
    unknown = sorted(set(raw) - set(Filters.model_fields))
    if unknown:
        raise UnknownFilterError(f"unknown filter(s) {unknown}; known: {sorted(Filters.model_fields)}")
    for key in ("since", "until", "as_of"):
        if raw.get(key) is not None:
            raw[key] = to_utc(raw[key], what=f"filters.{key}")
    for key in (*_ID_FILTERS, *_LABEL_FILTERS):
        value = raw.get(key)
        values = value if isinstance(value, list | tuple) else [value]
        if len(values) > limits.batch:
            raise ValidationError(f"filters.{key} lists {len(values)} values, more than the limit of {limits.batch}")
        for v in values:
            if v is None:
                continue
            if key in _ID_FILTERS:
                check_id(v, what=f"filters.{key}", max_chars=limits.id_chars)
            else:
                check_label(v, what=f"filters.{key}", max_chars=getattr(limits, _LABEL_FILTERS[key]))
    if "include_superseded" in raw:
        check_bool(raw["include_superseded"], what="filters.include_superseded")
    if "metadata" in raw:
        raw["metadata"] = check_metadata(raw["metadata"], "filters.metadata", limits)
    if isinstance(raw.get("kind"), tuple):
        raw["kind"] = list(raw["kind"])
    try:
        return Filters.model_validate(raw)
    except PydanticValidationError as exc:
        raise ValidationError(f"invalid filters: {first_error(exc)}") from None
