"""Record real chat-completion replies from a running OpenAI-compatible server as test fixtures.

Usage: python tests/llm/record_fixtures.py BASE_URL MODEL [OUT_DIR]
(e.g. a llama.cpp server: python -m llama_cpp.server --model SmolLM2-135M-Instruct.Q4_1.gguf --port 8765).
Each fixture keeps the request that was sent and the exact response body the server returned.
"""

from __future__ import annotations

import json
import sys
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import httpx

from memlane.extraction.prompts import consolidate, extract

TURNS = [
    ("m1", "Caroline", "user", datetime(2025, 5, 8, 18, 0, tzinfo=UTC), "I'm training to become a counsellor."),
    ("m2", "Caroline", "user", datetime(2025, 5, 8, 18, 1, tzinfo=UTC), "I moved from Boston to Denver last year."),
    ("m3", "Caroline", "user", datetime(2025, 5, 8, 18, 2, tzinfo=UTC), "I prefer window seats on long flights."),
]


def call(url: str, model: str, messages: list[dict[str, str]], **extra: Any) -> dict[str, Any]:
    payload = {"model": model, "messages": messages, "temperature": 0.0, "stream": False, **extra}
    response = httpx.post(f"{url}/chat/completions", json=payload, timeout=600)
    return {"request": payload, "status": response.status_code, "response": response.json()}


def main() -> None:
    url, model = sys.argv[1].rstrip("/"), sys.argv[2]
    out = Path(sys.argv[3] if len(sys.argv) > 3 else Path(__file__).parents[1] / "fixtures" / "llm")
    out.mkdir(parents=True, exist_ok=True)
    messages = [m.model_dump() for m in extract.render(TURNS)]
    schema = {"type": "json_schema", "json_schema": {"name": "output", "schema": extract.PROMPT.schema()}}
    new = ("fact", "Caroline lives in Denver.", "2025-05-08")
    existing = [("e1", "fact", "Caroline lives in Boston.", "2023-02-01")]
    consolidation = [m.model_dump() for m in consolidate.render(new, existing)]
    cons_schema = {"type": "json_schema", "json_schema": {"name": "output", "schema": consolidate.PROMPT.schema()}}
    json_mode = {"type": "json_object"}
    recordings = {
        "extract_json_schema": call(url, model, messages, max_tokens=512, response_format=schema),
        "extract_json_object": call(url, model, messages, max_tokens=512, response_format=json_mode),
        "extract_truncated": call(url, model, messages, max_tokens=24, response_format=json_mode),
        "extract_unstructured": call(url, model, messages, max_tokens=256),
        "extract_garbled": call(url, model, messages, max_tokens=256, response_format=json_mode, repeat_penalty=1.3),
        "consolidate_json_schema": call(url, model, consolidation, max_tokens=128, response_format=cons_schema),
        "consolidate_json_object": call(url, model, consolidation, max_tokens=128, response_format=json_mode),
    }
    for name, recording in recordings.items():
        recording["provenance"] = f"real reply of {model} served at {url}, recorded by tests/llm/record_fixtures.py"
        (out / f"{name}.json").write_text(json.dumps(recording, indent=2, ensure_ascii=False) + "\n", encoding="utf-8")


if __name__ == "__main__":
    main()
