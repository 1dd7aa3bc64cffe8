"""TABLE_MAP bindings and the rows events decoded through them. No I/O.

The entries of the dispatch table for TABLE_MAP_EVENT (19) and every rows
event: v1 (23-25, MariaDB 10.x and MySQL 5.1-5.5), v2 (30-32, MySQL 5.6+ and
MariaDB 11.x), MySQL's PARTIAL_UPDATE_ROWS_EVENT (39, partial JSON updates),
the pre-GA 5.1 PRE_GA_*_ROWS (20-22), and MariaDB's compressed rows events
(166-171, which ``EventDecoder`` uncompresses into their plain twin first).
Unlike the other body decoders they need state: the TABLE_MAPs of the running
statement. They get it explicitly: each is called as
``fn(maps, fmt, header, view, pos, end)`` with the decoder's
:class:`TableMaps`.

A TABLE_MAP binds a table id to a table definition (``table_map.py``); the
rows events of the statement that follow refer to it by id, and the last one
(flag STMT_END) ends the binding. The definition is compiled once into a
:class:`~.row_decoders.RowDecoder` (cached by its bytes, since every transaction
repeats its TABLE_MAPs); rows of tables the ``tables`` option excludes are
never decoded. Layouts: MariaDB KB "ROWS_EVENT_V1/V2", MySQL
``libs/mysql/binlog/event/rows_event.cpp`` and ``sql/rpl_record.cc``
(``unpack_row``), ``sql/log_event_old.cc`` for the pre-GA events.
"""

from __future__ import annotations

import struct
from collections.abc import Callable
from dataclasses import fields, replace
from operator import attrgetter
from typing import Any, Final, Protocol

from ..accel import constructor
from ..codec import U48, need, read_lenenc_int, u16, u32
from ..config import DecoderOptions
from ..errors import LimitExceededError, MalformedEventError
from .constants import ColumnType, EventType, RowsFlag
from .events import (
    MISSING,
    DeleteRowsEvent,
    Event,
    PartialJson,
    PartialUpdateRowsEvent,
    QueryEvent,
    RawRowsEvent,
    Row,
    TableMapEvent,
    UpdateRowsEvent,
    WriteRowsEvent,
)
from .format import BinlogFormat
from .header import EventHeader
from .json_binary import JsonDiff, apply_json_diffs, decode_json_diff
from .row_decoders import RowDecoder, RowDecoderCache, check_width
from .table_map import decode_table_map

__all__ = [
    "ROWS_EVENT_TYPES",
    "TableDefinitions",
    "TableMaps",
    "decode_old_rows",
    "decode_rows",
    "decode_table_map_event",
]

E = EventType
_TABLE_MAP: Final = int(E.TABLE_MAP_EVENT)
_STMT_END: Final = int(RowsFlag.STMT_END)
_ID48_FLAGS: Final = struct.Struct("<IHH")  # table id (u48 as u32 + u16), flags u16
_PARTIAL_JSON_UPDATES: Final = 1  # value_options bit of PARTIAL_UPDATE_ROWS_EVENT

_WRITE, _UPDATE, _DELETE, _PARTIAL = 0, 1, 2, 3
_PRE_GA_WRITE, _PRE_GA_UPDATE, _PRE_GA_DELETE = 10, 11, 12
#: Rows event type -> (v2 post-header with extra data, kind).
_ROWS_KINDS: Final[dict[int, tuple[bool, int]]] = {
    E.WRITE_ROWS_EVENT_V1: (False, _WRITE),
    E.UPDATE_ROWS_EVENT_V1: (False, _UPDATE),
    E.DELETE_ROWS_EVENT_V1: (False, _DELETE),
    E.WRITE_ROWS_EVENT: (True, _WRITE),
    E.UPDATE_ROWS_EVENT: (True, _UPDATE),
    E.DELETE_ROWS_EVENT: (True, _DELETE),
    E.PARTIAL_UPDATE_ROWS_EVENT: (True, _PARTIAL),
    E.PRE_GA_WRITE_ROWS_EVENT: (False, _PRE_GA_WRITE),
    E.PRE_GA_UPDATE_ROWS_EVENT: (False, _PRE_GA_UPDATE),
    E.PRE_GA_DELETE_ROWS_EVENT: (False, _PRE_GA_DELETE),
    # MariaDB's compressed rows events, uncompressed, under their own header
    E.WRITE_ROWS_COMPRESSED_EVENT_V1: (False, _WRITE),
    E.UPDATE_ROWS_COMPRESSED_EVENT_V1: (False, _UPDATE),
    E.DELETE_ROWS_COMPRESSED_EVENT_V1: (False, _DELETE),
    E.WRITE_ROWS_COMPRESSED_EVENT: (True, _WRITE),
    E.UPDATE_ROWS_COMPRESSED_EVENT: (True, _UPDATE),
    E.DELETE_ROWS_COMPRESSED_EVENT: (True, _DELETE),
}
#: The plain rows event types (the compressed ones reach decode_rows uncompressed).
ROWS_EVENT_TYPES: Final = frozenset(c for c in _ROWS_KINDS if c < E.ANNOTATE_ROWS_EVENT)

