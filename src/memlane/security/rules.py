"""Fast pattern rules for prompt injection: instructions aimed at a model, role markers, tool-call look-alikes,
jailbreak personas, and encoded payloads; each rule has a name (the reason shown to admins) and a weight.

A weight of 1.0 flags on its own; lighter rules only add evidence that the combined detector weighs with the
classifier's score. Rules read the unmasked text (see ``obfuscation.unmask``) and every decoded payload.
"""

from __future__ import annotations

from functools import cache
from typing import Any, Final

from memlane.security.obfuscation import Unmasked

try:  # finds every rule's needs in one pass; without it each need is looked for on its own (the same candidates)
    import ahocorasick
except ImportError:  # pragma: no cover - a platform without its wheel
    ahocorasick = None
from memlane.security.rule_base import Rule, RuleMatch, first_match, lowered, skeleton, starts
from memlane.security.rule_base import cues as _cues
from memlane.security.rule_base import needs as _needs
from memlane.security.rule_base import rx as _rx
from memlane.security.rule_families import NOT_OWN_ITEM, STRUCTURAL_RULES

# What ``\s`` matches in ASCII text (the model names below follow whitespace, so " ai" and its kin).
_ASCII_SPACE: Final = "".join(chr(c) for c in range(128) if chr(c).isspace())


_PRIOR = r"(?:all|any|every|the|your|my|these|those|previous|prior|above|earlier|preceding|foregoing|initial|original|system|developer|safety|old|former)"
_ORDERS = r"(?:instructions?|prompts?|rules|directions|directives|guidelines|guardrails|constraints|commands|orders|programming|restrictions|tasks?|context)"
# "no restrictions on budget" limits a plan, not the model: a limit followed by what it is about is left alone,
# unless that is the model's own output ("no restrictions on your output").
_NOT_A_SCOPE = (
    r"(?!\s+(?:on|for|regarding|about|as to)\s+(?!(?:your|its|what|the (?:content|output|answers?|responses?))\b)\w)"
)
_MODEL = r"(?:ai|assistant|language model|llm|chat ?bot|gpt|chatgpt|claude|gemini|bard|the model|a\.i\.)"

