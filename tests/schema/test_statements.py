"""classify and written_tables, without a server."""

from __future__ import annotations

import pytest

from replica_client.schema import statements
from replica_client.schema.statements import StatementKind, classify, written_tables

T = StatementKind.TRANSACTION
D = StatementKind.TABLE_DDL
R = StatementKind.ROWS
O = StatementKind.OTHER  # noqa: E741


@pytest.mark.parametrize(
    ("query", "kind"),
    [
        ("BEGIN", T),
        ("COMMIT", T),
        ("commit", T),
        ("ROLLBACK", T),
        ("ROLLBACK TO SAVEPOINT s1", T),
        ("ROLLBACK WORK", T),
        ("SAVEPOINT s1", T),
        ("RELEASE SAVEPOINT s1", T),
        ("XA START 'x'", T),
        ("XA END 'x'", T),
        ("XA PREPARE 'x'", T),
        ("XA COMMIT 'x'", T),
        ("XA ROLLBACK 'x'", T),
        ("START TRANSACTION", T),
        ("START TRANSACTION READ ONLY", T),
        ("  /* c */ begin work", T),
        ("BEGIN NOT ATOMIC INSERT INTO t VALUES (1); END", R),
        ("CREATE TABLE t (a INT)", D),
        ("create temporary table t (a int)", D),
        ("CREATE OR REPLACE TABLE t (a INT)", D),
        ("CREATE TABLE IF NOT EXISTS t LIKE u", D),
        ("ALTER TABLE t ADD b INT", D),
        ("ALTER ONLINE IGNORE TABLE t ADD b INT", D),
        ("DROP TABLE t", D),
        ("DROP TEMPORARY TABLE IF EXISTS t", D),
        ("DROP TABLES a, b", D),
        ("RENAME TABLE a TO b", D),
        ("TRUNCATE t", D),
        ("TRUNCATE TABLE t", D),
        ("CREATE INDEX i ON t (a)", D),
        ("CREATE UNIQUE INDEX i ON t (a)", D),
        ("CREATE OR REPLACE FULLTEXT INDEX i ON t (a)", D),
        ("DROP INDEX i ON t", D),
        ("CREATE DATABASE d", D),
        ("CREATE SCHEMA IF NOT EXISTS d", D),
        ("ALTER DATABASE d CHARACTER SET utf8mb4", D),
        ("DROP SCHEMA d", D),
        ("CREATE SEQUENCE s", D),
        ("ALTER SEQUENCE s RESTART", D),
        ("DROP SEQUENCE s", D),
        ("/*!40101 CREATE TABLE t (a INT) */", D),
        ("# comment\nALTER TABLE t FORCE", D),
        ("-- comment\nDROP TABLE t", D),
        ("INSERT INTO t VALUES (1)", R),
        ("insert ignore into t select * from u", R),
        ("REPLACE INTO t VALUES (1)", R),
        ("UPDATE t SET a = 1", R),
        ("DELETE FROM t", R),
        ("LOAD DATA INFILE 'x' INTO TABLE t", R),
        ("LOAD XML INFILE 'x' INTO TABLE t", R),
        ("CALL p()", R),
        ("EXECUTE stmt", R),
        ("SELECT f(1)", R),
        ("SELECT db.f(1)", R),
        ("SELECT `f`(1)", R),
        ("DO my_func()", R),
        ("SET @x = f()", R),
        ("WITH c AS (SELECT 1) UPDATE t SET a = 1", R),
        ("(SELECT g(1))", R),
        ("IF 1 THEN INSERT INTO t VALUES (1); END IF", R),
        ("SELECT 1", O),
        ("SELECT NOW(), CONCAT('a', 'b'), IFNULL(a, 1) FROM t WHERE a IN (1, 2)", O),
        ("DO SLEEP(1)", O),
        ("SET @x = 1", O),
        ("SET NAMES utf8mb4", O),
        ("SET @@session.sql_mode = CONCAT(@@sql_mode, ',ANSI')", O),
        ("GRANT SELECT ON *.* TO u", O),
        ("CREATE USER u", O),
        ("CREATE VIEW v AS SELECT 1", O),
        ("CREATE OR REPLACE VIEW v AS SELECT 1", O),
        ("CREATE DEFINER=`root`@`%` FUNCTION f() RETURNS INT RETURN 1", O),
        ("CREATE TRIGGER tr BEFORE INSERT ON t FOR EACH ROW SET NEW.a = 1", O),
        ("CREATE EVENT e ON SCHEDULE EVERY 1 DAY DO DELETE FROM t", O),
        ("DROP VIEW v", O),
        ("DROP PROCEDURE p", O),
        ("ALTER USER u IDENTIFIED BY 'x'", O),
        ("ALTER VIEW v AS SELECT 2", O),
        ("RENAME USER a TO b", O),
        ("FLUSH PRIVILEGES", O),
        ("ANALYZE TABLE t", O),
        ("OPTIMIZE TABLE t", O),
        ("REPAIR TABLE t", O),
        ("CHECK TABLE t", O),
        ("CREATE TABLESPACE ts ADD DATAFILE 'x.ibd'", O),
        ("START SLAVE", O),
        ("", O),
        ("/*!50001 CREATE ALGORITHM=UNDEFINED */ /*!50001 VIEW v AS SELECT 1 */", O),
    ],
)
def test_classify(query: str, kind: StatementKind) -> None:
    assert classify(query) is kind


