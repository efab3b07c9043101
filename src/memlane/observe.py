"""Grounded observations: captions of frames or photos with ``[label:Type]`` entity tags, stored as memories.

An observation is not chat: it has a time window, a media reference and tagged entities. Its tags become typed
entities of the user's entity table; a label is an alias of its entity (``person_1`` -> ``dana`` when ``names``
says so), so the same label keeps naming the same entity in later and overlapping windows, and a label given two
types (or two names) by windows that overlap is refused.
"""

from __future__ import annotations

import hashlib
import json
import re
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path
from typing import Annotated, Any, Final

from pydantic import BaseModel, ConfigDict, Field, field_validator
from pydantic import ValidationError as PydanticValidationError

from memlane.enrich.entities import AliasRow, canonical
from memlane.errors import ValidationError
from memlane.ids import new_id
from memlane.models import MemoryItem, MemoryKind, parse_time, utcnow
from memlane.security.edge_limits import Bound
from memlane.security.validation import Limits, check_id, check_metadata, check_text, check_time

OBSERVATION_ROLE: Final = "observation"
TAG: Final = re.compile(r"\[(?P<label>[^\W\d_][\w.-]{0,63}):(?P<type>[A-Za-z][A-Za-z _-]{0,31})\]")
_KINDS: Final = {"location": "place", "room": "place", "organization": "organisation", "org": "organisation"}


class Observation(BaseModel):
    """One observation: a caption (tags allowed), when it was seen, and where the media is.

    ``end`` closes the time window (a frame has none); ``media`` references the frame, clip or photo; ``stream`` names
    the camera or video; ``names`` gives tagged labels their names (``{"person_1": "Dana"}``); ``subject`` is an entity
    the observation concerns without tagging it (the person who shared a photo); ``attached_to`` the id of the memory
    (a conversation turn) it belongs to.
    """

    model_config = ConfigDict(extra="forbid")

    caption: Annotated[str, Field(min_length=1), Bound("text_chars")]  # checked against the store's limits
    timestamp: datetime
    end: datetime | None = None
    media: str | None = Field(default=None, max_length=2048)
    stream: str | None = Field(default=None, max_length=256)
    names: dict[str, str] = Field(default_factory=dict)
    subject: str | None = Field(default=None, max_length=256)
    attached_to: Annotated[str, Bound("id_chars")] | None = None
    metadata: dict[str, Any] = Field(default_factory=dict)

    @field_validator("timestamp", "end", mode="before")
    @classmethod
    def _time(cls, value: Any) -> datetime | None:
        return None if value is None else parse_time(value)


@dataclass(frozen=True)
class Tag:
    """One ``[label:Type]`` tag: the label, its entity kind, the entity it names and its display form."""

    label: str
    kind: str
    entity: str
    display: str


@dataclass(frozen=True)
class Parsed:
    """A caption with its tags replaced by display names, and the tags."""

    text: str
    tags: tuple[Tag, ...]


def entity_kind(type_name: str) -> str:
    """The entity-table kind of a tag type: lower-cased, with a few synonyms joined (``Location`` -> ``place``)."""
    key = type_name.strip().lower().replace(" ", "_")
    return _KINDS.get(key, key)


def parse_caption(caption: str, names: Mapping[str, str], known: Mapping[str, str]) -> Parsed:
    """Replace each tag by its entity's display form; ``known`` maps a label's alias key to a stored entity."""
    tags: list[Tag] = []

    def swap(m: re.Match[str]) -> str:
        label = m.group("label")
        name = names.get(label)
        key = canonical(label)
        kind = entity_kind(m.group("type"))
        entity = canonical(name) if name else known.get(key, key)
        display = name or label
        tags.append(Tag(label, kind, entity, display))
        return display if not name or kind == "person" else f"{name} ({label})"

    text = TAG.sub(swap, caption)
    return Parsed(" ".join(text.split()), tuple(tags))


def read_observations(source: str | Path) -> list[Observation]:
    """Observations from a JSONL file (one object per line); an error names the line and the field."""
    path = Path(source)
    try:
        text = path.read_text(encoding="utf-8")
    except OSError as exc:
        raise ValidationError(f"cannot read {str(path)[:200]!r}: {exc.strerror or exc}") from None
    return parse_observations(text)


def parse_observations(text: str) -> list[Observation]:
    """Observations from JSONL text; an error names the line and the field."""
    lines = text.splitlines()
    out: list[Observation] = []
    for n, line in enumerate(lines, 1):
        if not line.strip():
            continue
        try:
            out.append(Observation.model_validate(json.loads(line)))
        except json.JSONDecodeError as exc:
            raise ValidationError(f"line {n}: not JSON ({exc.msg})") from None
        except PydanticValidationError as exc:
            first = exc.errors()[0]
            raise ValidationError(f"line {n}: {'.'.join(map(str, first['loc']))}: {first['msg']}") from None
    return out


def _check_windows(observations: Sequence[Observation], parsed: Sequence[Parsed]) -> None:
    """Refuse a label that windows overlapping in time (in one stream) give two kinds or two entities."""
    seen: dict[tuple[str | None, str], list[tuple[datetime, datetime, Tag]]] = {}
    for obs, p in zip(observations, parsed, strict=True):
        start, end = obs.timestamp, obs.end or obs.timestamp
        for tag in p.tags:
            for s, e, other in seen.get((obs.stream, tag.label), []):
                if s <= end and start <= e and (other.kind, other.entity) != (tag.kind, tag.entity):
                    raise ValidationError(
                        f"label {tag.label!r} is {other.kind} {other.display!r} and {tag.kind} {tag.display!r} "
                        f"in overlapping windows at {start.isoformat()}"
                    )
            seen.setdefault((obs.stream, tag.label), []).append((start, end, tag))


