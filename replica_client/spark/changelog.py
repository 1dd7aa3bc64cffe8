"""The changelog rows the Spark source produces, built as Arrow record batches.

Executor side, no pyspark import: row events in, ``pyarrow.RecordBatch`` out,
one row per changed table row. The columns (the Spark schema is built from
:data:`FIELDS` in :mod:`replica_client.spark.source`):

=========  =========  ==========================================================
op         string     ``c`` insert, ``u`` update, ``d`` delete, ``r`` a row read
                      by ``startingPosition=snapshot`` (see ``spark/snapshot.py``)
db         string     schema (database) of the table
table      string     table name
before     string     JSON object of the row before the change (null for ``c``)
after      string     JSON object of the row after the change (null for ``d``)
pk         string     JSON object of the primary-key columns and their values
                      (from ``after``, or ``before`` for deletes); null when the
                      binlog names no primary key (needs binlog_row_metadata=FULL)
gtid       string     the transaction's GTID (``domain-server-seq``)
server_id  bigint     server id of the primary that wrote the event
file       string     binlog file of the rows event
pos        bigint     start position of the rows event in ``file``
row_index  int        index of the row inside its rows event
commit_ts  timestamp  the primary's timestamp of the rows event (seconds, UTC)
seq        bigint     ``file_number * 2**32 + pos + row_index``: increases with
                      every row in binlog order, the same in stream and batch;
                      for ``r`` rows the seq of their read point (shared by the
                      rows read there, below every later change's)
=========  =========  ==========================================================

Why ``seq`` is unique and ordered: a rows event of ``S`` bytes holds fewer
than ``S`` rows (every row image takes at least one byte), so ``pos +
row_index`` stays below the next event's ``pos``; positions are below 2**32
(``log_pos`` is 32 bits). The order follows the numeric file extension;
``RESET MASTER`` starts it again.

Row images are JSON text made with :mod:`replica_client.jsonvalues` (Decimal
as string, bytes as base64, dates and times ISO ...), so one schema fits
every table and every Spark version: use ``parse_json(after)`` for a VARIANT
or ``from_json(after, schema)`` for a struct.
"""

from __future__ import annotations

import base64
import datetime as dt
import json
import struct
import sys
from array import array
from collections.abc import Callable, Iterable, Iterator
from decimal import Decimal
from typing import Any, Final, cast

import pyarrow as pa

from ..accel import speedups
from ..binlog.events import (
    MISSING,
    DeleteRowsEvent,
    RowsEvent,
    UpdateRowsEvent,
    WriteRowsEvent,
)
from ..changes import TableLayouts, row_image
from ..jsonvalues import decimal_text, json_value, set_labels, time_text
from ..position import binlog_file_order

__all__ = [
    "ARROW_SCHEMA",
    "BATCH_ROWS",
    "FIELDS",
    "ChangelogBuilder",
    "file_number",
    "images_json",
    "pk_texts",
    "sequence",
]

#: (name, Spark type name, nullable) of every column, in order.
FIELDS: Final[tuple[tuple[str, str, bool], ...]] = (
    ("op", "string", False),
    ("db", "string", False),
    ("table", "string", False),
    ("before", "string", True),
    ("after", "string", True),
    ("pk", "string", True),
    ("gtid", "string", True),
    ("server_id", "bigint", False),
    ("file", "string", False),
    ("pos", "bigint", False),
    ("row_index", "int", False),
    ("commit_ts", "timestamp", False),
    ("seq", "bigint", False),
)

_ARROW_TYPES: Final = {
    "string": pa.string(),
    "bigint": pa.int64(),
    "int": pa.int32(),
    "timestamp": pa.timestamp("us", tz="UTC"),
}

#: The Arrow form of the schema, as Spark expects it from ``read()``.
ARROW_SCHEMA: Final = pa.schema(
    [pa.field(name, _ARROW_TYPES[kind], nullable=null) for name, kind, null in FIELDS]
)

#: Rows per record batch handed to Spark.
BATCH_ROWS: Final = 8192
#: Bytes of JSON text in one column at which a batch is handed over before
#: BATCH_ROWS (Arrow's string offsets are int32).
BATCH_TEXT_BYTES: Final = 1 << 28

