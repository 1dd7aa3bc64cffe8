"""The schema history: each table's definition valid at the current binlog point. No I/O.

A :class:`SchemaHistory` is a value: the definitions of the tracked tables at
one point of a primary's binlog, the databases' default collations, and what
the stream must still do to them (``pending``, below). It starts where it
was captured (``information_schema`` read at a binlog point, see
:mod:`replica_client.control.queries`), restored (a checkpoint's JSON), or
built from ``CREATE TABLE`` texts (files), and moves forward only by what the
binlog says, in binlog order:

- a DDL statement (a QueryEvent) is parsed (:mod:`.ddl`) and applied; a
  statement that cannot be applied exactly makes its tables :class:`Unknown`
  (the statement is named when a name is asked for later), never guessed;
- a TABLE_MAP with full metadata (``binlog_row_metadata=FULL``: names,
  signedness, charsets, labels) is the table's definition at that point: where
  the history disagrees or does not know the table, it learns it from there
  (:mod:`.tracker`, which the decoder consults).

A history captured *after* the stream's start carries ``pending`` marks: the
DDL events between the start and the capture (found by reading that range of
the binlog first) after which a table's captured definition is valid. Before
its last such DDL a table is :class:`Unknown`; at it, the captured definition
takes over. A mark names the DDL by its originating server id, timestamp and
statement text, so it holds in any copy of the binlog (a relay log, another
primary after a failover).
"""

from __future__ import annotations

import dataclasses
import fnmatch
import hashlib
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from types import MappingProxyType
from typing import TYPE_CHECKING, Any, Final, Literal

from ..binlog.charsets import collation_name
from ..binlog.events import QueryEvent
from .model import TableDef, table_from_json

if TYPE_CHECKING:
    from .ddl import DdlEffect

__all__ = [
    "DdlMark",
    "SchemaHistory",
    "TableKey",
    "TableState",
    "Unknown",
    "Unproven",
    "apply_ddl",
]

TableKey = tuple[str, str]
#: What to do with a table whose names or types cannot be proven.
Unproven = Literal["error", "positional"]

_FORMAT: Final = 1  # the JSON form's version
#: Schemas whose tables are the server's own: never tracked.
_SYSTEM_SCHEMAS: Final = frozenset({"information_schema", "performance_schema", "sys"})


@dataclass(frozen=True, slots=True)
class Unknown:
    """A table whose definition at this point cannot be told.

    Attributes:
        reason: why (for the error a TABLE_MAP of it raises).
        statement: the DDL that could not be applied, if one.
    """

    reason: str
    statement: str | None = None


@dataclass(frozen=True, slots=True)
class DdlMark:
    """A DDL event named without its position: the server that first ran it, when,
    and a digest of its statement text (the same in every copy of the binlog)."""

    server_id: int
    timestamp: int
    digest: str

    @classmethod
    def of(cls, event: QueryEvent) -> DdlMark:
        text = event.query_bytes or event.query.encode("utf-8", "surrogateescape")
        return cls(event.server_id, event.timestamp, hashlib.sha256(text).hexdigest()[:32])

    def to_json(self) -> list[Any]:
        return [self.server_id, self.timestamp, self.digest]


TableState = TableDef | Unknown


def _frozen(mapping: Mapping[Any, Any]) -> Mapping[Any, Any]:
    return MappingProxyType(dict(mapping))


