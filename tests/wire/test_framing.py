"""Packet framing: split/reassemble round trips around 0xFFFFFF, sequence ids, limits.

Every receive path is fed whole, byte by byte and at random split points.
"""

from __future__ import annotations

import random

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from replica_client.errors import PacketSequenceError, PacketTooLargeError
from replica_client.wire import framing
from replica_client.wire.framing import MAX_CHUNK, PacketFramer, frame_payload

__all__: list[str] = []


def _encode(payloads: list[bytes], seq: int = 0) -> bytes:
    out = []
    for p in payloads:
        framed, seq = frame_payload(p, seq)
        out.append(framed)
    return b"".join(out)


def _feed(framer: PacketFramer, data: bytes, cuts: list[int]) -> list[bytes]:
    got: list[bytes] = []
    prev = 0
    for cut in [*sorted(cuts), len(data)]:
        framer.receive_data(data[prev:cut])
        prev = cut
        while (p := framer.next_packet()) is not None:
            got.append(p)
    return got


def test_small_packet_layout() -> None:
    framed, nxt = frame_payload(b"abc", 7)
    assert framed == b"\x03\x00\x00\x07abc"
    assert nxt == 8


def test_exact_max_chunk_ends_with_empty_chunk() -> None:
    framed, nxt = frame_payload(b"x" * MAX_CHUNK, 0)
    assert len(framed) == MAX_CHUNK + 8
    assert framed[-4:] == b"\x00\x00\x00\x01"
    assert nxt == 2


@pytest.mark.parametrize(
    "size", [0, 1, MAX_CHUNK - 1, MAX_CHUNK, MAX_CHUNK + 1, 2 * MAX_CHUNK, 40 * 1024 * 1024]
)
def test_large_round_trip(size: int) -> None:
    payload = bytes(random.Random(size).getrandbits(8) for _ in range(64)) * (size // 64) + (
        b"z" * (size % 64)
    )
    data = _encode([payload, b"after"])
    framer = PacketFramer()
    rng = random.Random(size)
    cuts = [rng.randrange(len(data)) for _ in range(20)]
    got = _feed(framer, data, cuts)
    assert got == [payload, b"after"]
    assert framer.buffered == 0


@settings(max_examples=200, deadline=None)
@given(
    sizes=st.lists(st.integers(min_value=0, max_value=600), min_size=1, max_size=8),
    seed=st.integers(min_value=0, max_value=2**32),
)
def test_random_split_points(sizes: list[int], seed: int) -> None:
    rng = random.Random(seed)
    payloads = [rng.randbytes(n) for n in sizes]
    data = _encode(payloads)
    cuts = [rng.randrange(len(data) + 1) for _ in range(rng.randrange(10))]
    assert _feed(PacketFramer(), data, cuts) == payloads


def test_byte_by_byte() -> None:
    payloads = [b"", b"a", b"hello" * 100]
    data = _encode(payloads)
    assert _feed(PacketFramer(), data, list(range(len(data)))) == payloads


@settings(max_examples=30, deadline=None)
@given(delta=st.integers(min_value=-3, max_value=3), extra=st.integers(min_value=0, max_value=2))
def test_round_trip_around_max_chunk(delta: int, extra: int) -> None:
    size = extra * MAX_CHUNK + MAX_CHUNK + delta
    payload = b"\xab" * size
    data = _encode([payload, b"x"])
    rng = random.Random(size)
    got = _feed(PacketFramer(), data, [rng.randrange(len(data)) for _ in range(5)])
    assert len(got) == 2
    assert got[0] == payload
    assert got[1] == b"x"


def test_sequence_wraps_modulo_256() -> None:
    payloads = [bytes([i % 256]) for i in range(300)]
    assert _feed(PacketFramer(), _encode(payloads), []) == payloads


def test_wrong_sequence_raises() -> None:
    framer = PacketFramer()
    framer.receive_data(frame_payload(b"x", 1)[0])
    with pytest.raises(PacketSequenceError) as info:
        framer.next_packet()
    assert info.value.expected == 0
    assert info.value.received == 1


def test_too_large_refused_before_body_arrives() -> None:
    framer = PacketFramer(max_payload=100)
    framer.receive_data(b"\x65\x00\x00\x00")  # announces 101 bytes
    with pytest.raises(PacketTooLargeError):
        framer.next_packet()


