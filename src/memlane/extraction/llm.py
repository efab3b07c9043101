"""``LLMExtractor``: typed memories from a chat model, in batches, under a concurrency limit, never losing a turn."""

from __future__ import annotations

import logging
import re
import threading
from collections.abc import Sequence
from concurrent.futures import ThreadPoolExecutor
from datetime import datetime

from memlane.errors import ConfigError, LLMError
from memlane.extraction.base import Candidate, ExtractionFailure, ExtractionResult
from memlane.extraction.parsing import StructuredOutputError, complete_structured
from memlane.extraction.prompts import extract as extract_prompt
from memlane.extraction.rewrite import absolutise, finish_sentence, in_third_person
from memlane.llm.base import ChatModel
from memlane.models import MemoryItem, MemoryKind, parse_time

log = logging.getLogger(__name__)

_LABEL = re.compile(r"[mre]\d+", re.IGNORECASE)  # the prompt's turn labels, which small models echo as entities
_FIRST_PERSON = re.compile(r"\b(?:I|I'm|I've|I'll|I'd|my|me|mine|myself)\b")

Window = tuple[Sequence[MemoryItem], Sequence[MemoryItem]]


class LLMExtractor:
    """Extracts with a ``ChatModel`` through the ``extract`` prompt and its output schema.

    A window is cut into batches of ``batch_size`` messages; batches run on threads, at most ``max_workers`` at a
    time per extractor (shared by concurrent ``extract`` calls). Each batch gets the ``known_limit`` first related
    memories as context. A batch whose replies stay unusable after ``reasks`` re-asks, or whose call fails after the
    client's retries, becomes an ``ExtractionFailure`` naming its message ids, so the caller can record it for a
    later retry; the other batches' candidates are still returned.
    """

    def __init__(
        self,
        chat: ChatModel,
        *,
        batch_size: int = 12,
        max_workers: int = 2,
        reasks: int = 1,
        max_tokens: int = 1024,
        temperature: float = 0.0,
        known_limit: int = 20,
    ) -> None:
        if batch_size <= 0 or max_workers <= 0 or reasks < 0 or max_tokens <= 0 or known_limit < 0:
            raise ConfigError(
                "batch_size, max_workers and max_tokens must be positive; reasks, known_limit not negative"
            )
        self.chat = chat
        self.batch_size = batch_size
        self.max_workers = max_workers
        self.reasks = reasks
        self.max_tokens = max_tokens
        self.temperature = temperature
        self.known_limit = known_limit
        self._slots = threading.BoundedSemaphore(max_workers)

    def __repr__(self) -> str:
        return f"LLMExtractor(chat={self.chat!r}, batch_size={self.batch_size}, max_workers={self.max_workers})"

    @property
    def identity(self) -> str:
        return f"llm:{self.chat.identity}:{extract_prompt.PROMPT.name}-v{extract_prompt.PROMPT.version}"

    def extract(self, window: Sequence[MemoryItem], related: Sequence[MemoryItem] = ()) -> ExtractionResult:
        """Candidates from ``window``; failed batches are reported in ``errors``, never raised."""
        return self.extract_many([(window, related)])[0]

    def extract_many(self, windows: Sequence[Window]) -> list[ExtractionResult]:
        """Extract several windows at once, all their batches sharing the concurrency limit; one result each."""
        jobs: list[tuple[int, Sequence[MemoryItem], Sequence[MemoryItem]]] = []
        for index, (window, related) in enumerate(windows):
            messages = list(window)
            for start in range(0, len(messages), self.batch_size):
                jobs.append((index, messages[start : start + self.batch_size], related))
        results = [ExtractionResult() for _ in windows]
        if not jobs:
            return results
        with ThreadPoolExecutor(
            max_workers=min(self.max_workers, len(jobs)), thread_name_prefix="memlane-extract"
        ) as pool:
            outcomes = list(pool.map(lambda job: self._guarded(job[1], job[2]), jobs))
        for (index, _, _), outcome in zip(jobs, outcomes, strict=True):
            result = results[index]
            result.candidates.extend(outcome.candidates)
            result.errors.extend(outcome.errors)
            result.usage = result.usage + outcome.usage
        return results

    def _guarded(self, batch: Sequence[MemoryItem], related: Sequence[MemoryItem]) -> ExtractionResult:
        with self._slots:
            return self._extract_batch(batch, related)

    def _extract_batch(self, batch: Sequence[MemoryItem], related: Sequence[MemoryItem]) -> ExtractionResult:
        ids = [m.id for m in batch]
        labels = {f"m{i + 1}": m.id for i, m in enumerate(batch)}
        turns = [(label, m.speaker, m.role, m.timestamp, m.text) for label, m in zip(labels, batch, strict=True)]
        known = [(f"r{i + 1}", r.kind.value, r.text) for i, r in enumerate(related[: self.known_limit])]
        messages = extract_prompt.render(turns, known)
        try:
            done = complete_structured(
                self.chat,
                messages,
                extract_prompt.PROMPT,
                max_tokens=self.max_tokens,
                temperature=self.temperature,
                reasks=self.reasks,
            )
        except StructuredOutputError as e:
            log.warning("extraction of %d messages failed: %s", len(ids), e)
            raw = e.replies[-1].text if e.replies else None
            return ExtractionResult(
                usage=e.usage, errors=[ExtractionFailure(source_ids=ids, reason=str(e), raw_reply=raw)]
            )
        except LLMError as e:
            log.warning("extraction of %d messages failed: %s", len(ids), e)
            return ExtractionResult(errors=[ExtractionFailure(source_ids=ids, reason=str(e))])
        by_id = {m.id: m for m in batch}
        candidates: list[Candidate] = []
        seen: set[str] = set()
        for memory in done.output.memories:
            key = " ".join(memory.text.casefold().split())
            if key in seen:  # small models repeat themselves
                continue
            seen.add(key)
            sources = [labels.get(s.strip(), s.strip()) for s in memory.sources]
            sources = [s for s in dict.fromkeys(sources) if s in by_id] or ids
            candidates.append(
                Candidate(
                    kind=MemoryKind(memory.kind),
                    text=_standalone(memory.text, [by_id[s] for s in sources]),
                    confidence=memory.confidence,
                    importance=memory.importance,
                    entities=list(dict.fromkeys(e for e in memory.entities if not _LABEL.fullmatch(e))),
                    event_time=_date(memory.event_time),
                    source_ids=sources,
                    subject=_clean(memory.subject),
                    attribute=_clean(memory.attribute),
                    value=_clean(memory.value),
                )
            )
        return ExtractionResult(candidates=candidates, usage=done.usage)


def _standalone(text: str, sources: Sequence[MemoryItem]) -> str:
    """The model's text, repaired when it did not follow the prompt: first person and relative dates rewritten.

    Only when all its sources have one known speaker (else "I" is ambiguous); dates resolve against the first source.
    """
    text = " ".join(text.split())
    speakers = {m.speaker for m in sources}
    if len(speakers) != 1 or None in speakers or not _FIRST_PERSON.search(text):
        return text
    (speaker,) = speakers
    assert speaker is not None
    absolute, _ = absolutise(text, sources[0].timestamp)
    return finish_sentence(in_third_person(absolute, speaker))


def _date(value: str | None) -> datetime | None:
    """An ISO date or datetime from the model, or ``None`` when absent or unreadable."""
    if not value or not value.strip():
        return None
    try:
        return parse_time(value.strip())
    except ValueError:
        log.debug("ignoring unreadable event_time %r", value)
        return None


def _clean(value: str | None) -> str | None:
    if value is None:
        return None
    value = " ".join(value.split())
    return value or None
