"""The runner of :mod:`.queries`: a client connection and binlog scans, blocking.

Driver layer. :func:`run` drives a procedure of :mod:`.queries` to its result
over a :class:`SqlConnection` (the project's own wire protocol, so every auth
plugin and TLS mode of the replication connection works for it too) and
answers its binlog scans over a replication connection. The Spark driver calls
it directly; the asyncio runner (:func:`replica_client.aio.control.ask`) calls
it in a worker thread.
"""

from __future__ import annotations

import socket
import ssl
from collections.abc import Callable
from typing import TYPE_CHECKING, Any, TypeVar

from ..binlog.events import QueryEvent
from ..binlog.transactions import TransactionTracker
from ..blocking import SocketOwner
from ..errors import (
    ConnectionLostError,
    ReplicaError,
    ReplicaTimeoutError,
    ServerError,
    server_error,
)
from ..position import FilePos, Gtid, MysqlGtidSet
from ..wire.packets import ColumnDefinition
from .procedure import (
    Answer,
    Procedure,
    Query,
    QueryFailed,
    ScannedQuery,
    ScanQueries,
    drive,
    tolerated,
)

if TYPE_CHECKING:
    from ..aio.config import ReplicaConfig

__all__ = ["SqlConnection", "client_error", "run", "scan_queries"]

T = TypeVar("T")


class SqlConnection(SocketOwner):
    """A client connection to the primary over the project's own wire protocol.

    The same login as the replication connection (every auth plugin it knows:
    mysql_native_password, caching_sha2_password, ed25519, parsec; TLS as the
    config says), then statements one at a time (:class:`~replica_client.wire.
    registration.QueryMachine`) over a blocking socket. Use as a context manager.

    Raises (from the constructor and :meth:`rows`):
        ConnectionLostError / ReplicaTimeoutError: the transport failed.
        ServerError: the server refused the login or a statement.
    """

    def __init__(self, config: ReplicaConfig) -> None:
        import dataclasses

        from ..wire.query_machine import QueryMachine

        self.address = config.address
        self._timeout = config.connect_timeout
        self._ctx = config.ssl_context()
        self._host = config.host
        self._machine = QueryMachine(
            dataclasses.replace(config.registration_settings(), start=None)
        )
        self._sock: socket.socket | None = None

        def connect() -> socket.socket:
            if config.unix_socket:
                sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
                sock.settimeout(self._timeout)
                sock.connect(config.unix_socket)
                return sock
            return socket.create_connection((config.host, config.port), timeout=self._timeout)

        self._sock = self._open(connect)
        try:
            self._pump(self._machine.login_ready)
        except BaseException:
            self.close()
            raise

    @property
    def reading_rows(self) -> bool:
        """A streamed result set has rows left to take (no other statement can run)."""
        return self._machine.reading_rows

    def rows(self, sql: str) -> list[tuple[str | None, ...]]:
        """The rows ``sql`` returns (none for a statement without a result set)."""
        machine = self._machine
        machine.query(sql)
        self._pump(machine.result_ready)
        return list(machine.take_result().rows)

    def stream(self, sql: str) -> tuple[ColumnDefinition, ...]:
        """Run ``sql`` and return its result set's columns; its rows follow
        (:meth:`next_rows`)."""
        machine = self._machine
        machine.query(sql, stream=True)
        self._pump(machine.result_ready)
        return machine.take_result().columns

    def next_rows(self, limit: int) -> list[bytes] | None:
        """Up to ``limit`` row packets of the streamed result set (at least one,
        waiting for them), unparsed; None once it has ended.

        Raises:
            ServerError: the statement failed while its rows were sent.
        """
        machine = self._machine
        self._pump(lambda: machine.rows_ready(limit))
        return machine.take_rows()

    def _pump(self, done: Callable[[], bool]) -> None:
        """Move bytes until ``done()`` (which processes what arrived) is true."""
        machine = self._machine
        try:
            while True:
                out = machine.data_to_send()
                if out:
                    self._send(out)
                if machine.tls_requested:
                    self._start_tls()
                    continue
                if done():
                    return
                if machine.data_to_send_pending:
                    continue
                self._receive()
        except TimeoutError as exc:
            raise ReplicaTimeoutError(
                f"no answer from the primary at {self.address} for {self._timeout} s"
            ) from exc
        except OSError as exc:
            raise ConnectionLostError(f"lost the primary at {self.address}: {exc}") from exc

    def _send(self, data: bytes) -> None:
        assert self._sock is not None
        self._sock.sendall(data)

    def _receive(self) -> None:
        assert self._sock is not None
        data = self._sock.recv(1 << 16)
        if not data:
            raise ConnectionLostError(f"the primary at {self.address} closed the connection")
        self._machine.receive_data(data)

    def _start_tls(self) -> None:
        assert self._sock is not None
        self._wrap_tls(self._sock, self._ctx, "login")
        self._machine.tls_established()


