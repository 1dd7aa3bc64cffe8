"""``interpret`` and the dialect without a server: executable comments, quoting,
qualified names, what is reported unknown, and the effects' shape.

The definitions themselves are checked against the servers
(``test_ddl_servers.py``, ``test_ddl_generated.py``); here the rules that do not
need one.
"""

from __future__ import annotations

from collections.abc import Mapping

import pytest

from replica_client.schema.ddl import DdlContext, DdlEffect, DdlError, interpret
from replica_client.schema.dialect import (
    ExecutableCommentError,
    expand_executable_comments,
    parse_ddl,
    salvage_tables,
)
from replica_client.schema.model import ColumnDef, TableDef

# -- executable comments ---------------------------------------------------------------------


def _open(sql: str, mariadb: bool, version: tuple[int, int]) -> list[str]:
    return [" ".join(t.split()) for t in expand_executable_comments(sql, mariadb, version)]


def test_comment_runs_on_a_newer_server() -> None:
    assert _open("a /*!50100 b */ c", True, (10, 11)) == ["a b c"]
    assert _open("a /*!50100 b */ c", False, (9, 7)) == ["a b c"]
    assert _open("a /*!90800 b */ c", False, (9, 7)) == ["a c"]
    assert _open("a /*!110800 b */ c", True, (10, 11)) == ["a c"]
    assert _open("a /*!110800 b */ c", True, (11, 8)) == ["a b c"]


def test_mariadb_ignores_mysql_57_to_9_comments() -> None:
    # MariaDB runs /*!NNNNN only outside 50700-99999 (MySQL's newer syntax)
    assert _open("a /*!80023 INVISIBLE */", True, (11, 8)) == ["a"]
    assert _open("a /*!80023 INVISIBLE */", False, (9, 7)) == ["a INVISIBLE"]
    assert _open("a /*!50699 b */", True, (10, 11)) == ["a b"]


def test_mariadb_only_comments() -> None:
    assert _open("a /*M!100301 COMPRESSED*/", True, (10, 11)) == ["a COMPRESSED"]
    assert _open("a /*M!100301 COMPRESSED*/", False, (9, 7)) == ["a"]
    assert _open("a /*M! b */", True, (10, 11)) == ["a b"]
    assert _open("a /*m!100301 b*/", True, (10, 11)) == ["a"]  # only an upper-case M


def test_comment_without_version_always_runs() -> None:
    assert _open("a /*! b */ c", True, (10, 11)) == ["a b c"]
    assert _open("a /*! b */ c", False, (9, 7)) == ["a b c"]


def test_version_digits() -> None:
    # MySQL reads six digits when a seventh does not follow; MariaDB a sixth always
    assert _open("a /*!080000 b */", False, (9, 7)) == ["a b"]
    assert _open("a /*!1234567 b */", False, (99, 0)) == ["a 67 b"]
    assert _open("a /*!1000001 b */", True, (10, 11)) == ["a 1 b"]


def test_same_minor_version_reads_both_ways() -> None:
    # (10, 11) does not say whether 10.11.19 >= 10.11.20
    assert sorted(_open("a /*!101120 b */", True, (10, 11))) == ["a", "a b"]
    assert _open("a /*!101100 b */", True, (10, 11)) == ["a b"]  # patch 0: always
    assert len(_open("/*!101101 a */ /*!101102 b */", True, (10, 11))) == 4


def test_comment_end_inside_a_string_of_an_opened_comment() -> None:
    sql = "CREATE TABLE t (a INT /*!50100 COMMENT 'x*/y' */)"
    assert _open(sql, False, (9, 7)) == ["CREATE TABLE t (a INT COMMENT 'x*/y' )"]


def test_comments_inside_strings_and_identifiers_are_text() -> None:
    sql = "CREATE TABLE `a/*!b*/` (c ENUM('/*!50100 x */'))"
    assert _open(sql, False, (9, 7)) == [sql]


def test_unterminated_comment() -> None:
    with pytest.raises(ExecutableCommentError):
        expand_executable_comments("a /* b", True, (10, 11))
    with pytest.raises(ExecutableCommentError):
        expand_executable_comments("a /*!50100 b", True, (10, 11))


