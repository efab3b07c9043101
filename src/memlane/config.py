"""Frozen settings, the only place that reads the environment, and the named retrieval presets."""

from __future__ import annotations

import json
import math
import os
from collections.abc import Mapping
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Final, Literal

from memlane.errors import ConfigError
from memlane.ids import ID_CHARS
from memlane.lifecycle.survival import SurvivalWeights
from memlane.retrieval.fusion import BLEND, CONVEX, IMDMR, MULTI_DIM, MULTI_GRAPH, RRF, WEIGHTED, FusionSpec
from memlane.security.redact import check_kinds


@dataclass(frozen=True)
class RetrievalPreset:
    """A named retrieval recipe: which dimensions, how fused, how many candidates each dimension gives."""

    name: str
    fusion: FusionSpec
    candidates: int = 100
    description: str = ""
    context_width: int = 2
    expand: int = 50  # how many of the strongest candidates bring their neighbouring turns into the pool
    keyword_boost: float = 2.0
    mention_weight: float = 0.25
    label_confidence: float = 0.3
    # A dialogue excerpt or long passage as the query (see ``memlane.retrieval.shape``): the keyword weight is
    # multiplied by ``dialogue_lexical`` and, for several turns, BM25 searches the last turn's words only.
    dialogue_lexical: float = 1.0
    dialogue_last_turn: bool = False
    # and what the dense dimension embeds of an excerpt of several turns: "whole", its "last" turn, or "both" averaged
    dialogue_dense: str = "whole"
    # The last turn joins the dense vector ("both") and feeds BM25 only when it has at least this many content words
    # ("When was that?" has none: it says what is asked, not about what); with fewer, the whole excerpt is embedded
    # and the keyword weight is scaled by content words / this number
    dialogue_focus_terms: int = 0
    # A dialogue excerpt as the query also walks the graph (personalised PageRank from its best matches over shared
    # entities and relations) at this weight, when the preset does not already
    dialogue_graph: float = 0.0
    # A follow-up excerpt (its last line a turn that names no one, "Friend: When did you start?"; see
    # ``QueryShape.is_follow_up``): the keyword weight multiplier instead of ``dialogue_lexical`` (None: the same),
    # the words BM25 searches ("last" turn or everything "said" in the turns) and what the dense dimension embeds
    # (None: as ``dialogue_dense``)
    follow_up_lexical: float | None = None
    follow_up_terms: Literal["last", "said"] = "last"
    follow_up_dense: str | None = None
    # The entity dimension's weight when the query names a speaker of the scope ("What does Melanie do to
    # destress?"): the named person's own turns then count for more than a mention of them (None: unchanged)
    speaker_entity_weight: float | None = None
    # One hit per statement: a typed memory and the message it was distilled from (or two typed memories of one
    # message) that both rank are folded into the better-ranked one (``Hit.related``; memlane.retrieval.collapse)
    collapse: bool = True
    # The keyword weight scaled by how specific the query's words are in the scope (the normalised IDF of the rarest
    # one; retrieval/scope_evidence.py: ``specificity``): BM25 over words that hundreds of passages repeat says little
    lexical_specificity: bool = False


