"""Latency of ``read_note`` of an unchanged note: requests, connections and round trips per call.

In one run, against stand-ins and a delay proxy started here:

a. loopback, plain HTTP: ``read_note`` through MCP over stdio against the resolve and the
   download made directly with one kept ``requests.Session``, median of ``--calls``
   interleaved calls after 50 of warm-up; and what the stand-in received per ``read_note``.
b. HTTPS through a proxy that delays every chunk ``--delay-ms`` each way (so a round trip,
   RTT, costs 2 x delay): first a check of the proxy (one GET on a new connection, then on
   the kept one); then a fresh ``teamvault-mcp`` (fresh cache directory) makes 20 sequential
   ``read_note`` calls: the first (cold) and the median of the other 19 (warm), with the TCP
   connections, TLS handshakes and requests they cost; side by side, one ``requests.Session``
   making resolve + download 20 times. The same two sequences run on loopback HTTPS without
   the proxy too: what a call costs there is not network, so the round trips a call pays are
   (latency through the proxy - latency on loopback) / RTT.

    .venv/bin/python bench/latency_bench.py [--delay-ms 20] [--calls 1000]
"""

from __future__ import annotations

import argparse
import statistics
import sys
import tempfile
import time
from collections import Counter
from collections.abc import Callable, Iterator
from contextlib import AbstractContextManager, contextmanager
from dataclasses import dataclass
from pathlib import Path

import requests
from delay_proxy import DelayProxy, delay_proxy
from standin import CERT, NOTE, NOTE_PATH, PROJECT, StandIn, run_standin
from stdio_client import StdioHost

HERE = Path(__file__).resolve().parent
WARM_UP = 50
SEQUENCE = 20  # read_note calls of one fresh process in part b
HEADERS = {"X-API-Key": "osync_bench", "Accept": "application/json"}


@contextmanager
def teamvault_mcp(base_url: str) -> Iterator[Callable[[], None]]:
    """A fresh ``teamvault-mcp`` with a fresh cache directory, initialized; yields one ``read_note`` call."""
    with tempfile.TemporaryDirectory(prefix="latency-bench-cache-") as cache_dir:
        env = {
            "TEAM_VAULT_URL": base_url,
            "TEAM_VAULT_API_KEY": "osync_bench",
            "TEAM_VAULT_PROJECT_ID": PROJECT,
            "TEAM_VAULT_CACHE_DIR": cache_dir,
            "REQUESTS_CA_BUNDLE": str(CERT),
            "PYTHONPATH": str(HERE.parent),
        }
        host = StdioHost([sys.executable, "-m", "teamvault_mcp"], env)
        host.initialize()

        def read_note() -> None:
            answer = host.call_tool("read_note", {"path": NOTE_PATH})
            assert answer["result"]["content"][0]["text"].encode() == NOTE

        try:
            yield read_note
        finally:
            host.close()


@contextmanager
def direct_session(base_url: str) -> Iterator[Callable[[], None]]:
    """One ``requests.Session`` kept across calls; yields one resolve + download."""
    files = f"{base_url}/api/projects/{PROJECT}/files"
    with requests.Session() as session:

        def get(url: str, **params: str) -> requests.Response:
            # verify= per request: a session's .verify loses to REQUESTS_CA_BUNDLE or CURL_CA_BUNDLE if set
            return session.get(url, params=params, headers=HEADERS, timeout=20, verify=str(CERT))

        def resolve_and_download() -> None:
            listing = get(files, path=NOTE_PATH).json()
            assert get(f"{files}/{listing['files'][0]['id']}").content == NOTE

        yield resolve_and_download


@dataclass
class Call:
    seconds: float
    seen: Counter[str]  # what the stand-in (and the proxy: "proxy_accepts") saw during the call


def timed(step: Callable[[], None], standin: StandIn, proxy: DelayProxy | None = None) -> Call:
    before, proxy_before = standin.counts(), proxy.accepts if proxy else 0
    started = time.perf_counter()
    step()
    seconds = time.perf_counter() - started
    seen = standin.counts()
    seen.subtract(before)
    if proxy:
        seen["proxy_accepts"] = proxy.accepts - proxy_before
    return Call(seconds, seen)


def per_call(calls: list[Call], what: str) -> float:
    return sum(call.seen[what] for call in calls) / len(calls)


