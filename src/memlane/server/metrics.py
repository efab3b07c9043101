"""Prometheus metrics of the server: requests by route and status, latency, requests in flight; and, through
``memlane.telemetry``, each library operation (add, search, context, ask, extraction jobs, index builds) and the job
queue's depth.
"""

from __future__ import annotations

import time
from collections.abc import Callable

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
        self.operations = Counter(
            "memlane_operations_total",
            "Library operations by name (add, search, context, ask, extract_job, index_build) and outcome",
            ["operation", "outcome"],
            registry=self.registry,
        )
        self.operation_latency = Histogram(
            "memlane_operation_duration_seconds",
            "Wall time of a library operation, by name",
            ["operation"],
            buckets=(0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0, 30.0, 120.0),
            registry=self.registry,
        )
        self.queue_depth = Gauge(
            "memlane_job_queue_depth", "Background jobs queued or running (all users)", registry=self.registry
        )

    def record(self, op: str, seconds: float, error: str | None) -> None:
        """A ``memlane.telemetry`` recorder: one finished library operation."""
        self.operations.labels(op, "ok" if error is None else "error").inc()
        self.operation_latency.labels(op).observe(seconds)

    def watch_queue(self, depth: Callable[[], float]) -> None:
        """Read the job queue's depth from ``depth`` at each scrape."""
        self.queue_depth.set_function(depth)

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
