"""One user's read model in memory: the facts the dimensions read and a BM25 inverted index, kept by replaying changes.

Why hand-written: the read path asks, per search, for the BM25 top-k of one user's memories, the exact BM25 of a
few dozen others, and the time, session, position, labels and validity of about a hundred candidates. In SQLite that
was a dozen queries and an FTS5 ``bm25()`` over every matching row of the whole file (O(matches), about 1,650 rows a
search at 10k memories, 16,000 at 100k). Here postings are numpy views over append-only arrays per term, so a search
costs O(postings of its terms) in vectorised numpy and the facts are list lookups. Nothing here is persisted: the
database stays the source of truth, the model is rebuilt from it when a process first searches a user, and a
deleted memory's words never reach a file through it.

Scores are FTS5's ``bm25()`` (k1 = 1.2, b = 0.75; the previous turn's words at weight 0.4, as the ``ctx`` column)
over this user's memories alone, as the PostgreSQL store computes them: one user's scores never depend on another's.
"""

from __future__ import annotations

import math
from array import array
from collections.abc import Iterable, Sequence
from typing import Final

import numpy as np

from memlane.store.hot.rows import BULK, Grow, HotRow, from_micros, post, post_many, terms_of, without_text
from memlane.store.hot.termcache import TermCache, TermEntry, gather
from memlane.store.hot.tokens import query_tokens
from memlane.store.records import CandidateFacts

K1: Final = 1.2
B: Final = 0.75
#: Weight of the previous turn's words (FTS5's ``ctx`` column) relative to the memory's own.
CONTEXT_WEIGHT: Final = 0.4


