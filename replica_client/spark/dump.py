"""A blocking binlog dump for the Spark driver: raw events grouped into transactions.

Driver side, no pyspark import. The Spark source must not decode rows in the
driver (executors do that, in parallel), but it must know where transactions
end, their GTIDs, and their size. So this module

* drives the sans-I/O :class:`~replica_client.wire.registration.RegistrationMachine`
  over a plain blocking socket (no event loop: the driver-side reader is a
  plain Python process) with a non-blocking dump: the primary sends what its
  binlog holds now and then an EOF;
* reads every event's header, decodes only the small control events (ROTATE,
  FORMAT_DESCRIPTION, GTID, GTID_LIST, QUERY, XID) and the names in TABLE_MAPs
  (for the ``tables`` filter), and keeps TABLE_MAP and rows events as raw bytes;
* yields one :class:`Txn` per transaction boundary, carrying the kept raw events,
  the FORMAT_DESCRIPTION_EVENT they need, the GTID, and the position and GTID
  state right after the transaction: a place the stream can resume from.

Row counts (for ``maxRowsPerTrigger``) need the rows decoded; that happens here
only when asked (``count_rows=True``).
"""

from __future__ import annotations

import contextlib
import socket
import ssl
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Final

from ..binlog.constants import EVENT_HEADER_LEN, EventFlag, EventType
from ..binlog.decoder import EventDecoder
from ..binlog.events import (
    DeleteRowsEvent,
    FormatDescriptionEvent,
    GtidEvent,
    GtidListEvent,
    QueryEvent,
    RotateEvent,
    UpdateRowsEvent,
    WriteRowsEvent,
)
from ..binlog.header import unpack_header
from ..config import DecoderOptions, TableFilter
from ..errors import ConnectionLostError, ProtocolError, ReplicaTimeoutError
from ..position import FilePos, Gtid, GtidTriple
from ..tls import client_ssl_context
from ..wire.registration import END_OF_STREAM, RegistrationMachine, RegistrationSettings, State
from .options import SourceOptions

__all__ = ["ROWS_EVENT_TYPES", "BinlogDump", "Txn", "position_key"]

E = EventType

#: Every rows event type (v0/PRE_GA, v1, v2, MariaDB compressed, MySQL partial).
ROWS_EVENT_TYPES: Final = frozenset(
    {
        E.PRE_GA_WRITE_ROWS_EVENT,
        E.PRE_GA_UPDATE_ROWS_EVENT,
        E.PRE_GA_DELETE_ROWS_EVENT,
        E.WRITE_ROWS_EVENT_V1,
        E.UPDATE_ROWS_EVENT_V1,
        E.DELETE_ROWS_EVENT_V1,
        E.WRITE_ROWS_EVENT,
        E.UPDATE_ROWS_EVENT,
        E.DELETE_ROWS_EVENT,
        E.PARTIAL_UPDATE_ROWS_EVENT,
        E.WRITE_ROWS_COMPRESSED_EVENT,
        E.UPDATE_ROWS_COMPRESSED_EVENT,
        E.DELETE_ROWS_COMPRESSED_EVENT,
        E.WRITE_ROWS_COMPRESSED_EVENT_V1,
        E.UPDATE_ROWS_COMPRESSED_EVENT_V1,
        E.DELETE_ROWS_COMPRESSED_EVENT_V1,
    }
)
# Events whose decoded form the transaction tracking needs.
_CONTROL: Final = frozenset(
    {
        E.ROTATE_EVENT,
        E.FORMAT_DESCRIPTION_EVENT,
        E.GTID_EVENT,
        E.GTID_LIST_EVENT,
        E.QUERY_EVENT,
        E.QUERY_COMPRESSED_EVENT,
        E.GTID_LOG_EVENT,
        E.GTID_TAGGED_LOG_EVENT,
    }
)
_GROUP_END: Final = frozenset({E.XID_EVENT, E.XA_PREPARE_LOG_EVENT})
_HEARTBEATS: Final = frozenset({E.HEARTBEAT_LOG_EVENT, E.HEARTBEAT_LOG_EVENT_V2})
_END_QUERIES: Final = ("COMMIT", "ROLLBACK", "XA COMMIT", "XA ROLLBACK")
_RECV_SIZE: Final = 1 << 20


def position_key(pos: FilePos) -> tuple[int, str, int]:
    """Sort key of a binlog position: file number, file name, offset."""
    _, _, ext = pos.file.rpartition(".")
    return (int(ext) if ext.isdigit() else 0, pos.file, pos.pos)


