"""Typed single-table mode (``typed=true``): ``before``/``after`` as structs of one table.

Without a server: the type mapping of every column type (``spark/typed.py``),
the options it needs, and the error for binlog files without column names.

Against private primaries (MariaDB 10.11 and MySQL 9.7): the SELECT oracle's
table of every column type (``tests/oracle.py``: edge and random rows,
inserts, updates, deletes) is streamed typed, and every value of every
image is compared with ``SELECT`` of that row; zero dates, which Spark cannot
hold, are NULL there (``invalidValues=null``) and must be exactly the values
SELECT shows as zero dates. A batch read of the binlog files gives the same
rows. The errors: a zero date without ``invalidValues=null``, an ALTER TABLE
while the query runs, options that name no single table.
"""

from __future__ import annotations

import datetime as dt
import json
import re
import shutil
import threading
from collections.abc import Callable
from decimal import Decimal
from functools import partial
from pathlib import Path
from typing import Any

import pytest
from pyspark.errors import PySparkException
from pyspark.sql import DataFrame, SparkSession
from pyspark.sql.types import StructType

from replica_client.binlog.constants import ColumnType as T
from replica_client.binlog.events import ColumnInfo, Geometry
from replica_client.binlog.json_binary import JSON_NULL
from replica_client.config import DecoderOptions, TableFilter
from replica_client.errors import ConfigError, UnsupportedError
from replica_client.spark.options import parse_options
from replica_client.spark.typed import _CONVERT, file_layout, typed_column
from replica_client.testing.pytest_plugin import PrimaryFactory
from replica_client.testing.server import MariaDBServer, ServerVariant
from tests import oracle

from .conftest import ROOT, stream_options
from .test_source import _rows, _run

_FIXTURE = ROOT / "tests/data/binlogs/osheroff-mysql-binlog-connector-java/mysql-bin.checksum-crc32"


def _col(t: int, meta: int = 0, **kw: Any) -> ColumnInfo:
    real = kw.pop("real_type", t)
    kw.setdefault("name", "c")
    return ColumnInfo(index=0, type=t, real_type=real, meta=meta, nullable=True, **kw)


_UTF8MB4 = 45

#: (column, Spark type) for every column type the mapping knows.
MAPPING: list[tuple[ColumnInfo, str]] = [
    (_col(T.TINY, unsigned=False), "int"),
    (_col(T.TINY, unsigned=True), "int"),
    (_col(T.SHORT, unsigned=True), "int"),
    (_col(T.INT24, unsigned=True), "int"),
    (_col(T.LONG, unsigned=False), "int"),
    (_col(T.LONG, unsigned=True), "bigint"),
    (_col(T.LONGLONG, unsigned=False), "bigint"),
    (_col(T.LONGLONG, unsigned=True), "decimal(20,0)"),
    (_col(T.FLOAT), "float"),
    (_col(T.DOUBLE), "double"),
    (_col(T.NEWDECIMAL, (10 << 8) | 2), "decimal(10,2)"),
    (_col(T.NEWDECIMAL, (38 << 8) | 38), "decimal(38,38)"),
    (_col(T.NEWDECIMAL, (39 << 8) | 0), "string"),
    (_col(T.NEWDECIMAL, (65 << 8) | 30), "string"),
    (_col(T.BIT, 1 << 8), "int"),  # BIT(1)
    (_col(T.BIT, (7 << 8) | 3), "int"),  # BIT(31)
    (_col(T.BIT, 4), "bigint"),  # BIT(32)
    (_col(T.BIT, (7 << 8) | 7), "bigint"),  # BIT(63)
    (_col(T.BIT, 8), "decimal(20,0)"),  # BIT(64)
    (_col(T.YEAR), "int"),
    (_col(T.DATE), "date"),
    (_col(T.TIME2, 6), "interval day to second"),
    (_col(T.TIME), "interval day to second"),
    (_col(T.DATETIME2, 3), "timestamp_ntz"),
    (_col(T.DATETIME), "timestamp_ntz"),
    (_col(T.TIMESTAMP2, 6), "timestamp"),
    (_col(T.TIMESTAMP), "timestamp"),
    (_col(T.VARCHAR, 400, collation=_UTF8MB4), "string"),
    (_col(T.VARCHAR, 300, collation=63), "binary"),
    (_col(T.STRING, 0xFE0A, collation=8), "string"),  # CHAR(10) latin1
    (_col(T.STRING, 0xFE08, collation=63), "binary"),  # BINARY(8)
    (_col(T.BLOB, 2, collation=_UTF8MB4), "string"),
    (_col(T.BLOB, 4, collation=63), "binary"),
    (_col(T.BLOB_COMPRESSED, 2, collation=_UTF8MB4), "string"),
    (_col(T.STRING, 0xF701, real_type=T.ENUM, enum_values=("a", "b")), "string"),
    (_col(T.STRING, 0xF801, real_type=T.SET, set_values=("a", "b")), "string"),
    (_col(T.JSON, 4), "string"),
    (_col(T.GEOMETRY, 4), "binary"),
]


