"""The nodes of the DDL tree that :class:`~.grammar.DdlParser` makes. No I/O.

sqlglot expressions that keep exactly what decides the columns of a table
(column types and attributes, the primary key, table options, every statement
that defines tables, sequences or databases) and mark the rest as opaque
(:class:`Opaque`: index definitions, CHECK and parenthesized DEFAULT
expressions, partitioning); :class:`DmlTargets` holds the target tables of a
row statement.
"""

from __future__ import annotations

from typing import ClassVar, Final

from sqlglot import exp

# -- nodes -------------------------------------------------------------------------------------


class ColumnType(exp.Expression):
    """A column's data type as written.

    Args: ``this``: the type's words, upper case, one space apart (``"NATIONAL
    VARCHAR"``, ``"LONG VARBINARY"``, ``"DOUBLE PRECISION"``); ``expressions``:
    its parameters (number or string literals); ``unsigned``, ``zerofill``,
    ``binary`` (the BINARY attribute of a character type); ``charset``: the
    character set written with it (``CHARACTER SET x``, ``ASCII`` as latin1,
    ``UNICODE`` as ucs2, ``BYTE`` as binary), lower case; ``compressed``: MariaDB's
    COMPRESSED written among those attributes (as SHOW CREATE TABLE writes it).
    """

    arg_types: ClassVar[dict[str, bool]] = {
        "this": True,
        "expressions": False,
        "unsigned": False,
        "zerofill": False,
        "binary": False,
        "charset": False,
        "compressed": False,
    }


class ColumnAttr(exp.Expression):
    """A column attribute: ``this`` its kind (see :data:`ATTRIBUTE_KINDS`), ``expression``
    its value where it has one (a collation name, a generated column's storage)."""

    arg_types: ClassVar[dict[str, bool]] = {"this": True, "expression": False}


#: The kinds of :class:`ColumnAttr`.
ATTRIBUTE_KINDS: Final = frozenset(
    {
        "NULL",
        "NOT NULL",
        "DEFAULT",
        "ON UPDATE",
        "AUTO_INCREMENT",
        "PRIMARY KEY",
        "UNIQUE",
        "COMMENT",
        "COLLATE",  # expression: the collation name (lower case)
        "GENERATED",  # expression: VIRTUAL, STORED or PERSISTENT
        "INVISIBLE",
        "VISIBLE",
        "COMPRESSED",
        "SERIAL DEFAULT VALUE",
        "CHECK",
        "REFERENCES",
        "OPTION",  # COLUMN_FORMAT, STORAGE, SRID, ENGINE_ATTRIBUTE, ...: no effect on the type
        "SYSTEM VERSIONING",  # expression: WITH or WITHOUT
    }
)


class Opaque(exp.Expression):
    """A clause that changes no column: ``this`` says what it is (``"INDEX"``,
    ``"FOREIGN KEY"``, ``"PARTITION"``, ``"ALGORITHM"``...), ``expression`` its text."""

    arg_types: ClassVar[dict[str, bool]] = {"this": True, "expression": False}


class PrimaryKeyDef(exp.Expression):
    """``PRIMARY KEY (a, b(10) DESC, ...)``: ``expressions`` the key's column names
    (identifiers) in key order; ``functional``: a part is an expression."""

    arg_types: ClassVar[dict[str, bool]] = {"expressions": True, "functional": False}


class TableOption(exp.Expression):
    """A table option: ``this`` its name (upper case: ``"CHARACTER SET"``, ``"COLLATE"``,
    ``"ENGINE"``, ``"SEQUENCE"``, ``"WITH SYSTEM VERSIONING"``...), ``expression`` its
    value (a name lower case for CHARACTER SET and COLLATE, ``"default"`` for DEFAULT)."""

    arg_types: ClassVar[dict[str, bool]] = {"this": True, "expression": False}


class CreateTable(exp.Expression):
    """CREATE [OR REPLACE] [TEMPORARY] TABLE [IF NOT EXISTS] ``this``: ``expressions``
    its elements (``exp.ColumnDef`` with a :class:`ColumnType`, :class:`PrimaryKeyDef`,
    :class:`Opaque`), ``like`` the table it copies, ``options`` its
    :class:`TableOption` list, ``partition`` its partitioning (opaque), ``query``
    true when a query fills it (CREATE ... SELECT)."""

    arg_types: ClassVar[dict[str, bool]] = {
        "this": True,
        "expressions": False,
        "like": False,
        "options": False,
        "partition": False,
        "query": False,
        "exists": False,
        "replace": False,
        "temporary": False,
    }


