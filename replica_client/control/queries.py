"""The table definitions and the schema history at a stream's start. No I/O.

The procedures (see :mod:`.procedure`) that read ``information_schema`` into
:class:`~replica_client.schema.model.TableDef` values, and
:func:`prepare_history`: the definitions read between two reads of the
binlog's end (again when a DDL slipped in between), and the binlog from the
stream's start scanned for DDL, so the history is valid at the start.
"""

from __future__ import annotations

import fnmatch
import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Any, Final

from ..binlog.events import QueryEvent
from ..codec import server_text
from ..config import TableFilter
from ..position import FilePos, Gtid, MysqlGtidSet
from ..schema.history import DdlMark, SchemaHistory
from ..schema.model import ColumnDef, TableDef
from .primary import BinlogEnd, ServerFacts, binlog_end, server_facts
from .procedure import Procedure, Query, ScannedQuery, ScanQueries

__all__ = [
    "SYSTEM_SCHEMAS",
    "CAPTURE_ATTEMPTS",
    "Definitions",
    "PreparedHistory",
    "column_def",
    "prepare_history",
    "table_definitions",
    "table_defs_from_rows",
    "tracked_patterns",
    "tracked_schemas",
]

#: Schemas whose tables are the server's own.
SYSTEM_SCHEMAS: Final = frozenset({"information_schema", "performance_schema", "sys"})


# -- table definitions -------------------------------------------------------------------------


def tracked_schemas(tables: TableFilter | None, schemas: Iterable[str]) -> list[str]:
    """The schemas among ``schemas`` that may hold a table ``tables`` selects (all but
    the server's own when the filter selects every table). A whole schema is tracked,
    not only its selected tables: a table renamed into the filter (a gh-ost or
    pt-online-schema-change swap) needs its definition from before."""
    out = []
    for schema in schemas:
        if schema.lower() in SYSTEM_SCHEMAS:
            continue
        patterns = () if tables is None else tables.include
        if not patterns or any(fnmatch.fnmatchcase(schema, p.split(".", 1)[0]) for p in patterns):
            out.append(schema)
    return sorted(out)


_COLUMNS_SQL: Final = (
    "SELECT c.TABLE_SCHEMA, c.TABLE_NAME, c.COLUMN_NAME, c.DATA_TYPE, c.COLUMN_TYPE, "
    "c.CHARACTER_MAXIMUM_LENGTH, c.NUMERIC_PRECISION, c.NUMERIC_SCALE, c.DATETIME_PRECISION, "
    "c.CHARACTER_SET_NAME, c.COLLATION_NAME, c.IS_NULLABLE, c.EXTRA "
    "FROM information_schema.COLUMNS c WHERE c.TABLE_SCHEMA IN ({}) "
    "ORDER BY c.TABLE_SCHEMA, c.TABLE_NAME, c.ORDINAL_POSITION"
)
_KEYS_SQL: Final = (
    "SELECT TABLE_SCHEMA, TABLE_NAME, COLUMN_NAME FROM information_schema.STATISTICS "
    "WHERE INDEX_NAME = 'PRIMARY' AND TABLE_SCHEMA IN ({}) "
    "ORDER BY TABLE_SCHEMA, TABLE_NAME, SEQ_IN_INDEX"
)
_TABLES_SQL: Final = (
    "SELECT TABLE_SCHEMA, TABLE_NAME, TABLE_COLLATION FROM information_schema.TABLES "
    "WHERE TABLE_TYPE <> 'VIEW' AND TABLE_TYPE <> 'SYSTEM VIEW' AND TABLE_SCHEMA IN ({})"
)
_SCHEMATA_SQL: Final = "SELECT SCHEMA_NAME, DEFAULT_COLLATION_NAME FROM information_schema.SCHEMATA"

