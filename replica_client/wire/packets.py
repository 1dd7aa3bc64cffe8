"""Builders and parsers of client-protocol packet payloads. No I/O.

Parsers take a payload (``bytes``) and return values; they raise
:class:`~replica_client.errors.ProtocolError` for malformed input and nothing
else. Builders take values and return payload bytes (without the 4-byte
packet header; see :mod:`.framing`). Layouts follow the MariaDB KB
client/server protocol pages ("Connection", "OK_Packet", "ERR_Packet",
"EOF_Packet", "Result Set Packets", "COM_BINLOG_DUMP", "COM_REGISTER_SLAVE",
"Semi-sync Replication") and MySQL's ``COM_BINLOG_DUMP_GTID`` documentation.
"""

from __future__ import annotations

import struct
from dataclasses import dataclass, field
from typing import Final

from ..codec import (
    U16,
    U32,
    U64,
    encode_lenenc_bytes,
    is_mariadb_version,
    read_cstring,
    read_lenenc_bytes_or_null,
    read_lenenc_int_or_null,
    server_text,
    until_nul,
)
from ..errors import MalformedEventError, ProtocolError, ServerError, server_error
from .constants import (
    DEFAULT_CHARSET,
    EOF_MARKER,
    ERR_MARKER,
    OK_MARKER,
    SEMI_SYNC_INDICATOR,
    BinlogDumpFlag,
    Capability,
    Command,
    SemiSyncFlag,
)

__all__ = [
    "EVENT_OFFSET",
    "SEMI_SYNC_EVENT_OFFSET",
    "ColumnDefinition",
    "Handshake",
    "OkPacket",
    "ResultSet",
    "ResultSetReader",
    "build_binlog_dump",
    "build_binlog_dump_gtid",
    "build_handshake_response",
    "build_query",
    "build_register_slave",
    "build_semisync_ack",
    "build_ssl_request",
    "semi_sync_ack_requested",
    "text_row_values",
    "is_eof_packet",
    "parse_err",
    "parse_handshake",
    "parse_ok",
]

_ERR_HEAD: Final = struct.Struct("<BH")  # 0xFF, error code
# conn id, scramble 1, filler, caps lo, charset, status, caps hi, auth data length
_HANDSHAKE_MID: Final = struct.Struct("<I8sxHBHHB")
_RESPONSE_HEAD: Final = struct.Struct("<IIB23x")  # capabilities, max packet size, charset, filler
_REGISTER_TAIL: Final = struct.Struct("<HII")  # report port, replication rank, primary id
_DUMP_HEAD: Final = struct.Struct("<BIHI")  # command, position, flags, server id
_DUMP_GTID_HEAD: Final = struct.Struct("<BHII")  # command, flags, server id, name length
_ACK_HEAD: Final = struct.Struct("<BQ")  # 0xEF, position

#: Longest EOF packet: marker, warnings u16, status u16 (MySQL may add session state).
_EOF_MAX_LEN: Final = 9
#: What a truncated or malformed field raises here, turned into the packet's ProtocolError.
_TRUNCATED: Final = (IndexError, struct.error, MalformedEventError)


# -- generic responses ----------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class OkPacket:
    """OK packet.

    Layout: ``0x00 | affected_rows lenenc | last_insert_id lenenc | status u16 |
    warnings u16 | info``.
    """

    affected_rows: int
    last_insert_id: int
    status: int
    warnings: int
    info: bytes = b""


def parse_ok(payload: bytes) -> OkPacket:
    """Parse an OK packet (also accepts the 0xFE-marked OK that ends a result set)."""
    try:
        if payload[0] not in (OK_MARKER, EOF_MARKER):
            raise ProtocolError(f"expected an OK packet, got marker 0x{payload[0]:02x}")
        affected, pos = read_lenenc_int_or_null(payload, 1)
        insert_id, pos = read_lenenc_int_or_null(payload, pos)
        status = warnings = 0
        if pos + 4 <= len(payload):
            status = U16.unpack_from(payload, pos)[0]
            warnings = U16.unpack_from(payload, pos + 2)[0]
            pos += 4
        return OkPacket(affected or 0, insert_id or 0, status, warnings, payload[pos:])
    except _TRUNCATED as exc:
        raise ProtocolError("truncated OK packet") from exc


