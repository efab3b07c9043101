"""The one exception tree of memlane: every failure a caller can see is a ``MemlaneError``."""

from __future__ import annotations


class MemlaneError(Exception):
    """Base class of every error memlane raises on purpose."""


class ValidationError(MemlaneError, ValueError):
    """Input rejected before anything was written (empty text, bad UTF-8, missing scope, ...).

    ``loc`` names the rejected field where the check knows it (``("messages", 0, "content")``): the REST API puts it
    in the error body's ``errors[].loc`` as a schema error's is put.
    """

    def __init__(self, message: str = "", *, loc: tuple[str | int, ...] = ()) -> None:
        super().__init__(message)
        self.loc = loc


class MissingScopeError(ValidationError):
    """A call that must be scoped to a user was made without ``user_id``."""


class UnknownFilterError(ValidationError):
    """A search or list filter names a field memlane does not know."""


class NotFoundError(MemlaneError, KeyError):
    """No memory with that id exists in the given scope."""

    def __str__(self) -> str:  # KeyError quotes its message; keep it readable.
        return str(self.args[0]) if self.args else "not found"


class StoreError(MemlaneError):
    """The storage backend failed; the driver's error is chained as ``__cause__``."""


class CorruptStoreError(StoreError):
    """The database file is damaged, or is not a memlane database."""


class SchemaError(StoreError):
    """The database was written by a newer or unknown memlane schema."""


class EmbedderMismatchError(MemlaneError):
    """The store was indexed with another embedding model than the one configured.

    Run ``memlane reindex`` to re-embed every memory with the configured model.
    """


class EmbeddingError(MemlaneError):
    """The embedding model could not be loaded or failed to encode."""


class RetrievalError(MemlaneError):
    """A retrieval stage outside memlane failed, e.g. a rerank endpoint refused or answered nonsense."""


class ConfigError(MemlaneError):
    """The configuration is invalid or names something unavailable."""


class MissingDependencyError(ConfigError, ImportError):
    """An optional feature was used without its extra installed."""

    def __init__(self, feature: str, extra: str) -> None:
        super().__init__(f"{feature} needs an optional dependency: pip install 'memlane[{extra}]'")
        self.feature = feature
        self.extra = extra


class ImportFormatError(ValidationError):
    """A JSONL export file is malformed; the line number is in the message."""


class LLMError(MemlaneError):
    """A language-model call failed (connection, timeout, HTTP or provider error) after its retries."""


class LLMOutputError(LLMError):
    """A language model's reply could not be parsed or validated against its output schema, even after repair."""


class ExtractionFailedError(MemlaneError):
    """An extraction job's batch could not be read (the model's reply was malformed): its messages stay stored and
    the job is retried, then left failed (the dead letter).
    """


class JobTimeoutError(MemlaneError, TimeoutError):
    """A background job did not finish within the time waited for it (it keeps running)."""