_CORE_RULES: Final[tuple[Rule, ...]] = (
    Rule(
        "override_instructions",
        _rx(
            rf"\b(?:ignore|disregard|forget|override|bypass|skip|drop|abandon|discard|neglect)\b[^.!?\n]{{0,30}}?"
            rf"\b{_PRIOR}\b[^.!?\n]{{0,25}}?\b{_ORDERS}\b"
        ),
        1.0,
        cues=_cues("ignore disregard forget override bypass skip drop abandon discard neglect"),
        needs=_needs(
            "instruction|prompt|rules|direction|directive|guideline|guardrail|constraint|command|order|programming|restriction|task|context"
        ),
    ),
    Rule(
        "override_instructions_de",
        _rx(
            r"\b(?:ignorier(?:e|en|t)?|vergiss|vergessen sie|missachte)\b[^.!?\n]{0,40}?"
            r"\b(?:anweisungen|aufgaben|befehle|vorgaben|instruktionen|regeln|alles)\b"
        ),
        1.0,
        cues=_cues("ignorier ignoriere ignorieren ignoriert vergiss vergessen missachte"),
        needs=_needs("anweisungen|aufgaben|befehle|vorgaben|instruktionen|regeln|alles"),
    ),
    Rule(
        "override_everything",
        _rx(
            r"\b(?:ignore|disregard|forget|override|bypass|discard|scrap|drop|nevermind|never mind|set aside|throw out)\b"
            r"\s+(?:(?:about|of)\s+)?(?:everything|anything|all(?: of)?(?: the| that)?|whatever)\s+(?:(?:that|which) (?:was|is)\s+)?"
            r"(?:above|before (?:this|that|it)|up to (?:now|here|this point)|so far|previously|prior|preceding"
            r"|you (?:were|have been|had been|are) (?:told|given|taught|instructed)|(?:said|written|stated) (?:above|earlier))\b"
        ),
        1.0,
        cues=_cues("ignore disregard forget override bypass discard scrap drop never nevermind set throw"),
        needs=_needs("everything|anything|all|whatever"),
    ),
    Rule(
        "supersede_instructions",
        _rx(
            r"\b(?:supersedes?|overrides?|replaces?|takes? precedence over|cancels?|voids?|trumps?)\b[^.!?\n]{0,20}?"
            r"\b(?:all|any|every|the|your)?\s*(?:prior|previous|earlier|preceding|above|existing|old|original|former)\s+"
            r"(?:ones|instructions?|directives?|rules|prompts?|orders|commands|guidelines|tasks?|programming)\b"
            r"|\b(?:your|the)\s+(?:new|real|true|actual|updated)\s+(?:directive|instructions?|orders|objective|mission|task|purpose|role)"
            r"\s+(?:is|are|will be|now)\b[^.!?\n]{0,12}?\b(?:to|:)"
        ),
        1.0,
        cues=_cues(
            "supersede supersedes override overrides replace replaces take takes precedence cancel cancels void voids trump trumps your the"
        ),
        needs=_needs(  # a verb of the first form, or a noun of the second
            "supersede|overrid|replace|precedence|cancel|void|trump|directive|instruction|orders|objective|mission|task|purpose|role"
        ),
    ),
    Rule(
        "override_instructions_es",
        _rx(
            r"\b(?:ignora|ignore|ignoren|ignorar|olvida|olvide|olviden|olvidar|omite|omita|descarta|descarte|desatiende)\b"
            r"[^.!?\n]{0,40}?\b(?:instrucciones|indicaciones|[óo]rdenes|reglas|directrices|tareas|lo anterior|todo)\b"
            r"|\bhaz caso omiso\b|\ba partir de ahora (?:eres|ser[áa]s|act[úu]as|responder[áa]s)\b"
        ),
        1.0,
        cues=_cues(
            "ignora ignore ignoren ignorar olvida olvide olviden olvidar omite omita descarta descarte desatiende haz a"
        ),
        needs=_needs(
            "instrucciones|indicaciones|rdenes|reglas|directrices|tareas|anterior|todo|caso omiso|partir de ahora"
        ),
    ),
    Rule(
        "override_instructions_fr",
        _rx(
            r"\b(?:(?:ignore|ignorer|ignores|ignorez)|(?:oublie|oublier|oublies|oubliez)|ne tiens pas compte|ne tenez pas compte|fais abstraction|faites abstraction)\b"
            r"[^.!?\n]{0,30}?\b(?:les|tes|vos|ces|toutes (?:les|tes|vos|ces))\s+(?:\w+\s+)?"
            r"(?:instructions|consignes|directives|r[èe]gles|ordres|t[âa]ches)\b|\b(?:(?:ignore|ignorer|ignores|ignorez)|(?:oublie|oublier|oublies|oubliez))\s+(?:tout\s+)?ce qui pr[ée]c[èe]de\b"
            r"|\b(?:à|a) partir de maintenant,? tu (?:es|seras|r[ée]ponds)\b"
        ),
        1.0,
        cues=_cues("ignore ignores ignorez ignorer oublie oublies oubliez oublier ne fais faites partir"),
        needs=_needs("instructions|consignes|directives|gles|ordres|ches|de|partir de maintenant"),
    ),
    Rule(
        "override_reversed_de",
        _rx(
            r"\b(?:obigen|vorherigen|bisherigen|vorangegangenen|vorangehenden|vorigen|alle)\s+(?:\w+\s+){0,2}?"
            r"(?:anweisungen|ausf[üu]hrungen|aufgaben|auftr[äa]ge|befehle|vorgaben|instruktionen|regeln)\s+"
            r"(?:\w+\s+){0,2}?(?:ignorieren|vergessen|missachten|verwerfen)\b"
            r"|\bab (?:jetzt|sofort) (?:bist du|wirst du|antwortest du|gibst du)\b"
        ),
        1.0,
        cues=_cues("obigen vorherigen bisherigen vorangegangenen vorangehenden vorigen alle ab"),
        needs=_needs("ignorieren|vergessen|missachten|verwerfen|jetzt|sofort"),
    ),
    Rule(
        "answer_directive",
        _rx(
            r"\b(?:add|include|insert|append|integrate|introduce|replace|remove|rearrange|mention|end|start|begin|write|put|use)\b"
            rf"{NOT_OWN_ITEM}[^.!?\n]{{0,80}}?\b(?:in|to|into|at the (?:end|start|beginning) of|throughout|from|within)\s+your\s+"
            r"(?:answer|response|reply|output|summary|responses|answers|replies)\b"
        ),
        0.6,
        cues=_cues(
            "add include insert append integrate introduce replace remove rearrange mention end start begin write put use"
        ),
        needs=_needs(
            "answer|response|reply|replies|output|summary"  # after "your" and any whitespace
        ),
        family="reply",
    ),
    Rule(
        "then_hijack",
        _rx(
            r"\b(?:summarise|summarize|translate|analyse|analyze|answer|read|process|review|check)\b[^.!?\n]{0,60}?"
            r"\b(?:and then|then|after that|afterwards|and also)\b[^.!?\n]{0,30}?"
            r"\b(?:send|forward|e-?mail|post|upload|delete|reveal|print|output|ignore|disregard|tell (?:me|us) (?:your|the) (?:system|secret|password))\b"
        ),
        0.6,
        cues=_cues("summarise summarize translate analyse analyze answer read process review check"),
        needs=_needs("then|after that|afterwards|and also"),
        family="hijack",
    ),
    Rule(
        "new_instructions",
        _rx(r"\b(?:new|updated|real|actual|secret|hidden)\s+(?:instructions?|task|system prompt|orders)\s*[:\-]"),
        1.0,
        cues=_cues("new updated real actual secret hidden"),
        needs=_needs("instruction|task|system prompt|orders"),
    ),
    Rule(
        "new_instructions_de",
        _rx(r"\b(?:neue|deine neue)\s+(?:aufgabe|anweisung|anweisungen)\b"),
        0.8,
        cues=_cues("neue deine"),
        needs=_needs("aufgabe|anweisung"),
    ),
    Rule(
        "reveal_prompt",
        _rx(
            r"\b(?:reveal|show|print|repeat|output|display|leak|tell me|give me|what (?:is|are|was|were))\b[^.!?\n]{0,30}?"
            r"\b(?:system prompt|(?:your|the) (?:initial |original |hidden |secret )?(?:instructions|prompt|rules)|prompt texts?|initial prompt|hidden prompt)\b"
        ),
        0.9,
        cues=_cues("reveal show print repeat output display leak tell give what"),
        needs=_needs("prompt|instructions|rules"),
    ),
    Rule(
        "role_marker",
        _rx(
            r"<\|(?:im_start|im_end|system|user|assistant|endoftext|begin_of_text|start_header_id|eot_id)\|>|\[/?INST\]|<</?SYS>>"
            r"|^\s*#{2,}\s*(?:system|instruction|new instruction)s?\b|</?(?:system|sys|instructions?)>"
        ),
        1.0,
        marks="<[#",
        needs=("<|", "inst]", "sys>", "system>", "instruction>", "instructions>", "##"),  # one per branch
    ),
    Rule("role_prefix", _rx(r"^\s*(?:system|assistant)\s*:\s*\S"), 0.6, cues=_cues("system assistant"), needs=(":",)),
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
        needs=_needs('tool_call|function_call|tool_use|invoke|"name"|<function=|action input:'),
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
        needs=_needs("assistant|model|llm|chat|gpt|claude|gemini|bard|a.i.", *(f"{space}ai" for space in _ASCII_SPACE)),
    ),
    Rule(
        "jailbreak_persona",
        _rx(
            r"\bDAN\b[^.\n]{0,40}\b(?:do anything|mode|jailbreak)|\bdo anything now\b|\bdeveloper mode (?:enabled|on|output)\b|\b(?:you are|you're|now) jailbroken\b"
            r"|\b(?:AIM|STAN|DUDE|Mongo Tom|BetterDAN|AntiGPT|UCAR)\b[^.\n]{0,60}\b(?:unfiltered|amoral|no (?:rules|restrictions|limits)|anything)"
        ),
        1.0,
        cues=_cues("dan anything developer jailbroken aim stan dude mongo betterdan antigpt ucar"),
        needs=_needs("anything|mode|jailbreak|jailbroken|unfiltered|amoral|rules|restrictions|limits"),
    ),
    Rule(
        "no_restrictions",
        _rx(
            r"\b(?:no|without|free (?:of|from)|free of any|not bound by|beyond|break(?:ing)? (?:free of|out of)|abandon(?:ed)?)\s+(?:any\s+|all\s+)?"
            r"(?:ethical|moral|content|safety|openai'?s?|usage)?\s*(?:guidelines|restrictions|limitations|limits|filters|censorship|policies|rules|boundaries|morals|ethics)\b"
            + _NOT_A_SCOPE
        ),
        0.5,
        cues=_cues("no without free not beyond break breaking abandon abandoned"),
        needs=_needs(
            "guidelines|restrictions|limitations|limits|filters|censorship|policies|rules|boundaries|morals|ethics"
        ),
    ),
    Rule(
        "stay_in_character",
        _rx(
            r"\b(?:stay|remain|staying)\s+in\s+character\b|\bbreak(?:ing)? character\b|\bnever (?:refuse|say (?:no|you can'?t))\b"
        ),
        0.5,
        cues=_cues("character never"),
        needs=_needs("character|refuse|say"),
    ),
    Rule(
        "pretend_unrestricted",
        _rx(
            r"\b(?:pretend|act|behave|imagine|roleplay|role-play)\b[^.\n]{0,60}?\b(?:unrestricted|unfiltered|uncensored|amoral|evil|no (?:rules|restrictions|filters|limits))\b"
            + _NOT_A_SCOPE
        ),
        0.8,
        cues=_cues("pretend act behave imagine roleplay role"),
        needs=_needs("unrestricted|unfiltered|uncensored|amoral|evil|no rules|no restrictions|no filters|no limits"),
    ),
    Rule(
        "decode_and_follow",
        _rx(
            r"\b(?:decode|base64|rot13|hex|reverse)\b[^.\n]{0,50}?\b(?:follow|execute|run|obey|do what|carry out|perform)\b"
        ),
        0.8,
        cues=_cues("decode base64 rot13 hex reverse"),
        needs=_needs("follow|execute|run|obey|do what|carry out|perform"),
    ),
    Rule(
        "exfiltrate",
        _rx(
            r"\b(?:send|forward|post|upload|email|e-mail|transmit|exfiltrate)\b[^.\n]{0,40}?\b(?:password|credentials|api key|tokens?|cookies|conversation history|chat history|user data|private data)\b"
            r"[^.\n]{0,40}?(?:https?://|\bto\b\s+\S+@)"
        ),
        0.8,
        cues=_cues("send forward post upload email e transmit exfiltrate"),
        needs=_needs("://|@"),
    ),
    Rule(
        "markdown_exfil",
        _rx(r"!\[[^\]]*\]\(https?://[^)\s]*[?&][^)\s]*=(?:\{|%7B|\$|<)"),
        0.8,
        marks="!",
        needs=_needs("](http"),
    ),
)

