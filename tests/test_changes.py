"""replica_client.changes: row events to Change objects, the same on both decoder paths."""

from __future__ import annotations

import dataclasses
import datetime as dt
import random
from pathlib import Path
from typing import Any

import pytest

import replica_client as rc
from replica_client import changes
from replica_client.accel import speedups
from replica_client.binlog.events import (
    MISSING,
    DeleteRowsEvent,
    PartialUpdateRowsEvent,
    QueryEvent,
    RotateEvent,
    RowsEvent,
    UpdateRowsEvent,
    WriteRowsEvent,
)
from replica_client.binlog.transactions import TransactionTracker
from replica_client.changes import Change
from tests.binlog_files import FIXTURES, fixture_events
from tests.implementations import IMPLEMENTATIONS, accelerator

_SIDECARS = {".md", ".txt", ".sql"}
NEGATIVE = {"binlog_truncated", "corrupt-relay", "non-binlog", "canal/tsdb"}


def _readable_fixtures() -> list[Path]:
    return sorted(
        p
        for p in FIXTURES.rglob("*")
        if p.is_file() and p.suffix not in _SIDECARS and not any(bad in str(p) for bad in NEGATIVE)
    )


def _reference(events: Any) -> list[Change]:
    """Changes built the plain way: the dataclass constructor and a dict per image."""
    tracker = TransactionTracker()
    out: list[Change] = []
    for event in events:
        if not isinstance(event, RowsEvent):
            tracker.observe(event)
            continue
        table = event.table
        names = table.column_names
        at = events.event_position

        def image(row: tuple[Any, ...], names: tuple[str, ...] = names) -> dict[str, Any]:
            return {n: v for n, v in zip(names, row, strict=False) if v is not MISSING}

        common = {
            "schema": table.schema,
            "table": table.table,
            "gtid": tracker.gtid,
            "position": at,
            "timestamp": dt.datetime.fromtimestamp(event.header.timestamp, dt.UTC),
            "primary_key": tuple(names[i] for i in table.primary_key),
            "server_id": event.header.server_id,
        }
        for i, row in enumerate(getattr(event, "rows", ())):
            if isinstance(event, UpdateRowsEvent):
                out.append(
                    Change(
                        "update", before=image(row[0]), after=image(row[1]), row_index=i, **common
                    )
                )
            elif isinstance(event, WriteRowsEvent):
                out.append(Change("insert", before=None, after=image(row), row_index=i, **common))
            elif isinstance(event, DeleteRowsEvent):
                out.append(Change("delete", before=image(row), after=None, row_index=i, **common))
    return out


def test_changes_of_every_fixture_equal_the_plain_construction() -> None:
    compared = 0
    for path in _readable_fixtures():
        try:
            with rc.open_binlog(path) as events:
                fast = list(rc.iter_changes(events))
            with rc.open_binlog(path) as events:
                slow = _reference(events)
        except rc.ReplicaError:
            continue  # files with events this decoder refuses: tests/fixtures_walk
        assert fast == slow, path
        compared += len(fast)
    assert compared > 10_000  # the fixtures hold that many row changes


def _random_rows(rng: random.Random, width: int, count: int) -> tuple[Any, ...]:
    # Rows without a MISSING column (every third one) take the accelerator's
    # copy of an earlier dict of the same call; the others are built key by key.
    values = [None, 0, -1, "x", b"\x00", 1.5, MISSING, frozenset({"a"}), ("t",)]
    present = [v for v in values if v is not MISSING]
    return tuple(
        tuple(rng.choice(present if i % 3 else values) for _ in range(width)) for i in range(count)
    )


def _shown(made: list[Change]) -> list[tuple[Any, ...]]:
    """Every field of the changes, the dicts as their items in order (== on dicts
    ignores the order of their keys)."""
    return [
        tuple(
            list(v.items()) if isinstance(v, dict) else v
            for v in (getattr(c, f.name) for f in dataclasses.fields(Change))
        )
        for c in made
    ]


