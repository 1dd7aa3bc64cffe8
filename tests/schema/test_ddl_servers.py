"""DDL statements, one form at a time, with the servers as the oracle.

For each case and each server whose flavour has the syntax (MariaDB 10.11,
11.8, MySQL 9.7): the case's tables are set up, captured from
``information_schema``, the statement runs on the server, and the QueryEvents
the server wrote for it (read over a replication connection: the text the
binlog holds, which is not always the text sent: DROP TABLE and CREATE ...
SELECT are rewritten; the event's database and sql_mode) are given to
:func:`~replica_client.schema.ddl.interpret` from the first capture. The
definitions it gives must equal a second capture, field by field; the tables a
case names in ``unknown`` must be reported unknown instead.
"""

from __future__ import annotations

from dataclasses import dataclass

import pytest

from replica_client.testing.pytest_plugin import PrimaryFactory
from replica_client.testing.server import DatabaseServer
from tests.schema._ddl_support import (
    SERVERS,
    Replay,
    capture,
    connect,
    execute,
    logged_events,
)

pytestmark = pytest.mark.integration

DB = "ddlt"
DB2 = "ddlt2"
DBS = (DB, DB2, "ddlt3")
ALL = tuple(SERVERS)
MARIADB = ("mariadb-10.11", "mariadb-11.8")
MYSQL = ("mysql-9.7",)
VECTOR = ("mariadb-11.8", "mysql-9.7")


@dataclass(frozen=True)
class Case:
    name: str
    statements: tuple[str, ...]
    setup: tuple[str, ...] = ()
    servers: tuple[str, ...] = ALL
    unknown: tuple[str, ...] = ()  # tables (of DB, or "db.t") reported unknown
    explicit_defaults_for_timestamp: bool | None = True


def case(
    name: str,
    statements: str | tuple[str, ...],
    *setup: str,
    servers: tuple[str, ...] = ALL,
    unknown: tuple[str, ...] = (),
    explicit_ts: bool | None = True,
) -> Case:
    stmts = (statements,) if isinstance(statements, str) else statements
    return Case(name, stmts, setup, servers, unknown, explicit_ts)


T1 = "CREATE TABLE t (a INT NOT NULL, b VARCHAR(10), c TEXT, d INT, PRIMARY KEY (a))"
T_LATIN1 = (
    "CREATE TABLE t (a INT, b VARCHAR(10), c TINYTEXT, d TEXT, e MEDIUMTEXT, f CHAR(4), "
    "g ENUM('x','y'), h SET('p','q'), i LONGTEXT, j VARBINARY(4), k BLOB) DEFAULT CHARSET=latin1"
)
T_NO_ENUM = (
    "CREATE TABLE t (a INT, b VARCHAR(10), c TINYTEXT, d TEXT, e MEDIUMTEXT, f CHAR(4), "
    "i LONGTEXT, j VARBINARY(4)) DEFAULT CHARSET=latin1"
)
LABELS = (
    "CREATE TABLE t (a ENUM('it''s', 'a,b', ' lead', 'trail  ', 'é', '日本', 'back\\\\slash', "
    "'\"dq\"'), b SET('x y', 'ü', 'q''uote', 'sp  '))"
)

