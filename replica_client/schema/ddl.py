"""What one DDL statement of the binlog does to table definitions. No I/O.

:func:`interpret` reads a statement's text (a QueryEvent's query) with the
grammar of :mod:`.dialect` (sqlglot's MySQL dialect, extended) and applies it
to the definitions it looks up, as the server does: column types with their
aliases normalised as ``information_schema`` spells them, character sets and
collations resolved from the column's own clause, the table's default, the
database's and the server's, column order (FIRST/AFTER, the order in which
one ALTER TABLE applies its clauses), the primary key. The result is a
:class:`DdlEffect`.

The rule: what cannot be applied exactly is reported as *unknown* for the
table, with the reason, and never guessed nor applied in part. A statement
whose tables cannot even be named raises :class:`DdlError`.

Choices and limits (the tests under ``tests/schema`` check each against
MariaDB 10.11, 11.8 and MySQL 9.7):

- Names are compared as written (case-sensitive for databases and tables,
  as on a server with ``lower_case_table_names=0``; column names are
  case-insensitive). An unqualified table name is in ``ctx.default_schema``.
- ``tables`` holds the tables whose definition the statement changes (None:
  the table is gone); a statement that changes no column, key or default
  character set (ADD INDEX, ENGINE=, TRUNCATE, CREATE/DROP INDEX, partition
  operations, ALTER SEQUENCE without AS) only puts the table in ``touched``.
- CREATE TEMPORARY TABLE/SEQUENCE: the name becomes unknown. A temporary table
  is not replicated in ROW format; where the binlog has it (STATEMENT or MIXED
  format), it hides the table of the same name for one session, so what the
  later statements on that name do cannot be told apart.
  DROP TEMPORARY TABLE changes nothing (None).
- CREATE TABLE IF NOT EXISTS: no change when the table is known to exist.
  MariaDB logs the statement only when it created the table, MySQL also when
  the table existed: there an unknown table (``ctx.exists`` and ``lookup`` say
  nothing) is reported unknown.
- CREATE TABLE ... SELECT with its query (STATEMENT format; in ROW format the
  server logs the full column list instead) is reported unknown: the query's
  columns are not known here.
- System versioning (WITH SYSTEM VERSIONING, PERIOD FOR SYSTEM_TIME, ADD/DROP
  SYSTEM VERSIONING) adds hidden row start/end columns: reported unknown.
- ``CONVERT TO CHARACTER SET DEFAULT`` and ``CHARACTER SET DEFAULT`` are
  reported unknown; so is a VARCHAR whose byte length passes 65535 (a server
  in a non-strict mode turns it into a TEXT type).
- CREATE OR REPLACE DATABASE drops the database's tables: its entry in
  ``databases`` is None (dropped), so the caller forgets its tables and its
  collation.
- SQL modes (``ctx.sql_mode``, the QueryEvent's): ANSI_QUOTES and
  NO_BACKSLASH_ESCAPES change how the text is read, REAL_AS_FLOAT makes REAL
  a FLOAT; MariaDB's ORACLE mode (other type names and meanings) is reported
  unknown. ``explicit_defaults_for_timestamp`` OFF makes a TIMESTAMP column
  without NULL NOT NULL.
- The default collation of a character set is the server's default
  (``character_set_collations`` of MariaDB 11, ``default_collation_for_utf8mb4``
  of MySQL at their default values); ``utf8`` is ``utf8mb3``.

What the servers do that the rules above follow (each seen on all three
unless a flavour is named):

- ALTER TABLE applies a CHANGE/MODIFY without position in the old column's
  place, then the ADDs and positioned changes in statement order, AFTER
  naming columns by their new names; DROP, CHANGE, RENAME COLUMN and MariaDB's
  IF [NOT] EXISTS test the old table's columns (ADD COLUMN IF NOT EXISTS also
  the names added or changed before it in the statement).
- A primary key's columns are NOT NULL (MariaDB makes them so silently) and
  stay NOT NULL when the key is dropped; MySQL drops a column from its key,
  MariaDB refuses to drop a column of a several-column key.
- CONVERT TO CHARACTER SET grows TEXT kinds to hold as many characters as
  before (latin1 TEXT -> utf8mb4 MEDIUMTEXT); the columns the same ALTER
  defines take the new character set as declared, except that MySQL sizes a
  changed TEXT column by the old column's length (reported unknown). It keeps
  the *bytes* of ENUM/SET labels and reads them in the new character set
  (latin1 'é' becomes 'Ã©' in utf8mb4; into ucs2 MariaDB gives '?', MySQL
  ''): reported unknown unless the bytes read the same.
- ENUM/SET labels lose trailing spaces (not in the binary character set); a
  character the column's character set lacks becomes '?'.
- ``BINARY`` with ``COLLATE``: MySQL takes the character set's _bin
  collation, MariaDB the COLLATE (it refuses one that is not binary).
- MariaDB JSON is LONGTEXT utf8mb4_bin (a COLLATE may change it);
  GEOMETRYCOLLECTION is ``geomcollection`` on MySQL.
- MariaDB's DEFAULT CHARACTER SET x with CONVERT TO y: the columns take y,
  the table default x (MySQL refuses the pair).
- A sequence is a table of eight NOT NULL columns; MariaDB 11.5+ types the
  first four by ``AS``.

This module reads the statement and runs it (:func:`interpret`); the rules are
in :mod:`.ddl_context` (:class:`DdlContext`, :class:`DdlEffect`,
:class:`DdlError`), :mod:`.ddl_charsets`, :mod:`.ddl_state`, :mod:`.ddl_columns`,
:mod:`.ddl_create` (CREATE TABLE, sequences, databases) and :mod:`.ddl_alter`.
"""