_NEEDS_WALK: Final = (tuple, list, dict, set, frozenset)


def _base64(value: bytes) -> str:
    return base64.b64encode(value).decode("ascii")


#: Exact types -> their JSON form (the same as ``jsonvalues.json_value``, without
#: its chain of isinstance checks); anything else goes to ``json_value``.
_FAST_DEFAULT: Final[dict[type, Callable[[Any], Any]]] = {
    Decimal: decimal_text,
    dt.datetime: dt.datetime.isoformat,
    dt.date: dt.date.isoformat,
    bytes: _base64,
    dt.timedelta: time_text,
    frozenset: set_labels,
}


def _default(value: Any) -> Any:
    fn = _FAST_DEFAULT.get(type(value))
    return fn(value) if fn is not None else json_value(value)


def _make_encoder() -> Callable[[Any], str]:
    """Compact JSON text of a value; ``default`` gives the JSON forms of jsonvalues.

    ``JSONEncoder.encode`` sets up a C encoder on every call; here it is set up
    once (a third of the JSON time on row images), with the pure-Python
    encoder as the fallback where the C one is missing.
    """
    encoder = json.JSONEncoder(ensure_ascii=False, separators=(",", ":"), default=_default)
    c_make = getattr(json.encoder, "c_make_encoder", None)
    if c_make is None:  # pragma: no cover - CPython always has it
        return encoder.encode
    try:
        chunks = c_make(
            None, _default, json.encoder.encode_basestring, None, ":", ",", False, False, True
        )
        chunks({"probe": [1, "x"]}, 0)
    except TypeError:  # pragma: no cover - another signature
        return encoder.encode
    join = "".join

    def encode(value: Any) -> str:
        return join(chunks(value, 0))

    return encode


_encode: Final = _make_encoder()


def file_number(name: str) -> int:
    """The numeric extension of a binlog file name (``mysql-bin.000042`` -> 42; 0 for a
    name without one), as the project's file order (``binlog_file_order``) reads it."""
    _, number, other = binlog_file_order(name)
    return 0 if other else number


def sequence(file: str, pos: int, row_index: int) -> int:
    """The ``seq`` column: ``file_number * 2**32 + pos + row_index``."""
    return (file_number(file) << 32) + pos + row_index


def _image(names: tuple[str, ...], row: tuple[Any, ...], full: bool = False) -> dict[str, Any]:
    # ``full``: the event's columns_present says no column is missing (no scan)
    return dict(zip(names, row, strict=False)) if full else row_image(names, row)


def _json(image: dict[str, Any]) -> str:
    # The C encoder writes NamedTuples (InvalidDate, Geometry) as arrays and
    # never calls ``default`` for containers: convert those values first.
    for value in image.values():
        if isinstance(value, _NEEDS_WALK):
            return _encode({k: json_value(v) for k, v in image.items()})
    return _encode(image)


_sp = speedups()
#: The accelerator's writer of image texts (csrc/jsontext.c): the text of ``_json``
#: for images of None, bool, int, float and str values, and of values whose
#: ``_default`` form is one of those (it calls ``_FAST_DEFAULT``'s function or
#: ``json_value`` as ``_default`` does); None for the images it leaves to ``_json``.
_c_json_images: Final = _sp.json_images if _sp is not None else None
_quote: Final = json.encoder.encode_basestring


def images_json(
    names: tuple[str, ...],
    rows: tuple[Any, ...],
    side: int,
    full: bool,
    columns: tuple[int, ...] | None = None,
) -> list[str]:
    """The JSON text of every row's image: ``side`` -1, the row is the image; 0 or 1,
    the image is ``row[side]`` of a (before, after) pair. ``full``: no column missing.
    ``columns``: only these columns, in this order (None: every column)."""
    if _c_json_images is not None:
        texts: list[str | None] = _c_json_images(
            names, rows, side, MISSING, _FAST_DEFAULT, json_value, _quote, columns
        )
        if None not in texts:
            return cast("list[str]", texts)
        return [
            text if text is not None else _image_json(names, row, side, full, columns)
            for text, row in zip(texts, rows, strict=True)
        ]
    return [_image_json(names, row, side, full, columns) for row in rows]


