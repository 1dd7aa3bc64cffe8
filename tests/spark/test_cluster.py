"""The ``mariadb_binlog`` source on a Spark standalone cluster: a master and two
1-core workers (:class:`replica_client.testing.spark_cluster.SparkCluster`).

In ``local[N]`` tasks never leave the driver's JVM; on a cluster each is
serialized and sent to an executor over RPC, and executors run Python workers
of their own. Against the same truths as the local tests:

- a batch read of binlog files equals the files' decode (``open_binlog``), and
  applied by key it equals SELECT;
- an availableNow stream whose sink fails, restarted from its checkpoint, then
  run again for later changes: every row once, equal to SELECT;
- ``startingPosition=snapshot``, then a restart for the changes after it;
- ``typed=true``: every typed value compared with SELECT (the oracle table).

Each checks that both executors ran tasks, prints the tasks' serialized sizes
(the driver's task log) and checks them with ``Tasks.assert_tasks_under``: a
binlog file, a transaction of the stream and a snapshot's key range each hold
more than 1 MiB of rows, and every task stays under 1 MiB (a task names what
to read; it does not carry it).

The cluster's driver runs in a process of its own (tests/spark/cluster_driver.py
says why); the functions below marked "in the driver" run there.
"""

from __future__ import annotations

import json
import shutil
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from pyspark.errors import PySparkException
from pyspark.sql import Row, SparkSession

import replica_client as rc
from replica_client.testing.pytest_plugin import PrimaryFactory
from replica_client.testing.server import MariaDBServer, ServerVariant
from replica_client.testing.spark_cluster import SparkCluster, Tasks
from tests import oracle

from .cluster_driver import ClusterDriver
from .conftest import ROOT, stream_options
from .test_source import _run
from .test_typed import _load, _oracle_checks, oracle_workload

pytestmark = pytest.mark.integration

MIB = 1 << 20
#: Spark's change codes for the decoder's.
_OPS = {"insert": "c", "update": "u", "delete": "d"}
#: One row's filler: ~1.2 MiB per transaction of 25 rows.
_PAD = 50_000

Batches = list[tuple[int, list[Row]]]


@pytest.fixture(scope="module")
def cluster() -> Iterator[ClusterDriver]:
    """A driver on a fresh cluster; the workers and the driver's JVM start together."""
    spark_cluster = SparkCluster(workers=2, cores=1)
    spark_cluster.start(wait=False)
    try:
        with ClusterDriver(spark_cluster, ROOT).start() as driver:
            spark_cluster.wait_for_workers()
            driver.wait_ready()
            yield driver
    finally:
        spark_cluster.stop()


# -- in the driver ------------------------------------------------------------------------


def _read(spark: SparkSession, options: dict[str, Any]) -> list[Row]:
    """A batch read's rows."""
    return _load(spark, options).collect()


def _stream(
    spark: SparkSession, options: dict[str, Any], checkpoint: str, fail_at: int | None = None
) -> Batches:
    """One availableNow run's batches; with ``fail_at`` the sink fails at that batch (and
    the run must fail), the batches before it delivered."""
    batches: Batches = []
    if fail_at is None:
        _run(spark, options, Path(checkpoint), batches)
        return batches
    try:
        _run(spark, options, Path(checkpoint), batches, fail_at=fail_at)
    except PySparkException as exc:
        assert "sink failure" in str(exc)
        return batches
    raise AssertionError(f"the sink's failure at batch {fail_at} did not stop the run")


