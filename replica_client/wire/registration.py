"""The replication connection's state machine, from greeting to streaming. No I/O.

Bytes in (``receive_data``), bytes out (``data_to_send``), payloads of the
binlog stream out (``next_stream_packet``). The driver performs a TLS upgrade
when ``tls_requested`` turns true and then calls ``tls_established``.

Phases are data: :data:`TRANSITIONS` maps ``(State, Input)`` to the next state;
an input not in the table raises :class:`ProtocolError` and moves to ``FAILED``.
Once authenticated, the connection runs a plan of steps (:data:`MARIADB_PLAN`,
:data:`MYSQL_PLAN`), each a command whose reply is an OK or a result set, as a
real replica does (MariaDB KB "Replication protocol"; ``sql/slave.cc``):

    SELECT UNIX_TIMESTAMP()                       primary's clock
    SHOW VARIABLES LIKE 'SERVER_ID'               refuse the primary's own id
    SET @master_heartbeat_period=<ns>
    SET @master_binlog_checksum=@@global.binlog_checksum
    SELECT @master_binlog_checksum                negotiated checksum
    SET @mariadb_slave_capability=4               real GTID events, not BEGIN
    SELECT @@GLOBAL.gtid_domain_id
    [SELECT @@GLOBAL.gtid_binlog_pos]             start='now'
    [SET @slave_connect_state='...' and the GTID mode variables]
    COM_REGISTER_SLAVE
    [SHOW VARIABLES LIKE 'rpl_semi_sync_master_enabled', SET @rpl_semi_sync_slave=1]
    COM_BINLOG_DUMP / COM_BINLOG_DUMP_GTID        then the stream

Every value put into SQL is validated first (file names and GTIDs by their
types, numbers by type), so nothing from the caller can inject SQL.

:class:`QueryMachine` logs in the same way (every auth plugin, TLS) and then
runs SQL statements one at a time instead of registering: the client
connection of the control layer, which asks the primary what the binlog does
not say.
"""

from __future__ import annotations

import os
import uuid
from collections.abc import Callable
from dataclasses import dataclass, field
from enum import Enum, auto
from typing import Final, Literal

from ..errors import ConfigError, ProtocolError, ReplicaError, UnsupportedError
from ..position import FilePos, Gtid, MysqlGtidSet
from .auth import AuthPlugin, RandomBytes, plugin_for
from .constants import (
    EOF_MARKER,
    ERR_MARKER,
    MORE_DATA_MARKER,
    OK_MARKER,
    BinlogDumpFlag,
    Capability,
)
from .framing import DEFAULT_MAX_PACKET_SIZE, PacketFramer, frame_payload
from .packets import (
    Handshake,
    ResultSet,
    ResultSetReader,
    build_binlog_dump,
    build_binlog_dump_gtid,
    build_handshake_response,
    build_query,
    build_register_slave,
    build_ssl_request,
    is_eof_packet,
    parse_err,
    parse_handshake,
)

__all__ = [
    "END_OF_STREAM",
    "MARIADB_PLAN",
    "MYSQL_PLAN",
    "TRANSITIONS",
    "QueryMachine",
    "Flavor",
    "Input",
    "RegistrationMachine",
    "RegistrationSettings",
    "SemiSyncMode",
    "StartSpec",
    "State",
    "Step",
]

SemiSyncMode = Literal["on", "off", "auto"]
#: Where to start: ``None`` = the first binlog, "now" = the primary's current
#: position (resolved in-band), a file position, a MariaDB GTID state, or a
#: MySQL GTID set.
StartSpec = FilePos | Gtid | MysqlGtidSet | Literal["now"] | None

_CLIENT_CAPS: Final = (
    Capability.LONG_PASSWORD
    | Capability.LONG_FLAG
    | Capability.PROTOCOL_41
    | Capability.TRANSACTIONS
    | Capability.SECURE_CONNECTION
    | Capability.MULTI_RESULTS
    | Capability.PLUGIN_AUTH
    | Capability.PLUGIN_AUTH_LENENC_CLIENT_DATA
)
#: MariaDB: send real GTID events (``MARIA_SLAVE_CAPABILITY_GTID``).
_MARIA_SLAVE_CAPABILITY: Final = 4
_MAX_HEARTBEAT_NS: Final = 4_294_967 * 10**9