# Frozen slotted events built field by field without their generated __init__.
_new_table_map: Final = constructor(TableMapEvent)
_new_write_rows: Final = constructor(WriteRowsEvent)
_new_update_rows: Final = constructor(UpdateRowsEvent)
_new_delete_rows: Final = constructor(DeleteRowsEvent)
# TableMapEvent fields after (header, table_id): a seen TABLE_MAP is rebuilt
# positionally, without dataclasses.replace's per-call field introspection.
_TM_FIELDS: Final = fields(TableMapEvent)
_TM_FAST: Final = all(f.init for f in _TM_FIELDS) and [f.name for f in _TM_FIELDS[:2]] == [
    "header",
    "table_id",
]
_tm_rest: Final = attrgetter(*(f.name for f in _TM_FIELDS[2:]))


class TableDefinitions(Protocol):
    """What the binlog does not say about tables, kept outside the decoder (a schema
    history, :class:`replica_client.schema.SchemaTracker`): consulted once per
    TABLE_MAP of a table the filter keeps, never per row."""

    def table_map(self, tm: TableMapEvent, definition: bytes) -> tuple[TableMapEvent, bytes]:
        """``tm`` completed (names, signedness, charsets, labels, SQL types) and the key
        its row decoder is cached under (``definition``: the TABLE_MAP's bytes after
        the table id); raises a ``ReplicaError`` when it cannot be completed."""
        ...

    def query(self, event: QueryEvent) -> None:
        """Every QueryEvent decoded, in binlog order (DDL moves the definitions)."""
        ...

    @property
    def state(self) -> object:
        """The definitions after the events decoded so far, as an immutable value
        (kept with each transaction's checkpoint, for a resumed stream)."""
        ...


class TableMaps:
    """The TABLE_MAPs of the running statement and the row decoders compiled for them.

    Attributes:
        by_id: table id -> (its TABLE_MAP, its row decoder, or None when the
            ``tables`` option excludes the table).
        decoders: compiled row decoders, by TABLE_MAP definition.
        definitions: what completes a TABLE_MAP the binlog leaves incomplete (None:
            the TABLE_MAP as it is).
    """

    __slots__ = (
        "by_id",
        "completed",
        "decode_rows",
        "decoders",
        "definitions",
        "filter",
        "limit",
        "raw",
    )

    def __init__(
        self, options: DecoderOptions, definitions: TableDefinitions | None = None
    ) -> None:
        self.by_id: dict[int, tuple[TableMapEvent, RowDecoder | None]] = {}
        self.decoders = RowDecoderCache(options.table_map_cache_size)
        self.filter = options.tables if options.tables else None
        #: Most TABLE_MAPs one statement may bind.
        self.limit = options.table_map_cache_size
        self.decode_rows = options.decode_rows
        self.definitions = definitions
        #: With ``definitions``: TABLE_MAPs as the binlog has them, by definition bytes.
        self.raw: dict[bytes, TableMapEvent] = {}
        #: With ``definitions``: definition bytes -> (the definitions' state it was
        #: completed in, the binlog layout, its row decoder or None when filtered out):
        #: a repeat while both are the same binds that decoder without asking again.
        self.completed: dict[bytes, tuple[object, int, RowDecoder | None]] = {}

    def clear(self) -> None:
        """Forget the statement's bindings (its end, a new file, a new FDE)."""
        self.by_id.clear()

    def get(self, table_id: int) -> TableMapEvent | None:
        """The TABLE_MAP bound to ``table_id``, if any."""
        entry = self.by_id.get(table_id)
        return entry[0] if entry is not None else None


