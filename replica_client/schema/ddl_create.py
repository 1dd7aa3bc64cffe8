"""What CREATE TABLE, the sequence statements and the database statements do. No I/O.

:class:`CreateRules`: a new table from its elements and options (LIKE, IF NOT
EXISTS, TEMPORARY, CREATE ... SELECT), a table definition from its columns and
primary key, the table's default character set; MariaDB's sequence tables
(CREATE/ALTER SEQUENCE); the default collation of a database after
CREATE/ALTER/DROP DATABASE.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import replace

from sqlglot import exp

from . import grammar_nodes as d
from .ddl_columns import INTEGER_KINDS, ColumnRules
from .ddl_context import DdlError, NotExactError, TableKey, UnknownTable
from .model import ColumnDef, TableDef


class CreateRules(ColumnRules):
    """The rules of CREATE TABLE, sequences and databases."""

    # -- CREATE TABLE ------------------------------------------------------------------

    def create_table(self, node: d.CreateTable) -> None:
        key = self.key(node.this)
        self.touched.add(key)
        if node.args.get("temporary"):
            self.set(
                key,
                UnknownTable(
                    "a temporary table of this name was created: in the session that has it, "
                    "the statements on the name are about that table"
                ),
            )
            return
        if node.args.get("exists") and not node.args.get("replace"):
            exists = self.exists(key)
            if exists:
                return
            if exists is None and not self.ctx.mariadb:
                self.set(
                    key,
                    UnknownTable(
                        "CREATE TABLE IF NOT EXISTS of a table whose existence is not known "
                        "(MySQL logs it also when the table existed)"
                    ),
                )
                return
        like = node.args.get("like")
        if like is not None:
            source = self.current(self.key(like))
            if source is None:
                source = UnknownTable(f"created LIKE {like.sql()}, whose definition is not known")
            self.set(key, source)
            return
        try:
            self.set(key, self.new_table(key, node))
        except NotExactError as exc:
            self.set(key, UnknownTable(str(exc)))

    def new_table(self, key: TableKey, node: d.CreateTable) -> TableDef:
        if node.args.get("query"):
            raise NotExactError("CREATE TABLE ... SELECT: the query's columns are not known")
        options = node.args.get("options") or []
        base = self.database_default(key[0])
        table_cs = self.table_charset(options, base)
        columns: list[ColumnDef] = []
        pk: list[str] = []
        for element in node.expressions:
            if isinstance(element, exp.ColumnDef):
                column, inline_pk = self.column(element, table_cs)
                columns.append(column)
                if inline_pk:
                    if pk:
                        raise NotExactError("two primary keys")
                    pk = [column.name]
            elif isinstance(element, d.PrimaryKeyDef):
                if pk:
                    raise NotExactError("two primary keys")
                pk = self.key_columns(element)
            elif not isinstance(element, d.Opaque):
                raise NotExactError(f"table element {type(element).__name__}")
        return self.table(key, columns, pk, table_cs)

    def table(
        self,
        key: TableKey,
        columns: list[ColumnDef],
        pk: list[str],
        charset: tuple[str, str] | None,
    ) -> TableDef:
        names = {c.name.lower(): i for i, c in enumerate(columns)}
        if len(names) != len(columns):
            raise NotExactError("a column name twice")
        key_names = []
        for name in pk:
            i = names.get(name.lower())
            if i is None:
                raise NotExactError(f"primary key column {name!r} is not in the table")
            columns[i] = replace(columns[i], nullable=False)
            key_names.append(columns[i].name)
        return TableDef(
            schema=key[0],
            name=key[1],
            columns=tuple(columns),
            primary_key=tuple(key_names),
            charset=charset[0] if charset else None,
            collation=charset[1] if charset else None,
        )

    def key_columns(self, element: d.PrimaryKeyDef) -> list[str]:
        if element.args.get("functional"):
            raise NotExactError("a primary key with an expression part")
        return [e.name for e in element.expressions]

    def table_charset(
        self, options: Iterable[exp.Expr], base: tuple[str, str] | None
    ) -> tuple[str, str] | None:
        """The table's default (charset, collation): its options over ``base``."""
        charset: str | None = None
        collation: str | None = None
        for option in options:
            if not isinstance(option, d.TableOption):
                raise NotExactError(f"table option {type(option).__name__}")
            name = option.this
            if name == "CHARACTER SET":
                charset = option.expression.name
            elif name == "COLLATE":
                collation = option.expression.name
            elif name == "WITH SYSTEM VERSIONING":
                raise NotExactError("system versioning adds hidden row start and end columns")
            # every other option (ENGINE, ROW_FORMAT, SEQUENCE=1 with its columns written,
            # MariaDB's engine-defined ones) leaves the columns as written
        resolved = self.cs.resolve(charset, collation)
        return resolved if resolved is not None else base

    # -- sequences ----------------------------------------------------------------------

    def create_sequence(self, node: d.CreateSequence) -> None:
        key = self.key(node.this)
        self.touched.add(key)
        if node.args.get("temporary"):
            self.set(key, UnknownTable("a temporary sequence of this name was created"))
            return
        if node.args.get("exists") and not node.args.get("replace"):
            exists = self.exists(key)
            if exists:
                return
        try:
            self.set(key, self.sequence(key, node.args.get("kind"), self.database_default(key[0])))
        except NotExactError as exc:
            self.set(key, UnknownTable(str(exc)))

    def alter_sequence(self, node: d.AlterSequence) -> None:
        key = self.key(node.this)
        self.touched.add(key)
        kind = node.args.get("kind")
        if kind is None:
            return
        old = self.current(key)
        if not isinstance(old, TableDef):
            self.set(key, UnknownTable("sequence altered while its definition was not known"))
            return
        charset = (old.charset, old.collation) if old.charset and old.collation else None
        try:
            self.set(key, self.sequence(key, kind, charset))
        except NotExactError as exc:
            self.set(key, UnknownTable(str(exc)))

    def sequence(
        self, key: TableKey, kind: exp.Expr | None, charset: tuple[str, str] | None
    ) -> TableDef:
        """MariaDB's sequence table: its value columns of the sequence's type (BIGINT by
        default), then increment, cache_size, cycle_option, cycle_count."""
        value = ColumnDef("next_not_cached_value", "bigint", nullable=False)
        if kind is not None:
            assert isinstance(kind, d.ColumnType)
            typed, _ = self.column(exp.ColumnDef(this=exp.to_identifier("v"), kind=kind), None)
            if typed.data_type not in INTEGER_KINDS:
                raise NotExactError(f"sequence of type {kind.this}")
            value = replace(value, data_type=typed.data_type, unsigned=typed.unsigned)
        columns = [
            value,
            value.renamed("minimum_value"),
            value.renamed("maximum_value"),
            value.renamed("start_value"),
            ColumnDef("increment", "bigint", nullable=False),
            ColumnDef("cache_size", "bigint", unsigned=True, nullable=False),
            ColumnDef("cycle_option", "tinyint", unsigned=True, nullable=False),
            ColumnDef("cycle_count", "bigint", nullable=False),
        ]
        return self.table(key, columns, [], charset)

    # -- databases ----------------------------------------------------------------------

    def database(self, node: exp.Expr) -> None:
        if isinstance(node, d.DropDatabase):
            self.databases[node.name] = None
            return
        if isinstance(node, d.AlterDatabase):
            this = node.args.get("this")
            name = this.name if this is not None else self.ctx.default_schema
            if not name:
                raise DdlError(self.statement, "ALTER DATABASE without a database")
        else:
            assert isinstance(node, d.CreateDatabase)
            name = node.name
            if node.args.get("replace"):
                self.databases[name] = None  # its tables are dropped
                return
            if node.args.get("exists") and self.ctx.database_collation(name) is not None:
                return  # both servers log CREATE DATABASE IF NOT EXISTS of one that exists
            # (a database whose collation is not known here is taken as a new one)
        charset: str | None = None
        collation: str | None = None
        for option in node.args.get("options") or []:
            if option.this == "CHARACTER SET":
                charset = option.expression.name
            elif option.this == "COLLATE":
                collation = option.expression.name
        try:
            resolved = self.cs.resolve(charset, collation)
        except NotExactError:
            self.databases[name] = None
            return
        if resolved is not None:
            self.databases[name] = resolved[1]
        elif isinstance(node, d.CreateDatabase):
            server = self.ctx.server_collation
            self.databases[name] = self.cs.collation_name(server) if server else None
