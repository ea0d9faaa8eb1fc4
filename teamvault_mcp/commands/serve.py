"""``serve``: the MCP server over stdio, or over Streamable HTTP with ``--http``, until the host closes stdin or
a signal stops it (SIGINT, SIGTERM: exit code 128 + its number; calls in flight are cancelled first).
"""

from __future__ import annotations

import argparse
import signal
import sys
import threading
from collections.abc import Mapping

from teamvault_mcp.commands.shared import PROG, collector_held_off, config_failure, configure_logging
from teamvault_mcp.commands.signals import EXIT_GRACE, SignalWait, end_within
from teamvault_mcp.config import load_config
from teamvault_mcp.errors import ConfigError
from teamvault_mcp.vault.ahead import ConnectionsAhead

#: Said on stderr when the stdio server starts in a terminal.
TERMINAL_HINT = (
    f"{PROG} speaks MCP (JSON-RPC) on stdin and stdout: an MCP host starts it and talks to it (README: Quick start).\n"
    f"To try it by hand: {PROG} call list_notes (one tool call), {PROG} check (the configuration and the vault), "
    f"and --local DIR for an embedded vault without a server. Ctrl-C stops it.\n"
)


def _is_terminal(stream: object) -> bool:
    isatty = getattr(stream, "isatty", None)
    try:
        return bool(isatty()) if isatty is not None else False
    except (OSError, ValueError):  # a closed stream
        return False


def serve(args: argparse.Namespace, environ: Mapping[str, str]) -> int:
    if getattr(args, "http", None) is not None:
        return _serve_http(args, environ)
    for flag in ("key_from_client", "tls_cert", "tls_key", "insecure_bind", "stateless", "metrics"):
        if getattr(args, flag, None):
            sys.stderr.write(f"{PROG}: --{flag.replace('_', '-')} goes with --http only\n")
            return 2
    try:
        config = load_config(environ)
    except ConfigError as error:
        return config_failure(error)
    configure_logging(config.log_level, config.api_key)
    if _is_terminal(sys.stdin):  # someone typed the command: nothing on the screen would say what it waits for
        sys.stderr.write(TERMINAL_HINT)
    # The connections to the server open (TCP, TLS) while the SDK is imported, not after: a call sent the
    # moment initialize is answered finds them ready.
    ahead = ConnectionsAhead(config.base_url)

    with collector_held_off():
        from teamvault_mcp.server.protocol import ServeStop, serve
        from teamvault_mcp.server.runner import CANCEL_GRACE

    if threading.current_thread() is not threading.main_thread():  # signals reach the main thread only
        serve(config, ahead=ahead)
        return 0
    # The server runs in a thread of its own and this one waits for a signal: the SDK's stdio transport reads
    # stdin in a worker thread that a signal does not wake, so under asyncio's own handling the first Ctrl-C
    # was ignored and the second ended in a traceback.
    stop = ServeStop()
    failures: list[BaseException] = []

    def again(first: int) -> None:  # a second Ctrl-C while the calls in flight are being cancelled: stop waiting
        raise ServerStopped(first, stop.cancelled_calls, waited=False, ended=False)

    with SignalWait(again) as signals:

        def run() -> None:
            try:
                serve(config, stop, ahead)
            except BaseException as error:  # handed to the main thread, which raises it as before
                failures.append(error)
            finally:
                signals.wake()

        server = threading.Thread(target=run, name="teamvault-mcp serve", daemon=True)
        server.start()
        signum = signals.wait()
        if signum is None:  # the host closed stdin
            server.join()
            if failures:
                raise failures[0]
            return 0
        end_within(CANCEL_GRACE + EXIT_GRACE, 128 + signum, PROG)  # whatever a thread is doing, it ends
        stop.request()
        ended_in_time = stop.calls_ended.wait(CANCEL_GRACE + 1)
        # On the lean transport serve then returns; on the SDK's, a thread still reads stdin.
        server.join(CANCEL_GRACE + 1 if ended_in_time and stop.returns else 0)
    raise ServerStopped(signum, stop.cancelled_calls, waited=ended_in_time, ended=not server.is_alive())


def _serve_http(args: argparse.Namespace, environ: Mapping[str, str]) -> int:
    """``serve --http``: until SIGINT or SIGTERM, which stop it cleanly (calls in flight cancelled)."""
    from teamvault_mcp.http_config import HttpStartError, load_http_config

    try:
        options = load_http_config(
            environ,
            listen=args.http,
            key_from_client=args.key_from_client,
            tls_cert=args.tls_cert,
            tls_key=args.tls_key,
            insecure_bind=args.insecure_bind,
            stateless=args.stateless,
            metrics=args.metrics,
        )
    except HttpStartError as error:
        sys.stderr.write(f"{PROG}: {error}\n")
        return 2
    except ConfigError as error:
        return config_failure(error)
    try:
        config = load_config(environ, key_required=not options.key_from_client)
    except ConfigError as error:
        return config_failure(error)
    configure_logging(config.log_level, config.api_key or None, options.token)

    with collector_held_off():
        from teamvault_mcp.server.http import HttpService
        from teamvault_mcp.server.runner import CANCEL_GRACE

    try:
        service = HttpService(config, options)
    except OSError as error:
        sys.stderr.write(f"{PROG}: cannot listen on {options.host}:{options.port}: {error.strerror or error}\n")
        return 1
    mode = "each client's own Team Vault key" if options.key_from_client else "TEAM_VAULT_HTTP_TOKEN"
    extras = ("; stateless" if options.stateless else "") + ("; metrics at /metrics" if options.metrics else "")
    sys.stderr.write(f"{PROG}: serving MCP over HTTP at {service.url} (callers authenticate with {mode}{extras})\n")
    if threading.current_thread() is not threading.main_thread():  # signals reach the main thread only
        service.run()
        return 0
    with SignalWait() as signals:

        def run() -> None:
            try:
                service.run()
            finally:
                signals.wake()

        server = threading.Thread(target=run, name="teamvault-mcp serve --http", daemon=True)
        server.start()
        signum = signals.wait()
        if signum is not None:
            end_within(CANCEL_GRACE + EXIT_GRACE, 128 + signum, PROG)
        service.stop()
        server.join()
    if signum is not None:
        sys.stderr.write(f"{PROG}: stopped by {signal.Signals(signum).name}\n")
        return 128 + signum
    return 0


class ServerStopped(Exception):
    """SIGINT or SIGTERM ended ``serve``; raised through the clean-up of ``--local`` to :func:`main`."""

    def __init__(self, signum: int, cancelled_calls: int, *, waited: bool, ended: bool) -> None:
        super().__init__(signum)
        #: Whether serving has ended (the lean transport): then the process exits as a program does.
        self.ended = ended
        self.exit_code = 128 + signum
        self.signal_name = signal.Signals(signum).name
        self.cancelled_calls = cancelled_calls
        self.waited = waited

    def report(self) -> None:
        calls = f"{self.cancelled_calls} tool call{'' if self.cancelled_calls == 1 else 's'}"
        if not self.cancelled_calls:
            detail = ""
        elif self.waited:
            detail = f"; {calls} in flight {'was' if self.cancelled_calls == 1 else 'were'} cancelled"
        else:
            detail = f"; {calls} in flight did not end in time (a write among them may or may not have been applied)"
        sys.stderr.write(f"{PROG}: stopped by {self.signal_name}{detail}\n")