def test_too_large_multi_chunk() -> None:
    framer = PacketFramer(max_payload=MAX_CHUNK + 10)
    data = _encode([b"y" * (MAX_CHUNK + 11)])
    framer.receive_data(data)
    with pytest.raises(PacketTooLargeError):
        framer.next_packet()


def test_command_and_reply_share_the_sequence() -> None:
    framer = PacketFramer()
    assert framer.command(b"q")[3] == 0
    framer.receive_data(frame_payload(b"r", 1)[0])
    assert framer.next_packet() == b"r"
    assert framer.reply(b"s")[3] == 2


def _outcome(data: bytes, cuts: list[int], max_payload: int) -> list[object]:
    # payloads, then the error if any, then the bytes left: packet by packet
    return _stream_outcome(data, cuts, max_payload, semi_sync=False, batch=False)


@settings(max_examples=300, deadline=None)
@given(
    st.lists(st.integers(0, 300), max_size=8),
    st.lists(st.integers(0, 3000), max_size=6),
    st.integers(0, 400),
    st.integers(-1, 7),
)
def test_compiled_fast_path_matches_pure(
    sizes: list[int], cuts: list[int], max_payload: int, bad_seq_at: int
) -> None:
    # The accelerator's frame_packet (when built) and the pure-Python path give
    # the same payloads, errors and leftovers; without the accelerator both
    # runs take the pure path. Also run whole with REPLICA_CLIENT_PURE_PYTHON=1.
    payloads = [bytes([i % 256]) * n for i, n in enumerate(sizes)]
    data = bytearray(_encode(payloads))
    if 0 <= bad_seq_at < len(payloads):
        offset = sum(4 + len(p) for p in payloads[:bad_seq_at])
        data[offset + 3] ^= 0x10
    cuts = [c for c in cuts if c < len(data)]
    compiled = _outcome(bytes(data), cuts, max_payload)
    saved = framing._frame_packet
    try:
        framing._frame_packet = None  # type: ignore[misc]
        pure = _outcome(bytes(data), cuts, max_payload)
    finally:
        framing._frame_packet = saved  # type: ignore[misc]
    assert compiled == pure


def _drain(
    framer: PacketFramer, semi_sync: bool, batch: bool, limit: int = 1 << 30
) -> list[object]:
    # What a binlog-stream reader takes: event payloads in order; after an event
    # that asks for a semi-sync ACK the primary may restart at id 1.
    got: list[object] = []
    while True:
        taken = framer.next_events(semi_sync, limit) if batch else []
        if not taken:
            p = framer.next_packet()
            if p is None:
                return got
            taken = [p]
        for p in taken:
            got.append(p)
            if semi_sync and len(p) >= 3 and p[0] == 0 and p[1] == 0xEF and p[2] & 1:
                framer.allow_reset(1)


def _stream_outcome(
    data: bytes,
    cuts: list[int],
    max_payload: int,
    semi_sync: bool,
    batch: bool,
    limit: int = 1 << 30,
) -> list[object]:
    framer = PacketFramer(max_payload=max_payload)
    got: list[object] = []
    prev = 0
    try:
        for cut in [*sorted(cuts), len(data)]:
            framer.receive_data(data[prev:cut])
            prev = cut
            got.extend(_drain(framer, semi_sync, batch, limit))
    except (PacketSequenceError, PacketTooLargeError) as exc:
        got.append((type(exc).__name__, str(exc)))
    got.append(framer.buffered)
    return got


_PACKET = st.tuples(
    st.sampled_from(["event", "event", "event", "flagged", "eof", "err", "empty"]),
    st.integers(0, 200),
    st.booleans(),  # restart at sequence id 1 after this packet (only honoured after "flagged")
)


