"""What a DDL statement is read against and what it did: the interpreter's values. No I/O.

:class:`DdlContext` (the statement's database, the server, the definitions it
looks up, the SQL modes), :class:`DdlEffect` (the tables and databases it
changed, those it changed in a way not applied exactly), :class:`DdlError`
(table or database DDL whose tables cannot even be named), and what the rules
of :mod:`.ddl` pass between them: a table's state (:data:`DdlTableState`, with
:class:`UnknownTable`), and the error that makes a table unknown
(:class:`NotExactError`).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Final

from .model import TableDef

__all__ = [
    "DdlContext",
    "DdlEffect",
    "DdlError",
    "DdlTableState",
    "NotExactError",
    "UnknownTable",
]

TableKey = tuple[str, str]

#: sql_mode bits of the QueryEvent (the same on both flavours).
MODE_REAL_AS_FLOAT: Final = 1
MODE_ANSI_QUOTES: Final = 4
MODE_ORACLE: Final = 512  # MariaDB only (MySQL has no such bit since 8.0)
MODE_NO_BACKSLASH_ESCAPES: Final = 1 << 20


@dataclass(frozen=True, slots=True)
class DdlContext:
    """What a statement is read against.

    Attributes:
        default_schema: the QueryEvent's current database ("" when none).
        mariadb, version: the server's flavour and (major, minor).
        server_collation: ``collation_server`` for this statement (None: unknown).
        lookup: the current definition of (schema, table); None: not known.
        database_collation: the default collation of a database; None: not known.
        sql_mode: the QueryEvent's sql_mode bits (None: the default modes).
        explicit_defaults_for_timestamp: the server's setting (None: unknown).
        exists: whether (schema, table) exists now, when the caller knows more
            than ``lookup`` (a table whose definition is unknown exists); None:
            only ``lookup`` is asked (a definition means the table exists).
    """

    default_schema: str
    mariadb: bool
    version: tuple[int, int]
    server_collation: str | None
    lookup: Callable[[str, str], TableDef | None]
    database_collation: Callable[[str], str | None]
    sql_mode: int | None = None
    explicit_defaults_for_timestamp: bool | None = True
    exists: Callable[[str, str], bool | None] | None = None


@dataclass(frozen=True, slots=True)
class DdlEffect:
    """What a statement did.

    Attributes:
        tables: new definitions of the tables it changed; None: the table is gone.
        unknown: tables changed in a way not applied exactly -> why.
        databases: database -> its default collation now; None: dropped.
        touched: every table the statement may change (both names of a rename).
    """

    tables: Mapping[TableKey, TableDef | None] = field(default_factory=dict)
    unknown: Mapping[TableKey, str] = field(default_factory=dict)
    databases: Mapping[str, str | None] = field(default_factory=dict)
    touched: frozenset[TableKey] = frozenset()


class DdlError(Exception):
    """A table or database DDL statement whose tables cannot even be named."""

    def __init__(self, statement: str, reason: str) -> None:
        super().__init__(f"{reason}: {statement[:200]!r}")
        self.statement = statement
        self.reason = reason


@dataclass(frozen=True, slots=True)
class UnknownTable:
    """A table whose definition a statement leaves unknown: why (``reason``)."""

    reason: str


class NotExactError(Exception):
    """A clause that cannot be applied exactly; the table becomes unknown."""


#: What a statement leaves of a table: its definition, None (gone) or unknown.
DdlTableState = TableDef | None | UnknownTable
