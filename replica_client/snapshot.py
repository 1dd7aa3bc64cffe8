"""Snapshot, then stream: the rules, without I/O.

A snapshot reads a table's existing rows and emits each as a ``Change`` with
``op="read"``; the stream then continues with the binlog. What makes the seam
exact is one rule per row key: a row was read at a :class:`ReadPoint` (the
binlog position and GTID state whose transactions the read includes), and a
change of that key from the binlog is delivered exactly when its transaction
comes after that point. Keys not read yet are dropped: their read, later, will
include the change.

- *consistent* mode reads every table in one transaction, at one point, and
  the stream starts there: nothing is dropped;
- *chunked* mode reads primary-key ranges in short transactions, each at its
  own point, while the stream runs; a chunk's rows are emitted once the stream
  has passed its point, and changes of keys in ranges not read yet are dropped;
- a snapshot resumed after a crash reads what is left at a new point, while
  the stream restarts from the first point: the per-key rule keeps the rows
  read before the crash and drops the stream's changes that the new read holds.

An update that moves a row from a key whose change is delivered to one whose
change is dropped (or back) is delivered as the delete (or the insert) of the
side that is delivered.

Values are typed exactly as the binlog decoder types them: text through the
decoder's own charset rules (:func:`~replica_client.binlog.columns.text_reader`),
dates through its ``InvalidDate``/``InvalidDatetime`` rules, types the binlog
does not say (UUID, INET, VECTOR) through :mod:`replica_client.schema`.
"""

from __future__ import annotations

import bisect
import datetime as dt
import ipaddress
import json
import re
import struct
import uuid
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from decimal import Decimal
from typing import Any, Final, Literal

from .binlog.columns import geometry_value, make_date, make_datetime, text_reader
from .binlog.events import JSON_NULL, InvalidDatetime
from .changes import Change
from .errors import ConfigError, SnapshotError
from .position import FilePos, Gtid, MysqlGtidSet, parse_gtid_state

__all__ = [
    "COLUMNS_SQL",
    "GEOMETRY_TYPES",
    "KEY_SQL",
    "NO_LOG_MESSAGE",
    "SESSION_SQL",
    "SYSTEM_SCHEMAS",
    "TABLES_SQL",
    "ReadPoint",
    "key_converters",
    "key_from_json",
    "key_to_json",
    "select_sql",
    "SnapshotMode",
    "SnapshotState",
    "TablePlan",
    "TableProgress",
    "ddl_tables",
    "plan_table",
]

#: "consistent": every table in one transaction; "chunked": primary-key ranges
#: in short transactions while the stream runs.
SnapshotMode = Literal["consistent", "chunked"]

_INTEGERS: Final = frozenset({"tinyint", "smallint", "mediumint", "int", "integer", "bigint"})
_TEXT: Final = frozenset(
    {"char", "varchar", "tinytext", "text", "mediumtext", "longtext", "enum", "set"}
)
_BYTES: Final = frozenset({"binary", "varbinary", "tinyblob", "blob", "mediumblob", "longblob"})
#: information_schema DATA_TYPEs of spatial columns.
GEOMETRY_TYPES: Final = frozenset(
    {
        "geometry",
        "point",
        "linestring",
        "polygon",
        "multipoint",
        "multilinestring",
        "multipolygon",
        "geometrycollection",
        "geomcollection",
    }
)
#: Key types whose Python order is the server's index order (chunking needs it).
_ORDERED_KEYS: Final = _INTEGERS | frozenset(
    {"decimal", "year", "date", "datetime", "timestamp", "binary", "varbinary"}
)
_UTC: Final = dt.UTC

