"""ReplicaSession against the scripted fake primary, sans I/O.

Every conversation is fed whole, byte by byte and at random split points; the
items (events, positions, checkpoints, ACK flags) must not depend on how the
bytes were cut.
"""

from __future__ import annotations

import contextlib
import random
from collections import deque
from collections.abc import Callable

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from replica_client.binlog.events import (
    FormatDescriptionEvent,
    GtidEvent,
    QueryEvent,
    RotateEvent,
    XidEvent,
)
from replica_client.errors import (
    AuthenticationError,
    BinlogPositionError,
    ConfigError,
    MalformedEventError,
    ProtocolError,
    ReplicaError,
    StateError,
    UnsupportedError,
)
from replica_client.position import FilePos, Gtid
from replica_client.session import END, NEED_DATA, ReplicaSession, StreamItem
from replica_client.wire.registration import RegistrationSettings
from tests.fake_primary import BinlogBuilder, FakePrimary, build_event, fake_rotate

__all__: list[str] = []

GTID, QUERY, XID = 162, 2, 16

Chunker = Callable[[bytes], list[bytes]]


def whole(data: bytes) -> list[bytes]:
    return [data] if data else []


def byte_by_byte(data: bytes) -> list[bytes]:
    return [data[i : i + 1] for i in range(len(data))]


def random_split(seed: int) -> Chunker:
    def split(data: bytes) -> list[bytes]:
        rng = random.Random(seed + len(data))
        out, pos = [], 0
        while pos < len(data):
            n = rng.randrange(1, 64)
            out.append(data[pos : pos + n])
            pos += n
        return out

    return split


CHUNKERS = [whole, byte_by_byte, random_split(1), random_split(2)]
IDS = ["whole", "bytes", "split1", "split2"]


def run(
    primary: FakePrimary,
    settings: RegistrationSettings,
    chunk: Chunker = whole,
    *,
    ack: bool = True,
    **kwargs: object,
) -> tuple[ReplicaSession, list[StreamItem]]:
    """Drive a session against ``primary`` until END or nothing is left to do."""
    session = ReplicaSession(settings, random_bytes=lambda n: b"\x11" * n, **kwargs)  # type: ignore[arg-type]
    items: list[StreamItem] = []
    incoming = primary.greeting()
    while True:
        for piece in chunk(incoming):
            session.receive_data(piece)
            while True:
                item = session.next_item()
                if item is NEED_DATA:
                    break
                if item is END:
                    primary.receive(session.data_to_send())
                    return session, items
                items.append(item)
                if ack and item.needs_ack:
                    session.ack(item)
        out = session.data_to_send()
        if not out:
            return session, items
        incoming = primary.receive(out)


def _stream(crc: bool = True, zero_log_pos: bool = False) -> tuple[BinlogBuilder, list[bytes]]:
    b = BinlogBuilder(crc=crc, zero_log_pos_in_trx=zero_log_pos)
    b.fde()
    b.gtid_list([(0, 1, 4)])
    b.transaction(5)
    b.ddl(6)
    b.transaction(7)
    b.rotate("mysql-bin.000002")
    return b, [fake_rotate("mysql-bin.000001", crc=crc), *b.events]


SETTINGS = RegistrationSettings(user="repl", password=b"secret", server_id=42, blocking=False)


@pytest.mark.parametrize("chunk", CHUNKERS, ids=IDS)
def test_stream_positions_and_checkpoints(chunk: Chunker) -> None:
    b, events = _stream()
    primary = FakePrimary(events=events)
    session, items = run(primary, SETTINGS, chunk)
    kinds = [type(i.event).__name__ for i in items]
    assert kinds[:3] == ["RotateEvent", "FormatDescriptionEvent", "GtidListEvent"]
    assert isinstance(items[0].event, RotateEvent) and items[0].event.artificial
    # event starts match the layout
    assert [i.start for i in items[1:]] == b.starts
    # checkpoints only at transaction boundaries
    cps = [(type(i.event).__name__, i.checkpoint) for i in items if i.checkpoint is not None]
    names = [n for n, _ in cps]
    assert names == [
        "RotateEvent",
        "FormatDescriptionEvent",
        "GtidListEvent",
        "XidEvent",
        "QueryEvent",
        "XidEvent",
        "RotateEvent",
    ]
    xid5 = cps[3][1]
    assert xid5 is not None
    assert xid5.gtid_state == Gtid("0-1-5")
    assert xid5.position == FilePos("mysql-bin.000001", b.starts[5])
    assert cps[4][1] is not None and cps[4][1].gtid_state == Gtid("0-1-6")
    last = cps[-1][1]
    assert last is not None
    assert last.position == FilePos("mysql-bin.000002", 4)
    assert last.gtid_state == Gtid("0-1-7")
    assert session.gtid_state == Gtid("0-1-7")
    # the dump asked for the first binlog, with ANNOTATE_ROWS and non-blocking flags
    assert primary.dump is not None
    assert primary.dump[5:7] == b"\x03\x00"
    assert primary.dump[11:] == b""


