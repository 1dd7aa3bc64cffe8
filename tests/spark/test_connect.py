"""The ``mariadb_binlog`` source through Spark Connect: a client session of a
local Connect server (:class:`replica_client.testing.spark_connect.SparkConnectServer`,
one for the module) registers the source and reads, against the truths of the
local tests (test_source.py):

- a batch read of the primary's binlog files equals the local session's read
  of the same files, row for row, whole files and files cut into spans;
- an availableNow stream into a parquet sink reads exactly the committed rows
  (not a rolled-back or still-open transaction), and a second run from the
  checkpoint only the changes committed since, in later batches.

The client runs in a process of its own (the functions below marked "in the
client" run there): pyspark refuses a Connect session beside the classic one
of the ``spark`` fixture (``SESSION_ALREADY_EXIST``), and creating one sets
``SPARK_CONNECT_MODE_ENABLED`` in ``os.environ``, which turns every later
pyspark call of the process, the other tests' too, into a Connect call.
A Connect session's ``foreachBatch`` runs on the server, so the stream's
batches reach the client through a parquet sink and the query's progress.
"""

from __future__ import annotations

import contextlib
import functools
import json
import multiprocessing
from collections import Counter
from collections.abc import Callable, Iterator
from concurrent.futures import ProcessPoolExecutor
from pathlib import Path
from typing import Any, Concatenate, ParamSpec, TypeVar

import pytest
from pyspark.sql import Row, SparkSession

from replica_client.spark import register
from replica_client.testing.server import MariaDBServer
from replica_client.testing.spark_connect import SparkConnectServer

from .conftest import ROOT, SESSION_CONF, stream_options
from .test_source import (
    _KEYS,
    FILES_OPS,
    assert_exactly_committed,
    commit_then_update,
    commit_workload,
    copy_binlogs,
    files_workload,
)

pytestmark = pytest.mark.integration

P = ParamSpec("P")
T = TypeVar("T")

#: The longest one call in the client may take.
_CALL_TIMEOUT = 180.0


class ConnectClient:
    """A process of its own holding a Connect session of ``url`` (see the module's
    docstring); :meth:`call` runs a module-level function there."""

    def __init__(self, url: str) -> None:
        self.url = url
        self._pool = ProcessPoolExecutor(1, mp_context=multiprocessing.get_context("spawn"))

    def call(
        self, fn: Callable[Concatenate[SparkSession, P], T], *args: P.args, **kwargs: P.kwargs
    ) -> T:
        """``fn(session, *args, **kwargs)`` in the client process; its result, or its
        error (the client's traceback as the cause)."""
        future = self._pool.submit(functools.partial(_in_client, self.url, fn, *args, **kwargs))
        return future.result(timeout=_CALL_TIMEOUT)

    def close(self) -> None:
        """Stop the session (a client whose server is gone never exits), then the process."""
        processes = list(self._pool._processes.values())
        with contextlib.suppress(Exception):
            self._pool.submit(_close_session).result(timeout=30)
        self._pool.shutdown(wait=False, cancel_futures=True)
        for process in processes:
            process.join(30)
            if process.is_alive():
                process.kill()
                process.join()


@pytest.fixture(scope="module")
def connect() -> Iterator[ConnectClient]:
    with SparkConnectServer(ROOT, conf=SESSION_CONF) as server:
        client = ConnectClient(server.url)
        try:
            yield client
        finally:
            client.close()


# -- in the client ------------------------------------------------------------------------

_session: SparkSession | None = None


def _in_client(
    url: str, fn: Callable[Concatenate[SparkSession, P], T], *args: P.args, **kwargs: P.kwargs
) -> T:
    """``fn`` with the client's Connect session, made (and the source registered
    through it) at the first call."""
    global _session
    if _session is None:
        _session = SparkSession.builder.remote(url).getOrCreate()
        register(_session)
    return fn(_session, *args, **kwargs)


def _close_session() -> None:
    global _session
    if _session is not None:
        _session.stop()
        _session = None


def _read_files(
    spark: SparkSession, path: str, options: dict[str, str]
) -> tuple[list[str], list[Row]]:
    """A batch read's columns and rows."""
    df = spark.read.format("mariadb_binlog").options(**options).load(path)
    return df.columns, df.collect()


def _stream(
    spark: SparkSession, options: dict[str, Any], checkpoint: str, out: str
) -> tuple[list[int], list[Row]]:
    """One availableNow run into the parquet files at ``out``: the ids of the batches
    that read rows, and every row ``out`` holds then."""
    query = (
        spark.readStream.format("mariadb_binlog")
        .options(**options)
        .load()
        .writeStream.format("parquet")
        .option("path", out)
        .option("checkpointLocation", checkpoint)
        .trigger(availableNow=True)
        .start()
    )
    query.awaitTermination(120)
    assert not query.isActive, "the availableNow query did not finish"
    assert query.exception() is None, query.exception()
    batches = [p.batchId for p in query.recentProgress if p.numInputRows]
    return batches, spark.read.parquet(out).collect()


# -- in the tests -------------------------------------------------------------------------


def test_batch_read_of_binlog_files_through_connect_equals_the_local_read(
    connect: ConnectClient, spark: SparkSession, spark_primary: MariaDBServer, tmp_path: Path
) -> None:
    files_workload(spark_primary, "k_files")
    copy = str(copy_binlogs(spark_primary, tmp_path / "binlogs"))
    columns, remote = connect.call(_read_files, copy, {"tables": "k_files.*"})
    local = spark.read.format("mariadb_binlog").option("tables", "k_files.*").load(copy)
    assert tuple(columns) == _KEYS
    assert Counter(r.op for r in remote) == FILES_OPS
    truth = sorted(tuple(r) for r in local.collect())
    assert sorted(tuple(r) for r in remote) == truth
    # the files cut into spans of a transaction or so, a task each
    _, split = connect.call(_read_files, copy, {"tables": "k_files.*", "splitBytes": "200"})
    assert sorted(tuple(r) for r in split) == truth


def test_available_now_through_connect_reads_exactly_committed_rows(
    connect: ConnectClient, spark_primary: MariaDBServer, server_id: int, tmp_path: Path
) -> None:
    srv = spark_primary
    checkpoint, out = str(tmp_path / "ck"), str(tmp_path / "out")
    start, other = commit_workload(srv, "k_commit")
    try:
        opts = stream_options(srv, server_id, startingPosition=start, tables="k_commit.*")
        batches, rows = connect.call(_stream, opts, checkpoint, out)
        assert_exactly_committed(rows)
        expected = commit_then_update(srv, "k_commit", other)
    finally:
        other.close()
    later, every = connect.call(_stream, opts, checkpoint, out)
    seen = {r.seq for r in rows}
    new = sorted((r for r in every if r.seq not in seen), key=lambda r: int(r.seq))
    assert [(r.op, json.loads(r.after or r.before)["id"]) for r in new] == expected
    assert len(every) == len(rows) + len(expected), "a row read twice"
    assert batches and later and min(later) > max(batches)