def parse_err(payload: bytes) -> ServerError:
    """Turn an ERR packet into the matching :class:`ServerError` subclass.

    Layout: ``0xFF | error_code u16 | ['#' sqlstate[5]] | message``. During the
    handshake the sqlstate marker may be missing.
    """
    try:
        marker, errno = _ERR_HEAD.unpack_from(payload, 0)
    except struct.error as exc:
        raise ProtocolError("truncated ERR packet") from exc
    if marker != ERR_MARKER:
        raise ProtocolError(f"expected an ERR packet, got marker 0x{marker:02x}")
    pos = 3
    sqlstate = "HY000"
    if payload[pos : pos + 1] == b"#" and len(payload) >= pos + 6:
        sqlstate = server_text(payload[pos + 1 : pos + 6])
        pos += 6
    message = server_text(payload[pos:])
    return server_error(errno, sqlstate, message)


def is_eof_packet(payload: bytes) -> bool:
    """True for an EOF packet (0xFE and shorter than 9 bytes)."""
    return len(payload) < _EOF_MAX_LEN and bool(payload) and payload[0] == EOF_MARKER


# -- connection phase ------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class Handshake:
    """Initial handshake packet, protocol version 10 (KB "Connection").

    Layout: ``protocol u8 (10) | server_version NUL-str | connection_id u32 |
    scramble_1[8] | filler u8 | capabilities_lo u16 | charset u8 | status u16 |
    capabilities_hi u16 | auth_data_len u8 | reserved[6] | mariadb_caps u32 |
    scramble_2[max(13, auth_data_len - 8)] (NUL-terminated) | auth_plugin NUL-str``.
    """

    server_version: str
    connection_id: int
    capabilities: int
    charset: int
    status: int
    scramble: bytes
    auth_plugin: str
    mariadb_capabilities: int = 0

    @property
    def is_mariadb(self) -> bool:
        """True when the server says it is MariaDB (else we speak MySQL flavor)."""
        return is_mariadb_version(self.server_version)


def parse_handshake(payload: bytes) -> Handshake:
    """Parse the server greeting (protocol 10); an ERR greeting raises its ServerError.

    Raises:
        ServerError: the server refused the connection up front (too many
            connections, host blocked ...).
        ProtocolError: the greeting is malformed or of another protocol version.
    """
    if payload[:1] == bytes((ERR_MARKER,)):
        raise parse_err(payload)
    try:
        if payload[0] != 10:
            raise ProtocolError(f"unsupported handshake protocol version {payload[0]}")
        version, pos = read_cstring(payload, 1)
        conn_id, scramble1, caps_lo, charset, status, caps_hi, auth_len = (
            _HANDSHAKE_MID.unpack_from(payload, pos)
        )
        pos += _HANDSHAKE_MID.size
        mariadb_caps = U32.unpack_from(payload, pos + 6)[0]
        pos += 10
        caps = caps_lo | (caps_hi << 16)
        scramble2 = b""
        if caps & Capability.SECURE_CONNECTION:
            n = max(13, auth_len - 8)
            scramble2 = payload[pos : pos + n].rstrip(b"\0")
            pos += n
        plugin = b""
        if caps & Capability.PLUGIN_AUTH and pos < len(payload):
            plugin = until_nul(payload[pos:])
        return Handshake(
            server_version=server_text(version),
            connection_id=conn_id,
            capabilities=caps,
            charset=charset,
            status=status,
            scramble=scramble1 + scramble2,
            auth_plugin=server_text(plugin) or "mysql_native_password",
            # MariaDB clears CLIENT_MYSQL (bit 0) and puts its own flags in the filler
            mariadb_capabilities=0 if caps & Capability.LONG_PASSWORD else mariadb_caps,
        )
    except _TRUNCATED as exc:
        raise ProtocolError("truncated server greeting") from exc


def build_ssl_request(capabilities: int, max_packet: int = 1 << 24) -> bytes:
    """SSLRequest: the first 32 bytes of HandshakeResponse41 (with CLIENT_SSL set)."""
    return _RESPONSE_HEAD.pack(capabilities | Capability.SSL, max_packet, DEFAULT_CHARSET)