@settings(max_examples=400, deadline=None)
@given(
    st.lists(_PACKET, max_size=12),
    st.lists(st.integers(0, 3000), max_size=6),
    st.integers(0, 300),
    st.booleans(),
    st.integers(-1, 11),
    st.integers(1, 5),
)
def test_event_batches_match_packet_by_packet(
    packets: list[tuple[str, int, bool]],
    cuts: list[int],
    max_payload: int,
    semi_sync: bool,
    bad_seq_at: int,
    limit: int,
) -> None:
    # next_events (batch framing, in the accelerator when built) followed by
    # next_packet gives the same payloads, errors and leftovers as next_packet
    # alone; and the accelerator's loop takes what the Python loop takes.
    chunks: list[bytes] = []
    seq = 0
    for i, (kind, size, restart) in enumerate(packets):
        body = bytes([i % 256]) * size
        payload = {
            "event": b"\x00\xef\x00" + body if semi_sync else b"\x00" + body,
            "flagged": b"\x00\xef\x01" + body,
            "eof": b"\xfe\x00\x00\x02\x00",
            "err": b"\xff\x10\x04#HY000boom",
            "empty": b"",
        }[kind]
        framed, seq = frame_payload(payload, seq)
        if i == bad_seq_at:
            framed = framed[:3] + bytes([framed[3] ^ 0x20]) + framed[4:]
        chunks.append(framed)
        if kind == "flagged" and semi_sync and restart:
            seq = 1
    data = b"".join(chunks)
    cuts = [c for c in cuts if c < len(data)]
    batched = _stream_outcome(data, cuts, max_payload, semi_sync, batch=True, limit=limit)
    single = _stream_outcome(data, cuts, max_payload, semi_sync, batch=False)
    assert batched == single
    buf = bytearray(data)
    for pos in {0, *(c for c in cuts)}:
        for seq in (0, 1, 5):
            for rows in (False, True):
                args = (buf, pos, seq, max_payload, semi_sync and not rows, limit, rows)
                assert framing._frame_events(*args) == framing._frame_events_py(*args)


def test_event_batches_take_runs_of_events() -> None:
    # One call takes the whole event packets buffered, up to the limit.
    framer = PacketFramer()
    framer.receive_data(_encode([b"\x00a", b"\x00bb", b"\x00ccc", b"\xfe\x00\x00\x02\x00"]))
    assert framer.next_events(False, 2) == [b"\x00a", b"\x00bb"]
    assert framer.next_events(False, 0) == []
    assert framer.next_events(False, 9) == [b"\x00ccc"]
    assert framer.next_events(False, 9) == []  # the EOF is next_packet's
    assert framer.next_packet() == b"\xfe\x00\x00\x02\x00"


def test_event_batches_take_the_reset_id_after_an_event_to_ack() -> None:
    # After an event that asks for a semi-sync ACK the primary restarts its ids
    # at 1; once allowed (allow_reset), one batch call takes that run too.
    first, seq = frame_payload(b"\x00\xef\x00a", 0)
    flagged, seq = frame_payload(b"\x00\xef\x01b", seq)
    restarted, _ = frame_payload(b"\x00\xef\x00c", 1)
    more, _ = frame_payload(b"\x00\xef\x00d", 2)
    framer = PacketFramer()
    framer.receive_data(first + flagged + restarted + more)
    assert framer.next_events(True, 9) == [b"\x00\xef\x00a", b"\x00\xef\x01b"]
    assert framer.next_events(True, 9) == []  # id 1 where 2 is expected: not without the reset
    framer.allow_reset(1)
    assert framer.next_events(True, 9) == [b"\x00\xef\x00c", b"\x00\xef\x00d"]
    assert framer.buffered == 0


def test_row_batches_stop_at_the_end_of_the_result_set() -> None:
    # A text result set's rows: any packet but EOF (0xFE, under 9 bytes) or ERR.
    rows = [b"\x011\x03abc", b"\xfb\x00", b"\xfe" + bytes(9), b"\x00"]
    framer = PacketFramer()
    framer.receive_data(_encode([*rows, b"\xfe\x00\x00\x02\x00", b"\x011"]))
    assert framer.next_rows(3) == rows[:3]  # (0xFE and 10 bytes: a row)
    assert framer.next_rows(9) == [rows[3]]
    assert framer.next_rows(9) == []  # the EOF packet is next_packet's
    assert framer.next_packet() == b"\xfe\x00\x00\x02\x00"
    err = PacketFramer()
    err.receive_data(_encode([b"\x011", b"\xff\x10\x04#HY000boom"]))
    assert err.next_rows(9) == [b"\x011"]
    assert err.next_rows(9) == []
    assert err.next_packet() == b"\xff\x10\x04#HY000boom"