def _table_id(view: memoryview, pos: int, phl: int) -> int:
    """The table id of a TABLE_MAP's post-header (u32 when it is 6 bytes, else u48)."""
    if phl == 6:
        return u32(view, pos)
    if pos + 6 > len(view):
        need(view, pos, 6, "u48")  # raises
    lo, hi = U48.unpack_from(view, pos)
    table_id: int = lo | hi << 32
    return table_id


def _rebuilt(header: EventHeader, table_id: int, decoder: RowDecoder) -> TableMapEvent:
    """A repeat of the TABLE_MAP ``decoder`` was compiled for: only the header and the
    table id differ (rebuilt positionally, without dataclasses.replace's introspection)."""
    rest = decoder.table_rest
    if rest is not None:
        return _new_table_map(header, table_id, *rest)
    return replace(decoder.table, header=header, table_id=table_id)


def decode_table_map_event(
    maps: TableMaps, fmt: BinlogFormat, header: EventHeader, view: memoryview, pos: int, end: int
) -> Event | None:
    """TABLE_MAP_EVENT: binds a table id (see ``table_map.py`` for the layout).

    Returns None for a table the ``tables`` option excludes (its rows are then
    skipped undecoded).
    """
    phl = fmt.post_header_lens[_TABLE_MAP]
    # Key: the body after the table id, and what else decodes it differently.
    layout = fmt.mariadb | fmt.old_table_map << 1
    definition = view[pos + phl - 2 : end].tobytes()
    if maps.definitions is not None:
        return _completed_table_map(maps, fmt, header, view, pos, end, layout, definition)
    decoder: RowDecoder | None = maps.decoders.lookup(layout, definition)
    if decoder is not None:
        # Seen before (every transaction repeats its TABLE_MAPs): reuse the
        # decoded definition, only the header and the table id differ.
        tm = _rebuilt(header, _table_id(view, pos, phl), decoder)
        keep = True
    else:
        tm = decode_table_map(
            header, view, pos, end, phl, fmt.mariadb, old_layout=fmt.old_table_map
        )
        keep = maps.filter is None or maps.filter(tm.schema, tm.table)
        decoder = maps.decoders.get(layout, definition, tm, fmt.mariadb) if keep else None
        if decoder is not None and _TM_FAST and type(tm) is TableMapEvent:
            decoder.table_rest = _tm_rest(tm)
    by_id = maps.by_id
    if len(by_id) >= maps.limit and tm.table_id not in by_id:
        raise LimitExceededError(
            f"more than {maps.limit} TABLE_MAPs in one statement (raise table_map_cache_size)"
        )
    by_id[tm.table_id] = (tm, decoder)
    return tm if keep else None


def _completed_table_map(
    maps: TableMaps,
    fmt: BinlogFormat,
    header: EventHeader,
    view: memoryview,
    pos: int,
    end: int,
    layout: int,
    definition: bytes,
) -> Event | None:
    """:func:`decode_table_map_event` with ``maps.definitions``: the TABLE_MAP as the
    binlog has it (decoded once per definition), completed by the definitions of the
    point the binlog is at, then bound like any other."""
    phl = fmt.post_header_lens[_TABLE_MAP]
    definitions = maps.definitions
    assert definitions is not None
    state = definitions.state
    hit = maps.completed.get(definition)
    if hit is not None and hit[0] is state and hit[1] == layout and hit[2] is not None:
        # a repeat (every transaction repeats its TABLE_MAPs) under the same definitions
        decoder: RowDecoder | None = hit[2]
        assert decoder is not None
        table_id = _table_id(view, pos, phl)
        tm = _rebuilt(header, table_id, decoder)
    else:
        raw = maps.raw.get(definition)
        if raw is None:
            raw = decode_table_map(
                header, view, pos, end, phl, fmt.mariadb, old_layout=fmt.old_table_map
            )
            if len(maps.raw) >= maps.limit:
                maps.raw.clear()
            maps.raw[definition] = raw
            table_id = raw.table_id
        else:
            table_id = _table_id(view, pos, phl)
        decoder = None
        if maps.filter is None or maps.filter(raw.schema, raw.table):
            table, key = definitions.table_map(raw, definition)
            decoder = maps.decoders.lookup(layout, key)
            if decoder is None:
                decoder = maps.decoders.get(layout, key, table, fmt.mariadb)
                if _TM_FAST and type(table) is TableMapEvent:
                    decoder.table_rest = _tm_rest(table)
            tm = _rebuilt(header, table_id, decoder)
            state = definitions.state  # (completing may have taught the definitions)
        else:
            tm = replace(raw, header=header, table_id=table_id)
        if len(maps.completed) >= maps.limit:
            maps.completed.clear()
        maps.completed[definition] = (state, layout, decoder)
    by_id = maps.by_id
    if len(by_id) >= maps.limit and table_id not in by_id:
        raise LimitExceededError(
            f"more than {maps.limit} TABLE_MAPs in one statement (raise table_map_cache_size)"
        )
    by_id[table_id] = (tm, decoder)
    return tm if decoder is not None else None


