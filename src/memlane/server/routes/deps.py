"""What every route module shares: the running ``Service`` and the caller holding a scope, as dependencies."""

from __future__ import annotations

from collections.abc import Callable
from typing import Annotated

from fastapi import Depends, Request
from fastapi.security import HTTPAuthorizationCredentials, HTTPBearer

from memlane.server.keys import Scope
from memlane.server.service import Principal, Service

bearer = HTTPBearer(auto_error=False, description="An API key: `Authorization: Bearer ml_<prefix>_<secret>`")


def need(scope: Scope) -> Callable[..., Principal]:
    """A dependency: the caller, holding ``scope`` (401/403/429 otherwise)."""

    def dependency(
        request: Request, creds: Annotated[HTTPAuthorizationCredentials | None, Depends(bearer)]
    ) -> Principal:
        svc: Service = request.app.state.service
        return svc.authenticate(request, creds, scope)

    return dependency


def service(request: Request) -> Service:
    """The state of the running server."""
    svc: Service = request.app.state.service
    return svc


Reader = Annotated[Principal, Depends(need(Scope.READ))]
Writer = Annotated[Principal, Depends(need(Scope.WRITE))]
Admin = Annotated[Principal, Depends(need(Scope.ADMIN))]
Svc = Annotated[Service, Depends(service)]
