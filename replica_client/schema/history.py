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
  the history disagrees or does not know the table, it learns it from there.

:class:`SchemaTracker` is what the decoder consults (the
:class:`~replica_client.binlog.rows_events.TableDefinitions` it is given):
once per TABLE_MAP (never per row) it checks the TABLE_MAP against the
table's definition (column count, type codes, lengths, precisions, and the
signedness, charsets, names and labels the TABLE_MAP carries) and fills in
what the binlog does not say. A disagreement, or a table whose definition is
unknown, raises :class:`~replica_client.errors.SchemaHistoryError` naming the
table, the column and the binlog position, unless the tracker was told to
deliver such a table's rows keyed ``@1``, ``@2``, ... with the binlog's own
types (``unproven="positional"``).

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
import hashlib
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from types import MappingProxyType
from typing import Any, Final, Literal

from ..binlog.charsets import collation_name
from ..binlog.constants import BINARY_COLLATION, ColumnType
from ..binlog.events import ColumnInfo, QueryEvent, TableMapEvent
from ..errors import SchemaHistoryError, SchemaMismatchError, UnknownSchemaError
from .model import (
    CHARACTER_TYPES,
    INTEGER_TYPES,
    ColumnDef,
    TableDef,
    table_from_json,
)
from .sqltypes import column_info, expected_shapes, shape_matches

__all__ = [
    "DdlMark",
    "SchemaHistory",
    "SchemaTracker",
    "Unknown",
    "Unproven",
]

TableKey = tuple[str, str]
#: What to do with a table whose names or types cannot be proven.
Unproven = Literal["error", "positional"]

_FORMAT: Final = 1  # the JSON form's version


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
        schemas: the tracked databases (None: all); DDL of other databases is
            not followed.
        pending: DDL events after which tables take their ``captured`` definition.
        captured: the definitions ``pending`` installs.
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
    pending: Mapping[DdlMark, tuple[TableKey, ...]] = field(default_factory=dict)
    captured: Mapping[TableKey, TableDef] = field(default_factory=dict)
    changed: frozenset[TableKey] = frozenset()
    unverified: frozenset[TableKey] = frozenset()
    explicit_defaults_for_timestamp: bool | None = None
    origin: str = ""

    def __post_init__(self) -> None:
        object.__setattr__(self, "tables", _frozen(self.tables))
        object.__setattr__(self, "databases", _frozen(self.databases))
        object.__setattr__(self, "pending", _frozen(self.pending))
        object.__setattr__(self, "captured", _frozen(self.captured))

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

    def tracks(self, schema: str) -> bool:
        """True when DDL of ``schema`` is followed."""
        return self.schemas is None or schema in self.schemas

    def replace(self, **changes: Any) -> SchemaHistory:
        return dataclasses.replace(self, **changes)

    def with_pending(
        self, marks: Mapping[DdlMark, Iterable[TableKey]], captured: Mapping[TableKey, TableDef]
    ) -> SchemaHistory:
        """This history before the DDL ``marks`` name: each mark's tables are
        :class:`Unknown` until the stream reaches it, then take their ``captured``
        definition (the mark must be each table's last DDL before the capture)."""
        tables = dict(self.tables)
        waiting: dict[DdlMark, tuple[TableKey, ...]] = {}
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
                [*m.to_json(), [list(k) for k in keys]] for m, keys in self.pending.items()
            ]
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
                DdlMark(int(p[0]), int(p[1]), str(p[2])): tuple((str(s), str(t)) for s, t in p[3])
                for p in data.get("pending", ())
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
                changed=frozenset((str(s), str(t)) for s, t in data.get("changed", ())),
                unverified=frozenset((str(s), str(t)) for s, t in data.get("unverified", ())),
                explicit_defaults_for_timestamp=data.get("explicit_defaults_for_timestamp"),
                origin=str(data.get("origin", "")),
            )
        except (KeyError, TypeError, IndexError) as exc:
            raise ValueError(f"not a schema history: {exc!r}") from exc


# -- TABLE_MAPs against definitions ---------------------------------------------------------------

