"""Every column of every changelog row equals what its rows event says of it.

``ChangelogBuilder`` keeps the columns a rows event's rows share once per
event and lets Arrow spread them; here each row of the record batches is
compared with values taken from the events themselves, one row at a time:
the real binlogs in ``tests/data/binlogs`` and generated snapshot reads.
"""

from __future__ import annotations

import datetime as dt
import random
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import pytest

import replica_client as rc
from replica_client.binlog.events import DeleteRowsEvent, GtidEvent, RowsEvent, UpdateRowsEvent
from replica_client.spark import changelog
from replica_client.spark.changelog import ChangelogBuilder, images_json, pk_texts, sequence
from tests.test_changes import _readable_fixtures

__all__: list[str] = []

_UTC = dt.UTC


def _expected_rows(event: RowsEvent, file: str, pos: int, gtid: str | None) -> list[dict[str, Any]]:
    """The changelog rows of ``event``, row by row, from the event alone (the images'
    JSON texts as ``images_json`` writes them, one row after another)."""
    rows: tuple[Any, ...] = getattr(event, "rows", ())
    op = (
        "u"
        if isinstance(event, UpdateRowsEvent)
        else "d"
        if isinstance(event, DeleteRowsEvent)
        else "c"
    )
    side = 1 if op == "u" else -1
    names = event.table.column_names
    pk = pk_texts(event.table.primary_key, names, rows, side)
    nulls: list[str | None] = [None] * len(rows)
    before: Sequence[str | None]
    after: Sequence[str | None]
    if op == "u":
        before, after = images_json(names, rows, 0, False), images_json(names, rows, 1, False)
    elif op == "c":
        before, after = nulls, images_json(names, rows, -1, False)
    else:
        before, after = images_json(names, rows, -1, False), nulls
    return [
        {
            "op": op,
            "before": before[i],
            "after": after[i],
            "db": event.table.schema,
            "table": event.table.table,
            "pk": pk[i],
            "gtid": gtid,
            "server_id": event.header.server_id,
            "file": file,
            "pos": pos,
            "row_index": i,
            "commit_ts": dt.datetime.fromtimestamp(event.header.timestamp, _UTC),
            "seq": sequence(file, pos, i),
        }
        for i in range(len(rows))
    ]


def _drain(builder: ChangelogBuilder, out: list[dict[str, Any]], last: bool = False) -> int:
    """Add the batches the builder hands over to ``out``; how many there were."""
    batches = 0
    for batch in builder.rest() if last else builder.ready():
        out.extend(batch.to_pylist())
        batches += 1
    return batches


def _changelog_of(path: Path) -> tuple[list[dict[str, Any]], list[dict[str, Any]], int, int]:
    """The builder's rows of ``path``, the rows expected of its events, how many of
    its rows events hold more than one row, and how many batches it made."""
    builder = ChangelogBuilder()
    got: list[dict[str, Any]] = []
    expected: list[dict[str, Any]] = []
    multi_row_events = batches = 0
    gtid: str | None = None
    with rc.open_binlog(path) as reader:
        for event in reader:
            if isinstance(event, GtidEvent):
                gtid = event.gtid
            if not isinstance(event, RowsEvent):
                continue
            where = reader.event_position
            assert where is not None
            builder.add(event, where.file, where.pos, gtid)
            expected.extend(_expected_rows(event, where.file, where.pos, gtid))
            multi_row_events += len(getattr(event, "rows", ())) > 1
            batches += _drain(builder, got)
    batches += _drain(builder, got, last=True)
    return got, expected, multi_row_events, batches


@pytest.mark.parametrize(
    ("batch_rows", "text_bytes"),
    [
        (changelog.BATCH_ROWS, changelog.BATCH_TEXT_BYTES),
        (7, changelog.BATCH_TEXT_BYTES),
        (changelog.BATCH_ROWS, 2000),
    ],
    ids=["default", "7-rows", "2000-bytes"],
)
def test_every_row_of_the_real_binlogs_has_its_events_columns(
    batch_rows: int, text_bytes: int, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(changelog, "BATCH_ROWS", batch_rows)
    monkeypatch.setattr(changelog, "BATCH_TEXT_BYTES", text_bytes)
    checked = multi_row_events = batches = 0
    for path in _readable_fixtures():
        try:
            got, expected, multi, made = _changelog_of(path)
        except rc.ReplicaError:
            continue  # files this decoder refuses: tests/fixtures_walk
        assert len(got) == len(expected), path
        for row, want in zip(got, expected, strict=True):
            assert row == want, path
        checked += len(got)
        multi_row_events += multi
        batches += made
    assert checked > 10_000
    assert multi_row_events > 100
    # batches are cut by rows, and before that by a column's bytes of text
    by_rows = sum(1 for _ in range(0, checked, batch_rows))
    if text_bytes < 10_000:
        assert batches > 10 * by_rows


def test_snapshot_reads_share_their_points_seq_and_count_their_rows() -> None:
    rng = random.Random(5)
    builder = ChangelogBuilder()
    expected: list[dict[str, Any]] = []
    # 70,000 rows: more than the builder's ready row numbers (65,536)
    sizes = [0, 1, 2, 50, 9000, 70_000] + [rng.choice([0, 1, 2, 50]) for _ in range(24)]
    for point, size in enumerate(sizes):
        file, pos = f"mysql-bin.{rng.randrange(1, 9):06d}", rng.randrange(4, 1 << 31)
        at = dt.datetime(2024, 1, 1, tzinfo=_UTC) + dt.timedelta(seconds=point)
        rows = [{"id": i, "v": str(i)} for i in range(size)]
        builder.add_reads("db", f"t{point}", ("id",), rows, file, pos, f"0-1-{point}", at)
        expected.extend(
            {
                "op": "r",
                "db": "db",
                "table": f"t{point}",
                "before": None,
                "after": f'{{"id":{i},"v":"{i}"}}',
                "pk": f'{{"id":{i}}}',
                "gtid": f"0-1-{point}",
                "server_id": 0,
                "file": file,
                "pos": pos,
                "row_index": i,
                "commit_ts": at,
                "seq": sequence(file, pos, 0),
            }
            for i in range(len(rows))
        )
    got = [row for batch in builder.rest() for row in batch.to_pylist()]
    assert got == expected
