"""A pytest plugin: any network use beyond 127.0.0.1 fails the test that made it.

The code under test turns network failures into tool errors, so a forgotten mock
would otherwise look like a passing "network error" test. The guard therefore
records every refused connection and DNS lookup and fails the test afterwards,
even when the code caught the error. The same holds for a request that an active
``responses`` mock did not match.
"""

from __future__ import annotations

import ipaddress
import socket
import threading
from collections.abc import Callable, Generator
from typing import Any

import pytest

_violations: list[str] = []
_watched_mocks: list[Any] = []
_lock = threading.Lock()

_real_connect = socket.socket.connect
_real_connect_ex = socket.socket.connect_ex
_real_getaddrinfo = socket.getaddrinfo


def violations() -> list[str]:
    with _lock:
        return list(_violations)


def take_violations() -> list[str]:
    """The violations so far, forgotten: for the guard's own tests."""
    with _lock:
        found = list(_violations)
        _violations.clear()
        return found


def _record(what: str) -> None:
    with _lock:
        _violations.append(what)


def is_loopback(host: Any) -> bool:
    if host is None:
        return True  # getaddrinfo(None, port): the local wildcard
    if isinstance(host, bytes):
        host = host.decode()
    host = str(host)
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host.split("%")[0]).is_loopback
    except ValueError:
        return False


def _checked(real: Callable[..., Any]) -> Callable[..., Any]:
    def connect(sock: socket.socket, address: Any) -> Any:
        if sock.family in (socket.AF_INET, socket.AF_INET6) and not is_loopback(address[0]):
            _record(f"connect to {address!r}")
            raise ConnectionRefusedError(f"network guard: tests may not connect to {address!r}")
        return real(sock, address)

    return connect


def _guarded_getaddrinfo(host: Any, *args: Any, **kwargs: Any) -> Any:
    if not is_loopback(host):
        _record(f"DNS lookup of {host!r}")
        raise socket.gaierror(socket.EAI_NONAME, f"network guard: tests may not resolve {host!r}")
    return _real_getaddrinfo(host, *args, **kwargs)


def install() -> None:
    socket.socket.connect = _checked(_real_connect)  # type: ignore[method-assign]
    socket.socket.connect_ex = _checked(_real_connect_ex)  # type: ignore[method-assign]
    socket.getaddrinfo = _guarded_getaddrinfo


def uninstall() -> None:
    socket.socket.connect = _real_connect  # type: ignore[method-assign]
    socket.socket.connect_ex = _real_connect_ex  # type: ignore[method-assign]
    socket.getaddrinfo = _real_getaddrinfo


def pytest_configure(config: pytest.Config) -> None:
    install()


def pytest_unconfigure(config: pytest.Config) -> None:
    uninstall()


def watch_mock(mock: Any) -> None:
    """Fail the running test if ``mock`` (a ``responses.RequestsMock``) refuses a request it did not match."""
    with _lock:
        _watched_mocks.append(mock)


@pytest.hookimpl(wrapper=True)
def pytest_runtest_call(item: pytest.Item) -> Generator[None, None, None]:
    with _lock:
        _violations.clear()
    try:
        result = yield
    finally:
        with _lock:
            mocks = list(_watched_mocks)
            _watched_mocks.clear()
    found = violations() + [f"unmocked request {call}" for mock in mocks for call in unmatched_mock_calls(mock)]
    if found:
        pytest.fail("network guard: the test used the network beyond loopback: " + "; ".join(found), pytrace=False)
    return result


def unmatched_mock_calls(mock: Any) -> list[str]:
    """Requests an active ``responses`` mock refused because nothing matched them."""
    return [
        f"{call.request.method} {call.request.url}"
        for call in mock.calls
        if isinstance(call.response, Exception) and "Connection refused by Responses" in str(call.response)
    ]