#: A quoted ENUM/SET label of COLUMN_TYPE: quotes doubled, backslash escapes; or x'hex'.
_LABEL: Final = re.compile(r"'((?:[^'\\]|''|\\.)*)'|[xX]'([0-9a-fA-F]*)'", re.DOTALL)
_ESCAPES: Final = {"0": "\0", "n": "\n", "r": "\r", "Z": "\x1a", "\\": "\\"}
#: EXTRA of a generated column (MySQL's DEFAULT_GENERATED is a default expression).
_GENERATED: Final = re.compile(r"\b(VIRTUAL|STORED|PERSISTENT) GENERATED\b")
_PARAMS: Final = re.compile(r"\(([^)]*)\)")


def _labels(column_type: str) -> tuple[str, ...]:
    """ENUM/SET labels as information_schema's COLUMN_TYPE writes them: quotes doubled,
    ``\\0 \\n \\r \\Z \\\\`` escaped, and (MySQL) labels that are not UTF-8 as
    ``x'..'`` (server text, as the TABLE_MAP's labels of a binary column read)."""
    head = column_type.find("(")
    out = []
    for m in _LABEL.finditer(column_type, head):
        if m[2] is not None:
            out.append(server_text(bytes.fromhex(m[2])))
            continue
        text = re.sub(r"\\(.)", lambda e: _ESCAPES.get(e[1], e[1]), m[1], flags=re.DOTALL)
        out.append(text.replace("''", "'"))
    return tuple(out)


def column_def(row: Sequence[Any]) -> ColumnDef:
    """A column from a row of ``_COLUMNS_SQL`` (from COLUMN_NAME on)."""
    name, data_type, column_type, char_len, precision, scale, dt_precision = row[:7]
    charset, collation, nullable, extra = row[7:11]
    kind = str(data_type).lower()
    ctype = str(column_type).lower()
    extra_text = str(extra or "").upper()
    length: int | None = None
    params = _PARAMS.search(ctype) if kind not in ("enum", "set") else None
    if kind in ("char", "varchar", "binary", "varbinary"):
        length = int(char_len)
    elif kind in ("bit", "vector") and params is not None:
        length = int(params[1])
    return ColumnDef(
        name=str(name),
        data_type=kind,
        unsigned=" unsigned" in ctype,
        length=length,
        precision=int(precision) if kind == "decimal" else None,
        scale=int(scale) if kind == "decimal" else None,
        fsp=int(dt_precision or 0) if kind in ("time", "datetime", "timestamp") else None,
        charset=str(charset) if charset is not None else None,
        collation=str(collation) if collation is not None else None,
        labels=_labels(str(column_type)) if kind in ("enum", "set") else (),
        nullable=str(nullable).upper() == "YES",
        generated=_GENERATED.search(extra_text) is not None,
        invisible="INVISIBLE" in extra_text,
        compressed="compressed" in ctype,
    )


def table_defs_from_rows(
    columns: Iterable[Sequence[Any]],
    keys: Iterable[Sequence[Any]] = (),
    tables: Iterable[Sequence[Any]] = (),
) -> dict[tuple[str, str], TableDef]:
    """Table definitions from the rows of ``_COLUMNS_SQL``, ``_KEYS_SQL`` and ``_TABLES_SQL``."""
    cols: dict[tuple[str, str], list[ColumnDef]] = {}
    for row in columns:
        cols.setdefault((str(row[0]), str(row[1])), []).append(column_def(row[2:]))
    pks: dict[tuple[str, str], list[str]] = {}
    for schema, table, column in keys:
        pks.setdefault((str(schema), str(table)), []).append(str(column))
    collations = {(str(s), str(t)): c for s, t, c in tables}
    out = {}
    for key, columns_of in cols.items():
        collation = collations.get(key)
        out[key] = TableDef(
            schema=key[0],
            name=key[1],
            columns=tuple(columns_of),
            primary_key=tuple(pks.get(key, ())),
            charset=_charset_of(str(collation)) if collation else None,
            collation=str(collation) if collation else None,
        )
    return out


def _charset_of(collation: str) -> str | None:
    from ..binlog.charsets import collation_id

    for mariadb in (True, False):
        known = collation_id(collation, mariadb)
        if known is not None:
            return known[1]
    return collation.split("_", 1)[0]


