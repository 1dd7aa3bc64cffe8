"""Row-image decoding, compiled once per table definition. No I/O.

Rows event layout (MariaDB KB "ROWS_EVENT_V1/V2"; ``Rows_log_event``):

    post-header: table_id u48 (u32 if the post-header is 6 bytes) | flags u16
                 [v2: extra_len u16 (counts itself) | extra data]
    body:        width packed | columns_present ((width + 7) / 8 bytes)
                 [UPDATE: columns_present_after]
                 rows: image [after-image]; each image is
                       null bitmap over the *present* columns | values of the
                       present, non-NULL columns (see columns.py)

A column absent from an image (``binlog_row_image=MINIMAL``/``NOBLOB``) is
:data:`MISSING`; SQL NULL is ``None``.
"""

from __future__ import annotations

from collections import OrderedDict
from typing import Any

from ..errors import MalformedEventError
from .columns import ColumnReader, reader_for
from .events import MISSING, Row, TableMapEvent
from .row_plans import RowPlan, compile_plan

__all__ = ["RowDecoder", "RowDecoderCache", "check_width"]


class RowDecoder:
    """Decodes row images of one table definition; built once, used for every row."""

    __slots__ = ("_all", "_null_len", "_plan", "ncols", "readers", "table", "table_rest")

    def __init__(self, table: TableMapEvent, mariadb: bool = True) -> None:
        self.table = table
        #: ``table``'s fields after (header, table_id), set by the decoder that
        #: rebuilds repeated TABLE_MAPs from them.
        self.table_rest: tuple[Any, ...] | None = None
        self.readers: tuple[ColumnReader, ...] = tuple(
            reader_for(c, mariadb) for c in table.columns
        )
        self.ncols = len(self.readers)
        self._all = (1 << self.ncols) - 1
        self._null_len = (self.ncols + 7) >> 3
        # The compiled accelerator's decoder, when it is built (row_plans.py).
        self._plan: RowPlan | None = compile_plan(table.columns, self.readers)

    def _null_bytes(self, present: int) -> int:
        return self._null_len if present == self._all else (present.bit_count() + 7) >> 3

    def decode_image(self, view: memoryview, pos: int, present: int) -> tuple[Row, int]:
        """Decode one row image at ``pos``; return (values, next position)."""
        if self._plan is not None:
            return self._plan.decode_image(view, pos, present, self._null_bytes(present))
        if present == self._all:
            null_len = self._null_len
            nulls = int.from_bytes(view[pos : pos + null_len], "little")
            pos += null_len
            values: list[Any] = []
            append = values.append
            if not nulls:
                for read in self.readers:
                    value, pos = read(view, pos)
                    append(value)
                return tuple(values), pos
            for read in self.readers:
                if nulls & 1:
                    append(None)
                else:
                    value, pos = read(view, pos)
                    append(value)
                nulls >>= 1
            return tuple(values), pos
        return self._decode_partial(view, pos, present)

    def _decode_partial(self, view: memoryview, pos: int, present: int) -> tuple[Row, int]:
        return self.decode_image_with(view, pos, present, self.readers)

    def decode_image_with(
        self, view: memoryview, pos: int, present: int, readers: tuple[ColumnReader, ...]
    ) -> tuple[Row, int]:
        """Decode one image with other readers (PARTIAL_UPDATE_ROWS' JSON diffs)."""
        null_len = (present.bit_count() + 7) >> 3
        nulls = int.from_bytes(view[pos : pos + null_len], "little")
        pos += null_len
        values: list[Any] = []
        append = values.append
        for read in readers:
            if not present & 1:
                append(MISSING)
            elif nulls & 1:
                append(None)
                nulls >>= 1
            else:
                value, pos = read(view, pos)
                append(value)
                nulls >>= 1
            present >>= 1
        return tuple(values), pos

    def decode_rows(self, view: memoryview, pos: int, end: int, present: int) -> tuple[Row, ...]:
        """All row images of a WRITE or DELETE event body."""
        if not present and pos < end:
            raise _no_columns(pos)
        if self._plan is not None:
            images, pos = self._plan.decode_rows(view, pos, end, present, self._null_bytes(present))
            if pos != end:
                raise MalformedEventError(
                    f"row images overrun the event by {pos - end} bytes", offset=end
                )
            return images
        rows: list[Row] = []
        decode = self.decode_image
        while pos < end:
            row, pos = decode(view, pos, present)
            rows.append(row)
        if pos != end:
            raise MalformedEventError(
                f"row images overrun the event by {pos - end} bytes", offset=end
            )
        return tuple(rows)

    def decode_update_rows(
        self, view: memoryview, pos: int, end: int, present: int, present_after: int
    ) -> tuple[tuple[Row, Row], ...]:
        """All (before, after) pairs of an UPDATE event body."""
        if not present and not present_after and pos < end:
            raise _no_columns(pos)
        if self._plan is not None:
            pairs, pos = self._plan.decode_update_rows(
                view,
                pos,
                end,
                present,
                self._null_bytes(present),
                present_after,
                self._null_bytes(present_after),
            )
            if pos != end:
                raise MalformedEventError(
                    f"row images overrun the event by {pos - end} bytes", offset=end
                )
            return pairs
        rows: list[tuple[Row, Row]] = []
        decode = self.decode_image
        while pos < end:
            before, pos = decode(view, pos, present)
            after, pos = decode(view, pos, present_after)
            rows.append((before, after))
        if pos != end:
            raise MalformedEventError(
                f"row images overrun the event by {pos - end} bytes", offset=end
            )
        return tuple(rows)