RULES: Final[tuple[Rule, ...]] = (*_CORE_RULES, *STRUCTURAL_RULES)


# The rules each cue word (as ASCII bytes) or mark character may start, as bit sets over RULES.
_BY_CUE: Final = {
    cue.encode("ascii"): sum(1 << i for i, r in enumerate(RULES) if cue in r.cues) for r in RULES for cue in r.cues
}
_CUES: Final = frozenset(_BY_CUE)
_BY_MARK: Final = tuple(
    (m, sum(1 << i for i, r in enumerate(RULES) if m in r.marks))
    for m in dict.fromkeys(m for r in RULES for m in r.marks)
)
_ALWAYS: Final = sum(1 << i for i, r in enumerate(RULES) if not r.cues and not r.marks)
# ASCII word characters (``\w``) kept, everything else a space: ``split`` then gives the words ``\w+`` finds.
_WORDS_ONLY: Final = bytes(b if b < 128 and (chr(b).isalnum() or b == ord("_")) else ord(" ") for b in range(256))


# Each rule's pattern for lower-case ASCII text, and the match it reports.
_LOWERED: Final = tuple(lowered(rule.pattern) for rule in RULES)
_MATCHES: Final = tuple(RuleMatch(rule.name, rule.weight, family=rule.family) for rule in RULES)


