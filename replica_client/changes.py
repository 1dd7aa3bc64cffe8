"""Row changes: one :class:`Change` per inserted, updated or deleted row. No I/O.

``iter_changes(events)`` turns a stream of typed events (from files or the
network) into changes keyed by column name. The GTID of the enclosing
transaction comes from the GTID event that opened it.

Row images as dicts: keys are column names when the TABLE_MAP carries them
(``binlog_row_metadata=FULL``) or a schema provider supplied them, else
``"@1"``, ``"@2"``, ... A column absent from a MINIMAL/NOBLOB image is absent
from the dict (SQL NULL is present with value ``None``).

A QueryEvent whose statement changes rows (the primary logged it as SQL text:
``binlog_format`` MIXED or STATEMENT) has no row images: by default it raises
:class:`~replica_client.errors.StatementLoggedError` rather than be skipped;
``statements="deliver"`` turns it into a change with ``op="statement"``.
"""

from __future__ import annotations

import dataclasses
import datetime as dt
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass
from typing import Any, Final, Literal

from .accel import constructor, speedups
from .binlog.events import (
    MISSING,
    ColumnInfo,
    DeleteRowsEvent,
    Event,
    QueryEvent,
    Row,
    RowsEvent,
    TableMapEvent,
    UpdateRowsEvent,
    WriteRowsEvent,
)
from .binlog.transactions import TransactionTracker
from .config import TableFilter
from .errors import ConfigError, StatementLoggedError
from .position import FilePos, PositionMaker
from .schema import ProvidedColumns, apply_schema, needs_schema, retype_rows

__all__ = [
    "Change",
    "ChangeBuilder",
    "ColumnNames",
    "Layout",
    "Statements",
    "TableLayouts",
    "changes_rows",
    "iter_changes",
    "row_image",
]

#: What the binlog lacks for a table, ``(schema, table) -> columns | None``: column
#: names, or ``ColumnSchema`` entries with the SQL data type (see ``replica_client.schema``).
ColumnNames = Callable[[str, str], "ProvidedColumns | None"]

#: "read": a row of a snapshot (``connect(snapshot=...)``), not a change in the binlog;
#: "statement": rows changed by a statement logged as SQL text (``statements="deliver"``).
Op = Literal["insert", "update", "delete", "read", "statement"]
#: What a statement that changed rows without row images does: raise, or come as a change.
Statements = Literal["error", "deliver"]


@dataclass(frozen=True, slots=True)
class Change:
    """One changed row."""

    op: Op
    schema: str
    table: str
    before: dict[str, Any] | None
    after: dict[str, Any] | None
    #: The transaction's GTID ("domain-server-seq" on MariaDB, "uuid:gno" on
    #: MySQL), None if unknown.
    gtid: str | None
    #: Where the rows event starts in the primary's binlog.
    position: FilePos | None
    #: When the statement started on the primary (UTC).
    timestamp: dt.datetime
    #: Index of the row within its rows event.
    row_index: int = 0
    #: Primary-key column names (from the TABLE_MAP), empty if unknown.
    primary_key: tuple[str, ...] = ()
    server_id: int = 0
    #: ``op="statement"``: the SQL text that changed rows (``before``/``after`` None;
    #: ``table`` the one table it writes, "" when it may write several or any).
    statement: str | None = None


def row_image(names: tuple[str, ...], row: Row, missing: object = MISSING) -> dict[str, Any]:
    """A row image as a dict: ``{name: value}`` in column order, without the columns
    the image lacks (``missing``: MINIMAL/NOBLOB images); SQL NULL is ``None``. The
    one rule of both builders (changes and Spark's changelog; the accelerator's
    ``row_changes`` and ``json_images`` follow it, tests compare)."""
    # zip() without strict=: the keyword makes dict(zip()) 1.9x slower (4.7 vs 9.0 us
    # for 28 columns); the names are as many as the values, or more.
    if missing in row:
        return {n: v for n, v in zip(names, row) if v is not missing}  # noqa: B905
    return dict(zip(names, row))  # noqa: B905


