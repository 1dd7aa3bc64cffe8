"""A client connection over asyncio and the project's own wire protocol.

Driver layer. :class:`SqlConnection` runs a
:class:`~replica_client.wire.registration.QueryMachine` (the replica's login,
so every auth plugin and TLS mode of the replication connection works here
too, then statements one at a time) over an asyncio transport. A statement's
rows come collected (:meth:`SqlConnection.rows`) or streamed as unparsed row
packets (:meth:`SqlConnection.stream`, then :meth:`SqlConnection.next_rows`)
for a caller that types them in batches (the snapshot). Reading pauses while
more than ``high_bytes`` of a streamed result set wait to be taken.
:func:`drive_sql` answers the control layer's procedures over one.

Errors: :class:`ConnectionLostError` / :class:`ReplicaTimeoutError` for the
transport, :class:`ServerError` for what the server refuses.
"""

from __future__ import annotations

import asyncio
import dataclasses
import ssl
from collections.abc import Callable
from typing import TYPE_CHECKING, Any, TypeVar, cast

from ..control.procedure import (
    Answer,
    Procedure,
    Query,
    ScanQueries,
    drive_awaiting,
    tolerated,
)
from ..errors import ConnectionLostError, ReplicaError, ReplicaTimeoutError, ServerError
from ..wire.packets import ColumnDefinition
from ..wire.query_machine import QueryMachine

if TYPE_CHECKING:
    from .config import ReplicaConfig

__all__ = ["SqlConnection", "drive_sql"]

T = TypeVar("T")

#: Row packets buffered (bytes) before reading pauses.
_HIGH_BYTES = 4 << 20


