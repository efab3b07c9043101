"""`memlane keys` and a real `memlane serve` process: first start prints an admin key once and stores only its hash."""

from __future__ import annotations

import json
import re

import httpx
from typer.testing import CliRunner

from memlane.bench.load import run_load, spawned_server
from memlane.cli import app
from memlane.server.keys import AdminDB, key_hash

runner = CliRunner()


def test_keys_create_list_revoke(tmp_path):
    r = runner.invoke(app, ["keys", "create", "--tenant", "acme", "--scopes", "read", "--data-dir", str(tmp_path)])
    assert r.exit_code == 0, r.output
    secret = re.search(r"ml_[0-9a-f]{12}_[0-9a-f]{64}", r.stdout).group(0)
    listed = json.loads(runner.invoke(app, ["keys", "list", "--data-dir", str(tmp_path)]).stdout)
    assert [(k["prefix"], k["tenant"], k["scopes"], k["revoked_at"]) for k in listed] == [
        (secret[:15], "acme", ["read"], None)
    ]
    assert secret not in (tmp_path / "server.db").read_bytes().decode("latin-1")
    r = runner.invoke(app, ["keys", "revoke", secret[:15], "--data-dir", str(tmp_path)])
    assert r.exit_code == 0 and "revoked" in r.stdout
    db = AdminDB(tmp_path / "server.db")
    assert db.verify(secret).revoked
    db.close()
    r = runner.invoke(app, ["keys", "create", "--scopes", "root", "--data-dir", str(tmp_path)])
    assert r.exit_code == 2 and "unknown scope" in r.output


def test_serve_first_start_key_works_and_only_its_hash_is_stored(tmp_path):
    with spawned_server("hash", tmp_path) as (url, key):
        assert httpx.get(f"{url}/health").json()["auth"] is True
        r = httpx.post(
            f"{url}/v1/memories",
            json={"user_id": "maya", "messages": ["I adopted a border collie called Pepper"]},
            headers={"Authorization": f"Bearer {key}"},
        )
        assert r.status_code == 200
        assert httpx.get(f"{url}/v1/memories", params={"user_id": "maya"}).status_code == 401
        stored = b"".join(p.read_bytes() for p in tmp_path.glob("server.db*"))
        assert key.encode() not in stored and key_hash(key).encode() in stored
        result = run_load(url, key, clients=4, seconds=1.0)
        assert result.requests > 0 and result.server_errors == 0


def test_bench_commands_kept_in_results_never_carry_the_api_key(monkeypatch):
    from memlane.cli.bench import _command

    secret = "ml_0123456789ab_" + "f" * 64
    monkeypatch.setattr("sys.argv", ["/x/bin/memlane", "bench", "load", "--url", "http://h", "--key", secret])
    assert secret not in _command("load") and "--key '$MEMLANE_API_KEY'" in _command("load")
    monkeypatch.setattr("sys.argv", ["/x/bin/memlane", "bench", "load", f"--key={secret}"])
    assert secret not in _command("load")


def test_keys_on_a_postgresql_store_live_in_its_database(tmp_path):
    from memlane.server import open_admin_store
    from tests.pg_server import postgres_url

    url = postgres_url()
    r = runner.invoke(app, ["keys", "create", "--tenant", "acme", "--db", url, "--data-dir", str(tmp_path)])
    assert r.exit_code == 0, r.output
    secret = re.search(r"ml_[0-9a-f]{12}_[0-9a-f]{64}", r.stdout).group(0)
    assert not (tmp_path / "server.db").exists()
    shared = open_admin_store(tmp_path / "elsewhere", url)  # another machine's data dir: the same keys
    try:
        assert shared.verify(secret).tenant == "acme"
        listed = json.loads(runner.invoke(app, ["keys", "list", "--db", url]).stdout)
        assert [k["prefix"] for k in listed] == [secret[:15]]
        assert runner.invoke(app, ["keys", "revoke", secret[:15], "--db", url]).exit_code == 0
        assert shared.verify(secret).revoked
    finally:
        shared.close()
    # a SQLite store keeps them in server.db, as before
    local = tmp_path / "local"
    r = runner.invoke(app, ["keys", "create", "--db", str(local / "memlane.db"), "--data-dir", str(local)])
    assert r.exit_code == 0 and (local / "server.db").exists()


def test_serve_with_an_unreachable_redis_stops_with_the_reason(tmp_path):
    from tests.redis_server import free_port

    port = free_port()
    r = runner.invoke(
        app,
        [
            "serve",
            "--data-dir",
            str(tmp_path),
            "--db",
            str(tmp_path / "m.db"),
            "--redis",
            f"redis://127.0.0.1:{port}/0",
        ],
    )
    assert r.exit_code != 0 and f"cannot reach Redis at redis://127.0.0.1:{port}/0" in r.output