class Flavor(Enum):
    """Which server family the greeting announced."""

    MARIADB = "mariadb"
    MYSQL = "mysql"


class State(Enum):
    """Phases of the replication connection."""

    AWAIT_GREETING = auto()
    TLS_UPGRADE = auto()
    AUTHENTICATING = auto()
    REGISTERING = auto()
    STREAMING = auto()
    ENDED = auto()
    FAILED = auto()
    #: :class:`QueryMachine`: logged in, no statement running.
    READY = auto()
    #: :class:`QueryMachine`: a statement's reply is being read.
    QUERYING = auto()


class Input(Enum):
    """What a received packet (or the driver) means for the state machine."""

    GREETING = auto()
    TLS_DONE = auto()
    AUTH_SWITCH = auto()
    AUTH_MORE_DATA = auto()
    OK = auto()
    ERR = auto()
    RESULT_PART = auto()
    EVENT = auto()
    EOF = auto()


#: (state, input) -> next state. ``REGISTERING + OK`` may also move to
#: ``STREAMING`` when the plan is done; that choice is made by the plan runner.
TRANSITIONS: Final[dict[tuple[State, Input], State]] = {
    (State.AWAIT_GREETING, Input.GREETING): State.AUTHENTICATING,
    (State.AWAIT_GREETING, Input.ERR): State.FAILED,
    (State.TLS_UPGRADE, Input.TLS_DONE): State.AUTHENTICATING,
    (State.AUTHENTICATING, Input.AUTH_SWITCH): State.AUTHENTICATING,
    (State.AUTHENTICATING, Input.AUTH_MORE_DATA): State.AUTHENTICATING,
    (State.AUTHENTICATING, Input.OK): State.REGISTERING,
    (State.AUTHENTICATING, Input.ERR): State.FAILED,
    (State.REGISTERING, Input.OK): State.REGISTERING,
    (State.REGISTERING, Input.RESULT_PART): State.REGISTERING,
    (State.REGISTERING, Input.ERR): State.FAILED,
    (State.STREAMING, Input.EVENT): State.STREAMING,
    (State.STREAMING, Input.EOF): State.ENDED,
    (State.STREAMING, Input.ERR): State.FAILED,
    # QueryMachine: a statement's reply; an ERR answers the statement, the
    # connection stays usable
    (State.QUERYING, Input.RESULT_PART): State.QUERYING,
    (State.QUERYING, Input.OK): State.READY,
    (State.QUERYING, Input.ERR): State.READY,
}


class _End(Enum):
    END_OF_STREAM = auto()


#: Returned by :meth:`RegistrationMachine.next_stream_packet` after the EOF
#: packet that ends a non-blocking dump.
END_OF_STREAM: Final = _End.END_OF_STREAM


@dataclass(frozen=True, slots=True)
class RegistrationSettings:
    """What the state machine needs to log in and ask for the binlog."""

    user: str
    password: bytes = field(default=b"", repr=False)
    server_id: int = 0
    start: StartSpec = None
    blocking: bool = True
    heartbeat_period: float = 0.0
    semi_sync: SemiSyncMode = "off"
    annotate_rows: bool = True
    tls: bool = False
    gtid_strict_mode: bool | None = None
    gtid_ignore_duplicates: bool | None = None
    report_host: str = ""
    report_port: int = 0
    report_user: str = ""
    replica_uuid: str | None = None
    max_packet_size: int = DEFAULT_MAX_PACKET_SIZE
    server_public_key: bytes | None = field(default=None, repr=False)

    def __post_init__(self) -> None:
        if not 1 <= self.server_id < 1 << 32:
            raise ConfigError("server_id must be between 1 and 4294967295")
        if self.heartbeat_period < 0 or self.heartbeat_period * 1e9 > _MAX_HEARTBEAT_NS:
            raise ConfigError("heartbeat_period must be between 0 and 4294967 seconds")
        if self.semi_sync not in ("on", "off", "auto"):
            raise ConfigError(f"semi_sync must be 'on', 'off' or 'auto', not {self.semi_sync!r}")
        if self.semi_sync == "on" and not self.blocking:
            raise ConfigError("semi_sync='on' needs blocking=True (a non-blocking dump never ACKs)")
        start = self.start
        if start not in (None, "now") and not isinstance(start, FilePos | Gtid | MysqlGtidSet):
            raise ConfigError(f"invalid start position {self.start!r}")
        if self.replica_uuid is not None:
            try:
                uuid.UUID(self.replica_uuid)
            except ValueError as exc:
                raise ConfigError(f"invalid replica_uuid {self.replica_uuid!r}") from exc


