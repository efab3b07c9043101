"""Key management over REST (admin scope): create, list and revoke the keys of the caller's own tenant. A key of
another tenant is never shown and cannot be revoked (404, as if it did not exist).
"""

from __future__ import annotations

from fastapi import APIRouter

from memlane.apikeys import KeyInfo, NewKeyInfo
from memlane.errors import NotFoundError
from memlane.server.routes.deps import Admin, Svc
from memlane.server.routes.requests import KeyRequest, key_info
from memlane.server.strict import StrictRoute

router = APIRouter(route_class=StrictRoute)  # strict bodies, as on the app's own routes


@router.get("/admin/keys", response_model=list[KeyInfo], tags=["keys"])
async def list_keys(who: Admin, svc: Svc) -> list[KeyInfo]:
    """The keys of the caller's tenant (revoked ones too), oldest first; never their secrets."""
    keys = await svc.call(
        who,
        "list_keys",
        lambda _: [k for k in svc.admin.list_keys() if k.tenant == who.tenant],
        describe=lambda k: f"{len(k)} keys",
    )
    return [key_info(k) for k in keys]


@router.post("/admin/keys", response_model=NewKeyInfo, status_code=201, tags=["keys"])
async def create_key(body: KeyRequest, who: Admin, svc: Svc) -> NewKeyInfo:
    """A new key of the caller's tenant; its `secret` is in this answer only (only its hash is stored)."""
    new = await svc.call(
        who,
        "create_key",
        lambda _: svc.admin.create_key(who.tenant, list(body.scopes), body.name),
        describe=lambda n: f"ml_{n.key.prefix} {','.join(sorted(n.key.scopes))}",
    )
    return NewKeyInfo(**key_info(new.key).model_dump(), secret=new.secret)


@router.delete("/admin/keys/{prefix}", response_model=KeyInfo, tags=["keys"])
async def revoke_key(prefix: str, who: Admin, svc: Svc) -> KeyInfo:
    """Revoke a key of the caller's tenant by its prefix (`ml_<prefix>` or the bare prefix); revoking twice is
    harmless.
    """
    bare = prefix.removeprefix("ml_").split("_")[0]

    def run(_: object) -> KeyInfo:
        if not any(k.prefix == bare and k.tenant == who.tenant for k in svc.admin.list_keys()):
            raise NotFoundError(f"no key with prefix {bare[:20]!r} in this tenant")
        return key_info(svc.admin.revoke(bare))

    return await svc.call(who, "revoke_key", run, target=f"ml_{bare[:20]}")
