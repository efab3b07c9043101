"""What a scope says about itself, for the planner to decide which dimensions apply: how rare a term or an entity
is among its memories, and which of its sessions are conversations.

Each rule beyond dense + BM25 engages only on evidence from the query *and* the scope:

- an exact-match term raises the keyword weight only in proportion to its rarity in the scope (``term_rarity``): an
  identifier that a handful of memories hold is what BM25 finds and an embedding blurs; a class name that hundreds
  of passages repeat says little about which one is meant;
- a mention of an entity counts in proportion to how rare the entity is in the scope (``entity_rarity``, as a term's
  rarity: nothing from ``sqrt(N)`` memories on);
- the turns around a memory (the context and session dimensions) count only in a session whose turns alternate
  between speakers or roles (``ConversationMap``): a batch of documents or notes added together, without a session
  and all by one role, shares one implicit session at consecutive positions without being each other's context.
"""

from __future__ import annotations

import math
import re
import threading
from collections.abc import Iterable, Mapping, Sequence
from typing import Final, Protocol

from memlane.models import Filters, MemoryItem
from memlane.store.records import Position

# The words the full-text index splits a term into (unicode61: letters and digits; "_", "." and "-" separate).
_INDEX_WORD: Final = re.compile(r"[^\W_]+", re.UNICODE)


class _Counts(Protocol):
    def count(self, user_id: str | None = None) -> int: ...

    def text_search(
        self, user_id: str, terms: Sequence[str], limit: int | None, filters: Filters
    ) -> list[tuple[str, float]]: ...

    def entity_memories(self, user_id: str, entity: str, limit: int) -> list[str]: ...

    def get_many(self, user_id: str, memory_ids: Sequence[str]) -> dict[str, MemoryItem]: ...


def rarity(df: int, n: int) -> float:
    """How rare a term held by ``df`` of a scope's ``n`` memories is, in [0, 1]: 1 for a term only one memory holds,
    falling with log(df) to 0 at ``df = sqrt(n)`` and beyond (``1 - 2 log df / log n``; a normalised IDF, shifted so
    that a term in more than the square root of the scope is no evidence). 0 for a term no memory holds.
    """
    if df <= 0:
        return 0.0
    if n <= 2:
        return 1.0 if df <= 1 else 0.0
    return min(max(1.0 - 2.0 * math.log(df) / math.log(n), 0.0), 1.0)


def idf_weight(df: int, n: int) -> float:
    """A normalised IDF in [0, 1]: ``log(n / df) / log(n)`` (1 for a memory's own entity, 0 for one all hold)."""
    if df <= 0:
        return 0.0
    if n <= 1:
        return 1.0
    return min(max(math.log(n / df) / math.log(n), 0.0), 1.0)


class Frequencies:
    """How many of a user's memories hold a word (in their text or their previous turn's; counted up to the square
    root of the scope) or involve an entity, remembered while the scope's size stays within 1% (a rarity moves with
    log df / log n: a count 1% stale changes it by less than that; a write that grows the scope further reads again).
    """

    def __init__(self, store: _Counts) -> None:
        self._store = store
        self._seen: dict[tuple[str, str, str, int], int] = {}
        self._lock = threading.Lock()

    def _remembered(self, key: tuple[str, str, str, int]) -> int | None:
        with self._lock:
            return self._seen.get(key)

    def _remember(self, key: tuple[str, str, str, int], value: int) -> int:
        with self._lock:
            if len(self._seen) >= _MAX_WORDS:
                self._seen.clear()
            self._seen[key] = value
        return value

    def of(self, user_id: str, word: str, n: int) -> int:
        """Memories holding ``word``, up to ``sqrt(n) + 1``."""
        key = (user_id, "w", word, _bucket(n))
        found = self._remembered(key)
        if found is not None:
            return found
        cap = math.isqrt(max(n, 1)) + 1
        return self._remember(key, len(self._store.text_search(user_id, [word], cap, Filters())))

    def entity(self, user_id: str, entity: str, n: int) -> int:
        """Memories involving ``entity``."""
        key = (user_id, "e", entity, _bucket(n))
        found = self._remembered(key)
        if found is not None:
            return found
        return self._remember(key, len(self._store.entity_memories(user_id, entity, max(n, 1))))


def _bucket(n: int) -> int:
    """Scope sizes within about 1% of each other share a bucket."""
    return round(math.log1p(n) * 100)


def term_rarity(frequencies: Frequencies, user_id: str, terms: Sequence[str], n: int) -> dict[str, float]:
    """The rarity (``rarity``) of each exact-match term in the user's scope: that of its rarest index word (the
    full-text index splits ``ERR_QUOTA_17`` into three words; the term is at most as common as its rarest one).
    Costs one BM25 lookup per word, each cut at the square root of the scope (past which a word is no evidence).
    """
    out: dict[str, float] = {}
    for term in terms:
        words = dict.fromkeys(w.lower() for w in _INDEX_WORD.findall(term))
        out[term] = max((rarity(frequencies.of(user_id, w, n), n) for w in words), default=0.0)
    return out


