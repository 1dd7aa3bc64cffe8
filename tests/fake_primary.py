"""A scripted fake primary for tests: binlog event builders and a server-side protocol.

``FakePrimary`` is sans-I/O (bytes in, bytes out) so the same script drives the
session in unit tests and an in-process asyncio server (``serve``) in driver
tests. It speaks just enough of the server side: greeting (MariaDB or MySQL
flavor), the auth plugins we implement (verifying what the client sends),
text result sets for the registration queries, OK for SETs and
COM_REGISTER_SLAVE, and a binlog dump that replays a list of events (with
semi-sync headers when asked), ending with EOF, ERR, a closed connection, or
nothing (a blocking dump that waits).

Event bytes are built here field by field (layouts in the binlog decoder); the
FDE's post-header lengths are those of a MariaDB 10.11.19 FDE.
"""

from __future__ import annotations

import asyncio
import hashlib
import random
import struct
import zlib
from collections.abc import Callable
from dataclasses import dataclass, field

from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ed25519, padding, rsa

from replica_client.codec import encode_lenenc_bytes, encode_lenenc_int
from replica_client.wire.auth import scramble_native
from replica_client.wire.framing import MAX_CHUNK, frame_payload

__all__ = [
    "BinlogBuilder",
    "FakePrimary",
    "FakeServer",
    "build_event",
    "serve",
]

_HDR = struct.Struct("<IBIIIH")
# MariaDB 10.11.19 FORMAT_DESCRIPTION_EVENT post-header lengths (event types 1..164).
_FDE_LENGTHS = bytes.fromhex(
    "380d000800120004040404120000e400041a08000000080808020000000a0a0a0000000000000a0a0a"
    + "00" * 112
    + "041304000d0808080a0a0a"
)
ARTIFICIAL = 0x20


def build_event(
    type_code: int,
    body: bytes,
    *,
    log_pos: int,
    flags: int = 0,
    timestamp: int = 1_700_000_000,
    server_id: int = 1,
    crc: bool = True,
) -> bytes:
    """One event: common header + body + CRC32 trailer."""
    size = 19 + len(body) + (4 if crc else 0)
    head = _HDR.pack(timestamp, type_code, server_id, size, log_pos, flags)
    data = head + body
    if crc:
        data += struct.pack("<I", zlib.crc32(data))
    return data


def fde_body(version: str = "10.11.19-MariaDB-log", checksum: int = 1) -> bytes:
    return (
        struct.pack("<H50sIB", 4, version.encode(), 0, 19)
        + _FDE_LENGTHS
        + bytes((checksum,))
    )


def query_body(sql: str | bytes, schema: str = "test") -> bytes:
    raw = sql.encode() if isinstance(sql, str) else sql
    return struct.pack("<IIBHH", 7, 0, len(schema), 0, 0) + schema.encode() + b"\0" + raw


def gtid_body(seq: int, domain: int = 0, flags2: int = 0) -> bytes:
    return struct.pack("<QIB", seq, domain, flags2) + b"\0" * 6


def gtid_list_body(triples: list[tuple[int, int, int]]) -> bytes:
    return struct.pack("<I", len(triples)) + b"".join(struct.pack("<IIQ", *t) for t in triples)


def rotate_body(file: str, pos: int) -> bytes:
    return struct.pack("<Q", pos) + file.encode()


