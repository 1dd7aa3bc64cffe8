"""The Spark source on primaries in their own defaults: schema histories, statements.

MariaDB 10.11 started without flags writes ``binlog_format=MIXED`` and
``binlog_row_metadata=NO_LOG`` (TABLE_MAPs without names, signedness, charsets
or labels); MySQL 9.7 writes ``MINIMAL`` (no names, no labels). A writer
session sets ``binlog_format=ROW`` on MariaDB to get row images. What is shown:

- a stream (``schemaHistory`` auto, the default) gives every column's name and
  value as SELECT shows it (UNSIGNED integers, ENUM/SET labels, utf8mb4 and
  latin1 text), through ADD/DROP/CHANGE COLUMN between the inserts, and a query
  restarted from its checkpoint taken before the DDL decodes with the
  checkpoint's history (the primary's current definitions would not fit the
  rows written before the DDL); its offsets hold only the selected table;
- ``typed=true`` takes its struct from the history's definition;
- a batch read of the binlog files with ``schemaHistory`` naming a JSON file
  (a checkpoint's, or a schema history's) gives the same rows, the files cut
  into many spans (each task gets the history at its span's start); a history
  that lacks the table fails at planning (SchemaHistoryError), or gives
  ``@1``, ``@2``, ... with ``unproven=positional``;
- on MIXED, INSERT, UPDATE and DELETE of a selected table logged as SQL text
  fail the stream and the batch read with StatementLoggedError; the same
  statements on a table outside ``tables`` do not.
"""

from __future__ import annotations

import json
import shutil
from decimal import Decimal
from pathlib import Path
from typing import Any

import pymysql
import pytest
from pyspark.errors import PySparkException
from pyspark.sql import DataFrame, SparkSession
from pyspark.sql.types import StructType

from replica_client.aio.config import ReplicaConfig
from replica_client.checkpoint import Checkpoint
from replica_client.config import TableFilter
from replica_client.control.blocking import run
from replica_client.control.queries import PreparedHistory, prepare_history
from replica_client.position import FilePos
from replica_client.testing.pytest_plugin import PrimaryFactory
from replica_client.testing.server import MariaDBServer, ServerVariant

from .conftest import stream_options
from .test_source import _rows, _run

pytestmark = pytest.mark.integration

#: The servers as they start without flags.
DEFAULTS = {
    "mariadb": ServerVariant.server_defaults(),
    "mysql-9.7": ServerVariant.server_defaults("mysql", "9.7"),
}

_COLUMNS = (
    "id INT UNSIGNED PRIMARY KEY, big BIGINT UNSIGNED, n TINYINT UNSIGNED, "
    "e ENUM('a','b','c'), st SET('x','y','z'), u VARCHAR(20) CHARACTER SET utf8mb4, "
    "l VARCHAR(20) CHARACTER SET latin1"
)
#: SET columns: SELECT shows 'x,z', the changelog's JSON a sorted list of labels.
_SETS = frozenset({"st"})


@pytest.fixture(params=list(DEFAULTS))
def defaults_primary(
    request: pytest.FixtureRequest, mariadb_primary_factory: PrimaryFactory
) -> MariaDBServer:
    primary: MariaDBServer = mariadb_primary_factory(DEFAULTS[request.param])
    return primary


class _Writer:
    """A session writing row images (``binlog_format=ROW`` on MariaDB), and its SELECTs."""

    def __init__(self, srv: MariaDBServer) -> None:
        self.conn = pymysql.connect(
            host=srv.host,
            port=srv.port,
            user=srv.user,
            password=srv.password,
            autocommit=True,
            charset="utf8mb4",
        )
        if srv.flavor == "mariadb":
            self.sql("SET SESSION binlog_format = ROW")

    def sql(self, statement: str, args: tuple[Any, ...] | None = None) -> None:
        with self.conn.cursor() as cur:
            cur.execute(statement, args)

    def select(self, table: str, key: int) -> dict[str, Any] | None:
        """The row as SELECT shows it, in the changelog's JSON form."""
        with self.conn.cursor() as cur:
            cur.execute(f"SELECT * FROM {table} WHERE id = %s", (key,))
            row = cur.fetchone()
            names = [d[0] for d in cur.description]
        if row is None:
            return None
        return {
            n: (sorted(v.split(",")) if v else []) if n in _SETS and v is not None else v
            for n, v in zip(names, row, strict=True)
        }

    def close(self) -> None:
        self.conn.close()