@pytest.mark.parametrize(("col", "spark"), MAPPING, ids=lambda v: getattr(v, "type", v))
def test_each_column_type_maps_to_its_spark_type(col: ColumnInfo, spark: str) -> None:
    assert typed_column(col, "db.t").spark == spark


@pytest.mark.parametrize(
    ("col", "what"),
    [
        (_col(T.LONG, name=None, unsigned=False), "name"),
        (_col(T.LONG), "signedness"),
        (_col(T.VARCHAR, 40), "character set"),
        (_col(T.STRING, 0xF701, real_type=T.ENUM), "ENUM labels"),
        (_col(T.STRING, 0xF801, real_type=T.SET), "SET labels"),
    ],
)
def test_a_table_map_without_full_metadata_is_refused(col: ColumnInfo, what: str) -> None:
    with pytest.raises(ConfigError, match=rf"binlog_row_metadata=FULL.*db\.t.*{what}"):
        typed_column(col, "db.t")


def test_a_type_without_typed_form_is_refused() -> None:
    with pytest.raises(UnsupportedError, match=r"'c' of db\.t has type VECTOR"):
        typed_column(_col(T.VECTOR, 4), "db.t")


def test_mysql_json_documents_become_json_text() -> None:
    """As MySQL prints them: DECIMALs inside stay numbers with every digit, the document
    ``null`` is the text ``null`` (SQL NULL stays NULL, never reaching the converter)."""
    column = typed_column(_col(T.JSON, 4), "db.t")
    doc = {"a": [1, 2.5, "é", True, None], "d": Decimal("12345678901234567890.125"), "o": {}}
    text = _CONVERT["json"](doc, column)
    assert text == '{"a": [1, 2.5, "é", true, null], "d": 12345678901234567890.125, "o": {}}'
    assert json.loads(text, parse_float=Decimal)["d"] == doc["d"]
    assert _CONVERT["json"](JSON_NULL, column) == "null"
    assert _CONVERT["json"]('say "hi"', column) == '"say \\"hi\\""'


@pytest.mark.parametrize(
    ("extra", "message"),
    [
        ({}, "exactly one table"),
        ({"tables": "db.*"}, "without wildcards"),
        ({"tables": "db.t?"}, "without wildcards"),
        ({"tables": "db.t,db.u"}, "exactly one table"),
        ({"tables": "db.t", "startingPosition": "snapshot"}, "snapshot"),
        ({"tables": "db.t", "invalidValues": "zero"}, "error or null"),
    ],
)
def test_typed_options_are_checked(extra: dict[str, str], message: str) -> None:
    with pytest.raises(ConfigError, match=message):
        parse_options({"TYPED": "true", **extra})


def test_invalid_values_needs_typed_and_typed_names_one_table() -> None:
    with pytest.raises(ConfigError, match="only with typed=true"):
        parse_options({"invalidValues": "null"})
    opts = parse_options({"Typed": "TRUE", "tables": "shop.orders", "invalidvalues": "NULL"})
    assert (opts.typed, opts.typed_table, opts.invalid_values) == (
        True,
        ("shop", "orders"),
        "null",
    )


