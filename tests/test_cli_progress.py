"""The command line's snapshot status line (cli_progress.SnapshotMeter)."""

from __future__ import annotations

import io

from replica_client.cli_progress import SnapshotMeter, line
from replica_client.snapshot import SnapshotProgress

__all__: list[str] = []


def test_the_line_says_rows_rate_table_and_time_left() -> None:
    tables = [
        SnapshotProgress("db.a", 1_000_000, 1_000_000, True),
        SnapshotProgress("db.b", 250_000, 1_000_000, False),
        SnapshotProgress("db.c", 0, 500_000, False),
    ]
    text = line(tables, 5.0)
    assert text == (
        "snapshot: 1,250,000 rows, 250,000 rows/s, 1/3 tables read; "
        "db.b: 250,000 of ~1,000,000 (25%), about 5 s left"
    )
    # without an estimate: no share, no time left; all done: the totals only
    assert line([SnapshotProgress("db.x", 10, None, False)], 1.0) == (
        "snapshot: 10 rows, 10 rows/s, 0/1 tables read; db.x: 10"
    )
    assert line([SnapshotProgress("db.x", 10, 5, True)], 2.0) == (
        "snapshot: 10 rows, 5 rows/s, 1/1 tables read"
    )
    # an estimate below the rows read: never 100% before the table is done
    assert SnapshotProgress("db.x", 12, 10, False).fraction == 0.99


def test_the_meter_redraws_at_most_every_half_second() -> None:
    now = [100.0]
    out = io.StringIO()
    meter = SnapshotMeter(out, clock=lambda: now[0])
    tables = [SnapshotProgress("db.a", 0, 100, False)]
    meter.update(tables)
    now[0] += 0.1
    meter.update([SnapshotProgress("db.a", 10, 100, False)])  # too soon: not drawn
    now[0] += 0.5
    meter.update([SnapshotProgress("db.a", 60, 100, False)])
    meter.update(None)  # no snapshot: nothing
    meter.done()
    frames = out.getvalue().split("\r")[1:]
    assert len(frames) == 2
    assert "db.a: 0 of ~100 (0%)" in frames[0]
    assert "db.a: 60 of ~100 (60%)" in frames[1] and frames[1].endswith("\n")
    # a shorter line blanks what is left of the longer one before it
    assert len(frames[1].rstrip("\n")) >= len(frames[0])