#: A table definition's column names, primary-key names and primary-key indexes.
Layout = tuple[tuple[str, ...], tuple[str, ...], tuple[int, ...]]


class TableLayouts:
    """The :data:`Layout` of each table definition, built once per definition.

    Every transaction repeats its TABLE_MAPs; the decoder hands the repeats the
    same ``columns`` tuple, which keys this cache (with the primary key). Used by
    :class:`ChangeBuilder` and Spark's changelog builder alike.
    """

    __slots__ = ("known",)

    def __init__(self) -> None:
        #: id(columns) -> (columns, primary key, layout): a caller on a hot path may
        #: look here first (a hit: ``entry[0] is table.columns`` and the same key).
        self.known: dict[int, tuple[tuple[ColumnInfo, ...], tuple[int, ...], Layout]] = {}

    def of(self, table: TableMapEvent) -> Layout:
        columns = table.columns
        pk = table.primary_key
        cached = self.known.get(id(columns))
        if cached is not None and cached[0] is columns and cached[1] == pk:
            return cached[2]
        names = table.column_names
        layout = (names, tuple(names[i] for i in pk), pk)
        if len(self.known) > 1024:
            self.known.clear()
        self.known[id(columns)] = (columns, pk, layout)
        return layout


#: Where the fields of a ``Change`` the rows fill sit among its fields
#: (``make(*fields)``): ``(image, after image or -1, row index)`` per op.
_FIELD: Final = {f.name: i for i, f in enumerate(dataclasses.fields(Change))}
_SLOTS: Final = {
    "insert": (_FIELD["after"], -1, _FIELD["row_index"]),
    "delete": (_FIELD["before"], -1, _FIELD["row_index"]),
    "update": (_FIELD["before"], _FIELD["after"], _FIELD["row_index"]),
}


#: The op of each rows event class, and where its images go (exact classes first;
#: a subclass takes its base's: a partial update is an update).
_KINDS: Final[dict[type[RowsEvent], tuple[Op, tuple[int, int, int]]]] = {
    UpdateRowsEvent: ("update", _SLOTS["update"]),
    WriteRowsEvent: ("insert", _SLOTS["insert"]),
    DeleteRowsEvent: ("delete", _SLOTS["delete"]),
}


def _row_changes(
    make: Callable[..., Change],
    names: tuple[str, ...],
    rows: tuple[Any, ...],
    missing: object,
    fields: tuple[Any, ...],
    slots: tuple[int, int, int],
) -> list[Change]:
    """``make(*fields)`` per row, with the row's image as a dict (``{name: value}``
    without the columns that are ``missing``) in ``fields[slots[0]]`` and its index
    in ``fields[slots[2]]`` (none with ``slots[2] < 0``); with ``slots[1] >= 0`` each
    row is a (before, after) pair and the after image goes to ``fields[slots[1]]``.
    The accelerator's ``row_changes`` does the same."""
    first, second, index = slots
    args = list(fields)
    out = []
    for i, row in enumerate(rows):
        if second >= 0:
            before, after = row
            args[first] = row_image(names, before, missing)
            args[second] = row_image(names, after, missing)
        else:
            args[first] = row_image(names, row, missing)
        if index >= 0:
            args[index] = i
        out.append(make(*args))
    return out


_sp = speedups()
#: The changes of a rows event: the accelerator's, else the pure-Python one.
row_changes: Final[
    Callable[
        [
            Callable[..., Change],
            tuple[str, ...],
            tuple[Any, ...],
            object,
            tuple[Any, ...],
            tuple[int, int, int],
        ],
        list[Change],
    ]
] = _sp.row_changes if _sp is not None else _row_changes


_EPOCH: Final = dt.datetime.fromtimestamp(0, dt.UTC)