#: Schemas never snapshotted unless named.
SYSTEM_SCHEMAS: Final = ("mysql", "information_schema", "performance_schema", "sys")
#: The base tables (schema, name) of the server.
TABLES_SQL: Final = (
    "SELECT TABLE_SCHEMA, TABLE_NAME FROM information_schema.TABLES "
    "WHERE TABLE_TYPE = 'BASE TABLE' ORDER BY TABLE_SCHEMA, TABLE_NAME"
)
#: (name, DATA_TYPE, COLUMN_TYPE) of a table's columns in order (schema, table as arguments).
COLUMNS_SQL: Final = (
    "SELECT COLUMN_NAME, DATA_TYPE, COLUMN_TYPE FROM information_schema.COLUMNS "
    "WHERE TABLE_SCHEMA = %s AND TABLE_NAME = %s ORDER BY ORDINAL_POSITION"
)
#: A table's primary-key column names in key order (schema, table as arguments).
KEY_SQL: Final = (
    "SELECT COLUMN_NAME FROM information_schema.KEY_COLUMN_USAGE "
    "WHERE TABLE_SCHEMA = %s AND TABLE_NAME = %s AND CONSTRAINT_NAME = 'PRIMARY' "
    "ORDER BY ORDINAL_POSITION"
)
#: The session a snapshot reads in: TIMESTAMP in UTC, raw column bytes, repeatable reads.
SESSION_SQL: Final = (
    "SET SESSION time_zone = '+00:00'",
    "SET SESSION character_set_results = NULL",
    "SET SESSION TRANSACTION ISOLATION LEVEL REPEATABLE READ",
)
NO_LOG_MESSAGE: Final = (
    "the primary has binlog_row_metadata=NO_LOG and the stream keeps no schema "
    "history (schema_history='off'): its binlog does not say signedness or "
    "character sets, so streamed values could not equal the snapshot's; keep the "
    "history (the default) or set binlog_row_metadata=MINIMAL or FULL"
)


# -- where a read stands in the binlog --------------------------------------------------------


@dataclass(frozen=True, slots=True)
class ReadPoint:
    """The binlog point a read of rows stands at: the transactions before it are in the rows.

    ``gtid`` is the GTID state at that point (None on a MySQL primary without
    GTIDs); it decides when both it and the change have one (it survives a
    failover), else ``position`` (file order, then offset) does.
    """

    position: FilePos
    gtid: Gtid | MysqlGtidSet | None = None

    def includes(self, change: Change) -> bool:
        """Whether ``change``'s transaction is already in what was read at this point."""
        if self.gtid is not None and change.gtid:
            return _gtid_in(change.gtid, self.gtid)
        if change.position is None:
            return False
        return change.position.order < self.position.order

    def passed(self, position: FilePos | None, gtid: Gtid | MysqlGtidSet | None) -> bool:
        """Whether a stream that delivered up to ``position`` / ``gtid`` has passed this point."""
        if self.gtid is not None and gtid is not None and (self.gtid or gtid):
            if isinstance(self.gtid, Gtid) and isinstance(gtid, Gtid):
                have = {t.domain: t.seq for t in gtid.triples}
                return all(have.get(t.domain, -1) >= t.seq for t in self.gtid.triples)
            if isinstance(self.gtid, MysqlGtidSet) and isinstance(gtid, MysqlGtidSet):
                return not self.gtid.missing_from(gtid)
        if position is None:
            return False
        return position.order >= self.position.order

    def to_json(self) -> dict[str, Any]:
        return {"file": self.position.file, "pos": self.position.pos, "gtid": _gtid_text(self.gtid)}

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> ReadPoint:
        gtid = data.get("gtid")
        return cls(
            FilePos(str(data["file"]), int(data["pos"])),
            None if gtid is None else parse_gtid_state(str(gtid)),
        )


def _gtid_text(gtid: Gtid | MysqlGtidSet | None) -> str | None:
    if gtid is None:
        return None
    return str(gtid)  # parse_gtid_state tells the two flavours' forms apart


def _gtid_in(gtid: str, state: Gtid | MysqlGtidSet) -> bool:
    if isinstance(state, MysqlGtidSet):
        return gtid in state
    domain, _, rest = gtid.partition("-")
    seq = rest.rpartition("-")[2]
    if not (domain.isdigit() and seq.isdigit()):
        return False
    return any(t.domain == int(domain) and t.seq >= int(seq) for t in state.triples)


# -- progress: which keys were read where -------------------------------------------------------

Key = tuple[Any, ...]


@dataclass(slots=True)
class Segment:
    """Keys ``after < key <= upto`` of a table (None: unbounded) were read at ``point``.

    Mutable: the last segment grows with every row read (a new object per row cost
    12% of the read path); ``SnapshotState.resumed_at`` hands out copies."""

    after: Key | None
    upto: Key | None
    point: ReadPoint