def decode_rows(
    maps: TableMaps, fmt: BinlogFormat, header: EventHeader, view: memoryview, pos: int, end: int
) -> Event | None:
    """A rows event of any kind (see ``row_decoders.py`` for the layout).

    Returns None for a table the ``tables`` option excludes, a
    :class:`RawRowsEvent` when ``decode_rows`` is off.
    """
    type_code = header[1]
    v2, kind = _ROWS_KINDS[type_code]
    phl = fmt.post_header_lens[type_code]
    if phl == 6:
        table_id = u32(view, pos)
        pos += 4
        flags = u16(view, pos)
    else:
        if pos + 8 > len(view):
            need(view, pos, 8, "rows event post-header")  # raises
        lo, hi, flags = _ID48_FLAGS.unpack_from(view, pos)
        table_id = lo | hi << 32
        pos += 6
    pos += 2
    extra = b""
    if v2:
        extra_len = u16(view, pos)
        if extra_len < 2:
            raise MalformedEventError(f"rows event extra-data length {extra_len} < 2", offset=pos)
        need(view, pos, extra_len, "rows event extra data")
        extra = bytes(view[pos + 2 : pos + extra_len])
        pos += extra_len
    by_id = maps.by_id
    entry = by_id.get(table_id)
    if flags & _STMT_END:
        # The statement ends here: its TABLE_MAPs are not used again.
        by_id.clear()
    if entry is None:
        raise MalformedEventError(
            f"rows event for table id {table_id} without a preceding TABLE_MAP "
            "(the read started inside a statement?)"
        )
    table, decoder = entry
    if decoder is None:
        return None  # excluded by the table filter: rows are not decoded
    if not maps.decode_rows:
        return RawRowsEvent(header, table_id, flags, table)
    width = view[pos] if pos < end else -1
    if width < 251 and width == len(table.columns):  # the common one-byte count
        pos += 1
    else:
        width, pos = read_lenenc_int(view, pos)
        check_width(width, table)
    nbytes = (width + 7) >> 3
    if pos + nbytes > len(view):
        need(view, pos, nbytes, "columns-present bitmap")  # raises
    present = view[pos] if nbytes == 1 else int.from_bytes(view[pos : pos + nbytes], "little")
    pos += nbytes
    if kind >= _PRE_GA_WRITE:
        # PRE_GA rows (log_event_old.cc): one bitmap, raw record images.
        old_rows = decode_old_rows(decoder, view, pos, end, present, kind == _PRE_GA_UPDATE)
        if kind == _PRE_GA_UPDATE:
            return UpdateRowsEvent(
                header, table_id, flags, table, present, extra, old_rows, present
            )
        cls = WriteRowsEvent if kind == _PRE_GA_WRITE else DeleteRowsEvent
        return cls(header, table_id, flags, table, present, extra, old_rows)
    if kind in (_UPDATE, _PARTIAL):
        need(view, pos, nbytes, "columns-present bitmap (after image)")
        present_after = int.from_bytes(view[pos : pos + nbytes], "little")
        pos += nbytes
        if kind == _PARTIAL:
            return _partial_update(
                header,
                table_id,
                flags,
                table,
                decoder,
                extra,
                view,
                pos,
                end,
                present,
                present_after,
            )
        pairs = decoder.decode_update_rows(view, pos, end, present, present_after)
        return _new_update_rows(
            header, table_id, flags, table, present, extra, pairs, present_after
        )
    rows = decoder.decode_rows(view, pos, end, present)
    if kind == _WRITE:
        return _new_write_rows(header, table_id, flags, table, present, extra, rows)
    return _new_delete_rows(header, table_id, flags, table, present, extra, rows)


