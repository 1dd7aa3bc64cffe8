"""Rows/s of the Spark streaming source next to the standalone client, same workload.

Usage (from the repository root; needs the ``[spark]`` extra, Java and mariadbd)::

    python3 benchmarks/spark_bench.py            # 200,000 rows, 3 runs each
    python3 benchmarks/spark_bench.py --quick    # 50,000 rows, 1 run each
    python3 benchmarks/spark_bench.py --json out.json
    python3 benchmarks/spark_bench.py --rows 1000000 --floor --cluster   # 1,100,000 changes

A private MariaDB primary is started (semi-sync off so that commits never
wait) and the workload, inserts of ``--rows`` rows of a 7-column table in
transactions of 1,000 rows, then an update of a tenth of them, is written.
Then, on that binlog range:

* ``client``: the standalone network client, ``connect(..., blocking=False)``
  and ``stream.changes()``, counting the changes (one process, one core);
* ``spark stream``: ``spark.readStream.format("mariadb_binlog")`` with
  ``Trigger.AvailableNow`` into the ``noop`` sink, ``local[N]``; the wall time
  of the query, from ``start()`` to its end (the SparkSession is started
  before, once);
* ``micro-batches``: the same stream's rows over the time of its micro-batches
  alone (``triggerExecution`` of each progress report): what a stream that
  keeps running delivers, without the query's start and end;
* ``spark batch``: ``spark.read.format("mariadb_binlog")`` over copies of the
  binlog files, into the ``noop`` sink;
* ``spark floor`` (``--floor``): what Spark itself costs. The batch read's
  own record batches, built once beforehand and kept in an Arrow file, read
  by a data source that only hands them over (``--cores`` partitions), into
  the ``noop`` sink: no decoding at all, the ceiling of any source of these
  rows on this machine.
* ``--cluster``: scale-out on a standalone cluster of two 1-core workers
  (``replica_client.testing.spark_cluster``), its driver in a process of its
  own: the batch read with two executors and with one
  (``spark.cores.max``), and the stream of the whole backlog with two; the
  tasks each executor ran and the largest serialized task, from the driver's
  task log.

Each figure is the median of the runs; the ratio column is rows/s against the
client's. The stream's rows/s include everything a micro-batch costs: the
driver's dump, planning, pickling partitions, decoding and JSON on the
executors, and Arrow to the JVM.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from types import SimpleNamespace
from typing import Any

__all__ = ["main"]

_CHUNK = 1000


def _workload(srv: Any, rows: int) -> str:
    """Write the workload; return the start position ``file:pos``."""
    srv.sql("CREATE DATABASE bench")
    srv.sql(
        "CREATE TABLE bench.orders (id INT PRIMARY KEY, customer VARCHAR(40), "
        "total DECIMAL(12,2), created DATETIME(3), qty INT, status VARCHAR(12), note TEXT)"
    )
    file, pos = srv.sql("SHOW MASTER STATUS")[0][:2]
    for base in range(0, rows, _CHUNK):
        values = ",".join(
            f"({i}, 'customer {i % 977}', {i % 10000}.{i % 100:02d}, "
            f"'2024-05-{1 + i % 28:02d} 12:{i % 60:02d}:00.250', {i % 50}, 'new', "
            f"'note number {i}')"
            for i in range(base, min(base + _CHUNK, rows))
        )
        srv.sql(f"INSERT INTO bench.orders VALUES {values}")
    srv.sql("UPDATE bench.orders SET status = 'paid', qty = qty + 1 WHERE id % 10 = 0")
    return f"{file}:{pos}"


async def _client_once(srv: Any, start: str, server_id: int) -> tuple[int, float]:
    from replica_client import FilePos, connect

    t0 = time.perf_counter()
    n = 0
    async with connect(
        host=srv.host,
        port=srv.port,
        user=srv.user,
        password=srv.password,
        server_id=server_id,
        start=FilePos.parse(start),
        blocking=False,
        tables="bench.*",
    ) as stream:
        async for _ in stream.changes():
            n += 1
    return n, time.perf_counter() - t0


def _spark_stream_once(
    spark: Any, srv: Any, start: str, server_id: int, checkpoint: Path
) -> tuple[int, float, float]:
    """Rows, the query's wall time, and its micro-batches' ``triggerExecution`` time."""
    reader = (
        spark.readStream.format("mariadb_binlog")
        .option("host", srv.host)
        .option("port", srv.port)
        .option("user", srv.user)
        .option("password", srv.password)
        .option("server_id", server_id)
        .option("startingPosition", start)
        .option("tables", "bench.*")
    )
    t0 = time.perf_counter()
    query = (
        reader.load()
        .writeStream.format("noop")
        .option("checkpointLocation", str(checkpoint))
        .trigger(availableNow=True)
        .start()
    )
    query.awaitTermination()
    elapsed = time.perf_counter() - t0
    n = sum(int(p.get("numInputRows", 0)) for p in query.recentProgress)
    batches = sum(int(p["durationMs"].get("triggerExecution", 0)) for p in query.recentProgress)
    if os.environ.get("SPARK_BENCH_PROGRESS"):
        for prog in query.recentProgress:
            print(prog["numInputRows"], prog["durationMs"])
    return n, elapsed, batches / 1000


def _spark_batch_once(spark: Any, files: Path) -> tuple[int, float]:
    t0 = time.perf_counter()
    df = spark.read.format("mariadb_binlog").option("tables", "bench.*").load(str(files))
    df.write.format("noop").mode("overwrite").save()
    elapsed = time.perf_counter() - t0
    return -1, elapsed


def _prepare_floor(spark: Any, files: Path, arrow_file: Path, parts: int) -> None:
    """Write the batch read's record batches to ``arrow_file``; register ``rc_bench_floor``."""
    import pyarrow as pa
    from pyspark.sql.datasource import DataSource, DataSourceReader, InputPartition

    from replica_client.spark.options import parse_options
    from replica_client.spark.source import BinlogBatchReader, changelog_schema

    opts = parse_options({"tables": "bench.*", "path": str(files)})
    reader = BinlogBatchReader(opts, changelog_schema())
    batches = [b for part in reader.partitions() for b in reader.read(part)]
    with pa.OSFile(str(arrow_file), "wb") as sink, pa.ipc.new_file(sink, batches[0].schema) as w:
        for batch in batches:
            w.write_batch(batch)

    class Part(InputPartition):
        def __init__(self, index: int) -> None:
            self.index = index

    class FloorReader(DataSourceReader):
        def partitions(self) -> list[Part]:
            return [Part(i) for i in range(parts)]

        def read(self, partition: Any) -> Any:
            with pa.memory_map(str(arrow_file)) as source:
                stored = pa.ipc.open_file(source)
                for k in range(partition.index, stored.num_record_batches, parts):
                    yield stored.get_batch(k)

    class Floor(DataSource):
        @classmethod
        def name(cls) -> str:
            return "rc_bench_floor"

        def schema(self) -> Any:
            return changelog_schema()

        def reader(self, schema: Any) -> FloorReader:
            return FloorReader()

    spark.dataSource.register(Floor)
    _spark_floor_once(spark)  # warm-up


