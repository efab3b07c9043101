"""The TypeScript client's own tests (``node --test`` in clients/typescript: a live ``memlane serve`` started by the
test, the committed types checked against the OpenAPI document), run from the default pytest run.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2] / "clients" / "typescript"


def _installed() -> bool:
    """Whether node_modules holds what package-lock.json names (npm records it in node_modules/.package-lock.json)."""
    marker = ROOT / "node_modules" / ".package-lock.json"
    return marker.exists() and marker.stat().st_mtime >= (ROOT / "package-lock.json").stat().st_mtime


def test_typescript_client_suite():
    node, npm = shutil.which("node"), shutil.which("npm")
    if node is None or npm is None:
        pytest.skip("SKIPPED LOUDLY: node/npm not found, the TypeScript client's tests did not run")
    env = {**os.environ, "MEMLANE_PYTHON": sys.executable}
    if not _installed():
        ci = subprocess.run(
            [npm, "ci", "--prefer-offline", "--no-audit", "--no-fund"],
            cwd=ROOT,
            env=env,
            capture_output=True,
            text=True,
            timeout=600,
        )
        assert ci.returncode == 0, f"npm ci failed:\n{ci.stdout[-3000:]}\n{ci.stderr[-3000:]}"
    run = subprocess.run([node, "--test", "test/"], cwd=ROOT, env=env, capture_output=True, text=True, timeout=900)
    assert run.returncode == 0, f"node --test failed:\n{run.stdout[-6000:]}\n{run.stderr[-3000:]}"
    assert "# fail 0" in run.stdout and "# pass 0" not in run.stdout