_WHEN = dt.datetime(2024, 1, 2, tzinfo=dt.UTC)


def _fields(op: str) -> tuple[Any, ...]:
    return (op, "db", "t", None, None, "0-1-9", rc.FilePos("b.000001", 4), _WHEN, 0, ("c0",), 7)


@pytest.mark.parametrize("width", [0, 1, 5, 28, 300])
def test_the_accelerated_row_changes_equal_the_python_ones(width: int) -> None:
    accelerated = speedups()
    if accelerated is None:  # the pure-Python run: row_changes is the Python one
        assert changes.row_changes is changes._row_changes
        return
    rng = random.Random(width)
    names = tuple(f"c{i}" for i in range(width))
    rows = _random_rows(rng, width, 50)
    pairs = tuple(zip(rows, _random_rows(rng, width, 50), strict=True))
    for make in (changes._new_change, Change):
        for op, images in (("insert", rows), ("delete", rows), ("update", pairs)):
            args = (make, names, images, MISSING, _fields(op), changes._SLOTS[op])
            fast = accelerated.row_changes(*args)
            assert _shown(fast) == _shown(changes._row_changes(*args)), (make, op)
            assert [c.row_index for c in fast] == list(range(50))
        # more values than names: both stop at the names (as zip() does)
        args = (make, names[:1], rows, MISSING, _fields("insert"), changes._SLOTS["insert"])
        assert _shown(accelerated.row_changes(*args)) == _shown(changes._row_changes(*args))
        # no row index (a snapshot's read rows): the field keeps what it was given
        args = (make, names, rows, MISSING, _fields("read"), (4, -1, -1))
        fast = accelerated.row_changes(*args)
        assert _shown(fast) == _shown(changes._row_changes(*args))
        assert {c.row_index for c in fast} == {0} and len(fast) == 50

    # a constructor that keeps no image: the copies still come from a live dict
    def items_only(*fields: Any) -> Any:
        return [list(v.items()) for v in fields if isinstance(v, dict)]

    for op, images in (("insert", rows), ("update", pairs)):
        args = (items_only, names, images, MISSING, _fields(op), changes._SLOTS[op])
        assert accelerated.row_changes(*args) == changes._row_changes(*args)
    # every dict is its own: changing one leaves the others as they were
    made = accelerated.row_changes(
        changes._new_change, names, pairs, MISSING, _fields("update"), changes._SLOTS["update"]
    )
    before = _shown(made)
    for change in made:
        for image in (change.before, change.after):
            image["added"] = 1
            image.pop("c0", None)
    edited = [
        tuple(
            [kv for kv in v if kv[0] != "c0"] + [("added", 1)] if i in (3, 4) else v
            for i, v in enumerate(shown)
        )
        for shown in before
    ]
    assert edited == _shown(made)


_INSERT, _UPDATE = changes._SLOTS["insert"], changes._SLOTS["update"]
#: What is not a row, and what each implementation raises for it: the accelerator
#: checks the types itself, the pure-Python one fails where Python does. (A row
#: that is a list: the accelerator wants the tuple a decoder makes; the Python one
#: reads any sequence, so that case is the accelerator's only.)
_NOT_ROWS: list[tuple[str, tuple[Any, ...], str, tuple[int, ...], dict[str, Any]]] = [
    (
        "a row that is a list",
        ([1],),
        "insert",
        _INSERT,
        {"accelerated": (TypeError, "must be a tuple")},
    ),
    (
        "a row that is not a sequence",
        (1,),
        "insert",
        _INSERT,
        {"accelerated": (TypeError, "must be a tuple"), "python": (TypeError, "not iterable")},
    ),
    (
        "an update row that is not a pair",
        ((1,),),
        "update",
        _UPDATE,
        {
            "accelerated": (TypeError, r"\(before, after\) pair"),
            "python": (ValueError, "not enough values to unpack"),
        },
    ),
    (
        "slots out of the fields",
        ((1,),),
        "insert",
        (4, -1, 11),
        {
            "accelerated": (ValueError, "slots out of the fields"),
            "python": (IndexError, "out of range"),
        },
    ),
    (
        "slots that are not three",
        ((1,),),
        "insert",
        (4, -1),
        {"accelerated": (TypeError, "slots"), "python": (ValueError, "not enough values")},
    ),
]