@pytest.mark.parametrize("chunk", CHUNKERS, ids=IDS)
def test_zero_log_pos_inside_transactions(chunk: Chunker) -> None:
    b, events = _stream(zero_log_pos=True)
    _, items = run(FakePrimary(events=events), SETTINGS, chunk)
    assert [i.start for i in items[1:]] == b.starts
    assert [i.end for i in items[1:]] == [*b.starts[1:], b.pos]


def test_registration_queries_mariadb() -> None:
    _, events = _stream()
    primary = FakePrimary(events=events)
    settings = RegistrationSettings(
        user="repl",
        password=b"secret",
        server_id=42,
        start=Gtid("0-1-3,1-2-9"),
        heartbeat_period=1.5,
        gtid_strict_mode=True,
        gtid_ignore_duplicates=False,
    )
    run(primary, settings)
    assert primary.queries == [
        "SELECT UNIX_TIMESTAMP()",
        "SHOW VARIABLES LIKE 'SERVER_ID'",
        "SET @master_heartbeat_period=1500000000",
        "SET @master_binlog_checksum=@@global.binlog_checksum",
        "SELECT @master_binlog_checksum",
        "SET @mariadb_slave_capability=4",
        "SELECT @@GLOBAL.gtid_domain_id",
        "SET @slave_connect_state='0-1-3,1-2-9'",
        "SET @slave_gtid_strict_mode=1",
        "SET @slave_gtid_ignore_duplicates=0",
    ]
    assert primary.register is not None and primary.register[1:5] == (42).to_bytes(4, "little")
    # GTID start: COM_BINLOG_DUMP with empty name and position 4, blocking
    assert primary.dump == b"\x12\x04\x00\x00\x00\x02\x00" + (42).to_bytes(4, "little")


def test_start_now_resolves_gtid_in_band() -> None:
    _, events = _stream()
    primary = FakePrimary(events=events, gtid_binlog_pos="0-1-77")
    settings = RegistrationSettings(user="repl", password=b"secret", server_id=42, start="now")
    session, _ = run(primary, settings)
    assert "SET @slave_connect_state='0-1-77'" in primary.queries
    assert session.machine.start == Gtid("0-1-77")


def test_file_position_start() -> None:
    _, events = _stream()
    primary = FakePrimary(events=events)
    settings = RegistrationSettings(
        user="repl", password=b"secret", server_id=42, start=FilePos("mysql-bin.000007", 1234)
    )
    run(primary, settings)
    assert primary.dump is not None
    assert primary.dump[1:5] == (1234).to_bytes(4, "little")
    assert primary.dump[11:] == b"mysql-bin.000007"
    assert not any("slave_connect_state" in q for q in primary.queries)


@pytest.mark.parametrize("chunk", CHUNKERS, ids=IDS)
def test_semi_sync_flags_and_acks(chunk: Chunker) -> None:
    _, events = _stream()
    xids = {i for i, ev in enumerate(events) if ev[4] == 16}
    primary = FakePrimary(events=events, semi_sync=True, ack_flags=xids)
    settings = RegistrationSettings(user="repl", password=b"secret", server_id=42, semi_sync="auto")
    session, items = run(primary, settings, chunk)
    assert session.semi_sync
    assert "SET @rpl_semi_sync_slave=1" in primary.queries
    flagged = [i for i in items if i.needs_ack]
    assert [type(i.event) for i in flagged] == [XidEvent, XidEvent]
    assert len(primary.acks) == 2
    for item, raw in zip(flagged, primary.acks, strict=True):
        assert raw[0] == 0xEF
        assert int.from_bytes(raw[1:9], "little") == item.end == item.event.log_pos  # type: ignore[union-attr]
        assert raw[9:] == b"mysql-bin.000001"