@dataclass(slots=True)
class _Context:
    """Values learned while registering (read by the plan steps)."""

    settings: RegistrationSettings
    flavor: Flavor = Flavor.MARIADB
    primary_timestamp: int | None = None
    primary_server_id: int | None = None
    crc32: bool = False
    gtid_domain_id: int | None = None
    start: FilePos | Gtid | MysqlGtidSet | None = None
    semi_sync_available: bool = False
    semi_sync: bool = False


_Reply = ResultSet | None  # None: an OK packet


@dataclass(frozen=True, slots=True)
class Step:
    """One registration command: ``build`` returns the payload (None = skip the step),
    ``handle`` checks the reply. ``result_set`` says whether a result set is expected."""

    name: str
    build: Callable[[_Context], bytes | None]
    handle: Callable[[_Context, _Reply], None] | None = None
    result_set: bool = False


# -- step helpers ------------------------------------------------------------------------


def _q(sql: str) -> Callable[[_Context], bytes | None]:
    payload = build_query(sql)
    return lambda ctx: payload


def _int_value(reply: _Reply, what: str, column: int = 0) -> int | None:
    if reply is None or not reply.rows:
        return None
    row = reply.rows[0]
    if len(row) <= column:
        raise ProtocolError(f"{what}: a reply row of {len(row)} columns, expected {column + 1}")
    text = row[column]
    if text is None:
        return None
    try:
        return int(text)
    except ValueError as exc:
        raise ProtocolError(f"{what}: expected a number, got {text!r}") from exc


def _on_timestamp(ctx: _Context, reply: _Reply) -> None:
    ctx.primary_timestamp = _int_value(reply, "UNIX_TIMESTAMP()")


def _on_server_id(ctx: _Context, reply: _Reply) -> None:
    ctx.primary_server_id = _int_value(reply, "SERVER_ID", 1)
    if ctx.primary_server_id == ctx.settings.server_id:
        raise ConfigError(
            f"server_id {ctx.settings.server_id} is the primary's own server_id; a replica "
            "must use an id that differs from the primary's and from every other replica's"
        )


def _heartbeat(ctx: _Context) -> bytes | None:
    if ctx.settings.heartbeat_period <= 0:
        return None
    ns = int(ctx.settings.heartbeat_period * 1e9)
    if ctx.flavor is Flavor.MYSQL:
        return build_query(f"SET @master_heartbeat_period={ns}, @source_heartbeat_period={ns}")
    return build_query(f"SET @master_heartbeat_period={ns}")


def _on_checksum(ctx: _Context, reply: _Reply) -> None:
    value = reply.scalar() if reply is not None else None
    if value is None or value.upper() == "NONE":
        ctx.crc32 = False
    elif value.upper() == "CRC32":
        ctx.crc32 = True
    else:
        raise UnsupportedError(f"the primary uses binlog_checksum={value!r}; only CRC32/NONE")


def _on_domain(ctx: _Context, reply: _Reply) -> None:
    ctx.gtid_domain_id = _int_value(reply, "gtid_domain_id")


def _resolve_now(ctx: _Context) -> bytes | None:
    if ctx.settings.start != "now":
        return None
    if ctx.flavor is Flavor.MYSQL:
        return build_query("SELECT @@GLOBAL.gtid_executed")
    return build_query("SELECT @@GLOBAL.gtid_binlog_pos")