class ChangeBuilder:
    """Turns events into changes; tracks the current file and transaction GTID."""

    __slots__ = (
        "_binlog_format",
        "_column_names",
        "_derive",
        "_layouts",
        "_names_cache",
        "_position",
        "_remedy",
        "_statements",
        "_tables",
        "_time",
        "_timestamp",
        "_transactions",
    )

    def __init__(
        self,
        column_names: ColumnNames | None = None,
        *,
        statements: Statements = "error",
        tables: TableFilter | None = None,
        binlog_format: str | None = None,
        remedy: str | None = None,
    ) -> None:
        if statements not in ("error", "deliver"):
            raise ConfigError(f"statements must be 'error' or 'deliver', not {statements!r}")
        self._column_names = column_names
        self._statements = statements
        self._tables = tables if tables else None
        self._binlog_format = binlog_format
        #: What StatementLoggedError suggests besides binlog_format=ROW (None: its own).
        self._remedy = remedy
        self._transactions = TransactionTracker()
        self._position = PositionMaker().make
        #: positions come from the headers until the caller gives one
        self._derive = True
        self._names_cache: dict[int, tuple[TableMapEvent, TableMapEvent]] = {}
        self._layouts = TableLayouts()
        # the last header timestamp and its datetime (a transaction's events share it)
        self._timestamp = -1
        self._time = _EPOCH

    @property
    def gtid(self) -> str | None:
        """The GTID of the transaction being read (None without one)."""
        return self._transactions.gtid

    def _schema_for(self, table: TableMapEvent) -> TableMapEvent:
        """``table`` with what the provider adds (the same object when nothing)."""
        if self._column_names is None or not needs_schema(table):
            return table
        cached = self._names_cache.get(id(table))
        if cached is not None and cached[0] is table:
            return cached[1]
        known = apply_schema(table, self._column_names(table.schema, table.table)) or table
        if len(self._names_cache) > 1024:
            self._names_cache.clear()
        self._names_cache[id(table)] = (table, known)
        return known

    def feed(self, event: Event, position: FilePos | None = None) -> list[Change]:
        """Changes carried by ``event`` (empty for non-row events).

        Args:
            event: the next event of the stream.
            position: where ``event`` starts. A caller that never gives one has it
                derived from the headers and the last ROTATE (every event must then
                be fed); once one is given, the caller places the row and query
                events.
        """
        tracker = self._transactions
        if not self._derive:  # the caller places row and query events (a file reader)
            if isinstance(event, RowsEvent):
                return self.rows(event, position, tracker.gtid)
            tracker.observe(event)
            if type(event) is QueryEvent:
                return self.statement(event, position, tracker.gtid)
            return []
        if position is None:
            # Where it starts: its end (log_pos) less its size; where the previous
            # event ended when log_pos is 0 (MariaDB 11.4+ inside a transaction), as
            # the stream's tracker places it; the file is the last ROTATE's (no
            # position before one names it).
            header = event.header
            file, start, _end, _countable, _boundary = tracker.step(header, event)
            if file and isinstance(event, RowsEvent | QueryEvent):
                log_pos = header[4]
                position = self._position(file, max(log_pos - header[3], 0) if log_pos else start)
        else:
            self._derive = False  # from here on the caller places events
            if not isinstance(event, RowsEvent):
                tracker.observe(event)
        if isinstance(event, RowsEvent):
            return self.rows(event, position, tracker.gtid)
        if type(event) is QueryEvent:
            return self.statement(event, position, tracker.gtid)
        return []

    def statement(
        self, event: QueryEvent, position: FilePos | None, gtid: str | None
    ) -> list[Change]:
        """What a QueryEvent of transaction ``gtid`` at ``position`` gives: nothing, unless
        its statement changes rows of a selected table (then a change with
        ``op="statement"``, or :class:`StatementLoggedError`: see the module docstring).

        Raises:
            StatementLoggedError: rows were changed by a statement logged as SQL text
                (``statements="error"``).
        """
        from .schema.statements import StatementKind, classify, written_tables

        if classify(event.query) is not StatementKind.ROWS:
            return []
        targets = written_tables(event.query, event.schema)
        match = self._tables
        if targets is not None and match is not None:
            targets = tuple(t for t in targets if match(*t))
            if not targets:
                return []
        names = tuple(f"{s}.{t}" for s, t in targets or ())
        if self._statements == "error":
            extra = {} if self._remedy is None else {"remedy": self._remedy}
            raise StatementLoggedError(
                event.query,
                schema=event.schema,
                tables=names,
                position=str(position) if position is not None else "",
                gtid=gtid,
                binlog_format=self._binlog_format,
                **extra,
            )
        one = targets[0] if targets is not None and len(targets) == 1 else None
        return [
            _new_change(
                "statement",
                one[0] if one else event.schema,
                one[1] if one else "",
                None,
                None,
                gtid,
                position,
                dt.datetime.fromtimestamp(event.header[0], dt.UTC),
                0,
                (),
                event.header[2],
                event.query,
            )
        ]

    def rows(self, event: RowsEvent, position: FilePos | None, gtid: str | None) -> list[Change]:
        """The changes of one rows event of transaction ``gtid``, which starts at ``position``.

        For a caller that follows transactions itself (a stream's delivery does);
        :meth:`feed` is this with the builder's own tracking.
        """
        kind = _KINDS.get(type(event))
        if kind is None:
            kind = next((k for c, k in _KINDS.items() if isinstance(event, c)), None)
            if kind is None:
                return []
        op, slots = kind
        table = event.table
        if self._column_names is not None:
            known = self._schema_for(table)
            if known is not table:
                event = retype_rows(event, known)
                table = known
        columns = table.columns
        cached = self._layouts.known.get(id(columns))
        if cached is not None and cached[0] is columns and cached[1] == table.primary_key:
            names, pk, _ = cached[2]
        else:
            names, pk, _ = self._layouts.of(table)
        header = event.header
        ts = self._time
        if header[0] != self._timestamp:
            ts = self._time = dt.datetime.fromtimestamp(header[0], dt.UTC)
            self._timestamp = header[0]
        fields = (
            op,
            table.schema,
            table.table,
            None,
            None,
            gtid,
            position,
            ts,
            0,
            pk,
            header[2],
            None,
        )
        rows = event.rows  # type: ignore[attr-defined]  # one of _KINDS' classes
        return row_changes(_new_change, names, rows, MISSING, fields, slots)