PRESETS: Final[Mapping[str, RetrievalPreset]] = {
    p.name: p
    for p in (
        RetrievalPreset("bm25", FusionSpec("weighted", {"lexical": 1.0}), description="BM25 full text only"),
        RetrievalPreset("dense", FusionSpec("weighted", {"dense": 1.0}), description="embedding cosine only"),
        RetrievalPreset("weighted", WEIGHTED, description="0.6 dense + 0.4 BM25 (min-max), recency breaks ties"),
        RetrievalPreset("blend", BLEND, description="0.7 semantic + 0.2 importance + 0.1 recency"),
        RetrievalPreset("rrf", RRF, description="reciprocal rank fusion of dense and BM25, k=60"),
        RetrievalPreset("convex", CONVEX, description="convex combination, alpha 0.7 dense over min-max scores"),
        RetrievalPreset(
            "multi",
            MULTI_DIM,
            description="dense + BM25, the turns around each memory, the people named, the time asked about",
            # A dialogue excerpt as the query: BM25 over its last turn at half weight, and the dense vector of the
            # whole averaged with its last turn's (chosen on the tune splits of the dialogue sets; docs/evaluation.md)
            dialogue_lexical=0.5,
            dialogue_last_turn=True,
            dialogue_dense="both",
            # ... but only when the last turn has two content words or more: "When was that?" or "Which year?" says
            # what is asked, not about what, so the whole excerpt is embedded alone and BM25 gets that share of its
            # weight (chosen on the tune splits of both dialogue sets; docs/evaluation.md, second round)
            dialogue_focus_terms=2,
            # The pool: the top 50 of each content dimension, and the turns around the 20 strongest (chosen on the
            # LoCoMo tune split: recall@10 0.832 against 0.830 with 100 and 50; every search scores the whole pool)
            candidates=50,
            expand=20,
            # A question naming a speaker is answered by that speaker's own turns (97% of LoCoMo's evidence turns
            # for such questions on the tune split): entity weight 0.4 rather than 0.25 for those queries only
            # (chosen on the LoCoMo tune split, where 0.35-0.5 all gave recall@10 0.832-0.836 against 0.824;
            # docs/evaluation.md)
            speaker_entity_weight=0.4,
            # An excerpt's many words blur its content scores; the memories linked to its best matches through the
            # people and places they share are added (chosen on the tune splits of both dialogue sets, where
            # `multi-graph` was level or better than `multi`; docs/evaluation.md, "The graph's walk")
            dialogue_graph=0.1,
            # A follow-up excerpt ("Friend: When did you start?" after two turns about a first job): its last turn's
            # words and vector are the conversation's, not the event's, so the whole excerpt is embedded alone and
            # BM25 reads every turn at a quarter weight (chosen on the tune split of the second cohort of the
            # original dialogue set, the only tune split where the default trailed `dense`; docs/evaluation.md)
            follow_up_lexical=0.25,
            follow_up_terms="said",
            follow_up_dense="whole",
            # The keyword weight scaled by how specific the query's words are in the user's scope: on FAQ questions
            # over documentation ("how do I change the last commit?") BM25's best match is only the passage that
            # repeats common words most (docs/evaluation.md, "Documentation written by others")
            lexical_specificity=True,
        ),
        RetrievalPreset(
            "multi-graph",
            MULTI_GRAPH,
            description="multi plus the graph dimension: memories linked by shared entities and relations",
            dialogue_lexical=0.5,
            dialogue_last_turn=True,
            dialogue_dense="both",
            dialogue_focus_terms=2,
            speaker_entity_weight=0.4,
            follow_up_lexical=0.25,
            follow_up_terms="said",
            follow_up_dense="whole",
            # The keyword weight scaled by how specific the query's words are in the user's scope: on FAQ questions
            # over documentation ("how do I change the last commit?") BM25's best match is only the passage that
            # repeats common words most (docs/evaluation.md, "Documentation written by others")
            lexical_specificity=True,
        ),
        RetrievalPreset("imdmr", IMDMR, description="IMDMR's six-dimension weights with its multi-dimension bonus"),
    )
}

DETECTORS: Final = ("off", "rules", "default", "llm")

# Chosen by `memlane bench locomo --split tune` (conversations 26, 30, 41); see docs/benchmarks.md.
DEFAULT_PRESET: Final = "multi"
#: ``convex@W``: the convex preset with BM25 weight W (``convex_at``).
CONVEX_AT: Final = "convex@"


def preset(name: str | None) -> RetrievalPreset:
    """The preset called ``name`` (``None`` or ``"default"`` gives the default).

    ``convex@W`` is ``convex`` with keyword weight ``W`` (0 to 1) and dense weight ``1 - W``: the right mix differs
    from one collection to the next (docs/evaluation.md, how far one weight per collection goes), so a user with
    queries of their own can choose it.
    """
    key = DEFAULT_PRESET if name in (None, "default") else str(name)
    if key.startswith(CONVEX_AT):
        return convex_at(key[len(CONVEX_AT) :])
    try:
        return PRESETS[key]
    except KeyError:
        raise ConfigError(
            f"unknown retrieval preset {name!r}; choose one of {sorted(PRESETS)} or {CONVEX_AT}W (W from 0 to 1)"
        ) from None


