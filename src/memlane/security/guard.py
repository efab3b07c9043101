"""The ingest hook of the security pipeline: scan new memories for injection, redact their PII, and record the
flags and sealed originals in the store before the memories are written (so a crash leaves them flagged).

Also the read side the context assembly needs: the flags of a set of memories, a typed memory inheriting the
flag of a flagged message it was extracted from.
"""

from __future__ import annotations

import builtins
import logging
import threading
from collections import OrderedDict
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Protocol

from memlane.config import Config
from memlane.embedding.base import Vectors
from memlane.llm.base import ChatModel
from memlane.models import InjectionFlag, MemoryItem, utcnow
from memlane.security.detect import CombinedDetector, Detector, LayeredDetector, RulesDetector
from memlane.security.redact import check_kinds, redact
from memlane.security.vault import Vault
from memlane.store.base import RecordReader, SecurityLog
from memlane.store.records import SealedOriginal

log = logging.getLogger(__name__)


def make_detector(config: Config, chat: ChatModel | None = None) -> Detector | None:
    """The detector ``config.injection_detector`` names (``None`` when it is off)."""
    name = config.injection_detector
    if name == "off":
        return None
    if name == "rules":
        return RulesDetector()
    fast = CombinedDetector(threshold=config.injection_threshold)
    if name == "llm" and chat is not None:
        from memlane.security.judge import LLMJudge

        return LayeredDetector(fast, LLMJudge(chat))
    return fast


class VectorMemo:
    """Vectors computed ahead of a write (for the detector) that the write itself then takes instead of embedding
    the same text again: keyed by the store's embedding key of the exact text, bounded, thread-safe.
    """

    def __init__(self, limit: int = 1024) -> None:
        self.limit = limit
        self._held: OrderedDict[str, Vectors] = OrderedDict()
        self._lock = threading.Lock()

    def put(self, keys: Sequence[str], vectors: Vectors) -> None:
        with self._lock:
            for key, vec in zip(keys, vectors, strict=True):
                self._held[key] = vec
                self._held.move_to_end(key)
            while len(self._held) > self.limit:
                self._held.popitem(last=False)

    def take(self, keys: Sequence[str]) -> dict[str, Vectors]:
        """The held vectors of ``keys`` (each given out once)."""
        with self._lock:
            return {k: self._held.pop(k) for k in keys if k in self._held}


@dataclass
class Screened:
    """What screening a batch decided: flags to record and sealed originals to keep (texts were redacted in place)."""

    flags: list[InjectionFlag] = field(default_factory=list)
    originals: list[SealedOriginal] = field(default_factory=list)
    clean: list[str] = field(default_factory=list)  # ids scanned and not flagged


class Guard:
    """Runs the configured detector and redactor over memories about to be stored."""

    def __init__(self, config: Config, chat: ChatModel | None = None, detector: Detector | None = None) -> None:
        self.detector = detector if detector is not None else make_detector(config, chat)
        self.kinds = check_kinds(config.redact_pii)
        self._key_path = config.pii_key
        self._vault: Vault | None = None

    @property
    def vault(self) -> Vault:
        """The vault sealing redacted originals (its key file is created on first use)."""
        if self._vault is None:
            self._vault = Vault(self._key_path)
        return self._vault

    def wants_vectors(self, identity: str | None, dim: int | None = None) -> bool:
        """Whether the detector reads the embeddings of the embedder ``identity`` (its head was fitted on them)."""
        return isinstance(self.detector, CombinedDetector | LayeredDetector) and self.detector.reads_vectors(
            identity, dim
        )

    def screen(self, items: Sequence[MemoryItem], vectors: Vectors | None = None) -> Screened:
        """Scan each item's text (as given) for injection, then redact its PII in place, sealing the original.

        ``vectors`` (one row per item, of the embedder ``wants_vectors`` accepted) are what the store will keep for
        the items; the detector's embedding head reads them.
        """
        out = Screened()
        if not items:
            return out
        now = utcnow()
        if self.detector is not None:
            texts = [it.text for it in items]
            if vectors is not None and isinstance(self.detector, CombinedDetector | LayeredDetector):
                verdicts = self.detector.scan_embedded(texts, vectors)
            else:
                verdicts = self.detector.scan(texts)
            for item, v in zip(items, verdicts, strict=True):
                if v.flagged:
                    out.flags.append(
                        InjectionFlag(
                            memory_id=item.id,
                            score=min(max(v.score, 0.0), 1.0),
                            reasons=list(v.reasons),
                            detector=v.detector,
                            flagged_at=now,
                        )
                    )
                    log.info("memory %s flagged as a likely injection (%s)", item.id, ", ".join(v.reasons))
                else:
                    out.clean.append(item.id)
        if self.kinds:
            for item in items:
                red = redact(item.text, self.kinds)
                if red.changed:
                    out.originals.append(SealedOriginal(item.id, self.vault.seal(item.text), red.kinds, now))
                    item.text = red.text
        return out

    @staticmethod
    def record(store: SecurityLog, user_id: str, screened: Screened) -> None:
        """Write the flags and sealed originals (before the memories themselves: a crash leaves them flagged)."""
        store.put_flags(user_id, screened.flags)
        store.put_originals(user_id, screened.originals)

    def reveal(self, store: SecurityLog, user_id: str, memory_id: str) -> str | None:
        """The original text of a redacted memory, or ``None`` when its text was not redacted."""
        sealed = store.original(user_id, memory_id)
        return None if sealed is None else self.vault.unseal(sealed.sealed)


class _FlagReader(RecordReader, SecurityLog, Protocol):
    """What ``flags_for`` reads: memories and their flags."""


def flags_for(store: _FlagReader, user_id: str, items: Sequence[MemoryItem]) -> dict[str, InjectionFlag]:
    """The flag of each of ``items`` that is flagged itself or was extracted from a flagged source message."""
    own = store.flags(user_id, [it.id for it in items])
    sources = {s.memory_id for it in items if it.id not in own for s in it.sources}
    inherited = store.flags(user_id, builtins.list(sources)) if sources else {}
    out = dict(own)
    for it in items:
        if it.id in out:
            continue
        for s in it.sources:
            flag = inherited.get(s.memory_id)
            if flag is not None:
                out[it.id] = flag.model_copy(update={"memory_id": it.id, "inherited_from": s.memory_id})
                break
    return out