@dataclass(slots=True)
class TableProgress:
    """What of one table has been read: its segments in key order, and whether it is done."""

    name: str  # "schema.table"
    segments: list[Segment] = field(default_factory=list)
    done: bool = False

    @property
    def last_key(self) -> Key | None:
        """The last key read (where the next read continues), None if none."""
        return self.segments[-1].upto if self.segments else None

    def point_for(self, key: Key) -> ReadPoint | None:
        """The point ``key`` was read at; None when it is not read yet."""
        segments = self.segments
        if not segments:
            return None
        if len(segments) == 1 and segments[0].after is None:
            s = segments[0]
            return s.point if s.upto is None or _le(key, s.upto) else None
        uppers = [s.upto for s in segments]
        i = bisect.bisect_left(_Keys(uppers), key)
        return segments[i].point if i < len(segments) else None

    def read(self, after: Key | None, upto: Key | None, point: ReadPoint) -> None:
        """Record that keys in ``(after, upto]`` were read at ``point`` (extends the last one)."""
        last = self.segments[-1] if self.segments else None
        if last is not None and last.upto == after and (last.point is point or last.point == point):
            last.upto = upto
        else:
            self.segments.append(Segment(after, upto, point))


class _Keys(Sequence[Any]):
    """Segment upper bounds for bisect (None: above every key)."""

    def __init__(self, uppers: list[Key | None]) -> None:
        self._uppers = uppers

    def __len__(self) -> int:
        return len(self._uppers)

    def __getitem__(self, i: Any) -> Any:
        upto = self._uppers[i]
        return _Top if upto is None else upto


class _TopKey:
    def __lt__(self, other: object) -> bool:
        return False

    def __gt__(self, other: object) -> bool:
        return True


_Top: Final = _TopKey()


def _le(a: Key, b: Key) -> bool:
    try:
        return bool(a <= b)
    except TypeError as exc:
        raise SnapshotError(f"key {a!r} cannot be ordered against {b!r}") from exc


@dataclass(slots=True)
class SnapshotState:
    """Where a snapshot stands: its checkpoint (``stream.snapshot_state``).

    ``start`` is where the stream starts (the first read point); ``tables``
    the tables to read, in order, with what of each was read. ``to_json()`` /
    ``from_json()`` save and restore it; ``connect(snapshot=state)`` resumes.
    """

    mode: SnapshotMode
    start: ReadPoint
    tables: list[TableProgress]

    @property
    def reading(self) -> TableProgress | None:
        """The first table not read to its end, None once all are."""
        return next((t for t in self.tables if not t.done), None)

    def resumed_at(self, start: ReadPoint) -> SnapshotState:
        """A copy whose stream starts at ``start`` (where the stream has delivered up to)."""
        return SnapshotState(
            self.mode,
            start,
            [TableProgress(t.name, [replace(s) for s in t.segments], t.done) for t in self.tables],
        )

    def points(self) -> list[ReadPoint]:
        return [s.point for t in self.tables for s in t.segments]

    def to_json(self) -> str:
        return json.dumps(
            {
                "mode": self.mode,
                "start": self.start.to_json(),
                "tables": [
                    {
                        "name": t.name,
                        "done": t.done,
                        "segments": [
                            [key_to_json(s.after), key_to_json(s.upto), s.point.to_json()]
                            for s in t.segments
                        ],
                    }
                    for t in self.tables
                ],
            },
            sort_keys=True,
        )

    @classmethod
    def from_json(cls, text: str) -> SnapshotState:
        try:
            data = json.loads(text)
            mode = data["mode"]
            if mode not in ("consistent", "chunked"):
                raise ValueError(f"mode {mode!r}")
            return cls(
                mode,
                ReadPoint.from_json(data["start"]),
                [
                    TableProgress(
                        str(t["name"]),
                        [
                            Segment(key_from_json(a), key_from_json(u), ReadPoint.from_json(p))
                            for a, u, p in t["segments"]
                        ],
                        bool(t["done"]),
                    )
                    for t in data["tables"]
                ],
            )
        except (ValueError, KeyError, TypeError) as exc:
            raise ConfigError(f"not a snapshot state: {exc}") from exc


def key_to_json(key: Key | None) -> list[Any] | None:
    if key is None:
        return None
    out: list[Any] = []
    for v in key:
        if isinstance(v, bool) or v is None:
            raise SnapshotError(f"key value {v!r} cannot be saved")
        if isinstance(v, int):
            out.append(v)
        elif isinstance(v, Decimal):
            out.append({"decimal": str(v)})
        elif isinstance(v, dt.datetime):
            out.append({"datetime": v.isoformat()})
        elif isinstance(v, dt.date):
            out.append({"date": v.isoformat()})
        elif isinstance(v, bytes):
            out.append({"hex": v.hex()})
        else:
            raise SnapshotError(f"key value {v!r} of type {type(v).__name__} cannot be saved")
    return out