def _cued(text: str, low: str) -> int:
    """The rules (a bit set) with a cue among the words of ``low``, ``text``'s ``skeleton``, or a mark in ``text``."""
    found = _ALWAYS
    # a character the skeleton keeps outside ASCII is no word character: "?" splits as it does
    for word in _CUES.intersection(low.encode("ascii", "replace").translate(_WORDS_ONLY).split()):
        found |= _BY_CUE[word]
    for mark, rules in _BY_MARK:
        if mark in text:
            found |= rules
    return found


def _bits(found: int) -> list[int]:
    """The set bits of ``found``, lowest (first rule) first."""
    out = []
    while found:
        i = (found & -found).bit_length() - 1
        found &= found - 1
        out.append(i)
    return out


def _needed(found: int, low: str) -> list[int]:
    """The rules of ``found`` (by index, in order) without needs or with one of their needs in ``low``, each need
    looked for on its own.
    """
    out = []
    for i in _bits(found):
        needs = RULES[i].needs
        if not needs or any(need in low for need in needs):
            out.append(i)
    return out


# The rules each need of two or more characters belongs to, found all at once by one Aho-Corasick automaton (every
# occurrence, overlapping ones too, so a need is reported exactly when it is in the text); a need of one character
# is one ``in`` (a ``memchr``).
_NEEDLESS: Final = sum(1 << i for i, r in enumerate(RULES) if not r.needs)
_BY_NEED: Final = {need: sum(1 << i for i, r in enumerate(RULES) if need in r.needs) for r in RULES for need in r.needs}
_ONE_CHAR_NEEDS: Final = tuple((need, rules) for need, rules in _BY_NEED.items() if len(need) == 1)


