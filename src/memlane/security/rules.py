"""Fast pattern rules for prompt injection: instructions aimed at a model, role markers, tool-call look-alikes,
jailbreak personas, and encoded payloads; each rule has a name (the reason shown to admins) and a weight.

A weight of 1.0 flags on its own; lighter rules only add evidence that the combined detector weighs with the
classifier's score. Rules read the unmasked text (see ``obfuscation.unmask``) and every decoded payload.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Final

from memlane.security.obfuscation import Unmasked


@dataclass(frozen=True)
class Rule:
    """A named pattern and how much its match says (1.0: enough to flag alone).

    ``cues`` and ``marks`` let plain ASCII text skip the pattern: every match holds one of the ``cues`` as a whole
    word (lower case) or one of the ``marks`` characters. A rule with neither always runs.
    """

    name: str
    pattern: re.Pattern[str]
    weight: float
    cues: frozenset[str] = frozenset()
    marks: str = ""


@dataclass(frozen=True)
class RuleMatch:
    """A rule that matched, where (``payload`` when inside decoded base64/hex), and its weight."""

    name: str
    weight: float
    payload: bool = False


def _rx(pattern: str) -> re.Pattern[str]:
    return re.compile(pattern, re.IGNORECASE | re.MULTILINE)


def _cues(words: str) -> frozenset[str]:
    return frozenset(words.split())


_WORD: Final = re.compile(r"\w+")


_PRIOR = r"(?:all|any|every|the|your|my|these|those|previous|prior|above|earlier|preceding|foregoing|initial|original|system|developer|safety|old|former)"
_ORDERS = r"(?:instructions?|prompts?|rules|directions|directives|guidelines|guardrails|constraints|commands|orders|programming|restrictions|tasks?|context)"
_MODEL = r"(?:ai|assistant|language model|llm|chat ?bot|gpt|chatgpt|claude|gemini|bard|the model|a\.i\.)"

RULES: Final[tuple[Rule, ...]] = (
    Rule(
        "override_instructions",
        _rx(
            rf"\b(?:ignore|disregard|forget|override|bypass|skip|drop|abandon|discard|neglect)\b[^.!?\n]{{0,30}}?"
            rf"\b{_PRIOR}\b[^.!?\n]{{0,25}}?\b{_ORDERS}\b"
        ),
        1.0,
        cues=_cues("ignore disregard forget override bypass skip drop abandon discard neglect"),
    ),
    Rule(
        "override_instructions_de",
        _rx(
            r"\b(?:ignorier(?:e|en|t)?|vergiss|vergessen sie|missachte)\b[^.!?\n]{0,40}?"
            r"\b(?:anweisungen|aufgaben|befehle|vorgaben|instruktionen|regeln|alles)\b"
        ),
        1.0,
        cues=_cues("ignorier ignoriere ignorieren ignoriert vergiss vergessen missachte"),
    ),
    Rule(
        "new_instructions",
        _rx(r"\b(?:new|updated|real|actual|secret|hidden)\s+(?:instructions?|task|system prompt|orders)\s*[:\-]"),
        1.0,
        cues=_cues("new updated real actual secret hidden"),
    ),
    Rule(
        "new_instructions_de",
        _rx(r"\b(?:neue|deine neue)\s+(?:aufgabe|anweisung|anweisungen)\b"),
        0.8,
        cues=_cues("neue deine"),
    ),
    Rule(
        "reveal_prompt",
        _rx(
            r"\b(?:reveal|show|print|repeat|output|display|leak|tell me|give me|what (?:is|are|was|were))\b[^.!?\n]{0,30}?"
            r"\b(?:system prompt|(?:your|the) (?:initial |original |hidden |secret )?(?:instructions|prompt|rules)|prompt texts?|initial prompt|hidden prompt)\b"
        ),
        0.9,
        cues=_cues("reveal show print repeat output display leak tell give what"),
    ),
    Rule(
        "role_marker",
        _rx(
            r"<\|(?:im_start|im_end|system|user|assistant|endoftext|begin_of_text|start_header_id|eot_id)\|>|\[/?INST\]|<</?SYS>>"
            r"|^\s*#{2,}\s*(?:system|instruction|new instruction)s?\b|</?(?:system|sys|instructions?)>"
        ),
        1.0,
        marks="<[#",
    ),
    Rule("role_prefix", _rx(r"^\s*(?:system|assistant)\s*:\s*\S"), 0.6, cues=_cues("system assistant")),
    Rule(
        "tool_call",
        _rx(
            r"</?(?:tool_call|function_call|function_calls|tool_use|invoke)\b|\"(?:function_call|tool_calls?|tool_use)\"\s*:"
            r"|\{\s*\"name\"\s*:\s*\"[\w.\-]+\"\s*,\s*\"(?:arguments|parameters|input)\"\s*:|<function=|\[TOOL_CALLS\]"
            r"|^\s*Action:\s*\w+\s*\n\s*Action Input:"
        ),
        1.0,
        cues=_cues("action"),
        marks='<"{[',
    ),
    Rule(
        "addressed_to_model",
        _rx(
            rf"\b(?:note|message|instructions?|attention|important|reminder)\s+(?:to|for)\s+(?:the\s+)?{_MODEL}\b"
            rf"|\b(?:dear|hey|hello|hi)\s+{_MODEL}\b[^.!?\n]{{0,20}}?[,:]"
            rf"|\b(?:if you are|as) an? {_MODEL}\b[^.!?\n]{{0,40}}?\b(?:you must|you should|please|ignore|do not|don't)\b"
        ),
        1.0,
        cues=_cues("note message instruction instructions attention important reminder dear hey hello hi if as"),
    ),
    Rule(
        "jailbreak_persona",
        _rx(
            r"\bDAN\b[^.\n]{0,40}\b(?:do anything|mode|jailbreak)|\bdo anything now\b|\bdeveloper mode (?:enabled|on|output)\b|\b(?:you are|you're|now) jailbroken\b"
            r"|\b(?:AIM|STAN|DUDE|Mongo Tom|BetterDAN|AntiGPT|UCAR)\b[^.\n]{0,60}\b(?:unfiltered|amoral|no (?:rules|restrictions|limits)|anything)"
        ),
        1.0,
        cues=_cues("dan anything developer jailbroken aim stan dude mongo betterdan antigpt ucar"),
    ),
    Rule(
        "no_restrictions",
        _rx(
            r"\b(?:no|without|free (?:of|from)|free of any|not bound by|beyond|break(?:ing)? (?:free of|out of)|abandon(?:ed)?)\s+(?:any\s+|all\s+)?"
            r"(?:ethical|moral|content|safety|openai'?s?|usage)?\s*(?:guidelines|restrictions|limitations|limits|filters|censorship|policies|rules|boundaries|morals|ethics)\b"
        ),
        0.5,
        cues=_cues("no without free not beyond break breaking abandon abandoned"),
    ),
    Rule(
        "stay_in_character",
        _rx(
            r"\b(?:stay|remain|staying)\s+in\s+character\b|\bbreak(?:ing)? character\b|\bnever (?:refuse|say (?:no|you can'?t))\b"
        ),
        0.5,
        cues=_cues("character never"),
    ),
    Rule(
        "pretend_unrestricted",
        _rx(
            r"\b(?:pretend|act|behave|imagine|roleplay|role-play)\b[^.\n]{0,60}?\b(?:unrestricted|unfiltered|uncensored|amoral|evil|no (?:rules|restrictions|filters|limits))\b"
        ),
        0.8,
        cues=_cues("pretend act behave imagine roleplay role"),
    ),
    Rule(
        "decode_and_follow",
        _rx(
            r"\b(?:decode|base64|rot13|hex|reverse)\b[^.\n]{0,50}?\b(?:follow|execute|run|obey|do what|carry out|perform)\b"
        ),
        0.8,
        cues=_cues("decode base64 rot13 hex reverse"),
    ),
    Rule(
        "exfiltrate",
        _rx(
            r"\b(?:send|forward|post|upload|email|e-mail|transmit|exfiltrate)\b[^.\n]{0,40}?\b(?:password|credentials|api key|tokens?|cookies|conversation history|chat history|user data|private data)\b"
            r"[^.\n]{0,40}?(?:https?://|\bto\b\s+\S+@)"
        ),
        0.8,
        cues=_cues("send forward post upload email e transmit exfiltrate"),
    ),
    Rule("markdown_exfil", _rx(r"!\[[^\]]*\]\(https?://[^)\s]*[?&][^)\s]*=(?:\{|%7B|\$|<)"), 0.8, marks="!"),
)


_BY_CUE: Final = {cue: frozenset(i for i, r in enumerate(RULES) if cue in r.cues) for r in RULES for cue in r.cues}
_BY_MARK: Final = {m: frozenset(i for i, r in enumerate(RULES) if m in r.marks) for r in RULES for m in r.marks}
_ALWAYS: Final = frozenset(i for i, r in enumerate(RULES) if not r.cues and not r.marks)


def _candidates(text: str) -> list[Rule]:
    """The rules an ASCII ``text`` may match, in order: those with a cue among its words or a mark in it."""
    found = set(_ALWAYS)
    for word in _BY_CUE.keys() & _WORD.findall(text.lower()):
        found |= _BY_CUE[word]
    for mark, rules in _BY_MARK.items():
        if mark in text:
            found |= rules
    return [RULES[i] for i in sorted(found)]


def match_rules(text: str) -> list[RuleMatch]:
    """The rules ``text`` matches (each once)."""
    # In plain ASCII, case folding and word boundaries are the ASCII ones the cues assume.
    rules = _candidates(text) if text.isascii() else RULES
    return [RuleMatch(rule.name, rule.weight) for rule in rules if rule.pattern.search(text)]


def scan_rules(unmasked: Unmasked) -> list[RuleMatch]:
    """The rules the unmasked text or any decoded payload matches; payload matches are named ``payload:RULE``
    and weigh at least 0.9 (hiding an instruction is itself a sign).
    """
    found = {m.name: m for m in match_rules(unmasked.text)}
    for payload in unmasked.payloads:
        for m in match_rules(payload):
            found.setdefault(f"payload:{m.name}", RuleMatch(f"payload:{m.name}", max(m.weight, 0.9), payload=True))
    return list(found.values())