def _on_now(ctx: _Context, reply: _Reply) -> None:
    text = (reply.scalar() if reply is not None else None) or ""
    if ctx.flavor is Flavor.MYSQL:
        ctx.start = MysqlGtidSet(text)
    else:
        ctx.start = Gtid(text)


def _mariadb_gtid(ctx: _Context) -> Gtid | None:
    return ctx.start if isinstance(ctx.start, Gtid) else None


def _connect_state(ctx: _Context) -> bytes | None:
    gtid = _mariadb_gtid(ctx)
    if gtid is None:
        return None
    # Gtid has validated and normalised the text: digits, '-' and ',' only.
    return build_query(f"SET @slave_connect_state='{gtid}'")


def _flag_var(name: str, attr: str) -> Callable[[_Context], bytes | None]:
    def build(ctx: _Context) -> bytes | None:
        value = getattr(ctx.settings, attr)
        if _mariadb_gtid(ctx) is None or value is None:
            return None
        return build_query(f"SET @{name}={int(bool(value))}")

    return build


def _replica_uuid(ctx: _Context) -> bytes | None:
    text = ctx.settings.replica_uuid or str(
        uuid.uuid5(uuid.NAMESPACE_OID, f"replica-client-{ctx.settings.server_id}")
    )
    text = str(uuid.UUID(text))  # validated: hex digits and dashes only
    return build_query(f"SET @slave_uuid='{text}', @replica_uuid='{text}'")


def _register(ctx: _Context) -> bytes | None:
    s = ctx.settings
    return build_register_slave(
        server_id=s.server_id,
        report_host=s.report_host,
        report_user=s.report_user,
        report_port=s.report_port,
    )


def _semi_sync_check(ctx: _Context) -> bytes | None:
    # A non-blocking dump is a one-off read, not a replica a commit should wait
    # for; MariaDB also leaves semi-sync dump threads hanging when such a dump
    # ends, so semi-sync is only negotiated for blocking dumps.
    if ctx.settings.semi_sync == "off" or not ctx.settings.blocking:
        return None
    if ctx.flavor is Flavor.MYSQL:
        return build_query("SHOW VARIABLES LIKE 'rpl_semi_sync_%_enabled'")
    return build_query("SHOW VARIABLES LIKE 'rpl_semi_sync_master_enabled'")


def _on_semi_sync_check(ctx: _Context, reply: _Reply) -> None:
    rows = reply.rows if reply is not None else ()
    ctx.semi_sync_available = any(
        (name or "").lower() in ("rpl_semi_sync_master_enabled", "rpl_semi_sync_source_enabled")
        and (value or "").upper() in ("ON", "1")
        for name, value, *_ in rows
    )
    if not ctx.semi_sync_available and ctx.settings.semi_sync == "on":
        raise UnsupportedError(
            "semi_sync='on' but the primary does not have semi-sync enabled "
            "(rpl_semi_sync_master_enabled=OFF); enable it there or use semi_sync='auto'"
        )


def _semi_sync_enable(ctx: _Context) -> bytes | None:
    if not ctx.semi_sync_available:
        return None
    ctx.semi_sync = True
    if ctx.flavor is Flavor.MYSQL:
        return build_query("SET @rpl_semi_sync_replica=1, @rpl_semi_sync_slave=1")
    return build_query("SET @rpl_semi_sync_slave=1")


def _dump(ctx: _Context) -> bytes:
    s = ctx.settings
    flags = 0 if s.blocking else BinlogDumpFlag.NON_BLOCK
    if s.annotate_rows and ctx.flavor is Flavor.MARIADB:
        flags |= BinlogDumpFlag.SEND_ANNOTATE_ROWS_EVENT
    start = ctx.start
    if isinstance(start, MysqlGtidSet):
        return build_binlog_dump_gtid(server_id=s.server_id, gtid_set=start.encode(), flags=flags)
    if isinstance(start, FilePos):
        return build_binlog_dump(
            server_id=s.server_id, file=start.file, position=start.pos, flags=flags
        )
    # MariaDB GTID start (state set above) or the first binlog: empty name, position 4.
    return build_binlog_dump(server_id=s.server_id, file="", position=4, flags=flags)


