"""The compiled accelerator decodes row images exactly as the pure-Python path.

Differential property test: random tables drawn from every column layout the
accelerator decodes itself (and some it hands to the Python readers), random
presence bitmaps and random bytes; both paths must give the same rows (same
types, same values, MISSING/None in the same places) and the same end
position, or both must raise the same error (exception class and message).
The whole decoder suite also runs once per path (``scripts/test.sh``,
``REPLICA_CLIENT_PURE_PYTHON=1``).

The accelerator's other two pieces are held to their pure-Python equivalents
as well: ``event_head`` (the header, size and CRC32 check at the start of
``EventDecoder.decode``) against ``struct`` + ``zlib.crc32`` on real and
synthetic events, and ``Maker`` (``accel.constructor``) against the
dataclass's own ``__init__``.
"""

from __future__ import annotations

import copy
import dataclasses
import gc
import pickle
import platform
import random
import struct
import sys
import weakref
import zlib
from collections.abc import Callable, Iterator
from decimal import Decimal
from functools import partial
from pathlib import Path
from types import ModuleType
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from replica_client import accel
from replica_client.binlog import events, row_plans
from replica_client.binlog.constants import ColumnType as T
from replica_client.binlog.decoder import _DECODE_ERRORS, _whole_event_head_py
from replica_client.binlog.events import ColumnInfo, TableMapEvent
from replica_client.binlog.header import EventHeader
from replica_client.binlog.row_decoders import RowDecoder
from replica_client.errors import MalformedEventError
from replica_client.position import FilePos, Gtid
from replica_client.session import StreamItem
from tests.binlog.test_decimal import decimals, encode_decimal
from tests.binlog_files import FIXTURES


def test_accelerator_is_built() -> None:
    # The suite runs the decoder on both paths; without the extension the
    # "accelerated" run would silently be a second pure run. scripts/test.sh
    # leaves this module out of its REPLICA_CLIENT_PURE_PYTHON=1 run.
    assert row_plans.ACCELERATED, (
        "replica_client._speedups is not built or is switched off "
        "(install with a C compiler and the Python headers; unset REPLICA_CLIENT_PURE_PYTHON)"
    )


_UTF8MB4, _LATIN1, _BINARY, _SJIS, _UTF8MB3, _UCS2 = 45, 8, 63, 13, 33, 35
_LABELS = ("new", "paid", "shipped")

