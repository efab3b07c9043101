"""memlane: long-term memory for conversational AI, offline by default, with explainable hybrid retrieval."""

from memlane.answer import Answer, Context
from memlane.config import Config, RetrievalPreset
from memlane.embedding.base import Embedder
from memlane.engine import Memory
from memlane.errors import (
    ConfigError,
    CorruptStoreError,
    EmbedderMismatchError,
    EmbeddingError,
    ImportFormatError,
    JobTimeoutError,
    MemlaneError,
    MissingDependencyError,
    MissingScopeError,
    NotFoundError,
    RetrievalError,
    SchemaError,
    StoreError,
    UnknownFilterError,
    ValidationError,
)
from memlane.lifecycle.survival import SurvivalWeights
from memlane.models import (
    AddResult,
    ArchivedMemory,
    Document,
    Filters,
    HistoryEntry,
    HistoryEvent,
    Hit,
    Job,
    JobState,
    MemoryItem,
    MemoryKind,
    Message,
    Passage,
    ScoreBreakdown,
    SourceRef,
    Stats,
)
from memlane.observe import Observation

__version__ = "0.1.0"

__all__ = [
    "AddResult",
    "Answer",
    "ArchivedMemory",
    "Config",
    "ConfigError",
    "Context",
    "CorruptStoreError",
    "Document",
    "Embedder",
    "EmbedderMismatchError",
    "EmbeddingError",
    "Filters",
    "HistoryEntry",
    "HistoryEvent",
    "Hit",
    "ImportFormatError",
    "Job",
    "JobState",
    "JobTimeoutError",
    "MemlaneError",
    "Memory",
    "MemoryItem",
    "MemoryKind",
    "Message",
    "MissingDependencyError",
    "MissingScopeError",
    "NotFoundError",
    "Observation",
    "Passage",
    "RetrievalError",
    "RetrievalPreset",
    "SchemaError",
    "ScoreBreakdown",
    "SourceRef",
    "Stats",
    "StoreError",
    "SurvivalWeights",
    "UnknownFilterError",
    "ValidationError",
    "__version__",
]
