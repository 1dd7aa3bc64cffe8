"""The snapshot's rules without a server: read points, progress, the seam, the checkpoint."""

from __future__ import annotations

import datetime as dt
from decimal import Decimal
from typing import Any

import pytest

from replica_client.changes import Change
from replica_client.errors import ConfigError, SnapshotError
from replica_client.position import FilePos, Gtid, MysqlGtidSet
from replica_client.snapshot import (
    ReadPoint,
    Seam,
    SnapshotState,
    TableProgress,
    ddl_tables,
    plan_table,
)

_AT = dt.datetime(2026, 1, 1, tzinfo=dt.UTC)
_UUID = "3e11fa47-71ca-11e1-9e33-c80aa9429562"


def _change(
    op: str,
    before: dict[str, Any] | None,
    after: dict[str, Any] | None,
    gtid: str | None = None,
    position: FilePos | None = None,
) -> Change:
    return Change(op, "d", "t", before, after, gtid, position, _AT, 0, ("id",))  # type: ignore[arg-type]


def test_read_point_orders_by_gtid_when_both_have_one() -> None:
    point = ReadPoint(FilePos("b.000002", 400), Gtid("0-1-10,1-2-5"))
    assert point.includes(_change("insert", None, {"id": 1}, "0-1-10"))
    assert not point.includes(_change("insert", None, {"id": 1}, "0-1-11"))
    assert point.includes(_change("insert", None, {"id": 1}, "1-2-3"))
    assert not point.includes(_change("insert", None, {"id": 1}, "2-1-1"))  # a new domain
    # The GTID decides even where the file position would say otherwise (a failover).
    late = FilePos("b.000009", 4)
    assert point.includes(_change("insert", None, {"id": 1}, "0-1-9", late))
    assert point.passed(None, Gtid("0-1-10,1-2-5"))
    assert not point.passed(FilePos("b.000099", 4), Gtid("0-1-10,1-2-4"))


def test_read_point_without_gtids_orders_by_file_then_offset() -> None:
    point = ReadPoint(FilePos("b.000010", 400))
    assert point.includes(_change("insert", None, {}, None, FilePos("b.000009", 9000)))
    assert point.includes(_change("insert", None, {}, None, FilePos("b.000010", 399)))
    assert not point.includes(_change("insert", None, {}, None, FilePos("b.000010", 400)))
    # b.1000000 follows b.999999: a longer name is a later file.
    wide = ReadPoint(FilePos("b.999999", 4))
    assert not wide.includes(_change("insert", None, {}, None, FilePos("b.1000000", 4)))
    assert not point.includes(_change("insert", None, {}, None, None))
    assert point.passed(FilePos("b.000010", 400), None)
    assert not point.passed(FilePos("b.000010", 399), None)
    assert not point.passed(None, None)


def test_read_point_with_a_mysql_gtid_set() -> None:
    point = ReadPoint(FilePos("b.000001", 4), MysqlGtidSet(f"{_UUID}:1-20"))
    assert point.includes(_change("insert", None, {}, f"{_UUID}:20"))
    assert not point.includes(_change("insert", None, {}, f"{_UUID}:21"))
    assert point.passed(None, MysqlGtidSet(f"{_UUID}:1-25"))
    assert not point.passed(None, MysqlGtidSet(f"{_UUID}:1-19"))


def test_progress_finds_the_point_each_key_was_read_at() -> None:
    p1 = ReadPoint(FilePos("b.000001", 100))
    p2 = ReadPoint(FilePos("b.000001", 200))
    progress = TableProgress("d.t")
    assert progress.point_for((1,)) is None and progress.last_key is None
    for key in (1, 5, 9):
        progress.read(progress.last_key, (key,), p1)
    assert len(progress.segments) == 1  # extended, not one per row
    progress.read(progress.last_key, (20,), p2)
    assert [progress.point_for((k,)) for k in (0, 9, 10, 20, 21)] == [p1, p1, p2, p2, None]
    progress.read(progress.last_key, None, p2)  # read to its end
    assert progress.point_for((10**9,)) == p2 and len(progress.segments) == 2


def test_state_round_trips_through_json_with_typed_keys() -> None:
    point = ReadPoint(FilePos("b.000003", 77), Gtid("0-1-5"))
    mysql = ReadPoint(FilePos("b.000004", 9), MysqlGtidSet(f"{_UUID}:1-7"))
    key = (7, Decimal("-1.50"), dt.datetime(2024, 2, 3, 4, 5, 6, 7), dt.date(2024, 1, 2), b"\x00k")
    progress = TableProgress("d.t")
    progress.read(None, key, point)
    progress.read(key, None, mysql)
    state = SnapshotState("chunked", point, [progress, TableProgress("d.u", done=True)])
    again = SnapshotState.from_json(state.to_json())
    assert again == state
    assert [type(v) for v in again.tables[0].segments[0].upto or ()] == [type(v) for v in key]
    with pytest.raises(ConfigError, match="not a snapshot state"):
        SnapshotState.from_json('{"mode": "sideways"}')
    unsaveable = TableProgress("d.t")
    unsaveable.read(None, (1.5,), point)  # a FLOAT key: never chunked, never saved
    with pytest.raises(SnapshotError, match="cannot be saved"):
        SnapshotState("chunked", point, [unsaveable]).to_json()


