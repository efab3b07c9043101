"""Fingerprints of everything the injection detector says about a set of texts, to show that two versions of the
code say the same: run this file with each tree first on the path, then compare the two files.

    PYTHONPATH=OLD/src python src/memlane/bench/injection_outputs.py --out old.json --corpus ... --data ... --locomo ...
    PYTHONPATH=src python src/memlane/bench/injection_outputs.py --out new.json --corpus ... --data ... --locomo ...
    python src/memlane/bench/injection_outputs.py --compare old.json new.json

Per text: the unmasked text, tricks and payloads; the classifier's logit (``float.hex``: bit for bit); the rules'
evidence and reasons; the verdict of ``scan`` and of ``scan_embedded`` with a fixed random unit vector per text.
It imports only what the branch point already had, so it runs over an older tree as it is.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import sys
from collections.abc import Iterable, Sequence
from pathlib import Path
from typing import Any

import numpy as np


def texts_of(corpora: Sequence[Path], data: Path | None, locomo: Path | None) -> list[str]:
    """The texts in a fixed order: each corpus line's ``text``, the injection sources, LoCoMo turns as written."""
    out = [
        str(json.loads(line)["text"])
        for path in corpora
        for line in path.read_text(encoding="utf-8").split("\n")
        if line.strip()
    ]
    if data is not None:
        from memlane.bench.injection_data import load_sources

        sources = load_sources(data, locomo)
        out += [s.text for name in sorted(sources) for s in sources[name]]
    if locomo is not None:
        for conv in json.loads(locomo.read_text(encoding="utf-8")):
            for key, turns in conv["conversation"].items():
                if key.startswith("session_") and isinstance(turns, list):
                    out += [str(turn["text"]) for turn in turns]
    return out


def _digest(value: Any) -> str:
    return hashlib.sha256(repr(value).encode("utf-8")).hexdigest()[:16]


def _verdict(v: Any) -> tuple[str, bool, tuple[str, ...], str]:
    return (float(v.score).hex(), bool(v.flagged), tuple(v.reasons), str(v.detector))


def fingerprints(texts: Sequence[str]) -> dict[str, list[str]]:
    """One digest per text and output (see the module's doc)."""
    from memlane.security.detect import CombinedDetector
    from memlane.security.obfuscation import unmask

    detector = CombinedDetector()
    head = detector.head
    dim = head.head.weights.size if head is not None else 384
    rng = np.random.default_rng(0)
    vectors = rng.standard_normal((len(texts), dim)).astype(np.float32)
    vectors /= np.linalg.norm(vectors, axis=1, keepdims=True)
    unmasked = [unmask(t) for t in texts]
    out: dict[str, list[str]] = {
        "unmask": [_digest((u.text, u.tricks, u.payloads)) for u in unmasked],
        "logit": [_digest(float(detector.model.logits_of([u])[0]).hex()) for u in unmasked],
        "rules": [_digest((float(e).hex(), r)) for e, r in (detector._rules.evidence_of(u) for u in unmasked)],
        "scan": [_digest(_verdict(detector.scan([t])[0])) for t in texts],
        "scan_embedded": [
            _digest(_verdict(detector.scan_embedded([t], vectors[i : i + 1])[0])) for i, t in enumerate(texts)
        ],
    }
    return out


def compare(a: dict[str, list[str]], b: dict[str, list[str]]) -> list[str]:
    """What differs between two fingerprint files (nothing: an empty list)."""
    problems = [f"{key}: only in one file" for key in sorted(set(a) ^ set(b))]
    for key in sorted(set(a) & set(b)):
        if len(a[key]) != len(b[key]):
            problems.append(f"{key}: {len(a[key])} vs {len(b[key])} texts")
            continue
        differ = [i for i, (x, y) in enumerate(zip(a[key], b[key], strict=True)) if x != y]
        if differ:
            problems.append(f"{key}: {len(differ)} texts differ, first at {differ[:10]}")
    return problems


def main(argv: Iterable[str]) -> int:
    """Write fingerprints (``--out``) or compare two files (``--compare``); 1 when they differ."""
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--corpus", type=Path, nargs="*", default=[])
    parser.add_argument("--data", type=Path)
    parser.add_argument("--locomo", type=Path)
    parser.add_argument("--out", type=Path)
    parser.add_argument("--compare", type=Path, nargs=2)
    args = parser.parse_args(list(argv))
    if args.compare:
        a, b = (json.loads(p.read_text(encoding="utf-8")) for p in args.compare)
        problems = compare(a, b)
        sys.stdout.write("\n".join(problems) + "\n" if problems else f"identical: {len(a.get('scan', []))} texts\n")
        return 1 if problems else 0
    if args.out is None:
        parser.error("--out or --compare is required")
    prints = fingerprints(texts_of(args.corpus, args.data, args.locomo))
    args.out.write_text(json.dumps(prints), encoding="utf-8")
    sys.stdout.write(f"{len(prints['scan'])} texts -> {args.out}\n")
    return 0


if __name__ == "__main__":  # pragma: no cover - the command line
    sys.exit(main(sys.argv[1:]))