#: MariaDB's registration, in order (``sql/slave.cc: get_master_version_and_clock``,
#: ``request_dump``).
MARIADB_PLAN: Final[tuple[Step, ...]] = (
    Step("unix_timestamp", _q("SELECT UNIX_TIMESTAMP()"), _on_timestamp, result_set=True),
    Step("server_id", _q("SHOW VARIABLES LIKE 'SERVER_ID'"), _on_server_id, result_set=True),
    Step("heartbeat", _heartbeat),
    Step("checksum_set", _q("SET @master_binlog_checksum=@@global.binlog_checksum")),
    Step("checksum_get", _q("SELECT @master_binlog_checksum"), _on_checksum, result_set=True),
    Step("capability", _q(f"SET @mariadb_slave_capability={_MARIA_SLAVE_CAPABILITY}")),
    Step("domain_id", _q("SELECT @@GLOBAL.gtid_domain_id"), _on_domain, result_set=True),
    Step("now", _resolve_now, _on_now, result_set=True),
    Step("connect_state", _connect_state),
    Step("strict_mode", _flag_var("slave_gtid_strict_mode", "gtid_strict_mode")),
    Step("ignore_dups", _flag_var("slave_gtid_ignore_duplicates", "gtid_ignore_duplicates")),
    Step("register", _register),
    Step("semi_sync_check", _semi_sync_check, _on_semi_sync_check, result_set=True),
    Step("semi_sync_enable", _semi_sync_enable),
)

#: MySQL's registration (``sql/rpl_replica.cc``), with both old and new variable names.
MYSQL_PLAN: Final[tuple[Step, ...]] = (
    Step("unix_timestamp", _q("SELECT UNIX_TIMESTAMP()"), _on_timestamp, result_set=True),
    Step("server_id", _q("SHOW VARIABLES LIKE 'SERVER_ID'"), _on_server_id, result_set=True),
    Step("heartbeat", _heartbeat),
    Step(
        "checksum_set",
        _q(
            "SET @master_binlog_checksum=@@global.binlog_checksum, "
            "@source_binlog_checksum=@@global.binlog_checksum"
        ),
    ),
    Step("checksum_get", _q("SELECT @master_binlog_checksum"), _on_checksum, result_set=True),
    Step("replica_uuid", _replica_uuid),
    Step("now", _resolve_now, _on_now, result_set=True),
    Step("register", _register),
    Step("semi_sync_check", _semi_sync_check, _on_semi_sync_check, result_set=True),
    Step("semi_sync_enable", _semi_sync_enable),
)


