"""``memlane serve`` and ``memlane keys``: start the REST server, and create, list and revoke its API keys."""

from __future__ import annotations

import logging
from pathlib import Path
from typing import TYPE_CHECKING, Annotated

import typer

from memlane.cli.options import DbOpt, env_config
from memlane.cli.output import OneLineErrors, dump, err, fail, out
from memlane.errors import MemlaneError

if TYPE_CHECKING:  # the server extra may be missing: imported where used
    from memlane.server.keys import AdminDB

keys_app = typer.Typer(
    cls=OneLineErrors, help="API keys of the REST server (hashed; a secret is shown once).", no_args_is_help=True
)

DataDirOpt = Annotated[
    Path | None,
    typer.Option("--data-dir", help="Where server.db (keys, audit log) lives (default: $MEMLANE_HOME)."),
]


def _data_dir(given: Path | None) -> Path:
    return given if given is not None else env_config().data_dir


def _admin_db(data_dir: Path | None) -> AdminDB:
    try:
        from memlane.server.keys import AdminDB
        from memlane.server.service import ADMIN_DB_NAME
    except MemlaneError as exc:
        fail(str(exc))
    return AdminDB(_data_dir(data_dir) / ADMIN_DB_NAME)


@keys_app.command("create")
def keys_create(
    tenant: Annotated[str, typer.Option("--tenant", help="The tenant the key is bound to.")] = "default",
    scopes: Annotated[str, typer.Option("--scopes", help="Comma-separated: read, write, admin.")] = "read,write",
    name: Annotated[str, typer.Option("--name", help="A label shown in `keys list`.")] = "",
    data_dir: DataDirOpt = None,
) -> None:
    """Create a key and print it once (only its hash is stored)."""
    db = _admin_db(data_dir)
    try:
        new = db.create_key(tenant, scopes, name)
    except MemlaneError as exc:
        fail(str(exc))
    finally:
        db.close()
    err.print(f"created key ml_{new.key.prefix} for tenant {tenant!r} ({scopes}); the secret is shown only now:")
    out.print(new.secret, highlight=False)


@keys_app.command("list")
def keys_list(data_dir: DataDirOpt = None) -> None:
    """Every key: prefix, tenant, scopes, name, state (never the secret)."""
    db = _admin_db(data_dir)
    try:
        dump(
            [
                {
                    "prefix": f"ml_{k.prefix}",
                    "tenant": k.tenant,
                    "scopes": sorted(k.scopes),
                    "name": k.name,
                    "created_at": k.created_at.isoformat(),
                    "revoked_at": k.revoked_at.isoformat() if k.revoked_at else None,
                }
                for k in db.list_keys()
            ]
        )
    finally:
        db.close()


@keys_app.command("revoke")
def keys_revoke(
    prefix: Annotated[str, typer.Argument(help="The key's prefix (ml_xxxxxxxxxxxx) or the whole key.")],
    data_dir: DataDirOpt = None,
) -> None:
    """Revoke a key: every request with it is refused from now on."""
    db = _admin_db(data_dir)
    try:
        key = db.revoke(prefix)
    except MemlaneError as exc:
        fail(str(exc))
    finally:
        db.close()
    out.print(f"revoked ml_{key.prefix} (tenant {key.tenant!r})", highlight=False)


def serve(
    host: Annotated[str, typer.Option("--host", help="Address to listen on.")] = "127.0.0.1",
    port: Annotated[int, typer.Option("--port", help="Port to listen on.")] = 8000,
    db: DbOpt = None,
    embedder: Annotated[str | None, typer.Option("--embedder", envvar="MEMLANE_EMBEDDER")] = None,
    data_dir: DataDirOpt = None,
    insecure_dev: Annotated[
        bool, typer.Option("--insecure-dev", help="Turn authentication OFF (local development only).")
    ] = False,
    rate: Annotated[float, typer.Option("--rate", help="Requests per second per key (0: unlimited).")] = 50.0,
    burst: Annotated[int, typer.Option("--burst", help="Burst size of each key's bucket.")] = 100,
    max_body: Annotated[int, typer.Option("--max-body-bytes", help="Largest request body accepted.")] = 4_000_000,
    max_inflight: Annotated[int, typer.Option("--max-inflight", help="Requests served at once before 503.")] = 64,
    threads: Annotated[int, typer.Option("--threads", help="Worker threads running library calls.")] = 8,
    queue_timeout: Annotated[
        float, typer.Option("--queue-timeout", help="Seconds a request may wait for a worker before 503.")
    ] = 10.0,
) -> None:
    """Start the REST API (OpenAPI docs at /docs). On a fresh data dir, create and print an admin key once."""
    try:
        import uvicorn

        from memlane.server import ServerSettings, create_app
    except MemlaneError as exc:
        fail(str(exc))
    home = _data_dir(data_dir)
    settings = ServerSettings(
        data_dir=home,
        store=db,
        embedder=embedder,
        insecure_dev=insecure_dev,
        rate_per_second=rate,
        burst=burst,
        max_body_bytes=max_body,
        max_inflight=max_inflight,
        threads=threads,
        queue_timeout=queue_timeout,
    )
    docs = f"http://{host}:{port}/docs"
    admin = _admin_db(home)
    try:
        if admin.count_keys() == 0:
            new = admin.create_key("default", "admin,read,write", "created at first start")
            err.print(
                "[bold]memlane: first start: created the admin key of tenant 'default'. It is shown ONCE and "
                "only its hash is stored; keep it now:[/]"
            )
            out.print(new.secret, highlight=False)
            err.print(f"API docs: {docs}   (send it as 'Authorization: Bearer <key>')", highlight=False)
        else:
            err.print(f"memlane: API docs at {docs}", highlight=False)
    except MemlaneError as exc:
        fail(str(exc))
    finally:
        admin.close()
    if insecure_dev:
        err.print("[bold red]WARNING: --insecure-dev: authentication is OFF; every caller is admin.[/]")
    logging.basicConfig(level=logging.INFO)
    uvicorn.run(create_app(settings), host=host, port=port, log_level="info")