# (type, real_type, meta, unsigned, collation, enum_values, set_values)
_COLUMNS: list[tuple[int, int, int, bool | None, int | None, Any, Any]] = [
    *[
        (t, t, 0, u, None, None, None)
        for t in (T.TINY, T.SHORT, T.INT24, T.LONG, T.LONGLONG)
        for u in (False, True, None)
    ],
    (T.FLOAT, T.FLOAT, 4, None, None, None, None),
    (T.DOUBLE, T.DOUBLE, 8, None, None, None, None),
    *[
        (T.NEWDECIMAL, T.NEWDECIMAL, (p << 8) | s, None, None, None, None)
        for p, s in ((1, 0), (5, 2), (10, 0), (18, 9), (20, 6), (38, 10), (65, 30), (9, 9))
    ],
    (T.YEAR, T.YEAR, 0, None, None, None, None),
    (T.DATE, T.DATE, 0, None, None, None, None),
    *[(T.TIME2, T.TIME2, f, None, None, None, None) for f in range(7)],
    *[(T.DATETIME2, T.DATETIME2, f, None, None, None, None) for f in range(7)],
    *[(T.TIMESTAMP2, T.TIMESTAMP2, f, None, None, None, None) for f in range(7)],
    # BIT metadata: bits % 8 in the high byte, whole bytes in the low byte
    *[
        (T.BIT, T.BIT, ((bits % 8) << 8) | (bits // 8), None, None, None, None)
        for bits in (1, 7, 8, 13, 64, 65)
    ],
    *[
        (T.VARCHAR, T.VARCHAR, m, None, c, None, None)
        for m in (20, 300)
        for c in (_UTF8MB4, _LATIN1, _BINARY, _SJIS, _UTF8MB3, _UCS2, None)
    ],
    *[
        (T.STRING, T.STRING, (0xFE << 8) | 16, None, c, None, None)
        for c in (_UTF8MB4, _LATIN1, _BINARY, _UTF8MB3)
    ],
    *[(T.BLOB, T.BLOB, m, None, c, None, None) for m in (1, 2, 3, 4) for c in (_UTF8MB4, _BINARY)],
    (T.STRING, T.ENUM, (T.ENUM << 8) | 1, None, None, _LABELS, None),
    (T.STRING, T.ENUM, (T.ENUM << 8) | 2, None, None, None, None),
    (T.STRING, T.SET, (T.SET << 8) | 1, None, None, None, _LABELS),
    (T.STRING, T.SET, (T.SET << 8) | 8, None, None, None, None),
    (T.JSON, T.JSON, 4, None, None, None, None),
]


def _table(picks: list[int]) -> TableMapEvent:
    cols = tuple(
        ColumnInfo(i, t, real, meta, True, f"c{i}", unsigned, coll, enums, sets)
        for i, (t, real, meta, unsigned, coll, enums, sets) in enumerate(_COLUMNS[p] for p in picks)
    )
    header = EventHeader(0, 19, 1, 0, 0, 0)
    return TableMapEvent(header, 1, 0, "db", "t", cols)


def _typed(value: Any) -> Any:
    if isinstance(value, tuple):
        return tuple(_typed(v) for v in value)
    return (type(value).__name__, repr(value))


def _outcome(call: Callable[[RowDecoder], object], decoder: RowDecoder) -> Any:
    # Failures must match too: the same exception class with the same message.
    try:
        return ("ok", _typed(call(decoder)))
    except (MalformedEventError, *_DECODE_ERRORS) as exc:
        return ("error", type(exc).__name__, str(exc))


def _untracking_rows() -> tuple[RowDecoder, bytes]:
    # INT, SET('new','paid','shipped'), JSON (MySQL binary): one row, 7 | {new, shipped} | [],
    # then one with the JSON NULL.
    cols = (
        ColumnInfo(0, T.LONG, T.LONG, 0, True, "i", False, None, None, None),
        ColumnInfo(1, T.STRING, T.SET, (T.SET << 8) | 1, True, "s", None, None, None, _LABELS),
        ColumnInfo(2, T.JSON, T.JSON, 4, True, "j", None, None, None, None),
    )
    table = TableMapEvent(EventHeader(0, 19, 1, 0, 0, 0), 1, 0, "db", "t", cols)
    empty_array = bytes([0x02, 0, 0, 4, 0])  # small array, 0 elements, 4 bytes
    with_json = b"\x00" + struct.pack("<i", 7) + b"\x05" + struct.pack("<I", 5) + empty_array
    without_json = b"\x04" + struct.pack("<i", 8) + b"\x02"
    return RowDecoder(table, mariadb=False), with_json + without_json


def test_rows_that_cannot_hold_a_cycle_are_left_to_reference_counting() -> None:
    # The accelerator untracks a row (and a SET value's frozenset) whose values
    # cannot lead back to it, as CPython untracks such tuples at its next
    # collection: rows decoded ahead of the consumer are not scanned by every
    # collection they live through. A row that holds a container stays tracked,
    # and a cycle through it is collected.
    decoder, data = _untracking_rows()
    assert decoder._plan is not None
    with_json, without_json = decoder.decode_rows(memoryview(data), 0, len(data), 0b111)
    assert with_json == (7, frozenset({"new", "shipped"}), [])
    assert without_json == (8, frozenset({"paid"}), None)
    assert not gc.is_tracked(without_json) and not gc.is_tracked(without_json[1])
    assert gc.is_tracked(with_json)
    probe = _Probe()
    watch = weakref.ref(probe)
    box = with_json[2]
    box += [probe, with_json]  # box -> row -> box
    del probe, box, with_json
    gc.collect()
    assert watch() is None
    # The pure-Python path gives the same values (CPython untracks at a collection).
    pure, _ = _untracking_rows()
    pure._plan = None
    rows = pure.decode_rows(memoryview(data), 0, len(data), 0b111)
    assert rows == ((7, frozenset({"new", "shipped"}), []), without_json)


@settings(max_examples=600, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    picks=st.lists(st.integers(0, len(_COLUMNS) - 1), min_size=1, max_size=8),
    data=st.binary(max_size=120),
    present_seed=st.integers(0, 255),
    after_seed=st.integers(0, 255),
    full=st.booleans(),
)
def test_accelerated_rows_equal_pure_rows(
    picks: list[int], data: bytes, present_seed: int, after_seed: int, full: bool
) -> None:
    table = _table(picks)
    fast = RowDecoder(table)
    pure = RowDecoder(table)
    pure._plan = None
    assert fast._plan is not None
    n = len(picks)
    everything = (1 << n) - 1
    present = everything if full else present_seed & everything
    after = everything if full else after_seed & everything
    view = memoryview(data)
    end = len(data)
    calls: list[Callable[[RowDecoder], object]] = [
        lambda d: d.decode_rows(view, 0, end, present),
        lambda d: d.decode_update_rows(view, 0, end, present, after),
        lambda d: d.decode_image(view, 0, present),
    ]
    for call in calls:
        assert _outcome(call, fast) == _outcome(call, pure)


@settings(max_examples=400, deadline=None)
@given(cases=st.lists(decimals(), min_size=1, max_size=6))
def test_accelerated_decimals_equal_the_values_written(
    cases: list[tuple[Decimal, int, int]],
) -> None:
    # Valid DECIMALs of every precision and scale (random bytes above rarely are):
    # the value, its scale and its text, as the pure reader gives them.
    cols = tuple(
        ColumnInfo(i, T.NEWDECIMAL, T.NEWDECIMAL, (p << 8) | s, True, f"c{i}")
        for i, (_, p, s) in enumerate(cases)
    )
    table = TableMapEvent(EventHeader(0, 19, 1, 0, 0, 0), 1, 0, "db", "t", cols)
    data = bytes((len(cases) + 7) // 8) + b"".join(encode_decimal(*case) for case in cases)
    fast = RowDecoder(table)
    pure = RowDecoder(table)
    pure._plan = None
    assert fast._plan is not None
    everything = (1 << len(cases)) - 1
    view = memoryview(data)
    (row,) = fast.decode_rows(view, 0, len(data), everything)
    (expected,) = pure.decode_rows(view, 0, len(data), everything)
    assert [str(v) for v in row] == [str(v) for v in expected]
    assert [(v, v.as_tuple().exponent) for v in row] == [(value, -s) for value, _, s in cases]


# -- event_head: the accelerated prologue of EventDecoder.decode ------------------------


def _accelerator() -> ModuleType:
    # Fails (never skips) without the extension, like test_accelerator_is_built.
    sp = accel.speedups()
    assert sp is not None, (
        "replica_client._speedups is not built or is switched off "
        "(install with a C compiler and the Python headers; unset REPLICA_CLIENT_PURE_PYTHON)"
    )
    return sp


def test_accelerated_crc32_equals_zlib() -> None:
    # The CRC-32 that event_head verifies: every length up to a few blocks (the
    # folded part, the 16-byte steps, the byte tail) at every alignment, then
    # event sizes up to the largest packets. On a CPU with carry-less
    # multiplication it must be the path taken.
    sp = _accelerator()
    flags = Path("/proc/cpuinfo").read_text() if Path("/proc/cpuinfo").exists() else ""
    if platform.machine() == "x86_64" and " pclmulqdq" in flags and " sse4_1" in flags:
        assert sp.CRC_FOLDS
    rnd = random.Random(5)
    data = rnd.randbytes(1 << 17)
    lengths = [*range(300), *(rnd.randrange(300, len(data) - 16) for _ in range(40))]
    for n in lengths:
        for offset in range(16):
            view = memoryview(data)[offset : offset + n]
            assert sp.crc32(view) == zlib.crc32(view), (n, offset)


_HEAD = struct.Struct("<IBIIIH")
_FDE = 15  # FORMAT_DESCRIPTION_EVENT: always left to the Python path
_SIZE_FIELD = range(9, 13)  # event_size, u32 little-endian
_TYPE_BYTE = 4
_MODES = (0, 1, 2)  # no trailer, CRC32 trailer not verified, CRC32 trailer verified
# len - 4 (the checksummed bytes) on both sides of the C / zlib.crc32 switch at 4096
_CRC_SWITCH_SIZES = (4099, 4100, 4101)


def _reference_head(data: bytes | bytearray | memoryview, crc_mode: int) -> EventHeader | None:
    """What event_head must return, from struct and zlib alone."""
    raw = bytes(data)
    if len(raw) < 19:
        return None
    header = EventHeader(*_HEAD.unpack_from(raw))
    if header.type_code == _FDE or header.event_size != len(raw):
        return None
    if crc_mode and len(raw) < 23:
        return None
    if crc_mode == 2 and zlib.crc32(raw[:-4]) != int.from_bytes(raw[-4:], "little"):
        return None
    return header


def _forms(raw: bytes) -> Iterator[bytes | bytearray | memoryview]:
    yield raw
    yield bytearray(raw)
    yield memoryview(raw)
    yield memoryview(bytearray(b"\x00" + raw))[1:]  # a view starting at an odd address


def _same_head(raw: bytes, crc_mode: int) -> EventHeader | None:
    """event_head on every buffer form of ``raw`` equals the reference; returns it.

    So does the Python path of ``whole_event_head`` (what runs without the
    accelerator: the receipt checks of semi-sync ACKs).
    """
    want = _reference_head(raw, crc_mode)
    assert _whole_event_head_py(memoryview(raw), crc_mode) == want
    for data in _forms(raw):
        got: EventHeader | None = _accelerator().event_head(data, crc_mode)
        assert got == want, (type(data).__name__, len(raw), crc_mode)
        if want is not None:
            assert type(got) is EventHeader
            assert all(type(v) is int for v in got)
            assert repr(got) == repr(want)
            assert hash(got) == hash(want)
            assert got._asdict() == want._asdict()
        else:
            assert got is None
    return want


def _event(
    size: int, *, crc: bool, type_code: int = 2, seed: int = 0, fields: tuple[int, ...] = ()
) -> bytes:
    """A synthetic v4 event of ``size`` bytes, with a correct CRC32 trailer if ``crc``."""
    timestamp, server_id, log_pos, flags = fields or (1_700_000_000, 1, 4 + size, 0)
    body = random.Random(seed).randbytes(size - 19 - (4 if crc else 0))
    raw = _HEAD.pack(timestamp, type_code, server_id, size, log_pos, flags) + body
    if crc:
        raw += struct.pack("<I", zlib.crc32(raw))
    assert len(raw) == size
    return raw


def _flip(raw: bytes, index: int, xor: int) -> bytes:
    out = bytearray(raw)
    out[index] ^= xor
    return bytes(out)


_header_fields = st.tuples(
    st.integers(0, 2**32 - 1),  # timestamp
    st.integers(0, 2**32 - 1),  # server_id
    st.integers(0, 2**32 - 1),  # log_pos
    st.integers(0, 2**16 - 1),  # flags
)
_sizes = st.one_of(st.integers(23, 10_000), st.sampled_from(_CRC_SWITCH_SIZES))


@settings(max_examples=300, deadline=None)
@given(
    size=_sizes,
    type_code=st.integers(0, 255),
    fields=_header_fields,
    seed=st.integers(0, 2**32 - 1),
)
def test_event_head_equals_reference_on_whole_events(
    size: int, type_code: int, fields: tuple[int, int, int, int], seed: int
) -> None:
    timestamp, server_id, log_pos, flags = fields
    expected = EventHeader(timestamp, type_code, server_id, size, log_pos, flags)
    with_crc = _event(size, crc=True, type_code=type_code, seed=seed, fields=fields)
    without = _event(size, crc=False, type_code=type_code, seed=seed, fields=fields)
    for mode in _MODES:
        got = _same_head(with_crc, mode)
        assert got == (None if type_code == _FDE else expected)
        got = _same_head(without, mode)
        if type_code == _FDE:
            assert got is None
        elif mode < 2:
            assert got == expected  # no trailer to check: the size field alone decides


@settings(max_examples=300, deadline=None)
@given(
    size=_sizes,
    fields=_header_fields,
    seed=st.integers(0, 2**32 - 1),
    data=st.data(),
)
def test_event_head_with_a_corrupted_byte(
    size: int, fields: tuple[int, int, int, int], seed: int, data: st.DataObject
) -> None:
    raw = _event(size, crc=True, type_code=2, seed=seed, fields=fields)
    index = data.draw(st.integers(0, size - 1), label="index")
    xor = data.draw(
        st.one_of(st.sampled_from([1 << b for b in range(8)]), st.integers(1, 255)), label="xor"
    )
    bad = _flip(raw, index, xor)
    results = [_same_head(bad, mode) for mode in _MODES]
    if index in _SIZE_FIELD:
        assert results == [None, None, None]  # size field no longer the length
    elif index == _TYPE_BYTE and bad[_TYPE_BYTE] == _FDE:
        assert results == [None, None, None]
    else:
        corrupted = EventHeader(*_HEAD.unpack_from(bad))
        # A CRC32 catches every error confined to one byte; unchecked modes do not look.
        assert results == [corrupted, corrupted, None]


@pytest.mark.parametrize("size", _CRC_SWITCH_SIZES)
def test_event_head_on_both_sides_of_the_c_crc_limit(size: int) -> None:
    # len - 4 <= 4096 is checksummed in C, above that by zlib.crc32: both must agree.
    raw = _event(size, crc=True, seed=size)
    expected = EventHeader(*_HEAD.unpack_from(raw))
    assert [_same_head(raw, mode) for mode in _MODES] == [expected] * 3
    for index in (0, 19, size // 2, size - 9, size - 5, size - 4, size - 1):
        for xor in (0x01, 0x80, 0xFF):
            bad = _flip(raw, index, xor)
            got = [_same_head(bad, mode) for mode in _MODES]
            assert got[2] is None, (size, index, xor)
            assert got[:2] == [EventHeader(*_HEAD.unpack_from(bad))] * 2


@settings(max_examples=200, deadline=None)
@given(
    size=st.integers(19, 10_000),
    delta=st.integers(-(2**32), 2**32).filter(lambda d: d % 2**32 != 0),
    seed=st.integers(0, 2**32 - 1),
)
def test_event_head_with_a_wrong_size_field(size: int, delta: int, seed: int) -> None:
    raw = bytearray(_event(size, crc=size >= 23, seed=seed))
    struct.pack_into("<I", raw, 9, (size + delta) % 2**32)
    for mode in _MODES:
        assert _same_head(bytes(raw), mode) is None


@pytest.mark.parametrize("size_field", [0, 1, 18, 19, 22, 23, 2**31 - 1, 2**31, 2**32 - 1])
def test_event_head_size_field_extremes(size_field: int) -> None:
    raw = bytearray(_event(64, crc=True))
    struct.pack_into("<I", raw, 9, size_field)
    for mode in _MODES:
        assert _same_head(bytes(raw), mode) is None


@pytest.mark.parametrize("length", range(23))
def test_event_head_on_short_input(length: int) -> None:
    rng = random.Random(length)
    for type_code in (2, _FDE):
        raw = bytearray(rng.randbytes(length))
        if length > _TYPE_BYTE:
            raw[_TYPE_BYTE] = type_code
        if length >= 13:
            struct.pack_into("<I", raw, 9, length)  # the size field agrees
        results = [_same_head(bytes(raw), mode) for mode in _MODES]
        if length < 19 or type_code == _FDE:
            assert results == [None, None, None]
        else:
            # A whole header, but no room for a header plus a CRC32 trailer.
            assert results[0] == EventHeader(*_HEAD.unpack_from(raw))
            assert results[1:] == [None, None]
    for mode in _MODES:
        assert _same_head(b"", mode) is None


def test_event_head_rejects_what_is_not_a_buffer() -> None:
    sp = _accelerator()
    raw = _event(40, crc=True)
    with pytest.raises(TypeError):
        sp.event_head(raw.decode("latin-1"), 2)
    with pytest.raises(TypeError):
        sp.event_head(raw)
    with pytest.raises(TypeError):
        sp.event_head(raw, "2")


# Real MariaDB binlogs written with binlog_checksum=CRC32 (see the fixtures' MANIFEST.md).
_MARIADB_CRC32 = (
    "rust_mysql_common/mariadb-bin.000001",
    "mariadb-operator-poc/domain_id_0/mariadb-repl-bin.000001",
    "mariadb-operator-poc/domain_id_0/mariadb-repl-bin.000004",
    "mariadb-operator-poc/domain_id_0/mariadb-repl-bin.000005",
    "pollen-plus-desktop-mariadb103/mysql-bin.000007",
    "pollen-plus-desktop-mariadb103/mysql-bin.000009",
)


def _file_events(rel: str) -> list[bytes]:
    path = FIXTURES / rel
    assert path.is_file(), f"binlog fixture missing: {path}"
    data = path.read_bytes()
    assert data[:4] == b"\xfebin"
    out: list[bytes] = []
    pos = 4
    while pos < len(data):
        size = int.from_bytes(data[pos + 9 : pos + 13], "little")
        assert 19 <= size <= len(data) - pos, (rel, pos)
        out.append(data[pos : pos + size])
        pos += size
    return out


@pytest.mark.parametrize("rel", _MARIADB_CRC32)
def test_event_head_on_real_mariadb_events(rel: str) -> None:
    file_events = _file_events(rel)
    assert file_events[0][_TYPE_BYTE] == _FDE
    assert len(file_events) > 2
    for raw in file_events:
        results = [_same_head(raw, mode) for mode in _MODES]
        if raw[_TYPE_BYTE] == _FDE:
            assert results == [None, None, None]
            continue
        expected = EventHeader(*_HEAD.unpack_from(raw))
        assert results == [expected] * 3  # every CRC32 in these files verifies
        middle = 19 + (len(raw) - 23) // 2
        bad = _flip(raw, middle, 0x10)
        assert [_same_head(bad, mode) for mode in _MODES] == [expected, expected, None]
        bad = _flip(raw, len(raw) - 1, 0x80)
        assert [_same_head(bad, mode) for mode in _MODES] == [expected, expected, None]


# -- Maker: accel.constructor against the dataclass __init__ -----------------------------


def _dataclasses_of(module: ModuleType) -> list[type[Any]]:
    found: list[type[Any]] = []
    for name in module.__all__:
        obj = getattr(module, name)
        if isinstance(obj, type) and dataclasses.is_dataclass(obj):
            found.append(obj)
    return found


_BUILT = [*_dataclasses_of(events), StreamItem]


def _qualifies(cls: type[Any]) -> bool:
    """Whether a Maker may replace ``cls(...)``: its __init__ only stores the fields."""
    fields = dataclasses.fields(cls)
    slots: set[str] = set()
    for klass in cls.__mro__[:-1]:
        if "__slots__" not in klass.__dict__:
            return False
        own = klass.__dict__["__slots__"]
        slots.update((own,) if isinstance(own, str) else own)
    return (
        not hasattr(cls, "__post_init__")
        and all(f.init for f in fields)
        and slots == {f.name for f in fields}
    )


def _call_outcome(call: Callable[[], object]) -> tuple[Any, ...]:
    try:
        value = call()
    except TypeError as exc:
        return ("TypeError", str(exc))
    return ("ok", type(value), repr(value), value)


def _set_call_outcome(obj: object, name: str) -> tuple[Any, ...]:
    try:
        setattr(obj, name, 1)
    except (AttributeError, TypeError) as exc:
        return (type(exc), str(exc))
    return ("set",)


def test_constructor_gives_makers_for_the_decoders_classes() -> None:
    maker_type = _accelerator().Maker
    for cls in (
        events.GtidEvent,
        events.XidEvent,
        events.TableMapEvent,
        events.WriteRowsEvent,
        events.UpdateRowsEvent,
        events.DeleteRowsEvent,
        events.RotateEvent,
        events.AnnotateRowsEvent,
        StreamItem,
    ):
        make = accel.constructor(cls)
        assert type(make) is maker_type, cls
        assert repr(make) == f"<Maker of {cls.__name__}>"


@pytest.mark.parametrize("cls", _BUILT, ids=lambda c: c.__name__)
def test_maker_builds_what_the_class_builds(cls: type[Any]) -> None:
    make = accel.constructor(cls)
    if _qualifies(cls):
        assert type(make) is _accelerator().Maker, cls
    else:
        assert make is cls
    fields = dataclasses.fields(cls)
    names = [f.name for f in fields]
    values = [f"<{cls.__name__}.{name}>" for name in names]  # hashable, distinct

    made = make(*values)
    built = cls(*values)
    assert type(made) is cls
    assert made == built and built == made
    assert (made != built) is False
    assert hash(made) == hash(built)
    assert repr(made) == repr(built)
    assert dataclasses.astuple(made) == dataclasses.astuple(built) == tuple(values)
    for name, value in zip(names, values, strict=True):
        assert getattr(made, name) is value
    assert not hasattr(made, "__dict__")

    for name in names:
        with pytest.raises(dataclasses.FrozenInstanceError):
            setattr(made, name, "changed")
        with pytest.raises(dataclasses.FrozenInstanceError):
            delattr(made, name)
    # A name that is no field: whatever the class does (TypeError on 3.11, where
    # the frozen __setattr__ of a slots=True class names the pre-slots class).
    assert _set_call_outcome(made, "not_a_field") == _set_call_outcome(built, "not_a_field")
    assert made == built

    other = dataclasses.replace(made, **{names[-1]: "other"})
    assert other == dataclasses.replace(built, **{names[-1]: "other"})
    assert other != made
    assert copy.copy(made) == built
    assert copy.deepcopy(made) == built
    assert pickle.loads(pickle.dumps(made)) == built

    # Anything but every field positionally is the class's own call.
    by_name = dict(zip(names, values, strict=True))
    assert _call_outcome(lambda: make(**by_name)) == _call_outcome(lambda: cls(**by_name))
    first, rest = values[:1], dict(zip(names[1:], values[1:], strict=True))
    assert _call_outcome(lambda: make(*first, **rest)) == _call_outcome(lambda: cls(*first, **rest))
    required = sum(
        1
        for f in fields
        if f.default is dataclasses.MISSING and f.default_factory is dataclasses.MISSING
    )
    build: Callable[..., object] = cls
    for n in range(len(values) + 2):
        args = [*values, "extra", "more"][:n]
        assert _call_outcome(partial(make, *args)) == _call_outcome(partial(build, *args)), n
    if required < len(values):
        short = values[:required]
        assert make(*short) == cls(*short)
        assert repr(make(*short)) == repr(cls(*short))


class _Probe:
    """Something a weak reference can watch."""


@pytest.mark.parametrize("cls", _BUILT, ids=lambda c: c.__name__)
def test_maker_instances_in_a_cycle_are_collected(cls: type[Any]) -> None:
    # The accelerator may leave an instance holding only atomic values out of
    # the collector; one that holds a container must be collectable in a cycle.
    make = accel.constructor(cls)
    n = len(dataclasses.fields(cls))
    for build in (make, cls):
        probe = _Probe()
        watch = weakref.ref(probe)
        box: list[object] = [probe]
        obj = build(box, *range(n - 1))
        assert gc.is_tracked(obj)
        box.append(obj)  # box -> obj -> box
        del probe, box, obj
        gc.collect()
        assert watch() is None, build
        # A dict that holds nothing yet (CPython leaves those untracked) and is
        # filled after the instance was built.
        probe = _Probe()
        watch = weakref.ref(probe)
        late: dict[str, object] = {}
        obj = build(late, *range(n - 1))
        late["probe"] = probe
        late["obj"] = obj
        del probe, late, obj
        gc.collect()
        assert watch() is None, build


@pytest.mark.parametrize("cls", _BUILT, ids=lambda c: c.__name__)
def test_maker_instances_nested_in_a_cycle_are_collected(cls: type[Any]) -> None:
    # An instance of atomic values inside another instance that is in a cycle.
    make = accel.constructor(cls)
    n = len(dataclasses.fields(cls))
    for build in (make, cls):
        probe = _Probe()
        watch = weakref.ref(probe)
        box: list[object] = [probe]
        inner = build(*range(n))
        outer = build(inner, box, *range(n - 2)) if n > 1 else build(box)
        box.append(outer)
        del probe, box, inner, outer
        gc.collect()
        assert watch() is None, build


def test_maker_holds_one_reference_per_field() -> None:
    make = accel.constructor(events.XidEvent)
    assert make is not events.XidEvent, "the accelerator is missing"
    value = object()
    before = sys.getrefcount(value)
    made = [make(value, value) for _ in range(100)]
    assert sys.getrefcount(value) == before + 200
    del made
    gc.collect()
    assert sys.getrefcount(value) == before


def test_maker_refuses_names_that_are_not_slots() -> None:
    maker_type = _accelerator().Maker
    with pytest.raises(TypeError, match="not an object slot"):
        maker_type(StreamItem, ("for_consumer",))
    with pytest.raises(AttributeError):
        maker_type(StreamItem, ("no_such_field",))


@dataclasses.dataclass(frozen=True)
class _Unslotted:
    a: int
    b: str


@dataclasses.dataclass(frozen=True, slots=True)
class _Computed:
    a: int
    b: int = dataclasses.field(init=False, default=0)


@dataclasses.dataclass(frozen=True, slots=True, weakref_slot=True)
class _WithWeakref:
    a: int


class _PlainBase:
    pass


@dataclasses.dataclass(frozen=True, slots=True)
class _OnPlainBase(_PlainBase):
    a: int


@dataclasses.dataclass(frozen=True, slots=True)
class _Plain:
    a: int
    b: str = "b"


@pytest.mark.parametrize(
    "cls",
    [FilePos, Gtid, _Unslotted, _Computed, _WithWeakref, _OnPlainBase, EventHeader, int],
    ids=lambda c: c.__name__,
)
def test_constructor_leaves_other_classes_alone(cls: type[Any]) -> None:
    # __post_init__ (FilePos, Gtid), no __slots__, a field outside __init__,
    # slots that are not fields, not a dataclass at all.
    _accelerator()
    assert accel.constructor(cls) is cls


def test_constructor_on_a_plain_slotted_dataclass() -> None:
    make = accel.constructor(_Plain)
    assert type(make) is _accelerator().Maker
    assert make(1, "x") == _Plain(1, "x")
    assert repr(make(1, "x")) == repr(_Plain(1, "x"))
    assert make(1) == _Plain(1)
    assert make(a=1, b="y") == _Plain(a=1, b="y")


def test_constructor_without_the_accelerator(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(accel, "_SPEEDUPS", None)
    for cls in _BUILT:
        assert accel.constructor(cls) is cls
    assert accel.constructor(_Plain) is _Plain


# -- classes a Maker cannot stand in for: constructor() must return the class ------------
# (mutable, a hand-written __init__, keyword-only fields, InitVars).


@dataclasses.dataclass(slots=True)
class _Mutable:
    a: object
    b: object


@dataclasses.dataclass(frozen=True, slots=True, init=False)
class _OwnInit:
    a: int

    def __init__(self, a: int) -> None:
        object.__setattr__(self, "a", a * 2)


@dataclasses.dataclass(frozen=True, slots=True)
class _KwOnly:
    a: int
    b: int = dataclasses.field(kw_only=True)


@dataclasses.dataclass(frozen=True, slots=True)
class _WithInitVar:
    a: int
    scale: dataclasses.InitVar[int]
    b: int


def test_constructor_of_a_mutable_dataclass_keeps_cycles_collectable() -> None:
    make = accel.constructor(_Mutable)
    for build in (_Mutable, make):
        probe = _Probe()
        watch = weakref.ref(probe)
        obj = build(1, 2)
        obj.a = obj
        obj.b = probe
        del obj, probe
        gc.collect()
        assert watch() is None, build


def test_constructor_of_a_dataclass_with_its_own_init() -> None:
    make = accel.constructor(_OwnInit)
    assert _call_outcome(partial(make, 3)) == _call_outcome(partial(_OwnInit, 3))


def test_constructor_of_a_dataclass_with_kw_only_fields() -> None:
    make = accel.constructor(_KwOnly)
    build: Callable[..., object] = _KwOnly
    assert _call_outcome(partial(make, 1, 2)) == _call_outcome(partial(build, 1, 2))


def test_constructor_of_a_dataclass_with_an_initvar() -> None:
    make = accel.constructor(_WithInitVar)
    assert _call_outcome(partial(make, 1, 2)) == _call_outcome(partial(_WithInitVar, 1, 2))


@pytest.mark.parametrize(
    "cls", [_Mutable, _OwnInit, _KwOnly, _WithInitVar], ids=lambda c: c.__name__
)
def test_constructor_refuses_classes_a_maker_cannot_build(cls: type[Any]) -> None:
    assert accel.constructor(cls) is cls