def test_too_many_ambiguous_comments() -> None:
    sql = " ".join(f"/*!1011{i:02d} x */" for i in range(1, 7))
    with pytest.raises(ExecutableCommentError):
        expand_executable_comments(sql, True, (10, 11))


# -- interpret ---------------------------------------------------------------------------------


def _table(schema: str, name: str, *columns: str, pk: tuple[str, ...] = ()) -> TableDef:
    return TableDef(
        schema,
        name,
        tuple(ColumnDef(c, "int", nullable=c not in pk) for c in columns),
        primary_key=pk,
        charset="latin1",
        collation="latin1_swedish_ci",
    )


def _ctx(
    tables: Mapping[tuple[str, str], TableDef] = (),  # type: ignore[assignment]
    *,
    mariadb: bool = True,
    version: tuple[int, int] = (10, 11),
    schema: str = "db",
    sql_mode: int | None = None,
    exists: bool | None = None,
) -> DdlContext:
    known = dict(tables)
    return DdlContext(
        default_schema=schema,
        mariadb=mariadb,
        version=version,
        server_collation="latin1_swedish_ci",
        lookup=lambda s, t: known.get((s, t)),
        database_collation=lambda db: "latin1_swedish_ci" if db in ("db", "other") else None,
        sql_mode=sql_mode,
        exists=(lambda s, t: exists) if exists is not None else None,
    )


def _effect(statement: str, ctx: DdlContext) -> DdlEffect:
    effect = interpret(statement, ctx)
    assert effect is not None
    return effect


def test_statements_that_define_no_table() -> None:
    ctx = _ctx()
    for statement in (
        "BEGIN",
        "COMMIT",
        "INSERT INTO t VALUES (1)",
        "CREATE VIEW v AS SELECT 1",
        "CREATE DEFINER=`a`@`%` PROCEDURE p() BEGIN END",
        "GRANT SELECT ON db.* TO u",
        "DROP TEMPORARY TABLE IF EXISTS tmp",
        "/*!50001 CREATE ALGORITHM=UNDEFINED */ /*!50001 VIEW v AS SELECT 1 */",
        "FLUSH TABLES",
    ):
        assert interpret(statement, ctx) is None, statement


def test_quoted_and_qualified_names() -> None:
    effect = _effect(
        "CREATE TABLE `other`.`we``ird t` (`a b` INT, `ü` INT, `x.y` INT, PRIMARY KEY (`a b`))",
        _ctx(),
    )
    table = effect.tables[("other", "we`ird t")]
    assert table is not None
    assert [c.name for c in table.columns] == ["a b", "ü", "x.y"]
    assert table.primary_key == ("a b",)
    assert effect.touched == {("other", "we`ird t")}


def test_unqualified_names_take_the_current_database() -> None:
    effect = _effect("CREATE TABLE t (a INT)", _ctx(schema="other"))
    assert set(effect.tables) == {("other", "t")}


def test_no_database_for_an_unqualified_name() -> None:
    with pytest.raises(DdlError):
        interpret("CREATE TABLE t (a INT)", _ctx(schema=""))


def test_ansi_quotes() -> None:
    effect = _effect('CREATE TABLE "t" ("a b" INT)', _ctx(sql_mode=4))
    table = effect.tables[("db", "t")]
    assert table is not None and table.columns[0].name == "a b"


def test_gh_ost_swap() -> None:
    old = _table("db", "t", "a")
    ghost = _table("db", "_t_gho", "a", "b")
    ctx = _ctx({("db", "t"): old, ("db", "_t_gho"): ghost})
    effect = _effect("RENAME TABLE t TO _t_del, _t_gho TO t", ctx)
    assert effect.tables[("db", "_t_gho")] is None
    new_t = effect.tables[("db", "t")]
    assert new_t is not None and [c.name for c in new_t.columns] == ["a", "b"]
    assert new_t.name == "t"
    deleted = effect.tables[("db", "_t_del")]
    assert deleted is not None and [c.name for c in deleted.columns] == ["a"]
    assert effect.touched == {("db", "t"), ("db", "_t_del"), ("db", "_t_gho")}
    assert not effect.unknown


def test_rename_of_an_unknown_table() -> None:
    effect = _effect("RENAME TABLE a TO b", _ctx())
    assert effect.tables == {("db", "a"): None}
    assert set(effect.unknown) == {("db", "b")}


