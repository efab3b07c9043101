"""memlane: long-term memory for conversational AI, offline by default, with explainable hybrid retrieval."""

from memlane.config import Config, RetrievalPreset
from memlane.embedding.base import Embedder
from memlane.engine import Memory
from memlane.errors import (
    ConfigError,
    CorruptStoreError,
    EmbedderMismatchError,
    EmbeddingError,
    ImportFormatError,
    MemlaneError,
    MissingDependencyError,
    MissingScopeError,
    NotFoundError,
    SchemaError,
    StoreError,
    UnknownFilterError,
    ValidationError,
)
from memlane.models import (
    AddResult,
    Filters,
    HistoryEntry,
    HistoryEvent,
    Hit,
    MemoryItem,
    MemoryKind,
    Message,
    ScoreBreakdown,
    SourceRef,
    Stats,
)

__version__ = "0.1.0"

__all__ = [
    "AddResult",
    "Config",
    "ConfigError",
    "CorruptStoreError",
    "Embedder",
    "EmbedderMismatchError",
    "EmbeddingError",
    "Filters",
    "HistoryEntry",
    "HistoryEvent",
    "Hit",
    "ImportFormatError",
    "MemlaneError",
    "Memory",
    "MemoryItem",
    "MemoryKind",
    "Message",
    "MissingDependencyError",
    "MissingScopeError",
    "NotFoundError",
    "RetrievalPreset",
    "SchemaError",
    "ScoreBreakdown",
    "SourceRef",
    "Stats",
    "StoreError",
    "UnknownFilterError",
    "ValidationError",
    "__version__",
]
