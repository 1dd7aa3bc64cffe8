"""Stream a MariaDB table's changes into a parquet copy with Spark, exactly once.

Usage::

    pip install 'replica-client[spark]'
    export PYSPARK_PYTHON=$(which python3)     # the interpreter with replica_client

    # against your primary (keeps running; Ctrl-C to stop)
    python3 examples/spark_pipeline.py --host db1 --user repl --password ... \\
        --server-id 4242 --table shop.orders --key id \\
        --columns "id INT, customer STRING, total STRING, status STRING" \\
        --out /data/orders --checkpoint /data/orders_checkpoint

    # self-contained demo: a private MariaDB (needs mariadbd), a workload,
    # one availableNow run, then a check that the copy equals SELECT *
    python3 examples/spark_pipeline.py --demo

How a micro-batch is applied (``apply_batch``), given the changelog rows of
the ``mariadb_binlog`` source:

1. parse ``before``/``after`` (JSON text) with the table's columns;
2. turn every change into keyed actions: an insert, update or snapshot read
   (``op`` ``r``, from ``startingPosition=snapshot``) upserts its ``after``
   row, a delete removes its ``before`` key, an update that changed the key
   also removes the old key;
3. keep the last action per key by ``seq`` (the binlog order), and only where
   its ``seq`` is above the one stored with the key's row (column ``_seq``):
   a streamed change that a snapshot's read of the row already holds is
   skipped, so the snapshot and the stream merge exactly;
4. the new table = the previous version without the touched keys, plus the
   upserted rows; it is written as parquet to ``<out>/batch=<batch_id>``.

Idempotent per batch id: batch N always starts from the newest complete
version older than N, and overwrites its own directory, so when the sink fails
and Spark replays batch N from the checkpoint the result is the same. Readers
use :func:`latest_version`.

With Delta Lake (needs the delta-spark jars, fetched from Maven at run time)
step 4 becomes one MERGE on the deduplicated actions ``latest``::

    from delta.tables import DeltaTable
    (DeltaTable.forPath(spark, out).alias("t")
       .merge(latest.alias("s"), " AND ".join(f"t.{k} = s.{k}" for k in keys))
       .whenMatchedDelete(condition="s._deleted AND s.seq > t._seq")
       .whenMatchedUpdateAll(condition="NOT s._deleted AND s.seq > t._seq")
       .whenNotMatchedInsertAll(condition="NOT s._deleted")
       .execute())

(``latest`` carrying ``seq`` as ``_seq`` for the stored rows).

and for idempotence keep the last applied batch id in the table's
``userMetadata`` (or ``txnAppId``/``txnVersion`` writer options) and skip a
batch id already applied.
"""

from __future__ import annotations

import argparse
import os
import re
import shutil
import sys
import tempfile
from collections.abc import Sequence
from pathlib import Path
from typing import Any

__all__ = ["apply_batch", "latest_version", "main", "start_pipeline"]

_VERSION = re.compile(r"batch=(\d+)")


def _versions(out: str) -> list[int]:
    """Complete versions (a ``_SUCCESS`` marker is written when a parquet job commits)."""
    root = Path(out)
    if not root.is_dir():
        return []
    found = []
    for entry in root.iterdir():
        m = _VERSION.fullmatch(entry.name)
        if m and (entry / "_SUCCESS").exists():
            found.append(int(m[1]))
    return sorted(found)


def latest_version(out: str) -> str | None:
    """Directory of the newest complete version of the copy, or None before the first batch."""
    versions = _versions(out)
    return str(Path(out) / f"batch={versions[-1]}") if versions else None


