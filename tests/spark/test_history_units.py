"""Schema histories in the Spark source, without a server or a JVM.

Options ``schemaHistory`` and ``unproven``; offsets that hold a history and
read back to the same text (Spark compares offsets by their text); partitions
holding each distinct history once; the history file of a batch read (a
checkpoint's JSON or a history's); the driver's pass over binlog files giving
every span the history at its start (a span decoded with it reads what the
whole file reads; with the first file's history it would not); typed mode's
struct from a table definition.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from replica_client.binlog.events import QueryEvent, TableMapEvent
from replica_client.checkpoint import Checkpoint
from replica_client.config import DecoderOptions
from replica_client.errors import ConfigError, StatementLoggedError
from replica_client.files import BinlogFileReader, file_spans
from replica_client.position import FilePos, Gtid
from replica_client.schema import ColumnDef, SchemaHistory, TableDef
from replica_client.spark import parse_options
from replica_client.spark.dump import Txn
from replica_client.spark.history import (
    HistoryJson,
    load_history_file,
    span_histories,
    statement_check,
)
from replica_client.spark.planner import Offset, split_partitions
from replica_client.spark.typed import definition_layout

from .conftest import ROOT

#: MySQL 8 binlog with CREATE/ALTER TABLE between its transactions (MINIMAL metadata).
_DDL_FILE = ROOT / "tests/data/binlogs/canal/tsdb/mysql-bin.000003"


def _history(*tables: TableDef, mariadb: bool = True) -> SchemaHistory:
    return SchemaHistory.from_definitions(tables, mariadb=mariadb, version=(10, 11))


_T = TableDef(
    "shop",
    "t",
    (
        ColumnDef("id", "int", unsigned=True, nullable=False),
        ColumnDef("e", "enum", labels=("a", "b"), charset="utf8mb4"),
    ),
    ("id",),
)


def test_schema_history_and_unproven_options() -> None:
    opts = parse_options({})
    assert (opts.schema_history, opts.schema_history_file, opts.unproven) == ("auto", None, "error")
    opts = parse_options({"SCHEMAHISTORY": "Scan", "Unproven": "POSITIONAL"})
    assert (opts.schema_history, opts.unproven) == ("scan", "positional")
    assert parse_options({"schemahistory": "OFF"}).uses_history is False
    with pytest.raises(ConfigError, match="no such file"):
        parse_options({"schemaHistory": "/nonexistent/history.json"})
    with pytest.raises(ConfigError, match="error or positional"):
        parse_options({"unproven": "guess"})


def test_history_files_hold_a_checkpoint_or_a_history(tmp_path: Path) -> None:
    history = _history(_T)
    plain = tmp_path / "history.json"
    plain.write_text(json.dumps(history.to_json()))
    checkpoint = tmp_path / "checkpoint.json"
    checkpoint.write_text(Checkpoint(FilePos("b.000001", 4), Gtid("0-1-5"), history).to_json())
    for path in (plain, checkpoint):
        opts = parse_options({"schemaHistory": str(path)})
        assert opts.schema_history_file == str(path) and opts.uses_history
        assert load_history_file(str(path)).tables[("shop", "t")] == _T
    bare = tmp_path / "bare.json"
    bare.write_text(Checkpoint(FilePos("b.000001", 4), Gtid("0-1-5")).to_json())
    with pytest.raises(ConfigError, match="holds no schema history"):
        load_history_file(str(bare))
    broken = tmp_path / "broken.json"
    broken.write_text('{"format": 99, "tables": []}')
    with pytest.raises(ConfigError, match="no valid schema history"):
        load_history_file(str(broken))


def test_offsets_hold_the_history_and_read_back_to_the_same_text() -> None:
    form = HistoryJson(None)(_history(_T))
    assert form is not None
    offset = Offset("mysql-bin.000003", 400, "0-1-7", "db1:3306", schema=form)
    text = json.dumps(offset.to_json())
    again = Offset.from_json(json.loads(text))
    assert json.dumps(again.to_json()) == text
    assert again == offset and again.schema == form
    restored = again.history()
    assert restored is not None and restored.tables[("shop", "t")] == _T
    # an offset without one (schemaHistory=off, or written before histories were kept)
    legacy = Offset.from_json({"file": "mysql-bin.000003", "pos": 400, "gtid": "0-1-7"})
    assert legacy.history() is None and legacy == Offset("mysql-bin.000003", 400, "0-1-7")
    with pytest.raises(ConfigError, match="no valid schema history"):
        Offset.from_json({**offset.to_json(), "schema": {"format": 99}}).history()


def test_history_forms_are_kept_to_the_selected_tables_and_made_once() -> None:
    other = TableDef("shop", "other", (ColumnDef("id", "int"),))
    history = _history(_T, other)
    forms = HistoryJson(parse_options({"tables": "shop.t"}).tables)
    form = forms(history)
    assert form is not None and [t["name"] for t in form["tables"]] == ["t"]
    assert forms(history) is form  # the same history: its form again, not made anew
    assert forms(None) is None


def test_each_range_starts_with_the_history_valid_at_its_start() -> None:
    before, after = _history(_T), _history()
    # transaction 5 is a DDL: the history before it is ``before``, after it ``after``
    txns = [
        Txn("f.000001", 1, f"0-1-{i}", FilePos("f.000001", 100 * i), "", before if i < 6 else after,
            FilePos("f.000001", 100 * (i + 1)), "", 100, 0, True, before if i < 5 else after, "a:1")
        for i in range(10)
    ]  # fmt: skip
    one = split_partitions(txns, parse_options({"maxPartitions": "1"}))
    assert len(one) == 1 and one[0].start.history() is not None
    assert one[0].start.history().tables == before.tables  # type: ignore[union-attr]
    parts = split_partitions(txns, parse_options({"maxPartitions": "3", "partitionBytes": "300"}))
    assert [p.start.pos for p in parts] == [0, 400, 700]
    histories = [p.start.history() for p in parts]
    # ranges from transactions 0 and 4 (before the DDL) and 7 (after it)
    assert [h.tables if h else None for h in histories] == [
        before.tables,
        before.tables,
        after.tables,
    ]


def _table_maps(
    span: tuple[int, int] | None, history: SchemaHistory
) -> list[tuple[int, str, tuple[str, ...]]]:
    out = []
    reader = BinlogFileReader(
        [_DDL_FILE], DecoderOptions(), span=span, schema_history=history, unproven="positional"
    )
    with reader:
        for event in reader:
            if isinstance(event, TableMapEvent):
                where = reader.event_position
                assert where is not None
                out.append((where.pos, event.table, event.column_names))
    return out


def test_each_span_of_a_file_gets_the_history_at_its_start() -> None:
    start = SchemaHistory(mariadb=False, version=(8, 0))  # tables created in the file
    whole = _table_maps(None, start)
    assert any(not names[0].startswith("@") for _, _, names in whole)
    spans = file_spans(_DDL_FILE, 1000)
    assert len(spans) > 5
    found = span_histories(
        [str(_DDL_FILE)], [[lo for lo, _ in spans]], DecoderOptions(), start, "positional"
    )
    assert len(found) == 1 and len(found[0]) == len(spans)
    by_span = [tm for span, h in zip(spans, found[0], strict=True) for tm in _table_maps(span, h)]
    assert by_span == whole
    # the first file's history for every span would name fewer columns
    assert [tm for span in spans for tm in _table_maps(span, start)] != whole


def test_the_driver_pass_applies_the_statement_rule(tmp_path: Path) -> None:
    opts = parse_options({"tables": "nowhere.*"})
    starts = [[0]]
    start = SchemaHistory(mariadb=False, version=(8, 0))
    span_histories([str(_DDL_FILE)], starts, DecoderOptions(), start, "positional",
                   statement_check(opts))  # fmt: skip
    seen: list[str] = []

    def check(event: QueryEvent, where: FilePos | None, gtid: str | None) -> None:
        seen.append(event.query)

    span_histories([str(_DDL_FILE)], starts, DecoderOptions(), start, "positional", check)
    assert any("CREATE TABLE" in q.upper() for q in seen)
    rule = statement_check(parse_options({"tables": "shop.*"}), "MIXED")
    with pytest.raises(StatementLoggedError, match=r"binlog_format is MIXED"):
        rule(_query("INSERT INTO shop.t VALUES (1)"), FilePos("b.000001", 4), "0-1-1")
    assert rule(_query("INSERT INTO crm.t VALUES (1)"), None, None) == []


def _query(sql: str) -> QueryEvent:
    """A QueryEvent of ``sql`` (from the fixture's first one, its text replaced)."""
    from dataclasses import replace

    with BinlogFileReader([_DDL_FILE], DecoderOptions()) as reader:
        for event in reader:
            if isinstance(event, QueryEvent):
                return replace(event, query=sql, query_bytes=sql.encode(), schema="shop")
    raise AssertionError("no QueryEvent in the fixture")


def test_typed_struct_from_a_table_definition() -> None:
    table = TableDef(
        "shop",
        "t",
        (
            ColumnDef("id", "int", unsigned=True),
            ColumnDef("big", "bigint", unsigned=True),
            ColumnDef("small", "tinyint", unsigned=True),
            ColumnDef("d", "decimal", precision=10, scale=2),
            ColumnDef("e", "enum", labels=("a", "b"), charset="utf8mb4"),
            ColumnDef("s", "set", labels=("x", "y"), charset="latin1"),
            ColumnDef("c", "char", length=200, charset="utf8mb4"),
            ColumnDef("v", "varchar", length=20, charset="latin1"),
            ColumnDef("vb", "varbinary", length=20),
            ColumnDef("b", "blob"),
            ColumnDef("tx", "text", charset="utf8mb4"),
            ColumnDef("bits", "bit", length=5),
            ColumnDef("dt", "datetime", fsp=3),
            ColumnDef("u", "uuid"),
            ColumnDef("ip", "inet4"),
        ),
    )
    layout = definition_layout(table, True, (10, 11))
    assert [(c.name, c.spark) for c in layout] == [
        ("id", "bigint"), ("big", "decimal(20,0)"), ("small", "int"), ("d", "decimal(10,2)"),
        ("e", "string"), ("s", "string"), ("c", "string"), ("v", "string"), ("vb", "binary"),
        ("b", "binary"), ("tx", "string"), ("bits", "int"), ("dt", "timestamp_ntz"),
        ("u", "string"), ("ip", "string"),
    ]  # fmt: skip
    assert layout[5].labels == ("x", "y")
    assert layout[13].kind == layout[14].kind == "text_value"  # uuid.UUID, IPv4Address -> str


def test_the_first_batch_is_replayed_with_the_history_it_was_planned_with(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Spark does not log a query's initial offset: a replay of the first batch after a
    restart starts from a newly made one. Its end offset holds the history it started
    with, and the replay decodes with that one."""
    from replica_client.spark.planner import StreamPlanner

    opts = parse_options({"user": "u", "serverId": "9", "tables": "shop.t"})
    planner = StreamPlanner(opts)
    planned, now = _history(_T), _history()
    forms = HistoryJson(opts.tables)
    initial = Offset("b.000001", 4, "0-1-1", "127.0.0.1:3306", schema=forms(planned))
    planner._initial = initial
    txns = iter(
        [Txn("b.000001", 1, "0-1-2", FilePos("b.000001", 4), "0-1-1", planned,
             FilePos("b.000001", 100), "0-1-2", 10, 0, True, now, "127.0.0.1:3306")]
    )  # fmt: skip
    monkeypatch.setattr(planner, "_open", lambda start, **kw: None)
    monkeypatch.setattr(planner, "_next", lambda: next(txns, None))
    end = planner.latest_offset(Offset.from_json(initial.to_json()), None, None)
    assert end.schema == forms(now) and end.initial_schema == initial.schema
    logged = Offset.from_json(json.loads(json.dumps(end.to_json())))
    assert "initial_schema" not in str(logged.shown())
    # the replay after a restart: a new initial offset, made with other definitions
    fresh = Offset("b.000001", 4, "0-1-1", "127.0.0.1:3306", schema=forms(now))
    starts: list[SchemaHistory | None] = []

    def reread(start: Offset, end: Offset) -> list[Txn]:
        starts.append(start.history())
        return []

    monkeypatch.setattr(planner, "_reread", reread)
    planner._cache.clear()
    planner.plan(fresh, logged)
    assert starts[0] is not None and starts[0].tables == planned.tables
    # later batches hold their own history only
    later = Offset("b.000001", 100, "0-1-2", "127.0.0.1:3306", schema=forms(now))
    planner.plan(later, Offset("b.000001", 200, "0-1-3", "127.0.0.1:3306", schema=forms(now)))
    assert starts[1] is not None and starts[1].tables == now.tables