@dataclass
class BinlogBuilder:
    """Lays out events of one binlog file, computing ``log_pos`` from sizes."""

    file: str = "mysql-bin.000001"
    pos: int = 4
    server_id: int = 1
    crc: bool = True
    zero_log_pos_in_trx: bool = False  # MariaDB 11.4+ style
    events: list[bytes] = field(default_factory=list)
    starts: list[int] = field(default_factory=list)
    _in_trx: bool = False

    def add(self, type_code: int, body: bytes, *, flags: int = 0, crc: bool | None = None) -> bytes:
        crc = self.crc if crc is None else crc
        size = 19 + len(body) + (4 if crc else 0)
        end = self.pos + size
        log_pos = 0 if (self.zero_log_pos_in_trx and self._in_trx) else end
        ev = build_event(
            type_code, body, log_pos=log_pos, flags=flags, server_id=self.server_id, crc=crc
        )
        self.events.append(ev)
        self.starts.append(self.pos)
        self.pos = end
        return ev

    def fde(self) -> bytes:
        # a checksum-aware server puts a CRC on its FDE even with binlog_checksum=NONE
        return self.add(15, fde_body(checksum=1 if self.crc else 0), crc=True)

    def gtid_list(self, triples: list[tuple[int, int, int]]) -> bytes:
        return self.add(163, gtid_list_body(triples))

    def transaction(self, seq: int, sql: str = "INSERT INTO t VALUES (1)", domain: int = 0) -> None:
        """GTID, a statement, XID: one MariaDB transaction."""
        self.add(162, gtid_body(seq, domain))
        self._in_trx = True
        self.add(2, query_body(sql))
        self._in_trx = False
        self.add(16, struct.pack("<Q", seq))

    def ddl(self, seq: int, sql: str = "CREATE TABLE t (a INT)") -> None:
        self.add(162, gtid_body(seq, flags2=1))  # FL_STANDALONE
        self.add(2, query_body(sql))

    def rotate(self, next_file: str) -> bytes:
        return self.add(4, rotate_body(next_file, 4))


def fake_rotate(file: str, pos: int = 4, crc: bool = True) -> bytes:
    return build_event(4, rotate_body(file, pos), log_pos=0, flags=ARTIFICIAL, timestamp=0, crc=crc)


# -- server side ---------------------------------------------------------------------------


def _column_def(name: str) -> bytes:
    return b"".join(
        (
            encode_lenenc_bytes(b"def"),
            encode_lenenc_bytes(b""),
            encode_lenenc_bytes(b""),
            encode_lenenc_bytes(b""),
            encode_lenenc_bytes(name.encode()),
            encode_lenenc_bytes(name.encode()),
            b"\x0c",
            struct.pack("<HIBHB", 33, 255, 253, 0, 0),
            b"\0\0",
        )
    )


EOF_PACKET = b"\xfe\x00\x00\x02\x00"
OK_PACKET = b"\x00\x00\x00\x02\x00\x00\x00"


def err_packet(errno: int, message: str, sqlstate: str = "HY000") -> bytes:
    return b"\xff" + struct.pack("<H", errno) + b"#" + sqlstate.encode() + message.encode()