def _stream_totals(
    spark: SparkSession, options: dict[str, Any], checkpoint: str
) -> list[tuple[int, int, int, int, int]]:
    """One availableNow run, each batch summed where it runs (its rows are not brought
    to the driver): ``(batch id, rows, distinct ids, smallest id, characters of pad)``."""
    from pyspark.sql import DataFrame
    from pyspark.sql import functions as f

    totals: list[tuple[int, int, int, int, int]] = []

    def sink(df: DataFrame, batch_id: int) -> None:
        after = f.from_json("after", "id INT, pad STRING")
        row = df.select(after.alias("a")).agg(
            f.count("*"), f.countDistinct("a.id"), f.min("a.id"), f.sum(f.length("a.pad"))
        ).first()
        assert row is not None
        totals.append((batch_id, int(row[0]), int(row[1]), int(row[2] or 0), int(row[3] or 0)))

    reader = spark.readStream.format("mariadb_binlog")
    for name, value in options.items():
        reader = reader.option(name, value)
    query = (
        reader.load()
        .writeStream.foreachBatch(sink)
        .option("checkpointLocation", checkpoint)
        .trigger(availableNow=True)
        .start()
    )
    query.awaitTermination(600)
    assert not query.isActive, "the availableNow query did not finish"
    return totals


# -- in the tests -------------------------------------------------------------------------


def _spread(what: str, tasks: Tasks) -> None:
    """Print the tasks' sizes; both executors must have run some."""
    print(f"{what}: {tasks.summary()}")
    assert len(tasks.per_executor()) == 2, f"{what}: not on both executors: {tasks.summary()}"


def _in_order(batches: Batches) -> list[Row]:
    """The rows of micro-batches in batch order, each batch's in ``seq`` order."""
    return [r for _, rows in sorted(batches, key=lambda b: b[0])
            for r in sorted(rows, key=lambda r: int(r.seq))]  # fmt: skip


def _apply(mirror: dict[int, dict[str, Any]], rows: list[Row]) -> None:
    """Apply changelog rows, in their order, to ``mirror`` (id -> row)."""
    for row in rows:
        if row.before is not None:
            mirror.pop(json.loads(row.before)["id"], None)
        if row.after is not None:
            after = json.loads(row.after)
            mirror[after["id"]] = after


def _select(srv: MariaDBServer, table: str) -> dict[int, dict[str, Any]]:
    return {int(i): {"id": int(i), "n": int(n), "pad": pad}
            for i, n, pad in srv.sql(f"SELECT id, n, pad FROM {table}")}  # fmt: skip


def _table(srv: MariaDBServer, db: str) -> str:
    """``db.t`` afresh; the binlog position after its creation, as ``file:pos``."""
    srv.sql_many([f"DROP DATABASE IF EXISTS {db}", f"CREATE DATABASE {db}",
                  f"CREATE TABLE {db}.t (id INT PRIMARY KEY, n INT, pad MEDIUMTEXT)"])  # fmt: skip
    file, pos = srv.binlog_position()
    return f"{file}:{pos}"


def _insert(srv: MariaDBServer, table: str, ids: range, pad: int) -> None:
    """One transaction inserting ``ids``, each row ``pad`` characters long."""
    srv.sql_many(["BEGIN",
                  *(f"INSERT INTO {table} VALUES ({i}, 0, REPEAT('{i % 10}', {pad}))" for i in ids),
                  "COMMIT"])  # fmt: skip


def test_batch_read_of_binlog_files_on_the_cluster_equals_the_file_decode(
    cluster: ClusterDriver, spark_primary: MariaDBServer, tmp_path: Path
) -> None:
    srv = spark_primary
    _table(srv, "c_files")
    srv.sql("FLUSH BINARY LOGS")
    first = srv.binlog_files()[-1].name
    for part in range(3):  # three files of ~1.2 MiB of rows: a task each
        _insert(srv, "c_files.t", range(part * 25, part * 25 + 25), _PAD)
        srv.sql(f"UPDATE c_files.t SET n = {part} + 1 WHERE id % 7 = {part}")
        srv.sql(f"DELETE FROM c_files.t WHERE id = {part * 25 + 3}")
        srv.sql("FLUSH BINARY LOGS")
    copy = tmp_path / "binlogs"
    copy.mkdir()
    for f in srv.binlog_files():
        if f.name >= first:
            shutil.copy(f, copy / f.name)

    ran = cluster.call(_read, {"path": str(copy), "tables": "c_files.*"})
    rows = sorted(ran.value, key=lambda r: int(r.seq))
    with rc.open_binlog(sorted(copy.iterdir()), tables="c_files.*") as events:
        decoded = [
            (_OPS[c.op], c.position.file if c.position else None,
             c.position.pos if c.position else None, c.row_index, c.gtid, c.before, c.after)
            for c in rc.iter_changes(events)
        ]  # fmt: skip
    assert [
        (r.op, r.file, r.pos, r.row_index, r.gtid,
         json.loads(r.before) if r.before else None, json.loads(r.after) if r.after else None)
        for r in rows
    ] == decoded  # fmt: skip
    mirror: dict[int, dict[str, Any]] = {}
    _apply(mirror, rows)
    assert mirror == _select(srv, "c_files.t")
    _spread("batch read", ran.tasks)
    assert len(ran.tasks) >= 3
    ran.tasks.assert_tasks_under(MIB)