CASES: list[Case] = [
    # -- CREATE TABLE: types and aliases --------------------------------------------------
    case(
        "integers",
        "CREATE TABLE t (a TINYINT, b SMALLINT UNSIGNED, c MEDIUMINT ZEROFILL, d INT(5), "
        "e INTEGER, f BIGINT SIGNED, g INT1, h INT2, i INT3, j INT4, k INT8, l MIDDLEINT, "
        "m BOOL, n BOOLEAN, o SERIAL, p TINYINT(1) UNSIGNED NOT NULL)",
    ),
    case(
        "decimals and floats",
        "CREATE TABLE t (a DECIMAL, b DECIMAL(5), c DEC(7,3), d NUMERIC(20,10) UNSIGNED, "
        "e FIXED(4,1), f FLOAT, g FLOAT(10), h FLOAT(30), i FLOAT(7,3), j DOUBLE, "
        "k DOUBLE PRECISION, l REAL, m FLOAT4, n FLOAT8, o DOUBLE(10,2) ZEROFILL, "
        "p DECIMAL(65,30), q FLOAT(24), r FLOAT(25), s FLOAT UNSIGNED)",
    ),
    case(
        "temporal and bit",
        "CREATE TABLE t (a DATE, b TIME, c TIME(3), d DATETIME, e DATETIME(6), "
        "f TIMESTAMP NULL, g TIMESTAMP(2) NOT NULL DEFAULT CURRENT_TIMESTAMP(2) "
        "ON UPDATE CURRENT_TIMESTAMP(2), h YEAR, j BIT, k BIT(64), l TIMESTAMP)",
    ),
    case(
        "character types and aliases",
        "CREATE TABLE t (a NATIONAL CHAR(3), b NCHAR(4), c NATIONAL VARCHAR(5), "
        "d NVARCHAR(6), e LONG VARCHAR, f LONG, g LONG VARBINARY, h CHARACTER VARYING(10), "
        "i CHAR, j VARCHAR(10) BINARY, k CHAR(5) BYTE, l CHAR(2) ASCII, m CHAR(2) UNICODE, "
        "n BINARY, o VARBINARY(7), p NCHAR VARCHAR(3), q NATIONAL CHARACTER VARYING(3), "
        "r LONG CHAR VARYING, s VARCHARACTER(3), u CHARACTER(2), v CHAR VARYING(9)) "
        "DEFAULT CHARSET=latin1",
    ),
    case(
        "column character sets and collations",
        "CREATE TABLE t (a VARCHAR(3) CHARACTER SET utf8mb4, b VARCHAR(3), "
        "c VARCHAR(3) BINARY, d VARCHAR(3) COLLATE utf8mb4_unicode_ci, "
        "e VARCHAR(2) CHARACTER SET utf8, f VARCHAR(2) COLLATE utf8_bin, "
        "g VARCHAR(3) CHARSET utf8mb4 COLLATE utf8mb4_bin, h CHAR(3) CHARACTER SET ucs2, "
        "i TEXT CHARACTER SET utf16, j ENUM('a') CHARACTER SET latin1 COLLATE latin1_bin, "
        "k VARCHAR(4) CHARACTER SET utf8mb4 BINARY, l VARCHAR(3) BINARY CHARACTER SET latin1, "
        "m VARCHAR(3) NOT NULL COLLATE latin1_german2_ci, n VARCHAR(3) DEFAULT 'x' "
        "COLLATE latin1_bin) DEFAULT CHARSET=utf8mb4 COLLATE=utf8mb4_bin",
    ),
    case(
        "binary attribute with a collation",
        "CREATE TABLE t (a VARCHAR(3) BINARY COLLATE latin1_bin, b TEXT BINARY COLLATE ucs2_bin, "
        "c VARCHAR(3) CHARACTER SET utf8mb4 BINARY COLLATE utf8mb4_bin, "
        "d ENUM('x ', 'y') CHARACTER SET binary) DEFAULT CHARSET=latin1",
    ),
    case(
        "binary attribute over a collation",
        "CREATE TABLE t (a VARCHAR(3) BINARY COLLATE utf8mb4_unicode_ci, "
        "b VARCHAR(3) BINARY COLLATE utf8mb4_0900_bin)",
        servers=MYSQL,
    ),
    case(
        "binary collation with the binary attribute",
        "CREATE TABLE t (a VARCHAR(3) BINARY COLLATE utf8mb4_nopad_bin)",
        servers=("mariadb-11.8",),
    ),
    case(
        "character set binary",
        "CREATE TABLE t (a CHAR(3) CHARACTER SET binary, b VARCHAR(3) CHARSET binary, "
        "c TEXT CHARACTER SET binary, d ENUM('a','b') CHARACTER SET binary, "
        "e VARCHAR(5) COLLATE binary, f TINYTEXT BYTE, g SET('x') CHARACTER SET binary)",
    ),
    case(
        "text and blob sizes",
        "CREATE TABLE t (a TEXT(100), b TEXT(1000), c TEXT(70000), d TEXT(63), e TEXT(64), "
        "f BLOB(255), g BLOB(256), h BLOB(70000), i BLOB(20000000), j TINYTEXT, "
        "k MEDIUMTEXT, l LONGTEXT, m TEXT(255) CHARACTER SET latin1, n TINYBLOB, o LONGBLOB) "
        "DEFAULT CHARSET=utf8mb4",
    ),
    case("enum and set labels", LABELS),
    case("json", "CREATE TABLE t (a JSON, b JSON NOT NULL) DEFAULT CHARSET=latin1"),
    case(
        "json collation",
        "CREATE TABLE t (a JSON COLLATE utf8mb4_general_ci)",
        servers=MARIADB,
    ),
    case(
        "geometry",
        "CREATE TABLE t (a GEOMETRY, b POINT NOT NULL, c LINESTRING, d POLYGON, "
        "e MULTIPOINT, f MULTILINESTRING, g MULTIPOLYGON, h GEOMETRYCOLLECTION)",
    ),
    case("geomcollection", "CREATE TABLE t (a GEOMCOLLECTION, b POINT SRID 4326)", servers=MYSQL),
    case(
        "mariadb types",
        "CREATE TABLE t (a UUID, b INET4, c INET6 NOT NULL, d UUID DEFAULT UUID())",
        servers=MARIADB,
    ),
    case("vector", "CREATE TABLE t (a VECTOR(3) NOT NULL, b INT)", servers=VECTOR),
    case(
        "compressed",
        "CREATE TABLE t (a VARCHAR(10) COMPRESSED, b TEXT COMPRESSED=zlib, c BLOB COMPRESSED, "
        "d VARBINARY(10) COMPRESSED, e LONGTEXT COMPRESSED)",
        servers=MARIADB,
    ),
    case(
        "generated columns",
        "CREATE TABLE t (a INT, b INT AS (a + 1), c INT GENERATED ALWAYS AS (a * 2) STORED, "
        "d INT AS (a) VIRTUAL, e VARCHAR(10) AS (CONCAT(a, 'x')) STORED, "
        "f INT GENERATED ALWAYS AS (a) VIRTUAL COMMENT 'c')",
    ),
    case(
        "persistent generated",
        "CREATE TABLE t (a INT, b INT AS (a + 1) PERSISTENT, c INT AS (a) VIRTUAL INVISIBLE)",
        servers=MARIADB,
    ),
    case(
        "generated not null",
        "CREATE TABLE t (a INT, c INT AS (a) STORED NOT NULL, d INT AS (a) NOT NULL)",
        servers=MYSQL,
    ),
    case(
        "invisible columns",
        "CREATE TABLE t (a INT, b INT INVISIBLE, c INT NOT NULL DEFAULT 1 INVISIBLE)",
    ),
    case(
        "visible columns",
        "CREATE TABLE t (a INT, b INT VISIBLE, c INT INVISIBLE VISIBLE)",
        servers=MYSQL,
    ),
    case(
        "defaults, comments, auto_increment",
        "CREATE TABLE t (a INT NOT NULL AUTO_INCREMENT, b INT DEFAULT -1 COMMENT 'x''y', "
        "c VARCHAR(3) DEFAULT _utf8mb4'x', d BIT(3) DEFAULT b'101', e DATETIME DEFAULT NOW(), "
        "f INT DEFAULT (b + 1), g DATE DEFAULT (CURRENT_DATE), h BOOL DEFAULT TRUE, "
        "i DOUBLE DEFAULT 1.5e3, j INT NULL DEFAULT NULL, k BINARY(2) DEFAULT 0x4142, "
        "KEY (a))",
    ),
    case(
        "inline keys",
        "CREATE TABLE t (a INT PRIMARY KEY, b INT UNIQUE, c INT UNIQUE KEY, "
        "d INT REFERENCES u (x), e INT CHECK (e > 0))",
        "CREATE TABLE u (x INT PRIMARY KEY)",
    ),
    case(
        "inline named check",
        "CREATE TABLE t (a INT, f INT CONSTRAINT ck CHECK (f < 5) NOT NULL, "
        "g INT CHECK (g > 1) NOT ENFORCED NOT NULL)",
        servers=MYSQL,
    ),
    case("column KEY is the primary key", "CREATE TABLE t (a INT, b INT KEY)"),
    case(
        "table keys and constraints",
        "CREATE TABLE t (a INT, b VARCHAR(20), c INT, d POINT NOT NULL, e INT, "
        "CONSTRAINT pk PRIMARY KEY USING BTREE (c, a) COMMENT 'pk', UNIQUE KEY u (b(5)), "
        "INDEX i (a DESC, b), FULLTEXT KEY ft (b), SPATIAL INDEX (d), "
        "CONSTRAINT fk FOREIGN KEY (e) REFERENCES u (x) ON DELETE CASCADE ON UPDATE SET NULL, "
        "CHECK (a > 0), CONSTRAINT c2 CHECK (c <> 1)) ENGINE=InnoDB",
        "CREATE TABLE u (x INT PRIMARY KEY)",
    ),
    case(
        "table options",
        "CREATE TABLE t (a VARCHAR(3)) ENGINE=InnoDB ROW_FORMAT=DYNAMIC COMMENT='c' "
        "AUTO_INCREMENT=5 STATS_PERSISTENT=0 CHECKSUM=1, PACK_KEYS=DEFAULT",
    ),
    case("table collation only", "CREATE TABLE t (a VARCHAR(3)) COLLATE=latin1_german1_ci"),
    case("table charset only", "CREATE TABLE t (a VARCHAR(3)) CHARACTER SET = ucs2"),
    case("table charset utf8mb4", "CREATE TABLE t (a VARCHAR(3), b TEXT) CHARSET utf8mb4"),
    case(
        "table charset and database default",
        "CREATE TABLE t (a VARCHAR(3), b ENUM('x'))",
        "ALTER DATABASE ddlt CHARACTER SET utf16 COLLATE utf16_bin",
    ),
    case(
        "mariadb table options",
        "CREATE TABLE t (a INT) ENGINE=Aria TRANSACTIONAL=1 PAGE_CHECKSUM=1 DEFAULT CHARSET=latin1",
        servers=MARIADB,
    ),
    case(
        "partitioning",
        "CREATE TABLE t (a INT NOT NULL, b DATE) PARTITION BY RANGE (a) "
        "(PARTITION p0 VALUES LESS THAN (10), PARTITION p1 VALUES LESS THAN MAXVALUE)",
    ),
    case(
        "partitioning in an executable comment",
        "CREATE TABLE t (a INT NOT NULL, b INT) /*!50100 PARTITION BY HASH (a) PARTITIONS 3 */",
    ),
    case(
        "partition by list and key",
        (
            "CREATE TABLE t (a INT, b INT) PARTITION BY LIST (a) "
            "(PARTITION p0 VALUES IN (1, 2), PARTITION p1 VALUES IN (3))",
            "CREATE TABLE u (a INT PRIMARY KEY) PARTITION BY KEY () PARTITIONS 2",
        ),
    ),
    # -- CREATE TABLE: forms ----------------------------------------------------------------
    case("if not exists of an existing table", "CREATE TABLE IF NOT EXISTS t (z INT)", T1),
    case("if not exists of a new table", "CREATE TABLE IF NOT EXISTS t (z INT, y TEXT)"),
    case(
        "create or replace",
        "CREATE OR REPLACE TABLE t (x BIGINT, y VARCHAR(3))",
        T1,
        servers=MARIADB,
    ),
    case("like", "CREATE TABLE u LIKE t", T1),
    case("like in parentheses", "CREATE TABLE u (LIKE t)", T1, servers=MYSQL),
    case(
        "like from another database", f"CREATE TABLE {DB2}.u LIKE t", T1, f"CREATE DATABASE {DB2}"
    ),
    case(
        "like a temporary table (logged in full)",
        "CREATE TABLE u LIKE tmp",
        "CREATE TEMPORARY TABLE tmp (a INT NOT NULL, b VARCHAR(5) CHARACTER SET latin1 "
        "DEFAULT 'x', c DECIMAL(4,1) DEFAULT (a + 1), d TIMESTAMP(3) NULL DEFAULT NULL, "
        "e ENUM('p','q') NOT NULL DEFAULT 'q', f INT AS (a * 2) STORED, g JSON, "
        "h DATETIME DEFAULT CURRENT_TIMESTAMP ON UPDATE CURRENT_TIMESTAMP, PRIMARY KEY (a))",
    ),
    case(
        "create select (logged with its columns)",
        "CREATE TABLE u SELECT a, b, c, 'x' AS k, a + 1 AS n, CAST(a AS CHAR(3)) AS s, "
        "NOW(3) AS ts FROM t",
        T1,
    ),
    case(
        "create select of compressed columns (COMPRESSED before CHARACTER SET)",
        "CREATE TABLE u SELECT * FROM t",
        "CREATE TABLE t (a VARCHAR(10) COMPRESSED CHARACTER SET utf8mb4, b TEXT COMPRESSED, "
        "c BLOB COMPRESSED)",
        servers=MARIADB,
    ),
    case(
        "create select of binary labels that are not UTF-8 (MySQL writes x'e9')",
        "CREATE TABLE u SELECT * FROM t",
        "CREATE TABLE t (a ENUM('é', 'x') CHARACTER SET latin1, b INT)",
        "ALTER TABLE t CONVERT TO CHARACTER SET binary",
        servers=MYSQL,
        unknown=("u",),
    ),
    case(
        "create select with columns",
        "CREATE TABLE u (z INT, b VARCHAR(20) CHARACTER SET latin1) SELECT a, b FROM t",
        T1,
    ),
    case(
        "create temporary table in row format",
        ("CREATE TEMPORARY TABLE tmp (a INT)", "DROP TEMPORARY TABLE tmp"),
    ),
    case(
        "create temporary table logged as a statement",
        (
            "SET SESSION binlog_format = 'STATEMENT'",
            "CREATE TEMPORARY TABLE t (a INT)",
            "ALTER TABLE t ADD b INT",
            "DROP TEMPORARY TABLE t",
            "SET SESSION binlog_format = 'ROW'",
        ),
        T1,
        servers=MARIADB,
        unknown=("t",),
    ),
    case(
        "system versioning",
        "CREATE TABLE u (a INT) WITH SYSTEM VERSIONING",
        servers=MARIADB,
        unknown=("u",),
    ),
    case(
        "sequence table",
        "CREATE TABLE s (next_not_cached_value bigint(21) NOT NULL, minimum_value bigint(21) "
        "NOT NULL, maximum_value bigint(21) NOT NULL, start_value bigint(21) NOT NULL, "
        "increment bigint(21) NOT NULL, cache_size bigint(21) unsigned NOT NULL, "
        "cycle_option tinyint(1) unsigned NOT NULL, cycle_count bigint(21) NOT NULL) "
        "SEQUENCE=1",
        servers=MARIADB,
    ),
    case(
        "generated invisible primary key",
        (
            "SET SESSION sql_generate_invisible_primary_key = ON",
            "CREATE TABLE u (a INT, b TEXT)",
            "SET SESSION sql_generate_invisible_primary_key = OFF",
        ),
        servers=MYSQL,
    ),
    # -- ALTER TABLE: columns -----------------------------------------------------------------
    case(
        "add columns",
        "ALTER TABLE t ADD e INT, ADD COLUMN f VARCHAR(3) FIRST, ADD g TEXT AFTER a, "
        "ADD COLUMN h INT NOT NULL DEFAULT 3 AFTER g",
        T1,
    ),
    case("add a column list", "ALTER TABLE t ADD COLUMN (e INT, f TEXT NOT NULL)", T1),
    case(
        "add if not exists",
        "ALTER TABLE t ADD COLUMN IF NOT EXISTS b INT, ADD IF NOT EXISTS e INT, "
        "ADD COLUMN IF NOT EXISTS e BIGINT",
        T1,
        servers=MARIADB,
    ),
    case(
        "drop and add the same name",
        "ALTER TABLE t DROP COLUMN b, ADD COLUMN b BIGINT",
        T1,
    ),
    case(
        "change, then add if not exists of the new name",
        "ALTER TABLE t CHANGE b e INT, ADD COLUMN IF NOT EXISTS e BIGINT",
        T1,
        servers=MARIADB,
    ),
    case(
        "drop, then add if not exists of that name",
        "ALTER TABLE t DROP c, ADD COLUMN IF NOT EXISTS c INT",
        T1,
        servers=MARIADB,
    ),
    case("drop columns", "ALTER TABLE t DROP COLUMN b, DROP d", T1),
    case(
        "drop if exists",
        "ALTER TABLE t DROP COLUMN IF EXISTS b, DROP IF EXISTS nope",
        T1,
        servers=MARIADB,
    ),
    case(
        "modify",
        "ALTER TABLE t MODIFY b VARCHAR(20) NOT NULL, MODIFY COLUMN d BIGINT UNSIGNED FIRST, "
        "MODIFY c MEDIUMTEXT AFTER a",
        T1,
    ),
    case(
        "modify if exists",
        "ALTER TABLE t MODIFY IF EXISTS b INT, MODIFY COLUMN IF EXISTS nope INT",
        T1,
        servers=MARIADB,
    ),
    case(
        "change",
        "ALTER TABLE t CHANGE b bb VARCHAR(30) CHARACTER SET latin1, "
        "CHANGE COLUMN c cc TEXT FIRST, CHANGE d d INT AFTER a",
        T1,
    ),
    case(
        "change if exists",
        "ALTER TABLE t CHANGE IF EXISTS b b2 INT, CHANGE COLUMN IF EXISTS nope x INT",
        T1,
        servers=MARIADB,
    ),
    case("change swaps names", "ALTER TABLE t CHANGE b c TEXT, CHANGE c b VARCHAR(10)", T1),
    case("rename column", "ALTER TABLE t RENAME COLUMN b TO bb, RENAME COLUMN c TO b", T1),
    case("rename columns swapped", "ALTER TABLE t RENAME COLUMN b TO c, RENAME COLUMN c TO b", T1),
    case(
        "positions refer to the new list",
        "ALTER TABLE t ADD e INT AFTER a, MODIFY a INT FIRST, MODIFY d INT AFTER e",
        T1,
    ),
    case(
        "positions in statement order",
        "ALTER TABLE t MODIFY a INT NOT NULL AFTER d, ADD e INT AFTER a, CHANGE b z INT FIRST",
        T1,
    ),
    case(
        "alter column default and visibility",
        "ALTER TABLE t ALTER COLUMN d SET DEFAULT 5, ALTER b DROP DEFAULT",
        T1,
    ),
    case(
        "alter column visibility",
        "ALTER TABLE t ALTER COLUMN d SET INVISIBLE, ALTER COLUMN b SET VISIBLE",
        T1,
        servers=MYSQL,
    ),
    case(
        "column names that are keywords",
        (
            "CREATE TABLE k (date DATE, text TEXT, comment VARCHAR(10), status INT, "
            "year YEAR, timestamp TIMESTAMP NULL, position INT, data BLOB, `key` INT, "
            "`select` INT, action INT, type INT, name INT, value INT)",
            "ALTER TABLE k DROP date, MODIFY text MEDIUMTEXT AFTER status, "
            "CHANGE comment note TEXT FIRST, RENAME COLUMN year TO yr, ADD `index` INT "
            "AFTER `key`",
        ),
    ),
    case(
        "quoted names",
        (
            "CREATE TABLE `we``ird t` (`a b` INT, `ü` TEXT, `x.y` INT, `1st` INT, "
            "PRIMARY KEY (`a b`))",
            "ALTER TABLE `we``ird t` CHANGE `x.y` `y``z` BIGINT FIRST",
        ),
    ),
    case(
        "qualified names",
        (
            f"CREATE TABLE {DB2}.t (a INT)",
            f"ALTER TABLE `{DB2}`.`t` ADD b INT",
            f"RENAME TABLE {DB2}.t TO {DB}.moved",
        ),
        f"CREATE DATABASE {DB2}",
    ),
    case(
        "column name case",
        "ALTER TABLE t MODIFY B VARCHAR(5), CHANGE C Cc TEXT, ADD e INT AFTER D",
        T1,
    ),
    # -- ALTER TABLE: keys ----------------------------------------------------------------------
    case(
        "add primary key", "ALTER TABLE t ADD PRIMARY KEY (d, b)", "CREATE TABLE t (b INT, d INT)"
    ),
    case("drop primary key", "ALTER TABLE t DROP PRIMARY KEY", T1),
    case(
        "replace the primary key",
        "ALTER TABLE t DROP PRIMARY KEY, ADD CONSTRAINT PRIMARY KEY (d)",
        T1,
    ),
    case("alter drop index primary", "ALTER TABLE t DROP INDEX `PRIMARY`", T1),
    case("modify a key column", "ALTER TABLE t MODIFY a BIGINT", T1),
    case(
        "modify a key column to null",
        "ALTER TABLE t MODIFY a BIGINT NULL",
        T1,
        servers=MARIADB,
    ),
    case("rename a key column", "ALTER TABLE t CHANGE a z INT NOT NULL", T1),
    case(
        "drop a key column",
        "ALTER TABLE t DROP a",
        "CREATE TABLE t (a INT NOT NULL, b INT NOT NULL, c INT, PRIMARY KEY (b, a))",
        servers=MYSQL,
    ),
    case("drop the only key column", "ALTER TABLE t DROP a", T1),
    case(
        "add a column with a key",
        "ALTER TABLE t ADD id INT AUTO_INCREMENT PRIMARY KEY FIRST",
        "CREATE TABLE t (b INT)",
    ),
    case(
        "indexes and constraints",
        "ALTER TABLE t ADD INDEX i (b), ADD UNIQUE KEY u (d), ADD FULLTEXT INDEX (c), "
        "ADD CONSTRAINT ck CHECK (d > 0), ADD CONSTRAINT fk FOREIGN KEY (d) REFERENCES u (x)",
        T1,
        "CREATE TABLE u (x INT PRIMARY KEY)",
    ),
    case(
        "drop indexes and constraints",
        "ALTER TABLE t DROP INDEX i, DROP KEY u, DROP FOREIGN KEY fk, DROP CONSTRAINT ck",
        "CREATE TABLE u (x INT PRIMARY KEY)",
        "CREATE TABLE t (a INT, b INT, INDEX i (a), UNIQUE KEY u (b), CONSTRAINT ck CHECK (a>0), "
        "CONSTRAINT fk FOREIGN KEY (b) REFERENCES u (x))",
    ),
    case(
        "drop constraint and rename index",
        (
            "ALTER TABLE t DROP CONSTRAINT ck, RENAME INDEX i TO j",
            "ALTER TABLE t ALTER INDEX j INVISIBLE",
        ),
        "CREATE TABLE t (a INT, INDEX i (a), CONSTRAINT ck CHECK (a > 0))",
        servers=MYSQL,
    ),
    case(
        "mariadb index options",
        (
            "ALTER TABLE t DROP CONSTRAINT ck, RENAME INDEX i TO j",
            "ALTER TABLE t ALTER INDEX j IGNORED",
        ),
        "CREATE TABLE t (a INT, INDEX i (a), CONSTRAINT ck CHECK (a > 0))",
        servers=("mariadb-11.8",),
    ),
    case(
        "unique not null is no primary key",
        "ALTER TABLE t ADD UNIQUE (a)",
        "CREATE TABLE t (a INT NOT NULL, b INT)",
    ),
    # -- ALTER TABLE: table ---------------------------------------------------------------------
    case("rename to", "ALTER TABLE t RENAME TO u", T1),
    case(
        "rename as another database",
        f"ALTER TABLE t RENAME AS {DB2}.u",
        T1,
        f"CREATE DATABASE {DB2}",
    ),
    case("rename and change", "ALTER TABLE t RENAME u, ADD z INT FIRST", T1),
    case(
        "engine, force, algorithm, lock",
        (
            "ALTER TABLE t ENGINE=InnoDB",
            "ALTER TABLE t FORCE",
            "ALTER TABLE t ADD e INT, ALGORITHM=INPLACE, LOCK=NONE",
            "ALTER TABLE t AUTO_INCREMENT=5, COMMENT='c' ROW_FORMAT=COMPACT",
            "ALTER TABLE t ORDER BY d",
        ),
        T1,
    ),
    case(
        "mariadb alter forms",
        (
            "ALTER ONLINE TABLE t ADD e INT",
            "ALTER IGNORE TABLE t ADD f INT",
            "ALTER TABLE IF EXISTS t ADD g INT",
            "ALTER TABLE IF EXISTS nope ADD g INT",
            "ALTER TABLE t NOWAIT ADD h INT",
        ),
        T1,
        servers=MARIADB,
    ),
    case(
        "disable keys",
        ("ALTER TABLE t DISABLE KEYS", "ALTER TABLE t ENABLE KEYS"),
        "CREATE TABLE t (a INT, KEY (a)) ENGINE=MyISAM",
    ),
    case(
        "default character set",
        "ALTER TABLE t DEFAULT CHARACTER SET latin1 COLLATE latin1_bin",
        T1,
    ),
    case("character set only", "ALTER TABLE t CHARACTER SET = utf8mb4", T_LATIN1),
    case("collate only", "ALTER TABLE t COLLATE latin1_general_ci", T_LATIN1),
    case(
        "new default and a new column",
        "ALTER TABLE t ADD z VARCHAR(3), DEFAULT CHARSET=ucs2, MODIFY b VARCHAR(5)",
        T_LATIN1,
    ),
    case("convert latin1 to utf8mb4", "ALTER TABLE t CONVERT TO CHARACTER SET utf8mb4", T_LATIN1),
    case(
        "convert with collation",
        "ALTER TABLE t CONVERT TO CHARSET utf8mb4 COLLATE utf8mb4_unicode_ci",
        T_LATIN1,
    ),
    case(
        "convert utf8mb4 to latin1",
        "ALTER TABLE t CONVERT TO CHARACTER SET latin1",
        T_LATIN1.replace("latin1", "utf8mb4"),
    ),
    case("convert to ucs2", "ALTER TABLE t CONVERT TO CHARACTER SET ucs2", T_NO_ENUM),
    case("convert to utf16", "ALTER TABLE t CONVERT TO CHARACTER SET utf16", T_NO_ENUM),
    case(
        "convert enum to ucs2 (the servers keep the labels' bytes)",
        "ALTER TABLE t CONVERT TO CHARACTER SET ucs2",
        T_LATIN1,
        servers=("mariadb-10.11", "mysql-9.7"),
        unknown=("t",),
    ),
    case(
        "convert non-ascii enum (the servers keep the labels' bytes)",
        "ALTER TABLE t CONVERT TO CHARACTER SET utf8mb4",
        "CREATE TABLE t (a ENUM('é', 'x')) DEFAULT CHARSET=latin1",
        servers=MARIADB,
        unknown=("t",),
    ),
    case(
        "convert utf8mb3 enum to utf8mb4",
        "ALTER TABLE t CONVERT TO CHARACTER SET utf8mb4",
        "CREATE TABLE t (a ENUM('é', '日本'), b TEXT) DEFAULT CHARSET=utf8mb3",
    ),
    case(
        "convert to binary",
        "ALTER TABLE t CONVERT TO CHARACTER SET binary",
        T_NO_ENUM,
        unknown=("t",),
    ),
    case(
        "convert keeps binary columns",
        "ALTER TABLE t CONVERT TO CHARACTER SET utf8mb4",
        "CREATE TABLE t (a VARBINARY(3), b BLOB, c ENUM('x') CHARACTER SET binary, "
        "d VARCHAR(3) CHARACTER SET latin1, e CHAR(2) COLLATE latin1_bin)",
    ),
    case(
        "convert with a new column",
        "ALTER TABLE t ADD z VARCHAR(3) CHARACTER SET latin1, CONVERT TO CHARACTER SET utf8mb4",
        T_LATIN1,
    ),
    case(
        "convert with new text columns",
        "ALTER TABLE t ADD x TEXT CHARSET latin1, ADD y TEXT(100) CHARACTER SET latin1, "
        "ADD z TINYTEXT, ADD w VARCHAR(5) CHARSET ucs2, CONVERT TO CHARACTER SET utf8mb4",
        T_LATIN1,
    ),
    case(
        "convert with a modified text column",
        "ALTER TABLE t MODIFY e TINYTEXT, MODIFY c TEXT, CONVERT TO CHARACTER SET utf8mb4",
        T_LATIN1,
        servers=MARIADB,
    ),
    case(
        "convert with a modified text column (MySQL sizes it by the old column)",
        "ALTER TABLE t MODIFY e TINYTEXT, CONVERT TO CHARACTER SET utf8mb4",
        T_LATIN1,
        servers=MYSQL,
        unknown=("t",),
    ),
    case(
        "convert with a binary attribute",
        "ALTER TABLE t CONVERT TO CHARACTER SET ucs2, MODIFY b VARCHAR(10) BINARY NOT NULL",
        T_NO_ENUM,
    ),
    case(
        "default character set and convert",
        "ALTER TABLE t DEFAULT CHARACTER SET utf16, ADD z TEXT, CONVERT TO CHARACTER SET ucs2",
        T_NO_ENUM,
        servers=MARIADB,
    ),
    case(
        "convert json",
        "ALTER TABLE t CONVERT TO CHARACTER SET latin1",
        "CREATE TABLE t (a JSON, b TEXT)",
    ),
    # -- partitions ------------------------------------------------------------------------------
    case(
        "partition operations",
        (
            "ALTER TABLE t ADD PARTITION (PARTITION p2 VALUES LESS THAN (30))",
            "ALTER TABLE t DROP PARTITION p0",
            "ALTER TABLE t TRUNCATE PARTITION p1",
            "ALTER TABLE t REORGANIZE PARTITION p2 INTO (PARTITION p3 VALUES LESS THAN (40))",
            "ALTER TABLE t ANALYZE PARTITION p1",
            "ALTER TABLE t PARTITION BY HASH (a) PARTITIONS 2",
            "ALTER TABLE t COALESCE PARTITION 1",
            "ALTER TABLE t REMOVE PARTITIONING",
            "ALTER TABLE t ADD c INT PARTITION BY KEY (a) PARTITIONS 2",
        ),
        "CREATE TABLE t (a INT NOT NULL, b INT) PARTITION BY RANGE (a) "
        "(PARTITION p0 VALUES LESS THAN (10), PARTITION p1 VALUES LESS THAN (20))",
    ),
    case(
        "exchange partition",
        "ALTER TABLE t EXCHANGE PARTITION p0 WITH TABLE u",
        "CREATE TABLE t (a INT NOT NULL, b INT) PARTITION BY RANGE (a) "
        "(PARTITION p0 VALUES LESS THAN (10), PARTITION p1 VALUES LESS THAN (20))",
        "CREATE TABLE u (a INT NOT NULL, b INT)",
    ),
    # -- RENAME, DROP, TRUNCATE -------------------------------------------------------------------
    case("rename table", "RENAME TABLE t TO u", T1),
    case(
        "rename tables in order",
        "RENAME TABLE t TO t_old, u TO t, t_old TO u",
        T1,
        "CREATE TABLE u (x TEXT)",
    ),
    case(
        "gh-ost swap",
        "RENAME /* gh-ost */ TABLE `ddlt`.`t` TO `ddlt`.`_t_del`, `ddlt`.`_t_gho` TO `ddlt`.`t`",
        T1,
        "CREATE TABLE _t_gho (a INT NOT NULL, b VARCHAR(10), c TEXT, d INT, e INT, "
        "PRIMARY KEY (a))",
    ),
    case(
        "rename across databases",
        (f"RENAME TABLE t TO {DB2}.t", f"RENAME TABLES {DB2}.t TO {DB2}.u, u TO {DB2}.v"),
        T1,
        "CREATE TABLE u (x INT)",
        f"CREATE DATABASE {DB2}",
    ),
    case(
        "rename if exists",
        "RENAME TABLE IF EXISTS nope TO x, t TO u",
        T1,
        servers=MARIADB,
    ),
    case("drop table", "DROP TABLE t", T1),
    case(
        "drop tables if exists",
        "DROP TABLE IF EXISTS t, nope, `ddlt`.u",
        T1,
        "CREATE TABLE u (x INT)",
    ),
    case(
        "drop with a temporary table",
        "DROP TABLE t, tmp",
        T1,
        "CREATE TEMPORARY TABLE tmp (a INT)",
    ),
    case(
        "drop temporary", "DROP TEMPORARY TABLE IF EXISTS tmp", "CREATE TEMPORARY TABLE tmp (a INT)"
    ),
    case("truncate", ("TRUNCATE TABLE t", "TRUNCATE t"), T1),
    # -- indexes ----------------------------------------------------------------------------------
    case(
        "create and drop index",
        (
            "CREATE INDEX i ON t (b)",
            "CREATE UNIQUE INDEX j USING BTREE ON t (d DESC, b(3))",
            "DROP INDEX i ON t",
            "DROP INDEX `j` ON ddlt.t",
        ),
        T1,
    ),
    case(
        "index algorithm",
        (
            "CREATE INDEX i ON t (b) ALGORITHM=INPLACE",
            "DROP INDEX i ON t ALGORITHM=INPLACE LOCK=NONE",
        ),
        T1,
        servers=MYSQL,
    ),
    case("drop index primary", "DROP INDEX `PRIMARY` ON t", T1),
    # -- databases --------------------------------------------------------------------------------
    case(
        "create database",
        (
            f"CREATE DATABASE {DB2}",
            "CREATE SCHEMA IF NOT EXISTS ddlt3 DEFAULT CHARACTER SET latin1",
            f"CREATE TABLE {DB2}.t (a VARCHAR(3))",
            "CREATE TABLE ddlt3.t (a VARCHAR(3))",
        ),
    ),
    case(
        "create database with collation",
        (
            f"CREATE DATABASE {DB2} COLLATE utf8mb4_bin",
            f"CREATE TABLE {DB2}.t (a VARCHAR(3), b ENUM('x') CHARACTER SET utf8mb4)",
        ),
    ),
    case(
        "alter database",
        (
            f"ALTER DATABASE {DB2} CHARACTER SET utf8mb3",
            f"CREATE TABLE {DB2}.u (a TEXT)",
            "ALTER SCHEMA COLLATE latin1_bin",
            "CREATE TABLE u (a TEXT)",
        ),
        f"CREATE DATABASE {DB2}",
    ),
    case(
        "drop database",
        f"DROP DATABASE {DB2}",
        f"CREATE DATABASE {DB2}",
        f"CREATE TABLE {DB2}.t (a INT)",
    ),
    case(
        "create or replace database",
        (f"CREATE OR REPLACE DATABASE {DB2} CHARACTER SET latin1",),
        f"CREATE DATABASE {DB2}",
        f"CREATE TABLE {DB2}.t (a INT)",
        servers=MARIADB,
    ),
    # -- sequences ---------------------------------------------------------------------------------
    case(
        "sequences",
        (
            "CREATE SEQUENCE s",
            "CREATE SEQUENCE IF NOT EXISTS s2 START WITH -10 INCREMENT BY -1 MINVALUE -100 "
            "MAXVALUE -1 NOCACHE CYCLE ENGINE=InnoDB",
            "CREATE OR REPLACE SEQUENCE s3 MAXVALUE 5",
            "ALTER SEQUENCE s RESTART WITH 5",
            "RENAME TABLE s2 TO s4",
            "DROP SEQUENCE s3",
        ),
        servers=MARIADB,
    ),
    case(
        "typed sequences",
        (
            "CREATE SEQUENCE s AS INT UNSIGNED",
            "CREATE SEQUENCE s2 AS TINYINT",
            "ALTER SEQUENCE s AS BIGINT",
            "ALTER SEQUENCE s2 AS SMALLINT UNSIGNED",
        ),
        servers=("mariadb-11.8",),
    ),
    # -- executable comments --------------------------------------------------------------------
    case(
        "executable comments by flavour",
        "CREATE TABLE u (a INT /*!80023 INVISIBLE */, b TEXT /*M!100301 COMPRESSED*/, "
        "c INT /*!50700 NOT NULL */, d INT /*!110800 UNSIGNED */)",
    ),
    case(
        "executable comments around a statement",
        "/*!40101 CREATE TABLE u (a INT) */",
    ),
    # -- SQL modes and settings ------------------------------------------------------------------
    case(
        "ansi quotes",
        (
            "SET SESSION sql_mode = 'ANSI_QUOTES'",
            'CREATE TABLE "u" ("a b" INT, c ENUM(\'x\'))',
            "SET SESSION sql_mode = DEFAULT",
        ),
    ),
    case(
        "real as float",
        (
            "SET SESSION sql_mode = 'REAL_AS_FLOAT'",
            "CREATE TABLE u (a REAL, b DOUBLE)",
            "SET SESSION sql_mode = DEFAULT",
        ),
    ),
    case(
        "no backslash escapes",
        (
            "SET SESSION sql_mode = 'NO_BACKSLASH_ESCAPES'",
            "CREATE TABLE u (a ENUM('a\\', 'b'))",
            "SET SESSION sql_mode = DEFAULT",
        ),
    ),
    case(
        "oracle mode",
        (
            "SET SESSION sql_mode = 'ORACLE'",
            "CREATE TABLE u (a DATE, b VARCHAR2(3))",
            "SET SESSION sql_mode = DEFAULT",
        ),
        servers=MARIADB,
        unknown=("u",),
    ),
    case(
        "timestamps without explicit defaults",
        (
            "SET SESSION explicit_defaults_for_timestamp = OFF",
            "CREATE TABLE u (a INT, b TIMESTAMP, c TIMESTAMP NULL, "
            "d TIMESTAMP NOT NULL DEFAULT '2000-01-01 00:00:00')",
            "SET SESSION explicit_defaults_for_timestamp = ON",
        ),
        explicit_ts=False,
    ),
]