def _seam(progress: TableProgress) -> Seam:
    plan = plan_table(
        "d", "t", [("id", "int", "int"), ("v", "text", "text")], ["id"], labels=True, mariadb=True
    )
    return Seam(
        SnapshotState("chunked", ReadPoint(FilePos("b.000001", 4)), [progress]), {"d.t": plan}
    )


def test_seam_keeps_changes_after_the_point_of_read_keys_only() -> None:
    p1 = ReadPoint(FilePos("b.000001", 100))
    progress = TableProgress("d.t")
    progress.read(None, (10,), p1)  # keys up to 10 read at p1; the rest not yet
    seam = _seam(progress)
    at = FilePos("b.000001", 150)
    old = FilePos("b.000001", 50)
    assert seam.keep(_change("insert", None, {"id": 3, "v": "a"}, position=at)) is not None
    assert seam.keep(_change("insert", None, {"id": 3, "v": "a"}, position=old)) is None
    assert seam.keep(_change("insert", None, {"id": 11, "v": "a"}, position=at)) is None
    # A key-moving update delivers the side that is read: its delete, or its insert.
    out = seam.keep(_change("update", {"id": 4, "v": "a"}, {"id": 40, "v": "a"}, position=at))
    assert out is not None and (out.op, out.before, out.after) == (
        "delete",
        {"id": 4, "v": "a"},
        None,
    )
    out = seam.keep(_change("update", {"id": 40, "v": "a"}, {"id": 4, "v": "b"}, position=at))
    assert out is not None and (out.op, out.before, out.after) == (
        "insert",
        None,
        {"id": 4, "v": "b"},
    )
    both = _change("update", {"id": 4, "v": "a"}, {"id": 5, "v": "a"}, position=at)
    assert seam.keep(both) is both
    # A minimal after-image (the key not in it) keeps the before-image's key.
    minimal = _change("update", {"id": 4, "v": "a"}, {"v": "c"}, position=at)
    assert seam.keep(minimal) is minimal
    # Changes of tables that are not snapshotted pass untouched.
    other = Change("insert", "d", "x", None, {"id": 99}, None, old, _AT)
    assert seam.keep(other) is other


def test_chunking_needs_a_key_in_server_order() -> None:
    def plan(key_type: str) -> bool:
        return plan_table(
            "d", "t", [("k", key_type, key_type)], ["k"], labels=True, mariadb=True
        ).ordered_key

    assert plan("bigint") and plan("datetime") and plan("varbinary") and plan("decimal")
    assert not plan("varchar")  # collation order is not Python's
    assert not plan_table("d", "t", [("k", "int", "int")], [], labels=True, mariadb=True).key
    with pytest.raises(SnapshotError, match="no columns"):
        plan_table("d", "t", [], [], labels=True, mariadb=True)


@pytest.mark.parametrize(
    ("query", "expected"),
    [
        ("TRUNCATE TABLE t", ("TRUNCATE", ["db.t"])),
        ("truncate `d`.`x y`", ("TRUNCATE", ["d.x y"])),
        ("DROP TABLE IF EXISTS a, b.c /* generated by server */", ("DROP", ["db.a", "b.c"])),
        ("DROP TEMPORARY TABLE t", ("DROP", ["db.t"])),
        ("RENAME TABLE a TO b, d.c TO d.e", ("RENAME", ["db.a", "db.b", "d.c", "d.e"])),
        ("/* x */ TRUNCATE t", ("TRUNCATE", ["db.t"])),
        ("DROP DATABASE x", ("", [])),
        ("ALTER TABLE t ADD c INT", ("", [])),
        ("BEGIN", ("", [])),
    ],
)
def test_ddl_tables_names_what_a_statement_removes(
    query: str, expected: tuple[str, list[str]]
) -> None:
    assert ddl_tables(query, "db") == expected


def test_a_saved_state_does_not_move_with_the_reads_after_it() -> None:
    point = ReadPoint(FilePos("b.000001", 100))
    progress = TableProgress("d.t")
    progress.read(None, (1,), point)
    state = SnapshotState("chunked", point, [progress])
    saved = state.resumed_at(point)
    progress.read((1,), (2,), point)  # extends the live segment in place
    assert progress.last_key == (2,) and saved.tables[0].last_key == (1,)