def test_begin_and_commit_are_a_lookup(monkeypatch: pytest.MonkeyPatch) -> None:
    def refuse(*_: object) -> object:
        raise AssertionError("BEGIN/COMMIT must not be scanned")

    monkeypatch.setattr(statements, "_leading_words", refuse)
    assert classify("BEGIN") is T
    assert classify("COMMIT") is T


@pytest.mark.parametrize(
    ("query", "tables"),
    [
        ("INSERT INTO t VALUES (1)", [("db", "t")]),
        ("INSERT INTO t (a, b) VALUES (1, NOW())", [("db", "t")]),
        ("INSERT LOW_PRIORITY IGNORE INTO other.t SELECT * FROM u", [("other", "t")]),
        ("INSERT INTO `we``ird` PARTITION (p1) (a) VALUES (1)", [("db", "we`ird")]),
        ("INSERT INTO t VALUES (1) ON DUPLICATE KEY UPDATE a = VALUES(a)", [("db", "t")]),
        ("INSERT t SET a = 1", [("db", "t")]),
        ("REPLACE INTO t VALUES (1)", [("db", "t")]),
        ("UPDATE t SET a = 1 WHERE b IN (SELECT c FROM u)", [("db", "t")]),
        (
            "UPDATE LOW_PRIORITY IGNORE t1 JOIN other.t2 AS b ON t1.a = b.a SET t1.x = 1",
            [("db", "t1"), ("other", "t2")],
        ),
        ("UPDATE t1, t2 SET t1.a = t2.a", [("db", "t1"), ("db", "t2")]),
        (
            "UPDATE t1 JOIN (SELECT * FROM t3) x ON t1.a = x.a SET t1.a = 1",
            [("db", "t1")],
        ),
        ("DELETE FROM t WHERE a = 1", [("db", "t")]),
        ("DELETE LOW_PRIORITY QUICK IGNORE FROM d.t WHERE a = 1 LIMIT 3", [("d", "t")]),
        ("DELETE a, t2 FROM t1 AS a JOIN t2 ON a.x = t2.x", [("db", "t1"), ("db", "t2")]),
        ("DELETE FROM a.*, t2 USING t1 a JOIN t2 JOIN t3", [("db", "t1"), ("db", "t2")]),
        ("DELETE t1.* FROM t1 JOIN t2 ON t1.a = t2.a", [("db", "t1")]),
        (
            "LOAD DATA LOCAL INFILE '/x' REPLACE INTO TABLE t FIELDS TERMINATED BY ','",
            [("db", "t")],
        ),
        ("LOAD XML INFILE 'x' INTO TABLE d.t ROWS IDENTIFIED BY '<r>'", [("d", "t")]),
    ],
)
def test_written_tables(query: str, tables: list[tuple[str, str]]) -> None:
    assert written_tables(query, "db") == tuple(tables)


@pytest.mark.parametrize(
    "query",
    [
        "INSERT INTO t VALUES (f(1))",
        "INSERT INTO t SELECT db.g(a) FROM u",
        "UPDATE t SET a = `h`(1)",
        "DELETE FROM t WHERE my_check(a)",
        "CALL p()",
        "SELECT f()",
        "INSERT INTO t VALUES ('unterminated",
        "CREATE TABLE t (a INT)",
    ],
)
def test_written_tables_not_known(query: str) -> None:
    assert written_tables(query, "db") is None


def test_written_tables_needs_a_database() -> None:
    assert written_tables("INSERT INTO t VALUES (1)", "") is None
    assert written_tables("INSERT INTO d.t VALUES (1)", "") == (("d", "t"),)