def _spark_floor_once(spark: Any) -> tuple[int, float]:
    t0 = time.perf_counter()
    df = spark.read.format("rc_bench_floor").load()
    df.write.format("noop").mode("overwrite").save()
    elapsed = time.perf_counter() - t0
    return df.count(), elapsed


def _cluster_runs(
    srv: Any, start: str, files: Path, work: Path, runs: int, expected: int
) -> dict[str, Any]:
    """Scale-out on a standalone cluster of two 1-core workers: the batch read with two
    executors and with one, and the stream of the backlog with two (tasks per executor)."""
    from pyspark.sql import SparkSession

    from replica_client.spark import register
    from replica_client.testing.spark_cluster import SparkCluster

    root = Path(__file__).resolve().parents[1]
    out: dict[str, Any] = {}
    with SparkCluster(workers=2, cores=1, executor_memory="1g") as cluster:
        os.environ.update(cluster.driver_env(root))
        log = cluster.task_log
        for executors in (2, 1):
            conf: dict[str, Any] = {**cluster.driver_conf(root), "spark.cores.max": executors}
            spark = (
                SparkSession.builder.config(map=conf)
                .config("spark.sql.shuffle.partitions", "2")
                .getOrCreate()
            )
            spark.sparkContext.setLogLevel("ERROR")
            register(spark)
            _spark_batch_once(spark, files)  # warm-up: the executors' Python workers
            mark = log.mark()
            times = [_spark_batch_once(spark, files)[1] for _ in range(runs)]
            ran = log.since(mark)
            out[f"batch, {executors} executor(s)"] = {
                "seconds": times,
                "tasks": ran.per_executor(),
                "largest_task_bytes": ran.largest,
            }
            if executors == 2:
                streams: list[float] = []
                batches: list[float] = []
                for run in range(runs):
                    mark = log.mark()
                    n, t, b = _spark_stream_once(
                        spark, srv, start, 9000 + 100 * run, work / f"cluster-ck{run}"
                    )
                    if n != expected:
                        raise SystemExit(f"the stream on the cluster gave {n} rows of {expected}")
                    streams.append(t)
                    batches.append(b)
                    ran = log.since(mark)
                    out["stream tasks per executor"] = ran.per_executor()
                    out["stream's largest task, bytes"] = ran.largest
                out["stream, 2 executors"] = {"seconds": streams}
                out["micro-batches, 2 executors"] = {"seconds": batches}
            spark.stop()
    return out


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--rows", type=int, default=200_000)
    p.add_argument("--runs", type=int, default=3)
    p.add_argument("--quick", action="store_true", help="50,000 rows, one run")
    p.add_argument("--cores", type=int, default=2, help="local[N] for Spark")
    p.add_argument("--json", help="write the results here")
    p.add_argument("--floor", action="store_true", help="also time Spark on pre-built batches")
    p.add_argument(
        "--cluster",
        action="store_true",
        help="also scale out on a standalone cluster of two 1-core workers (2 vs 1 executor)",
    )
    p.add_argument("--cluster-child", help=argparse.SUPPRESS)
    args = p.parse_args(argv)
    if args.quick:
        args.rows, args.runs = 50_000, 1
    os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
    root = str(Path(__file__).resolve().parents[1])
    os.environ["PYTHONPATH"] = os.pathsep.join(
        x for x in (root, os.environ.get("PYTHONPATH", "")) if x
    )
    sys.path.insert(0, root)

    if args.cluster_child:
        job = json.loads(args.cluster_child)
        primary = SimpleNamespace(**{k: job[k] for k in ("host", "port", "user", "password")})
        print(json.dumps(_cluster_runs(primary, job["start"], Path(job["files"]), Path(job["work"]),
                                       job["runs"], job["expected"])))  # fmt: skip
        return 0

    from pyspark.sql import SparkSession

    from replica_client.spark import register
    from replica_client.testing.server import MariaDBServer, ServerVariant

    work = Path(tempfile.mkdtemp(prefix="spark-bench-"))
    variant = ServerVariant(extra_args=("--rpl-semi-sync-master-enabled=OFF",))
    results: dict[str, Any] = {"rows_written": args.rows, "cores": args.cores}
    with MariaDBServer(variant) as srv:
        print(f"writing {args.rows} rows ...", flush=True)
        start = _workload(srv, args.rows)
        srv.sql("FLUSH BINARY LOGS")
        files = work / "binlogs"
        files.mkdir()
        for f in srv.binlog_files():
            shutil.copy(f, files / f.name)

        spark = (
            SparkSession.builder.master(f"local[{args.cores}]")
            .config("spark.ui.enabled", "false")
            .config("spark.sql.shuffle.partitions", str(args.cores))
            .config("spark.ui.showConsoleProgress", "false")
            .getOrCreate()
        )
        spark.sparkContext.setLogLevel("ERROR")
        register(spark)

        timings: dict[str, list[float]] = {
            "client": [],
            "spark stream": [],
            "micro-batches": [],  # the stream's triggers alone, without the query's start and end
            "spark batch": [],
        }
        if args.floor:
            _prepare_floor(spark, files, work / "floor.arrow", args.cores)
            timings["spark floor"] = []
        counts: dict[str, int] = {}
        # one warm-up of each Spark path (Python workers, JIT of the JVM)
        # replica ids 100 apart: a stream's tasks register with the ids after its own
        _spark_stream_once(spark, srv, start, 7000, work / "warm")
        for run in range(args.runs):
            n, t = asyncio.run(_client_once(srv, start, 6000 + run))
            counts["client"] = n
            timings["client"].append(t)
            n, t, batches = _spark_stream_once(
                spark, srv, start, 7000 + 100 * (run + 1), work / f"ck{run}"
            )
            counts["spark stream"] = counts["micro-batches"] = n
            timings["spark stream"].append(t)
            timings["micro-batches"].append(batches)
            _, t = _spark_batch_once(spark, files)
            timings["spark batch"].append(t)
            if args.floor:
                counts["spark floor"], t = _spark_floor_once(spark)
                timings["spark floor"].append(t)
        counts["spark batch"] = counts["client"]
        spark.stop()
        if args.cluster:
            # a driver process of its own: its JVM must start with the cluster's
            # configuration (the task log), and this one's already runs
            job = {"host": srv.host, "port": srv.port, "user": srv.user, "password": srv.password,
                   "start": start, "files": str(files), "work": str(work), "runs": args.runs,
                   "expected": counts["client"]}  # fmt: skip
            out = subprocess.run(
                [sys.executable, __file__, "--cluster-child", json.dumps(job)],
                check=True,
                stdout=subprocess.PIPE,
            ).stdout
            cluster = json.loads(out.decode().strip().splitlines()[-1])

    rows = counts["client"]
    base = rows / statistics.median(timings["client"])
    print(f"\n{rows} changes (rows), median of {args.runs} run(s), Spark local[{args.cores}]")
    print(f"{'reader':<14}{'seconds':>10}{'rows/s':>12}{'vs client':>11}")
    for name, ts in timings.items():
        secs = statistics.median(ts)
        rate = counts[name] / secs
        results[name] = {"seconds": ts, "rows": counts[name], "rows_per_s": rate}
        print(f"{name:<14}{secs:>10.2f}{rate:>12,.0f}{rate / base:>10.0%}")
    if args.cluster:
        print(f"\nstandalone cluster, two workers of 1 core, median of {args.runs} run(s)")
        for name, data in cluster.items():
            if not isinstance(data, dict) or "seconds" not in data:
                print(f"{name}: {data}")
                continue
            secs = statistics.median(data["seconds"])
            results[name] = data
            tasks = data.get("tasks", "")
            largest = data.get("largest_task_bytes")
            size = f", largest task {largest:,} bytes" if largest is not None else ""
            print(f"{name:<28}{secs:>8.2f} s{rows / secs:>12,.0f} rows/s  {tasks}{size}")
        one = statistics.median(cluster["batch, 1 executor(s)"]["seconds"])
        two = statistics.median(cluster["batch, 2 executor(s)"]["seconds"])
        results["scale_out"] = one / two
        print(f"batch read, 2 executors against 1: {one / two:.2f}x")
    if counts["spark stream"] != rows:
        print(f"!! the stream delivered {counts['spark stream']} rows, expected {rows}")
    if args.json:
        Path(args.json).write_text(json.dumps(results, indent=2))
    shutil.rmtree(work, ignore_errors=True)
    return 0 if counts["spark stream"] == rows else 1


if __name__ == "__main__":
    sys.exit(main())