T = ColumnType
_NUMERIC_CODES: Final = frozenset(
    {T.TINY, T.SHORT, T.INT24, T.LONG, T.LONGLONG, T.NEWDECIMAL, T.FLOAT, T.DOUBLE, T.YEAR}
)
_STRING_CODES: Final = frozenset({T.STRING, T.VAR_STRING, T.VARCHAR, T.BLOB, T.VARCHAR_COMPRESSED})


def _self_sufficient(tm: TableMapEvent) -> bool:
    """True when the TABLE_MAP alone says names, signedness, charsets and labels
    (``binlog_row_metadata=FULL``)."""
    for c in tm.columns:
        if c.name is None:
            return False
        if c.type in _NUMERIC_CODES and c.unsigned is None:
            return False
        if c.real_type == T.ENUM and c.enum_values is None:
            return False
        if c.real_type == T.SET and c.set_values is None:
            return False
        if c.type in _STRING_CODES and c.real_type not in (T.ENUM, T.SET) and c.collation is None:
            return False
    return True


def _disagreement(
    info: ColumnInfo, col: ColumnDef, mariadb: bool, version: tuple[int, int]
) -> str | None:
    """Why TABLE_MAP column ``info`` cannot be ``col``; None when it can."""
    shapes = expected_shapes(col, mariadb, version)
    if shapes is None:
        return f"its type {col.data_type} is not one this library can check"
    if not shape_matches(info, shapes):
        return (
            f"the TABLE_MAP has type {info.type} (metadata {info.meta:#x}) where the "
            f"definition's {col.data_type} would be written as type {shapes[0].type}"
            + (f" with metadata {shapes[0].meta:#x}" if shapes[0].meta is not None else "")
        )
    if info.name is not None and info.name.lower() != col.name.lower():
        return f"the TABLE_MAP names it {info.name!r}"
    if (
        info.unsigned is not None
        and col.data_type in INTEGER_TYPES
        and info.unsigned != col.unsigned
    ):
        return f"the TABLE_MAP says it is {'un' if info.unsigned else ''}signed"
    if (
        info.collation is not None
        and col.data_type in CHARACTER_TYPES
        and col.charset is not None
        and info.collation != BINARY_COLLATION
    ):
        from ..binlog.charsets import charset_for_collation

        charset = charset_for_collation(info.collation)
        if charset is not None and charset != _canonical_charset(col.charset):
            return f"the TABLE_MAP says its character set is {charset}, not {col.charset}"
    labels = info.enum_values if info.real_type == T.ENUM else info.set_values
    if labels is not None and col.data_type in ("enum", "set") and labels != col.labels:
        return f"the TABLE_MAP lists its members as {labels!r}"
    return None


def _canonical_charset(name: str) -> str:
    name = name.lower()
    return "utf8mb3" if name == "utf8" else name


