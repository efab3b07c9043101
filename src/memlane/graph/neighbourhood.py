"""An entity's neighbourhood in a user's graph: its node, relations, co-mentioned entities and latest memories."""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field
from typing import Protocol

from memlane.enrich.entities import canonical
from memlane.errors import NotFoundError, ValidationError
from memlane.graph.types import EntityNode, RelationEdge
from memlane.models import MemoryItem
from memlane.store.base import EntityIndex, GraphIndex, RecordReader


class NeighbourhoodStore(GraphIndex, EntityIndex, RecordReader, Protocol):
    """What a neighbourhood is read from."""


@dataclass(frozen=True)
class Neighbourhood:
    """One entity's node, the relations it takes part in (current and closed), the entities most often mentioned
    with it (name, count), and its latest memories.
    """

    node: EntityNode
    relations: list[RelationEdge] = field(default_factory=list)
    related: list[tuple[str, int]] = field(default_factory=list)
    memories: list[MemoryItem] = field(default_factory=list)

    def as_text(self) -> str:
        """The neighbourhood as plain text lines (what ``memlane graph ENTITY`` prints)."""
        n = self.node
        lines = [f"{n.display} [{n.type}] ({n.name}; {n.mentions} memories)"]
        if n.aliases:
            lines.append("  also known as: " + ", ".join(n.aliases))
        if self.relations:
            lines.append("  relations:")
            for r in self.relations:
                window = f"since {r.valid_from.date().isoformat()}"
                if r.valid_until is not None:
                    window += f", until {r.valid_until.date().isoformat()}"
                lines.append(f"    {r.subject} --{r.predicate}--> {r.object}  ({window}; {len(r.sources)} source(s))")
        if self.related:
            lines.append("  mentioned with: " + ", ".join(f"{name} ({count})" for name, count in self.related))
        if self.memories:
            lines.append("  latest memories:")
            for m in self.memories:
                text = m.text if len(m.text) <= 100 else m.text[:99] + "…"
                who = f"{m.speaker}: " if m.speaker else ""
                lines.append(f"    {m.timestamp.date().isoformat()} {m.id[:8]} {who}{text}")
        return "\n".join(lines)


def resolve_entity(store: EntityIndex, user_id: str, name: str) -> str:
    """The canonical entity a name means for this user (an alias such as "Mel" or "my sister" resolves)."""
    key = canonical(name)
    if not key:
        raise ValidationError("an entity name needs at least one letter or digit")
    return store.resolve_aliases(user_id, [key]).get(key, key)


def neighbourhood(store: NeighbourhoodStore, user_id: str, name: str, *, limit: int = 10) -> Neighbourhood:
    """The neighbourhood of the entity ``name`` means; ``NotFoundError`` when the user's graph has no such entity."""
    entity = resolve_entity(store, user_id, name)
    nodes = store.entity_nodes(user_id, [entity])
    if not nodes:
        raise NotFoundError(f"user {user_id!r} has no entity {name!r}")
    ids = store.entity_memories(user_id, entity, limit)
    items = store.get_many(user_id, ids)
    memories = [items[i] for i in ids if i in items]
    counts: Counter[str] = Counter()
    for m in memories:
        counts.update(e for e in dict.fromkeys(m.entities) if e != entity)
    return Neighbourhood(nodes[0], store.relations(user_id, [entity]), counts.most_common(8), memories)
