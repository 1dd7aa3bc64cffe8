"""Property: whatever bytes ``EventDecoder.decode`` is given, it returns an event or
raises a ``replica_client.errors.ProtocolError`` subclass, never anything else.

Inputs: random bytes (bare, and framed as an event with a consistent size and,
optionally, a valid CRC so the body decoders are reached), with and without a
real FORMAT_DESCRIPTION_EVENT decoded first, checksums on and off; and
mutations (bit flips, byte replacements, truncations, insertions) of real
events, each decoded after the FDE and TABLE_MAPs it depends on. The real events
come from the private primary (the SELECT-oracle workload: every column type)
and from the MariaDB fixture files. Runs are derandomized, so CI sees the same
examples every time. ``REPLICA_CLIENT_FUZZ_EXAMPLES=20000`` runs a longer,
randomized search locally.
"""

from __future__ import annotations

import contextlib
import os
import struct
import zlib
from dataclasses import dataclass
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from replica_client.binlog.constants import EventType
from replica_client.binlog.decoder import DECODERS, EventDecoder
from replica_client.config import DecoderOptions
from replica_client.errors import ProtocolError
from replica_client.testing.server import MariaDBServer
from tests import oracle
from tests.binlog_files import FIXTURES, capture, split_events

_LONG_RUN = os.environ.get("REPLICA_CLIENT_FUZZ_EXAMPLES")
SETTINGS = settings(
    max_examples=int(_LONG_RUN) if _LONG_RUN else 400,
    deadline=None,
    derandomize=not _LONG_RUN,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
)

ROWS_TYPES = frozenset(
    {
        EventType.WRITE_ROWS_EVENT_V1,
        EventType.UPDATE_ROWS_EVENT_V1,
        EventType.DELETE_ROWS_EVENT_V1,
        EventType.WRITE_ROWS_EVENT,
        EventType.UPDATE_ROWS_EVENT,
        EventType.DELETE_ROWS_EVENT,
    }
)
MARIADB_FIXTURES = [
    "mariadb-operator-poc/domain_id_0/mariadb-repl-bin.000001",
    "mariadb-operator-poc/domain_id_0/mariadb-repl-bin.000004",
    "mariadb-operator-poc/domain_id_0/mariadb-repl-bin.000005",
    "pollen-plus-desktop-mariadb103/mysql-bin.000004",
    "pollen-plus-desktop-mariadb103/mysql-bin.000007",
    "pollen-plus-desktop-mariadb103/mysql-bin.000009",
    "rust_mysql_common/mariadb-bin.000001",
]


@dataclass(frozen=True)
class Sample:
    """A real event with the FDE and TABLE_MAPs decoded before it."""

    label: str
    fde: bytes
    context: tuple[bytes, ...]
    event: bytes
    position: int


def samples_of(label: str, data: bytes) -> list[Sample]:
    out: list[Sample] = []
    fde = b""
    maps: list[bytes] = []
    for ev in split_events(data):
        if ev.type_code == EventType.FORMAT_DESCRIPTION_EVENT:
            fde = ev.data
            continue
        context = tuple(maps) if ev.type_code in ROWS_TYPES else ()
        out.append(Sample(f"{label}@{ev.position}", fde, context, ev.data, ev.position))
        if ev.type_code == EventType.TABLE_MAP_EVENT:
            maps.append(ev.data)
        elif ev.type_code not in ROWS_TYPES:
            maps.clear()
    return out


def _fixture_samples() -> list[Sample]:
    out: list[Sample] = []
    for rel in MARIADB_FIXTURES:
        path = FIXTURES / rel
        out.extend(samples_of(Path(rel).name, path.read_bytes()))
    return out


FIXTURE_SAMPLES = _fixture_samples()
FIXTURE_FDES = sorted({s.fde for s in FIXTURE_SAMPLES})


@pytest.fixture(scope="module")
def server_samples(mariadb_primary: MariaDBServer) -> list[Sample]:
    srv = mariadb_primary
    conn = oracle.connect(srv.host, srv.port, srv.user, srv.password)
    try:
        srv.sql("FLUSH BINARY LOGS")
        first = srv.binlog_files()[-1]
        oracle.run_workload(conn, random_rows=10)
    finally:
        conn.close()
    captured = capture(srv, ["DO 1"])
    files = [f for f in srv.binlog_files() if first.name <= f.name <= captured.name]
    out: list[Sample] = []
    for f in files:
        out.extend(samples_of(f.name, f.read_bytes()))
    kinds = {s.event[4] for s in out}
    assert ROWS_TYPES & kinds and EventType.TABLE_MAP_EVENT in kinds
    return out


# -- the property ------------------------------------------------------------------------


def decode_or_protocol_error(decoder: EventDecoder, data: bytes, position: int = 4) -> None:
    with contextlib.suppress(ProtocolError):
        list(decoder.iter_decode(data, position))


def primed(sample_fde: bytes | None, verify: bool, context: tuple[bytes, ...] = ()) -> EventDecoder:
    decoder = EventDecoder(DecoderOptions(verify_checksum=verify))
    if sample_fde:
        decoder.decode(sample_fde, 4)
    for table_map in context:
        decoder.decode(table_map, 4)
    return decoder