@dataclass(frozen=True, slots=True)
class SchemaHistory:
    """Table definitions at one binlog point (see the module docstring).

    Attributes:
        mariadb, version: the flavour and major.minor version of the primary
            (how DDL text and charsets are read).
        tables: (schema, table) -> its definition or :class:`Unknown`; a table
            not in it is not known (not tracked, or not visible to the account).
        databases: database -> default collation.
        schemas: the tracked databases, as ``fnmatch`` patterns (the schema part
            of the table filter's patterns; None: all but the server's own); DDL
            of other databases is
            not followed.
        pending: DDL events after which tables take their ``captured`` definition:
            (mark, n) for the n-th DDL with that mark since the history's start
            (identical statements in one second share a mark).
        captured: the definitions ``pending`` installs.
        seen: how many DDL events of each pending mark were applied so far.
        changed: the tables whose definition the binlog gave since the history's
            start (DDL, TABLE_MAPs): a checkpoint keeps them whatever its filter.
        explicit_defaults_for_timestamp: the primary's global setting (how a
            TIMESTAMP column without NULL/NOT NULL is created), None: unknown.
        unverified: tables whose definition was read after the stream's start
            without reading the binlog in between for DDL: it completes no TABLE_MAP
            until the binlog proves it (a DDL, a TABLE_MAP with full metadata).
        origin: where the history comes from (for messages): ``"captured at ..."``.
    """

    mariadb: bool
    version: tuple[int, int]
    tables: Mapping[TableKey, TableState] = field(default_factory=dict)
    databases: Mapping[str, str] = field(default_factory=dict)
    schemas: tuple[str, ...] | None = None
    pending: Mapping[tuple[DdlMark, int], tuple[TableKey, ...]] = field(default_factory=dict)
    captured: Mapping[TableKey, TableDef] = field(default_factory=dict)
    seen: Mapping[DdlMark, int] = field(default_factory=dict)
    changed: frozenset[TableKey] = frozenset()
    unverified: frozenset[TableKey] = frozenset()
    explicit_defaults_for_timestamp: bool | None = None
    origin: str = ""

    def __post_init__(self) -> None:
        object.__setattr__(self, "tables", _frozen(self.tables))
        object.__setattr__(self, "databases", _frozen(self.databases))
        object.__setattr__(self, "pending", _frozen(self.pending))
        object.__setattr__(self, "captured", _frozen(self.captured))
        object.__setattr__(self, "seen", _frozen(self.seen))

    # -- building ---------------------------------------------------------------------------

    @classmethod
    def from_definitions(
        cls,
        tables: Mapping[TableKey, TableDef] | Iterable[TableDef],
        *,
        mariadb: bool,
        version: tuple[int, int],
        databases: Mapping[str, str] | None = None,
        schemas: Iterable[str] | None = None,
        origin: str = "",
    ) -> SchemaHistory:
        """A history holding these definitions."""
        if not isinstance(tables, Mapping):
            tables = {(t.schema, t.name): t for t in tables}
        return cls(
            mariadb,
            version,
            dict(tables),
            dict(databases or {}),
            None if schemas is None else tuple(sorted(schemas)),
            origin=origin,
        )

    @classmethod
    def from_ddl(
        cls,
        statements: Iterable[str],
        *,
        mariadb: bool,
        version: tuple[int, int],
        default_schema: str = "",
        server_collation: str | None = None,
    ) -> SchemaHistory:
        """A history from DDL texts (``SHOW CREATE TABLE`` output, a schema dump's
        ``CREATE DATABASE`` / ``CREATE TABLE`` statements), applied in order as the
        server would (``server_collation``: the server's default, for a table and
        database without a character set).

        Raises:
            ConfigError: a statement that is not DDL of tables or databases, or that
                cannot be applied exactly (its reason named).
        """
        from ..errors import ConfigError
        from .ddl import DdlContext, DdlError, interpret

        history = cls(mariadb, version)

        def lookup(schema: str, table: str) -> TableDef | None:
            state = history.tables.get((schema, table))
            return state if isinstance(state, TableDef) else None

        for n, statement in enumerate(statements, 1):
            ctx = DdlContext(
                default_schema=default_schema,
                mariadb=mariadb,
                version=version,
                server_collation=server_collation,
                lookup=lookup,
                database_collation=history.databases.get,
            )
            try:
                effect = interpret(statement, ctx)
            except DdlError as exc:
                raise ConfigError(f"DDL statement {n} cannot be read: {exc}") from exc
            if effect is None:
                raise ConfigError(f"statement {n} is not DDL of tables or databases")
            if effect.unknown:
                (schema, table), reason = next(iter(effect.unknown.items()))
                raise ConfigError(f"statement {n} cannot be applied to {schema}.{table}: {reason}")
            history = _applied(history, effect, statement)
        return history.replace(changed=frozenset(), origin="DDL statements")

    def tracks(self, schema: str) -> bool:
        """True when DDL of ``schema`` is followed (also a database created later)."""
        if self.schemas is None:
            return schema.lower() not in _SYSTEM_SCHEMAS
        return any(fnmatch.fnmatchcase(schema, p) for p in self.schemas)

    def replace(self, **changes: Any) -> SchemaHistory:
        return dataclasses.replace(self, **changes)

    def with_pending(
        self,
        marks: Mapping[tuple[DdlMark, int], Iterable[TableKey]],
        captured: Mapping[TableKey, TableDef],
    ) -> SchemaHistory:
        """This history before the DDL ``marks`` name ((mark, n): the n-th DDL with that
        mark from here on): each mark's tables are :class:`Unknown` until the stream
        reaches it, then take their ``captured`` definition (the mark must be each
        table's last DDL before the capture)."""
        tables = dict(self.tables)
        waiting: dict[tuple[DdlMark, int], tuple[TableKey, ...]] = {}
        for mark, named in marks.items():
            keys = tuple(sorted(set(named)))
            waiting[mark] = keys
            for key in keys:
                tables[key] = Unknown(
                    f"{key[0]}.{key[1]} changed between the stream's start and the moment "
                    "its definition was read (the DDL statements in that span were not "
                    "applied: its definition before them is not known)"
                )
        used = {k for keys in waiting.values() for k in keys}
        return self.replace(
            tables=tables,
            pending=waiting,
            captured={k: v for k, v in captured.items() if k in used},
            seen={},
        )

    # -- the JSON form ----------------------------------------------------------------------

    def to_json(self, keep: Callable[[str, str], bool] | None = None) -> dict[str, Any]:
        """The history as JSON (for checkpoints). ``keep(schema, table)``: the tables to
        write (e.g. the stream's table filter); tables whose definition came from the
        binlog (DDL, TABLE_MAPs) or that are unknown are written too."""
        tables: list[dict[str, Any]] = []
        for (schema, name), state in sorted(self.tables.items()):
            if isinstance(state, Unknown):
                entry: dict[str, Any] = {"schema": schema, "name": name, "unknown": state.reason}
                if state.statement is not None:
                    entry["statement"] = state.statement
                tables.append(entry)
            elif keep is None or keep(schema, name) or (schema, name) in self.changed:
                tables.append(state.to_json())
        out: dict[str, Any] = {
            "format": _FORMAT,
            "flavor": "mariadb" if self.mariadb else "mysql",
            "version": f"{self.version[0]}.{self.version[1]}",
            "tables": tables,
            "databases": dict(sorted(self.databases.items())),
        }
        if self.schemas is not None:
            out["schemas"] = list(self.schemas)
        if self.pending:
            out["pending"] = [
                [*m.to_json(), n, [list(k) for k in keys]] for (m, n), keys in self.pending.items()
            ]
            if self.seen:
                out["seen"] = [[*m.to_json(), n] for m, n in self.seen.items()]
            out["captured"] = [d.to_json() for _, d in sorted(self.captured.items())]
        if self.changed:
            out["changed"] = [list(k) for k in sorted(self.changed)]
        unverified = self.unverified - self.changed
        if unverified:
            out["unverified"] = [list(k) for k in sorted(unverified)]
        if self.explicit_defaults_for_timestamp is not None:
            out["explicit_defaults_for_timestamp"] = self.explicit_defaults_for_timestamp
        if self.origin:
            out["origin"] = self.origin
        return out

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> SchemaHistory:
        """The inverse of :meth:`to_json`.

        Raises:
            ValueError: not a schema history's JSON form.
        """
        try:
            if data.get("format") != _FORMAT:
                raise ValueError(f"schema history format {data.get('format')!r}")
            major, minor = (int(x) for x in str(data["version"]).split(".", 1))
            tables: dict[TableKey, TableState] = {}
            for entry in data["tables"]:
                key = (str(entry["schema"]), str(entry["name"]))
                if "unknown" in entry:
                    tables[key] = Unknown(str(entry["unknown"]), entry.get("statement"))
                else:
                    tables[key] = table_from_json(entry)
            pending = {
                (DdlMark(int(p[0]), int(p[1]), str(p[2])), int(p[3])): tuple(
                    (str(s), str(t)) for s, t in p[4]
                )
                for p in data.get("pending", ())
            }
            seen = {
                DdlMark(int(p[0]), int(p[1]), str(p[2])): int(p[3]) for p in data.get("seen", ())
            }
            captured = {
                (d.schema, d.name): d for d in map(table_from_json, data.get("captured", ()))
            }
            schemas = data.get("schemas")
            return cls(
                mariadb=data["flavor"] == "mariadb",
                version=(major, minor),
                tables=tables,
                databases={str(k): str(v) for k, v in data.get("databases", {}).items()},
                schemas=None if schemas is None else tuple(str(s) for s in schemas),
                pending=pending,
                captured=captured,
                seen=seen,
                changed=frozenset((str(s), str(t)) for s, t in data.get("changed", ())),
                unverified=frozenset((str(s), str(t)) for s, t in data.get("unverified", ())),
                explicit_defaults_for_timestamp=data.get("explicit_defaults_for_timestamp"),
                origin=str(data.get("origin", "")),
            )
        except (KeyError, TypeError, IndexError) as exc:
            raise ValueError(f"not a schema history: {exc!r}") from exc


