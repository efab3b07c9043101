"""CPU time of the injection detector per stored text, one text per call as ``Guard`` runs it at ingest:
``memlane bench injection --cost --data ../shared/data/injection --locomo ../shared/data/locomo/locomo_dev.json``
(the docs-qa passages of ``evalsets/docs-qa/*/corpus.jsonl`` unless ``--corpus`` names others), or
``python -m memlane.bench.injection_cost --corpus evalsets/docs-qa/*/corpus.jsonl --data ../shared/data/injection
--locomo ../shared/data/locomo/locomo_dev.json``.

CPU time (``time.process_time``) is what the 1 ms budget per text is about; on a shared machine it moves far less
with the load than wall-clock time, which is printed beside it. The embedding is not timed (the write computes it
for storage anyway), so the detector runs without vectors.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import time
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Final

from memlane.security.detect import CombinedDetector, Detector


@dataclass(frozen=True)
class Cost:
    """CPU and wall-clock milliseconds per text over ``n`` texts of one kind."""

    kind: str
    n: int
    cpu_ms: float
    wall_ms: float


def measure(detector: Detector, kind: str, texts: Sequence[str]) -> Cost:
    """Scan each text on its own and average the CPU and wall-clock time (after scanning the first 20 once: what is
    built on first use, tables and the rules' start literals, is not a text's cost).
    """
    if not texts:
        raise ValueError(f"no texts of kind {kind!r} to time")
    for text in texts[:20]:
        detector.scan([text])
    cpu, wall = time.process_time(), time.perf_counter()
    for text in texts:
        detector.scan([text])
    n = len(texts)
    return Cost(kind, n, (time.process_time() - cpu) / n * 1000, (time.perf_counter() - wall) / n * 1000)


def corpus_texts(paths: Sequence[Path], limit: int, seed: int = 0) -> list[str]:
    """The ``text`` field of every line of the JSONL ``paths``, shuffled with ``seed``, the first ``limit``."""
    texts = [
        str(json.loads(line)["text"])
        for path in paths
        for line in path.read_text(encoding="utf-8").split("\n")
        if line.strip()
    ]
    random.Random(seed).shuffle(texts)
    return texts[:limit]


def kinds(corpora: Sequence[Path], data: Path | None, locomo: Path | None, limit: int) -> dict[str, list[str]]:
    """The texts to time, by kind: passages of ``corpora``, and from the injection data and LoCoMo (when given)
    BIPIA documents (e-mail, code, one table in nine), short prompts (deepset, NotInject) and conversation turns.
    """
    out: dict[str, list[str]] = {}
    if corpora:
        out["documents (docs-qa passages)"] = corpus_texts(corpora, limit)
    if data is not None:
        from memlane.bench.injection_data import load_sources

        sources = load_sources(data, locomo)
        bipia = sources["bipia-email"] + sources["bipia-code"] + sources["bipia-table"][::9]
        out["documents (BIPIA e-mail, code, 1 table in 9)"] = [s.text for s in bipia][:limit]
        out["short prompts (deepset, NotInject)"] = [s.text for s in sources["deepset"] + sources["notinject"]][:limit]
        if "locomo" in sources:
            out["LoCoMo turns"] = [s.text for s in sources["locomo"]][:limit]
    return out


DOCS_QA: Final = "evalsets/docs-qa/*/corpus.jsonl"  # relative to the repository root


def docs_qa_corpora(root: Path) -> list[Path]:
    """The docs-qa corpora under ``root`` (the repository), in a fixed order."""
    return sorted(root.glob(DOCS_QA))


def cost_table(corpora: Sequence[Path], data: Path | None, locomo: Path | None, limit: int, command: str) -> str:
    """Time the default detector on the kinds of text ``kinds`` reads from the arguments; the table as markdown."""
    texts = kinds(corpora, data, locomo, limit)
    if not texts:
        raise ValueError("nothing to time: give docs-qa corpora, the injection data or both")
    detector = CombinedDetector()
    return markdown([measure(detector, kind, group) for kind, group in texts.items()], command)


def markdown(costs: Sequence[Cost], command: str) -> str:
    """The costs as a markdown table, with the command and the load average."""
    load = "{:.2f} {:.2f} {:.2f}".format(*os.getloadavg())
    lines = [
        f"`{command}`; load average {load}; one text per call, no vectors.",
        "",
        "| texts | n | CPU ms per text | wall ms per text |",
        "| --- | ---: | ---: | ---: |",
    ]
    lines += [f"| {c.kind} | {c.n} | {c.cpu_ms:.3f} | {c.wall_ms:.3f} |" for c in costs]
    return "\n".join(lines)


def main(argv: Sequence[str] | None = None) -> str:
    """Time the default detector on the kinds of text the arguments name; the table as markdown."""
    parser = argparse.ArgumentParser(prog="python -m memlane.bench.injection_cost", description=__doc__)
    parser.add_argument("--corpus", type=Path, nargs="*", default=[], help="JSONL files with a text field")
    parser.add_argument("--data", type=Path, help="the labelled injection folder (../shared/data/injection)")
    parser.add_argument("--locomo", type=Path, help="LoCoMo JSON whose turns are timed (evaluation only)")
    parser.add_argument("--limit", type=int, default=3000, help="texts per kind (default 3000)")
    args = parser.parse_args(argv)
    command = "python -m memlane.bench.injection_cost " + " ".join(argv or [])
    return cost_table(args.corpus, args.data, args.locomo, args.limit, command)


if __name__ == "__main__":  # pragma: no cover - the command line
    import sys

    sys.stdout.write(main(sys.argv[1:]) + "\n")