def key_from_json(data: list[Any] | None) -> Key | None:
    if data is None:
        return None
    out: list[Any] = []
    for v in data:
        if isinstance(v, int):
            out.append(v)
        elif "decimal" in v:
            out.append(Decimal(v["decimal"]))
        elif "datetime" in v:
            out.append(dt.datetime.fromisoformat(v["datetime"]))
        elif "date" in v:
            out.append(dt.date.fromisoformat(v["date"]))
        else:
            out.append(bytes.fromhex(v["hex"]))
    return tuple(out)


# -- what a table's rows are read as ------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class ColumnPlan:
    """One column: its name, ``information_schema`` data type and how it is selected."""

    name: str
    data_type: str
    column_type: str
    select: str


@dataclass(frozen=True, slots=True)
class TablePlan:
    """How one table is read: the SELECT list, the key, and the value conversions."""

    schema: str
    table: str
    columns: tuple[ColumnPlan, ...]
    key: tuple[str, ...]
    #: Whether the key's Python order is the server's (reading in chunks needs it).
    ordered_key: bool
    #: ENUM/SET as labels (FULL row metadata) or as index / bit mask.
    labels: bool
    mariadb: bool

    @property
    def name(self) -> str:
        return f"{self.schema}.{self.table}"

    @property
    def quoted(self) -> str:
        return f"{_quote(self.schema)}.{_quote(self.table)}"

    def key_of(self, image: Mapping[str, Any]) -> Key:
        return tuple(image[k] for k in self.key)

    def converters(self, collations: Sequence[int | None]) -> list[Callable[[bytes], Any]]:
        """One conversion per column, given the collation id the server sent each with."""
        return [
            _converter(c, collation, self.labels, self.mariadb)
            for c, collation in zip(self.columns, collations, strict=True)
        ]


def _quote(name: str) -> str:
    return "`" + name.replace("`", "``") + "`"


def plan_table(
    schema: str,
    table: str,
    columns: Iterable[tuple[str, str, str]],
    key: Sequence[str],
    *,
    labels: bool,
    mariadb: bool,
) -> TablePlan:
    """A :class:`TablePlan` from ``information_schema``: (name, DATA_TYPE, COLUMN_TYPE) per
    column in table order, and the primary-key column names in key order."""
    plans = []
    types: dict[str, str] = {}
    for name, spelled, column_type in columns:
        data_type = spelled.lower()
        types[name] = data_type
        plans.append(
            ColumnPlan(name, data_type, column_type.lower(), _select(name, data_type, labels))
        )
    if not plans:
        raise SnapshotError(f"table {schema}.{table} does not exist or has no columns")
    ordered = bool(key) and all(types.get(k) in _ORDERED_KEYS for k in key)
    return TablePlan(schema, table, tuple(plans), tuple(key), ordered, labels, mariadb)


def _select(name: str, data_type: str, labels: bool) -> str:
    n = _quote(name)
    if data_type == "float":
        return f"{n} + 0e0"  # the float32 value in full (its own text has 6 digits)
    if data_type in ("enum", "set") and not labels:
        return f"CAST({n} AS UNSIGNED)"  # the index / bit mask, as the binlog has it
    return n


def _converter(
    c: ColumnPlan, collation: int | None, labels: bool, mariadb: bool
) -> Callable[[bytes], Any]:
    t = c.data_type
    if t in _INTEGERS or t == "year":
        return int
    if t in ("enum", "set") and not labels:
        return int
    if t == "bit":
        return _bit
    if t == "decimal":
        return _decimal
    if t == "float":
        return _float32
    if t == "double":
        return float
    if t == "date":
        return _date
    if t == "time":
        return _time
    if t == "datetime":
        return _datetime
    if t == "timestamp":
        return _timestamp
    if t == "json" and not mariadb:
        return _mysql_json
    if t == "vector":
        return _vector
    if t in GEOMETRY_TYPES:
        return _geometry
    if t in _TYPED:
        return _TYPED[t]
    if t in _BYTES:
        return bytes
    text = text_reader(collation, mariadb)
    if t == "set":
        return lambda raw: _set_labels(text(memoryview(raw)))
    if t in _TEXT or t == "json":
        return lambda raw: text(memoryview(raw))
    raise SnapshotError(f"column {c.name} has a type the snapshot cannot read: {c.column_type}")


def _bit(raw: bytes) -> int:
    return int.from_bytes(raw, "big")