def apply_ddl(
    history: SchemaHistory, event: QueryEvent, interpret: Callable[..., Any]
) -> SchemaHistory:
    """``history`` after the DDL statement of ``event``."""
    from .ddl import DdlContext, DdlError

    mark = DdlMark.of(event)
    server_collation = (
        collation_name(event.charset[2], history.mariadb) if event.charset is not None else None
    )
    tables = dict(history.tables)
    databases = dict(history.databases)

    def lookup(schema: str, table: str) -> TableDef | None:
        state = tables.get((schema, table))
        return state if isinstance(state, TableDef) else None

    explicit = event.explicit_defaults_for_timestamp
    ctx = DdlContext(
        default_schema=event.schema,
        mariadb=history.mariadb,
        version=history.version,
        server_collation=server_collation,
        lookup=lookup,
        database_collation=databases.get,
        sql_mode=event.sql_mode,
        explicit_defaults_for_timestamp=(
            bool(explicit) if explicit is not None else history.explicit_defaults_for_timestamp
        ),
        exists=lambda schema, table: True if (schema, table) in tables else None,
    )
    try:
        effect = interpret(event.query, ctx)
    except DdlError as exc:
        reason = f"the DDL statement could not be read ({exc})"
        named = [
            k for k in tables if k[1].lower() in event.query.lower() and history.tracks(k[0])
        ] or [k for k in tables if k[0] == event.schema]
        for k in named:
            tables[k] = Unknown(reason, event.query)
        return _with_pending(
            history.replace(tables=tables, changed=history.changed | set(named)), mark
        )
    if effect is None:
        return _with_pending(history, mark)
    return _with_pending(_applied(history, effect, event.query), mark)