class SchemaTracker:
    """The schema history as the decoder consults it; moves with the binlog.

    Args:
        history: the history at the point the stream starts.
        unproven: ``"error"`` (default) raises :class:`SchemaHistoryError` for a
            TABLE_MAP whose names or types cannot be proven; ``"positional"``
            passes such a table's TABLE_MAP as the binlog has it (``@1``, ...).
        interpret: the DDL interpreter (:func:`.ddl.interpret` by default).

    Attributes:
        history: the history after the events decoded so far.
    """

    __slots__ = ("_interpret", "_resolved", "_serial", "history", "unproven")

    def __init__(
        self,
        history: SchemaHistory,
        *,
        unproven: Unproven = "error",
        interpret: Callable[..., Any] | None = None,
    ) -> None:
        if unproven not in ("error", "positional"):
            raise ValueError(f"unproven must be 'error' or 'positional', not {unproven!r}")
        self.history = history
        self.unproven = unproven
        if interpret is None:
            from .ddl import interpret as default_interpret

            interpret = default_interpret
        self._interpret = interpret
        # TABLE_MAP definition bytes -> (table state used, resolved TABLE_MAP, cache key)
        self._resolved: dict[bytes, tuple[TableState | None, TableMapEvent, bytes]] = {}
        self._serial = 0

    @property
    def state(self) -> SchemaHistory:
        """The history now (what checkpoints keep)."""
        return self.history

    # -- QueryEvents ------------------------------------------------------------------------

    def query(self, event: QueryEvent) -> None:
        """Move the history by one QueryEvent (nothing for statements that are not DDL)."""
        from .statements import StatementKind, classify

        if classify(event.query) is not StatementKind.TABLE_DDL:
            return
        self.history = apply_ddl(self.history, event, self._interpret)

    # -- TABLE_MAPs -------------------------------------------------------------------------

    def table_map(self, tm: TableMapEvent, definition: bytes) -> tuple[TableMapEvent, bytes]:
        """``tm`` checked against its table's definition and completed from it, with the
        key its row decoder is cached under (``definition`` when nothing was added).

        Raises:
            SchemaHistoryError: the names or types of ``tm`` cannot be proven (and
                ``unproven="error"``).
        """
        key = (tm.schema, tm.table)
        state = self.history.tables.get(key)
        cached = self._resolved.get(definition)
        if cached is not None and cached[0] is state:
            return cached[1], cached[2]
        resolved = self._resolve(tm, key, state)
        state = self.history.tables.get(key)  # learned from tm, perhaps
        if resolved is tm:
            out_key = definition
        else:
            self._serial += 1
            out_key = definition + b"\x00" + self._serial.to_bytes(8, "little")
        if len(self._resolved) > 4096:
            self._resolved.clear()
        self._resolved[definition] = (state, resolved, out_key)
        return resolved, out_key

    def _resolve(self, tm: TableMapEvent, key: TableKey, state: TableState | None) -> TableMapEvent:
        history = self.history
        full = _self_sufficient(tm)
        if (
            isinstance(state, TableDef)
            and not full
            and key in history.unverified
            and key not in history.changed
        ):
            return self._unproven(
                tm,
                UnknownSchemaError(
                    f"the definition of {tm.schema}.{tm.table} was read after this point "
                    "and the binlog in between was not read for DDL, while this TABLE_MAP "
                    "lacks full metadata (the primary wrote it with binlog_row_metadata "
                    "other than FULL): connect with schema_history='scan' to read it",
                    schema=tm.schema,
                    table=tm.table,
                ),
            )
        if isinstance(state, TableDef):
            why = self._mismatch(tm, state)
            if why is None:
                return self._completed(tm, state)
            if full:
                self._learn(key, tm)
                return tm
            return self._unproven(
                tm,
                SchemaMismatchError(
                    f"the binlog's TABLE_MAP of {tm.schema}.{tm.table} does not fit its "
                    f"definition in the schema history ({why[1]})",
                    schema=tm.schema,
                    table=tm.table,
                    column=why[0],
                ),
            )
        if full:
            self._learn(key, tm)
            return tm
        if isinstance(state, Unknown):
            error: SchemaHistoryError = UnknownSchemaError(
                f"the definition of {tm.schema}.{tm.table} is not known at this point: "
                f"{state.reason}",
                schema=tm.schema,
                table=tm.table,
                statement=state.statement,
            )
        else:
            error = UnknownSchemaError(
                f"no definition of {tm.schema}.{tm.table} is known: the binlog has no column "
                "names for it (the primary's binlog_row_metadata is not FULL) and the schema "
                + (
                    "history does not follow its database"
                    if not history.tracks(tm.schema)
                    else "history did not see it (it was not visible to the account when the "
                    "history was captured: the account needs SELECT on it, e.g. "
                    f"GRANT SELECT ON `{tm.schema}`.* TO the replication user)"
                ),
                schema=tm.schema,
                table=tm.table,
            )
        return self._unproven(tm, error)

    def _unproven(self, tm: TableMapEvent, error: SchemaHistoryError) -> TableMapEvent:
        if self.unproven == "positional":
            return tm
        raise error

    def _mismatch(self, tm: TableMapEvent, table: TableDef) -> tuple[str | None, str] | None:
        history = self.history
        if len(tm.columns) != len(table.columns):
            return None, (
                f"the TABLE_MAP has {len(tm.columns)} columns, the definition "
                f"{len(table.columns)}: {', '.join(c.name for c in table.columns)}"
            )
        for info, col in zip(tm.columns, table.columns, strict=True):
            why = _disagreement(info, col, history.mariadb, history.version)
            if why is not None:
                return col.name, f"column {info.index + 1}, {col.name!r}: {why}"
        return None

    def _completed(self, tm: TableMapEvent, table: TableDef) -> TableMapEvent:
        history = self.history
        columns = tuple(
            column_info(info, col, history.mariadb, history.version)
            for info, col in zip(tm.columns, table.columns, strict=True)
        )
        changes: dict[str, Any] = {}
        if columns != tm.columns:
            changes["columns"] = columns
        if not tm.primary_key and table.primary_key:
            pk = tuple(i for name in table.primary_key if (i := table.find(name)) is not None)
            if len(pk) == len(table.primary_key):
                changes["primary_key"] = pk
                changes["primary_key_prefixes"] = tuple((i, 0) for i in pk)
        return dataclasses.replace(tm, **changes) if changes else tm

    def _learn(self, key: TableKey, tm: TableMapEvent) -> None:
        """A TABLE_MAP with full metadata is the table's definition at this point."""
        history = self.history
        learned = table_def_from_map(tm, history.mariadb, history.version, history.tables.get(key))
        if learned is None:
            return
        tables = dict(history.tables)
        tables[key] = learned
        self.history = history.replace(tables=tables, changed=history.changed | {key})


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
            tables[k] = Unknown(reason, event.query)
    return _with_pending(
        history.replace(tables=tables, databases=databases, changed=frozenset(changed)), mark
    )


