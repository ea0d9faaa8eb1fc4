"""``serve --http --metrics``: what the server counts, in the Prometheus text format at ``GET /metrics``.

One :class:`Metrics` per service, on a registry of its own (never the library's global one: two services
in one process, as in the tests, count apart). It is the calls' :class:`~teamvault_mcp.vault.observer.VaultObserver`
too, so the vault layer reports to it without importing it. Loaded only when metrics are on: stdio and
``serve --http`` without them never import ``prometheus_client``.

The series (every label's values are ours or the server's status codes; never a key, a token, a path or a
caller's tool name):

- ``teamvault_mcp_tool_calls_total{tool, outcome}``: tool calls ended, ``outcome`` ``ok``, ``error`` or
  ``cancelled``; a name that is no tool counts as ``tool="unknown"``;
- ``teamvault_mcp_tool_call_seconds{tool}``: their latency (a histogram, up to the 45 s budget and past it);
- ``teamvault_mcp_vault_requests_total{method, status}``: HTTP attempts at the Team Vault server, ``status``
  its status code or the error that ended the attempt (``NetworkError``, ``AttemptTimeoutError``, …);
- ``teamvault_mcp_vault_retries_total{method}``: requests sent again;
- ``teamvault_mcp_cache_lookups_total{result}``: content cache lookups, ``hit`` or ``miss``;
- ``teamvault_mcp_http_sessions_active``: open MCP sessions (0 with ``--stateless``).
"""

from __future__ import annotations

from collections.abc import Callable, Iterator

from prometheus_client import CollectorRegistry, Counter, Gauge, Histogram, generate_latest
from prometheus_client.exposition import CONTENT_TYPE_LATEST
from prometheus_client.metrics_core import CounterMetricFamily, Metric

from teamvault_mcp.vault.observer import VaultObserver

#: The ``Content-Type`` of ``GET /metrics``.
CONTENT_TYPE = CONTENT_TYPE_LATEST
#: Tool call latency buckets, in seconds: a cached read takes milliseconds, a call may take its whole budget.
LATENCY_BUCKETS = (0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0, 20.0, 45.0, 60.0)


class Metrics(VaultObserver):
    """The counters of one service, and its exposition."""

    def __init__(self) -> None:
        self.registry = CollectorRegistry()
        self._calls = Counter(
            "teamvault_mcp_tool_calls",
            "Tool calls ended, by tool and outcome (ok, error, cancelled).",
            ["tool", "outcome"],
            registry=self.registry,
        )
        self._latency = Histogram(
            "teamvault_mcp_tool_call_seconds",
            "Seconds from a tool call's arrival to its answer.",
            ["tool"],
            buckets=LATENCY_BUCKETS,
            registry=self.registry,
        )
        self._requests = Counter(
            "teamvault_mcp_vault_requests",
            "HTTP attempts at the Team Vault server, by method and status (or the error that ended them).",
            ["method", "status"],
            registry=self.registry,
        )
        self._retries = Counter(
            "teamvault_mcp_vault_retries",
            "Requests to the Team Vault server sent again.",
            ["method"],
            registry=self.registry,
        )
        self._sessions = Gauge(
            "teamvault_mcp_http_sessions_active", "Open MCP sessions of serve --http.", registry=self.registry
        )

    def tool_call(self, tool: str, outcome: str, seconds: float) -> None:
        self._calls.labels(tool, outcome).inc()
        self._latency.labels(tool).observe(seconds)

    def attempt(self, method: str, status: str) -> None:
        self._requests.labels(method, status).inc()

    def retry(self, method: str) -> None:
        self._retries.labels(method).inc()

    def count_sessions(self, count: Callable[[], int]) -> None:
        """Read the open sessions from ``count`` at each scrape."""
        self._sessions.set_function(lambda: float(count()))

    def count_cache_lookups(self, lookups: Callable[[], tuple[int, int]]) -> None:
        """Read the content cache's (hits, misses) from ``lookups`` at each scrape (it counts them itself)."""
        self.registry.register(_CacheLookups(lookups))

    def exposition(self) -> bytes:
        """Every series now, in the Prometheus text format."""
        return generate_latest(self.registry)


class _CacheLookups:
    """The content cache's own counts, as a Prometheus counter read at scrape time."""

    def __init__(self, lookups: Callable[[], tuple[int, int]]) -> None:
        self._lookups = lookups

    def collect(self) -> Iterator[Metric]:
        family = CounterMetricFamily(
            "teamvault_mcp_cache_lookups", "Content cache lookups, by result (hit, miss).", labels=["result"]
        )
        hits, misses = self._lookups()
        family.add_metric(["hit"], hits)
        family.add_metric(["miss"], misses)
        yield family