@dataclass(frozen=True, slots=True)
class Definitions:
    """What :func:`table_definitions` read: tables, and the databases' default collations."""

    tables: dict[tuple[str, str], TableDef]
    databases: dict[str, str]


def table_definitions(tables: TableFilter | None) -> Procedure[Definitions]:
    """Every table of the schemas ``tables`` may select, as ``information_schema`` shows
    them to this account (it sees the tables it has a privilege on)."""
    rows = yield Query(_SCHEMATA_SQL)
    databases = {str(name): str(collation) for name, collation in rows}
    schemas = tracked_schemas(tables, databases)
    if not schemas:
        return Definitions({}, {s: databases[s] for s in schemas})
    marks = ", ".join(["%s"] * len(schemas))
    args = tuple(schemas)
    columns = yield Query(_COLUMNS_SQL.format(marks), args)
    keys = yield Query(_KEYS_SQL.format(marks), args)
    table_rows = yield Query(_TABLES_SQL.format(marks), args)
    # Views' columns are dropped here, by the tables read (no views among them): a
    # join of COLUMNS with TABLES costs MariaDB 6x the two reads (20 vs 3.5 ms for
    # the mysql schema's 30 tables).
    real = {(str(s), str(t)) for s, t, _ in table_rows}
    columns = [row for row in columns if (str(row[0]), str(row[1])) in real]
    defs = table_defs_from_rows(columns, keys, table_rows)
    return Definitions(defs, {s: databases[s] for s in schemas})


# -- a schema history at the stream's start ------------------------------------------------------


@dataclass(frozen=True, slots=True)
class PreparedHistory:
    """What :func:`prepare_history` found.

    Attributes:
        facts: the primary's version and binlog settings.
        history: the table definitions valid at the stream's start.
        point: the binlog's end when the definitions were read (a stream from "now"
            starts exactly there).
        scanned: the binlog between the start and ``point`` was read for DDL.
    """

    facts: ServerFacts
    history: SchemaHistory
    point: BinlogEnd
    scanned: bool


#: Attempts at reading the definitions with no DDL of a tracked schema beside them.
CAPTURE_ATTEMPTS: Final = 5


def _before(scanned: ScannedQuery, point: BinlogEnd) -> bool:
    """True when the scanned event was written before ``point``."""
    if point.position is not None:
        return scanned.position.order < point.position.order
    gtid = scanned.gtid
    if gtid is None:
        return True  # no GTID before the point was passed: nothing says it is after
    state = point.gtid
    if isinstance(state, MysqlGtidSet):
        return gtid in state
    domain, _server, seq = (int(x) for x in gtid.split("-"))
    known = {t.domain: t.seq for t in state.triples}
    return seq <= known.get(domain, -1)


def _ddl(scanned: Iterable[ScannedQuery]) -> list[ScannedQuery]:
    from ..schema.statements import StatementKind, classify

    return [q for q in scanned if classify(q.event.query) is StatementKind.TABLE_DDL]


def _touched(history: SchemaHistory, event: QueryEvent) -> set[tuple[str, str]]:
    """The tracked tables a DDL event may change (every table its text names, or
    its database's, when the statement cannot be read)."""
    from ..schema.ddl import DdlContext, DdlError, interpret

    tables = history.tables
    ctx = DdlContext(
        default_schema=event.schema,
        mariadb=history.mariadb,
        version=history.version,
        server_collation=None,
        lookup=lambda s, t: d if isinstance(d := tables.get((s, t)), TableDef) else None,
        database_collation=history.databases.get,
    )
    try:
        effect = interpret(event.query, ctx)
    except DdlError:
        text = event.query.lower()
        named = {k for k in tables if k[1].lower() in text}
        return named or {k for k in tables if k[0] == event.schema}
    if effect is None:
        return set()
    keys = set(effect.touched) | set(effect.tables) | set(effect.unknown)
    for db, collation in effect.databases.items():
        if collation is None:
            keys |= {k for k in tables if k[0] == db}
    return {k for k in keys if history.tracks(k[0])}