def observation_hash(user_id: str, agent_id: str | None, session_id: str | None, obs: Observation) -> str:
    """The idempotency key of an observation: its scope, caption, media and window."""
    payload = [user_id, agent_id, session_id, OBSERVATION_ROLE, obs.caption, obs.media, obs.stream]
    payload += [obs.timestamp.isoformat(), obs.end.isoformat() if obs.end else None]
    return hashlib.sha256(json.dumps(payload, ensure_ascii=False).encode("utf-8")).hexdigest()


@dataclass(frozen=True)
class Prepared:
    """Observations as memory items, and the hook that adds their tags after enrichment."""

    items: list[MemoryItem]
    annotate: Callable[[Sequence[MemoryItem]], dict[str, list[AliasRow]]]


def prepare(
    observations: Sequence[Observation],
    *,
    user_id: str,
    session_id: str | None,
    agent_id: str | None,
    known: Mapping[str, str],
) -> Prepared:
    """Memory items for the observations (role ``observation``), their tags checked across overlapping windows.

    ``known`` is the user's alias table (alias key -> entity). ``annotate`` runs after write-time enrichment: it adds
    each observation's tagged entities, sets its event span to its window, and returns the entity-table rows to write.
    """
    named: dict[str, str] = {}
    parsed: list[Parsed] = []
    for obs in observations:  # a name given once holds for the label in the later observations of the batch
        named.update(obs.names)
        parsed.append(parse_caption(obs.caption, named, known))
    _check_windows(observations, parsed)
    now = utcnow()
    items: list[MemoryItem] = []
    for obs, p in zip(observations, parsed, strict=True):
        if obs.end is not None and obs.end < obs.timestamp:
            raise ValidationError(f"observation at {obs.timestamp.isoformat()} ends before it starts")
        meta: dict[str, Any] = dict(obs.metadata)
        meta.update({k: v for k, v in (("media", obs.media), ("stream", obs.stream)) if v is not None})
        if obs.attached_to:
            meta["attached_to"] = obs.attached_to
        if p.tags:
            meta["tags"] = [{"label": t.label, "kind": t.kind, "entity": t.entity} for t in p.tags]
        items.append(
            MemoryItem(
                id=new_id(),
                user_id=user_id,
                agent_id=agent_id,
                session_id=session_id or obs.stream,
                kind=MemoryKind.MESSAGE,
                role=OBSERVATION_ROLE,
                speaker=None,
                text=p.text or obs.caption,
                timestamp=obs.timestamp,
                created_at=now,
                updated_at=now,
                content_hash=observation_hash(user_id, agent_id, session_id or obs.stream, obs),
                metadata=meta,
            )
        )
    windows = {it.id: (o.timestamp, o.end) for it, o in zip(items, observations, strict=True)}
    tagged = {it.id: p.tags for it, p in zip(items, parsed, strict=True)}
    subjects = {it.id: canonical(o.subject) for it, o in zip(items, observations, strict=True) if o.subject}

    def annotate(stored: Sequence[MemoryItem]) -> dict[str, list[AliasRow]]:
        rows: dict[str, AliasRow] = {}
        for item in stored:
            tags = tagged.get(item.id, ())
            extra = [t.entity for t in tags] + ([subjects[item.id]] if item.id in subjects else [])
            item.entities = list(dict.fromkeys([*item.entities, *extra]))
            start, end = windows[item.id]
            item.event_time, item.event_end = start, end
            for t in tags:
                rows[t.entity] = AliasRow(t.entity, t.entity, t.kind, t.display)
                label = canonical(t.label)
                if label != t.entity:
                    rows.setdefault(label, AliasRow(label, t.entity, t.kind, t.display))
        return {user_id: list(rows.values())} if rows else {}

    return Prepared(items, annotate)


def check_observations(value: object, limits: Limits) -> list[Observation]:
    """Observations from one ``Observation``, a mapping, or a list of them, checked against ``limits``."""
    raw = [value] if isinstance(value, Observation | Mapping) else value
    if not isinstance(raw, Sequence) or isinstance(raw, str | bytes):
        raise ValidationError(
            f"observations must be an Observation, a dict or a list of them, not {type(value).__name__}"
        )
    if not raw:
        raise ValidationError("no observations given")
    if len(raw) > limits.batch:
        raise ValidationError(f"{len(raw)} observations, more than the limit of {limits.batch}")
    out: list[Observation] = []
    for i, obs in enumerate(raw):
        try:
            item = obs if isinstance(obs, Observation) else Observation.model_validate(obs)
        except PydanticValidationError as exc:
            first = exc.errors()[0]
            raise ValidationError(f"observation {i}: {'.'.join(map(str, first['loc']))}: {first['msg']}") from None
        check_text(item.caption, max_chars=limits.text_chars, what=f"observation {i} caption")
        if item.attached_to is not None:
            check_id(item.attached_to, what=f"observation {i} attached_to", max_chars=limits.id_chars)
        check_time(item.timestamp, what=f"observation {i} timestamp", limits=limits)
        if item.end is not None:
            check_time(item.end, what=f"observation {i} end", limits=limits)
        check_metadata(item.metadata, f"observation {i} metadata", limits)
        for label, name in item.names.items():
            check_text(name, max_chars=256, what=f"observation {i} name of {label[:40]!r}")
        out.append(item)
    return out
