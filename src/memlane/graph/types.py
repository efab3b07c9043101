"""The knowledge graph's records, which live at the bottom of the house (``memlane.records.graph``)."""

from memlane.records.graph import (
    FUNCTIONAL,
    NODE_TYPES,
    EntityNode,
    GraphSlice,
    Mention,
    RelationClaim,
    RelationEdge,
    node_type,
)

__all__ = [
    "FUNCTIONAL",
    "NODE_TYPES",
    "EntityNode",
    "GraphSlice",
    "Mention",
    "RelationClaim",
    "RelationEdge",
    "node_type",
]
