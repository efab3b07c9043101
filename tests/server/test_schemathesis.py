"""Schemathesis against the served OpenAPI document: generated requests (fixed seed) to every operation find no
5xx, no undocumented status or content type, and no response that violates its schema.
"""

from __future__ import annotations

import os
import shutil
import tempfile
from pathlib import Path

import pytest

pytest.importorskip("schemathesis", reason="the schema fuzz run needs schemathesis (memlane[dev])")

import schemathesis
from hypothesis import HealthCheck, settings
from schemathesis.checks import (
    content_type_conformance,
    not_a_server_error,
    response_headers_conformance,
    response_schema_conformance,
    status_code_conformance,
)

from memlane import Memory
from memlane.config import Config
from memlane.server import AdminDB, ServerSettings, create_app

#: Examples per operation: 37 operations x 40 = 1,480 generated requests by default; MEMLANE_FUZZ_EXAMPLES raises it.
EXAMPLES = int(os.environ.get("MEMLANE_FUZZ_EXAMPLES", "40"))

_tmp = Path(tempfile.mkdtemp(prefix="memlane-fuzz-"))
_settings = ServerSettings(data_dir=_tmp, rate_per_second=0)
_admin = AdminDB(_settings.admin_db)
_memory = Memory(":memory:", embedder="hash", config=Config(data_dir=_tmp, background_worker=False))
_key = _admin.create_key("fuzz", "admin,read,write").secret
_memory.add("I adopted a beagle called Biscuit", user_id="ana", tenant="fuzz")
app = create_app(_settings, memory=_memory, admin=_admin)
schemathesis.serializer.alias("application/x-ndjson", "text/plain")  # an import body is JSON Lines text
schema = schemathesis.openapi.from_asgi("/openapi.json", app)
CALLS: list[int] = []
CHECKS = [
    not_a_server_error,
    status_code_conformance,
    content_type_conformance,
    response_headers_conformance,
    response_schema_conformance,
]


@pytest.fixture(scope="module", autouse=True)
def _close():
    yield
    _memory.close()
    _admin.close()
    shutil.rmtree(_tmp, ignore_errors=True)


@schema.parametrize()
@settings(
    max_examples=EXAMPLES,
    derandomize=True,
    deadline=None,
    suppress_health_check=list(HealthCheck),
)
def test_api_conforms_to_its_schema(case):
    CALLS.append(1)
    case.call_and_validate(headers={"Authorization": f"Bearer {_key}"}, checks=CHECKS)


def test_zz_the_run_made_at_least_1000_requests():
    if not CALLS:
        pytest.skip("the schemathesis cases were not selected in this run")
    assert len(CALLS) >= 1000, f"only {len(CALLS)} generated requests"
