"""The schema history as the decoder consults it: one check per TABLE_MAP. No I/O.

:class:`SchemaTracker` is what the decoder consults (the
:class:`~replica_client.binlog.table_bindings.TableDefinitions` it is given):
once per TABLE_MAP (never per row) it checks the TABLE_MAP against the
table's definition (column count, type codes, lengths, precisions, and the
signedness, charsets, names and labels the TABLE_MAP carries) and fills in
what the binlog does not say. A disagreement, or a table whose definition is
unknown, raises :class:`~replica_client.errors.SchemaHistoryError` naming the
table, the column and the binlog position, unless the tracker was told to
deliver such a table's rows keyed ``@1``, ``@2``, ... with the binlog's own
types (``unproven="positional"``).
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable
from typing import Any, Final

from ..binlog.constants import BINARY_COLLATION, ColumnType
from ..binlog.events import ColumnInfo, QueryEvent, TableMapEvent
from ..errors import SchemaHistoryError, SchemaMismatchError, UnknownSchemaError
from .history import SchemaHistory, TableKey, TableState, Unknown, Unproven, apply_ddl
from .model import CHARACTER_TYPES, INTEGER_TYPES, ColumnDef, TableDef
from .sqltypes import column_info, expected_shapes, shape_matches, table_def_from_map

__all__ = ["SchemaTracker"]

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
        # the SQL parser is imported with the first DDL statement, not before
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
        if self._interpret is None:
            from .ddl import interpret

            self._interpret = interpret
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
        previous = history.tables.get(key)
        learned = table_def_from_map(
            tm,
            history.mariadb,
            history.version,
            previous if isinstance(previous, TableDef) else None,
        )
        if learned is None:
            return
        tables = dict(history.tables)
        tables[key] = learned
        self.history = history.replace(tables=tables, changed=history.changed | {key})
