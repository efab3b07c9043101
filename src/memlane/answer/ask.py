"""``Memory.ask``: route a question to a structured query or to semantic search, and return a typed ``Answer``.

Offline the rules route (``structured/rules.py``); with an LLM configured the model picks the tool and may write
the structured query itself (validated before it runs; the rules take over when it is unusable), then answers
from the fenced context with claims that cite memory ids, each citation checked against the evidence given.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Sequence
from datetime import datetime
from typing import Literal, Protocol

from pydantic import BaseModel, ConfigDict, Field

from memlane.answer.context import assemble
from memlane.answer.fence import ItemFence
from memlane.answer.llm import Claim, generate, route, to_query, unsupported_claims
from memlane.enrich.entities import AliasRow
from memlane.errors import MemlaneError
from memlane.llm.base import ChatModel
from memlane.models import Hit, MemoryItem
from memlane.structured.rules import Vocabulary, translate
from memlane.structured.run import StructuredResult, StructuredSource, run_query

log = logging.getLogger(__name__)

Route = Literal["structured", "search"]


class Answer(BaseModel):
    """What ``ask`` found: the route taken and why, the answer, the evidence and, with an LLM, checked claims.

    ``answer`` is the structured result's answer, else the generated answer, else (offline search) the text of the
    best hit. ``unsupported`` lists generated claims whose citations are missing or point outside the evidence.
    """

    model_config = ConfigDict(extra="forbid")

    question: str
    route: Route
    reason: str
    answer: str | None = None
    structured: StructuredResult | None = None
    hits: list[Hit] = Field(default_factory=list)
    generated: str | None = None
    claims: list[Claim] = Field(default_factory=list)
    unsupported: list[Claim] = Field(default_factory=list)

    @property
    def grounded(self) -> bool:
        """Whether every generated claim cites evidence it was given (trivially true without a generated answer)."""
        return not self.unsupported

    def explain(self) -> list[str]:
        """The route, the structured query with the statements it ran and what they found, and the citations."""
        lines = [f"route: {self.route} ({self.reason})"]
        if self.structured is not None:
            s = self.structured
            lines.append(f"query: {s.query}")
            for st in s.statements:
                lines.append(f"  sql: {st.sql}")
                lines.append(f"  params: {st.params}")
            lines.append(f"result: {s.answer} (value {s.value!r}; {len(s.memories)} evidence memories)")
        if self.generated is not None:
            lines.append(f"generated: {self.generated}")
            for c in self.claims:
                mark = "UNSUPPORTED " if c in self.unsupported else ""
                lines.append(f"  {mark}claim: {c.text} [{', '.join(c.memory_ids)}]")
        return lines


class AskStore(StructuredSource, Protocol):
    """What ``ask`` reads directly: the structured primitives, memories by id, and the user's entity table."""

    def entity_aliases(self, user_id: str) -> list[AliasRow]: ...


Search = Callable[[str, int], list[Hit]]


class Asker:
    """Answers questions over one store, through ``search`` (the read path) and, when given, a chat model."""

    def __init__(self, store: AskStore, search: Search, fence: ItemFence, chat: ChatModel | None) -> None:
        self._store = store
        self._search = search
        self._fence = fence
        self._chat = chat

    def ask(self, question: str, user_id: str, *, top_k: int, now: datetime, token_budget: int) -> Answer:
        """Route, run, search for evidence and (with a chat model) generate a cited answer."""
        vocab = Vocabulary.from_rows(self._store.entity_aliases(user_id))
        structured: StructuredResult | None = None
        reason = "no structured rule matched: semantic search"
        note = ""  # why the model's choice was not used, kept in front of the rules' reason
        use_search_only = False
        if self._chat is not None:
            try:
                choice = route(self._chat, question, vocab, now)
                if choice.tool == "search":
                    use_search_only, reason = True, "the model chose semantic search"
                elif choice.query is not None:
                    structured = run_query(self._store, user_id, to_query(choice.query, vocab))
                    reason = "the model wrote a structured query (validated)"
            except MemlaneError as exc:
                log.info("LLM routing unusable, rules decide: %s", exc)
                note = f"the model's routing was unusable ({str(exc)[:120]}); rules decide: "
        if structured is None and not use_search_only:
            translation = translate(question, vocab, now)
            if translation is not None:
                found = run_query(self._store, user_id, translation.query)
                if found.found_nothing:
                    reason = f"rule {translation.rule} found nothing ({found.answer}): semantic search"
                else:
                    structured, reason = found, f"rule {translation.rule}"
            reason = note + reason
        hits = self._search(question, top_k)
        answer = Answer(
            question=question,
            route="structured" if structured is not None else "search",
            reason=reason,
            structured=structured,
            hits=hits,
        )
        if self._chat is not None:
            self._generate(answer, token_budget)
        if structured is not None:
            answer.answer = structured.answer
        elif answer.generated is not None:
            answer.answer = answer.generated
        elif hits:
            answer.answer = hits[0].memory.text
        return answer

    def _generate(self, answer: Answer, token_budget: int) -> None:
        assert self._chat is not None
        extra: Sequence[MemoryItem] = answer.structured.memories if answer.structured else ()
        ctx = assemble(answer.hits, token_budget=token_budget, fence=self._fence, extra=extra)
        summary = None
        if answer.structured is not None:
            summary = f"{answer.structured.query} -> {answer.structured.answer}"
        try:
            reply = generate(self._chat, answer.question, ctx.text, summary)
        except MemlaneError as exc:
            log.info("answer generation failed: %s", exc)
            answer.reason += f"; no generated answer ({str(exc)[:120]})"
            return
        answer.generated = reply.answer
        answer.claims = reply.claims
        answer.unsupported = unsupported_claims(reply.claims, {m.id for m in ctx.memories})