def apply_batch(
    spark: Any,
    changes: Any,
    batch_id: int,
    *,
    out: str,
    keys: Sequence[str],
    columns: str,
    keep_versions: int = 3,
) -> None:
    """Apply one micro-batch of changelog rows to the parquet copy at ``out``."""
    from pyspark.sql import Window
    from pyspark.sql import functions as sf

    parsed = changes.select(
        "op",
        "seq",
        sf.from_json("before", columns).alias("b"),
        sf.from_json("after", columns).alias("a"),
    )
    names = [f.name for f in spark.createDataFrame([], columns).schema.fields]
    row_cols = [sf.col(f"a.{n}").alias(n) for n in names]
    null_cols = [sf.lit(None).cast(t.dataType).alias(t.name)
                 for t in spark.createDataFrame([], columns).schema.fields]  # fmt: skip
    key_changed = sf.lit(False)
    for k in keys:
        key_changed = key_changed | ~sf.col(f"a.{k}").eqNullSafe(sf.col(f"b.{k}"))

    upserts = parsed.where(sf.col("op").isin("c", "u", "r")).select(
        *[sf.col(f"a.{k}").alias(f"_k_{k}") for k in keys],
        sf.col("seq"),
        sf.lit(False).alias("_deleted"),
        *row_cols,
    )
    deletes = parsed.where((sf.col("op") == "d") | ((sf.col("op") == "u") & key_changed)).select(
        *[sf.col(f"b.{k}").alias(f"_k_{k}") for k in keys],
        sf.col("seq"),  # an update that moved the key removes the old key
        sf.lit(True).alias("_deleted"),
        *null_cols,
    )
    key_cols = [f"_k_{k}" for k in keys]
    window = Window.partitionBy(*key_cols).orderBy(sf.col("seq").desc(), sf.col("_deleted").asc())
    latest = (
        upserts.unionByName(deletes)
        .withColumn("_rn", sf.row_number().over(window))
        .where("_rn = 1")
        .drop("_rn")
    )

    base = None
    older = [v for v in _versions(out) if v < batch_id]
    if older:
        base = spark.read.parquet(str(Path(out) / f"batch={older[-1]}"))
    else:
        base = spark.createDataFrame([], f"{columns}, _seq BIGINT")
    # An action applies only above the seq of the change that wrote the key's row: a
    # change the snapshot's read of that row already holds (lower seq) is skipped.
    held = base.select(*[sf.col(k).alias(c) for c, k in zip(key_cols, keys, strict=True)],
                       sf.col("_seq").alias("_held"))  # fmt: skip
    applied = latest.join(held, on=key_cols, how="left").where(
        sf.col("_held").isNull() | (sf.col("seq") > sf.col("_held"))
    )
    touched = applied.select(*[sf.col(c).alias(k) for c, k in zip(key_cols, keys, strict=True)])
    kept = base.join(touched, on=list(keys), how="left_anti")
    new_rows = applied.where(~sf.col("_deleted")).select(*names, sf.col("seq").alias("_seq"))
    result = kept.select(*names, "_seq").unionByName(new_rows)
    result.write.mode("overwrite").parquet(str(Path(out) / f"batch={batch_id}"))

    # Old versions are no longer needed once a newer one is complete.
    for v in _versions(out)[:-keep_versions]:
        shutil.rmtree(Path(out) / f"batch={v}", ignore_errors=True)


def start_pipeline(
    spark: Any,
    *,
    source_options: dict[str, Any],
    out: str,
    checkpoint: str,
    keys: Sequence[str],
    columns: str,
    available_now: bool = False,
) -> Any:
    """Start the streaming query; returns the StreamingQuery."""
    reader = spark.readStream.format("mariadb_binlog")
    for name, value in source_options.items():
        reader = reader.option(name, value)
    changes = reader.load()

    def sink(batch: Any, batch_id: int) -> None:
        apply_batch(spark, batch, batch_id, out=out, keys=keys, columns=columns)

    writer = changes.writeStream.foreachBatch(sink).option("checkpointLocation", checkpoint)
    writer = (
        writer.trigger(availableNow=True)
        if available_now
        else writer.trigger(processingTime="5 seconds")
    )
    return writer.start()