def _decimal(raw: bytes) -> Decimal:
    return Decimal(raw.decode("ascii"))


def _float32(raw: bytes) -> float:
    value: float = struct.unpack("<f", struct.pack("<f", float(raw)))[0]
    return value


def _date(raw: bytes) -> dt.date | Any:
    y, m, d = raw.decode("ascii").split("-")
    return make_date(int(y), int(m), int(d))


def _time(raw: bytes) -> dt.timedelta:
    text = raw.decode("ascii")
    sign = -1 if text.startswith("-") else 1
    hms, _, frac = text.lstrip("-").partition(".")
    h, m, s = (int(p) for p in hms.split(":"))
    us = int((frac + "000000")[:6]) if frac else 0
    return sign * dt.timedelta(hours=h, minutes=m, seconds=s, microseconds=us)


def _datetime_parts(raw: bytes) -> tuple[int, int, int, int, int, int, int]:
    date, _, time = raw.decode("ascii").partition(" ")
    y, mo, d = date.split("-")
    hms, _, frac = time.partition(".")
    h, mi, s = hms.split(":")
    us = int((frac + "000000")[:6]) if frac else 0
    return int(y), int(mo), int(d), int(h), int(mi), int(s), us


def _datetime(raw: bytes) -> Any:
    try:
        return dt.datetime.fromisoformat(raw.decode("ascii"))  # 1.7x the parts' way
    except ValueError:  # a zero or invalid date: the decoder's InvalidDatetime
        return make_datetime(*_datetime_parts(raw))


def _timestamp(raw: bytes) -> Any:
    """A TIMESTAMP read with the session time zone at UTC: aware UTC, or the zero value."""
    try:
        return dt.datetime.fromisoformat(raw.decode("ascii")).replace(tzinfo=_UTC)
    except ValueError:
        pass
    parts = _datetime_parts(raw)
    if not any(parts):
        return InvalidDatetime(0, 0, 0, 0, 0, 0, 0)
    return dt.datetime(*parts, tzinfo=_UTC)


def _mysql_json(raw: bytes) -> Any:
    value = json.loads(raw)
    return JSON_NULL if value is None else value


def _vector(raw: bytes) -> list[float]:
    return list(struct.unpack(f"<{len(raw) // 4}f", raw))


def _geometry(raw: bytes) -> Any:
    return geometry_value(memoryview(raw))


def _set_labels(text: str | bytes) -> frozenset[Any] | bytes:
    if isinstance(text, bytes):
        return text
    return frozenset(text.split(",")) if text else frozenset()


#: MariaDB types the binlog writes as their storage (typed by a schema provider,
#: see ``replica_client.schema``); SELECT gives their text form.
_TYPED: Final[dict[str, Callable[[bytes], Any]]] = {
    "uuid": lambda raw: uuid.UUID(raw.decode("ascii")),
    "inet4": lambda raw: ipaddress.IPv4Address(raw.decode("ascii")),
    "inet6": lambda raw: ipaddress.IPv6Address(raw.decode("ascii")),
}


def _literal(value: Any) -> str:
    if isinstance(value, bool):
        raise SnapshotError(f"cannot use {value!r} as a key")
    if isinstance(value, int | Decimal):
        return str(value)
    if isinstance(value, dt.datetime):
        return "'" + value.replace(tzinfo=None).isoformat(" ") + "'"
    if isinstance(value, dt.date):
        return "'" + value.isoformat() + "'"
    if isinstance(value, bytes):
        return "X'" + value.hex() + "'" if value else "''"
    raise SnapshotError(f"cannot use {value!r} as a key")


def select_sql(
    plan: TablePlan,
    after: Key | None,
    upto: Key | None,
    limit: int | None,
    *,
    key_only: bool = False,
    offset: int = 0,
) -> str:
    """The SELECT of the table's rows with ``after < key <= upto`` in key order
    (``key_only``: the key columns only, from the ``offset``-th row)."""
    keys = [_quote(k) for k in plan.key]
    listed = keys if key_only else [c.select for c in plan.columns]
    sql = f"SELECT {', '.join(listed)} FROM {plan.quoted}"
    where = []
    if after is not None:
        where.append(f"({', '.join(keys)}) > ({', '.join(_literal(v) for v in after)})")
    if upto is not None:
        where.append(f"({', '.join(keys)}) <= ({', '.join(_literal(v) for v in upto)})")
    if where:
        sql += " WHERE " + " AND ".join(where)
    if keys:
        sql += f" ORDER BY {', '.join(keys)}"
    if limit is not None:
        sql += f" LIMIT {limit}"
        if offset:
            sql += f" OFFSET {offset}"
    return sql


