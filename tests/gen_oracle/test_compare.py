"""The generated oracle's comparison fails where it must (no server needed)."""

from __future__ import annotations

import datetime as dt
from typing import Any

from replica_client.changes import Change
from tests.gen_oracle.run import Expected, Text, Transaction, Workload, compare
from tests.gen_oracle.schema import GenColumn, GenTable, generate_table

_COLUMNS = (
    GenColumn("id", "INT NOT NULL", "int", lambda r: "1"),
    GenColumn("rev", "INT NOT NULL", "int", lambda r: "0"),
    GenColumn("u", "INT UNSIGNED NOT NULL", "int", lambda r: "1"),
)
_AT = dt.datetime(2024, 1, 1, tzinfo=dt.UTC)


def _change(table: str, op: str, after: dict[str, Any] | None, before: Any = None) -> Change:
    return Change(op, "gen_1", table, before, after, None, None, _AT)  # type: ignore[arg-type]


def _workload(committed: bool = True) -> Workload:
    wl = Workload(1, "gen_1", GenTable(1, _COLUMNS), "FULL", "FULL")
    tx = Transaction(1, _COLUMNS, committed)
    tx.changes.append(Expected("insert", None, {"id": "5", "rev": "0", "u": "4000000000"}, "INS"))
    wl.transactions.append(tx)
    return wl


def _decoded(u: int, with_tx: bool = True) -> list[Change]:
    out = []
    if with_tx:
        out += [
            _change("m", "insert", {"k": 1}),
            _change("t", "insert", {"id": 5, "rev": 0, "u": u}),
        ]
    return [*out, _change("m", "insert", {"k": 2})]


def test_equal_values_compare_equal() -> None:
    outcome = compare(_decoded(4000000000), _workload(), "mariadb")
    assert outcome.mismatches == [] and outcome.compared == 3


def test_a_wrong_value_is_reported_with_its_statement() -> None:
    outcome = compare(_decoded(-294967296), _workload(), "mariadb")
    assert outcome.failing_columns == {"u"}
    assert "decoded '-294967296' != SELECT '4000000000'" in outcome.mismatches[0]
    assert "statement: INS" in outcome.mismatches[0]


def test_lost_rolled_back_and_unended_streams_are_reported() -> None:
    assert compare(_decoded(4000000000, with_tx=False), _workload(), "mariadb").mismatches == [
        "tx 1 committed but not decoded"
    ]
    rolled_back = compare(_decoded(4000000000), _workload(committed=False), "mariadb")
    assert rolled_back.mismatches == ["tx 1 was rolled back but decoded"]
    unended = compare(_decoded(4000000000)[:-1], _workload(), "mariadb")
    assert unended.mismatches == ["the end marker was never decoded"]


def test_a_full_image_missing_a_column_is_reported() -> None:
    decoded = _decoded(4000000000)
    decoded[1] = _change("t", "insert", {"id": 5, "rev": 0})
    assert "columns missing: ['u']" in compare(decoded, _workload(), "mariadb").mismatches[0]


def test_the_generator_is_deterministic_and_covers_every_kind() -> None:
    def ddl(seed: int) -> str:
        return generate_table(seed, "mariadb", "").ddl("t")

    assert ddl(5) == ddl(5) and ddl(5) != ddl(6)
    kinds: set[str] = set()
    for seed in range(200):
        kinds |= {c.kind for c in generate_table(seed, "mysql", "9.7").columns}
    assert kinds >= {
        "int",
        "year",
        "bit",
        "decimal",
        "float",
        "double",
        "date",
        "time",
        "datetime",
        "timestamp",
        "text",
        "bytes",
        "enum",
        "set",
        "json",
        "geometry",
    }


def test_keys_that_are_not_the_names_then_or_out_of_order_are_reported() -> None:
    decoded = _decoded(4000000000)
    decoded[1] = _change("t", "insert", {"@1": 5, "rev": 0, "u": 4000000000})
    assert (
        "decoded key '@1' is not a column"
        in compare(decoded, _workload(), "mariadb").mismatches[-1]
    )
    decoded[1] = _change("t", "insert", {"rev": 0, "id": 5, "u": 4000000000})
    mismatches = compare(decoded, _workload(), "mariadb").mismatches
    assert mismatches == [
        "tx 1 t insert-after: decoded keys in the order ['rev', 'id', 'u'], "
        "the table's ['id', 'rev', 'u']"
    ]


def test_a_change_of_another_table_or_twice_is_reported() -> None:
    decoded = _decoded(4000000000)
    decoded[1] = _change("_t_gho", "insert", {"id": 5, "rev": 0, "u": 4000000000})
    assert compare(decoded, _workload(), "mariadb").mismatches == [
        "tx 1: decoded [('insert', '_t_gho')] != [('insert', 't')]"
    ]
    twice = _decoded(4000000000)
    twice[2:2] = twice[:2]
    assert "tx 1 decoded twice" in compare(twice, _workload(), "mariadb").mismatches


def test_text_the_server_cannot_convert_compares_as_its_bytes() -> None:
    text = GenColumn("s", "VARCHAR(5) CHARACTER SET sjis NOT NULL", "text", lambda r: "''")
    columns = (*_COLUMNS[:2], text)
    wl = Workload(1, "gen_1", GenTable(1, columns), "FULL", "NO_LOG")
    tx = Transaction(1, columns, True)
    tx.changes.append(
        Expected("insert", None, {"id": "5", "rev": "0", "s": Text("a?", b"a\xfc")}, "I")
    )
    wl.transactions.append(tx)

    def run(value: object) -> list[str]:
        decoded = [
            _change("m", "insert", {"k": 1}),
            _change("t", "insert", {"id": 5, "rev": 0, "s": value}),
            _change("m", "insert", {"k": 2}),
        ]
        return compare(decoded, wl, "mariadb").mismatches

    assert run(b"a\xfc") == []
    assert run("a?") == []
    assert run(b"a?") != [] and run("a\xfc") != []


def test_a_ddl_after_a_commit_is_told_from_one_after_rollbacks_only() -> None:
    wl = _workload(committed=False)
    wl.ddl = [(1, "CREATE TABLE t (id INT)")]
    wl.transactions[0].ddl = 1
    wl.ddl.append((2, "ALTER TABLE t ADD COLUMN x INT"))
    assert not wl.ddl_after_a_commit()  # the only transaction before it was rolled back
    wl.transactions[0].committed = True
    assert wl.ddl_after_a_commit()
    wl.ddl.pop()
    assert not wl.ddl_after_a_commit()
