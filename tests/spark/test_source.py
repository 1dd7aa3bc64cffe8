"""The ``mariadb_binlog`` source in a local SparkSession against a private primary.

Each test writes its own database and streams from the binlog position taken
just before its workload (``startingPosition=file:pos``, ``tables=db.*``), so
tests do not see each other's rows. What is shown:

- an availableNow run picks up exactly the committed rows (not a rolled-back
  or still-open transaction), and a second run from the checkpoint only the
  rows committed since;
- with ``maxRowsPerTrigger=N`` every micro-batch has at most N rows and holds
  whole transactions only;
- the sink fails mid-run, the query restarts from its checkpoint, and the
  parquet copy (examples/spark_pipeline.py) equals ``SELECT *`` of the source;
- a batch read of the primary's binlog files yields the same changelog rows
  as the stream;
- a GTID state and "latest" as startingPosition;
- a batch read of encrypted, compressed binlogs with ``keyFile``;
- a restart whose batch range was purged from the primary fails with
  BinlogPositionError;
- startingPosition=snapshot (MariaDB and MySQL 9.7) with writers moving keys
  and a sink failure in the middle: the example's parquet copy equals SELECT.
"""

from __future__ import annotations

import importlib.util
import json
import shutil
import threading
import time
from collections import Counter
from collections.abc import Iterator
from pathlib import Path
from types import ModuleType
from typing import Any

import pymysql
import pytest
from pyspark.errors import PySparkException
from pyspark.sql import DataFrame, SparkSession

from replica_client.errors import ConnectionLostError
from replica_client.testing.server import MariaDBServer, ServerVariant

from .conftest import ROOT, stream_options

pytestmark = pytest.mark.integration

_KEYS = ("op", "db", "table", "before", "after", "pk", "gtid", "server_id", "file", "pos",
         "row_index", "commit_ts", "seq")  # fmt: skip