def key_converters(plan: TablePlan) -> list[Callable[[bytes], Any]]:
    """The value conversion of each key column (keys in server order need no collation)."""
    by_name = {c.name: c for c in plan.columns}
    return [_converter(by_name[k], None, plan.labels, plan.mariadb) for k in plan.key]


def read_change(plan: TablePlan, row: dict[str, Any], point: ReadPoint, at: dt.datetime) -> Change:
    """The ``op="read"`` change of one row read at ``point``."""
    return Change(
        "read",
        plan.schema,
        plan.table,
        None,
        row,
        None,
        point.position,
        at,
        0,
        plan.key,
        0,
    )


# -- DDL seen in the stream --------------------------------------------------------------------

_IDENT = r"(?:`(?:[^`]|``)+`|[A-Za-z0-9_$]+)"
_NAME = re.compile(rf"({_IDENT})(?:\s*\.\s*({_IDENT}))?")
_DDL = re.compile(r"\s*(TRUNCATE|DROP|RENAME)\b(.*)", re.IGNORECASE | re.DOTALL)
_COMMENTS = re.compile(r"/\*.*?\*/|(?:--\s|#)[^\n]*", re.DOTALL)
_DDL_WORDS = frozenset(
    {"TABLE", "TABLES", "TEMPORARY", "IF", "EXISTS", "TO", "RESTRICT", "CASCADE", "NOWAIT", "WAIT"}
)


def _unquote(name: str) -> str:
    return name[1:-1].replace("``", "`") if name.startswith("`") else name


def ddl_tables(query: str, schema: str) -> tuple[str, list[str]]:
    """The statement (``TRUNCATE``, ``DROP``, ``RENAME``) and the ``"schema.table"`` names
    a table-removing DDL statement names (``("", [])`` for any other statement)."""
    m = _DDL.match(_COMMENTS.sub(" ", query))
    if m is None:
        return "", []
    kind, rest = m[1].upper(), m[2]
    words = rest.split(None, 2)
    if kind != "TRUNCATE" and not (
        words and (words[0].upper().startswith("TABLE") or words[0].upper() == "TEMPORARY")
    ):
        return "", []  # DROP DATABASE, RENAME USER, ...
    names = []
    for found in _NAME.finditer(rest):
        first, second = found[1], found[2]
        if (second is None and first.upper() in _DDL_WORDS) or first.isdigit():
            continue
        if second is None:
            names.append(f"{schema}.{_unquote(first)}")
        else:
            names.append(f"{_unquote(first)}.{_unquote(second)}")
    return kind, names


# -- the seam ---------------------------------------------------------------------------------


class Seam:
    """Which of the stream's changes to deliver while a snapshot's read points are ahead of it."""

    def __init__(self, state: SnapshotState, plans: Mapping[str, TablePlan]) -> None:
        self.state = state
        self._plans = plans
        self._tables = {t.name: t for t in state.tables}

    def keep(self, change: Change) -> Change | None:
        """``change`` (or its delivered side, for a key-moving update), or None to drop it."""
        progress = self._tables.get(f"{change.schema}.{change.table}")
        if progress is None:
            return change  # not a snapshot table
        plan = self._plans.get(progress.name)
        if plan is None or not plan.key:
            # Not planned yet (read later) or without a key: one segment holds the whole
            # table (read in one go), or nothing was read yet.
            point = progress.segments[0].point if progress.done and progress.segments else None
            return change if point is not None and not point.includes(change) else None
        before = plan.key_of(change.before) if change.before is not None else None
        after = None
        if change.after is not None:
            image = change.after if change.before is None else {**change.before, **change.after}
            after = plan.key_of(image)
        keep_before = before is not None and self._delivered(progress, before, change)
        keep_after = after is not None and self._delivered(progress, after, change)
        if change.op == "update" and before != after:
            if keep_before and keep_after:
                return change
            if keep_before:
                return replace(change, op="delete", after=None)
            if keep_after:
                return replace(change, op="insert", before=None)
            return None
        return change if (keep_before or keep_after) else None

    @staticmethod
    def _delivered(progress: TableProgress, key: Key, change: Change) -> bool:
        point = progress.point_for(key)
        return point is not None and not point.includes(change)