def test_alter_of_an_unknown_table() -> None:
    effect = _effect("ALTER TABLE t ADD c INT", _ctx())
    assert set(effect.unknown) == {("db", "t")} and not effect.tables
    # a change of no column needs no definition
    effect = _effect("ALTER TABLE t ADD INDEX (a), ENGINE=InnoDB", _ctx())
    assert not effect.unknown and not effect.tables and effect.touched == {("db", "t")}


def test_alter_rename_keeps_the_definition() -> None:
    ctx = _ctx({("db", "t"): _table("db", "t", "a")})
    effect = _effect("ALTER TABLE t RENAME TO other.u", ctx)
    assert effect.tables[("db", "t")] is None
    moved = effect.tables[("other", "u")]
    assert moved is not None and (moved.schema, moved.name) == ("other", "u")


def test_truncate_and_indexes_touch_only() -> None:
    ctx = _ctx({("db", "t"): _table("db", "t", "a", "b", pk=("a",))})
    for statement in ("TRUNCATE t", "CREATE INDEX i ON t (b)", "DROP INDEX i ON t"):
        effect = _effect(statement, ctx)
        assert not effect.tables and not effect.unknown
        assert effect.touched == {("db", "t")}
    effect = _effect("DROP INDEX `PRIMARY` ON t", ctx)
    dropped = effect.tables[("db", "t")]
    assert dropped is not None and dropped.primary_key == ()
    assert not dropped.columns[0].nullable  # a column that leaves the key stays NOT NULL


def test_drop_tables() -> None:
    effect = _effect("DROP TABLE IF EXISTS `a`, other.b /* generated by server */", _ctx())
    assert effect.tables == {("db", "a"): None, ("other", "b"): None}


def test_create_temporary_table_is_unknown() -> None:
    effect = _effect("CREATE TEMPORARY TABLE t (a INT)", _ctx())
    assert set(effect.unknown) == {("db", "t")}


def test_create_if_not_exists() -> None:
    known = _ctx({("db", "t"): _table("db", "t", "a")}, mariadb=False, version=(9, 7))
    effect = _effect("CREATE TABLE IF NOT EXISTS t (z INT)", known)
    assert not effect.tables and not effect.unknown
    # MySQL logs the statement also when the table existed: unknown when nothing is known
    effect = _effect("CREATE TABLE IF NOT EXISTS t (z INT)", _ctx(mariadb=False, version=(9, 7)))
    assert set(effect.unknown) == {("db", "t")}
    # known not to exist
    ctx = _ctx(mariadb=False, version=(9, 7), exists=False)
    effect = _effect("CREATE TABLE IF NOT EXISTS t (z INT)", ctx)
    assert set(effect.tables) == {("db", "t")}
    # MariaDB logs it only when it created the table
    effect = _effect("CREATE TABLE IF NOT EXISTS t (z INT)", _ctx())
    assert set(effect.tables) == {("db", "t")}


def test_create_select_with_its_query_is_unknown() -> None:
    effect = _effect("CREATE TABLE t (a INT) SELECT 1 AS b", _ctx())
    assert set(effect.unknown) == {("db", "t")}


def test_like_of_an_unknown_table_is_unknown() -> None:
    effect = _effect("CREATE TABLE t LIKE nope", _ctx())
    assert set(effect.unknown) == {("db", "t")}


def test_patch_level_dependent_statement_is_unknown() -> None:
    ctx = _ctx({("db", "t"): _table("db", "t", "a")})
    effect = _effect("ALTER TABLE t ADD b INT /*!101120 INVISIBLE */", ctx)
    assert set(effect.unknown) == {("db", "t")}
    effect = _effect("ALTER TABLE t ADD b INT /*!101100 INVISIBLE */", ctx)
    added = effect.tables[("db", "t")]
    assert added is not None and added.columns[1].invisible


def test_unreadable_clause_makes_the_table_unknown() -> None:
    ctx = _ctx({("db", "t"): _table("db", "t", "a")})
    effect = _effect("ALTER TABLE t ADD b INT, SOME_FUTURE_CLAUSE (x)", ctx)
    assert set(effect.unknown) == {("db", "t")} and not effect.tables


def test_unreadable_statement_without_names() -> None:
    with pytest.raises(DdlError) as info:
        interpret("RENAME TABLE a TO", _ctx())
    assert info.value.statement == "RENAME TABLE a TO"