def convex_at(weight: str | float) -> RetrievalPreset:
    """``convex`` with keyword weight ``weight`` and dense weight ``1 - weight``, named ``convex@W``."""
    try:
        w = float(weight)
    except (TypeError, ValueError):
        w = math.nan
    if not 0.0 <= w <= 1.0:  # also refuses NaN
        raise ConfigError(f"{CONVEX_AT}W needs a keyword weight W from 0 to 1, got {weight!r}")
    base = PRESETS["convex"]
    name = f"{CONVEX_AT}{w:g}"
    weights = {d: v for d, v in {"dense": 1.0 - w, "lexical": w}.items() if v > 0}
    return with_weights(base, name, weights, f"convex combination, {1 - w:g} dense + {w:g} BM25 over min-max scores")


def with_weights(base: RetrievalPreset, name: str, weights: Mapping[str, float], description: str) -> RetrievalPreset:
    """A copy of ``base`` under another name with other fusion weights."""
    fusion = replace(base.fusion, weights=dict(weights))
    return replace(base, name=name, fusion=fusion, description=description)


def load_presets(path: Path) -> dict[str, RetrievalPreset]:
    """Presets written by ``memlane tune`` (a JSON file: name -> base preset, weights, description)."""
    if not path.is_file():
        return {}
    try:
        raw = json.loads(path.read_text(encoding="utf-8"))
        return {
            name: with_weights(preset(entry["base"]), name, entry["weights"], entry.get("description", ""))
            for name, entry in raw.items()
        }
    except (OSError, ValueError, KeyError, TypeError, AttributeError) as exc:
        raise ConfigError(f"{path} is not a valid presets file: {exc}") from None


def save_preset(path: Path, name: str, base: str, weights: Mapping[str, float], description: str) -> None:
    """Add or replace a learned preset in the presets file (atomically)."""
    if name in PRESETS or name == "default" or name.startswith(CONVEX_AT):
        raise ConfigError(f"{name!r} is a built-in preset; choose another name")
    raw: dict[str, object] = json.loads(path.read_text(encoding="utf-8")) if path.is_file() else {}
    raw[name] = {"base": base, "weights": dict(weights), "description": description}
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(f".{path.name}.{os.getpid()}.tmp")
    tmp.write_text(json.dumps(raw, indent=2, sort_keys=True), encoding="utf-8")
    os.replace(tmp, path)


def default_data_dir() -> Path:
    """``$MEMLANE_HOME``, else ``$XDG_DATA_HOME/memlane``, else ``~/.local/share/memlane``."""
    home = os.environ.get("MEMLANE_HOME")
    if home:
        return Path(home).expanduser()
    xdg = os.environ.get("XDG_DATA_HOME")
    base = Path(xdg).expanduser() if xdg else Path.home() / ".local" / "share"
    return base / "memlane"