def _applied(history: SchemaHistory, effect: DdlEffect, statement: str) -> SchemaHistory:
    """``history`` with a statement's effect (tables of untracked databases left out)."""
    tables = dict(history.tables)
    databases = dict(history.databases)
    for db, collation in effect.databases.items():
        if collation is None:
            databases.pop(db, None)
            for k in [k for k in tables if k[0] == db]:
                del tables[k]
        elif history.tracks(db) or db in databases:
            databases[db] = collation
    changed = set(history.changed)
    for k, definition in effect.tables.items():
        if not history.tracks(k[0]):
            continue
        changed.add(k)
        if definition is None:
            tables.pop(k, None)
        else:
            tables[k] = definition
    for k, reason in effect.unknown.items():
        if history.tracks(k[0]):
            changed.add(k)
            tables[k] = Unknown(reason, statement)
    return history.replace(tables=tables, databases=databases, changed=frozenset(changed))


def _with_pending(history: SchemaHistory, mark: DdlMark) -> SchemaHistory:
    if not any(m == mark for m, _ in history.pending):
        return history
    n = history.seen.get(mark, 0) + 1
    keys = history.pending.get((mark, n))
    if keys is None:
        return history.replace(seen={**history.seen, mark: n})
    tables = dict(history.tables)
    for k in keys:
        captured = history.captured.get(k)
        if captured is None:  # the table did not exist when the history was captured
            tables.pop(k, None)
        else:
            tables[k] = captured
    pending = {m: ks for m, ks in history.pending.items() if m != (mark, n)}
    captured_left = {
        k: d for k, d in history.captured.items() if any(k in ks for ks in pending.values())
    }
    still = {m for m, _ in pending}
    seen = {m: c for m, c in {**history.seen, mark: n}.items() if m in still}
    return history.replace(tables=tables, pending=pending, captured=captured_left, seen=seen)