SEMI_SYNC = RegistrationSettings(user="repl", password=b"secret", server_id=42, semi_sync="on")


def _semi_primary(events: list[bytes]) -> FakePrimary:
    xids = {i for i, ev in enumerate(events) if ev[4] == XID}
    return FakePrimary(events=events, semi_sync=True, ack_flags=xids)


def _receipt_run(
    primary: FakePrimary, split_after: int | None
) -> tuple[list[StreamItem], list[int]]:
    """A receipt-mode session driven as the asyncio driver drives it: frame, send, decode.

    The event stream arrives whole, or in two pieces cut after packet
    ``split_after``. Returns the items and, per flagged item, how many ACKs the
    primary had received before that item was decoded.
    """
    session = ReplicaSession(SEMI_SYNC, random_bytes=lambda n: b"\x11" * n, ack_on_receipt=True)
    items: list[StreamItem] = []
    acked_before: list[int] = []
    incoming = primary.greeting()
    while incoming:
        pieces = [incoming]
        if split_after is not None and incoming == b"".join(primary.last_packets):
            cut = len(b"".join(primary.last_packets[: split_after + 1]))
            pieces = [incoming[:cut], incoming[cut:]]
        replies = b""
        for piece in pieces:
            session.receive_data(piece)
            if session.streaming:
                session.frame_ahead(1024)
                replies += primary.receive(session.data_to_send())  # the ACKs go out first
            while (item := session.next_item()) is not NEED_DATA and item is not END:
                assert isinstance(item, StreamItem)
                if item.needs_ack:
                    acked_before.append(len(primary.acks))
                items.append(item)
        incoming = replies + primary.receive(session.data_to_send())
    return items, acked_before


def _acks(primary: FakePrimary) -> list[tuple[str, int]]:
    return [(raw[9:].decode(), int.from_bytes(raw[1:9], "little")) for raw in primary.acks]


def test_receipt_acks_a_received_transaction_before_decoding_it() -> None:
    # packets: fake ROTATE, FDE, GTID_LIST, GTID 5 | QUERY, XID, GTID 6, QUERY, GTID 7, ...
    _, events = _stream()
    primary = _semi_primary(events)
    items, acked_before = _receipt_run(primary, split_after=3)
    flagged = [i for i in items if i.needs_ack]
    assert _acks(primary) == [(i.file, i.end) for i in flagged]
    assert [i.file for i in flagged] == ["mysql-bin.000001"] * 2
    assert acked_before == [2, 2]  # both ACKs went out before the first XID was decoded
    # the whole stream in one piece starts before the file is known: ACKed when decoded
    primary = _semi_primary(events)
    items, acked_before = _receipt_run(primary, split_after=None)
    assert _acks(primary) == [(i.file, i.end) for i in items if i.needs_ack]
    assert acked_before == [0, 0]


def test_receipt_acks_after_a_rotate_when_decoded_with_the_new_file() -> None:
    _, events = _stream()  # ends with a ROTATE to mysql-bin.000002
    second = BinlogBuilder(file="mysql-bin.000002")
    second.fde()
    second.transaction(8)
    primary = _semi_primary(events + second.events)
    items, acked_before = _receipt_run(primary, split_after=3)
    flagged = [i for i in items if i.needs_ack]
    assert [i.file for i in flagged] == ["mysql-bin.000001"] * 2 + ["mysql-bin.000002"]
    assert _acks(primary) == [(i.file, i.end) for i in flagged]
    assert acked_before == [2, 2, 2]  # the XID after the ROTATE: ACKed when decoded
    assert flagged[2].end == second.starts[-1] + len(second.events[-1])


def test_receipt_acks_nothing_received_with_a_bad_checksum() -> None:
    _, events = _stream()
    query = bytearray(events[4])  # the QUERY of transaction 5, before its XID
    query[-6] ^= 0x01  # a byte of the statement: the CRC no longer holds
    events[4] = bytes(query)
    primary = _semi_primary(events)
    with pytest.raises(MalformedEventError):
        _receipt_run(primary, split_after=3)  # received with its XID, decoded after
    assert primary.acks == []


