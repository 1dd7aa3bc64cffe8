"""Parts of the Spark source that need no server and no JVM: options, schema, offsets."""

from __future__ import annotations

import json
import pkgutil
from collections.abc import Iterator
from decimal import Decimal

import pytest
from pyspark.sql.datasource import DataSource
from pyspark.sql.pandas.types import to_arrow_schema

from replica_client.errors import ConfigError
from replica_client.position import FilePos, Gtid, MysqlGtidSet
from replica_client.spark import CHANGELOG_SCHEMA, FIELDS, parse_options, sequence
from replica_client.spark.changelog import ARROW_SCHEMA, _json
from replica_client.spark.dump import Txn, position_key
from replica_client.spark.options import DEFAULT_MAX_BYTES_PER_TRIGGER
from replica_client.spark.planner import Offset, split_partitions

from .conftest import ROOT


def test_option_names_are_case_insensitive_as_spark_lowercases_them() -> None:
    opts = parse_options(
        {
            "host": "db1",
            "port": "3307",
            "user": "repl",
            "server_id": "12",
            "startingposition": "mysql-bin.000003:4",
            "maxrowspertrigger": "100",
            "MaxBytesPerTrigger": "0",
            "tables": "shop.*, crm.users",
        }
    )
    assert (opts.host, opts.port, opts.user, opts.server_id) == ("db1", 3307, "repl", 12)
    assert opts.starting_position == FilePos("mysql-bin.000003", 4)
    assert opts.max_rows_per_trigger == 100
    assert opts.max_bytes_per_trigger is None
    assert opts.tables("shop", "x") and opts.tables("crm", "users")
    assert not opts.tables("crm", "other")
    assert parse_options({"serverId": "7"}).server_id == 7
    assert parse_options({}).max_bytes_per_trigger == DEFAULT_MAX_BYTES_PER_TRIGGER


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("earliest", "earliest"),
        ("LATEST", "latest"),
        ("Snapshot", "snapshot"),
        ("0-1-100,1-2-7", Gtid("0-1-100,1-2-7")),
        ("mysql-bin.000001:256", FilePos("mysql-bin.000001", 256)),
        (
            "3E11FA47-71CA-11E1-9E33-C80AA9429562:1-5:7",
            MysqlGtidSet("3e11fa47-71ca-11e1-9e33-c80aa9429562:1-5:7"),
        ),
        (
            "3e11fa47-71ca-11e1-9e33-c80aa9429562:9",
            MysqlGtidSet("3e11fa47-71ca-11e1-9e33-c80aa9429562:9"),
        ),
    ],
)
def test_starting_positions(text: str, expected: object) -> None:
    assert parse_options({"startingPosition": text}).starting_position == expected


@pytest.mark.parametrize(
    "options",
    [
        {"nosuch": "1"},
        {"port": "x"},
        {"maxRowsPerTrigger": "0"},
        {"startingPosition": "bogus"},
        {"snapshotChunkRows": "0"},
    ],
)
def test_bad_options_raise_config_error(options: dict[str, str]) -> None:
    with pytest.raises(ConfigError):
        parse_options(options)


def test_stream_needs_user_and_server_id() -> None:
    with pytest.raises(ConfigError, match="server_id"):
        parse_options({"user": "repl"}).require_connection()


def test_arrow_schema_is_the_one_spark_expects() -> None:
    assert [f.name for f in CHANGELOG_SCHEMA.fields] == [name for name, _, _ in FIELDS]
    assert to_arrow_schema(CHANGELOG_SCHEMA, timezone="UTC").equals(ARROW_SCHEMA)


def test_seq_orders_rows_across_events_and_files() -> None:
    keys = [
        sequence("mysql-bin.000001", 900, 0),
        sequence("mysql-bin.000001", 900, 5),
        sequence("mysql-bin.000001", 960, 0),
        sequence("mysql-bin.000002", 4, 0),
    ]
    assert keys == sorted(keys) and len(set(keys)) == 4
    assert sequence("mysql-bin.999999", 0xFFFFFFFF, 0) < 1 << 63