class SqlConnection(asyncio.Protocol):
    """One client connection to the primary (use :meth:`open`)."""

    def __init__(self, config: ReplicaConfig, *, high_bytes: int = _HIGH_BYTES) -> None:
        self.address = config.address
        self._config = config
        settings = dataclasses.replace(config.registration_settings(), start=None)
        self._machine = QueryMachine(settings)
        self._loop = asyncio.get_running_loop()
        self._transport: asyncio.Transport | None = None
        self._waiter: asyncio.Future[None] | None = None
        self._error: ReplicaError | None = None
        self._high_bytes = high_bytes
        self._paused = False

    @classmethod
    async def open(cls, config: ReplicaConfig) -> SqlConnection:
        """Connect and log in.

        Raises:
            ConnectionLostError / ReplicaTimeoutError: the primary is unreachable.
            ServerError: the login was refused.
        """
        conn = cls(config)
        loop = conn._loop
        try:
            async with asyncio.timeout(config.connect_timeout):
                if config.unix_socket:
                    await loop.create_unix_connection(lambda: conn, config.unix_socket)
                else:
                    await loop.create_connection(lambda: conn, config.host, config.port)
                await conn._until(conn._machine.login_ready)
        except TimeoutError as exc:
            conn.close()
            raise ReplicaTimeoutError(
                f"logging in to the primary at {conn.address} took longer than "
                f"{config.connect_timeout} s"
            ) from exc
        except OSError as exc:
            conn.close()
            raise ConnectionLostError(
                f"cannot connect to the primary at {conn.address} (SQL): {exc}"
            ) from exc
        except BaseException:
            conn.close()
            raise
        return conn

    @property
    def reading_rows(self) -> bool:
        """A streamed result set has rows left to take (no other statement can run)."""
        return self._machine.reading_rows

    # -- statements ---------------------------------------------------------------------

    async def rows(self, sql: str) -> list[tuple[str | None, ...]]:
        """The rows ``sql`` returns (none for a statement without a result set)."""
        machine = self._machine
        machine.query(sql)
        await self._until(machine.result_ready)
        return list(machine.take_result().rows)

    async def stream(self, sql: str) -> tuple[ColumnDefinition, ...]:
        """Run ``sql`` and return its result set's columns; its rows follow
        (:meth:`next_rows`). A statement without a result set returns no column."""
        machine = self._machine
        machine.query(sql, stream=True)
        await self._until(machine.result_ready)
        return machine.take_result().columns

    async def next_rows(self, limit: int) -> list[bytes] | None:
        """Up to ``limit`` row packets of the streamed result set (at least one,
        waiting for them), unparsed; None once it has ended.

        Raises:
            ServerError: the statement failed while its rows were sent.
        """
        machine = self._machine
        await self._until(lambda: machine.rows_ready(limit))
        if self._paused and machine.buffered < self._high_bytes // 4:
            self._paused = False
            if self._transport is not None and not self._transport.is_closing():
                self._transport.resume_reading()
        return machine.take_rows()

    def close(self) -> None:
        """Close the connection (idempotent)."""
        transport, self._transport = self._transport, None
        if transport is not None:
            transport.close()

    # -- asyncio callbacks --------------------------------------------------------------

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        self._transport = cast(asyncio.Transport, transport)

    def data_received(self, data: bytes) -> None:
        machine = self._machine
        machine.receive_data(data)
        if machine.buffered >= self._high_bytes and not self._paused:
            self._paused = True
            if self._transport is not None:
                self._transport.pause_reading()
        self._wake()

    def connection_lost(self, exc: Exception | None) -> None:
        if self._error is None:
            err = ConnectionLostError(
                f"the connection to the primary at {self.address} (SQL) was lost"
            )
            err.__cause__ = exc
            self._error = err
        self._transport = None
        self._wake()

    # -- internals ----------------------------------------------------------------------

    async def _until(self, done: Callable[[], bool]) -> None:
        """Move bytes until ``done()`` (which processes what arrived) is true."""
        machine = self._machine
        while True:
            out = machine.data_to_send()
            if out:
                if self._transport is None:
                    raise self._error or ConnectionLostError(
                        f"the connection to the primary at {self.address} (SQL) is closed"
                    )
                self._transport.write(out)
            if machine.tls_requested:
                await self._start_tls()
                continue
            if done():
                return
            if machine.data_to_send_pending:
                continue
            if self._error is not None:
                raise self._error
            if self._paused:
                # more bytes are needed to go on (a row longer than high_bytes)
                self._paused = False
                if self._transport is not None and not self._transport.is_closing():
                    self._transport.resume_reading()
            waiter = self._waiter = self._loop.create_future()
            try:
                await waiter
            finally:
                self._waiter = None

    def _wake(self) -> None:
        waiter = self._waiter
        if waiter is not None and not waiter.done():
            waiter.set_result(None)

    async def _start_tls(self) -> None:
        transport = self._transport
        ctx = self._config.ssl_context()
        if transport is None or ctx is None:
            raise ConnectionLostError(f"TLS to the primary at {self.address} cannot start")
        try:
            new = await self._loop.start_tls(
                transport,
                self,
                ctx,
                server_hostname=self._config.host if ctx.check_hostname else None,
            )
        except (OSError, ssl.SSLError, ConnectionError) as exc:
            raise ConnectionLostError(
                f"TLS handshake with the primary at {self.address} failed: {exc}"
            ) from exc
        if new is None:
            raise ConnectionLostError("the connection closed during the TLS handshake")
        self._transport = new
        self._machine.tls_established()


async def drive_sql(procedure: Procedure[T], conn: SqlConnection) -> T:
    """Drive ``procedure`` over ``conn`` (e.g. the snapshot's, inside its transaction):
    :func:`replica_client.control.procedure.drive` with ``await``; a failed query is
    thrown into the procedure, as there."""
    return await drive_awaiting(procedure, lambda request: _answer(conn, request))


async def _answer(conn: SqlConnection, request: Query | ScanQueries) -> Answer:
    if isinstance(request, ScanQueries):
        raise TypeError("a binlog scan needs ask(), not a client connection")
    try:
        rows: list[tuple[Any, ...]] = list(await conn.rows(request.text))
        return rows
    except ServerError as exc:
        if (failed := tolerated(request, exc)) is not None:
            return failed
        raise