class _Changes:
    """The changes a workload made, each row's images as SELECT showed them."""

    def __init__(self, writer: _Writer, table: str) -> None:
        self.writer = writer
        self.table = table
        self.rows: dict[int, dict[str, Any]] = {}
        self.made: list[tuple[str, dict[str, Any] | None, dict[str, Any] | None]] = []

    def insert(self, values: str, args: tuple[Any, ...], key: int) -> None:
        self.writer.sql(f"INSERT INTO {self.table} {values}", args)
        after = self.writer.select(self.table, key)
        assert after is not None
        self.rows[key] = after
        self.made.append(("c", None, after))

    def update(self, assignments: str, key: int) -> None:
        before = self.writer.select(self.table, key)  # (as the DDL since left it)
        self.writer.sql(f"UPDATE {self.table} SET {assignments} WHERE id = %s", (key,))
        after = self.writer.select(self.table, key)
        assert after is not None
        self.rows[key] = after
        self.made.append(("u", before, after))

    def delete(self, key: int) -> None:
        before = self.writer.select(self.table, key)
        del self.rows[key]
        self.writer.sql(f"DELETE FROM {self.table} WHERE id = %s", (key,))
        self.made.append(("d", before, None))


def _images(rows: list[Any]) -> list[tuple[str, Any, Any]]:
    return [
        (r.op, json.loads(r.before) if r.before else None, json.loads(r.after) if r.after else None)
        for r in sorted(rows, key=lambda r: r.seq)
    ]


def _prepared(srv: MariaDBServer, server_id: int, tables: str) -> PreparedHistory:
    """The definitions of ``tables`` now, read from ``srv`` as the library reads them."""
    config = ReplicaConfig(
        user=srv.user, password=srv.password, server_id=server_id, host=srv.host, port=srv.port
    )
    return run(config, prepare_history(TableFilter.parse(tables), "now"))


def _read(spark: SparkSession, options: dict[str, Any]) -> DataFrame:
    reader = spark.read.format("mariadb_binlog")
    for name, value in options.items():
        reader = reader.option(name, value)
    return reader.load()


def _copy(srv: MariaDBServer, first: str, into: Path) -> Path:
    """The binlog files from ``first`` on, copied into ``into``."""
    into.mkdir()
    for f in srv.binlog_files():
        if f.name >= first:
            shutil.copy(f, into / f.name)
    return into


def _last_offset(checkpoint: Path) -> dict[str, Any]:
    """The source's offset of the last batch in a query's checkpoint."""
    logs = sorted(
        (p for p in (checkpoint / "offsets").iterdir() if p.name.isdigit()),
        key=lambda p: int(p.name),
    )
    text = logs[-1].read_text().splitlines()
    data: dict[str, Any] = json.loads(text[2])
    return data


def _error(run_it: Any) -> str:
    with pytest.raises(PySparkException) as caught:
        run_it()
    return str(caught.value)