def test_json_images() -> None:
    from replica_client.binlog.events import Geometry, InvalidDate

    text = _json(
        {"d": Decimal("1.50"), "b": b"\x00\xff", "z": InvalidDate(0, 0, 0), "g": Geometry(0, b"")}
    )
    assert text == '{"d":"1.50","b":"AP8=","z":"0000-00-00","g":{"srid":0,"wkb":""}}'


def test_offsets_round_trip_and_order() -> None:
    off = Offset("mysql-bin.000002", 4, "0-1-9")
    assert Offset.from_json(off.to_json()) == off
    assert off.start() == FilePos("mysql-bin.000002", 4)
    assert Offset("", 0, "0-1-9").start() == Gtid("0-1-9")
    assert position_key(FilePos("mysql-bin.000010", 4)) > position_key(
        FilePos("mysql-bin.000009", 99999)
    )
    with pytest.raises(ConfigError):
        Offset.from_json({"file": "x"})


def _txn(i: int, events: int = 1, nbytes: int = 400, host: str = "a:3306") -> Txn:
    """A transaction from position ``100 * i`` to ``100 * (i + 1)`` of f.000001."""
    begin, end = FilePos("f.000001", 100 * i), FilePos("f.000001", 100 * (i + 1))
    return Txn(
        "f.000001", events, f"0-1-{i}", begin, f"0-1-{i - 1}", None, end, f"0-1-{i}", nbytes,
        0, True, None, host,
    )  # fmt: skip


def test_partitions_are_ranges_cut_at_transactions_by_bytes() -> None:
    opts = parse_options({"partitionBytes": "1000", "maxPartitions": "3", "serverId": "7"})
    txns = [_txn(i) for i in range(10)] + [_txn(10, events=0, nbytes=10)]
    parts = split_partitions(txns, opts)
    assert len(parts) == 3
    # contiguous ranges of the transactions with events, each from its first's begin
    # to its last's end, on the primary they were planned on, with the GTID state there
    assert [(p.start.pos, p.end.pos) for p in parts] == [(0, 400), (400, 700), (700, 1000)]
    assert [p.start.gtid for p in parts] == ["0-1--1", "0-1-3", "0-1-6"]
    assert all(p.start.host == "a:3306" and p.start.schema is None for p in parts)
    assert [p.transactions for p in parts] == [4, 3, 3]
    assert sum(p.nbytes for p in parts) == 4000
    # every task of the batch registers with its own replica id, after server_id's
    assert [p.server_id for p in parts] == [8, 9, 10]
    # a range is read from one primary: a batch that moved to another is cut there
    moved = [_txn(0), _txn(1), _txn(2, host="b:3306")]
    one = split_partitions(moved, parse_options({"maxPartitions": "1"}))
    assert [(p.start.host, p.start.pos, p.end.pos) for p in one] == [
        ("a:3306", 0, 200),
        ("b:3306", 200, 300),
    ]
    # transactions without changes of the selected tables are not read
    assert split_partitions([_txn(0, events=0)], opts) == []


def test_task_server_ids_option() -> None:
    opts = parse_options({"user": "u", "serverId": "7", "maxPartitions": "4"})
    assert opts.task_server_ids == (8, 11)
    opts = parse_options({"user": "u", "serverId": "7", "taskServerIds": "100-101"})
    assert opts.task_server_ids == (100, 101)
    parts = split_partitions(
        [_txn(i, nbytes=10) for i in range(3)],
        parse_options({"taskServerIds": "100-101", "partitionBytes": "10"}),
    )
    # no more tasks than ids: two at once with one id would drop each other
    assert [p.server_id for p in parts] == [100, 101]
    for bad in ("x", "5-2", "0-3"):
        with pytest.raises(ConfigError, match="taskServerIds"):
            parse_options({"taskServerIds": bad})
    with pytest.raises(ConfigError, match="holds server_id 7"):
        parse_options({"user": "u", "serverId": "7", "taskServerIds": "5-9"}).require_connection()


def test_top_level_registration_module() -> None:
    found = {m.name for m in pkgutil.iter_modules([str(ROOT)])}
    assert "pyspark_mariadb_binlog" in found
    import pyspark_mariadb_binlog

    assert issubclass(pyspark_mariadb_binlog.DefaultSource, DataSource)
    assert pyspark_mariadb_binlog.DefaultSource.name() == "mariadb_binlog"


