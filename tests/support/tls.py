"""TLS on 127.0.0.1 for tests: the test certificates (``tests/fixtures``), and a TLS listener that counts the
connections it accepts and completes, or cuts off, their handshakes."""

from __future__ import annotations

import socket
import ssl
import struct
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

FIXTURES = Path(__file__).resolve().parent.parent / "fixtures"
#: A self-signed certificate for 127.0.0.1 and localhost, and its key.
CERT = FIXTURES / "tls-cert.pem"
KEY = FIXTURES / "tls-key.pem"
#: A private key of no certificate here, and one encrypted with the passphrase ``test``.
OTHER_KEY = FIXTURES / "tls-other-key.pem"
ENCRYPTED_KEY = FIXTURES / "tls-encrypted-key.pem"


class TlsListener:
    """Accepts connections and, with ``reset_handshakes``, resets each one once the client's hello has come;
    otherwise it answers the handshake with :data:`CERT` and closes. ``accepted`` counts the connections."""

    def __init__(self, *, reset_handshakes: bool = False) -> None:
        self._context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
        self._context.load_cert_chain(CERT, KEY)
        self._reset = reset_handshakes
        self._socket = socket.create_server(("127.0.0.1", 0))
        self.port = self._socket.getsockname()[1]
        self.url = f"https://127.0.0.1:{self.port}"
        self.accepted = 0
        self._lock = threading.Lock()
        threading.Thread(target=self._serve, daemon=True).start()

    def _serve(self) -> None:
        while True:
            try:
                connection, _ = self._socket.accept()
            except OSError:
                return
            with self._lock:  # counted before the client hears anything back: it is counted when it fails
                self.accepted += 1
            with connection:
                try:
                    if self._reset:
                        connection.recv(4096)  # the client's hello
                        connection.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
                        continue  # closed with linger 0: a reset in the middle of the handshake
                    with self._context.wrap_socket(connection, server_side=True) as secured:
                        secured.recv(1)
                except (ssl.SSLError, OSError):
                    pass

    def close(self) -> None:
        self._socket.close()


@contextmanager
def tls_listener(*, reset_handshakes: bool = False) -> Iterator[TlsListener]:
    listener = TlsListener(reset_handshakes=reset_handshakes)
    try:
        yield listener
    finally:
        listener.close()