def _partial_update(
    header: EventHeader,
    table_id: int,
    flags: int,
    table: TableMapEvent,
    decoder: RowDecoder,
    extra: bytes,
    view: memoryview,
    pos: int,
    end: int,
    present: int,
    present_after: int,
) -> Event:
    # PARTIAL_UPDATE_ROWS_EVENT rows (MySQL rpl_record.cc, unpack_row):
    #   before-image | value_options packed | [partial_bits] | after-image
    # partial_bits: one bit per JSON column of the table (LSB first), set
    # when that column's after value is a JSON diff vector: length (as the
    # column's BLOB length bytes) | diffs (json_binary.decode_json_diff).
    json_cols = [c.index for c in table.columns if c.type == ColumnType.JSON]
    nbits = len(json_cols)
    pairs: list[tuple[Row, Row]] = []
    all_diffs: list[dict[int, tuple[JsonDiff, ...]]] = []
    readers = decoder.readers
    while pos < end:
        before, pos = decoder.decode_image(view, pos, present)
        options, pos = read_lenenc_int(view, pos, end)
        partial: list[int] = []
        if options & _PARTIAL_JSON_UPDATES:
            nb = (nbits + 7) >> 3
            need(view, pos, nb, "partial-JSON bitmap")
            bits = int.from_bytes(view[pos : pos + nb], "little")
            pos += nb
            partial = [c for i, c in enumerate(json_cols) if (bits >> i) & 1]
        if partial:
            patched = list(readers)
            for c in partial:
                patched[c] = _diff_reader(table.columns[c].meta)
            after, pos = decoder.decode_image_with(view, pos, present_after, tuple(patched))
            values = list(after)
            diffs: dict[int, tuple[JsonDiff, ...]] = {}
            for c in partial:
                value = values[c]
                if not isinstance(value, PartialJson):
                    continue  # NULL or absent: nothing was diffed
                diffs[c] = value.diffs
                base = before[c]
                if base is not MISSING:
                    values[c] = apply_json_diffs(base, value.diffs)
            after = tuple(values)
            all_diffs.append(diffs)
        else:
            after, pos = decoder.decode_image(view, pos, present_after)
            all_diffs.append({})
        pairs.append((before, after))
    if pos != end:
        raise MalformedEventError(f"row images overrun the event by {pos - end} bytes", offset=end)
    return PartialUpdateRowsEvent(
        header,
        table_id,
        flags,
        table,
        present,
        extra,
        tuple(pairs),
        present_after,
        tuple(all_diffs),
    )


def _diff_reader(meta: int) -> Callable[[memoryview, int], tuple[Any, int]]:
    """Reads a partial JSON value: length (meta bytes) | JSON diff vector."""
    if meta not in (1, 2, 3, 4):
        raise MalformedEventError(f"JSON length size {meta} not in 1..4")

    def read(view: memoryview, pos: int) -> tuple[Any, int]:
        need(view, pos, meta, "JSON diff length")
        n = int.from_bytes(view[pos : pos + meta], "little")
        start = pos + meta
        need(view, start, n, "JSON diff vector")
        return PartialJson(tuple(decode_json_diff(view[start : start + n]))), start + n

    return read


def decode_old_rows(
    decoder: RowDecoder, view: memoryview, pos: int, end: int, present: int, update: bool
) -> tuple[Row, ...] | tuple[tuple[Row, Row], ...]:
    """Row images of PRE_GA_*_ROWS events (``log_event_old.cc``, ``unpack_row_old``).

    Each image is the table's record null bytes followed by every column of
    ``present`` packed with ``Field::pack`` (NULL columns carry their default
    value too). The pre-GA TABLE_MAP says nothing about nullability, so the
    null bits are read with the layout of the era's default table: bit 0 is
    the record's "deleted" marker and column i's null bit is bit i + 1.
    UPDATE events hold before/after pairs with the same column set.
    """
    ncols = decoder.ncols
    null_len = (ncols + 8) >> 3
    readers = decoder.readers
    rows: list[Row] = []
    while pos < end:
        need(view, pos, null_len, "record null bytes")
        nulls = int.from_bytes(view[pos : pos + null_len], "little") >> 1
        pos += null_len
        values: list[Any] = []
        bits = present
        for read in readers:
            if bits & 1:
                value, pos = read(view, pos)
                values.append(None if nulls & 1 else value)
            else:
                values.append(MISSING)
            bits >>= 1
            nulls >>= 1
        rows.append(tuple(values))
    if pos != end:
        raise MalformedEventError(f"row images overrun the event by {pos - end} bytes", offset=end)
    if not update:
        return tuple(rows)
    if len(rows) % 2:
        raise MalformedEventError("PRE_GA update event with an odd number of row images")
    return tuple((rows[i], rows[i + 1]) for i in range(0, len(rows), 2))