def test_hosts_option_lists_the_primaries_in_order() -> None:
    opts = parse_options({"hosts": "db1:3307, db2, [::1]:3309", "user": "u", "serverId": "3"})
    assert (opts.host, opts.port) == ("db1", 3307)
    assert opts.addresses == ("db1:3307", "db2:3306", "[::1]:3309")
    assert opts.for_address("[::1]:3309").port == 3309
    assert parse_options({"host": "h", "port": "1"}).addresses == ("h:1",)


def test_offsets_name_their_primary_and_resume_elsewhere_by_gtid() -> None:
    offset = Offset("mysql-bin.000003", 400, "0-1-7", "db1:3306")
    assert Offset.from_json(offset.to_json()) == offset
    assert offset.start("db1:3306") == FilePos("mysql-bin.000003", 400)
    assert offset.start("db2:3306") == Gtid("0-1-7")  # another primary's positions differ
    legacy = Offset.from_json({"file": "mysql-bin.000003", "pos": 400, "gtid": ""})
    assert legacy.host == "" and legacy.start("db2:3306") == FilePos("mysql-bin.000003", 400)
    with pytest.raises(ConfigError, match="cannot be resumed on another primary"):
        Offset("mysql-bin.000003", 400, "", "db1:3306").start("db2:3306")


def test_snapshot_offsets_plan_ranges_then_become_the_stream_offset() -> None:
    chunks = [("d.t", None, [100]), ("d.t", [100], [200]), ("d.t", [200], None)]
    first = Offset("b.000001", 400, "0-1-9", "h:1").with_snapshot(chunks, 0)
    assert Offset.from_json(json.loads(json.dumps(first.to_json()))) == first
    assert first.snapshot_plan() == (chunks, 0)
    second = first.with_snapshot(chunks, 2)
    assert second.snapshot_plan()[1] == 2 and second.key != first.key
    done = first.with_snapshot(chunks, 3)
    assert not done.snapshot and done == Offset("b.000001", 400, "0-1-9", "h:1")


def test_a_task_waits_for_its_replica_id_to_be_free(monkeypatch: pytest.MonkeyPatch) -> None:
    """The primary refuses a task's registration while the id's last dump (the batch
    before's, or another read of the same partition) is still there: the task asks
    again until it is free, and reads its range once."""
    from replica_client.errors import ServerIdConflictError
    from replica_client.spark import partitions

    opened: list[int] = []

    class Dump:
        def __init__(self, *args: object, server_id: int, **kw: object) -> None:
            opened.append(server_id)
            self.closed = False

        def rows(self, end: FilePos) -> Iterator[tuple[object, str, int, str | None]]:
            if len(opened) < 3:
                raise ServerIdConflictError(4052, "HY000", "A slave with the same server_id")
            yield "event", "f.000001", 4, "0-1-1"

        def close(self) -> None:
            self.closed = True

        def __enter__(self) -> Dump:
            return self

        def __exit__(self, *exc: object) -> None:
            self.close()

    class Builder:
        def __init__(self) -> None:
            self.added: list[tuple[object, ...]] = []

        def add(self, *row: object) -> None:
            self.added.append(row)

        def ready(self) -> Iterator[object]:
            return iter(())

        def rest(self) -> Iterator[object]:
            yield len(self.added)

    monkeypatch.setattr(partitions, "BinlogDump", Dump)
    monkeypatch.setattr("replica_client.spark.partitions.time.sleep", lambda s: None)
    part = partitions.RangePartition(
        Offset("f.000001", 4, "0-1-0", "h:1"), FilePos("f.000001", 99), 12, 1, 10
    )
    batches = list(partitions.read_range(parse_options({}), part, Builder()))  # type: ignore[arg-type]
    assert opened == [12, 12, 12] and batches == [1]
    # refused for longer than ID_WAIT: the refusal is raised
    opened.clear()
    monkeypatch.setattr(partitions, "ID_WAIT", 0.0)
    with pytest.raises(ServerIdConflictError):
        list(partitions.read_range(parse_options({}), part, Builder()))  # type: ignore[arg-type]
