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
    RowsEvent,
    UpdateRowsEvent,
    WriteRowsEvent,
)
from replica_client.binlog.transactions import TransactionTracker
from replica_client.changes import Change
from tests.binlog_files import FIXTURES

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
        tuple(rng.choice(present if i % 3 else values) for _ in range(width))
        for i in range(count)
    )


def _items(images: list[Any]) -> list[Any]:
    """The dicts' items in order (== on dicts ignores the order of their keys)."""
    return [
        tuple(list(d.items()) for d in image) if isinstance(image, tuple) else list(image.items())
        for image in images
    ]


@pytest.mark.parametrize("width", [0, 1, 5, 28, 300])
def test_the_accelerated_row_dicts_equal_the_python_ones(width: int) -> None:
    accelerated = speedups()
    if accelerated is None:  # the pure-Python run: row_dicts is the Python one
        assert changes.row_dicts is changes._row_dicts
        return
    rng = random.Random(width)
    names = tuple(f"c{i}" for i in range(width))
    rows = _random_rows(rng, width, 50)
    fast = accelerated.row_dicts(names, rows, MISSING, False)
    assert _items(fast) == _items(changes._row_dicts(names, rows, MISSING, False))
    pairs = tuple(zip(rows, _random_rows(rng, width, 50), strict=True))
    assert _items(accelerated.row_dicts(names, pairs, MISSING, True)) == _items(
        changes._row_dicts(names, pairs, MISSING, True)
    )
    # more values than names: both stop at the names (as zip() does)
    assert _items(accelerated.row_dicts(names[:1], rows, MISSING, False)) == _items(
        changes._row_dicts(names[:1], rows, MISSING, False)
    )
    # every dict is its own: changing one leaves the others as they were
    before = _items(fast)
    for image in fast:
        image["added"] = 1
        image.pop("c0", None)
    assert [[kv for kv in items if kv[0] != "c0"] + [("added", 1)] for items in before] == _items(
        fast
    )


def test_the_accelerated_row_dicts_refuse_what_is_not_a_row() -> None:
    accelerated = speedups()
    if accelerated is None:
        return
    with pytest.raises(TypeError, match="must be a tuple"):
        accelerated.row_dicts(("a",), ([1],), MISSING, False)
    with pytest.raises(TypeError, match=r"\(before, after\) pair"):
        accelerated.row_dicts(("a",), ((1,),), MISSING, True)


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