class RegistrationMachine:
    """Drives one replication connection from the greeting to the binlog stream."""

    __slots__ = (
        "_auth",
        "_ctx",
        "_framer",
        "_out",
        "_plan",
        "_random",
        "_reader",
        "_step",
        "handshake",
        "state",
    )

    def __init__(
        self, settings: RegistrationSettings, *, random_bytes: RandomBytes = os.urandom
    ) -> None:
        self._ctx = _Context(settings)
        if settings.start != "now":
            self._ctx.start = settings.start
        self._framer = PacketFramer(max_payload=settings.max_packet_size)
        self._out: list[bytes] = []
        self._random = random_bytes
        self._auth: AuthPlugin | None = None
        self._plan: tuple[Step, ...] = ()
        self._step = -1
        self._reader: ResultSetReader | None = None
        self.handshake: Handshake | None = None
        self.state = State.AWAIT_GREETING

    def __repr__(self) -> str:
        return f"<RegistrationMachine state={self.state.name} step={self._step_name()}>"

    # -- results -------------------------------------------------------------------------

    @property
    def flavor(self) -> Flavor:
        return self._ctx.flavor

    @property
    def crc32(self) -> bool:
        """The events carry CRC32 trailers (negotiated with ``@master_binlog_checksum``)."""
        return self._ctx.crc32

    @property
    def semi_sync(self) -> bool:
        """True when the primary will send semi-sync headers on every event packet."""
        return self._ctx.semi_sync

    @property
    def primary_server_id(self) -> int | None:
        return self._ctx.primary_server_id

    @property
    def primary_timestamp(self) -> int | None:
        return self._ctx.primary_timestamp

    @property
    def gtid_domain_id(self) -> int | None:
        return self._ctx.gtid_domain_id

    @property
    def start(self) -> FilePos | Gtid | MysqlGtidSet | None:
        """The start position actually requested ("now" resolved)."""
        return self._ctx.start

    @property
    def tls_requested(self) -> bool:
        """True once the SSLRequest is queued: the driver must upgrade the transport."""
        return self.state is State.TLS_UPGRADE

    @property
    def buffered(self) -> int:
        return self._framer.buffered

    # -- I/O-free interface --------------------------------------------------------------

    def receive_data(self, data: bytes | bytearray | memoryview) -> None:
        """Feed bytes read from the transport."""
        self._framer.receive_data(data)

    @property
    def data_to_send_pending(self) -> bool:
        """True when :meth:`data_to_send` has bytes."""
        return bool(self._out)

    def data_to_send(self) -> bytes:
        """Bytes to write to the transport (empty when nothing is pending)."""
        if not self._out:
            return b""
        out = b"".join(self._out)
        self._out.clear()
        return out

    def send_raw_command(self, payload: bytes) -> None:
        """Queue a command packet (sequence id 0) that does not touch the read sequence.

        Used for semi-sync ACKs, which the primary reads on the side while its
        dump thread's packet numbering carries on.
        """
        self._out.append(frame_payload(payload, 0)[0])

    def expect_sequence_reset(self) -> None:
        """The last event asked for a semi-sync ACK: the primary may restart at id 1."""
        self._framer.allow_reset(1)

    def tls_established(self) -> None:
        """The driver finished the TLS handshake: send the real handshake response."""
        self._transition(Input.TLS_DONE)
        self._send_handshake_response()

    def next_stream_events(self, limit: int) -> list[bytes]:
        """Payloads of up to ``limit`` event packets buffered, taken in one go.

        What :meth:`next_stream_packet` would return for them, one by one (see
        :meth:`PacketFramer.next_events`); an empty list means "ask
        :meth:`next_stream_packet`", which handles every other packet.
        """
        if self.state is not State.STREAMING:
            return []
        return self._framer.next_events(self.semi_sync, limit)

    def next_stream_packet(self) -> bytes | _End | None:
        """Process received packets; return the next binlog-stream payload.

        Returns the payload of an event packet (starting with the 0x00 status
        byte), :data:`END_OF_STREAM` after the EOF of a non-blocking dump, or
        ``None`` when more bytes are needed (or a TLS upgrade is pending).

        Raises:
            ServerError: the primary answered with an ERR packet (typed by errno).
            ProtocolError: the bytes do not follow the protocol.
            ConfigError: the primary's server_id equals ours.
            UnsupportedError: an auth plugin or server setting we cannot handle.
        """
        while True:
            if self.state is State.STREAMING:
                stream_payload = self._framer.next_packet()
                if stream_payload is None or (stream_payload and stream_payload[0] == OK_MARKER):
                    return stream_payload  # an event packet (or more bytes needed)
                return self._stream_control(stream_payload)
            if self.state in (State.TLS_UPGRADE, State.ENDED):
                return END_OF_STREAM if self.state is State.ENDED else None
            if self.state is State.FAILED:
                raise ProtocolError("the replication connection already failed")
            payload = self._framer.next_packet()
            if payload is None:
                return None
            try:
                self._handle(payload)
            except ReplicaError:
                self.state = State.FAILED
                raise

    # -- internals ---------------------------------------------------------------------

    def _stream_control(self, payload: bytes) -> _End:
        """A streaming packet that is not an event: ERR, the EOF of a non-blocking dump."""
        marker = payload[0] if payload else -1
        if marker == ERR_MARKER:
            self._fail(Input.ERR)
            raise parse_err(payload)
        if is_eof_packet(payload):
            self._transition(Input.EOF)
            return END_OF_STREAM
        self._fail(None)
        raise ProtocolError(f"unexpected packet marker {marker:#x} in the binlog stream")

    def _step_name(self) -> str:
        return self._plan[self._step].name if 0 <= self._step < len(self._plan) else "-"

    def _transition(self, inp: Input) -> None:
        nxt = TRANSITIONS.get((self.state, inp))
        if nxt is None:
            old = self.state
            self.state = State.FAILED
            raise ProtocolError(f"unexpected {inp.name} while in state {old.name}")
        self.state = nxt

    def _fail(self, inp: Input | None) -> None:
        if inp is not None:
            self._transition(inp)
        self.state = State.FAILED

    def _handle(self, payload: bytes) -> None:
        if not payload:
            raise ProtocolError(f"empty packet in state {self.state.name}")
        marker = payload[0]
        if self.state is State.AWAIT_GREETING:
            if marker == ERR_MARKER:
                self._transition(Input.ERR)
                raise parse_err(payload)
            self._on_greeting(parse_handshake(payload))
            return
        if self.state is State.AUTHENTICATING:
            self._on_auth_packet(payload)
            return
        if self.state is State.REGISTERING:
            self._on_step_reply(payload)
            return
        raise ProtocolError(f"unexpected packet in state {self.state.name}")

    def _on_greeting(self, hs: Handshake) -> None:
        self.handshake = hs
        self._ctx.flavor = Flavor.MARIADB if hs.is_mariadb else Flavor.MYSQL
        self._transition(Input.GREETING)
        if self._ctx.settings.tls:
            if not hs.capabilities & Capability.SSL:
                raise UnsupportedError(
                    "TLS was requested but the primary does not offer it (no CLIENT_SSL)"
                )
            self._out.append(self._framer.reply(build_ssl_request(self._capabilities())))
            self.state = State.TLS_UPGRADE
            return
        self._send_handshake_response()

    def _capabilities(self) -> int:
        assert self.handshake is not None
        caps = _CLIENT_CAPS & self.handshake.capabilities | Capability.PROTOCOL_41
        if self._ctx.settings.tls:
            caps |= Capability.SSL
        return int(caps)

    def _send_handshake_response(self) -> None:
        hs = self.handshake
        assert hs is not None
        self._auth = self._make_plugin(hs.auth_plugin)
        response = self._auth.start(hs.scramble)
        payload = build_handshake_response(
            capabilities=self._capabilities(),
            user=self._ctx.settings.user,
            auth_response=response,
            auth_plugin=self._auth.name,
            max_packet=min(self._ctx.settings.max_packet_size, 0xFFFFFFFF),
        )
        self._out.append(self._framer.reply(payload))

    def _make_plugin(self, name: str) -> AuthPlugin:
        s = self._ctx.settings
        return plugin_for(
            name,
            s.password,
            tls=s.tls,
            random_bytes=self._random,
            server_public_key=s.server_public_key,
        )

    def _on_auth_packet(self, payload: bytes) -> None:
        marker = payload[0]
        if marker == OK_MARKER:
            self._transition(Input.OK)
            self._auth = None
            self._logged_in()
        elif marker == ERR_MARKER:
            self._transition(Input.ERR)
            raise parse_err(payload)
        elif marker == EOF_MARKER:
            # Auth switch request: 0xFE | plugin name NUL | plugin data
            self._transition(Input.AUTH_SWITCH)
            end = payload.find(b"\0", 1)
            if end < 0:
                raise UnsupportedError("the server asked for the pre-4.1 password protocol")
            name = payload[1:end].decode("ascii", "replace")
            data = payload[end + 1 :]
            if data.endswith(b"\0"):
                data = data[:-1]
            self._auth = self._make_plugin(name)
            self._out.append(self._framer.reply(self._auth.start(data)))
        elif marker == MORE_DATA_MARKER:
            self._transition(Input.AUTH_MORE_DATA)
            if self._auth is None:
                raise ProtocolError("AuthMoreData before any authentication plugin started")
            answer = self._auth.more_data(payload[1:])
            if answer is not None:
                self._out.append(self._framer.reply(answer))
        else:
            raise ProtocolError(f"unexpected packet marker {marker:#x} during authentication")

    def _logged_in(self) -> None:
        """The login succeeded: register (the flavour's plan), then dump."""
        self._plan = MYSQL_PLAN if self._ctx.flavor is Flavor.MYSQL else MARIADB_PLAN
        self._next_step()

    def _next_step(self) -> None:
        """Send the next step's command, skipping steps that do not apply."""
        while True:
            self._step += 1
            if self._step >= len(self._plan):
                self._start_dump()
                return
            payload = self._plan[self._step].build(self._ctx)
            if payload is not None:
                self._reader = ResultSetReader() if self._plan[self._step].result_set else None
                self._out.append(self._framer.command(payload))
                return

    def _start_dump(self) -> None:
        if isinstance(self._ctx.start, MysqlGtidSet) and self._ctx.flavor is Flavor.MARIADB:
            raise ConfigError("a MySQL GTID set cannot start a dump from a MariaDB primary")
        if isinstance(self._ctx.start, Gtid) and self._ctx.flavor is Flavor.MYSQL:
            raise ConfigError("a MariaDB GTID state cannot start a dump from a MySQL primary")
        self._out.append(self._framer.command(_dump(self._ctx)))
        self.state = State.STREAMING

    def _on_step_reply(self, payload: bytes) -> None:
        step = self._plan[self._step]
        reply: _Reply
        if payload[0] == ERR_MARKER:
            self._transition(Input.ERR)
            err = parse_err(payload)
            err.args = (f"{err.args[0]} (while registering: {step.name})",)
            raise err
        if self._reader is not None:
            self._transition(Input.RESULT_PART)
            result = self._reader.feed(payload)
            if result is None:
                return
            reply = result
        elif payload[0] == OK_MARKER:
            self._transition(Input.OK)
            reply = None
        else:
            raise ProtocolError(f"step {step.name}: expected OK, got marker {payload[0]:#x}")
        if step.handle is not None:
            step.handle(self._ctx, reply)
        self._next_step()


