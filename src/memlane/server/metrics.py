"""Prometheus metrics of the server: requests by route and status, latency, requests in flight."""

from __future__ import annotations

import time

from prometheus_client import CONTENT_TYPE_LATEST, CollectorRegistry, Counter, Gauge, Histogram, generate_latest

from memlane.server.limits import ASGIApp, Message, Receive, Scope, Send


class Metrics:
    """The server's collectors, in a registry of their own (two apps in one process do not collide)."""

    def __init__(self) -> None:
        self.registry = CollectorRegistry()
        self.requests = Counter(
            "memlane_http_requests_total",
            "HTTP requests by method, route template and status",
            ["method", "route", "status"],
            registry=self.registry,
        )
        self.latency = Histogram(
            "memlane_http_request_duration_seconds",
            "Time to answer a request, by route template",
            ["route"],
            registry=self.registry,
        )
        self.inflight = Gauge("memlane_http_requests_in_flight", "Requests being served", registry=self.registry)

    def render(self) -> tuple[bytes, str]:
        """The exposition text and its content type."""
        return generate_latest(self.registry), CONTENT_TYPE_LATEST


class MetricsMiddleware:
    """Counts and times every HTTP request, refusals by the limits included (so it sits outermost)."""

    def __init__(self, app: ASGIApp, metrics: Metrics) -> None:
        self.app, self.metrics = app, metrics

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        status = 500
        start = time.perf_counter()

        async def observe(message: Message) -> None:
            nonlocal status
            if message["type"] == "http.response.start":
                status = int(message["status"])
            await send(message)

        self.metrics.inflight.inc()
        try:
            await self.app(scope, receive, observe)
        finally:
            self.metrics.inflight.dec()
            route = getattr(scope.get("route"), "path", None) or "unmatched"
            self.metrics.requests.labels(scope.get("method", ""), route, str(status)).inc()
            self.metrics.latency.labels(route).observe(time.perf_counter() - start)