def test_ack_of_unflagged_event_refused() -> None:
    _, events = _stream()
    primary = FakePrimary(events=events, semi_sync=True, ack_flags=set())
    settings = RegistrationSettings(user="repl", password=b"secret", server_id=42, semi_sync="on")
    session, items = run(primary, settings)
    assert items and not any(i.needs_ack for i in items)
    with pytest.raises(StateError):
        session.ack(items[-1])
    assert primary.acks == []


def test_semi_sync_on_but_primary_off() -> None:
    primary = FakePrimary(events=[], semi_sync=False)
    settings = RegistrationSettings(user="repl", password=b"secret", server_id=42, semi_sync="on")
    with pytest.raises(UnsupportedError, match="rpl_semi_sync_master_enabled"):
        run(primary, settings)


def test_semi_sync_auto_not_negotiated_when_off() -> None:
    _, events = _stream()
    primary = FakePrimary(events=events, semi_sync=False)
    settings = RegistrationSettings(user="repl", password=b"secret", server_id=42, semi_sync="auto")
    session, items = run(primary, settings)
    assert not session.semi_sync
    assert "SET @rpl_semi_sync_slave=1" not in primary.queries
    assert len(items) == len(events)


@pytest.mark.parametrize("chunk", CHUNKERS, ids=IDS)
def test_err_mid_stream_is_typed(chunk: Chunker) -> None:
    _, events = _stream()
    primary = FakePrimary(events=events[:4], end="err")
    with pytest.raises(BinlogPositionError, match="Could not find first log"):
        run(primary, SETTINGS, chunk)


def test_wrong_password() -> None:
    primary = FakePrimary(password=b"other")
    with pytest.raises(AuthenticationError) as info:
        run(primary, SETTINGS)
    assert "secret" not in str(info.value)
    assert info.value.errno == 1045


def test_primary_server_id_refused() -> None:
    primary = FakePrimary(server_id=42)
    with pytest.raises(ConfigError, match="primary's own server_id"):
        run(primary, SETTINGS)


def test_resume_skips_already_delivered_events() -> None:
    b, events = _stream()
    # resume at the checkpoint before transaction 7, two of its events delivered
    start = FilePos("mysql-bin.000001", b.starts[7])
    tail = events[8:]
    primary = FakePrimary(events=[fake_rotate(start.file, start.pos), *tail])
    settings = RegistrationSettings(user="repl", password=b"secret", server_id=42, start=start)
    _, items = run(
        primary,
        settings,
        gtid_state=Gtid("0-1-6"),
        resume_skip=(GTID, QUERY),
        resume_gtid="0-1-7",
    )
    assert [i.skipped for i in items] == [False, True, True, False, False]
    assert isinstance(items[1].event, GtidEvent)
    assert isinstance(items[2].event, QueryEvent)
    assert items[3].checkpoint is not None
    assert items[3].checkpoint.gtid_state == Gtid("0-1-7")
    assert not items[1].for_consumer


@pytest.mark.parametrize(
    ("skip", "gtid", "message"),
    [
        ((GTID, QUERY), "0-1-8", "re-sent transaction 0-1-7 where 0-1-8 was expected"),
        ((GTID, XID), "0-1-7", "event 2 of the interrupted transaction 0-1-7 is a QUERY_EVENT"),
    ],
)
def test_resume_refuses_a_different_transaction(
    skip: tuple[int, ...], gtid: str, message: str
) -> None:
    # The re-sent events must be the delivered ones: same GTID, same types in order.
    b, events = _stream()
    start = FilePos("mysql-bin.000001", b.starts[7])
    primary = FakePrimary(events=[fake_rotate(start.file, start.pos), *events[8:]])
    settings = RegistrationSettings(user="repl", password=b"secret", server_id=42, start=start)
    with pytest.raises(ProtocolError, match=message):
        run(primary, settings, gtid_state=Gtid("0-1-6"), resume_skip=skip, resume_gtid=gtid)


def test_event_type_filter() -> None:
    _, events = _stream()
    _, items = run(FakePrimary(events=events), SETTINGS, event_types=(XidEvent, RotateEvent))
    wanted = [type(i.event) for i in items if i.for_consumer]
    assert wanted == [RotateEvent, XidEvent, XidEvent, RotateEvent]
    # filtered events still move the checkpoints
    assert any(i.checkpoint is not None and not i.deliver for i in items)