def _image_json(
    names: tuple[str, ...],
    row: tuple[Any, ...],
    side: int,
    full: bool,
    columns: tuple[int, ...] | None,
) -> str:
    image = row if side < 0 else row[side]
    if columns is None:
        return _json(_image(names, image, full))
    n = len(image)
    return _json({names[i]: image[i] for i in columns if i < n and image[i] is not MISSING})


def pk_texts(
    pk: tuple[int, ...], names: tuple[str, ...], rows: tuple[Any, ...], side: int
) -> list[str | None]:
    """The ``pk`` column of every row (``side`` as for :func:`images_json`): JSON of its
    primary-key columns, None without a key."""
    if not pk:
        return [None] * len(rows)
    return cast("list[str | None]", images_json(names, rows, side, False, pk))


_PK_PREFIXES: dict[str, str] = {}


def _pk_prefix(name: str) -> str:
    prefix = _PK_PREFIXES.get(name)
    if prefix is None:
        if len(_PK_PREFIXES) > 4096:
            _PK_PREFIXES.clear()
        prefix = _PK_PREFIXES[name] = "{" + json.encoder.encode_basestring(name) + ":"
    return prefix


#: Row numbers 0, 1, 2, ... (int32) to slice a rows event's ``row_index`` from.
_NUMBERS: Final = array("i", range(1 << 16))
#: Zeros, to slice the ``seq`` offsets of snapshot rows from.
_ZEROS: Final = array("i", bytes(4 << 16))
assert _NUMBERS.itemsize == 4  # Arrow's int32

# Where in a builder's ``_events`` entry each column shared by an event's rows is.
_E_ROWS, _E_OP, _E_DB, _E_TABLE, _E_GTID, _E_SID, _E_FILE, _E_POS, _E_TS, _E_SEQ = range(10)
#: The schema's columns shared by the rows of one event: (column, place in the entry).
_SHARED: Final = (
    (0, _E_OP), (1, _E_DB), (2, _E_TABLE), (6, _E_GTID), (7, _E_SID), (8, _E_FILE),
    (9, _E_POS), (11, _E_TS),
)  # fmt: skip


def _int32s(values: array[int]) -> pa.Array:
    """An Arrow int32 array over ``values`` (an ``array("i")``; not copied)."""
    if sys.byteorder == "big":  # Arrow's buffers are little-endian
        values = array("i", values)
        values.byteswap()
    return pa.Array.from_buffers(pa.int32(), len(values), [None, pa.py_buffer(values)])


#: The accelerator's writer of a string column's buffers (csrc/jsontext.c): the
#: texts of ``json_images``, with ``_image_json`` where it gives None.
_c_json_column: Final = _sp.json_column if _sp is not None else None
_END: Final = struct.Struct("=i")  # an end offset as _c_json_column writes it


class _Texts:
    """One string column of a record batch kept as Arrow holds it: the UTF-8
    bytes of its texts and their int32 end offsets (native order). A text is a
    JSON object, never empty; a NULL row holds no bytes. No ``str`` is kept
    per row."""

    __slots__ = ("data", "ends")

    def __init__(self) -> None:
        self.data = bytearray()
        self.ends = bytearray(4)  # the first row's start, 0

    def images(
        self,
        names: tuple[str, ...],
        rows: tuple[Any, ...],
        side: int,
        full: bool,
        columns: tuple[int, ...] | None = None,
    ) -> None:
        """The JSON text of every row's image (as :func:`images_json` gives them)."""
        if _c_json_column is not None:
            _c_json_column(
                self.data, self.ends, names, rows, side, MISSING, _FAST_DEFAULT, json_value,
                _quote, columns, _image_json, full,
            )  # fmt: skip
        else:
            self.texts(images_json(names, rows, side, full, columns))

    def keys(
        self, pk: tuple[int, ...], names: tuple[str, ...], rows: tuple[Any, ...], side: int
    ) -> None:
        """The ``pk`` column of every row (as :func:`pk_texts` gives it; NULL rows
        without a key)."""
        if pk:
            self.images(names, rows, side, False, pk)
        else:
            self.nulls(len(rows))

    def texts(self, texts: Iterable[str]) -> None:
        """Rows of these texts."""
        data, ends = self.data, self.ends
        for text in texts:
            data += text.encode()
            ends += _END.pack(len(data))

    def nulls(self, n: int) -> None:
        """``n`` NULL rows."""
        self.ends += _END.pack(len(self.data)) * n

    def array(self) -> pa.Array:
        """The column as an Arrow string array over these buffers (not copied)."""
        import pyarrow.compute as pc  # (see ChangelogBuilder._take_arrays)

        n = len(self.ends) // 4 - 1
        ends: bytearray | array[int] = self.ends
        if sys.byteorder == "big":  # Arrow's buffers are little-endian
            ends = array("i", self.ends)
            ends.byteswap()
        offsets = pa.Array.from_buffers(pa.int32(), n + 1, [None, pa.py_buffer(ends)])
        # the rows holding text (a NULL row's end is its start)
        valid = pc.greater(offsets[1:], offsets[:-1])
        return pa.Array.from_buffers(
            pa.string(), n, [valid.buffers()[1], pa.py_buffer(ends), pa.py_buffer(self.data)]
        )