def build_handshake_response(
    *,
    capabilities: int,
    user: str,
    auth_response: bytes,
    auth_plugin: str,
    max_packet: int = 1 << 24,
    database: str | None = None,
) -> bytes:
    """HandshakeResponse41 (KB "Connection"; the password never appears in clear here).

    Layout: ``capabilities u32 | max_packet u32 | charset u8 | filler[23] |
    user NUL-str | auth_response (lenenc, or u8 length) | [database NUL-str] |
    [auth_plugin NUL-str]``.
    """
    parts = [_RESPONSE_HEAD.pack(capabilities, max_packet, DEFAULT_CHARSET)]
    parts.append(user.encode("utf-8") + b"\0")
    if capabilities & Capability.PLUGIN_AUTH_LENENC_CLIENT_DATA:
        parts.append(encode_lenenc_bytes(auth_response))
    else:
        parts.append(bytes((len(auth_response),)) + auth_response)
    if capabilities & Capability.CONNECT_WITH_DB and database is not None:
        parts.append(database.encode("utf-8") + b"\0")
    if capabilities & Capability.PLUGIN_AUTH:
        parts.append(auth_plugin.encode("ascii") + b"\0")
    return b"".join(parts)


# -- commands ---------------------------------------------------------------------------


def build_query(sql: str) -> bytes:
    """COM_QUERY: ``0x03 | query text``."""
    return bytes((Command.QUERY,)) + sql.encode("utf-8")


def _short_str(value: str, what: str) -> bytes:
    raw = value.encode("utf-8")
    if len(raw) > 255:
        raise ProtocolError(f"{what} longer than 255 bytes cannot be sent in COM_REGISTER_SLAVE")
    return bytes((len(raw),)) + raw


def build_register_slave(
    *, server_id: int, report_host: str = "", report_user: str = "", report_port: int = 0
) -> bytes:
    """COM_REGISTER_SLAVE (KB "COM_REGISTER_SLAVE").

    Layout: ``0x15 | server_id u32 | host u8-len str | user u8-len str |
    password u8-len str | port u16 | rank u32 (0) | primary_id u32 (0)``. We
    never report a password.
    """
    return b"".join(
        (
            bytes((Command.REGISTER_SLAVE,)),
            U32.pack(server_id),
            _short_str(report_host, "report_host"),
            _short_str(report_user, "report_user"),
            b"\0",
            _REGISTER_TAIL.pack(report_port, 0, 0),
        )
    )


def build_binlog_dump(*, server_id: int, file: str, position: int, flags: int) -> bytes:
    """COM_BINLOG_DUMP (KB "COM_BINLOG_DUMP").

    Layout: ``0x12 | position u32 | flags u16 | server_id u32 | file name (rest)``.
    An empty name means the first binlog (or, on MariaDB, the GTID start set
    with ``@slave_connect_state``).
    """
    if position >= 1 << 32:
        raise ProtocolError("COM_BINLOG_DUMP positions are 32 bits; use a GTID start instead")
    return _DUMP_HEAD.pack(Command.BINLOG_DUMP, position, flags, server_id) + file.encode("ascii")


def build_binlog_dump_gtid(
    *, server_id: int, gtid_set: bytes, flags: int, file: str = "", position: int = 4
) -> bytes:
    """COM_BINLOG_DUMP_GTID (MySQL).

    Layout: ``0x1e | flags u16 | server_id u32 | name_len u32 | name |
    position u64 | data_len u32 | encoded GTID set``.
    """
    name = file.encode("ascii")
    return b"".join(
        (
            _DUMP_GTID_HEAD.pack(
                Command.BINLOG_DUMP_GTID, flags | BinlogDumpFlag.THROUGH_GTID, server_id, len(name)
            ),
            name,
            U64.pack(position),
            U32.pack(len(gtid_set)),
            gtid_set,
        )
    )


_SYNC: Final = int(SemiSyncFlag.SYNC)  # a plain int: IntFlag's & is slow

#: Where the event starts in an event packet: after the ``0x00`` status byte,
#: and with semi-sync after the ``0xEF | flags`` header too.
EVENT_OFFSET: Final = 1
SEMI_SYNC_EVENT_OFFSET: Final = 3


def semi_sync_ack_requested(payload: bytes) -> bool | None:
    """Read the semi-sync header of an event packet: ``0x00 | 0xEF | flags | event``.

    Returns whether the primary waits for an ACK of this event (flag
    ``SemiSyncFlag.SYNC``), or None when the packet has no semi-sync header.
    """
    if len(payload) < SEMI_SYNC_EVENT_OFFSET or payload[1] != SEMI_SYNC_INDICATOR:
        return None
    return bool(payload[2] & _SYNC)