def test_available_now_stream_on_the_cluster_restarts_from_its_checkpoint(
    cluster: ClusterDriver, spark_primary: MariaDBServer, server_id: int, tmp_path: Path
) -> None:
    srv = spark_primary
    start = _table(srv, "c_stream")
    for t in range(30):
        _insert(srv, "c_stream.t", range(t * 5, t * 5 + 5), 200)
    _insert(srv, "c_stream.t", range(1000, 1025), _PAD)  # ~1.2 MiB in one transaction
    opts = stream_options(srv, server_id, startingPosition=start, tables="c_stream.*",
                          maxRowsPerTrigger=40, maxPartitions=2, partitionBytes=2048)  # fmt: skip
    checkpoint = str(tmp_path / "ck")

    failed = cluster.call(_stream, opts, checkpoint, fail_at=2)
    assert [b for b, _ in failed.value] == [0, 1]
    resumed = cluster.call(_stream, opts, checkpoint)
    assert resumed.value[0][0] == 2, "the failed batch is read again from the checkpoint"
    srv.sql("UPDATE c_stream.t SET n = n + 1 WHERE id % 3 = 0")
    srv.sql("DELETE FROM c_stream.t WHERE id % 4 = 0")
    later = cluster.call(_stream, opts, checkpoint)
    assert min(b for b, _ in later.value) > max(b for b, _ in resumed.value)

    first_rows = _in_order(failed.value + resumed.value)
    assert sorted(json.loads(r.after)["id"] for r in first_rows) == [
        *range(150), *range(1000, 1025)]  # fmt: skip
    later_rows = _in_order(later.value)
    assert {r.op for r in later_rows} == {"u", "d"}
    mirror: dict[int, dict[str, Any]] = {}
    _apply(mirror, first_rows + later_rows)
    assert mirror == _select(srv, "c_stream.t")
    tasks = Tasks(failed.tasks.launches + resumed.tasks.launches + later.tasks.launches)
    _spread("stream micro-batches", tasks)
    tasks.assert_tasks_under(MIB)  # the 1.2 MiB transaction is read by its task


def test_snapshot_on_the_cluster_then_the_changes_after_it_equal_select(
    cluster: ClusterDriver, spark_primary: MariaDBServer, server_id: int, tmp_path: Path
) -> None:
    srv = spark_primary
    _table(srv, "c_snap")
    for chunk in range(4):  # key ranges of 25 rows, ~1.2 MiB each
        _insert(srv, "c_snap.t", range(chunk * 25, chunk * 25 + 25), _PAD)
    opts = stream_options(srv, server_id, startingPosition="snapshot", tables="c_snap.t",
                          snapshotChunkRows=25, maxPartitions=2)  # fmt: skip
    checkpoint = str(tmp_path / "ck")

    snapshot = cluster.call(_stream, opts, checkpoint)
    reads = _in_order(snapshot.value)
    assert {r.op for r in reads} == {"r"}
    mirror: dict[int, dict[str, Any]] = {}
    _apply(mirror, reads)
    assert mirror == _select(srv, "c_snap.t")
    srv.sql("UPDATE c_snap.t SET n = 7 WHERE id % 5 = 0")
    srv.sql("DELETE FROM c_snap.t WHERE id % 6 = 1")
    _insert(srv, "c_snap.t", range(500, 503), 10)
    later = cluster.call(_stream, opts, checkpoint)
    assert min(b for b, _ in later.value) > max(b for b, _ in snapshot.value)
    _apply(mirror, _in_order(later.value))
    assert mirror == _select(srv, "c_snap.t")
    _spread("snapshot", snapshot.tasks)
    assert len(snapshot.tasks) >= 4
    snapshot.tasks.assert_tasks_under(MIB)
    print(f"stream after the snapshot: {later.tasks.summary()}")


