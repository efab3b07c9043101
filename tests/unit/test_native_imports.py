"""The native libraries memlane loads side by side coexist in one interpreter, in either import order."""

from __future__ import annotations

import subprocess
import sys

import pytest


@pytest.mark.parametrize(
    "order",
    [("usearch.index", "onnxruntime"), ("onnxruntime", "usearch.index")],
    ids=["usearch-first", "onnxruntime-first"],
)
def test_vector_index_and_embedding_runtime_load_together(order: tuple[str, str]) -> None:
    code = f"import {order[0]}; import {order[1]}; print('ok')"
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, (
        f"importing {order[0]} then {order[1]} failed ({done.returncode}): {done.stderr[-500:]}"
    )
    assert done.stdout.strip() == "ok"