def test_stream_and_files_on_server_defaults_follow_ddl_and_restart_from_checkpoint(
    spark: SparkSession, defaults_primary: MariaDBServer, server_id: int, tmp_path: Path
) -> None:
    srv = defaults_primary
    db = "h_ddl"
    table = f"{db}.t"
    srv.sql_many(
        [
            f"DROP DATABASE IF EXISTS {db}",
            f"CREATE DATABASE {db}",
            f"CREATE TABLE {table} ({_COLUMNS})",
            f"CREATE TABLE {db}.other (id INT PRIMARY KEY, v INT UNSIGNED)",
            "FLUSH BINARY LOGS",
        ]
    )
    first_file, first_pos = srv.binlog_position()
    # The history at the first file's start, as a file: a checkpoint's JSON on MariaDB,
    # a schema history's on MySQL.
    prepared = _prepared(srv, server_id, f"{db}.*")
    history_file = tmp_path / "history.json"
    if srv.flavor == "mariadb":
        at = FilePos(first_file, first_pos)
        history_file.write_text(Checkpoint(at, prepared.point.gtid, prepared.history).to_json())
    else:
        history_file.write_text(json.dumps(prepared.history.to_json()))

    writer = _Writer(srv)
    changes = _Changes(writer, table)
    try:
        row = "(id, big, n, e, st, u, l) VALUES (%s, %s, %s, %s, %s, %s, %s)"
        top = 4294967295
        changes.insert(row, (top, 18446744073709551615, 255, "c", "x,z", "😀é", "café"), top)
        changes.insert(row, (1, 9223372036854775808, 128, "a", "", "ü", "Ünï"), 1)
        writer.sql(f"INSERT INTO {db}.other VALUES (1, 4000000000)")  # not selected
        typed_copy = _copy(srv, first_file, tmp_path / "typed_binlogs")

        start = f"{first_file}:{first_pos}"
        opts = stream_options(srv, server_id, startingPosition=start, tables=table)
        batches: list[tuple[int, list[Any]]] = []
        _run(spark, opts, tmp_path / "ck", batches)
        first_run = _rows(batches)
        assert _images(first_run) == changes.made
        offset = _last_offset(tmp_path / "ck")
        kept = [(t["schema"], t["name"]) for t in offset["schema"]["tables"]]
        assert kept == [(db, "t")], "the offset's history holds the selected table only"
        print(f"{srv.version}: offset {len(json.dumps(offset))} bytes")

        # typed=true: the struct is the history's definition, the values SELECT's
        typed_opts = {**opts, "typed": "true"}
        typed: list[tuple[int, list[Any]]] = []
        _run(spark, typed_opts, tmp_path / "ck_typed", typed)
        typed_rows = _rows(typed)
        got = sorted(
            (
                {k: int(v) if isinstance(v, Decimal) else v for k, v in r.after.asDict().items()}
                for r in typed_rows
            ),
            key=lambda image: image["id"],
        )
        want = sorted(
            ({**image, "st": ",".join(image["st"])} for image in changes.rows.values()),
            key=lambda image: image["id"],
        )
        assert got == want
        files_typed = _read(
            spark,
            {"typed": "true", "tables": table, "schemaHistory": str(history_file),
             "path": str(typed_copy)},
        )  # fmt: skip
        struct = files_typed.schema["after"].dataType
        assert isinstance(struct, StructType)
        fields = [(f.name, f.dataType.simpleString()) for f in struct.fields]
        assert fields == [
            ("id", "bigint"), ("big", "decimal(20,0)"), ("n", "int"), ("e", "string"),
            ("st", "string"), ("u", "string"), ("l", "string"),
        ]  # fmt: skip
        streamed_typed = spark.createDataFrame(typed_rows, schema=files_typed.schema)
        assert files_typed.exceptAll(streamed_typed).count() == 0
        assert streamed_typed.exceptAll(files_typed).count() == 0

        # Rows before the DDL, not read yet; then ADD, DROP and CHANGE COLUMN between rows.
        changes.insert(row, (3, 3, 3, "b", "y", "ß", "ÿ"), 3)
        srv.sql(f"ALTER TABLE {table} ADD COLUMN extra INT UNSIGNED NOT NULL DEFAULT 4000000000")
        changes.insert("(id, extra, u) VALUES (%s, %s, %s)", (4, 4294967295, "four"), 4)
        srv.sql("FLUSH BINARY LOGS")
        srv.sql(f"ALTER TABLE {table} DROP COLUMN l")
        changes.insert("(id, st) VALUES (%s, %s)", (5, "x,y,z"), 5)
        srv.sql(
            f"ALTER TABLE {table} CHANGE COLUMN u u2 VARCHAR(30) CHARACTER SET utf8mb4, "
            "MODIFY COLUMN e ENUM('a','b','c','d')"
        )
        changes.insert("(id, e, u2) VALUES (%s, %s, %s)", (6, "d", "sechs 😀"), 6)
        changes.update("n = 200, st = 'y', e = 'd'", 1)
        changes.delete(top)
        writer.sql(f"UPDATE {db}.other SET v = 1 WHERE id = 1")

        # The restarted query resumes from its checkpoint, before the DDL.
        _run(spark, opts, tmp_path / "ck", batches)
        everything = _rows(batches)
        assert _images(everything) == changes.made
        names = [sorted(json.loads(r.after)) for r in everything if r.op == "c"]
        assert names[-1] == sorted(["id", "big", "n", "e", "st", "u2", "extra"])
        assert names[2] == sorted(["id", "big", "n", "e", "st", "u", "l"])

        # The binlog files, read with the history at the first one's start, cut in spans.
        copy = _copy(srv, first_file, tmp_path / "binlogs")
        files = {"tables": table, "schemaHistory": str(history_file), "path": str(copy)}
        whole = _read(spark, files)
        streamed = sorted(tuple(r) for r in everything)
        assert sorted(tuple(r) for r in whole.collect()) == streamed
        split = _read(spark, {**files, "splitBytes": "300"})
        assert split.rdd.getNumPartitions() > len(list(copy.iterdir()))
        assert sorted(tuple(r) for r in split.collect()) == streamed

        # A history that does not know the table: refused at planning, or positional.
        lacking = tmp_path / "lacking.json"
        lacking.write_text(json.dumps(prepared.history.replace(tables={}).to_json()))
        text = _error(lambda: _read(spark, {**files, "schemaHistory": str(lacking)}).collect())
        assert "UnknownSchemaError" in text and table in text
        positional = _read(
            spark, {**files, "schemaHistory": str(lacking), "unproven": "positional"}
        ).collect()
        assert len(positional) == len(streamed)
        assert all(set(json.loads(r.after or r.before)) <= {f"@{i}" for i in range(1, 9)}
                   for r in positional)  # fmt: skip
    finally:
        writer.close()