def test_typed_stream_on_the_cluster_equals_select_for_every_column_type(
    cluster: ClusterDriver, spark_primary: MariaDBServer, server_id: int, tmp_path: Path
) -> None:
    srv = spark_primary
    file, pos = srv.binlog_position()
    w = oracle_workload(srv, random_rows=40, seed=11)
    opts = stream_options(
        srv, server_id, startingPosition=f"{file}:{pos}", tables=f"{oracle.SCHEMA}.{oracle.TABLE}",
        typed="true", invalidValues="null", maxRowsPerTrigger=100, maxPartitions=2,
        partitionBytes=4096,
    )  # fmt: skip
    ran = cluster.call(_stream, opts, str(tmp_path / "ck"))
    rows = _in_order(ran.value)
    compared = _oracle_checks(rows, w, mysql=False)
    print(f"typed: {len(rows)} rows, {compared} values compared with SELECT")
    assert compared == (w.inserted + 2 * len(w.updated) + len(w.deleted)) * (
        len(oracle.COLUMNS) + 1
    )
    _spread("typed stream micro-batches", ran.tasks)
    ran.tasks.assert_tasks_under(MIB)


#: The large transaction: rows of 1 MiB, 310 MiB in all, on a primary of its own.
BIG_VARIANT = ServerVariant(extra_args=("--binlog-row-event-max-size=65536",))
_BIG_ROWS, _BIG_PAD = 310, 1 << 20


@pytest.fixture(scope="module")
def big_primary(mariadb_primary_factory: PrimaryFactory) -> MariaDBServer:
    """A primary of its own: its binlog holds the large transaction, no other test's."""
    return mariadb_primary_factory(BIG_VARIANT)


def test_a_transaction_over_300_mb_streams_on_the_cluster_with_default_settings(
    cluster: ClusterDriver, big_primary: MariaDBServer, server_id: int, tmp_path: Path
) -> None:
    """A transaction larger than spark.rpc.message.maxSize (128 MiB, the default) and
    than maxBytesPerTrigger: one micro-batch, read by one task that carries none of it."""
    srv = big_primary
    start = _table(srv, "c_big")
    srv.sql_many(["BEGIN",
                  *(f"INSERT INTO c_big.t VALUES ({i}, 0, REPEAT('{i % 10}', {_BIG_PAD}))"
                    for i in range(_BIG_ROWS)),
                  "COMMIT"])  # fmt: skip
    file, end = srv.binlog_position()
    assert file == start.split(":")[0] and end - int(start.split(":")[1]) > 300_000_000
    _insert(srv, "c_big.t", range(1000, 1003), 10)  # a small one after it
    opts = stream_options(srv, server_id, startingPosition=start, tables="c_big.*")
    ran = cluster.call(_stream_totals, opts, str(tmp_path / "ck"))
    totals = sorted(ran.value)
    assert sum(t[1] for t in totals) == _BIG_ROWS + 3
    big = [t for t in totals if t[1] == _BIG_ROWS]
    assert len(big) == 1, f"the transaction is not one batch: {totals}"
    assert big[0][2:] == (_BIG_ROWS, 0, _BIG_ROWS * _BIG_PAD)  # every row once, whole
    print(f"300 MB transaction: {ran.tasks.summary()}")
    ran.tasks.assert_tasks_under(MIB)
