"""Adding documents and notes: validated, screened, stored whole with no session, and embedded passage by passage."""

from __future__ import annotations

import logging
from collections.abc import Mapping, Sequence
from datetime import datetime
from typing import TYPE_CHECKING, Any

from pydantic import ValidationError as PydanticValidationError

from memlane.blas import blas_threads
from memlane.documents.passages import split_passages, token_counter
from memlane.errors import ValidationError
from memlane.ids import new_id
from memlane.lifecycle.distill import typed_hash
from memlane.models import AddResult, Document, MemoryItem, MemoryKind, utcnow
from memlane.records.passages import Span
from memlane.scope import unscope
from memlane.security.validation import (
    Limits,
    check_label,
    check_metadata,
    check_text,
    check_time,
    first_error,
    optional_id,
)
from memlane.store.passages import PassageIndex, PassageVectors

if TYPE_CHECKING:
    from memlane.services.core import Core
    from memlane.services.indexing import Indexer


log = logging.getLogger(__name__)

DocumentsInput = str | Document | Mapping[str, Any] | Sequence[str | Document | Mapping[str, Any]]

#: Metadata keys a document's title and source are kept under.
TITLE_KEY = "title"
SOURCE_KEY = "source"


def _name(value: object) -> str:
    return type(value).__name__


def check_documents(documents: object, limits: Limits) -> list[Document]:
    """Coerce and check what ``Memory.add_documents`` takes: a string, a ``Document`` (or its dict), or a list."""
    if isinstance(documents, str | Document | Mapping):
        seq: Sequence[Any] = [documents]
    elif isinstance(documents, list | tuple):
        seq = documents
    else:
        raise ValidationError(f"documents must be a string, a Document or a list of them, not {_name(documents)}")
    if not seq:
        raise ValidationError("no documents to add")
    if len(seq) > limits.batch:
        raise ValidationError(f"{len(seq)} documents in one call, more than the limit of {limits.batch}")
    out: list[Document] = []
    for i, raw in enumerate(seq):
        what = f"document {i}"
        if isinstance(raw, Document):
            doc = raw
        elif isinstance(raw, str):
            doc = Document(text=raw)
        elif isinstance(raw, Mapping):
            if any(not isinstance(k, str) for k in raw):
                raise ValidationError(f"{what} keys must be strings")
            try:
                doc = Document.model_validate(dict(raw))
            except PydanticValidationError as exc:
                raise ValidationError(f"{what} is invalid: {first_error(exc)}") from None
        else:
            raise ValidationError(f"{what} must be a string, a dict or a Document, not {_name(raw)}")
        check_text(doc.text, max_chars=limits.text_chars, what=f"{what} text")
        check_label(doc.title, what=f"{what} title", max_chars=limits.name_chars * 4)
        check_label(doc.source, what=f"{what} source", max_chars=limits.name_chars * 4)
        if doc.timestamp is not None:
            check_time(doc.timestamp, what=f"{what} timestamp", limits=limits)
        check_metadata(doc.metadata, f"{what} metadata", limits)
        out.append(doc)
    return out