def test_salvaged_names() -> None:
    tables = salvage_tables("DROP TABLE a, db2.b WHATEVER (")
    assert tables is not None and [t.sql() for t in tables] == ["a", "db2.b"]
    assert salvage_tables("ALTER DATABASE x (") is None


def test_system_versioning_is_unknown() -> None:
    effect = _effect("CREATE TABLE t (a INT) WITH SYSTEM VERSIONING", _ctx())
    assert set(effect.unknown) == {("db", "t")}
    ctx = _ctx({("db", "t"): _table("db", "t", "a")})
    for statement in (
        "ALTER TABLE t ADD SYSTEM VERSIONING",
        "ALTER TABLE t ADD COLUMN b INT WITHOUT SYSTEM VERSIONING",
    ):
        assert set(_effect(statement, ctx).unknown) == {("db", "t")}, statement


def test_oracle_mode_is_unknown() -> None:
    effect = _effect("CREATE TABLE t (a DATE)", _ctx(sql_mode=512))
    assert set(effect.unknown) == {("db", "t")}


def test_databases() -> None:
    ctx = _ctx()
    assert _effect("CREATE DATABASE n", ctx).databases == {"n": "latin1_swedish_ci"}
    assert _effect("CREATE DATABASE n CHARACTER SET utf8mb4", ctx).databases == {
        "n": "utf8mb4_general_ci"
    }
    assert _effect("ALTER DATABASE COLLATE utf8mb3_bin", ctx).databases == {"db": "utf8mb3_bin"}
    assert _effect("DROP SCHEMA IF EXISTS n", ctx).databases == {"n": None}
    assert _effect("CREATE OR REPLACE DATABASE n", ctx).databases == {"n": None}
    assert interpret("CREATE DATABASE IF NOT EXISTS db", ctx) is None  # it exists
    assert interpret("ALTER DATABASE db READ ONLY = 0", _ctx(mariadb=False)) is None


def test_sequence_columns() -> None:
    effect = _effect("CREATE SEQUENCE s START WITH 5", _ctx())
    table = effect.tables[("db", "s")]
    assert table is not None
    assert [c.name for c in table.columns] == [
        "next_not_cached_value",
        "minimum_value",
        "maximum_value",
        "start_value",
        "increment",
        "cache_size",
        "cycle_option",
        "cycle_count",
    ]
    assert all(not c.nullable for c in table.columns)


def test_parse_keeps_not_null_after_a_check() -> None:
    tree = parse_ddl("CREATE TABLE t (a INT CHECK (a > 0) NOT ENFORCED NOT NULL)")
    column = tree.expressions[0]
    assert [c.this for c in column.constraints] == ["CHECK", "NOT NULL"]


def test_mysqldump_create_database() -> None:
    sql = (
        "CREATE DATABASE /*!32312 IF NOT EXISTS*/ `n` /*!40100 DEFAULT CHARACTER SET utf8mb4 "
        "COLLATE utf8mb4_0900_ai_ci */ /*!80016 DEFAULT ENCRYPTION='N' */"
    )
    assert _effect(sql, _ctx(mariadb=False, version=(9, 7))).databases == {
        "n": "utf8mb4_0900_ai_ci"
    }
    sql = "CREATE DATABASE /*!32312 IF NOT EXISTS*/ `n` /*!40100 DEFAULT CHARACTER SET latin1 */"
    assert _effect(sql, _ctx()).databases == {"n": "latin1_swedish_ci"}


def test_hex_labels() -> None:
    # MySQL writes the bytes of a binary label that are not UTF-8 as a hex literal
    effect = _effect("CREATE TABLE t (a ENUM(x'e9','x') CHARACTER SET binary)", _ctx())
    assert set(effect.unknown) == {("db", "t")}
    effect = _effect("CREATE TABLE t (a ENUM(0x61, b'01100010', 'c'))", _ctx())
    table = effect.tables[("db", "t")]
    assert table is not None and table.columns[0].labels == ("a", "b", "c")


def test_rename_if_exists_skips_a_missing_table() -> None:
    ctx = _ctx({("db", "b"): _table("db", "b", "x")}, exists=False)
    assert interpret("RENAME TABLE IF EXISTS a TO b", ctx) is None
