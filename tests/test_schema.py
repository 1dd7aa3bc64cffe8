"""Schema providers: names and SQL types the binlog cannot carry, on real bytes.

Events copied from a MariaDB 11.8.9 binlog (ROW, ``binlog_row_metadata=FULL``)::

    CREATE TABLE uu (id INT PRIMARY KEY, u UUID, a INET4, b INET6, v VECTOR(2));
    INSERT INTO uu VALUES
      (1, '123e4567-e89b-12d3-a456-426655440000', '1.2.3.4', '::1', VEC_FromText('[1,2]')),
      (2, '00000000-0000-0000-0000-000000000000', '0.0.0.0', '::ffff:1.2.3.4',
       VEC_FromText('[0.5,-3]')),
      (3, NULL, NULL, NULL, VEC_FromText('[0,0]'));

``SELECT CAST(u AS CHAR), CAST(a AS CHAR), CAST(b AS CHAR), VEC_ToText(v)`` gives the
text forms the typed values are checked against; ``information_schema.COLUMNS``
gives the data types ``int, uuid, inet4, inet6, vector``. The binlog strips the
trailing zero bytes of the binary values (row 2 has none left at all); the
decoder pads BINARY(n) values back to n bytes.
"""

from __future__ import annotations

import ipaddress
import uuid

import replica_client as rc
from replica_client.binlog.events import WriteRowsEvent
from replica_client.schema import ColumnSchema, apply_schema, needs_schema, retype_rows
from tests.binlog_files import decode_hex_events

TYPED = (
    (
        "9aa3046b0f01000000fc000000000100000000040031312e382e392d4d6172696144422d302b64656231"
        "3375312066726f6d2044656269616e2d6c6f67000000000000000000000000000013380d000800120004"
        "040404120000e400041a08000000080808020000000a0a0a0000000000000a0a0a000000000000000000"
        "000000000000000000000000000000000000000000000000000000000000000000000000000000000000"
        "000000000000000000000000000000000000000000000000000000000000000000000000000000000000"
        "0000000000000000000000000000000000000000000000000000041304000d0808080a0a0a014ea45093"
    ),
    (
        "9aa3046b13010000004c0000000000000000002200000000000100017000027575000503fefefe0f08fe"
        "10fe04fe1008001e01010002013f040b0269640175016101620176080100fa851adb"
    ),
    (
        "9aa3046b1701000000830000000000000000002200000000000100051fe0010000000e123e4567e89b12"
        "d3a4564266554404010203041000000000000000000000000000000001080000803f00000040e0020000"
        "0000001000000000000000000000ffff01020304080000003f000040c0ee030000000800000000000000"
        "00fe7ddf10"
    ),
)

COLUMNS = (
    ColumnSchema("id", "int"),
    ColumnSchema("u", "uuid"),
    ColumnSchema("a", "inet4"),
    ColumnSchema("b", "inet6"),
    ColumnSchema("v", "vector"),
)
SELECTED = (
    (1, "123e4567-e89b-12d3-a456-426655440000", "1.2.3.4", "::1", [1.0, 2.0]),
    (2, "00000000-0000-0000-0000-000000000000", "0.0.0.0", "::ffff:1.2.3.4", [0.5, -3.0]),
    (3, None, None, None, [0.0, 0.0]),
)


def _event() -> WriteRowsEvent:
    *_, event = decode_hex_events(*TYPED)
    assert isinstance(event, WriteRowsEvent)
    return event


def _typed(row: tuple[object, ...]) -> tuple[object, ...]:
    rid, u, a, b, v = row
    return (
        rid,
        None if u is None else uuid.UUID(str(u)),
        None if a is None else ipaddress.IPv4Address(str(a)),
        None if b is None else ipaddress.IPv6Address(str(b)),
        v,
    )


def test_without_a_provider_the_values_are_the_binlogs_bytes() -> None:
    event = _event()
    assert needs_schema(event.table)
    # BINARY(n) values padded back to n bytes: what SELECT HEX() shows
    assert event.rows[0][1] == bytes.fromhex("123e4567e89b12d3a456426655440000")
    assert event.rows[1][1:4] == (
        bytes(16),
        bytes(4),
        bytes.fromhex("00000000000000000000ffff01020304"),
    )
    assert event.rows[0][4] == bytes.fromhex("0000803f00000040")


def test_a_provider_types_uuid_inet_and_vector() -> None:
    event = _event()
    table = apply_schema(event.table, COLUMNS)
    assert table is not None
    assert [c.data_type for c in table.columns] == ["int", "uuid", "inet4", "inet6", "vector"]
    typed = retype_rows(event, table)
    assert isinstance(typed, WriteRowsEvent)
    assert typed.rows == tuple(_typed(r) for r in SELECTED)


def test_a_provider_that_does_not_fit_is_ignored() -> None:
    event = _event()
    assert apply_schema(event.table, COLUMNS[:4]) is None
    assert apply_schema(event.table, None) is None


def test_iter_changes_takes_column_schemas() -> None:
    asked: list[tuple[str, str]] = []

    def provider(schema: str, table: str) -> tuple[ColumnSchema, ...]:
        asked.append((schema, table))
        return COLUMNS

    changes = list(rc.iter_changes([_event()], column_names=provider))
    assert asked == [("p", "uu")]
    assert [tuple(c.after.values()) for c in changes if c.after] == [_typed(r) for r in SELECTED]