def build_semisync_ack(*, file: str, position: int) -> bytes:
    """Semi-sync ACK: ``0xEF | position u64 | file name`` (sent as a new command, seq 0)."""
    return _ACK_HEAD.pack(SEMI_SYNC_INDICATOR, position) + file.encode("ascii")


# -- text result sets ---------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class ColumnDefinition:
    """The part of a Column Definition packet we use: names, type, collation id and
    display length."""

    schema: str
    table: str
    name: str
    column_type: int
    charset: int = 0
    length: int = 0


def _parse_column_definition(payload: bytes) -> ColumnDefinition:
    # catalog, schema, table alias, table, column alias, column, then fixed fields
    try:
        pos = 0
        texts: list[bytes] = []
        for _ in range(6):
            text, pos = read_lenenc_bytes_or_null(payload, pos)
            texts.append(text or b"")
        _, pos = read_lenenc_int_or_null(payload, pos)  # length of fixed fields (0x0c)
        charset = payload[pos] | payload[pos + 1] << 8
        length = int.from_bytes(payload[pos + 2 : pos + 6], "little")
        column_type = payload[pos + 6]
    except _TRUNCATED as exc:
        raise ProtocolError("truncated column definition packet") from exc
    return ColumnDefinition(
        schema=server_text(texts[1]),
        table=server_text(texts[3]),
        name=server_text(texts[4]),
        column_type=column_type,
        charset=charset,
        length=length,
    )


@dataclass(frozen=True, slots=True)
class ResultSet:
    """A text-protocol result set: column definitions and rows of ``str | None``."""

    columns: tuple[ColumnDefinition, ...]
    rows: tuple[tuple[str | None, ...], ...]

    def scalar(self) -> str | None:
        """The first column of the first row (``None`` if empty or NULL)."""
        return self.rows[0][0] if self.rows and self.rows[0] else None


@dataclass(slots=True)
class ResultSetReader:
    """Collects the packets of one text result set (without CLIENT_DEPRECATE_EOF).

    Sequence: ``column_count`` | column definitions | EOF | rows | EOF (or ERR).
    ``feed`` returns the finished :class:`ResultSet`, or ``None`` while more
    packets are needed; an ERR packet raises its :class:`ServerError`. With
    ``stream``, it returns the columns (no rows) once they are read: the rows
    are the caller's to take.
    """

    stream: bool = False
    column_count: int = -1
    columns: list[ColumnDefinition] = field(default_factory=list)
    rows: list[tuple[str | None, ...]] = field(default_factory=list)
    in_rows: bool = False

    def feed(self, payload: bytes) -> ResultSet | None:
        if payload[:1] == bytes((ERR_MARKER,)):
            raise parse_err(payload)
        if self.column_count < 0:
            try:
                count, _ = read_lenenc_int_or_null(payload, 0)
            except _TRUNCATED as exc:
                raise ProtocolError("truncated result set header") from exc
            if not count:
                raise ProtocolError("result set header with no columns")
            self.column_count = count
            return None
        if not self.in_rows:
            if is_eof_packet(payload):
                if len(self.columns) != self.column_count:
                    raise ProtocolError(
                        f"result set announced {self.column_count} columns, got {len(self.columns)}"
                    )
                self.in_rows = True
                return ResultSet(tuple(self.columns), ()) if self.stream else None
            self.columns.append(_parse_column_definition(payload))
            return None
        if is_eof_packet(payload):
            return ResultSet(tuple(self.columns), tuple(self.rows))
        values = text_row_values(payload, self.column_count)
        self.rows.append(tuple(None if v is None else server_text(v) for v in values))
        return None


def text_row_values(payload: bytes, count: int) -> tuple[bytes | None, ...]:
    """The ``count`` values of a text result set's row packet, as the bytes the server
    sent (None: SQL NULL).

    Raises:
        ProtocolError: the packet is not a row of ``count`` values.
    """
    row: list[bytes | None] = []
    pos = 0
    try:
        for _ in range(count):
            value, pos = read_lenenc_bytes_or_null(payload, pos)
            row.append(value)
    except _TRUNCATED as exc:
        raise ProtocolError("truncated result set row") from exc
    if pos != len(payload):
        raise ProtocolError(f"{len(payload) - pos} unexpected bytes after a result set row")
    return tuple(row)