@dataclass
class FakePrimary:
    """Server side of one replication connection, scripted.

    Attributes:
        end: what follows the events: "eof", "err", "hold" (wait) or "close".
        ack_every: flag every n-th event for a semi-sync ACK (semi_sync only).
    """

    events: list[bytes] = field(default_factory=list)
    flavor: str = "mariadb"
    server_id: int = 1
    user: str = "repl"
    password: bytes = b"secret"
    auth: str = "mysql_native_password"
    checksum: str = "CRC32"
    semi_sync: bool = False
    ack_flags: set[int] | None = None
    end: str = "eof"
    err: tuple[int, str] = (1236, "Could not find first log file name in binary log index file")
    gtid_binlog_pos: str = "0-1-5"
    ssl_offered: bool = False
    #: More statements with a result set: SQL -> (column names, rows); a row of
    #: ``None`` alone ends the result set with an ERR there.
    results: dict[str, tuple[list[str], list[list[str | None] | None]]] = field(
        default_factory=dict
    )
    rng: random.Random = field(default_factory=lambda: random.Random(7))
    # observations
    queries: list[str] = field(default_factory=list)
    dump: bytes | None = None
    register: bytes | None = None
    acks: list[bytes] = field(default_factory=list)
    closed: bool = False
    authenticated: bool = False
    # internals
    _buf: bytearray = field(default_factory=bytearray)
    _seq: int = 0
    _stage: str = "handshake"
    _scramble: bytes = b""
    _parsec_salt: bytes = b""
    _rsa: rsa.RSAPrivateKey | None = None
    last_packets: list[bytes] = field(default_factory=list)
    #: When set, the dump serves this file from the requested position (else ``events``).
    binlog: BinlogBuilder | None = None

    # -- framing --------------------------------------------------------------------------

    def _packet(self, payload: bytes) -> bytes:
        out, self._seq = frame_payload(payload, self._seq)
        return out

    def greeting(self) -> bytes:
        self._scramble = bytes(self.rng.randrange(1, 128) for _ in range(20))
        version = (
            "5.5.5-10.11.19-MariaDB-log" if self.flavor == "mariadb" else "8.0.36"
        ).encode()
        caps = 0xF7FF | 0x000F_0000 | 0x0020_0000
        if not self.ssl_offered:
            caps &= ~0x800
        if self.flavor == "mariadb":
            caps &= ~1  # MariaDB: CLIENT_MYSQL off, extended caps in the filler
        plugin = b"caching_sha2_password" if self.auth == "caching_sha2_password" else (
            b"mysql_native_password"
        )
        payload = b"".join(
            (
                b"\x0a",
                version + b"\0",
                struct.pack("<I", 42),
                self._scramble[:8],
                b"\0",
                struct.pack("<HBHHB", caps & 0xFFFF, 45, 2, caps >> 16, 21),
                b"\0" * 6 + struct.pack("<I", 0x1D if self.flavor == "mariadb" else 0),
                self._scramble[8:] + b"\0",
                plugin + b"\0",
            )
        )
        self._seq = 0
        return self._packet(payload)

    def receive(self, data: bytes) -> bytes:
        """Feed client bytes; returns the server's answer bytes."""
        self._buf += data
        out: list[bytes] = []
        while len(self._buf) >= 4:
            n = self._buf[0] | self._buf[1] << 8 | self._buf[2] << 16
            if len(self._buf) < 4 + n:
                break
            seq = self._buf[3]
            payload = bytes(self._buf[4 : 4 + n])
            del self._buf[: 4 + n]
            assert n < MAX_CHUNK, "clients never send 16 MB packets here"
            self._seq = (seq + 1) & 0xFF
            out.append(self._handle(payload))
        return b"".join(out)

    # -- conversation ----------------------------------------------------------------------

    def _handle(self, p: bytes) -> bytes:
        if self._stage == "handshake":
            return self._on_handshake_response(p)
        if self._stage.startswith("auth"):
            return self._on_auth_data(p)
        if self._stage == "streaming":
            if p[:1] == b"\xef":
                self.acks.append(p)
                return b""
            raise AssertionError(f"unexpected packet while streaming: {p[:16]!r}")
        cmd = p[0]
        if cmd == 0x03:
            return self._on_query(p[1:].decode())
        if cmd == 0x15:
            self.register = p
            return self._packet(OK_PACKET)
        if cmd in (0x12, 0x1E):
            self.dump = p
            self._stage = "streaming"
            return self._stream()
        if cmd == 0x01:
            self.closed = True
            return b""
        raise AssertionError(f"unexpected command {cmd:#x}")

    def _on_handshake_response(self, p: bytes) -> bytes:
        caps = struct.unpack_from("<I", p)[0]
        if len(p) == 32 and caps & 0x800:
            self._stage = "handshake"  # SSLRequest; TLS is not emulated here
            raise AssertionError("TLS is not emulated by the fake primary")
        pos = 32
        end = p.index(b"\0", pos)
        user = p[pos:end].decode()
        pos = end + 1
        n = p[pos]
        response = p[pos + 1 : pos + 1 + n]
        if user != self.user:
            return self._packet(err_packet(1045, f"Access denied for user '{user}'", "28000"))
        if self.auth == "mysql_native_password":
            return self._check(response == scramble_native(self.password, self._scramble))
        if self.auth == "caching_sha2_password":
            self._stage = "auth_sha2"
            return self._packet(b"\x01\x04")  # perform full authentication
        # plugins reached by an auth switch
        nonce = bytes(self.rng.randrange(1, 256) for _ in range(32))
        self._scramble = nonce
        self._stage = "auth_" + self.auth
        return self._packet(b"\xfe" + self.auth.encode() + b"\0" + nonce + b"\0")

    def _check(self, ok: bool) -> bytes:
        if ok:
            self.authenticated = True
            self._stage = "commands"
            return self._packet(OK_PACKET)
        return self._packet(
            err_packet(1045, f"Access denied for user '{self.user}' (using password: YES)", "28000")
        )

    def _on_auth_data(self, p: bytes) -> bytes:
        if self._stage == "auth_client_ed25519":
            from nacl.bindings import crypto_scalarmult_ed25519_base_noclamp
            from nacl.exceptions import BadSignatureError
            from nacl.signing import VerifyKey

            h = hashlib.sha512(self.password).digest()
            s = bytearray(h[:32])
            s[0] &= 248
            s[31] = (s[31] & 127) | 64
            public = crypto_scalarmult_ed25519_base_noclamp(bytes(s))
            try:
                VerifyKey(public).verify(self._scramble, p)
            except BadSignatureError:
                return self._check(False)
            return self._check(True)
        if self._stage == "auth_parsec":
            if p == b"":
                self._parsec_salt = bytes(self.rng.randrange(256) for _ in range(18))
                return self._packet(b"\x01P\x00" + self._parsec_salt)
            seed = hashlib.pbkdf2_hmac("sha512", self.password, self._parsec_salt, 1024, 32)
            parsec_key = ed25519.Ed25519PrivateKey.from_private_bytes(seed).public_key()
            client_nonce, signature = p[:32], p[32:]
            try:
                parsec_key.verify(signature, self._scramble + client_nonce)
            except Exception:
                return self._check(False)
            return self._check(True)
        if self._stage == "auth_mysql_clear_password":
            return self._check(p == self.password + b"\0")
        if self._stage == "auth_sha2":
            if p == b"\x02":
                self._rsa = rsa.generate_private_key(public_exponent=65537, key_size=2048)
                pem = self._rsa.public_key().public_bytes(
                    serialization.Encoding.PEM, serialization.PublicFormat.SubjectPublicKeyInfo
                )
                return self._packet(b"\x01" + pem)
            assert self._rsa is not None
            plain = self._rsa.decrypt(
                p,
                padding.OAEP(
                    mgf=padding.MGF1(algorithm=hashes.SHA1()), algorithm=hashes.SHA1(), label=None
                ),
            )
            salt = self._scramble[:20]
            clear = bytes(b ^ salt[i % len(salt)] for i, b in enumerate(plain))
            return self._check(clear == self.password + b"\0")
        raise AssertionError(f"unexpected auth data in stage {self._stage}")

    def _result_set(self, names: list[str], rows: list[list[str | None] | None]) -> bytes:
        out = [self._packet(encode_lenenc_int(len(names)))]
        out += [self._packet(_column_def(n)) for n in names]
        out.append(self._packet(EOF_PACKET))
        for row in rows:
            if row is None:
                out.append(self._packet(err_packet(1317, "Query execution was interrupted")))
                return b"".join(out)
            out.append(
                self._packet(
                    b"".join(b"\xfb" if v is None else encode_lenenc_bytes(v.encode()) for v in row)
                )
            )
        out.append(self._packet(EOF_PACKET))
        return b"".join(out)

    def _on_query(self, sql: str) -> bytes:
        self.queries.append(sql)
        if sql.startswith("SET "):
            return self._packet(OK_PACKET)
        if sql in self.results:
            return self._result_set(*self.results[sql])
        if sql == "SELECT UNIX_TIMESTAMP()":
            return self._result_set(["UNIX_TIMESTAMP()"], [["1700000000"]])
        if sql == "SHOW VARIABLES LIKE 'SERVER_ID'":
            row: list[str | None] = ["server_id", str(self.server_id)]
            return self._result_set(["Variable_name", "Value"], [row])
        if sql == "SELECT @master_binlog_checksum":
            return self._result_set(["@master_binlog_checksum"], [[self.checksum]])
        if sql == "SELECT @@GLOBAL.gtid_domain_id":
            return self._result_set(["@@GLOBAL.gtid_domain_id"], [["0"]])
        if sql in ("SELECT @@GLOBAL.gtid_binlog_pos", "SELECT @@GLOBAL.gtid_executed"):
            return self._result_set([sql[7:]], [[self.gtid_binlog_pos]])
        if sql.startswith("SHOW VARIABLES LIKE 'rpl_semi_sync"):
            name = "rpl_semi_sync_master_enabled" if self.flavor == "mariadb" else (
                "rpl_semi_sync_source_enabled"
            )
            return self._result_set(
                ["Variable_name", "Value"], [[name, "ON" if self.semi_sync else "OFF"]]
            )
        return self._packet(err_packet(1064, f"unexpected query {sql!r}", "42000"))

    def event_packets(self) -> list[bytes]:
        """Framed packets of the dump (after the dump command was read)."""
        out = []
        for i, ev in enumerate(self.events):
            flagged = False
            if self.semi_sync:
                flagged = self.ack_flags is not None and i in self.ack_flags
                payload = b"\x00\xef" + (b"\x01" if flagged else b"\x00") + ev
            else:
                payload = b"\x00" + ev
            out.append(self._packet(payload))
            if flagged:
                self._seq = 1  # as MariaDB's flush_net: numbering restarts after a sync event
        if self.end == "eof":
            out.append(self._packet(EOF_PACKET))
        elif self.end == "err":
            out.append(self._packet(err_packet(self.err[0], self.err[1])))
        return out

    def _stream(self) -> bytes:
        if self.binlog is not None and self.dump is not None and self.dump[0] == 0x12:
            b = self.binlog
            pos = int.from_bytes(self.dump[1:5], "little")
            name = self.dump[11:].decode() or b.file
            assert name == b.file, f"fake primary has only {b.file}, asked for {name}"
            self.events = [fake_rotate(name, pos, crc=b.crc)]
            if pos > 4:  # the FDE is re-sent with log_pos 0
                fde = b.events[0]
                self.events.append(build_event(15, fde[19:-4], log_pos=0, crc=True))
            pairs = zip(b.events, b.starts, strict=True)
            self.events += [ev for ev, start in pairs if start >= pos]
        self.last_packets = self.event_packets()
        return b"".join(self.last_packets)