def _automaton() -> Any:
    if ahocorasick is None:
        return None
    automaton = ahocorasick.Automaton()
    for need, rules in _BY_NEED.items():
        if len(need) > 1:
            automaton.add_word(need, rules)
    automaton.make_automaton()
    return automaton


_NEEDS: Final = _automaton()


_FINDER_LITERALS: Final = 8  # start literals from which one automaton pass beats one ``find`` each


def _finder(literals: tuple[str, ...] | None) -> Any:
    """An Aho-Corasick automaton of a rule's many start literals (one pass instead of one ``find`` each)."""
    if ahocorasick is None or literals is None or len(literals) < _FINDER_LITERALS:
        return None
    automaton = ahocorasick.Automaton()
    for literal in literals:
        automaton.add_word(literal, len(literal) - 1)
    automaton.make_automaton()
    return automaton


@cache
def _starts() -> tuple[tuple[tuple[str, ...] | None, Any], ...]:
    """Where a match of each lowered pattern can start: its start literals and their automaton (read off the
    patterns on first use, not at import: it takes a tenth of a second).
    """
    out = []
    for pattern in _LOWERED:
        literals = starts(pattern)
        out.append((literals, _finder(literals)))
    return tuple(out)


@cache
def _shared_finder() -> tuple[Any, int]:
    """One automaton of the start literals of every rule with its own (values: the rules a literal starts, as a
    bit set, and its length - 1), and those rules as a bit set: one pass finds the starts of several at once.
    """
    literals: dict[str, int] = {}
    rules = 0
    for i, (own, finder) in enumerate(_starts()):
        if finder is not None and own is not None:
            rules |= 1 << i
            for literal in own:
                literals[literal] = literals.get(literal, 0) | 1 << i
    if not rules:
        return None, 0
    automaton = ahocorasick.Automaton()
    for literal, of in literals.items():
        automaton.add_word(literal, (of, len(literal) - 1))
    automaton.make_automaton()
    return automaton, rules