def _fix(data: bytearray, fix_size: bool, fix_crc: bool) -> bytes:
    if fix_size and len(data) >= 13:
        struct.pack_into("<I", data, 9, len(data))
    if fix_crc and len(data) >= 23:
        struct.pack_into("<I", data, len(data) - 4, zlib.crc32(data[:-4]))
    return bytes(data)


# -- random bytes ---------------------------------------------------------------------


@SETTINGS
@given(
    data=st.binary(max_size=300),
    fde=st.none() | st.sampled_from(FIXTURE_FDES),
    verify=st.booleans(),
)
def test_random_bytes(data: bytes, fde: bytes | None, verify: bool) -> None:
    decode_or_protocol_error(primed(fde, verify), data)


#: Every type of the dispatch table (the FORMAT_DESCRIPTION_EVENT included).
TYPE_CODES = sorted(DECODERS)


@SETTINGS
@given(
    type_code=st.sampled_from(TYPE_CODES) | st.integers(0, 255),
    flags=st.sampled_from([0, 0x1, 0x8, 0x20, 0x80]) | st.integers(0, 0xFFFF),
    body=st.binary(max_size=200),
    fde=st.none() | st.sampled_from(FIXTURE_FDES),
    verify=st.booleans(),
    fix_crc=st.booleans(),
)
def test_random_framed_events(
    type_code: int, flags: int, body: bytes, fde: bytes | None, verify: bool, fix_crc: bool
) -> None:
    size = 19 + len(body) + 4
    raw = bytearray(struct.pack("<IBIIIH", 1700000000, type_code, 1, size, 0, flags))
    raw += body + b"\0\0\0\0"
    decode_or_protocol_error(primed(fde, verify), _fix(raw, False, fix_crc))


# -- mutations of real events --------------------------------------------------------

MUTATION = st.tuples(
    st.sampled_from(["flip", "replace", "truncate", "insert", "delete"]),
    st.floats(0.0, 1.0, allow_nan=False),
    st.integers(0, 255),
)


def mutate(event: bytes, ops: list[tuple[str, float, int]]) -> bytearray:
    data = bytearray(event)
    for kind, where, value in ops:
        at = min(int(where * len(data)), max(len(data) - 1, 0))
        if kind == "flip" and data:
            data[at] ^= 1 << (value & 7)
        elif kind == "replace" and data:
            data[at] = value
        elif kind == "truncate":
            del data[at:]
        elif kind == "insert":
            data[at:at] = bytes([value]) * (1 + value % 8)
        elif kind == "delete" and data:
            del data[at : at + 1 + value % 8]
    return data


def _mutated_case(
    sample: Sample,
    ops: list[tuple[str, float, int]],
    fix_size: bool,
    fix_crc: bool,
    verify: bool,
) -> None:
    decoder = primed(sample.fde, verify, sample.context)
    decode_or_protocol_error(decoder, _fix(mutate(sample.event, ops), fix_size, fix_crc))


@SETTINGS
@given(
    index=st.integers(0, len(FIXTURE_SAMPLES) - 1),
    ops=st.lists(MUTATION, min_size=1, max_size=4),
    fix_size=st.booleans(),
    fix_crc=st.booleans(),
    verify=st.booleans(),
)
def test_mutated_fixture_events(
    index: int, ops: list[tuple[str, float, int]], fix_size: bool, fix_crc: bool, verify: bool
) -> None:
    _mutated_case(FIXTURE_SAMPLES[index], ops, fix_size, fix_crc, verify)


@SETTINGS
@given(
    pick=st.floats(0.0, 1.0, allow_nan=False, exclude_max=True),
    ops=st.lists(MUTATION, min_size=1, max_size=4),
    fix_size=st.booleans(),
    fix_crc=st.booleans(),
    verify=st.booleans(),
)
def test_mutated_server_events(
    server_samples: list[Sample],
    pick: float,
    ops: list[tuple[str, float, int]],
    fix_size: bool,
    fix_crc: bool,
    verify: bool,
) -> None:
    sample = server_samples[int(pick * len(server_samples))]
    _mutated_case(sample, ops, fix_size, fix_crc, verify)


@SETTINGS
@given(
    pick=st.floats(0.0, 1.0, allow_nan=False, exclude_max=True),
    ops=st.lists(MUTATION, min_size=1, max_size=6),
)
def test_mutated_server_row_events(
    server_samples: list[Sample], pick: float, ops: list[tuple[str, float, int]]
) -> None:
    # Rows events carry the most structure (every column codec): mutate their
    # bodies with a consistent size and a valid CRC so the row decoders run.
    rows = [s for s in server_samples if s.event[4] in ROWS_TYPES or s.context]
    sample = rows[int(pick * len(rows))]
    _mutated_case(sample, ops, True, True, True)


def test_corpus_is_real() -> None:
    # The mutations start from real events of every MariaDB fixture.
    labels = {s.label.split("@")[0] for s in FIXTURE_SAMPLES}
    assert labels == {Path(p).name for p in MARIADB_FIXTURES}
    for sample in FIXTURE_SAMPLES[:50]:
        decoder = primed(sample.fde, True, sample.context)
        assert list(decoder.iter_decode(sample.event, sample.position))