def test_binlog_files_without_column_names_are_refused() -> None:
    opts = parse_options({"typed": "true", "tables": "simu_file_dev.folder"})
    options = DecoderOptions(tables=TableFilter.parse("simu_file_dev.folder"))
    with pytest.raises(ConfigError, match=r"binlog_row_metadata=FULL.*simu_file_dev\.folder"):
        file_layout(opts, [_FIXTURE], options)
    opts = parse_options({"typed": "true", "tables": "nowhere.t"})
    with pytest.raises(ConfigError, match=r"no row of nowhere\.t"):
        file_layout(opts, [_FIXTURE], DecoderOptions(tables=TableFilter.parse("nowhere.t")))


# -- against live primaries ----------------------------------------------------------------


def _spark_holds(c: oracle.Column, selected: Any) -> bool:
    """Whether Spark's type of this column holds the value SELECT shows (zero dates: no)."""
    if selected is None or c.kind not in ("date", "datetime", "timestamp"):
        return True
    try:
        (dt.date if c.kind == "date" else dt.datetime).fromisoformat(str(selected))
    except ValueError:
        return False
    return True


def _as_decoded(c: oracle.Column, value: Any, labels: dict[str, tuple[str, ...]]) -> Any:
    """A typed value collected from Spark in the form the decoder gives (for the oracle)."""
    if value is None:
        return None
    k = c.kind
    if k in ("int", "bit", "year"):
        assert isinstance(value, int | Decimal)
        return int(value)
    if k == "decimal":
        return Decimal(value) if isinstance(value, str) else value
    if k == "timestamp":
        return value.astimezone(dt.UTC)  # collected as local wall-clock time
    if k in ("bytes", "geometry"):
        data = bytes(value)
        return Geometry(int.from_bytes(data[:4], "little"), data[4:]) if k == "geometry" else data
    if k == "set":
        parts = value.split(",") if value else []
        order = labels[c.name]
        assert parts == sorted(parts, key=order.index), f"SET {value!r} not in label order"
        return frozenset(parts)
    return value


def _compare_image(
    what: str,
    image: dict[str, Any],
    selected: dict[str, Any],
    mysql: bool,
    labels: dict[str, tuple[str, ...]],
) -> tuple[int, list[str]]:
    """Compare every column of a typed image with SELECT; (values compared, mismatches)."""
    bad: list[str] = []
    assert set(image) == {"id", *(c.name for c in oracle.COLUMNS)}, what
    for c in oracle.COLUMNS:
        want = selected[c.name]
        got = image[c.name]
        if not _spark_holds(c, want):
            if got is not None:
                bad.append(f"{what} {c.name}: {got!r} for SELECT's {want!r} (expected NULL)")
            continue
        if c.kind == "json" and mysql and got is not None and want is not None:
            same = json.loads(got) == json.loads(want)
        else:
            same = oracle.canonical_decoded(c, _as_decoded(c, got, labels), True) == want
        if not same:
            bad.append(f"{what} {c.name}: typed {got!r:.120} != SELECT {want!r:.120}")
    return len(oracle.COLUMNS) + 1, bad


def _oracle_checks(rows: list[Any], w: oracle.Workload, mysql: bool) -> int:
    """Check every typed row against the workload's SELECT snapshots; values compared."""
    labels = {c.name: tuple(re.findall(r"'([^']*)'", c.ddl)) for c in oracle.COLUMNS}
    compared = 0
    mismatches: list[str] = []
    ops: dict[str, int] = {}
    for row in rows:
        assert (row.db, row.table) == (oracle.SCHEMA, oracle.TABLE)
        ops[row.op] = ops.get(row.op, 0) + 1
        before = row.before.asDict() if row.before is not None else None
        after = row.after.asDict() if row.after is not None else None
        images: list[tuple[str, dict[str, Any], dict[str, Any]]] = []
        if row.op == "c":
            assert before is None and after is not None
            images.append((f"insert {after['id']}", after, w.after_insert[after["id"]]))
        elif row.op == "u":
            assert before is not None and after is not None
            images.append((f"update-before {before['id']}", before, w.after_insert[before["id"]]))
            images.append((f"update-after {after['id']}", after, w.after_update[after["id"]]))
        else:
            assert row.op == "d" and after is None and before is not None
            images.append((f"delete {before['id']}", before, w.after_update[before["id"]]))
        for what, image, selected in images:
            n, bad = _compare_image(what, image, selected, mysql, labels)
            compared += n
            mismatches += bad
        assert json.loads(row.pk) == {"id": (after or before or {})["id"]}
    assert mismatches == [], "\n".join(mismatches[:30])
    assert ops == {"c": w.inserted, "u": len(w.updated), "d": len(w.deleted)}
    return compared