def test_statements_logged_as_sql_fail_the_stream_and_the_batch_read(
    spark: SparkSession, mariadb_primary_factory: PrimaryFactory, server_id: int, tmp_path: Path
) -> None:
    srv = mariadb_primary_factory(DEFAULTS["mariadb"])
    assert str(srv.sql("SELECT @@GLOBAL.binlog_format")[0][0]) == "MIXED"
    db = "h_mixed"
    table = f"{db}.t"
    srv.sql_many(
        [
            f"DROP DATABASE IF EXISTS {db}",
            f"CREATE DATABASE {db}",
            f"CREATE TABLE {table} (id INT PRIMARY KEY, v INT)",
            f"CREATE TABLE {db}.other (id INT PRIMARY KEY, v INT)",
            "FLUSH BINARY LOGS",
        ]
    )
    first_file, first_pos = srv.binlog_position()
    history_file = tmp_path / "history.json"
    history_file.write_text(json.dumps(_prepared(srv, server_id, table).history.to_json()))
    writer = _Writer(srv)
    try:
        writer.sql(f"INSERT INTO {table} VALUES (1, 1), (2, 2)")
        # the server's own session logs these as statements: of a table not selected
        srv.sql(f"INSERT INTO {db}.other VALUES (1, 1)")
        srv.sql(f"UPDATE {db}.other SET v = 2 WHERE id = 1")
        srv.sql(f"DELETE FROM {db}.other WHERE id = 1")
        writer.sql(f"INSERT INTO {table} VALUES (3, 3)")
    finally:
        writer.close()
    opts = stream_options(
        srv, server_id, startingPosition=f"{first_file}:{first_pos}", tables=table
    )
    batches: list[tuple[int, list[Any]]] = []
    _run(spark, opts, tmp_path / "ck", batches)
    assert sorted(json.loads(r.after)["id"] for r in _rows(batches)) == [1, 2, 3]
    clean = _copy(srv, first_file, tmp_path / "clean")

    # Statements writing the selected table: every one fails the query, none is skipped.
    srv.sql("FLUSH BINARY LOGS")
    statements = [
        f"INSERT INTO {table} VALUES (10, 10)",
        f"UPDATE {table} SET v = 11 WHERE id = 10",
        f"DELETE FROM {table} WHERE id = 10",
    ]
    starts = []
    for statement in statements:
        starts.append(srv.binlog_position())
        srv.sql(statement)
    for (file, pos), statement in zip(starts, statements, strict=True):
        failed: list[tuple[int, list[Any]]] = []
        opts = stream_options(srv, server_id, startingPosition=f"{file}:{pos}", tables=table)
        text = _error(lambda: _run(spark, opts, tmp_path / f"ck_{pos}", failed))  # noqa: B023
        assert "StatementLoggedError" in text and statement in text, text[:3000]
        assert f"writing {table}" in text and "binlog_format is MIXED" in text
        assert failed == []

    # Files: the rows of the first one (names from the history); with the others, the
    # statements fail the read: at planning with a history, in the task without one.
    files = {"tables": table, "schemaHistory": str(history_file)}
    rows = _read(spark, {**files, "path": str(clean)}).collect()
    assert sorted(json.loads(r.after)["id"] for r in rows) == [1, 2, 3]
    rows = _read(spark, {"tables": table, "path": str(clean)}).collect()
    assert sorted(json.loads(r.after)["@1"] for r in rows) == [1, 2, 3]  # no history
    everything = _copy(srv, first_file, tmp_path / "all")
    for options in (files, {"tables": table}):
        text = _error(lambda: _read(spark, {**options, "path": str(everything)}).collect())  # noqa: B023
        assert "StatementLoggedError" in text and statements[0] in text
    other = _read(spark, {"tables": f"{db}.t2", "path": str(everything)}).collect()
    assert other == []
