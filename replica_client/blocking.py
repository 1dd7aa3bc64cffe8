"""One replication connection over a blocking socket: the same session, no event loop.

Driver layer, beside :mod:`replica_client.aio`. :class:`BlockingReplica` runs a
:class:`~replica_client.session.ReplicaSession` over a plain blocking socket
(TLS included) and yields its stream items; for places that cannot run an
event loop, such as the Spark driver's planner. Registration, semi-sync,
positions, transaction boundaries and checkpoints are the session's, so they
are the same as for ``connect()``.

Errors: transport failures become :class:`ConnectionLostError` /
:class:`ReplicaTimeoutError`; everything else is what the session raises.
"""

from __future__ import annotations

import contextlib
import socket
import ssl
from collections import deque
from collections.abc import Callable, Iterator
from types import TracebackType
from typing import Final, Self

from .errors import ConnectionLostError, ReplicaError, ReplicaTimeoutError
from .session import ReplicaSession, StreamItem

__all__ = ["BlockingReplica", "SocketOwner"]

_RECV_SIZE: Final = 1 << 20
#: Events framed ahead of the consumer (bytes only), and decoded per step.
_AHEAD: Final = 1024
_BATCH: Final = 32


class SocketOwner:
    """Owns one blocking socket, and closes it on :meth:`close` or at the end of a
    ``with`` block (the socket's errors on closing are ignored)."""

    _sock: socket.socket | None
    #: ``host:port`` of the primary, for messages.
    address: str
    #: The primary's host name, checked against its certificate when the TLS context
    #: checks host names.
    _host: str

    def __enter__(self) -> Self:
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.close()

    def close(self) -> None:
        """Close the connection (idempotent)."""
        sock, self._sock = self._sock, None
        if sock is not None:
            with contextlib.suppress(OSError):
                sock.close()

    def _open(self, connect: Callable[[], socket.socket]) -> socket.socket:
        """The socket ``connect`` opens; its failure is a :class:`ConnectionLostError`."""
        try:
            return connect()
        except OSError as exc:
            raise ConnectionLostError(
                f"cannot connect to the primary at {self.address}: {exc}"
            ) from exc

    def _wrap_tls(
        self, sock: socket.socket, ctx: ssl.SSLContext | None, asker: str
    ) -> socket.socket:
        """``sock`` after the TLS handshake, now the owned socket; ``asker`` (what asked
        for TLS) names it in the error when there is no ``ctx``.

        Raises:
            ConnectionLostError: no ``ctx``, or the handshake failed.
        """
        if ctx is None:
            raise ConnectionLostError(f"the {asker} asked for TLS but no SSL context was given")
        server_hostname = self._host if ctx.check_hostname else None
        try:
            sock = ctx.wrap_socket(sock, server_hostname=server_hostname)
        except (ssl.SSLError, OSError) as exc:
            raise ConnectionLostError(
                f"TLS handshake with the primary at {self.address} failed: {exc}"
            ) from exc
        self._sock = sock
        return sock


class BlockingReplica(SocketOwner):
    """Streams ``session``'s items from ``host:port`` until the dump ends.

    Args:
        session: the sans-I/O session (its settings say what to dump).
        host, port: the primary.
        ssl_context: used when the session asks for TLS.
        connect_timeout: seconds for the TCP connection and the registration.
        read_timeout: seconds without a byte from the primary once streaming.
    """

    def __init__(
        self,
        session: ReplicaSession,
        host: str,
        port: int,
        *,
        ssl_context: ssl.SSLContext | None = None,
        connect_timeout: float = 10.0,
        read_timeout: float = 60.0,
    ) -> None:
        self.session = session
        self.address = f"{host}:{port}"
        self._host = host
        self._port = port
        self._ssl_context = ssl_context
        self._connect_timeout = connect_timeout
        self._read_timeout = read_timeout
        self._sock: socket.socket | None = None
        #: Bytes received from the primary so far.
        self.bytes_received = 0

    def items(self) -> Iterator[StreamItem]:
        """Connect, register, and yield every item until the end of the dump."""
        session = self.session
        sock = self._connect()
        ahead: deque[StreamItem] = deque()
        try:
            while True:
                if session.streaming:
                    # events received whole are framed (bytes only), then decoded
                    # a batch at a time
                    session.frame_ahead(_AHEAD - session.buffered_events)
                failed: ReplicaError | None = None
                try:
                    session.next_items(ahead, _BATCH)
                except ReplicaError as exc:
                    failed = exc  # the items decoded before the bad event go out first
                self._send(sock)  # replies of the handshake
                decoded = bool(ahead)
                while ahead:
                    yield ahead.popleft()
                    self._send(sock)  # an ACK the consumer queued
                if failed is not None:
                    raise failed
                if session.ended:
                    return
                if decoded:
                    continue
                if session.tls_requested:
                    sock = self._start_tls(sock)
                    continue
                sock.settimeout(self._read_timeout if session.streaming else self._connect_timeout)
                data = sock.recv(_RECV_SIZE)
                if not data:
                    raise ConnectionLostError(
                        f"the primary at {self.address} closed the connection"
                    )
                self.bytes_received += len(data)
                session.receive_data(data)
        except TimeoutError as exc:
            raise ReplicaTimeoutError(
                f"no data from the primary at {self.address} for "
                f"{self._read_timeout if session.streaming else self._connect_timeout} s"
            ) from exc
        except OSError as exc:
            raise ConnectionLostError(f"lost the primary at {self.address}: {exc}") from exc
        finally:
            self.close()

    def _connect(self) -> socket.socket:
        sock = self._open(
            lambda: socket.create_connection(
                (self._host, self._port), timeout=self._connect_timeout
            )
        )
        sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        self._sock = sock
        return sock

    def _start_tls(self, sock: socket.socket) -> socket.socket:
        sock = self._wrap_tls(sock, self._ssl_context, "session")
        self.session.tls_established()
        return sock

    def _send(self, sock: socket.socket) -> None:
        out = self.session.data_to_send()
        if out:
            sock.sendall(out)