def specificity(frequencies: Frequencies, user_id: str, terms: Sequence[str], n: int) -> float | None:
    """How specific the query's words are in the user's scope: the normalised IDF (``idf_weight``) of its rarest
    word that some memory holds, a word held by more than the square root of the scope counted as held by just
    that many (about 0.5: the lookups stay cheap, and a common word still says something). None when no word is
    held by any memory (BM25 then finds nothing anyway).

    BM25 scores rank documents by the query's words, and min-max makes the best of them 1.0 however common those
    words are; a query whose words hundreds of passages repeat ("how do I change the last commit?") gives BM25 little
    to go on, and the keyword weight is scaled by this.
    """
    found = [df for t in dict.fromkeys(terms) if (df := frequencies.of(user_id, t, n)) > 0]
    return max(idf_weight(df, n) for df in found) if found else None


def entity_rarity(frequencies: Frequencies, user_id: str, entities: Sequence[str], n: int) -> dict[str, float]:
    """The rarity (``rarity``) of each entity among the user's ``n`` memories: as for an exact-match term, an entity
    that more than the square root of the scope involves is no evidence of which memory is meant (documentation
    passages share "git" or "Django").

    Counted two ways, the rarer reading losing: the memories that involve the entity, and those whose text holds its
    name's words (as ``term_rarity`` counts a term: by its rarest word). A word the extractor misread as a name in a
    few memories ("Possible values ...") is held by hundreds more as a plain word ("is it possible to ...?"): a query
    that says it names nothing in particular.
    """
    out: dict[str, float] = {}
    for e in entities:
        involved = rarity(frequencies.entity(user_id, e, n), n)
        words = dict.fromkeys(w.lower() for w in _INDEX_WORD.findall(e))
        held = [df for w in words if (df := frequencies.of(user_id, w, n))]
        # a name no text holds (only metadata, say) is counted by the memories involving it alone
        out[e] = min(involved, max(rarity(df, n) for df in held)) if held else involved
    return out


#: A session is a conversation when at least this share of its adjacent turns (seen so far) change speaker or role.
ALTERNATION: Final = 0.25
#: Turns read per session to decide (the ones around the query's best matches).
SAMPLE: Final = 24
_MAX_SESSIONS: Final = 100_000
_MAX_WORDS: Final = 200_000


def _label(item: MemoryItem) -> tuple[str, str]:
    return (item.role or "", (item.speaker or "").casefold())


def alternates(items: Iterable[MemoryItem]) -> bool:
    """Whether turns of one session alternate between speakers or roles: at least ``ALTERNATION`` of the pairs at
    consecutive positions differ in speaker or role (with no such pair, whether two speakers or roles are seen).
    """
    by_position = {i.position: _label(i) for i in items if i.position is not None}
    pairs = [(by_position[p], by_position[p + 1]) for p in by_position if p + 1 in by_position]
    if pairs:
        return sum(a != b for a, b in pairs) >= ALTERNATION * len(pairs)
    return len(set(by_position.values())) > 1


class ConversationMap:
    """Which sessions of which users are conversations, decided from their turns and remembered.

    A session's verdict is read off the turns a search brings into its pool (those around its best matches) and
    kept; a session judged not to be one is judged again when a turn past the ones seen appears (turns were added).
    """

    def __init__(self) -> None:
        self._verdicts: dict[tuple[str, str | None], tuple[bool, int]] = {}
        self._lock = threading.Lock()

    def sessions(self, store: _Counts, user_id: str, where: Mapping[str, Position]) -> set[str | None]:
        """The sessions among ``where`` (memory -> session and position) that are conversations."""
        members: dict[str | None, list[tuple[int, str]]] = {}
        for mid, (session, position) in where.items():
            members.setdefault(session, []).append((position, mid))
        talk: set[str | None] = set()
        for session, turns in members.items():
            last = max(p for p, _ in turns)
            with self._lock:
                known = self._verdicts.get((user_id, session))
            if known is not None and (known[0] or last <= known[1]):
                if known[0]:
                    talk.add(session)
                continue
            sample = [mid for _, mid in sorted(turns)[-SAMPLE:]]
            verdict = alternates(store.get_many(user_id, sample).values())
            with self._lock:
                if len(self._verdicts) >= _MAX_SESSIONS:
                    self._verdicts.clear()
                self._verdicts[(user_id, session)] = (verdict, last)
            if verdict:
                talk.add(session)
        return talk