def _load(spark: SparkSession, options: dict[str, Any], *, stream: bool = False) -> DataFrame:
    """``load()`` of the source with these options (a batch read, or a stream)."""
    reader = (spark.readStream if stream else spark.read).format("mariadb_binlog")
    for name, value in options.items():
        reader = reader.option(name, value)
    return reader.load()


def _new_table(srv: MariaDBServer, db: str, columns: str) -> str:
    """Create ``db.t`` afresh; the binlog position after it, as ``file:pos``."""
    srv.sql_many([f"DROP DATABASE IF EXISTS {db}", f"CREATE DATABASE {db}"])
    srv.sql(f"CREATE TABLE {db}.t ({columns})")
    file, pos = srv.binlog_position()
    return f"{file}:{pos}"


def oracle_workload(srv: MariaDBServer, *, random_rows: int, seed: int) -> oracle.Workload:
    """The SELECT oracle's workload (tests/oracle.py) on ``srv``: its table afresh."""
    conn = oracle.connect(srv.host, srv.port, srv.user, srv.password)
    try:
        return oracle.run_workload(conn, random_rows=random_rows, seed=seed)
    finally:
        conn.close()


@pytest.mark.integration
def test_typed_stream_equals_select_for_every_column_type(
    spark: SparkSession, flavor_primary: MariaDBServer, server_id: int, tmp_path: Path
) -> None:
    srv = flavor_primary
    mysql = srv.flavor == "mysql"
    srv.sql("FLUSH BINARY LOGS")
    first_file = srv.binlog_files()[-1]
    file, pos = srv.binlog_position()
    w = oracle_workload(srv, random_rows=120, seed=7)
    table = f"{oracle.SCHEMA}.{oracle.TABLE}"
    opts = stream_options(
        srv, server_id, startingPosition=f"{file}:{pos}", tables=table, typed="true",
        invalidValues="null", maxRowsPerTrigger=100,
    )  # fmt: skip
    batches: list[tuple[int, list[Any]]] = []
    _run(spark, opts, tmp_path / "ck", batches)
    rows = _rows(batches)
    compared = _oracle_checks(rows, w, mysql)
    print(f"{srv.version}: {len(rows)} typed rows, {compared} typed values compared with SELECT")
    images = w.inserted + 2 * len(w.updated) + len(w.deleted)
    assert compared == images * (len(oracle.COLUMNS) + 1)

    # The same rows from the binlog files, the schema from their first TABLE_MAP.
    copy = tmp_path / "binlogs"
    copy.mkdir()
    for f in srv.binlog_files():
        if f.name >= first_file.name:
            shutil.copy(f, copy / f.name)
    df = _load(
        spark, {"typed": "true", "tables": table, "invalidValues": "null", "path": str(copy)}
    )
    streamed_df = spark.createDataFrame(rows, schema=df.schema)
    assert df.schema == streamed_df.schema
    assert df.exceptAll(streamed_df).count() == 0
    assert streamed_df.exceptAll(df).count() == 0
    assert df.count() == len(rows)


def _error_text(run: Callable[[], Any]) -> str:
    with pytest.raises(PySparkException) as caught:
        run()
    return str(caught.value)


