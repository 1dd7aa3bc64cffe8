"""The client connection's state machine: the replica's login, then SQL statements. No I/O.

:class:`QueryMachine` logs in as :class:`~replica_client.wire.registration.
RegistrationMachine` does (every auth plugin, TLS) and then runs statements one
at a time instead of registering: the client connection of the control layer,
which asks the primary what the binlog does not say, and of the snapshot, which
streams a table's rows as row packets (``query(sql, stream=True)``). The drivers
(:mod:`replica_client.control.blocking`, :mod:`replica_client.aio.sql`) move bytes
until one of its steps (``login_ready``, ``result_ready``, ``rows_ready``) is
true, then take what it read.
"""

from __future__ import annotations

import os

from ..errors import ProtocolError, ReplicaError
from .auth import RandomBytes
from .constants import ERR_MARKER, OK_MARKER
from .packets import ResultSet, ResultSetReader, build_query, is_eof_packet, parse_err
from .registration import RegistrationMachine
from .registration_settings import RegistrationSettings
from .registration_states import Input, State

__all__ = ["QueryMachine"]


class QueryMachine(RegistrationMachine):
    """A client connection: the replica's login, then SQL statements one at a time.

    ``settings`` gives the account, TLS and packet limit (its start and dump
    options are not used). After the login (``ready``), :meth:`query` sends a
    statement and :meth:`next_result` returns its reply once read: the rows of a
    result set (text, ``str | None``), or an empty :class:`ResultSet` for a
    statement that returns none. An ERR reply raises its :class:`ServerError` and
    leaves the connection ready for the next statement.
    """

    __slots__ = ("_result", "_rows", "_sql_reader", "_streaming")

    def __init__(
        self, settings: RegistrationSettings, *, random_bytes: RandomBytes = os.urandom
    ) -> None:
        super().__init__(settings, random_bytes=random_bytes)
        self._sql_reader: ResultSetReader | None = None
        # query(stream=True): the result set's rows are taken by next_rows
        self._streaming = False
        self._result: ResultSet | None = None  # read by result_ready, not taken yet
        self._rows: list[bytes] = []  # read by rows_ready, not taken yet

    @property
    def ready(self) -> bool:
        """Logged in, and no statement running."""
        return self.state is State.READY

    def _logged_in(self) -> None:
        self.state = State.READY

    def query(self, sql: str, *, stream: bool = False) -> None:
        """Queue ``sql`` (COM_QUERY).

        With ``stream``, :meth:`next_result` returns the result set's columns
        (no rows) as soon as they are read, and :meth:`next_rows` hands out its
        rows' packets as they arrive, unparsed.

        Raises:
            ProtocolError: the connection is not ready (logging in, or a statement
                is running).
        """
        if self.state is not State.READY:
            raise ProtocolError(f"a statement cannot be sent in state {self.state.name}")
        self._sql_reader = ResultSetReader(stream=stream)
        self._streaming = False
        self._out.append(self._framer.command(build_query(sql)))
        self.state = State.QUERYING

    # -- for drivers: "is it there yet?" steps, and what they read ------------------------

    def login_ready(self) -> bool:
        """Process received packets of the login; True once it is done."""
        self.next_result()
        return self.ready

    def result_ready(self) -> bool:
        """Process received packets; True once the statement's reply (a streamed result
        set's columns) is read: :meth:`take_result`."""
        if self._result is None:
            self._result = self.next_result()
        return self._result is not None

    def take_result(self) -> ResultSet:
        """The reply :meth:`result_ready` read.

        Raises:
            ProtocolError: none was read.
        """
        result, self._result = self._result, None
        if result is None:
            raise ProtocolError("no reply has been read")
        return result

    def rows_ready(self, limit: int) -> bool:
        """A streamed result set: process received packets; True once rows are read
        (up to ``limit``) or the result set has ended: :meth:`take_rows`.

        Raises:
            ServerError: the statement failed while its rows were sent (the rows read
                before the error are dropped with the statement).
        """
        rows = self._rows
        if self._streaming and len(rows) < limit:
            try:
                self.next_rows(rows, limit - len(rows))
            except ReplicaError:
                rows.clear()
                raise
        return bool(rows) or not self._streaming

    def take_rows(self) -> list[bytes] | None:
        """The row packets :meth:`rows_ready` read; None once the result set has ended
        (or none was streamed)."""
        rows, self._rows = self._rows, []
        return rows or None

    @property
    def reading_rows(self) -> bool:
        """A streamed result set has rows left to take (no other statement can run)."""
        return self._streaming or bool(self._rows)

    def next_rows(self, out: list[bytes], limit: int) -> bool:
        """A streamed result set (``query(sql, stream=True)``, its columns returned by
        :meth:`next_result`): append up to ``limit`` of its row packets' payloads to
        ``out``, as received; True once the result set ended (the connection is
        ready again). Each payload is one row: a length-encoded string or NULL
        (0xFB) per column.

        Raises:
            ServerError: the statement failed while its rows were sent.
            ProtocolError: no result set is being streamed, or bad packets.
        """
        if not self._streaming:
            raise ProtocolError("no result set is being streamed")
        framer = self._framer
        while limit > 0:
            rows = framer.next_rows(limit)
            if rows:
                out.extend(rows)
                limit -= len(rows)
                continue
            payload = framer.next_packet()
            if payload is None:
                return False
            if payload[:1] == bytes((ERR_MARKER,)):
                self._streaming = False
                self._sql_reader = None
                self._transition(Input.ERR)
                raise parse_err(payload)
            if is_eof_packet(payload):
                self._streaming = False
                self._sql_reader = None
                self._transition(Input.OK)
                return True
            if not payload:
                self.state = State.FAILED
                raise ProtocolError("empty packet in a result set")
            out.append(payload)
            limit -= 1
        return False

    def next_result(self) -> ResultSet | None:
        """Process received packets: the login, then the running statement's reply.

        Returns the reply once it is whole, None while more bytes are needed (or a
        TLS upgrade is pending, or nothing runs).

        Raises:
            ServerError: the server refused the login or the statement.
            ProtocolError: the bytes do not follow the protocol.
        """
        while True:
            if self.state in (State.READY, State.TLS_UPGRADE) or self._streaming:
                return None  # (a streamed result set's rows are next_rows')
            if self.state is State.FAILED:
                raise ProtocolError("the connection already failed")
            payload = self._framer.next_packet()
            if payload is None:
                return None
            if self.state is not State.QUERYING:
                try:
                    self._handle(payload)
                except ReplicaError:
                    self.state = State.FAILED
                    raise
                continue
            return_value = self._on_reply(payload)
            if return_value is not None:
                return return_value

    def _on_reply(self, payload: bytes) -> ResultSet | None:
        reader = self._sql_reader
        assert reader is not None
        if not payload:
            self.state = State.FAILED
            raise ProtocolError("empty packet in a statement's reply")
        marker = payload[0]
        if marker == ERR_MARKER:
            self._transition(Input.ERR)
            raise parse_err(payload)
        if marker == OK_MARKER and reader.column_count < 0:
            self._transition(Input.OK)
            return ResultSet((), ())
        try:
            result = reader.feed(payload)
        except ReplicaError:
            self.state = State.FAILED
            raise
        if result is None:
            self._transition(Input.RESULT_PART)
            return None
        if reader.stream:
            self._transition(Input.RESULT_PART)
            self._streaming = True  # the rows follow: next_rows
            return result
        self._transition(Input.OK)
        return result