@dataclass(frozen=True)
class Config:
    """Settings of a ``Memory``. Build with ``Config.from_env()`` to honour ``MEMLANE_*`` variables."""

    data_dir: Path = field(default_factory=default_data_dir)
    embedder: str = "minilm"
    preset: str = "default"
    max_text_chars: int = 32_000
    max_id_chars: int = 256
    # Texts handed to the embedder per call. MiniLM sorts each call's texts by length before batching, so a large
    # call pads less: 1024 took MiniLM ingest from 123 to 158 items/s against 64 (LoCoMo-like turns, 2 cores).
    embed_batch: int = 1024
    recency_half_life_days: float = 30.0
    # Threads numpy's BLAS may use while memlane's calls run (memlane.blas); None leaves the process's setting alone.
    blas_threads: int | None = 1
    # -- optional reranking of the best fused candidates (memlane.retrieval.rerank): None, "mmr[:LAMBDA]" or
    # "endpoint:MODEL@URL" (a local cross-encoder server's /rerank); off by default.
    reranker: str | None = None
    rerank_depth: int = 30
    # -- extraction and lifecycle --
    infer: bool = True
    min_confidence: float = 0.6
    capacity: int | None = None
    evict_messages: bool = False
    survival: SurvivalWeights = field(default_factory=SurvivalWeights)
    background_worker: bool = True
    llm_provider: str | None = None
    llm_model: str | None = None
    llm_base_url: str | None = None
    llm_api_key: str | None = field(default=None, repr=False)
    llm_region: str | None = None
    llm_timeout: float = 60.0
    llm_batch_size: int = 12
    llm_max_workers: int = 2
    # -- security pipeline (memlane.security): injection detection on stored text, PII redaction before storage --
    injection_detector: str = "default"  # "off", "rules", "default" (rules + classifier), "llm" (default + LLM judge)
    injection_threshold: float | None = None  # None: the threshold shipped with the classifier
    redact_pii: tuple[str, ...] = ()  # kinds among email, phone, card, secret ("all": every kind); empty: off
    pii_key_path: Path | None = None  # the key sealing redacted originals; None: data_dir / "pii.key"
    # -- background jobs on a broker (memlane[celery]): async adds are handed to Celery workers over this broker
    # (e.g. redis://localhost:6379/0); the job table stays the source of truth. None: the embedded worker only.
    broker_url: str | None = field(default=None, repr=False)
    broker_queue: str = "memlane"
    broker_handoff_seconds: float = 600.0  # a job handed to the broker and not run by then is run by any process
    job_max_attempts: int = 5  # a job (embedded or broker) that failed this many attempts stays failed (dead letter)
    job_backoff_seconds: float = 2.0  # the wait before the n-th retry is this times 2^(n-1), at most the cap
    job_backoff_max_seconds: float = 300.0

    def __post_init__(self) -> None:
        if self.max_text_chars <= 0 or self.embed_batch <= 0 or self.recency_half_life_days <= 0:
            raise ConfigError("max_text_chars, embed_batch and recency_half_life_days must be positive")
        if not isinstance(self.max_id_chars, int) or self.max_id_chars < ID_CHARS:
            raise ConfigError(
                f"max_id_chars must be an integer of at least {ID_CHARS} (the length of the ids memlane makes), "
                f"got {self.max_id_chars!r}"
            )
        if self.blas_threads is not None and (not isinstance(self.blas_threads, int) or self.blas_threads < 1):
            raise ConfigError(f"blas_threads must be a positive integer or None, got {self.blas_threads!r}")
        if not isinstance(self.rerank_depth, int) or not 1 <= self.rerank_depth <= 1000:
            raise ConfigError(f"rerank_depth must be an integer from 1 to 1000, got {self.rerank_depth!r}")
        if not 0.0 <= self.min_confidence <= 1.0:
            raise ConfigError(f"min_confidence must be within [0, 1], got {self.min_confidence}")
        if self.capacity is not None and self.capacity < 0:
            raise ConfigError(f"capacity must not be negative, got {self.capacity}")
        if self.llm_provider not in (None, "openai", "bedrock"):
            raise ConfigError(
                f"unknown LLM provider {self.llm_provider!r}; choose 'openai' (any compatible server) or 'bedrock'"
            )
        if self.llm_provider is not None and not self.llm_model:
            raise ConfigError("an LLM provider needs llm_model")
        if self.llm_provider == "openai" and not self.llm_base_url:
            raise ConfigError("the openai provider needs llm_base_url (the API root, e.g. http://localhost:8080/v1)")
        if self.llm_timeout <= 0 or self.llm_batch_size <= 0 or self.llm_max_workers <= 0:
            raise ConfigError("llm_timeout, llm_batch_size and llm_max_workers must be positive")
        if self.injection_detector not in DETECTORS:
            raise ConfigError(
                f"unknown injection detector {self.injection_detector!r}; choose one of {list(DETECTORS)}"
            )
        if self.injection_detector == "llm" and self.llm_provider is None:
            raise ConfigError("the llm injection detector needs an LLM (llm_provider and llm_model)")
        if self.injection_threshold is not None and not 0.0 < self.injection_threshold <= 1.0:
            raise ConfigError(f"injection_threshold must be within (0, 1], got {self.injection_threshold}")
        if isinstance(self.redact_pii, str):
            raise ConfigError(f"redact_pii must be a tuple of kinds, e.g. ('email', 'phone'), got {self.redact_pii!r}")
        check_kinds(self.redact_pii)
        if self.job_max_attempts < 1 or self.job_backoff_seconds < 0 or self.job_backoff_max_seconds < 0:
            raise ConfigError("job_max_attempts must be at least 1 and the job backoff must not be negative")
        if self.broker_handoff_seconds <= 0:
            raise ConfigError("broker_handoff_seconds must be positive")
        self.preset_for(self.preset)

    @property
    def presets_file(self) -> Path:
        return self.data_dir / "presets.json"

    def preset_for(self, name: str | None) -> RetrievalPreset:
        """A built-in preset, or one learned by ``memlane tune`` and saved in the data dir."""
        key = self.preset if name is None else name
        if key in (None, "default") or key in PRESETS or str(key).startswith(CONVEX_AT):
            return preset(key)
        learned = load_presets(self.presets_file)
        if key in learned:
            return learned[key]
        choices = sorted({*PRESETS, *learned})
        raise ConfigError(f"unknown retrieval preset {key!r}; choose one of {choices}")

    @property
    def default_store(self) -> Path:
        return self.data_dir / "memlane.db"

    @property
    def model_cache(self) -> Path:
        return self.data_dir / "models"

    @property
    def pii_key(self) -> Path:
        """The key file sealing the originals of redacted text."""
        return self.pii_key_path or self.data_dir / "pii.key"

    def with_(self, **changes: object) -> Config:
        """A copy with some settings changed."""
        return replace(self, **changes)  # type: ignore[arg-type]

    @classmethod
    def from_env(cls, environ: Mapping[str, str] | None = None) -> Config:
        """Settings from ``MEMLANE_HOME``, ``MEMLANE_EMBEDDER``, ``MEMLANE_PRESET``, ``MEMLANE_INFER``, ``MEMLANE_BLAS_THREADS``,
        ``MEMLANE_MIN_CONFIDENCE``, ``MEMLANE_CAPACITY``, ``MEMLANE_MAX_TEXT_CHARS``, ``MEMLANE_MAX_ID_CHARS``,
        ``MEMLANE_RERANKER``, ``MEMLANE_BROKER_URL``,
        ``MEMLANE_BROKER_QUEUE``, ``MEMLANE_JOB_MAX_ATTEMPTS``, ``MEMLANE_JOB_BACKOFF_SECONDS``,
        ``MEMLANE_INJECTION_DETECTOR``, ``MEMLANE_INJECTION_THRESHOLD``, ``MEMLANE_REDACT_PII`` (e.g. ``email,phone`` or
        ``all``), ``MEMLANE_PII_KEY`` and ``MEMLANE_LLM_*`` (``PROVIDER``, ``MODEL``,
        ``BASE_URL``, ``API_KEY`` or ``API_KEY_ENV`` naming the variable that holds the key, ``REGION``).
        """
        env = os.environ if environ is None else environ
        kwargs: dict[str, object] = {}
        if env.get("MEMLANE_HOME"):
            kwargs["data_dir"] = Path(env["MEMLANE_HOME"]).expanduser()
        if env.get("MEMLANE_EMBEDDER"):
            kwargs["embedder"] = env["MEMLANE_EMBEDDER"]
        if env.get("MEMLANE_PRESET"):
            kwargs["preset"] = env["MEMLANE_PRESET"]
        if env.get("MEMLANE_RERANKER"):
            kwargs["reranker"] = env["MEMLANE_RERANKER"]
        if env.get("MEMLANE_BLAS_THREADS"):  # a number, or "none" to leave BLAS alone
            raw = env["MEMLANE_BLAS_THREADS"].strip().lower()
            kwargs["blas_threads"] = None if raw == "none" else int(_number("MEMLANE_BLAS_THREADS", raw))
        if env.get("MEMLANE_INFER"):
            kwargs["infer"] = _flag("MEMLANE_INFER", env["MEMLANE_INFER"])
        if env.get("MEMLANE_MIN_CONFIDENCE"):
            kwargs["min_confidence"] = _number("MEMLANE_MIN_CONFIDENCE", env["MEMLANE_MIN_CONFIDENCE"])
        if env.get("MEMLANE_CAPACITY"):
            kwargs["capacity"] = int(_number("MEMLANE_CAPACITY", env["MEMLANE_CAPACITY"]))
        for key in ("max_text_chars", "max_id_chars"):  # every edge (REST, MCP) follows them
            value = env.get(f"MEMLANE_{key.upper()}")
            if value:
                kwargs[key] = _count(f"MEMLANE_{key.upper()}", value)
        for key in ("provider", "model", "base_url", "region"):
            value = env.get(f"MEMLANE_LLM_{key.upper()}")
            if value:
                kwargs[f"llm_{key}"] = value
        if env.get("MEMLANE_INJECTION_DETECTOR"):
            kwargs["injection_detector"] = env["MEMLANE_INJECTION_DETECTOR"]
        if env.get("MEMLANE_INJECTION_THRESHOLD"):
            kwargs["injection_threshold"] = _number("MEMLANE_INJECTION_THRESHOLD", env["MEMLANE_INJECTION_THRESHOLD"])
        if env.get("MEMLANE_REDACT_PII"):
            kwargs["redact_pii"] = check_kinds(env["MEMLANE_REDACT_PII"].split(","))
        if env.get("MEMLANE_PII_KEY"):
            kwargs["pii_key_path"] = Path(env["MEMLANE_PII_KEY"]).expanduser()
        if env.get("MEMLANE_BROKER_URL"):
            kwargs["broker_url"] = env["MEMLANE_BROKER_URL"]
        if env.get("MEMLANE_BROKER_QUEUE"):
            kwargs["broker_queue"] = env["MEMLANE_BROKER_QUEUE"]
        if env.get("MEMLANE_JOB_MAX_ATTEMPTS"):
            kwargs["job_max_attempts"] = int(_number("MEMLANE_JOB_MAX_ATTEMPTS", env["MEMLANE_JOB_MAX_ATTEMPTS"]))
        if env.get("MEMLANE_JOB_BACKOFF_SECONDS"):
            kwargs["job_backoff_seconds"] = _number("MEMLANE_JOB_BACKOFF_SECONDS", env["MEMLANE_JOB_BACKOFF_SECONDS"])
        if env.get("MEMLANE_LLM_API_KEY"):
            kwargs["llm_api_key"] = env["MEMLANE_LLM_API_KEY"]
        elif env.get("MEMLANE_LLM_API_KEY_ENV"):
            name = env["MEMLANE_LLM_API_KEY_ENV"]
            if not env.get(name):
                raise ConfigError(f"MEMLANE_LLM_API_KEY_ENV names {name}, which is not set")
            kwargs["llm_api_key"] = env[name]
        return cls(**kwargs)  # type: ignore[arg-type]


def _flag(name: str, value: str) -> bool:
    text = value.strip().casefold()
    if text in ("1", "true", "yes", "on"):
        return True
    if text in ("0", "false", "no", "off"):
        return False
    raise ConfigError(f"{name} must be true or false, got {value!r}")


def _number(name: str, value: str) -> float:
    try:
        return float(value)
    except ValueError:
        raise ConfigError(f"{name} must be a number, got {value!r}") from None


def _count(name: str, value: str) -> int:
    try:
        count = int(value.strip())
    except ValueError:
        raise ConfigError(f"{name} must be a positive integer, got {value!r}") from None
    if count <= 0:
        raise ConfigError(f"{name} must be a positive integer, got {value!r}")
    return count