def _with_pending(history: SchemaHistory, mark: DdlMark) -> SchemaHistory:
    keys = history.pending.get(mark)
    if keys is None:
        return history
    tables = dict(history.tables)
    for k in keys:
        captured = history.captured.get(k)
        if captured is None:  # the table did not exist when the history was captured
            tables.pop(k, None)
        else:
            tables[k] = captured
    pending = {m: ks for m, ks in history.pending.items() if m != mark}
    captured_left = {
        k: d for k, d in history.captured.items() if any(k in ks for ks in pending.values())
    }
    return history.replace(tables=tables, pending=pending, captured=captured_left)


# -- a definition from a TABLE_MAP with full metadata ---------------------------------------------

_INTS: Final[dict[int, str]] = {
    T.TINY: "tinyint",
    T.SHORT: "smallint",
    T.INT24: "mediumint",
    T.LONG: "int",
    T.LONGLONG: "bigint",
}
_PLAIN: Final[dict[int, str]] = {
    T.FLOAT: "float",
    T.DOUBLE: "double",
    T.YEAR: "year",
    T.DATE: "date",
}
_TEMPORAL: Final[dict[int, str]] = {
    T.TIME2: "time",
    T.DATETIME2: "datetime",
    T.TIMESTAMP2: "timestamp",
    T.TIME: "time",
    T.DATETIME: "datetime",
    T.TIMESTAMP: "timestamp",
}
_BLOB_KIND: Final = {1: "tiny", 2: "", 3: "medium", 4: "long"}
_GEOMETRY_NAMES: Final = (
    "geometry",
    "point",
    "linestring",
    "polygon",
    "multipoint",
    "multilinestring",
    "multipolygon",
    "geometrycollection",
)


def table_def_from_map(
    tm: TableMapEvent,
    mariadb: bool,
    version: tuple[int, int],
    previous: TableState | None = None,
) -> TableDef | None:
    """The definition a TABLE_MAP with full metadata states (None when a column's type
    cannot be named from it). Where ``previous`` had a column of the same name and
    shape, its SQL data type is kept (UUID, INET6, ... look like BINARY(n) in the
    binlog)."""
    from ..binlog.charsets import charset_for_collation, charset_info

    columns: list[ColumnDef] = []
    for c in tm.columns:
        col = _column_from_info(c, mariadb, version, charset_for_collation, charset_info)
        if col is None:
            return None
        if isinstance(previous, TableDef):
            i = previous.find(col.name)
            if i is not None:
                old = previous.columns[i]
                shapes = expected_shapes(old, mariadb, version)
                if shapes is not None and shape_matches(c, shapes):
                    col = dataclasses.replace(col, data_type=old.data_type, length=old.length)
        columns.append(col)
    names = [c.name for c in columns]
    charset = collation = None
    if isinstance(previous, TableDef):
        charset, collation = previous.charset, previous.collation
    try:
        return TableDef(
            tm.schema,
            tm.table,
            tuple(columns),
            tuple(names[i] for i in tm.primary_key),
            charset,
            collation,
        )
    except ValueError:
        return None