class QueryMachine(RegistrationMachine):
    """A client connection: the replica's login, then SQL statements one at a time.

    ``settings`` gives the account, TLS and packet limit (its start and dump
    options are not used). After the login (``ready``), :meth:`query` sends a
    statement and :meth:`next_result` returns its reply once read: the rows of a
    result set (text, ``str | None``), or an empty :class:`ResultSet` for a
    statement that returns none. An ERR reply raises its :class:`ServerError` and
    leaves the connection ready for the next statement.
    """

    __slots__ = ("_sql_reader",)

    def __init__(
        self, settings: RegistrationSettings, *, random_bytes: RandomBytes = os.urandom
    ) -> None:
        super().__init__(settings, random_bytes=random_bytes)
        self._sql_reader: ResultSetReader | None = None

    @property
    def ready(self) -> bool:
        """Logged in, and no statement running."""
        return self.state is State.READY

    def _logged_in(self) -> None:
        self.state = State.READY

    def query(self, sql: str) -> None:
        """Queue ``sql`` (COM_QUERY).

        Raises:
            ProtocolError: the connection is not ready (logging in, or a statement
                is running).
        """
        if self.state is not State.READY:
            raise ProtocolError(f"a statement cannot be sent in state {self.state.name}")
        self._sql_reader = ResultSetReader()
        self._out.append(self._framer.command(build_query(sql)))
        self.state = State.QUERYING

    def next_result(self) -> ResultSet | None:
        """Process received packets: the login, then the running statement's reply.

        Returns the reply once it is whole, None while more bytes are needed (or a
        TLS upgrade is pending, or nothing runs).

        Raises:
            ServerError: the server refused the login or the statement.
            ProtocolError: the bytes do not follow the protocol.
        """
        while True:
            if self.state in (State.READY, State.TLS_UPGRADE):
                return None
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
        self._transition(Input.OK)
        return result