@pytest.mark.integration
def test_zero_date_fails_naming_table_column_and_position(
    spark: SparkSession, spark_primary: MariaDBServer, server_id: int, tmp_path: Path
) -> None:
    srv = spark_primary
    start = _new_table(srv, "t_zero", "id INT PRIMARY KEY, d DATE, ts DATETIME")
    srv.sql_many(
        [
            "SET SESSION sql_mode = 'NO_ENGINE_SUBSTITUTION'",
            "INSERT INTO t_zero.t VALUES (1, '2024-02-29', '2024-02-29 10:00:00')",
        ]
    )
    before = srv.binlog_position()
    srv.sql("INSERT INTO t_zero.t VALUES (2, '2024-00-10', '2024-03-01 00:00:00')")
    after = srv.binlog_position()
    opts = stream_options(srv, server_id, startingPosition=start, tables="t_zero.t", typed="true")
    batches: list[tuple[int, list[Any]]] = []
    text = _error_text(lambda: _run(spark, opts, tmp_path / "ck", batches))
    assert "UnrepresentableValueError" in text and "invalidValues=null" in text
    found = re.search(r"t_zero\.t column 'd' at (\S+):(\d+) row 0: 2024-00-10 \(a zero", text)
    assert found is not None, text[:2000]
    assert found[1] == before[0] == after[0] and before[1] < int(found[2]) < after[1]
    assert batches == []  # nothing of the batch was delivered

    nulls: list[tuple[int, list[Any]]] = []
    _run(spark, {**opts, "invalidValues": "null"}, tmp_path / "ck_null", nulls)
    got = {r.after.id: (r.after.d, r.after.ts) for r in _rows(nulls)}
    assert got == {
        1: (dt.date(2024, 2, 29), dt.datetime(2024, 2, 29, 10)),
        2: (None, dt.datetime(2024, 3, 1)),
    }


@pytest.mark.integration
def test_alter_table_while_the_query_runs_fails_naming_table_and_position(
    spark: SparkSession, spark_primary: MariaDBServer, server_id: int, tmp_path: Path
) -> None:
    srv = spark_primary
    start = _new_table(srv, "t_alter", "id INT PRIMARY KEY, v VARCHAR(10)")
    srv.sql("INSERT INTO t_alter.t VALUES (1, 'one')")
    opts = stream_options(srv, server_id, startingPosition=start, tables="t_alter.t", typed="true")
    seen: list[Any] = []
    first = threading.Event()

    def sink(df: DataFrame, batch_id: int) -> None:
        seen.extend(df.collect())
        if seen:
            first.set()

    query = (
        _load(spark, opts, stream=True)
        .writeStream.foreachBatch(sink)
        .option("checkpointLocation", str(tmp_path / "ck"))
        .trigger(processingTime="1 second")
        .start()
    )
    try:
        assert first.wait(120), "the first row never arrived"
        srv.sql("ALTER TABLE t_alter.t ADD COLUMN n INT")
        altered_at = srv.binlog_position()
        srv.sql("INSERT INTO t_alter.t VALUES (2, 'two', 2)")
        text = _error_text(lambda: query.awaitTermination(120))
    finally:
        query.stop()
    assert "SchemaChangedError" in text
    assert f"the layout of t_alter.t changed at {altered_at[0]}:" in text
    assert "(id int, v string)" in text and "(id int, v string, n int)" in text
    assert [(r.op, r.after.asDict()) for r in seen] == [("c", {"id": 1, "v": "one"})]


@pytest.mark.integration
def test_typed_needs_one_table_and_full_metadata_at_planning(
    spark: SparkSession,
    spark_primary: MariaDBServer,
    mariadb_primary_factory: PrimaryFactory,
    server_id: int,
) -> None:
    srv = spark_primary
    for tables in ("s_files.*", "a.t,b.t"):
        opts = stream_options(srv, server_id, tables=tables, typed="true")
        text = _error_text(partial(_load, spark, opts, stream=True))
        assert "ConfigError" in text and "exactly one table" in text
    files = {"typed": "true", "tables": "simu_file_dev.folder", "path": str(_FIXTURE)}
    text = _error_text(lambda: _load(spark, files).columns)
    assert "ConfigError" in text and "binlog_row_metadata=FULL" in text
    minimal = mariadb_primary_factory(ServerVariant(row_metadata="MINIMAL"))
    minimal.sql_many(
        ["CREATE DATABASE IF NOT EXISTS t_min", "CREATE TABLE IF NOT EXISTS t_min.t (id INT)"]
    )
    opts = stream_options(minimal, server_id, tables="t_min.t", typed="true")
    # without a schema history the binlog's TABLE_MAPs must say the names
    text = _error_text(partial(_load, spark, {**opts, "schemaHistory": "off"}, stream=True))
    assert "ConfigError" in text and "binlog_row_metadata=FULL" in text
    assert "it has binlog_row_metadata=MINIMAL" in text
    # with one (the default), the struct is the table's definition there
    after = _load(spark, opts, stream=True).schema["after"].dataType
    assert isinstance(after, StructType)
    assert [(f.name, f.dataType.simpleString()) for f in after.fields] == [("id", "int")]