def _column_from_info(
    c: ColumnInfo,
    mariadb: bool,
    version: tuple[int, int],
    charset_for_collation: Callable[[int | None], str | None],
    charset_info: Callable[..., tuple[int, str] | None],
) -> ColumnDef | None:
    from ..binlog.table_map import real_string_type

    assert c.name is not None
    name, t, meta = c.name, c.type, c.meta
    base: dict[str, Any] = {"name": name, "nullable": c.nullable, "invisible": not c.visible}
    if t in _INTS:
        return ColumnDef(data_type=_INTS[t], unsigned=bool(c.unsigned), **base)
    if t in _PLAIN:  # YEAR's SIGNEDNESS bit is always set: it has no UNSIGNED attribute
        unsigned = bool(c.unsigned) and t in (T.FLOAT, T.DOUBLE)
        return ColumnDef(data_type=_PLAIN[t], unsigned=unsigned, **base)
    if t == T.NEWDECIMAL:
        return ColumnDef(
            data_type="decimal",
            precision=meta >> 8,
            scale=meta & 0xFF,
            unsigned=bool(c.unsigned),
            **base,
        )
    if t == T.BIT:
        return ColumnDef(data_type="bit", length=(meta & 0xFF) * 8 + (meta >> 8), **base)
    if t in _TEMPORAL:
        return ColumnDef(data_type=_TEMPORAL[t], fsp=meta if t in (17, 18, 19) else 0, **base)
    charset = charset_for_collation(c.collation)
    collation = None if c.collation is None else collation_name(c.collation, mariadb)
    binary = c.collation == BINARY_COLLATION
    text: dict[str, Any] = {} if binary else {"charset": charset, "collation": collation}
    if t == T.STRING:
        real, length = real_string_type(meta)
        if real == T.ENUM:
            return ColumnDef(data_type="enum", labels=c.enum_values or (), **text, **base)
        if real == T.SET:
            return ColumnDef(data_type="set", labels=c.set_values or (), **text, **base)
        per_char = _per_char(charset, mariadb, version, charset_info)
        if binary:
            return ColumnDef(data_type="binary", length=length, **base)
        if per_char is None or length % per_char:
            return None
        return ColumnDef(data_type="char", length=length // per_char, **text, **base)
    if t in (T.VARCHAR, T.VAR_STRING, T.VARCHAR_COMPRESSED):
        compressed = t == T.VARCHAR_COMPRESSED
        length = meta - 1 if compressed else meta
        if binary:
            return ColumnDef(data_type="varbinary", length=length, compressed=compressed, **base)
        per_char = _per_char(charset, mariadb, version, charset_info)
        if per_char is None or length % per_char:
            return None
        kind = "varchar"
        return ColumnDef(
            data_type=kind, length=length // per_char, compressed=compressed, **text, **base
        )
    if t in (T.BLOB, T.BLOB_COMPRESSED) and meta in _BLOB_KIND:
        kind = _BLOB_KIND[meta] + ("blob" if binary else "text")
        return ColumnDef(data_type=kind, compressed=t == T.BLOB_COMPRESSED, **text, **base)
    if t == T.JSON:
        return ColumnDef(data_type="json", **base)
    if t == T.GEOMETRY:
        g = c.geometry_type or 0
        kind = _GEOMETRY_NAMES[g] if 0 <= g < len(_GEOMETRY_NAMES) else "geometry"
        if not mariadb and kind == "geometrycollection":
            kind = "geomcollection"
        return ColumnDef(data_type=kind, **base)
    if t == T.VECTOR:
        return ColumnDef(data_type="vector", length=c.dimensions, **base)
    return None


def _per_char(
    charset: str | None,
    mariadb: bool,
    version: tuple[int, int],
    charset_info: Callable[..., tuple[int, str] | None],
) -> int | None:
    if charset is None:
        return None
    info = charset_info(charset, mariadb, version)
    return info[0] if info is not None else None