#: Change(...) with every field, without the generated __init__ (see accel.constructor).
_new_change: Final = constructor(Change)


def changes_rows(event: QueryEvent) -> bool:
    """True when ``event``'s statement may change rows (it is not DDL nor a
    transaction's BEGIN/COMMIT): a consumer of changes is to see it."""
    from .schema.statements import StatementKind, classify

    return classify(event.query) is StatementKind.ROWS


def iter_changes(
    events: Iterable[Event],
    *,
    column_names: ColumnNames | None = None,
    statements: Statements = "error",
    tables: TableFilter | None = None,
) -> Iterator[Change]:
    """Yield one :class:`Change` per row of the row events in ``events``.

    ``events`` is typically a file reader (``open_binlog``) or a list of
    events. When it exposes ``event_position`` (the file reader does), each
    change's ``position`` is exact; otherwise it is derived from the headers.
    A file reader's table filter (``open_binlog(tables=...)``) also says which
    statements logged as SQL text concern the caller (``tables`` for other
    sources); see ``statements`` in the module docstring.

    Raises:
        StatementLoggedError: a statement logged as SQL text changed rows of a
            selected table (``statements="error"``).
    """
    if tables is None:
        options = getattr(events, "options", None)
        tables = getattr(options, "tables", None)
    builder = ChangeBuilder(column_names, statements=statements, tables=tables)
    feed = builder.feed
    has_pos = hasattr(events, "event_position")
    for event in events:
        # Only row and query events need a position; other events cost no FilePos.
        if has_pos and isinstance(event, (RowsEvent, QueryEvent)):
            yield from feed(event, getattr(events, "event_position", None))
        else:
            yield from feed(event)
