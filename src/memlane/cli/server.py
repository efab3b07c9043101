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
    from memlane.server.admin_store import AdminStore

keys_app = typer.Typer(
    cls=OneLineErrors, help="API keys of the REST server (hashed; a secret is shown once).", no_args_is_help=True
)

DataDirOpt = Annotated[
    Path | None,
    typer.Option(
        "--data-dir",
        help="Where server.db (keys, audit log) lives (default: $MEMLANE_HOME); on a PostgreSQL --db they live there.",
    ),
]


def _data_dir(given: Path | None) -> Path:
    return given if given is not None else env_config().data_dir


def _admin_db(data_dir: Path | None, store: str | None) -> AdminStore:
    """The server's key database: in the store's database for a PostgreSQL ``--db``, else server.db."""
    try:
        from memlane.server.admin_store import open_admin_store

        return open_admin_store(_data_dir(data_dir), store)
    except MemlaneError as exc:
        fail(str(exc))


@keys_app.command("create")
def keys_create(
    tenant: Annotated[str, typer.Option("--tenant", help="The tenant the key is bound to.")] = "default",
    scopes: Annotated[str, typer.Option("--scopes", help="Comma-separated: read, write, admin.")] = "read,write",
    name: Annotated[str, typer.Option("--name", help="A label shown in `keys list`.")] = "",
    data_dir: DataDirOpt = None,
    db: DbOpt = None,
) -> None:
    """Create a key and print it once (only its hash is stored)."""
    admin = _admin_db(data_dir, db)
    try:
        new = admin.create_key(tenant, scopes, name)
    except MemlaneError as exc:
        fail(str(exc))
    finally:
        admin.close()
    err.print(f"created key ml_{new.key.prefix} for tenant {tenant!r} ({scopes}); the secret is shown only now:")
    out.print(new.secret, highlight=False)


@keys_app.command("list")
def keys_list(data_dir: DataDirOpt = None, db: DbOpt = None) -> None:
    """Every key: prefix, tenant, scopes, name, state (never the secret)."""
    admin = _admin_db(data_dir, db)
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
                for k in admin.list_keys()
            ]
        )
    finally:
        admin.close()


@keys_app.command("revoke")
def keys_revoke(
    prefix: Annotated[str, typer.Argument(help="The key's prefix (ml_xxxxxxxxxxxx) or the whole key.")],
    data_dir: DataDirOpt = None,
    db: DbOpt = None,
) -> None:
    """Revoke a key: every request with it is refused from now on."""
    admin = _admin_db(data_dir, db)
    try:
        key = admin.revoke(prefix)
    except MemlaneError as exc:
        fail(str(exc))
    finally:
        admin.close()
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
    body_timeout: Annotated[
        float, typer.Option("--body-timeout", help="Seconds a request body may take to arrive before 408.")
    ] = 10.0,
    max_receiving: Annotated[
        int, typer.Option("--max-receiving", help="Request bodies received at once before 503 (apart from in-flight).")
    ] = 256,
    max_connections: Annotated[
        int, typer.Option("--max-connections", help="Open connections and tasks before the server answers 503.")
    ] = 2048,
    keep_alive: Annotated[
        int, typer.Option("--keep-alive", help="Seconds an idle keep-alive connection stays open.")
    ] = 5,
    header_timeout: Annotated[
        float, typer.Option("--header-timeout", help="Seconds a request's line and headers may take to arrive.")
    ] = 10.0,
    threads: Annotated[int, typer.Option("--threads", help="Worker threads running library calls.")] = 8,
    queue_timeout: Annotated[
        float, typer.Option("--queue-timeout", help="Seconds a request may wait for a worker before 503.")
    ] = 10.0,
    redis: Annotated[
        str | None,
        typer.Option(
            "--redis",
            envvar="MEMLANE_REDIS_URL",
            help="Share rate limits with every server given this Redis URL (e.g. the Celery broker's).",
        ),
    ] = None,
) -> None:
    """Start the REST API (OpenAPI docs at /docs). With no key yet, create and print an admin key once."""
    try:
        import uvicorn

        from memlane.server import ServerSettings, create_app
        from memlane.server.protocol import header_timeout_protocol
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
        body_timeout=body_timeout,
        max_receiving=max_receiving,
        threads=threads,
        queue_timeout=queue_timeout,
        redis_url=redis,
    )
    docs, ui = f"http://{host}:{port}/docs", f"http://{host}:{port}/ui"
    admin = _admin_db(home, db)
    try:
        new = admin.bootstrap_key("default", "admin,read,write", "created at first start")
        if new is not None:
            err.print(
                "[bold]memlane: first start: created the admin key of tenant 'default'. It is shown ONCE and "
                "only its hash is stored; keep it now:[/]"
            )
            out.print(new.secret, highlight=False)
            err.print(f"API docs: {docs}   (send it as 'Authorization: Bearer <key>')", highlight=False)
            err.print(f"Inspector: {ui}   (log in with it)", highlight=False)
        else:
            err.print(f"memlane: API docs at {docs}, the inspector at {ui}", highlight=False)
    except MemlaneError as exc:
        fail(str(exc))
    finally:
        admin.close()
    if insecure_dev:
        err.print("[bold red]WARNING: --insecure-dev: authentication is OFF; every caller is admin.[/]")
    logging.basicConfig(level=logging.INFO)
    try:
        app = create_app(settings)
    except MemlaneError as exc:
        fail(str(exc))
    uvicorn.run(
        app,
        host=host,
        port=port,
        log_level="info",
        timeout_keep_alive=max(1, keep_alive),
        limit_concurrency=max_connections,
        h11_max_incomplete_event_size=16 * 1024,  # request line and headers: at most 16 KiB (the h11 parser)
        http=header_timeout_protocol(header_timeout),
    )