def loopback(calls: int) -> None:
    with run_standin() as standin, teamvault_mcp(standin.url) as mcp, direct_session(standin.url) as direct:
        measured: dict[str, list[Call]] = {"direct": [], "mcp": []}
        for round_number in range(WARM_UP + calls):
            for name, step in (("direct", direct), ("mcp", mcp)):
                call = timed(step, standin)
                if round_number >= WARM_UP:
                    measured[name].append(call)
    direct_ms, mcp_ms = (statistics.median(c.seconds for c in measured[name]) * 1000 for name in ("direct", "mcp"))
    ours = measured["mcp"]
    print(f"a. loopback, plain HTTP: read_note of a {len(NOTE)} B note, median of {calls} interleaved calls")
    print(f"  direct: resolve + download, one kept requests.Session : {direct_ms:6.2f} ms")
    print(f"  teamvault-mcp over stdio                             : {mcp_ms:6.2f} ms  (+{mcp_ms - direct_ms:.2f} ms)")
    print(
        f"  the stand-in saw per read_note: {per_call(ours, 'resolves') + per_call(ours, 'downloads'):.2f} requests "
        f"({per_call(ours, 'resolves'):.2f} resolves, {per_call(ours, 'downloads'):.2f} downloads), "
        f"{per_call(ours, 'accepts'):.2f} TCP accepts"
    )


def proxy_check(base_url: str) -> tuple[float, float]:
    """One resolve GET with a new requests.Session, then the median of 5 more on its kept connection (seconds)."""
    url = f"{base_url}/api/projects/{PROJECT}/files"
    with requests.Session() as session:

        def get() -> float:
            started = time.perf_counter()
            session.get(url, params={"path": NOTE_PATH}, headers=HEADERS, timeout=20, verify=str(CERT)).json()
            return time.perf_counter() - started

        return get(), statistics.median(get() for _ in range(5))


def sequence(
    client: Callable[[str], AbstractContextManager[Callable[[], None]]],
    base_url: str,
    standin: StandIn,
    proxy: DelayProxy | None,
) -> list[Call]:
    with client(base_url) as step:
        return [timed(step, standin, proxy) for _ in range(SEQUENCE)]


def slow_link(delay: float) -> None:
    rtt = 2 * delay
    with run_standin(tls=True) as standin, delay_proxy(("127.0.0.1", standin.port), delay) as proxy:
        proxied = f"https://127.0.0.1:{proxy.port}"
        new_connection, kept_connection = proxy_check(proxied)
        clients = {
            "teamvault-mcp over stdio, fresh process and cache": teamvault_mcp,
            "direct, one requests.Session": direct_session,
        }
        runs = {
            label: (sequence(client, proxied, standin, proxy), sequence(client, standin.url, standin, None))
            for label, client in clients.items()
        }
    print(
        f"b. HTTPS through a delay proxy, {delay * 1000:g} ms each way (RTT {rtt * 1000:g} ms), "
        f"{SEQUENCE} sequential read_note calls"
    )
    print(
        f"  proxy check, one GET with requests: new connection {new_connection * 1000:.1f} ms = "
        f"{new_connection / rtt:.2f} RTT (TCP + TLS 1.3 + request),\n"
        f"  {'':35} kept connection {kept_connection * 1000:.1f} ms = {kept_connection / rtt:.2f} RTT"
    )
    for label, (calls, local) in runs.items():
        print(f"  {label}")
        for name, slow, fast in (("cold call   ", calls[:1], local[:1]), ("warm, median", calls[1:], local[1:])):
            slow_ms = statistics.median(c.seconds for c in slow) * 1000
            fast_ms = statistics.median(c.seconds for c in fast) * 1000
            resolves, downloads = per_call(slow, "resolves"), per_call(slow, "downloads")
            print(
                f"    {name}: {slow_ms:6.1f} ms = {slow_ms / 1000 / rtt:4.2f} RTT, "
                f"{(slow_ms - fast_ms) / 1000 / rtt:4.2f} net of loopback ({fast_ms:5.1f} ms); "
                f"{resolves + downloads:.2f} requests ({resolves:.2f}+{downloads:.2f}), "
                f"{per_call(slow, 'accepts'):.2f} TCP, {per_call(slow, 'tls_handshakes'):.2f} TLS"
            )
        total = sum((c.seen for c in calls), Counter())
        print(
            f"    all {SEQUENCE} calls: {total['accepts']} TCP accepts (proxy: {total['proxy_accepts']}), "
            f"{total['tls_handshakes']} TLS handshakes ({total['tls_resumed']} resumed), "
            f"{total['resolves']} resolves, {total['downloads']} downloads"
        )
    print("  requests (resolves+downloads), TCP accepts and TLS handshakes are per call, as the stand-in counted them;")
    print("  net of loopback: (latency - the same call on loopback HTTPS, no proxy) / RTT = the round trips paid")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--delay-ms", type=float, default=20.0, help="one-way delay of the proxy (default 20)")
    parser.add_argument("--calls", type=int, default=1000, help="measured calls on loopback (default 1000)")
    args = parser.parse_args()
    loopback(args.calls)
    print()
    slow_link(args.delay_ms / 1000)


if __name__ == "__main__":
    main()
