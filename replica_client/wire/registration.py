"""The replication connection's state machine, from greeting to streaming. No I/O.

Bytes in (``receive_data``), bytes out (``data_to_send``), payloads of the
binlog stream out (``next_stream_packet``). The driver performs a TLS upgrade
when ``tls_requested`` turns true and then calls ``tls_established``.

Phases are data: :data:`TRANSITIONS` (:mod:`.registration_states`) maps
``(State, Input)`` to the next state; an input not in the table raises
:class:`ProtocolError` and moves to ``FAILED``. Once authenticated, the
connection runs a plan of steps (:data:`MARIADB_PLAN`, :data:`MYSQL_PLAN`, in
:mod:`.registration_plan`) before the dump; what it is given to log in and ask
for the binlog is a :class:`RegistrationSettings` (:mod:`.registration_settings`).

:class:`~replica_client.wire.query_machine.QueryMachine` logs in the same way
(every auth plugin, TLS) and then runs SQL statements one at a time instead of
registering: the client connection of the control layer and the snapshot.
"""

from __future__ import annotations

import os
from enum import Enum, auto
from typing import Final

from ..errors import ConfigError, ProtocolError, ReplicaError, UnsupportedError
from ..position import FilePos, Gtid, MysqlGtidSet
from .auth import AuthPlugin, RandomBytes, plugin_for
from .constants import (
    EOF_MARKER,
    ERR_MARKER,
    MORE_DATA_MARKER,
    OK_MARKER,
    Capability,
)
from .framing import PacketFramer, frame_payload
from .packets import (
    Handshake,
    ResultSetReader,
    build_handshake_response,
    build_ssl_request,
    is_eof_packet,
    parse_err,
    parse_handshake,
)
from .registration_plan import (
    MARIADB_PLAN,
    MYSQL_PLAN,
    Flavor,
    RegistrationContext,
    Step,
    StepReply,
    dump_command,
)
from .registration_settings import RegistrationSettings, SemiSyncMode, StartSpec
from .registration_states import TRANSITIONS, Input, State

__all__ = [
    "END_OF_STREAM",
    "MARIADB_PLAN",
    "MYSQL_PLAN",
    "TRANSITIONS",
    "Flavor",
    "Input",
    "RegistrationMachine",
    "RegistrationSettings",
    "SemiSyncMode",
    "StartSpec",
    "State",
    "Step",
]

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


class _End(Enum):
    END_OF_STREAM = auto()


#: Returned by :meth:`RegistrationMachine.next_stream_packet` after the EOF
#: packet that ends a non-blocking dump.
END_OF_STREAM: Final = _End.END_OF_STREAM


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
        self._ctx = RegistrationContext(settings)
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
        self._out.append(self._framer.command(dump_command(self._ctx)))
        self.state = State.STREAMING

    def _on_step_reply(self, payload: bytes) -> None:
        step = self._plan[self._step]
        reply: StepReply
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