class Documents:
    """The document path of one ``Memory``: ``add``, and passages written again after a change of text or model."""

    def __init__(self, core: Core, indexer: Indexer) -> None:
        self._core = core
        self._ix = indexer
        self._count = token_counter(core.embedder)

    @property
    def passages_supported(self) -> bool:
        """Whether the store keeps passages (PostgreSQL does not yet: one vector per document there)."""
        return isinstance(self._core.store, PassageIndex)

    def add(
        self,
        documents: DocumentsInput,
        *,
        user_id: str,
        agent_id: str | None = None,
        timestamp: datetime | str | None = None,
        metadata: Mapping[str, Any] | None = None,
        tenant: str | None = None,
    ) -> AddResult:
        """See ``Memory.add_documents``. Unlike ``add``, each is a memory of its own: no session, no neighbours, no
        extraction. A long text is split into passages at paragraph and sentence boundaries within the embedder's
        window, each embedded; search scores the document by its best passage and names it (``Hit.passage``). A text
        already stored (same user, agent and normalised text) is returned as stored and listed in ``duplicates``.
        """
        limits = self._core.limits
        user_id = self._core.bind(user_id, tenant).key
        agent_id = optional_id(agent_id, max_chars=limits.id_chars, what="agent_id")
        base_meta = check_metadata(metadata, "metadata", limits)
        default_ts = check_time(timestamp, what="timestamp", limits=limits) if timestamp is not None else None
        docs = check_documents(documents, limits)
        now = utcnow()
        items: list[MemoryItem] = []
        first: dict[str, MemoryItem] = {}  # a text given twice in one call is one document
        for i, doc in enumerate(docs):
            named = {k: v for k, v in ((TITLE_KEY, doc.title), (SOURCE_KEY, doc.source)) if v is not None}
            meta = check_metadata({**base_meta, **doc.metadata, **named}, f"document {i} metadata", limits)
            digest = typed_hash(user_id, agent_id, MemoryKind.DOCUMENT, doc.text)
            if digest in first:
                items.append(first[digest])
                continue
            item = MemoryItem(
                id=new_id(),
                user_id=user_id,
                agent_id=agent_id,
                session_id=None,
                kind=MemoryKind.DOCUMENT,
                role=None,
                speaker=None,
                text=doc.text,
                timestamp=doc.timestamp or default_ts or now,
                created_at=now,
                updated_at=now,
                content_hash=digest,
                metadata=meta,
            )
            first[digest] = item
            items.append(item)
        stored = self._core.store.find_hashes(user_id, list(first))
        fresh = [it for it in first.values() if it.content_hash not in stored]
        result = AddResult(
            items=[stored.get(it.content_hash, it) for it in items],
            duplicates=list(dict.fromkeys(stored[it.content_hash].id for it in items if it.content_hash in stored)),
        )
        if fresh:
            self._ix.screen(user_id, fresh)  # injection flags and PII redaction, before anything is embedded
            self._insert(fresh)
        return unscope(result)

    def spans(self, text: str) -> list[Span]:
        """The passages ``text`` is embedded as."""
        return split_passages(text, self._count)

    def _insert(self, items: Sequence[MemoryItem]) -> None:
        """Embed, enrich and store new documents with their passages, in one transaction."""
        core = self._core
        with blas_threads(core.config.blas_threads):
            core.check_embedder()
            texts = [it.text for it in items]
            spans = [self.spans(t) for t in texts]
            pieces = [t[s.start : s.end] for t, sp in zip(texts, spans, strict=True) for s in sp]
            vectors = self._ix.embed([*texts, *pieces] if self.passages_supported else texts)
            main = vectors[: len(texts)]
            taught: dict[str, list[str]] = {}
            aliases = self._ix.enrich(items, main, {}, taught)
            store = core.store
            if store.embedder_identity() is None:
                store.set_embedder_identity(core.embedder.identity, core.embedder.dim)
            if not isinstance(store, PassageIndex):
                log.info(
                    "%s keeps one vector per memory: %d document(s) stored without passages", store.location, len(items)
                )
                store.insert(items, texts, main, aliases=aliases, taught=taught)
                return
            store.insert(
                items,
                texts,
                main,
                aliases=aliases,
                taught=taught,
                passages=self._by_id(items, spans, vectors[len(texts) :]),
            )

    @staticmethod
    def _by_id(items: Sequence[MemoryItem], spans: Sequence[list[Span]], vectors: Any) -> dict[str, PassageVectors]:
        out: dict[str, PassageVectors] = {}
        at = 0
        for item, sp in zip(items, spans, strict=True):
            out[item.id] = PassageVectors(sp, vectors[at : at + len(sp)])
            at += len(sp)
        return out

    def repassage(self, items: Sequence[MemoryItem]) -> int:
        """Write the passages of stored documents again (after their text changed, they were restored from the
        archive, or the store was re-embedded); other kinds are skipped. Returns how many documents were done.
        """
        store = self._core.store
        docs = [it for it in items if it.kind is MemoryKind.DOCUMENT]
        if not docs or not isinstance(store, PassageIndex):
            return 0
        with blas_threads(self._core.config.blas_threads):
            spans = [self.spans(it.text) for it in docs]
            vectors = self._ix.embed([it.text[s.start : s.end] for it, sp in zip(docs, spans, strict=True) for s in sp])
            by_user: dict[str, list[int]] = {}
            for i, it in enumerate(docs):
                by_user.setdefault(it.user_id, []).append(i)
            passages = self._by_id(docs, spans, vectors)
            for user, idx in by_user.items():
                store.write_passages(user, {docs[i].id: passages[docs[i].id] for i in idx})
        return len(docs)

    def repassage_missing(self, *, user_id: str | None = None, batch: int = 256) -> int:
        """Passage every document that holds none (of one user, or all): after a re-embedding, or stored before."""
        store = self._core.store
        if not isinstance(store, PassageIndex):
            return 0
        done = 0
        while True:
            pending = store.unpassaged(user_id, batch)
            if not pending:
                return done
            done += self.repassage(pending)
