"""Explicit limits on hostile input: event size and TABLE_MAPs per statement
raise LimitExceededError (a ProtocolError) instead of growing memory.

Packet size: tests/wire/test_framing.py::test_too_large_refused_before_body_arrives;
the undelivered-event buffer: tests/aio/test_stream_fake.py::test_backpressure_pauses_reading
and tests/faults/test_slow_consumer.py.
"""

from __future__ import annotations

import struct

import pytest

from replica_client.binlog.decoder import EventDecoder
from replica_client.config import DecoderOptions
from replica_client.errors import LimitExceededError, ProtocolError
from tests.fake_primary import BinlogBuilder, build_event, query_body

__all__: list[str] = []


def _table_map(table_id: int) -> bytes:
    name = f"t{table_id}".encode()
    body = (
        struct.pack("<Q", table_id)[:6]
        + b"\x01\x00"
        + b"\x02db\x00"
        + bytes([len(name)])
        + name
        + b"\x00"
        + b"\x01\x03"  # one INT column
        + b"\x00"  # no metadata
        + b"\x01"  # nullable
    )
    return build_event(19, body, log_pos=1000)


def _decoder(**options: int) -> EventDecoder:
    decoder = EventDecoder(DecoderOptions(**options))  # type: ignore[arg-type]
    b = BinlogBuilder()
    decoder.decode(b.fde(), 4)
    return decoder


def test_table_maps_per_statement_are_bounded() -> None:
    decoder = _decoder(table_map_cache_size=8)
    for table_id in range(8):
        decoder.decode(_table_map(table_id), 4)
    decoder.decode(_table_map(3), 4)  # a re-sent id is no new entry
    with pytest.raises(LimitExceededError, match="table_map_cache_size") as info:
        decoder.decode(_table_map(8), 4)
    assert isinstance(info.value, ProtocolError)


def test_event_size_is_bounded() -> None:
    decoder = _decoder(max_event_size=4096)
    decoder.decode(build_event(2, query_body("SELECT " + "1" * 3000), log_pos=9000), 4)
    with pytest.raises(LimitExceededError, match="max_event_size"):
        decoder.decode(build_event(2, query_body("SELECT " + "1" * 5000), log_pos=9000), 4)