@dataclass
class FakeServer:
    """An asyncio TCP server that runs one :class:`FakePrimary` per connection."""

    make: Callable[[int], FakePrimary]
    split: bool = True
    seed: int = 1
    close_after_events: dict[int, int] = field(default_factory=dict)
    primaries: list[FakePrimary] = field(default_factory=list)
    server: asyncio.Server | None = None

    @property
    def port(self) -> int:
        assert self.server is not None
        return int(self.server.sockets[0].getsockname()[1])

    async def _write(self, writer: asyncio.StreamWriter, data: bytes, rng: random.Random) -> None:
        if not self.split or len(data) < 2:
            writer.write(data)
            await writer.drain()
            return
        pos = 0
        while pos < len(data):
            n = rng.randrange(1, max(2, min(len(data) - pos, 4096) + 1))
            if len(data) - pos > 1 << 20:
                n = max(n, 1 << 18)  # keep multi-MB payloads fast
            writer.write(data[pos : pos + n])
            pos += n
            if rng.random() < 0.3:
                await writer.drain()
                await asyncio.sleep(0)

    async def _handle(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        index = len(self.primaries)
        primary = self.make(index)
        self.primaries.append(primary)
        rng = random.Random(self.seed + index)
        try:
            await self._write(writer, primary.greeting(), rng)
            while True:
                data = await reader.read(65536)
                if not data:
                    break
                if primary._stage == "streaming":
                    primary.receive(data)  # ACKs
                    continue
                out = primary.receive(data)
                limit = self.close_after_events.get(index)
                if primary._stage == "streaming" and limit is not None:
                    await self._write(writer, b"".join(primary.last_packets[:limit]), rng)
                    await writer.drain()
                    writer.transport.abort()
                    return
                await self._write(writer, out, rng)
                await writer.drain()
                if primary._stage == "streaming" and primary.end == "close":
                    return
        except (ConnectionError, OSError):
            pass
        finally:
            writer.close()


async def serve(
    make: Callable[[int], FakePrimary],
    *,
    split: bool = True,
    close_after_events: dict[int, int] | None = None,
) -> FakeServer:
    fs = FakeServer(make, split=split, close_after_events=close_after_events or {})
    fs.server = await asyncio.start_server(fs._handle, "127.0.0.1", 0)
    return fs
