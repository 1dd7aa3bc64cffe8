"""The GTID of the source's rows is the core transaction tracker's.

A file read (the executors' ``BinlogBatchReader``, whole files or spans of
them, and a read through Spark) gives each row the GTID that
``replica_client.iter_changes`` gives the same row of the same file: real MySQL
(untagged, tagged, compressed transactions, anonymous ones) and MariaDB
binlogs. A MySQL file where a transaction without a GTID follows one with a
GTID (``gtid_mode=ON_PERMISSIVE``) gives that transaction's rows no GTID, in a
file read and in the driver's dump.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from pyspark.sql import SparkSession

import replica_client as rc
from replica_client.position import FilePos, MysqlGtidSet
from replica_client.spark.dump import BinlogDump
from replica_client.spark.options import parse_options
from replica_client.spark.source import BinlogBatchReader, changelog_schema
from replica_client.testing.pytest_plugin import PrimaryFactory
from replica_client.testing.server import ServerVariant
from tests.binlog_files import FIXTURES, capture

from .conftest import stream_options

#: (file, start of the rows event, GTID) of each row, in file order.
Rows = list[tuple[str, int, str | None]]

MYSQL_FILES = (
    "go-parse/mysql-bin.000012",  # 5.7, GTIDs, a ROWS_QUERY before each rows event
    "apecloud-mysql-binlog-connector-rust/mysql-bin.000057",  # 8.0 compressed, GTIDs
    "rust_mysql_common/binlog_transaction_with_GTID_TAG.000001",  # 9.6 tagged GTID
    "osheroff-mysql-binlog-connector-java/mysql-bin.checksum-crc32",  # anonymous GTIDs
)
MARIADB_FILES = ("rust_mysql_common/mariadb-bin.000001",)


def _core_rows(path: Path) -> Rows:
    with rc.open_binlog(path) as events:
        return [
            (c.position.file, c.position.pos, c.gtid)
            for c in rc.iter_changes(events)
            if c.position is not None
        ]


def _file_rows(path: Path, **options: str) -> Rows:
    """The rows of ``path`` as the executors read them, every partition in order."""
    reader = BinlogBatchReader(parse_options({"path": str(path), **options}), changelog_schema())
    parts = reader.partitions()
    return [
        (row["file"], row["pos"], row["gtid"])
        for part in parts
        for batch in reader._batches(part.path, part.span, part.history)
        for row in batch.to_pylist()
    ]


@pytest.mark.parametrize("relative", [*MYSQL_FILES, *MARIADB_FILES])
def test_file_rows_carry_the_gtid_the_core_tracker_assigns(relative: str) -> None:
    path = FIXTURES / relative
    core = _core_rows(path)
    assert core, f"{relative} has rows"
    assert _file_rows(path) == core
    # spans of a transaction or so, each read from its own start
    assert _file_rows(path, splitBytes="300") == core


def test_a_spark_file_read_gives_the_core_trackers_gtids(spark: SparkSession) -> None:
    for relative in ("go-parse/mysql-bin.000012", *MARIADB_FILES):
        path = FIXTURES / relative
        df = spark.read.format("mariadb_binlog").option("splitBytes", "4096").load(str(path))
        got = [(r.file, r.pos, r.gtid) for r in df.orderBy("seq").collect()]
        assert got == _core_rows(path), relative
        assert all(gtid for _, _, gtid in got)


@pytest.mark.integration
def test_a_mysql_transaction_without_gtid_gets_none_after_one_with_a_gtid(
    mariadb_primary_factory: PrimaryFactory, server_id: int, tmp_path: Path
) -> None:
    srv = mariadb_primary_factory(ServerVariant(flavor="mysql", version="9.7"))
    srv.sql("CREATE DATABASE IF NOT EXISTS s_anon")
    srv.sql("DROP TABLE IF EXISTS s_anon.t")
    srv.sql("CREATE TABLE s_anon.t (id INT PRIMARY KEY)")
    # new transactions still get GTIDs; one that asks for none is anonymous (and a
    # primary sends anonymous transactions only while its gtid_mode is not ON)
    srv.sql("SET GLOBAL gtid_mode = ON_PERMISSIVE")
    try:
        written = capture(
            srv,
            [
                "INSERT INTO s_anon.t VALUES (1), (2)",
                "SET gtid_next = 'ANONYMOUS'",
                "INSERT INTO s_anon.t VALUES (3), (4)",
                "SET gtid_next = 'AUTOMATIC'",
                "INSERT INTO s_anon.t VALUES (5)",
            ],
        )
        # the driver's dump of the same file
        options: dict[str, Any] = stream_options(srv, server_id, tables="s_anon.*")
        start = FilePos(written.name, 4)
        with BinlogDump(parse_options(options), start, MysqlGtidSet("")) as dump:
            txns = [t for t in dump.transactions() if t.events and t.file == written.name]
    finally:
        srv.sql("SET gtid_next = 'AUTOMATIC'")
        srv.sql("SET GLOBAL gtid_mode = ON")
    path = tmp_path / written.name
    path.write_bytes(written.data)

    core = _core_rows(path)
    gtids = [gtid for _, _, gtid in core]
    assert len(gtids) == 5
    assert gtids[0] is not None and gtids[0] == gtids[1]
    assert gtids[2:4] == [None, None]  # not the previous transaction's
    assert gtids[4] is not None and gtids[4] != gtids[0]
    assert _file_rows(path) == core
    assert _file_rows(path, splitBytes="200") == core
    # one GTID per transaction of the dump, none for the anonymous one
    assert [t.gtid for t in txns] == [gtids[0], None, gtids[4]]