@dataclass(slots=True)
class Txn:
    """One transaction (or one event outside transactions) of the dump.

    Attributes:
        fde: the raw FORMAT_DESCRIPTION_EVENT the events are decoded with.
        file: the binlog file the events are in.
        events: ``(start position, raw bytes)`` of the TABLE_MAP and rows
            events kept by the table filter, in order.
        gtid: the transaction's GTID, when the binlog has one.
        end: where the next transaction starts.
        gtid_state: the MariaDB GTID state after this transaction.
        nbytes: binlog bytes the transaction spans (all of its events).
        rows: rows of the kept rows events (counted only when asked, else 0).
        real: False for boundaries made only of artificial events (the fake
            ROTATE and re-sent FDE of a dump): their position is not a place
            the binlog can be re-read from.
    """

    fde: bytes
    file: str
    events: list[tuple[int, bytes]]
    gtid: str | None
    end: FilePos
    gtid_state: str
    nbytes: int
    rows: int
    real: bool


def _ssl_context(opts: SourceOptions) -> ssl.SSLContext:
    ctx = client_ssl_context(opts.tls, opts.tls_ca)
    assert ctx is not None, "TLS is off"
    return ctx


def _table_names(raw: bytes, phl: int) -> tuple[int, str, str]:
    # TABLE_MAP: table_id u48 (u32 when the post-header is 6) | flags u16 |
    # schema len u8 | schema | 0 | table len u8 | table | 0 | ...
    pos = EVENT_HEADER_LEN
    if phl == 6:
        table_id = int.from_bytes(raw[pos : pos + 4], "little")
        pos += 6
    else:
        table_id = int.from_bytes(raw[pos : pos + 6], "little")
        pos += 8
    n = raw[pos]
    schema = raw[pos + 1 : pos + 1 + n].decode("utf-8", "replace")
    pos += n + 2
    m = raw[pos]
    table = raw[pos + 1 : pos + 1 + m].decode("utf-8", "replace")
    return table_id, schema, table


def _rows_table_id(raw: bytes, phl: int) -> int:
    pos = EVENT_HEADER_LEN
    return int.from_bytes(raw[pos : pos + (4 if phl == 6 else 6)], "little")