@pytest.mark.parametrize("implementation", IMPLEMENTATIONS)
def test_the_accelerated_row_changes_refuse_what_is_not_a_row(implementation: str) -> None:
    if implementation == "accelerated":
        row_changes = accelerator().row_changes
        assert changes.row_changes is row_changes  # what the builder calls
    else:
        row_changes = changes._row_changes
    refused = 0
    for _what, rows, op, slots, errors in _NOT_ROWS:
        if implementation not in errors:
            continue
        error, message = errors[implementation]
        with pytest.raises(error, match=message):
            row_changes(changes._new_change, ("a",), rows, MISSING, _fields(op), slots)
        refused += 1
    assert refused == (5 if implementation == "accelerated" else 4)


def test_a_table_map_sharing_columns_with_another_names_its_own_table_and_key() -> None:
    # The names are cached by the TABLE_MAP's columns tuple (repeats share it).
    for path in _readable_fixtures():
        found = [e for e in rc.open_binlog(path) if isinstance(e, WriteRowsEvent) and e.rows]
        if found:
            event = found[0]
            break
    else:
        raise AssertionError("no WRITE_ROWS in the fixtures")
    other = dataclasses.replace(event.table, table=event.table.table + "_copy", primary_key=())
    builder = changes.ChangeBuilder()
    first = builder.feed(event)
    second = builder.feed(dataclasses.replace(event, table=other))
    assert {c.table for c in first} == {event.table.table}
    assert {c.table for c in second} == {other.table}
    assert {c.primary_key for c in second} == {()}


def test_a_partial_json_update_is_an_update_change() -> None:
    # PartialUpdateRowsEvent derives from UpdateRowsEvent: its op is its base's.
    events = [e for _, e in fixture_events("rust_mysql_common/json.binlog.000001")]
    (partial,) = [e for e in events if isinstance(e, PartialUpdateRowsEvent)]
    got = changes.ChangeBuilder().rows(partial, None, None)
    assert [c.op for c in got] == ["update"] * len(partial.rows)
    names = partial.table.column_names

    def image(row: tuple[Any, ...]) -> dict[str, Any]:
        return {n: v for n, v in zip(names, row, strict=True) if v is not MISSING}

    for change, (before, after) in zip(got, partial.rows, strict=True):
        assert (change.before, change.after) == (image(before), image(after))


@pytest.mark.parametrize(
    "rel",
    [
        # 11.8: log_pos 0 inside transactions
        "mariadb-operator-poc/domain_id_0/mariadb-repl-bin.000004",
        "rust_mysql_common/mariadb-bin.000001",  # 10.5: rows events
    ],
)
def test_positions_from_headers_equal_the_file_readers(rel: str) -> None:
    """A list of events (no ``event_position``) after the artificial ROTATE a dump
    starts with: each change's position is the file reader's, also where MariaDB
    11.4+ writes log_pos 0 inside a transaction (before: None there)."""
    from replica_client.binlog.decoder import EventDecoder
    from tests.fake_primary import fake_rotate

    path = FIXTURES / rel
    with rc.open_binlog(path) as reader:
        exact = list(rc.iter_changes(reader, statements="deliver"))
    with rc.open_binlog(path) as reader:
        events = list(reader)
    rotate = EventDecoder().decode(fake_rotate(path.name, 4, crc=False))
    assert isinstance(rotate, RotateEvent)
    derived = list(rc.iter_changes([rotate, *events], statements="deliver"))
    assert exact and [c.position for c in derived] == [c.position for c in exact]
    assert all(c.position is not None for c in exact)
    if "000004" in rel:  # the fixture does hold events with log_pos 0
        assert any(e.log_pos == 0 for e in events if isinstance(e, QueryEvent))