def _matching(candidates: list[int], low: str) -> list[RuleMatch]:
    """The ``candidates`` whose lowered pattern matches ``low`` (lower-case text), each tried where one of its start
    literals lies. Two or more candidates with an automaton of their own share one pass of ``_shared_finder``
    (the same starts as theirs: every occurrence of each of their literals), each tried until it matches.
    """
    at = _starts()
    shared, with_finder = _shared_finder()
    wanted = 0
    for i in candidates:
        wanted |= (with_finder >> i & 1) << i
    if not wanted & (wanted - 1):  # at most one: its own automaton
        return [_MATCHES[i] for i in candidates if first_match(_LOWERED[i], at[i][0], low, at[i][1])]
    found = 0
    for end, (rules, back) in shared.iter(low):
        todo = rules & wanted & ~found
        while todo:
            bit = todo & -todo
            todo ^= bit
            if _LOWERED[bit.bit_length() - 1].match(low, end - back) is not None:
                found |= bit
        if found == wanted:
            break
    return [
        _MATCHES[i]
        for i in candidates
        if (found >> i & 1 if wanted >> i & 1 else first_match(_LOWERED[i], at[i][0], low, at[i][1]))
    ]


def _candidates(text: str, low: str) -> list[int]:
    """The rules (by index, in order) ``text`` may match: those with a cue among the words of ``low``, its
    ``skeleton``, or a mark in ``text``, and one of their needs in ``low``.
    """
    found = _cued(text, low)
    if _NEEDS is None:
        return _needed(found, low)
    present = _NEEDLESS
    for need, rules in _ONE_CHAR_NEEDS:
        if rules & found and need in low:
            present |= rules
    for _, rules in _NEEDS.iter(low):  # plain loops: this runs for every text written
        present |= rules
    return _bits(found & present)


# The only characters whose lower case a case-insensitive pattern reads otherwise: "İ" lowers to two characters,
# "ı" and "ſ" match "i" and "s" yet lower to themselves (a test checks every code point against the patterns).
_NOT_LOWERABLE: Final = frozenset("\u0130\u0131\u017f")


def match_rules(text: str) -> list[RuleMatch]:
    """The rules ``text`` matches (each once)."""
    low = skeleton(text)
    if text.isascii():  # the lower-case text is the skeleton: the lowered patterns read it
        return _matching(_candidates(text, low), low)
    candidates = _candidates(text, low)
    if not candidates:
        return []
    if _NOT_LOWERABLE.isdisjoint(text):
        return _matching(candidates, text.lower())
    return [_MATCHES[i] for i in candidates if RULES[i].pattern.search(text)]


def match_rules_fully(text: str) -> list[RuleMatch]:
    """``match_rules`` with every rule's own pattern run on ``text`` (no skip, no lowering): what the fast path
    must always agree with.
    """
    return [_MATCHES[i] for i, rule in enumerate(RULES) if rule.pattern.search(text)]


def scan_rules(unmasked: Unmasked) -> list[RuleMatch]:
    """The rules the unmasked text or any decoded payload matches; payload matches are named ``payload:RULE``
    and weigh at least 0.9 (hiding an instruction is itself a sign).
    """
    if not unmasked.payloads:
        return match_rules(unmasked.text)  # each rule once already
    found = {m.name: m for m in match_rules(unmasked.text)}
    for payload in unmasked.payloads:
        for m in match_rules(payload):
            found.setdefault(
                f"payload:{m.name}",
                RuleMatch(f"payload:{m.name}", max(m.weight, 0.9), payload=True, family=f"payload:{m.group}"),
            )
    return list(found.values())