class BinlogDump:
    """One non-blocking dump from ``start``: ``transactions()`` until the binlog's end.

    Args:
        opts: connection and decoder options (host, port, user, ...).
        start: a file position, or a MariaDB GTID state (first dump of a query
            started with a GTID).
        gtid_state: the GTID state at ``start`` (from the offset).
        count_rows: decode rows events to fill :attr:`Txn.rows`.
    """

    def __init__(
        self,
        opts: SourceOptions,
        start: FilePos | Gtid,
        gtid_state: Gtid,
        *,
        count_rows: bool = False,
    ) -> None:
        opts.require_connection()
        assert opts.server_id is not None
        self._opts = opts
        self._start = start
        self._filter: TableFilter | None = opts.tables if opts.tables else None
        self._count_rows = count_rows
        self._state: dict[int, GtidTriple] = {t.domain: t for t in gtid_state.triples}
        self._sock: socket.socket | None = None
        self._machine: RegistrationMachine | None = None
        self.bytes_received = 0

    # -- connection -----------------------------------------------------------------------

    def _connect(self) -> RegistrationMachine:
        opts = self._opts
        assert opts.server_id is not None
        settings = RegistrationSettings(
            user=opts.user,
            password=opts.password.encode("utf-8"),
            server_id=opts.server_id,
            start=self._start,
            blocking=False,
            heartbeat_period=0.0,
            semi_sync="off",
            annotate_rows=False,
            tls=opts.tls != "off",
        )
        machine = RegistrationMachine(settings)
        address = f"{opts.host}:{opts.port}"
        try:
            sock = socket.create_connection((opts.host, opts.port), timeout=opts.connect_timeout)
        except OSError as exc:
            raise ConnectionLostError(f"cannot connect to the primary at {address}: {exc}") from exc
        sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        self._sock = sock
        self._machine = machine
        return machine

    def close(self) -> None:
        """Close the connection (idempotent)."""
        sock, self._sock = self._sock, None
        if sock is not None:
            with contextlib.suppress(OSError):
                sock.close()

    def __enter__(self) -> BinlogDump:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def _payloads(self) -> Iterator[bytes]:
        """Payloads of the event packets (status byte included) until the EOF."""
        machine = self._connect()
        sock = self._sock
        assert sock is not None
        opts = self._opts
        address = f"{opts.host}:{opts.port}"
        registered = False
        try:
            while True:
                payload = machine.next_stream_packet()
                out = machine.data_to_send()
                if out:
                    sock.sendall(out)
                if payload is END_OF_STREAM:
                    return
                if payload is not None:
                    yield payload
                    continue
                if machine.tls_requested:
                    sock = _ssl_context(opts).wrap_socket(sock, server_hostname=opts.host)
                    self._sock = sock
                    machine.tls_established()
                    continue
                if not registered and machine.state is State.STREAMING:
                    registered = True
                    sock.settimeout(opts.read_timeout)
                data = sock.recv(_RECV_SIZE)
                if not data:
                    raise ConnectionLostError(f"the primary at {address} closed the connection")
                self.bytes_received += len(data)
                machine.receive_data(data)
        except TimeoutError as exc:
            raise ReplicaTimeoutError(
                f"no data from the primary at {address} for {opts.read_timeout} s "
                "(raise the readTimeout option for slow networks)"
            ) from exc
        except OSError as exc:
            raise ConnectionLostError(f"lost the primary at {address}: {exc}") from exc
        finally:
            self.close()

    # -- transactions ---------------------------------------------------------------------

    def transactions(self) -> Iterator[Txn]:
        """Yield every transaction boundary of the dump, in order, until the binlog's end."""
        machine: RegistrationMachine | None = None
        decoder: EventDecoder | None = None
        counter: EventDecoder | None = None
        filt = self._filter
        state = self._state
        file = self._start.file if isinstance(self._start, FilePos) else ""
        pos = self._start.pos if isinstance(self._start, FilePos) else 4
        fde = b""
        tm_phl = rows_phl = 8
        excluded: set[int] = set()
        events: list[tuple[int, bytes]] = []
        in_group = False
        standalone = False
        gtid: str | None = None
        group_bytes = 0
        rows = 0
        real = False
        rotate_to: FilePos | None = None
        for payload in self._payloads():
            if machine is None:
                machine = self._machine
                assert machine is not None
                decoder = EventDecoder(
                    DecoderOptions(verify_checksum=self._opts.verify_checksum),
                    checksum_alg=machine.checksum_alg,
                )
            assert decoder is not None
            raw = payload[1:]
            if len(raw) < EVENT_HEADER_LEN:
                raise ProtocolError(f"event packet of {len(payload)} bytes in the binlog stream")
            _, type_code, _, size, log_pos, flags = unpack_header(raw, 0)
            start = pos
            artificial = bool(flags & EventFlag.ARTIFICIAL)
            if type_code in _HEARTBEATS:
                continue
            boundary = False
            if type_code in ROWS_EVENT_TYPES:
                if _rows_table_id(raw, rows_phl) not in excluded:
                    events.append((start, raw))
                    if counter is not None:
                        ev = counter.decode(raw, start)
                        if isinstance(ev, WriteRowsEvent | UpdateRowsEvent | DeleteRowsEvent):
                            rows += len(ev.rows)
            elif type_code == E.TABLE_MAP_EVENT:
                table_id, schema, table = _table_names(raw, tm_phl)
                if filt is not None and not filt(schema, table):
                    excluded.add(table_id)
                else:
                    excluded.discard(table_id)
                    events.append((start, raw))
                    if counter is not None:
                        counter.decode(raw, start)
            elif type_code in _CONTROL:
                event = decoder.decode(raw, start)
                if isinstance(event, RotateEvent):
                    rotate_to = FilePos(event.next_file, event.position)
                    if not in_group:
                        boundary = True
                elif isinstance(event, FormatDescriptionEvent):
                    fde = bytes(raw)
                    tm_phl = event.post_header_len(E.TABLE_MAP_EVENT) or 8
                    rows_phl = event.post_header_len(E.WRITE_ROWS_EVENT_V1) or 8
                    excluded.clear()
                    if self._count_rows:
                        counter = EventDecoder(
                            DecoderOptions(verify_checksum=False),
                            checksum_alg=machine.checksum_alg if machine else None,
                        )
                        counter.decode(raw, start)
                    boundary = not in_group
                elif isinstance(event, GtidEvent):
                    in_group = True
                    standalone = event.standalone
                    triple = event.triple
                    gtid = event.gtid
                    state[triple.domain] = triple
                elif isinstance(event, GtidListEvent):
                    if not in_group:
                        for g in event.gtids:
                            state.setdefault(g.domain, g)
                        boundary = True
                elif isinstance(event, QueryEvent):
                    query = event.query.lstrip()[:12].upper()
                    if not in_group:
                        if query.startswith(("BEGIN", "XA START")):
                            in_group = True
                            standalone = False
                        else:
                            boundary = True
                    elif standalone or query.startswith(_END_QUERIES):
                        boundary = True
                elif event is not None and type_code in (E.GTID_LOG_EVENT, E.GTID_TAGGED_LOG_EVENT):
                    gtid = str(getattr(event, "gtid", "")) or None
            elif type_code in _GROUP_END or not in_group:
                boundary = True
            # Position tracking (as the session does it): a ROTATE moves to its
            # target; log_pos is the end; 0 (artificial, or MariaDB 11.4+ inside
            # a transaction) means "start + size" for real events.
            if not artificial and log_pos:
                pos = log_pos
            elif not artificial and type_code != E.FORMAT_DESCRIPTION_EVENT:
                pos = start + size
            if not artificial and not (type_code == E.FORMAT_DESCRIPTION_EVENT and not log_pos):
                real = True
                group_bytes += size
            if rotate_to is not None:
                file, pos = rotate_to.file, rotate_to.pos
                rotate_to = None
            if boundary:
                in_group = False
                standalone = False
                yield Txn(
                    fde,
                    file,
                    events,
                    gtid,
                    FilePos(file, pos),
                    ",".join(str(state[d]) for d in sorted(state)),
                    group_bytes,
                    rows,
                    real,
                )
                events = []
                gtid = None
                group_bytes = 0
                rows = 0
                real = False