def _spread(events: list[tuple[Any, ...]]) -> tuple[pa.Array, array[int], array[int]]:
    """Per row of ``events`` (builder entries): the index of its event (as an Arrow
    int32 array, to ``take`` the events' columns with), its ``row_index``, and its
    ``seq`` minus its event's ``sequence(file, pos, 0)``."""
    owner = array("i")
    numbers = array("i")
    offsets = array("i")
    spare = len(_NUMBERS)
    for i, entry in enumerate(events):
        n = entry[_E_ROWS]
        if n == 1:
            owner.append(i)
            numbers.append(0)
            offsets.append(0)
            continue
        owner += array("i", (i,)) * n
        counted = _NUMBERS[:n] if n <= spare else array("i", range(n))
        numbers += counted
        if entry[_E_OP] != "r":  # a snapshot read's rows share its point's seq
            offsets += counted
        else:
            offsets += _ZEROS[:n] if n <= spare else array("i", bytes(4 * n))
    return _int32s(owner), numbers, offsets


class ChangelogBuilder:
    """Collects changelog rows; :meth:`take_batch` gives them as an Arrow record batch.

    The JSON texts (``before``, ``after``, ``pk``) are kept as Arrow's string
    buffers, row by row; the columns every row of a rows event shares once per
    event, and spread to the rows by Arrow when the batch is built.
    """

    __slots__ = ("_cols", "_events", "_layouts", "rows")

    def __init__(self) -> None:
        #: before, after, pk
        self._cols = (_Texts(), _Texts(), _Texts())
        #: per event (or snapshot read): its row count, then what its rows share
        self._events: list[tuple[Any, ...]] = []
        self.rows = 0
        #: names and primary key of each table definition (the change builder's rule)
        self._layouts = TableLayouts()

    def add(self, event: RowsEvent, file: str, pos: int, gtid: str | None) -> None:
        """Add the rows of one rows event that starts at ``file:pos``."""
        table = event.table
        names, _, pk = self._layouts.of(table)
        all_columns = (1 << len(names)) - 1
        full = event.columns_present & all_columns == all_columns
        c_before, c_after, c_pk = self._cols
        if isinstance(event, UpdateRowsEvent):
            pairs = event.rows
            n = len(pairs)
            full_after = event.columns_present_after & all_columns == all_columns
            c_before.images(names, pairs, 0, full)
            c_after.images(names, pairs, 1, full_after)
            c_pk.keys(pk, names, pairs, 1)
            op = "u"
        elif isinstance(event, WriteRowsEvent):
            rows = event.rows
            n = len(rows)
            c_after.images(names, rows, -1, full)
            c_pk.keys(pk, names, rows, -1)
            c_before.nulls(n)
            op = "c"
        elif isinstance(event, DeleteRowsEvent):
            rows = event.rows
            n = len(rows)
            c_before.images(names, rows, -1, full)
            c_pk.keys(pk, names, rows, -1)
            c_after.nulls(n)
            op = "d"
        else:  # pragma: no cover - every rows event is one of the three
            return
        self._add_position(event, n, file, pos, gtid, op)

    def _add_position(
        self, event: RowsEvent, n: int, file: str, pos: int, gtid: str | None, op: str
    ) -> None:
        """The columns other than the images and ``pk`` of the ``n`` rows (``op``) of
        ``event``, which starts at ``file:pos``."""
        if not n:
            return
        table = event.table
        header = event.header
        self._events.append(
            (n, op, table.schema, table.table, gtid, header.server_id, file, pos,
             header.timestamp * 1_000_000, sequence(file, pos, 0))
        )  # fmt: skip
        self.rows += n

    def add_reads(
        self,
        db: str,
        table: str,
        key: tuple[str, ...],
        rows: list[dict[str, Any]],
        file: str,
        pos: int,
        gtid: str | None,
        at: dt.datetime,
    ) -> None:
        """Add rows a snapshot read at the binlog point ``file:pos`` (GTID state ``gtid``):
        ``op`` ``r``; ``seq`` is the point's (every change after the point has a higher one)."""
        n = len(rows)
        if not n:
            return
        c_before, c_after, c_pk = self._cols
        c_after.texts(_json(row) for row in rows)
        if len(key) == 1:
            name = key[0]
            c_pk.texts(
                f"{_pk_prefix(name)}{row[name]}}}"
                if type(row[name]) is int
                else _json({name: row[name]})
                for row in rows
            )
        else:
            c_pk.texts(_json({k: row[k] for k in key}) for row in rows)
        c_before.nulls(n)
        self._events.append(
            (n, "r", db, table, gtid, 0, file, pos, int(at.timestamp() * 1_000_000),
             sequence(file, pos, 0))
        )  # fmt: skip
        self.rows += n

    def take_batch(self) -> pa.RecordBatch:
        """The rows collected so far as one record batch; the builder starts empty."""
        return pa.RecordBatch.from_arrays(self._take_arrays(), schema=ARROW_SCHEMA)

    def _take_arrays(self) -> list[pa.Array]:
        """The collected columns as Arrow arrays (typed as in ARROW_SCHEMA); empties them."""
        # (pyarrow.compute is imported here: the driver's processes build no
        # batches, and the import takes 50 ms)
        import pyarrow.compute as pc

        events = self._events
        rows = self.rows
        # what the rows of each event share, column by column
        fields = list(zip(*events, strict=True)) or [()] * (_E_SEQ + 1)
        arrays: list[pa.Array] = [None] * len(FIELDS)
        for column, place in _SHARED:
            arrays[column] = pa.array(fields[place], type=ARROW_SCHEMA.field(column).type)
        bases = pa.array(fields[_E_SEQ], type=pa.int64())
        if len(events) == rows:  # one row each (small transactions): nothing to spread
            arrays[10] = _int32s(array("i", bytes(4 * rows)))
            arrays[12] = bases
        else:
            take, numbers, offsets = _spread(events)
            for column, _ in _SHARED:
                arrays[column] = arrays[column].take(take)
            arrays[10] = _int32s(numbers)
            arrays[12] = pc.add(bases.take(take), _int32s(offsets).cast(pa.int64()))
        for column, texts in zip((3, 4, 5), self._cols, strict=True):
            arrays[column] = texts.array()
        self._cols = (_Texts(), _Texts(), _Texts())
        self._events = []
        self.rows = 0
        return arrays

    def ready(self) -> Iterator[pa.RecordBatch]:
        """A batch when at least :data:`BATCH_ROWS` rows are collected (or a column's
        text reached :data:`BATCH_TEXT_BYTES`), else nothing."""
        before, after, pk = self._cols
        if (
            self.rows >= BATCH_ROWS
            or len(before.data) >= BATCH_TEXT_BYTES
            or len(after.data) >= BATCH_TEXT_BYTES
            or len(pk.data) >= BATCH_TEXT_BYTES
        ):
            yield self.take_batch()

    def rest(self) -> Iterator[pa.RecordBatch]:
        """The remaining rows as a last batch (nothing when empty)."""
        if self.rows:
            yield self.take_batch()
