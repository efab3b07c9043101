"""The LLM judge: asks the configured chat model whether a text is a prompt injection (a ``Detector``)."""

from __future__ import annotations

import logging
from collections.abc import Sequence

from memlane.errors import LLMError
from memlane.extraction.parsing import complete_structured
from memlane.extraction.prompts import injection as injection_prompt
from memlane.llm.base import ChatModel
from memlane.security.detect import Verdict

log = logging.getLogger(__name__)

JUDGE_CHARS = 8_000


class LLMJudge:
    """One structured call per text; a failed call leaves the text unjudged (score 0, reason ``judge_failed``),
    so the fast detector's verdict stands and ingest never fails because the model is down.
    """

    def __init__(self, chat: ChatModel, *, min_confidence: float = 0.5, max_tokens: int = 256) -> None:
        self.chat = chat
        self.min_confidence = min_confidence
        self.max_tokens = max_tokens

    @property
    def name(self) -> str:
        return "llm-judge"

    def scan(self, texts: Sequence[str]) -> list[Verdict]:
        out = []
        for text in texts:
            messages = injection_prompt.render(text[:JUDGE_CHARS])
            try:
                done = complete_structured(self.chat, messages, injection_prompt.PROMPT, max_tokens=self.max_tokens)
            except LLMError as exc:
                log.warning("the injection judge failed, keeping the fast verdict: %s", exc)
                out.append(Verdict(0.0, False, ("judge_failed",), self.name))
                continue
            j = done.output
            score = j.confidence if j.injection else 1.0 - j.confidence
            flagged = j.injection and j.confidence >= self.min_confidence
            reason = f"llm:{j.reason[:120]}" if j.reason else "llm"
            out.append(Verdict(round(score, 4), flagged, (reason,), self.name))
        return out