def _example() -> ModuleType:
    path = ROOT / "examples" / "spark_pipeline.py"
    spec = importlib.util.spec_from_file_location("spark_pipeline_example", path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def _position(srv: MariaDBServer) -> str:
    file, pos = srv.sql("SHOW MASTER STATUS")[0][:2]
    return f"{file}:{pos}"


def _run(
    spark: SparkSession,
    options: dict[str, Any],
    checkpoint: Path,
    batches: list[tuple[int, list[Any]]],
    fail_at: int | None = None,
) -> None:
    """One availableNow run; ``batches`` collects (batch_id, rows) in the driver."""
    reader = spark.readStream.format("mariadb_binlog")
    for name, value in options.items():
        reader = reader.option(name, value)

    def sink(df: DataFrame, batch_id: int) -> None:
        if fail_at is not None and batch_id == fail_at:
            raise RuntimeError(f"sink failure injected at batch {batch_id}")
        batches.append((batch_id, df.collect()))

    query = (
        reader.load()
        .writeStream.foreachBatch(sink)
        .option("checkpointLocation", str(checkpoint))
        .trigger(availableNow=True)
        .start()
    )
    query.awaitTermination(120)
    assert not query.isActive, "the availableNow query did not finish"


def _run_into_copy(
    spark: SparkSession,
    options: dict[str, Any],
    checkpoint: Path,
    sink: Any,
    fail_at: int | None = None,
) -> None:
    """One availableNow run whose batches go to ``sink(df, batch_id)``; with ``fail_at``
    the sink's failure (raised after ``sink`` ran for that batch) must stop the query."""
    reader = spark.readStream.format("mariadb_binlog")
    for name, value in options.items():
        reader = reader.option(name, value)

    def each(df: DataFrame, batch_id: int) -> None:
        sink(df, batch_id)
        if batch_id == fail_at:
            raise RuntimeError(f"sink failure injected at batch {batch_id}")

    query = (
        reader.load()
        .writeStream.foreachBatch(each)
        .option("checkpointLocation", str(checkpoint))
        .trigger(availableNow=True)
        .start()
    )
    if fail_at is None:
        query.awaitTermination(120)
        assert query.exception() is None
    else:
        with pytest.raises(PySparkException, match="sink failure"):
            query.awaitTermination(120)


def _rows(batches: list[tuple[int, list[Any]]]) -> list[Any]:
    return [row for _, rows in batches for row in rows]


def commit_workload(srv: MariaDBServer, db: str) -> tuple[str, Any]:
    """``db.t``, then five committed transactions of ten rows (ids 0-49), a rolled-back
    insert (1000) and an insert (2000) left open on the connection returned (commit or
    close it); with the binlog position before them, as ``file:pos``."""
    srv.sql(f"CREATE DATABASE {db}")
    srv.sql(f"CREATE TABLE {db}.t (id INT PRIMARY KEY, v VARCHAR(20))")
    start = _position(srv)
    for t in range(5):
        srv.sql_many(
            ["BEGIN", *(f"INSERT INTO {db}.t VALUES ({t * 10 + i}, 'v{i}')" for i in range(10)),
             "COMMIT"]
        )  # fmt: skip
    srv.sql_many(["BEGIN", f"INSERT INTO {db}.t VALUES (1000, 'rolled back')", "ROLLBACK"])
    other = pymysql.connect(
        host=srv.host, port=srv.port, user=srv.user, password=srv.password, autocommit=False
    )
    with other.cursor() as cur:  # open, not committed while the query runs
        cur.execute(f"INSERT INTO {db}.t VALUES (2000, 'open')")
    return start, other


def assert_exactly_committed(rows: list[Any]) -> None:
    """``rows`` are the 50 committed inserts of :func:`commit_workload`, once each."""
    assert sorted(json.loads(r.after)["id"] for r in rows) == list(range(50))
    assert {r.op for r in rows} == {"c"}
    assert len({r.seq for r in rows}) == 50


def commit_then_update(srv: MariaDBServer, db: str, other: Any) -> list[tuple[str, int]]:
    """Commit :func:`commit_workload`'s open insert, update a row: the changes a
    stream reads next, as (op, id)."""
    other.commit()
    srv.sql(f"UPDATE {db}.t SET v = 'again' WHERE id = 7")
    return [("c", 2000), ("u", 7)]


def test_available_now_reads_exactly_committed_rows(
    spark: SparkSession, spark_primary: MariaDBServer, server_id: int, tmp_path: Path
) -> None:
    srv = spark_primary
    start, other = commit_workload(srv, "s_commit")
    try:
        opts = stream_options(srv, server_id, startingPosition=start, tables="s_commit.*")
        batches: list[tuple[int, list[Any]]] = []
        _run(spark, opts, tmp_path / "ck", batches)
        assert_exactly_committed(_rows(batches))
        expected = commit_then_update(srv, "s_commit", other)
    finally:
        other.close()
    more: list[tuple[int, list[Any]]] = []
    _run(spark, opts, tmp_path / "ck", more)
    rows = _rows(more)
    assert [(r.op, json.loads(r.after or r.before)["id"]) for r in rows] == expected
    assert min(b for b, _ in more) > max(b for b, _ in batches)


def test_row_limit_batches_end_at_transaction_boundaries(
    spark: SparkSession, spark_primary: MariaDBServer, server_id: int, tmp_path: Path
) -> None:
    srv = spark_primary
    srv.sql("CREATE DATABASE s_limit")
    srv.sql("CREATE TABLE s_limit.t (id INT PRIMARY KEY, n INT)")
    start = _position(srv)
    sizes = [(i * 7) % 9 + 1 for i in range(40)]  # 1..9 rows per transaction
    next_id = 0
    for size in sizes:
        stmts = [f"INSERT INTO s_limit.t VALUES ({next_id + i}, {size})" for i in range(size)]
        next_id += size
        srv.sql_many(["BEGIN", *stmts, "COMMIT"])
    limit = 12
    opts = stream_options(
        srv, server_id, startingPosition=start, tables="s_limit.*", maxRowsPerTrigger=limit
    )
    batches: list[tuple[int, list[Any]]] = []
    _run(spark, opts, tmp_path / "ck", batches)
    assert sum(len(rows) for _, rows in batches) == sum(sizes)
    assert len(batches) >= sum(sizes) // limit
    seen: dict[str, int] = {}
    for batch_id, rows in batches:
        assert 0 < len(rows) <= limit, f"batch {batch_id} has {len(rows)} rows"
        per_txn = Counter(r.gtid for r in rows)
        for gtid, count in per_txn.items():
            assert gtid not in seen, f"transaction {gtid} split across batches"
            seen[gtid] = count
            sizes_in_txn = {json.loads(r.after)["n"] for r in rows if r.gtid == gtid}
            assert sizes_in_txn == {count}, f"transaction {gtid} is incomplete in its batch"
    assert sorted(seen.values()) == sorted(sizes)


def test_sink_failure_then_restart_applies_every_change_once(
    spark: SparkSession, spark_primary: MariaDBServer, server_id: int, tmp_path: Path
) -> None:
    srv = spark_primary
    example = _example()
    srv.sql("CREATE DATABASE s_apply")
    srv.sql(
        "CREATE TABLE s_apply.orders (id INT PRIMARY KEY, customer VARCHAR(40), "
        "total DECIMAL(10,2), status VARCHAR(10))"
    )
    start = _position(srv)
    for t in range(12):
        srv.sql_many(
            ["BEGIN"]
            + [
                f"INSERT INTO s_apply.orders VALUES ({t * 10 + i}, 'c{i}', {t}.{i}5, 'new')"
                for i in range(10)
            ]
            + ["COMMIT"]
        )
    srv.sql("UPDATE s_apply.orders SET status = 'paid' WHERE id % 3 = 0")
    srv.sql("UPDATE s_apply.orders SET id = id + 1000 WHERE id % 10 = 1")
    srv.sql("DELETE FROM s_apply.orders WHERE id % 7 = 0")
    srv.sql("INSERT INTO s_apply.orders VALUES (7, 'back again', 1.00, 'new')")

    out = tmp_path / "orders"
    columns = "id INT, customer STRING, total STRING, status STRING"
    opts = stream_options(
        srv, server_id, startingPosition=start, tables="s_apply.orders", maxRowsPerTrigger=30
    )
    applied: list[int] = []

    def sink(df: DataFrame, batch_id: int) -> None:
        example.apply_batch(spark, df, batch_id, out=str(out), keys=["id"], columns=columns)
        applied.append(batch_id)

    def run(fail_at: int | None) -> None:
        _run_into_copy(spark, opts, tmp_path / "ck", sink, fail_at)

    run(fail_at=2)
    assert applied == [0, 1, 2]  # batch 2 written, its commit failed
    run(fail_at=None)
    assert applied[:4] == [0, 1, 2, 2], "batch 2 was replayed from the checkpoint"
    version = example.latest_version(str(out))
    assert version is not None
    copy = sorted(tuple(r) for r in spark.read.parquet(version).drop("_seq").collect())
    primary = sorted(
        (r[0], r[1], str(r[2]), r[3])
        for r in srv.sql("SELECT id, customer, total, status FROM s_apply.orders")
    )
    assert copy == primary


#: The changes of :func:`files_workload`, by op.
FILES_OPS = {"c": 2, "u": 1, "d": 1}


def files_workload(srv: MariaDBServer, db: str) -> str:
    """``db.t`` with a column of most types, then two inserts, an update and a delete
    over two binlog files; the position before them, as ``file:pos``."""
    srv.sql(f"CREATE DATABASE {db}")
    srv.sql(
        f"CREATE TABLE {db}.t (id INT PRIMARY KEY, d DECIMAL(12,3), b VARBINARY(8), "
        "dt DATETIME(6), ts TIMESTAMP(3) NULL, tm TIME(2), j JSON, e ENUM('x','y'), "
        "s SET('a','b','c'), f DOUBLE, u BIGINT UNSIGNED, txt TEXT)"
    )
    start = _position(srv)
    srv.sql(
        f"INSERT INTO {db}.t VALUES (1, -12.5, 0x00ff10, '2024-02-29 13:45:00.123456', "
        "'2024-03-01 00:00:01.5', '-838:59:59.99', '{\"k\": [1, 2.5]}', 'y', 'a,c', 1.5, "
        "18446744073709551615, 'héllo')"
    )
    srv.sql(f"INSERT INTO {db}.t (id) VALUES (2)")
    srv.sql("FLUSH BINARY LOGS")  # the range spans two files
    srv.sql(f"UPDATE {db}.t SET txt = 'changed', d = 0.001 WHERE id = 1")
    srv.sql(f"DELETE FROM {db}.t WHERE id = 2")
    return start


def copy_binlogs(srv: MariaDBServer, copy: Path) -> Path:
    """A copy of the primary's binlog files in the new directory ``copy``."""
    copy.mkdir()
    for f in srv.binlog_files():
        shutil.copy(f, copy / f.name)
    return copy


def test_batch_read_of_binlog_files_equals_the_stream(
    spark: SparkSession, spark_primary: MariaDBServer, server_id: int, tmp_path: Path
) -> None:
    srv = spark_primary
    start = files_workload(srv, "s_files")
    opts = stream_options(srv, server_id, startingPosition=start, tables="s_files.*")
    batches: list[tuple[int, list[Any]]] = []
    _run(spark, opts, tmp_path / "ck", batches)
    streamed = sorted(tuple(r) for r in _rows(batches))
    assert Counter(r[0] for r in streamed) == FILES_OPS

    copy = copy_binlogs(srv, tmp_path / "binlogs")
    df = spark.read.format("mariadb_binlog").option("tables", "s_files.*").load(str(copy))
    assert tuple(df.columns) == _KEYS
    from_files = sorted(tuple(r) for r in df.collect())
    assert from_files == streamed
    first = json.loads(next(r for r in streamed if r[0] == "c" and '"id":1' in r[4])[4])
    assert first["d"] == "-12.500"
    assert first["b"] == "AP8Q"
    assert first["dt"] == "2024-02-29T13:45:00.123456"
    assert first["tm"] == "-838:59:59.99"
    assert first["s"] == ["a", "c"]
    assert first["u"] == 18446744073709551615
    assert first["txt"] == "héllo"
    assert [r.seq for r in df.orderBy("seq").collect()] == sorted(r[12] for r in from_files)
    glob_df = spark.read.format("mariadb_binlog").option("tables", "s_files.*")
    assert glob_df.load(str(copy / "mysql-bin.*")).count() == len(streamed)
    # files cut into a task per transaction or so: the same rows
    split = (
        spark.read.format("mariadb_binlog")
        .option("tables", "s_files.*")
        .option("splitBytes", "200")
        .load(str(copy))
    )
    files = len(list(copy.iterdir()))
    assert split.rdd.getNumPartitions() > files
    assert sorted(tuple(r) for r in split.collect()) == streamed


def test_purged_range_fails_loudly_on_restart(
    spark: SparkSession, purge_primary: MariaDBServer, server_id: int, tmp_path: Path
) -> None:
    srv = purge_primary
    srv.sql("CREATE DATABASE s_purge")
    srv.sql("CREATE TABLE s_purge.t (id INT PRIMARY KEY)")
    start = _position(srv)
    for i in range(3):
        srv.sql(f"INSERT INTO s_purge.t VALUES ({i})")
    opts = stream_options(srv, server_id, startingPosition=start, tables="s_purge.*")
    batches: list[tuple[int, list[Any]]] = []
    with pytest.raises(PySparkException, match="sink failure"):
        _run(spark, opts, tmp_path / "ck", batches, fail_at=0)
    srv.sql("FLUSH BINARY LOGS")
    current = srv.sql("SHOW MASTER STATUS")[0][0]
    # A dump thread the primary has not yet seen go away keeps its file: PURGE
    # would skip it. Wait for the failed query's connection to be gone.
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline:
        srv.sql(f"PURGE BINARY LOGS TO '{current}'")
        if [r[0] for r in srv.sql("SHOW BINARY LOGS")] == [current]:
            break
        time.sleep(0.2)
    assert [r[0] for r in srv.sql("SHOW BINARY LOGS")] == [current]
    with pytest.raises(PySparkException, match="BinlogPositionError"):
        _run(spark, opts, tmp_path / "ck", batches)
    assert batches == []


def test_gtid_and_latest_starting_positions(
    spark: SparkSession, spark_primary: MariaDBServer, tmp_path: Path
) -> None:
    srv = spark_primary
    srv.sql("CREATE DATABASE s_start")
    srv.sql("CREATE TABLE s_start.t (id INT PRIMARY KEY)")
    srv.sql("INSERT INTO s_start.t VALUES (1), (2)")
    gtid = str(srv.sql("SELECT @@gtid_binlog_pos")[0][0])
    srv.sql("INSERT INTO s_start.t VALUES (3)")
    srv.sql("INSERT INTO s_start.t VALUES (4), (5)")

    by_gtid: list[tuple[int, list[Any]]] = []
    opts = stream_options(srv, 5901, startingPosition=gtid, tables="s_start.*")
    _run(spark, opts, tmp_path / "ck_gtid", by_gtid)
    assert sorted(json.loads(r.after)["id"] for r in _rows(by_gtid)) == [3, 4, 5]
    srv.sql("INSERT INTO s_start.t VALUES (6)")
    _run(spark, opts, tmp_path / "ck_gtid", by_gtid)  # resumes at a file position
    assert sorted(json.loads(r.after)["id"] for r in _rows(by_gtid)) == [3, 4, 5, 6]

    latest: list[tuple[int, list[Any]]] = []
    opts = stream_options(srv, 5902, startingPosition="latest", tables="s_start.*")
    _run(spark, opts, tmp_path / "ck_latest", latest)
    assert _rows(latest) == []
    srv.sql("DELETE FROM s_start.t WHERE id = 6")
    _run(spark, opts, tmp_path / "ck_latest", latest)
    assert [(r.op, r.before) for r in _rows(latest)] == [("d", '{"id":6}')]


def test_batch_read_of_encrypted_and_compressed_binlogs(
    spark: SparkSession, mariadb_primary_factory: Any, tmp_path: Path
) -> None:
    srv = mariadb_primary_factory(ServerVariant(encrypt=True, compress=True))
    srv.sql("CREATE DATABASE IF NOT EXISTS s_enc")
    srv.sql("CREATE TABLE s_enc.t (id INT PRIMARY KEY, v VARCHAR(100))")
    inserts = [f"INSERT INTO s_enc.t VALUES ({i}, REPEAT('x', 50))" for i in range(20)]
    srv.sql_many(["BEGIN", *inserts, "COMMIT"])
    srv.sql("UPDATE s_enc.t SET v = 'short' WHERE id < 5")
    srv.sql("FLUSH BINARY LOGS")
    copy = copy_binlogs(srv, tmp_path / "binlogs")
    assert srv.key_file is not None
    df = (
        spark.read.format("mariadb_binlog")
        .option("keyFile", str(srv.key_file))
        .option("tables", "s_enc.t")
        .option("splitBytes", "200")  # encrypted sizes: each file stays one task
        .load(str(copy))
    )
    assert df.rdd.getNumPartitions() == len(list(copy.iterdir()))
    ops = Counter(r.op for r in df.collect())
    assert ops == {"c": 20, "u": 5}
    with pytest.raises(PySparkException, match=r"Decryption|key"):
        spark.read.format("mariadb_binlog").option("tables", "s_enc.t").load(str(copy)).count()


def test_planner_reopens_a_dump_the_primary_dropped_between_batches(
    spark_primary: MariaDBServer, server_id: int
) -> None:
    from replica_client.spark.options import parse_options
    from replica_client.spark.partitions import read_range
    from replica_client.spark.planner import StreamPlanner

    srv = spark_primary
    srv.sql("CREATE DATABASE s_drop")
    srv.sql("CREATE TABLE s_drop.t (id INT PRIMARY KEY)")
    start = _position(srv)
    for i in range(10):
        srv.sql(f"INSERT INTO s_drop.t VALUES ({i})")
    options = stream_options(srv, server_id, startingPosition=start, tables="s_drop.*")
    planner = StreamPlanner(parse_options({k: str(v) for k, v in options.items()}))
    offset = planner.initial_offset()
    seen = reopened = 0
    for _ in range(20):
        end = planner.latest_offset(offset, 3, None)
        if end == offset:
            break
        for part in planner.plan(offset, end):
            seen += sum(batch.num_rows for batch in read_range(planner.opts, part))
        if planner._txns is not None:  # as if the primary had dropped the idle dump
            planner.close()
            planner._txns, planner._live = _dropped(), end
            reopened += 1
        offset = end
    planner.close()
    assert seen == 10  # one row per insert, each read once
    assert reopened >= 3


def _dropped() -> Iterator[Any]:
    raise ConnectionLostError("the primary closed the connection")
    yield


_COLUMNS = "id INT, v INT, note STRING"


def _apply_guarded(mirror: dict[int, tuple[int, dict[str, Any]]], row: Any) -> None:
    """Apply one changelog row to ``mirror`` (id -> (seq, row)) the way a sink merges a
    snapshot with the stream: a change to a key only when its seq is above the key's."""
    seq = int(row["seq"])
    before = json.loads(row["before"]) if row["before"] else None
    after = json.loads(row["after"]) if row["after"] else None
    if before is not None and (after is None or after["id"] != before["id"]):
        held = mirror.get(before["id"])
        if held is not None and seq > held[0]:
            del mirror[before["id"]]
    if after is not None:
        held = mirror.get(after["id"])
        if held is None or seq > held[0]:
            mirror[after["id"]] = (seq, after)


def test_snapshot_then_stream_with_writers_and_a_restart_merges_to_select(
    spark: SparkSession, flavor_primary: MariaDBServer, server_id: int, tmp_path: Path
) -> None:
    srv = flavor_primary
    srv.sql_many(
        [
            "DROP DATABASE IF EXISTS s_snap",
            "CREATE DATABASE s_snap",
            "CREATE TABLE s_snap.items (id INT PRIMARY KEY, v INT, note VARCHAR(20))",
            "INSERT INTO s_snap.items WITH RECURSIVE s(n) AS (SELECT 1 UNION ALL "
            "SELECT n + 1 FROM s WHERE n < 40) SELECT a.n * 40 - b.n + 1, a.n * 40 - b.n + 1, "
            "CONCAT('n', a.n * 40 - b.n + 1) FROM s AS a, s AS b WHERE a.n <= 30",
        ]
    )
    stop = threading.Event()

    def writer() -> None:
        conn = pymysql.connect(
            host=srv.host, port=srv.port, user=srv.user, password=srv.password, autocommit=True
        )
        i = 0
        try:
            with conn.cursor() as cur:
                while not stop.is_set():
                    key = (i * 7919) % 1300 + 1
                    cur.execute("BEGIN")
                    cur.execute("UPDATE s_snap.items SET v = v + 1000 WHERE id = %s", (key,))
                    cur.execute("DELETE FROM s_snap.items WHERE id = %s", ((key * 31) % 1300,))
                    cur.execute("INSERT IGNORE INTO s_snap.items VALUES (%s, 0, 'w')", (2000 + i,))
                    cur.execute(
                        "UPDATE IGNORE s_snap.items SET id = id + 5000 WHERE id = %s", (key + 1,)
                    )
                    cur.execute("COMMIT")
                    i += 1
                    time.sleep(0.02)
        finally:
            conn.close()

    opts = stream_options(
        srv,
        server_id,
        startingPosition="snapshot",
        tables="s_snap.items",
        snapshotChunkRows=100,
        maxPartitions=2,
    )
    batches: list[tuple[int, list[Any]]] = []
    example = _example()
    out = str(tmp_path / "copy")

    def sink(df: DataFrame, batch_id: int) -> None:
        example.apply_batch(spark, df, batch_id, out=out, keys=["id"], columns=_COLUMNS)
        batches.append((batch_id, df.collect()))

    def run(fail_at: int | None = None) -> None:
        _run_into_copy(spark, opts, tmp_path / "ck", sink, fail_at)

    writing = threading.Thread(target=writer)
    writing.start()
    try:
        run(fail_at=3)
        assert [b for b, _ in batches] == [0, 1, 2, 3]  # batch 3 applied, not committed
        del batches[-1]  # (Spark replays it: what counts is its second run)
        run()  # resumes the snapshot from batch 3
    finally:
        stop.set()
        writing.join(60)
    run()  # the changes after the writers stopped
    rows = _rows(batches)
    ops = Counter(r["op"] for r in rows)
    snapshot_batches = [b for b, rs in batches if rs and all(r["op"] == "r" for r in rs)]
    mirror: dict[int, tuple[int, dict[str, Any]]] = {}
    for row in rows:
        _apply_guarded(mirror, row)
    want = {
        int(i): {"id": int(i), "v": int(v), "note": note}
        for i, v, note in srv.sql("SELECT id, v, note FROM s_snap.items")
    }
    print(
        f"batches {[b for b, _ in batches]}, snapshot batches {snapshot_batches}, ops {dict(ops)}"
    )
    assert ops["r"] >= 1200 - ops["d"] and ops["u"] > 0 and ops["d"] > 0
    assert len(snapshot_batches) >= 6  # 12+ ranges, two per batch
    reads = [r for r in rows if r["op"] == "r"]
    twice = [pk for pk, n in Counter(r["pk"] for r in reads).items() if n > 1]
    assert not twice, [
        (b, r["pk"], r["seq"], r["row_index"]) for b, rs in batches for r in rs if r["pk"] in twice
    ]
    assert {k: v for k, (_, v) in mirror.items()} == want
    # The example's parquet copy (examples/spark_pipeline.py) merges the same way.
    version = example.latest_version(out)
    assert version is not None
    copy = {r["id"]: r.asDict() for r in spark.read.parquet(version).drop("_seq").collect()}
    assert copy == want


def test_example_copy_skips_a_change_its_snapshot_read_holds(
    spark: SparkSession, tmp_path: Path
) -> None:
    """A streamed change with a seq below the read of its row (the read holds it) is
    skipped; one above it applies; deletes likewise."""
    example = _example()
    out = str(tmp_path / "copy")

    def batch(rows: list[tuple[str, str | None, str | None, int]]) -> DataFrame:
        return spark.createDataFrame(rows, "op STRING, before STRING, after STRING, seq BIGINT")

    reads = batch(
        [
            ("r", None, '{"id":1,"v":5,"note":"read"}', 100),
            ("r", None, '{"id":2,"v":7,"note":"read"}', 100),
        ]
    )
    example.apply_batch(spark, reads, 0, out=out, keys=["id"], columns=_COLUMNS)
    stream = batch(
        [
            ("u", '{"id":1,"v":4,"note":"old"}', '{"id":1,"v":5,"note":"old"}', 50),
            ("d", '{"id":2,"v":7,"note":"read"}', None, 60),
            ("u", '{"id":1,"v":5,"note":"read"}', '{"id":1,"v":6,"note":"new"}', 150),
            ("c", None, '{"id":3,"v":1,"note":"new"}', 160),
        ]
    )
    example.apply_batch(spark, stream, 1, out=out, keys=["id"], columns=_COLUMNS)
    version = example.latest_version(out)
    assert version is not None
    copy = sorted(tuple(r) for r in spark.read.parquet(version).collect())
    assert copy == [(1, 6, "new", 150), (2, 7, "read", 100), (3, 1, "new", 160)]