def prepare_history(
    tables: TableFilter | None,
    start: FilePos | Gtid | MysqlGtidSet | str | None,
    *,
    scan: str = "auto",
) -> Procedure[PreparedHistory]:
    """The table definitions valid at the stream's ``start`` ("now", "earliest" or
    None, a position, a GTID state).

    Reads ``information_schema`` between two reads of the binlog's end; a DDL of a
    tracked schema written in between makes it read again (at most
    :data:`CAPTURE_ATTEMPTS` times). When ``start`` is before that point, the binlog
    from ``start`` to it is read for DDL (``scan="auto"``: where the history is
    needed there, i.e. the primary's TABLE_MAPs lack full metadata or MariaDB has
    typed binary columns; ``"always"``; ``"never"``): each table a DDL there changed
    is unknown until its last such DDL, then has the definition read. Without the
    scan, the definitions read hold only for TABLE_MAPs with full metadata before
    the point (``SchemaHistory.unverified``).

    Raises:
        SchemaHistoryError: DDL kept coming between the reads.
    """
    from ..errors import SchemaHistoryError

    facts = yield from server_facts()
    for _attempt in range(CAPTURE_ATTEMPTS):
        before = yield from binlog_end(facts)
        read = yield from table_definitions(tables)
        after = yield from binlog_end(facts)
        if before == after:
            break
        between = yield ScanQueries(before.position or before.gtid)
        history = _history(facts, read, tables)
        if not any(_touched(history, q.event) for q in _ddl(between) if _before(q, after)):
            break
    else:
        raise SchemaHistoryError(
            f"the table definitions could not be read between two DDL statements in "
            f"{CAPTURE_ATTEMPTS} attempts (DDL keeps coming); try again later"
        )
    history = _history(facts, read, tables)
    if start in ("now", after.position, after.gtid):
        return PreparedHistory(facts, history, after, scanned=False)
    typed = facts.mariadb and any(
        c.data_type in ("uuid", "inet4", "inet6", "vector")
        for t in read.tables.values()
        for c in t.columns
    )
    wanted = scan == "always" or (scan == "auto" and (facts.row_metadata != "FULL" or typed))
    if not wanted:
        return PreparedHistory(
            facts, history.replace(unverified=frozenset(history.tables)), after, scanned=False
        )
    # None: "earliest", the first binlog the primary has (as the stream's own dump)
    scan_start = start if isinstance(start, FilePos | Gtid | MysqlGtidSet) else None
    last: dict[tuple[str, str], tuple[DdlMark, int]] = {}
    counts: dict[DdlMark, int] = {}
    for q in _ddl((yield ScanQueries(scan_start))):
        if not _before(q, after):
            break
        mark = DdlMark.of(q.event)
        counts[mark] = n = counts.get(mark, 0) + 1  # the stream counts alike
        for key in _touched(history, q.event):
            last[key] = (mark, n)
    marks: dict[tuple[DdlMark, int], list[tuple[str, str]]] = {}
    for key, which in last.items():
        marks.setdefault(which, []).append(key)
    return PreparedHistory(facts, history.with_pending(marks, read.tables), after, scanned=True)


def tracked_patterns(tables: TableFilter | None) -> tuple[str, ...] | None:
    """The schema patterns a history follows for this filter (None: every schema)."""
    patterns = () if tables is None else tables.include
    return tuple(sorted({p.split(".", 1)[0] for p in patterns})) if patterns else None


def _history(facts: ServerFacts, read: Definitions, tables: TableFilter | None) -> SchemaHistory:
    explicit = facts.variables.get("explicit_defaults_for_timestamp", "").upper()
    return SchemaHistory.from_definitions(
        read.tables,
        mariadb=facts.mariadb,
        version=facts.major_minor,
        databases=read.databases,
        schemas=tracked_patterns(tables),
        origin=f"information_schema of {facts.version}",
    ).replace(
        explicit_defaults_for_timestamp={"ON": True, "1": True, "OFF": False, "0": False}.get(
            explicit
        )
    )