from __future__ import annotations

from dataclasses import replace

from sqlglot import exp
from sqlglot.errors import ParseError

from . import dialect as d
from .ddl_alter import AlterRules
from .ddl_context import (
    MODE_ANSI_QUOTES,
    MODE_NO_BACKSLASH_ESCAPES,
    DdlContext,
    DdlEffect,
    DdlError,
    TableKey,
    UnknownTable,
)
from .model import TableDef

__all__ = ["DdlContext", "DdlEffect", "DdlError", "interpret"]


class _Run(AlterRules):
    """One reading of one statement: the tables as it leaves them."""

    # -- statements ------------------------------------------------------------------

    def run(self, tree: exp.Expr) -> None:
        if isinstance(tree, d.CreateTable):
            self.create_table(tree)
        elif isinstance(tree, d.AlterTable):
            self.alter_table(tree)
        elif isinstance(tree, d.DropTables):
            for table in tree.expressions:
                key = self.key(table)
                if tree.args.get("temporary"):
                    continue  # the persistent table of the name, if any, stays
                self.set(key, None)
        elif isinstance(tree, d.RenameTables):
            for pair in tree.expressions:
                old_key, new_key = (self.key(t) for t in pair.expressions)
                if tree.args.get("exists") and self.exists(old_key) is False:
                    continue  # MariaDB's RENAME TABLE IF EXISTS skips a missing table
                state = self.current(old_key)
                self.set(old_key, None)
                if state is None:
                    state = UnknownTable(f"renamed from {old_key[0]}.{old_key[1]}, not known")
                self.set(new_key, state)
        elif isinstance(tree, (d.TruncateTable, d.CreateIndex)):
            self.touched.add(self.key(tree.this))
        elif isinstance(tree, d.DropIndex):
            key = self.key(tree.this)
            self.touched.add(key)
            if tree.expression.name.lower() == "primary":
                self.drop_primary_key(key)
        elif isinstance(tree, d.CreateSequence):
            self.create_sequence(tree)
        elif isinstance(tree, d.AlterSequence):
            self.alter_sequence(tree)
        elif isinstance(tree, (d.CreateDatabase, d.AlterDatabase, d.DropDatabase)):
            self.database(tree)
        else:  # pragma: no cover - parse_ddl returns only the kinds above
            raise DdlError(self.statement, f"no interpretation of {type(tree).__name__}")

    def drop_primary_key(self, key: TableKey) -> None:
        state = self.current(key)
        if isinstance(state, TableDef):
            self.set(key, replace(state, primary_key=()))
        else:
            self.set(
                key, UnknownTable("its primary key was dropped while its definition was unknown")
            )


