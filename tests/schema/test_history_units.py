"""The schema history and its tracker without a server: TABLE_MAPs checked and completed,
unknown tables refused, learning from full metadata, pending marks, the JSON form."""

from __future__ import annotations

import json

import pytest

import replica_client as rc
from replica_client.binlog.constants import ColumnType
from replica_client.binlog.events import ColumnInfo, QueryEvent, TableMapEvent
from replica_client.binlog.header import EventHeader
from replica_client.schema import SchemaTracker
from replica_client.schema.history import DdlMark, Unknown

T = ColumnType
CREATE = (
    "CREATE TABLE d.t (id INT UNSIGNED PRIMARY KEY, e ENUM('red','green'), "
    "v VARCHAR(10) CHARACTER SET utf8mb4)"
)
HEADER = EventHeader(1700000000, 19, 1, 0, 0, 0)


def _history() -> rc.SchemaHistory:
    return rc.SchemaHistory.from_ddl(
        ["CREATE DATABASE d CHARACTER SET latin1", CREATE], mariadb=True, version=(10, 11)
    )


def _map(*, names: bool = False, meta_v: int = 40, count: int = 3) -> TableMapEvent:
    """The TABLE_MAP MariaDB writes for CREATE (NO_LOG: no names, no signedness...)."""
    cols = [
        ColumnInfo(0, T.LONG, T.LONG, 0, False),
        ColumnInfo(1, T.STRING, T.ENUM, T.ENUM << 8 | 1, True),
        ColumnInfo(2, T.VARCHAR, T.VARCHAR, meta_v, True),
    ][:count]
    if names:
        cols = [
            ColumnInfo(c.index, c.type, c.real_type, c.meta, c.nullable, name=n)
            for c, n in zip(cols, ("id", "e", "v"), strict=False)
        ]
    return TableMapEvent(HEADER, 7, 1, "d", "t", tuple(cols))


def test_a_table_map_is_completed_from_its_definition() -> None:
    tracker = SchemaTracker(_history())
    tm, key = tracker.table_map(_map(), b"def")
    assert tm.column_names == ("id", "e", "v")
    assert tm.columns[0].unsigned is True
    assert tm.columns[1].enum_values == ("red", "green")
    assert tm.columns[2].collation is not None
    assert tm.primary_key == (0,)
    assert key != b"def"  # its decoder is not the bare TABLE_MAP's
    # the same definition again: the same answer, from the cache
    assert tracker.table_map(_map(), b"def") == (tm, key)


def test_a_disagreement_is_refused_or_positional() -> None:
    wide = _map(meta_v=80)  # VARCHAR(20) utf8mb4: not VARCHAR(10)
    with pytest.raises(rc.SchemaMismatchError, match=r"column 3, 'v'") as info:
        SchemaTracker(_history()).table_map(wide, b"w")
    assert (info.value.schema, info.value.table, info.value.column) == ("d", "t", "v")
    with pytest.raises(rc.SchemaMismatchError, match="2 columns"):
        SchemaTracker(_history()).table_map(_map(count=2), b"n")
    tm, key = SchemaTracker(_history(), unproven="positional").table_map(wide, b"w")
    assert tm == wide and key == b"w"


def test_an_unknown_table_names_its_reason_and_statement() -> None:
    history = _history().replace(
        tables={("d", "t"): Unknown("it was altered by a statement not read", "ALTER TABLE x")}
    )
    with pytest.raises(rc.UnknownSchemaError, match="not read") as info:
        SchemaTracker(history).table_map(_map(), b"u")
    assert info.value.statement == "ALTER TABLE x"
    with pytest.raises(rc.UnknownSchemaError, match="GRANT SELECT ON `d`"):
        SchemaTracker(rc.SchemaHistory(mariadb=True, version=(10, 11))).table_map(_map(), b"g")


def test_full_metadata_wins_and_is_learnt() -> None:
    full = TableMapEvent(
        HEADER,
        7,
        1,
        "d",
        "t",
        (
            ColumnInfo(0, T.LONG, T.LONG, 0, False, name="id", unsigned=True),
            ColumnInfo(1, T.LONG, T.LONG, 0, True, name="n", unsigned=False),
        ),
    )
    tracker = SchemaTracker(_history())
    tm, key = tracker.table_map(full, b"f")
    assert tm is full and key == b"f"
    learnt = tracker.history.tables[("d", "t")]
    assert isinstance(learnt, rc.TableDef)
    assert [(c.name, c.data_type, c.unsigned) for c in learnt.columns] == [
        ("id", "int", True),
        ("n", "int", False),
    ]
    assert ("d", "t") in tracker.history.changed


def _ddl(query: str, timestamp: int = 1700000001) -> QueryEvent:
    header = EventHeader(timestamp, 2, 1, 0, 0, 0)
    return QueryEvent(header, 1, 0, 0, "d", query)


def test_ddl_moves_the_history_and_pending_marks_count_repeats() -> None:
    tracker = SchemaTracker(_history())
    tracker.query(_ddl("ALTER TABLE d.t CHANGE e colour ENUM('red','green')"))
    tm, _ = tracker.table_map(_map(), b"x")
    assert tm.column_names == ("id", "colour", "v")
    # the second of two identical DDL statements in one second installs the definition
    alter = _ddl("ALTER TABLE d.t ADD COLUMN z INT")
    mark = DdlMark.of(alter)
    captured = _history().tables[("d", "t")]
    assert isinstance(captured, rc.TableDef)
    waiting = _history().with_pending({(mark, 2): [("d", "t")]}, {("d", "t"): captured})
    tracker = SchemaTracker(waiting)
    with pytest.raises(rc.UnknownSchemaError):
        tracker.table_map(_map(), b"p")
    tracker.query(alter)
    first = tracker.history.tables[("d", "t")]
    assert isinstance(first, Unknown)  # (the first ALTER of a table not known yet)
    tracker.query(alter)
    second = tracker.history.tables[("d", "t")]
    assert second == captured
    assert not tracker.history.pending


def test_the_json_form_round_trips() -> None:
    tracker = SchemaTracker(_history())
    tracker.query(_ddl("CREATE TABLE d.u (a INT)"))
    history = tracker.history
    text = json.dumps(history.to_json())
    again = rc.SchemaHistory.from_json(json.loads(text))
    assert again.tables == history.tables and again.changed == history.changed
    # a checkpoint keeps the selected tables and those the binlog changed
    kept = rc.SchemaHistory.from_json(history.to_json(keep=lambda s, t: False))
    assert set(kept.tables) == {("d", "u")}
    with pytest.raises(ValueError, match="schema history"):
        rc.SchemaHistory.from_json({"format": 1})


def test_from_ddl_refuses_what_it_cannot_apply() -> None:
    with pytest.raises(rc.ConfigError, match="not DDL"):
        rc.SchemaHistory.from_ddl(["INSERT INTO t VALUES (1)"], mariadb=True, version=(10, 11))
    with pytest.raises(rc.ConfigError, match="cannot be applied"):
        rc.SchemaHistory.from_ddl(["ALTER TABLE d.nope ADD c INT"], mariadb=True, version=(10, 11))