def _params() -> list[object]:
    out: list[object] = []
    for c in CASES:
        for name in c.servers:
            out.append(pytest.param(name, c, id=f"{name}-{c.name.replace(' ', '_')}"))
    return out


def _server(factory: PrimaryFactory, name: str) -> DatabaseServer:
    return factory(SERVERS[name])


def _unknown_key(name: str) -> tuple[str, str]:
    return (name.split(".", 1)[0], name.split(".", 1)[1]) if "." in name else (DB, name)


@pytest.mark.parametrize(("server_name", "case"), _params())
def test_statement(mariadb_primary_factory: PrimaryFactory, server_name: str, case: Case) -> None:
    srv = _server(mariadb_primary_factory, server_name)
    conn = connect(srv)
    try:
        execute(conn, [f"DROP DATABASE IF EXISTS {db}" for db in DBS])
        execute(conn, [f"CREATE DATABASE {DB}", f"USE {DB}", *case.setup])
        before = capture(srv, DBS)
        start = srv.binlog_position()
        execute(conn, case.statements)
        logged = logged_events(srv, start)
        after = capture(srv, DBS)
    finally:
        conn.close()
    replay = Replay.start(srv, before)
    replay.explicit_defaults_for_timestamp = case.explicit_defaults_for_timestamp
    replay.apply_all(logged)
    shown = "\n".join(f"  {q!r}\n    -> {e!r}" for q, e in replay.effects)
    assert set(replay.unknown) == {_unknown_key(n) for n in case.unknown}, (
        f"unknown: {replay.unknown}\nlogged:\n{shown}"
    )
    differences = replay.differences(after, DBS)
    assert not differences, "\n".join(differences) + f"\nlogged:\n{shown}"