class AlterTable(exp.Expression):
    """ALTER [ONLINE] [IGNORE] TABLE [IF EXISTS] ``this`` ``actions``.

    Actions: ``exp.ColumnDef`` (ADD, ``exists``: IF NOT EXISTS, ``position``),
    :class:`ChangeColumn`, :class:`DropColumn`, ``exp.RenameColumn``,
    ``exp.AlterColumn``, ``exp.AlterRename``,
    ``exp.DropPrimaryKey``, :class:`PrimaryKeyDef` (ADD PRIMARY KEY),
    :class:`ConvertCharset`, :class:`TableOption`, :class:`Opaque` (DROP INDEX is
    an Opaque ``"DROP INDEX"`` whose expression is the index name).
    """

    arg_types: ClassVar[dict[str, bool]] = {"this": True, "actions": False, "exists": False}


class ChangeColumn(exp.Expression):
    """MODIFY/CHANGE [COLUMN] [IF EXISTS]: ``this`` the new definition (an
    ``exp.ColumnDef``), ``rename_from`` the old name of CHANGE."""

    arg_types: ClassVar[dict[str, bool]] = {"this": True, "rename_from": False, "exists": False}


class DropColumn(exp.Expression):
    """DROP [COLUMN] [IF EXISTS] ``this``."""

    arg_types: ClassVar[dict[str, bool]] = {"this": True, "exists": False}


class ConvertCharset(exp.Expression):
    """CONVERT TO CHARACTER SET ``this`` [COLLATE ``expression``] (lower case;
    ``this`` is ``"default"`` for CHARACTER SET DEFAULT)."""

    arg_types: ClassVar[dict[str, bool]] = {"this": True, "expression": False}


class RenameTables(exp.Expression):
    """RENAME TABLE a TO b, c TO d: ``expressions`` (old, new) ``exp.Tuple`` pairs of tables."""

    arg_types: ClassVar[dict[str, bool]] = {"expressions": True, "exists": False}


class DropTables(exp.Expression):
    """DROP [TEMPORARY] TABLE|SEQUENCE [IF EXISTS] ``expressions``."""

    arg_types: ClassVar[dict[str, bool]] = {
        "expressions": True,
        "exists": False,
        "temporary": False,
        "sequence": False,
    }


class TruncateTable(exp.Expression):
    """TRUNCATE [TABLE] ``this``."""

    arg_types: ClassVar[dict[str, bool]] = {"this": True}


class CreateIndex(exp.Expression):
    """CREATE [UNIQUE|FULLTEXT|SPATIAL|VECTOR] INDEX ``expression`` ON ``this`` (...)."""

    arg_types: ClassVar[dict[str, bool]] = {"this": True, "expression": False}


class DropIndex(exp.Expression):
    """DROP INDEX ``expression`` ON ``this``."""

    arg_types: ClassVar[dict[str, bool]] = {"this": True, "expression": True}


class CreateSequence(exp.Expression):
    """CREATE [OR REPLACE] [TEMPORARY] SEQUENCE [IF NOT EXISTS] ``this`` [AS ``kind``]."""

    arg_types: ClassVar[dict[str, bool]] = {
        "this": True,
        "kind": False,
        "exists": False,
        "replace": False,
        "temporary": False,
    }


class AlterSequence(exp.Expression):
    """ALTER SEQUENCE [IF EXISTS] ``this`` [AS ``kind``] ..."""

    arg_types: ClassVar[dict[str, bool]] = {"this": True, "kind": False, "exists": False}


class CreateDatabase(exp.Expression):
    """CREATE [OR REPLACE] DATABASE|SCHEMA [IF NOT EXISTS] ``this`` ``options``."""

    arg_types: ClassVar[dict[str, bool]] = {
        "this": True,
        "options": False,
        "exists": False,
        "replace": False,
    }


class AlterDatabase(exp.Expression):
    """ALTER DATABASE|SCHEMA [``this``] ``options`` (``this`` absent: the current one)."""

    arg_types: ClassVar[dict[str, bool]] = {"this": False, "options": False}


class DropDatabase(exp.Expression):
    """DROP DATABASE|SCHEMA [IF EXISTS] ``this``."""

    arg_types: ClassVar[dict[str, bool]] = {"this": True, "exists": False}


class DmlTargets(exp.Expression):
    """The tables an INSERT, REPLACE, UPDATE, DELETE or LOAD statement writes:
    ``expressions`` the tables (as written: a multi-table DELETE's aliases resolved);
    ``columns_at``: the token index of the column list after an INSERT's table."""

    arg_types: ClassVar[dict[str, bool]] = {"expressions": True, "columns_at": False}