def client_error(exc: BaseException, address: str) -> ReplicaError:
    """The library's error for what a client driver (PyMySQL, aiomysql) raised: the
    server's errors (1000-1999) by errno, anything else a lost connection."""
    if isinstance(exc, ReplicaError):
        return exc
    args: tuple[Any, ...] = tuple(exc.args)
    if len(args) >= 2 and isinstance(args[0], int) and 1000 <= args[0] < 2000:
        return server_error(args[0], "HY000", str(args[1]))
    cause: BaseException | None = exc
    while cause is not None:
        if isinstance(cause, ssl.SSLError):
            return ConnectionLostError(
                f"TLS handshake with the primary at {address} failed: {cause}"
            )
        cause = cause.__cause__ or cause.__context__
    return ConnectionLostError(f"cannot connect to the primary at {address} (SQL): {exc}")


def _answer(conn: SqlConnection, query: Query) -> list[tuple[Any, ...]] | QueryFailed:
    try:
        return conn.rows(query.text)
    except ServerError as exc:
        if (failed := tolerated(query, exc)) is not None:
            return failed
        raise


def run(
    config: ReplicaConfig,
    procedure: Procedure[T],
    *,
    conn: SqlConnection | None = None,
    scan: Callable[[ReplicaConfig, FilePos | Gtid | MysqlGtidSet | None], list[ScannedQuery]]
    | None = None,
) -> T:
    """Drive ``procedure`` over a connection (``conn``, or one opened and closed here)."""
    own = conn is None
    if conn is None:
        conn = SqlConnection(config)
    sql = conn

    def answer(request: Query | ScanQueries) -> Answer:
        if isinstance(request, ScanQueries):
            return (scan or scan_queries)(config, request.start)
        return _answer(sql, request)

    try:
        return drive(procedure, answer)
    finally:
        if own:
            conn.close()


def scan_queries(
    config: ReplicaConfig, start: FilePos | Gtid | MysqlGtidSet | None
) -> list[ScannedQuery]:
    """Every QueryEvent of the binlog from ``start`` (None: its first file) to its end
    now, read over a replication connection (the config's server id; rows are not
    decoded)."""
    import dataclasses

    from ..blocking import BlockingReplica
    from ..session import ReplicaSession

    settings = dataclasses.replace(config.registration_settings(), start=start, blocking=False)
    options = dataclasses.replace(config.decoder, decode_rows=False)
    session = ReplicaSession(settings, decoder_options=options)
    out: list[ScannedQuery] = []
    transactions = TransactionTracker()  # the GTID of each event's transaction
    with BlockingReplica(
        session,
        config.host,
        config.port,
        ssl_context=config.ssl_context(),
        connect_timeout=config.connect_timeout,
    ) as replica:
        for item in replica.items():
            event = item.event
            if event is None:
                continue
            transactions.observe(event)
            if isinstance(event, QueryEvent):
                out.append(ScannedQuery(FilePos(item.file, item.start), transactions.gtid, event))
    return out