def make_session(app: str = "mariadb-binlog-pipeline") -> Any:
    """A local SparkSession with the source registered."""
    from pyspark.sql import SparkSession

    from replica_client.spark import register

    os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
    spark = (
        SparkSession.builder.appName(app)
        .master(os.environ.get("SPARK_MASTER", "local[2]"))
        .config("spark.sql.shuffle.partitions", "4")
        .config("spark.ui.enabled", "false")
        .config("spark.sql.session.timeZone", "UTC")
        .getOrCreate()
    )
    register(spark)
    return spark


def _demo() -> int:
    from replica_client.testing.server import MariaDBServer

    work = Path(tempfile.mkdtemp(prefix="spark-pipeline-"))
    with MariaDBServer() as srv:
        srv.sql("CREATE DATABASE shop")
        srv.sql(
            "CREATE TABLE shop.orders (id INT PRIMARY KEY, customer VARCHAR(40), "
            "total DECIMAL(10,2), status VARCHAR(10))"
        )
        start = srv.sql("SHOW MASTER STATUS")[0]
        for i in range(200):
            srv.sql(
                "INSERT INTO shop.orders VALUES (%s, %s, %s, 'new')",
                (i, f"customer {i % 17}", f"{i}.25"),
            )
        srv.sql("UPDATE shop.orders SET status = 'paid' WHERE id % 3 = 0")
        srv.sql("UPDATE shop.orders SET id = id + 1000 WHERE id % 10 = 1")
        srv.sql("DELETE FROM shop.orders WHERE id % 7 = 0")
        spark = make_session()
        columns = "id INT, customer STRING, total STRING, status STRING"
        query = start_pipeline(
            spark,
            source_options={
                "host": srv.host,
                "port": srv.port,
                "user": srv.user,
                "password": srv.password,
                "server_id": 4242,
                "startingPosition": f"{start[0]}:{start[1]}",
                "tables": "shop.orders",
                "maxRowsPerTrigger": 100,
            },
            out=str(work / "orders"),
            checkpoint=str(work / "checkpoint"),
            keys=["id"],
            columns=columns,
            available_now=True,
        )
        query.awaitTermination()
        version = latest_version(str(work / "orders"))
        assert version is not None
        copy = sorted(tuple(r) for r in spark.read.parquet(version).drop("_seq").collect())
        primary = sorted(
            (r[0], r[1], str(r[2]), r[3])
            for r in srv.sql("SELECT id, customer, total, status FROM shop.orders")
        )
        spark.stop()
    same = copy == primary
    print(f"{len(copy)} rows in the parquet copy; equal to SELECT *: {same}")
    shutil.rmtree(work, ignore_errors=True)
    return 0 if same else 1


def main(argv: Sequence[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--demo", action="store_true", help="run against a private MariaDB")
    p.add_argument("--host", default="127.0.0.1")
    p.add_argument("--port", type=int, default=3306)
    p.add_argument("--user", default="repl")
    p.add_argument("--password", default=os.environ.get("MARIADB_PASSWORD", ""))
    p.add_argument("--server-id", type=int, default=4242)
    p.add_argument("--table", help="db.table to copy")
    p.add_argument("--key", action="append", help="primary-key column (repeat for several)")
    p.add_argument("--columns", help='Spark DDL of the columns, e.g. "id INT, name STRING"')
    p.add_argument("--starting-position", default="earliest")
    p.add_argument("--out")
    p.add_argument("--checkpoint")
    p.add_argument("--available-now", action="store_true", help="process what is there, stop")
    args = p.parse_args(argv)
    if args.demo:
        return _demo()
    if not (args.table and args.key and args.columns and args.out and args.checkpoint):
        p.error("--table, --key, --columns, --out and --checkpoint are required")
    spark = make_session()
    query = start_pipeline(
        spark,
        source_options={
            "host": args.host,
            "port": args.port,
            "user": args.user,
            "password": args.password,
            "server_id": args.server_id,
            "startingPosition": args.starting_position,
            "tables": args.table,
        },
        out=args.out,
        checkpoint=args.checkpoint,
        keys=args.key,
        columns=args.columns,
        available_now=args.available_now,
    )
    query.awaitTermination()
    return 0


if __name__ == "__main__":
    sys.exit(main())
