"""The sections of docs/benchmarks.md read from plain JSON results: the REST service's load runs, the inspector's
pages at scale and a pointer to the injection detector's table.
"""

from __future__ import annotations

import json
from pathlib import Path


def service_sections(results: Path) -> list[str]:
    """The service's load run (``load.json``) and the injection detector's dev table (``injection-dev.json``), when
    their results are there.
    """
    lines: list[str] = []
    for name, title in (("load.json", "embedded job queue"), ("load-celery.json", "Celery workers over Redis")):
        load_path = results / name
        if not load_path.exists():
            continue
        run = json.loads(load_path.read_text(encoding="utf-8"))
        setup = run.get(
            "setup", "a fresh `memlane serve` on the embedded SQLite default and the default MiniLM embedder"
        )
        lines += [
            f"## Service load: REST on loopback, {title}",
            "",
            f"`{run['command']}` ({setup}; load average {run['load_average'][0]:.2f} at the end). {run['clients']} "
            f"clients for {run['seconds']:.0f} s: {run['requests']:,} requests, {run['throughput_rps']:.1f} per "
            f"second, {run['errors']} errors ({run['server_errors']} server errors or timeouts). Latency includes the "
            "wait for one of the server's worker threads: 50 clients share 8.",
            "",
            "| operation | requests | p50 ms | p95 ms | p99 ms |",
            "|---|---|---|---|---|",
            *(
                f"| {op} | {int(v['requests']):,} | {v['p50_ms']:.0f} | {v['p95_ms']:.0f} | {v['p99_ms']:.0f} |"
                for op, v in run["by_op"].items()
            ),
            "",
        ]
        if "jobs_done_after" in run:
            lines += [f"Every queued job was done after the run ({run['jobs_done_after']:,} extraction jobs).", ""]
    inspector_path = results / "inspector.json"
    if inspector_path.exists():
        from memlane.bench.inspector import markdown_section

        lines += markdown_section(json.loads(inspector_path.read_text(encoding="utf-8")))
    injection_path = results / "injection-dev.json"
    if injection_path.exists():
        lines += [
            "## Injection detector",
            "",
            "Recall and false-positive rate per subset of the held-out dev split, with 95% Wilson intervals, and the "
            "cost per memory: see [security.md](security.md) (results in `docs/results/injection-dev.json`).",
            "",
        ]
    return lines