def _parse(text: str, ctx: DdlContext) -> exp.Expr:
    mode = ctx.sql_mode or 0
    return d.parse_ddl(
        text,
        ansi_quotes=bool(mode & MODE_ANSI_QUOTES),
        backslash_escapes=not mode & MODE_NO_BACKSLASH_ESCAPES,
    )


def _interpret_text(statement: str, text: str, ctx: DdlContext) -> DdlEffect:
    run = _Run(ctx, statement)
    try:
        tree = _parse(text, ctx)
    except ParseError as exc:
        reason = f"the statement is not understood ({str(exc).splitlines()[0]})"
        mode = ctx.sql_mode or 0
        tables = d.salvage_tables(
            text,
            ansi_quotes=bool(mode & MODE_ANSI_QUOTES),
            backslash_escapes=not mode & MODE_NO_BACKSLASH_ESCAPES,
        )
        if tables is None:
            raise DdlError(statement, reason) from exc
        for table in tables:
            run.set(run.key(table), UnknownTable(reason))
        return run.effect()
    run.run(tree)
    return run.effect()


def interpret(statement: str, ctx: DdlContext) -> DdlEffect | None:
    """The effect of one DDL statement on table and database definitions.

    Returns None when the statement changes no table or database definition
    (it is not DDL, or DDL of views, routines, users, triggers, events; a DROP
    TEMPORARY TABLE).

    Raises:
        DdlError: table or database DDL whose tables cannot even be named.
    """
    from .statements import StatementKind, classify

    if classify(statement) is not StatementKind.TABLE_DDL:
        return None
    mode = ctx.sql_mode or 0
    try:
        readings = d.expand_executable_comments(
            statement,
            ctx.mariadb,
            ctx.version,
            backslash_escapes=not mode & MODE_NO_BACKSLASH_ESCAPES,
            ansi_quotes=bool(mode & MODE_ANSI_QUOTES),
        )
    except d.ExecutableCommentError as exc:
        raise DdlError(statement, str(exc)) from exc
    effects = [_interpret_text(statement, text, ctx) for text in readings]
    effect = effects[0] if len(effects) == 1 else _merge(statement, effects)
    if not (effect.tables or effect.unknown or effect.databases or effect.touched):
        return None
    return effect


def _merge(statement: str, effects: list[DdlEffect]) -> DdlEffect:
    """One effect of the readings of a statement whose executable comments depend on the
    server's patch level: what they agree on; the tables they disagree on are unknown."""
    first = effects[0]
    if any(e == first for e in effects[1:]) and all(e == first for e in effects):
        return first
    keys = set().union(*(set(e.tables) | set(e.unknown) for e in effects))
    tables: dict[TableKey, TableDef | None] = {}
    unknown: dict[TableKey, str] = {}
    for key in keys:
        states = [e.tables.get(key, e.unknown.get(key, "")) for e in effects]
        if all(s == states[0] for s in states) and key in first.tables:
            tables[key] = first.tables[key]
        elif key in first.unknown and all(key in e.unknown for e in effects):
            unknown[key] = first.unknown[key]
        else:
            unknown[key] = (
                "the statement's executable comments run or not by the server's patch level"
            )
    databases = dict(first.databases)
    for e in effects[1:]:
        if e.databases != first.databases:
            raise DdlError(
                statement,
                "the effect on databases depends on the server's patch level (executable comments)",
            )
    touched = frozenset().union(*(e.touched for e in effects))
    return DdlEffect(tables, unknown, databases, touched)