def test_no_checksum_stream() -> None:
    b, events = _stream(crc=False)
    _, items = run(FakePrimary(events=events, checksum="NONE"), SETTINGS)
    assert isinstance(items[1].event, FormatDescriptionEvent)
    assert [i.start for i in items[1:]] == b.starts


def run_ahead(
    primary: FakePrimary, settings: RegistrationSettings, batch: int, **kwargs: object
) -> list[StreamItem]:
    """``run``, driven as the asyncio driver drives a stream: events framed ahead,
    then ``next_items`` ``batch`` at a time."""
    session = ReplicaSession(settings, random_bytes=lambda n: b"\x11" * n, **kwargs)  # type: ignore[arg-type]
    items: deque[StreamItem] = deque()
    incoming = primary.greeting()
    while incoming:
        session.receive_data(incoming)
        while True:
            if session.streaming:
                session.frame_ahead(1024)
            before = len(items)
            session.next_items(items, batch)
            if len(items) == before:
                break
        incoming = primary.receive(session.data_to_send())
    return list(items)


_START_GTID = RegistrationSettings(
    user="repl", password=b"secret", server_id=42, blocking=False, start=Gtid("0-1-4")
)


@pytest.mark.parametrize("batch", [1, 3, 32])
@pytest.mark.parametrize(
    "case", ["plain", "types", "raw", "zero_log_pos", "no_checksum", "gtid_start", "resume"]
)
def test_next_items_are_the_items_of_next_item(
    case: str, batch: int, monkeypatch: pytest.MonkeyPatch
) -> None:
    b, events = _stream(crc=case != "no_checksum", zero_log_pos=case == "zero_log_pos")
    settings, kwargs = SETTINGS, dict[str, object]()
    if case == "types":
        kwargs = {"event_types": (XidEvent, RotateEvent)}
    elif case == "raw":
        kwargs = {"keep_raw": True}
    elif case == "gtid_start":
        settings = _START_GTID
    elif case == "resume":  # the general path: skipping what was delivered before
        start = FilePos("mysql-bin.000001", b.starts[7])
        events = [fake_rotate(start.file, start.pos), *events[8:]]
        settings = RegistrationSettings(user="repl", password=b"secret", server_id=42, start=start)
        kwargs = {"gtid_state": Gtid("0-1-6"), "resume_skip": (GTID, QUERY)}

    def primary() -> FakePrimary:
        return FakePrimary(events=events, checksum="NONE" if case == "no_checksum" else "CRC32")

    _, one_by_one = run(primary(), settings, whole, ack=True, **kwargs)
    plain = ReplicaSession._decode_plain
    loops: list[int] = []  # the items each run of the one loop decoded

    def counted(self: ReplicaSession, out: deque[StreamItem], limit: int) -> int:
        before = len(out)
        size = plain(self, out, limit)
        loops.append(len(out) - before)
        return size

    monkeypatch.setattr(ReplicaSession, "_decode_plain", counted)
    ahead = run_ahead(primary(), settings, batch, **kwargs)
    # every event after the first takes the one loop; a GTID start's after the
    # file's own GTID_LIST (here the requested 0-1-4) says where it begins, a
    # resumed one's after the two re-sent events it skips
    assert sum(loops) == {"gtid_start": 9, "resume": 2}.get(case, len(one_by_one) - 1)
    if case == "gtid_start":
        assert any(i.checkpoint is not None for i in one_by_one)
    assert len(one_by_one) >= 5
    assert ahead == one_by_one
    assert all(i.raw is not None for i in ahead) == (case == "raw")
    assert [i.checkpoint for i in ahead] == [i.checkpoint for i in one_by_one]


@settings(max_examples=200, deadline=None)
@given(
    body=st.binary(max_size=120),
    type_code=st.sampled_from([2, 4, 15, 16, 19, 27, 162, 163]),
    ahead=st.booleans(),
)
def test_garbage_events_raise_replica_errors_only(body: bytes, type_code: int, ahead: bool) -> None:
    events = [fake_rotate("mysql-bin.000001"), build_event(type_code, body, log_pos=500)]
    with contextlib.suppress(ReplicaError):
        if ahead:
            run_ahead(FakePrimary(events=events), SETTINGS, 32)
        else:
            run(FakePrimary(events=events), SETTINGS)
