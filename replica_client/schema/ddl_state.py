"""The tables one reading of a DDL statement leaves: names, states, the effect. No I/O.

:class:`RunState` is the base of the interpreter's run (:mod:`.ddl`): a table
reference's (schema, table) key, the current state of a table (what the
statement set, else what the context looks up), whether it exists, and the
:class:`~.ddl_context.DdlEffect` of what was set.
"""

from __future__ import annotations

from dataclasses import replace

from sqlglot import exp

from .ddl_charsets import Charsets
from .ddl_context import (
    MODE_ORACLE,
    MODE_REAL_AS_FLOAT,
    DdlContext,
    DdlEffect,
    DdlError,
    DdlTableState,
    NotExactError,
    TableKey,
    UnknownTable,
)
from .model import TableDef

# -- the statement's run -------------------------------------------------------------------


class RunState:
    """One reading of one statement: its context and the states of the tables it set."""

    def __init__(self, ctx: DdlContext, statement: str) -> None:
        self.ctx = ctx
        self.statement = statement
        self.cs = Charsets(ctx.mariadb, ctx.version)
        self.result: dict[TableKey, DdlTableState] = {}
        self.databases: dict[str, str | None] = {}
        self.touched: set[TableKey] = set()
        mode = ctx.sql_mode or 0
        self.real_as_float = bool(mode & MODE_REAL_AS_FLOAT)
        self.oracle = ctx.mariadb and bool(mode & MODE_ORACLE)

    # -- names and states ------------------------------------------------------------

    def key(self, table: exp.Expr) -> TableKey:
        assert isinstance(table, exp.Table)
        name = table.name
        db = table.args.get("db")
        schema = db.name if isinstance(db, exp.Identifier) else self.ctx.default_schema
        if not schema:
            raise DdlError(self.statement, f"no database for table {name!r}")
        return (schema, name)

    def current(self, key: TableKey) -> DdlTableState:
        if key in self.result:
            return self.result[key]
        return self.ctx.lookup(*key)

    def exists(self, key: TableKey) -> bool | None:
        if key in self.result:
            state = self.result[key]
            return None if isinstance(state, UnknownTable) else state is not None
        if self.ctx.exists is not None:
            known = self.ctx.exists(*key)
            if known is not None:
                return known
        return True if self.ctx.lookup(*key) is not None else None

    def set(self, key: TableKey, state: DdlTableState) -> None:
        self.touched.add(key)
        if isinstance(state, TableDef) and (state.schema, state.name) != key:
            state = replace(state, schema=key[0], name=key[1])
        self.result[key] = state

    def effect(self) -> DdlEffect:
        tables = {k: v for k, v in self.result.items() if not isinstance(v, UnknownTable)}
        unknown = {k: v.reason for k, v in self.result.items() if isinstance(v, UnknownTable)}
        return DdlEffect(tables, unknown, dict(self.databases), frozenset(self.touched))

    def database_default(self, schema: str) -> tuple[str, str] | None:
        collation = self.ctx.database_collation(schema)
        if collation is None:
            return None
        try:
            return self.cs.charset_of(collation), self.cs.collation_name(collation)
        except NotExactError:
            return None