def _no_columns(pos: int) -> MalformedEventError:
    # An image of no columns is zero bytes long: without this check the row
    # loop would never advance.
    return MalformedEventError("rows event with row data but no column present", offset=pos)


class RowDecoderCache:
    """TABLE_MAPs repeat in every transaction: compile each distinct definition once.

    Keyed by the TABLE_MAP body without its table id (schema, table, types,
    metadata, null bitmap, optional metadata), least recently used first out.
    A definition decodes differently by ``layout`` (the binlog's flavour and
    TABLE_MAP layout); the cache holds one layout's decoders at a time.
    """

    __slots__ = ("_by_definition", "_layout", "_max_size")

    def __init__(self, max_size: int = 4096) -> None:
        self._by_definition: OrderedDict[bytes, RowDecoder] = OrderedDict()
        self._max_size = max_size
        self._layout = -1

    def lookup(self, layout: int, definition: bytes) -> RowDecoder | None:
        """The decoder compiled for ``definition`` in ``layout``, if any (its
        ``table`` is the TABLE_MAP it was compiled from)."""
        if self._switched(layout):
            return None
        decoder = self._by_definition.get(definition)
        if decoder is not None:
            self._by_definition.move_to_end(definition)
        return decoder

    def get(
        self, layout: int, definition: bytes, table: TableMapEvent, mariadb: bool = True
    ) -> RowDecoder:
        """The decoder for ``definition`` (``table`` decoded from it), compiled if new."""
        cache = self._by_definition
        self._switched(layout)
        decoder = cache.get(definition)
        if decoder is None:
            decoder = RowDecoder(table, mariadb)
            cache[definition] = decoder
            if len(cache) > self._max_size:
                cache.popitem(last=False)
        else:
            cache.move_to_end(definition)
        return decoder

    def _switched(self, layout: int) -> bool:
        """Hold ``layout``'s decoders from now on; True when it drops another's."""
        if layout == self._layout:
            return False
        self._by_definition.clear()
        self._layout = layout
        return True

    def __len__(self) -> int:
        return len(self._by_definition)


def check_width(width: int, table: TableMapEvent) -> None:
    """A rows event must describe the same number of columns as its TABLE_MAP."""
    if width != len(table.columns):
        raise MalformedEventError(
            f"rows event has {width} columns but the TABLE_MAP for "
            f"{table.schema}.{table.table} has {len(table.columns)}"
        )