class HotScope:
    """The read model of one user. Not thread-safe: its owner (``HotScopes``) serialises access."""

    def __init__(self, applied_seq: int = 0) -> None:
        self.applied_seq = applied_seq
        self.erasures_seen = 0  # the store's erasure counter this model has accounted for
        self.rows: list[HotRow | None] = []  # by slot; None once removed or replaced (slots are never reused)
        self._slot_of_pk: dict[int, int] = {}
        self._slot_of_id: dict[str, int] = {}
        self._turn: dict[tuple[str | None, int], int] = {}  # (session, position) -> slot, messages only
        self._at: dict[tuple[str | None, int], list[int]] = {}  # (session, position) -> slots, any kind
        self._alive = Grow(np.bool_, False)
        self._current = Grow(np.bool_, False)
        self._length = Grow(np.float64, 0.0)  # tokens of the body
        self._ctx_length = Grow(np.float64, 0.0)  # tokens of the text (as context of the next turn)
        self._prev = Grow(np.int64, -1)
        self._next = Grow(np.int64, -1)
        self._pk = Grow(np.int64, 0)
        self._postings: dict[str, tuple[array[int], array[float]]] = {}  # term -> (slots, counts) in bodies
        self._ctx_postings: dict[str, tuple[array[int], array[float]]] = {}  # the same in texts, for next turns
        self._facts: dict[int, CandidateFacts] = {}  # by slot, built when first asked
        self._mentions: dict[str, int] = {}  # entity -> memories involving it
        self._said: dict[str, int] = {}  # entity -> memories it said
        self._live = 0
        self._dead = 0
        self._stats: tuple[float, float] | None = None  # (documents, mean length), until a change
        self._memo: tuple[tuple[str, ...], np.ndarray, np.ndarray] | None = None
        self._terms = TermCache()  # each common term's matches, kept between searches (store/hot/termcache.py)

    def __len__(self) -> int:
        return self._live

    # -- changes ---------------------------------------------------------------------------------------------
    def apply(self, rows: Iterable[HotRow], removed: Iterable[int] = ()) -> None:
        """Remove ``removed`` (row keys), then put ``rows`` (a row already held is replaced)."""
        for pk in removed:
            self._remove(pk)
        batch = rows if isinstance(rows, list) else list(rows)
        if len(batch) >= BULK:
            self._add_many(batch)
        else:
            for row in batch:
                self._remove(row.pk)
                self._add(row)
        self._stats = None
        self._memo = None
        if self._dead > max(1_000, self._live):
            self._compact()

    def _add(self, row: HotRow) -> None:
        slot = self._place(row)
        own, ctx = terms_of(row)
        self._length.a[slot] = post(self._postings, slot, own)
        if ctx is not None:
            self._ctx_length.a[slot] = post(self._ctx_postings, slot, ctx)
        # Its words are new matches, and so are its text's words in its next turn; the turns around it change length
        # or context (a kept entry holding one of them, as a match or a context source, is recomputed).
        self._terms.changed((slot, int(self._prev.a[slot]), int(self._next.a[slot])), [*own, *(ctx or ())])

    def _add_many(self, rows: list[HotRow]) -> None:
        """Put many rows at once: the postings are grouped by term in numpy, not appended one by one."""
        own_terms: list[str] = []
        own_slots: list[int] = []
        ctx_terms: list[str] = []
        ctx_slots: list[int] = []
        need = len(self.rows) + len(rows)
        for g in (self._alive, self._current, self._length, self._ctx_length, self._prev, self._next, self._pk):
            g.ensure(need)
        for row in rows:
            self._remove(row.pk)
            slot = self._place(row)
            own, ctx = terms_of(row)
            self._length.a[slot] = len(own)
            own_terms.extend(own)
            own_slots.extend([slot] * len(own))
            if ctx is not None:
                self._ctx_length.a[slot] = len(ctx)
                ctx_terms.extend(ctx)
                ctx_slots.extend([slot] * len(ctx))
        post_many(self._postings, own_terms, own_slots)
        post_many(self._ctx_postings, ctx_terms, ctx_slots)
        self._terms.clear()

    def _place(self, row: HotRow) -> int:
        """Give ``row`` a slot and enter everything of it but its postings; the slot."""
        slot = len(self.rows)
        # The model keeps no text: the words live on in the postings only (and only in memory).
        self.rows.append(without_text(row))
        if slot >= len(self._pk.a):
            for g in (self._alive, self._current, self._length, self._ctx_length, self._prev, self._next, self._pk):
                g.ensure(slot + 1)
        self._slot_of_pk[row.pk] = slot
        self._slot_of_id[row.id] = slot
        self._alive.a[slot] = True
        self._current.a[slot] = row.current
        self._pk.a[slot] = row.pk
        if row.position is not None:
            self._at.setdefault((row.session_id, row.position), []).append(slot)
        if row.kind == "message" and row.position is not None:
            key = (row.session_id, row.position)
            self._turn[key] = slot
            before = self._turn.get((row.session_id, row.position - 1), -1)
            after = self._turn.get((row.session_id, row.position + 1), -1)
            # a turn takes its previous turn as context only as a reply (another role or speaker): see turn_label
            if before >= 0 and self._said_by(before) == row.label:
                before = -1
            if after >= 0 and self._said_by(after) == row.label:
                after = -1
            self._prev.a[slot] = before
            self._next.a[slot] = after
            if before >= 0:
                self._next.a[before] = slot
            if after >= 0:
                self._prev.a[after] = slot
        for entity, said in row.entities.items():
            self._mentions[entity] = self._mentions.get(entity, 0) + 1
            if said:
                self._said[entity] = self._said.get(entity, 0) + 1
        self._live += 1
        return slot

    def _said_by(self, slot: int) -> tuple[str, str]:
        row = self.rows[slot]
        return ("", "") if row is None else row.label

    def _remove(self, pk: int) -> None:
        slot = self._slot_of_pk.pop(pk, None)
        if slot is None:
            return
        row = self.rows[slot]
        assert row is not None
        self.rows[slot] = None
        self._facts.pop(slot, None)
        if self._slot_of_id.get(row.id) == slot:
            del self._slot_of_id[row.id]
        self._alive.a[slot] = False
        self._current.a[slot] = False
        before, after = int(self._prev.a[slot]), int(self._next.a[slot])
        self._terms.changed((slot, before, after))
        if before >= 0:
            self._next.a[before] = -1
        if after >= 0:
            self._prev.a[after] = -1
        self._prev.a[slot] = self._next.a[slot] = -1
        if row.position is not None:
            key = (row.session_id, row.position)
            here = self._at.get(key, [])
            if slot in here:
                here.remove(slot)
                if not here:
                    del self._at[key]
            if self._turn.get(key) == slot:
                del self._turn[key]
        for entity, said in row.entities.items():
            for counts, counted in ((self._mentions, True), (self._said, said)):
                if counted:
                    left = counts.get(entity, 0) - 1
                    if left > 0:
                        counts[entity] = left
                    else:
                        counts.pop(entity, None)
        self._live -= 1
        self._dead += 1

    def _compact(self) -> None:
        """Drop removed slots from the postings (slots keep their numbers; only the postings shrink)."""
        alive = self._alive.a
        for postings in (self._postings, self._ctx_postings):
            for t in list(postings):
                slots, tfs = postings[t]
                s = np.frombuffer(slots, dtype=np.int64)
                keep = alive[s]
                if keep.all():
                    continue
                if not keep.any():
                    del postings[t]
                    continue
                kept = np.frombuffer(tfs, dtype=np.float32)[keep]
                postings[t] = (array("q", s[keep].tobytes()), array("f", kept.tobytes()))
        self._dead = 0

    # -- lookups ---------------------------------------------------------------------------------------------
    def row(self, memory_id: str) -> HotRow | None:
        slot = self._slot_of_id.get(memory_id)
        return None if slot is None else self.rows[slot]

    def pk_of(self, memory_id: str) -> int | None:
        row = self.row(memory_id)
        return None if row is None else row.pk

    def ids_of_pks(self, pks: Sequence[int]) -> list[str | None]:
        """The id of each key's memory, in order (None for a key not held)."""
        slot_of, rows = self._slot_of_pk, self.rows
        out: list[str | None] = []
        for pk in pks:
            slot = slot_of.get(pk)
            row = None if slot is None else rows[slot]
            out.append(None if row is None else row.id)
        return out

    def neighbours(self, memory_ids: Sequence[str], width: int) -> dict[str, tuple[str | None, int]]:
        """The memories within ``width`` positions of each listed one in its session (the listed ones included)."""
        out: dict[str, tuple[str | None, int]] = {}
        rows = self.rows
        for mid in memory_ids:
            row = self.row(mid)
            if row is None or row.position is None:
                continue
            for p in range(row.position - width, row.position + width + 1):
                for slot in self._at.get((row.session_id, p), ()):
                    other = rows[slot]
                    if other is not None:
                        out[other.id] = (other.session_id, p)
        return out

    def current(self, memory_ids: Iterable[str]) -> set[str]:
        """Those of ``memory_ids`` that are held and not superseded."""
        out = set()
        for mid in memory_ids:
            slot = self._slot_of_id.get(mid)
            if slot is not None and self._current.a[slot]:
                out.add(mid)
        return out

    def facts(self, memory_ids: Sequence[str], entities: Iterable[str] = ()) -> dict[str, CandidateFacts]:
        """What the dimensions read of each held memory among ``memory_ids`` (with those of ``entities`` it involves)."""
        asked = set(entities)
        out: dict[str, CandidateFacts] = {}
        cache = self._facts
        for mid in memory_ids:
            slot = self._slot_of_id.get(mid)
            if slot is None:
                continue
            facts = cache.get(slot)
            row = self.rows[slot]
            assert row is not None
            if facts is None:
                facts = cache[slot] = CandidateFacts(
                    from_micros(row.ts),
                    row.importance,
                    row.session_id,
                    row.position,
                    None if row.event_time is None else from_micros(row.event_time),
                    None if row.event_end is None else from_micros(row.event_end),
                    row.category,
                    row.intent,
                )
            if asked and row.entities:
                involved = {e: said for e, said in row.entities.items() if e in asked}
                if involved:
                    facts = facts._replace(entities=involved)
            out[mid] = facts
        return out

    def known_entities(self, names: Iterable[str]) -> list[str]:
        """Those of ``names`` that some held memory involves, in name order."""
        return sorted({n for n in names if n in self._mentions})

    def speakers(self, names: Iterable[str]) -> list[str]:
        """Those of ``names`` that said some held memory, in name order."""
        return sorted({n for n in names if n in self._said})

    def superseded_pks(self) -> list[int]:
        """Row keys of the held memories that are superseded."""
        n = len(self.rows)
        stale: list[int] = self._pk.a[:n][self._alive.a[:n] & ~self._current.a[:n]].tolist()
        return stale

    # -- BM25 ------------------------------------------------------------------------------------------------
    def _collection(self) -> tuple[float, float]:
        if self._stats is None:
            n = len(self.rows)
            alive = self._alive.a[:n]
            length = self._length.a[:n]
            prev = self._prev.a[:n]
            total = float(length[alive].sum(dtype=np.float64))
            linked = alive & (prev >= 0)
            total += float(self._ctx_length.a[prev[linked]].sum(dtype=np.float64))
            docs = float(self._live)
            total += docs  # the scope token each entry carries (counted by FTS5 and PostgreSQL alike)
            self._stats = (docs, total / docs if docs else 0.0)
        return self._stats

    def _scored(self, terms: Sequence[str]) -> tuple[np.ndarray, np.ndarray]:
        """(slots, dense scores): every memory that matches any of ``terms`` in its text or its previous turn's, and
        an array over all slots holding each one's BM25 (0 where nothing matched). O(postings of the terms).
        """
        key = tuple(query_tokens(terms))
        if self._memo is not None and self._memo[0] == key:
            return self._memo[1], self._memo[2]
        docs, avgdl = self._collection()
        n = len(self.rows)
        total = np.zeros(n, dtype=np.float64)
        touched: list[np.ndarray] = []
        for t in key:
            entry = self._term(t, n)
            if entry is None:
                continue
            hit = entry.slots
            idf = max(math.log((docs - len(hit) + 0.5) / (len(hit) + 0.5)), 1e-6)
            norm = K1 * (1 - B + B * entry.length / avgdl) if avgdl > 0 else K1
            total[hit] += idf * entry.freq * (K1 + 1) / (entry.freq + norm)
            touched.append(hit)
        if not touched:
            slots = np.empty(0, dtype=np.int64)
        elif len(touched) == 1:
            slots = touched[0]
        else:  # each slot once (O(n) over a bool array: cheaper than sorting the matches)
            mark = np.zeros(n, dtype=np.bool_)
            mark[np.concatenate(touched)] = True
            slots = np.flatnonzero(mark)
        self._memo = (key, slots, total)
        return slots, total

    def _term(self, term: str, n: int) -> TermEntry | None:
        """What ``term`` contributes: the live memories matching it in their own words or their previous turn's
        (ascending), with their weighted frequencies and lengths; None when none does. Kept for common terms.
        """
        entry = self._terms.get(term)
        if entry is not None:
            return entry
        entry = gather(
            self._postings.get(term),
            self._ctx_postings.get(term),
            alive=self._alive.a[:n],
            nxt=self._next.a[:n],
            prev=self._prev.a[:n],
            length=self._length.a[:n],
            ctx_length=self._ctx_length.a[:n],
            context_weight=CONTEXT_WEIGHT,
        )
        if entry is None:
            return None
        self._terms.put(term, entry)
        return entry

    def text_search(self, terms: Sequence[str], limit: int, *, current_only: bool) -> list[tuple[str, float]]:
        """The best ``limit`` by BM25, ties to the older row; only current memories with ``current_only``."""
        slots, total = self._scored(terms)
        if current_only and len(slots):
            slots = slots[self._current.a[slots]]
        if not len(slots) or limit <= 0:
            return []
        scores = total[slots]
        if len(slots) > limit:
            # Everything scoring at least the limit-th best (ties at the edge included), then the exact order.
            edge = np.partition(scores, len(scores) - limit)[len(scores) - limit]
            keep = scores >= edge
            slots, scores = slots[keep], scores[keep]
        order = np.lexsort((self._pk.a[slots], -scores))[:limit]
        rows = self.rows
        return [
            (rows[slot].id, score) for slot, score in zip(slots[order].tolist(), scores[order].tolist(), strict=True)
        ]

    def text_scores(self, terms: Sequence[str], memory_ids: Sequence[str]) -> dict[str, float]:
        """The BM25 of each listed memory that matches (the others score nothing)."""
        _, total = self._scored(terms)
        slot_of, n = self._slot_of_id, len(total)
        held = [(mid, slot) for mid in memory_ids if (slot := slot_of.get(mid)) is not None and slot < n]
        if not held:
            return {}
        scores = total[[slot for _, slot in held]].tolist()
        # A match scores at least its IDF floor (1e-6) times a positive fraction: 0 is no match.
        return {mid: score for (mid, _), score in zip(held, scores, strict=True) if score > 0.0}
