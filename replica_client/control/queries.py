"""The questions to the primary: their SQL and the parsing of their answers. No I/O.

Each answer the library needs from a primary's ordinary client connection
(never the replication connection) is asked here once, as a :class:`Query`
(SQL text and arguments) and a parser of its rows. Questions that take
several statements (capture the table definitions at a binlog point, which
reads the binlog's end before and after and asks again when a DDL slipped in
between) are *procedures*: generators that yield what they need, a
:class:`Query` or a :class:`ScanQueries` (the QueryEvents of a binlog range,
read over a replication connection), and get the answer sent back. Two thin
runners drive them, :mod:`.aio` (asyncio) and :mod:`.blocking` (threads, the
Spark driver), so every question has one text and one parser.
"""

from __future__ import annotations

import fnmatch
import re
import ssl
from collections.abc import Generator, Iterable, Sequence
from dataclasses import dataclass, field
from typing import Any, Final, TypeVar

from ..binlog.events import QueryEvent
from ..codec import is_mariadb_version, server_text
from ..config import TableFilter
from ..errors import ConnectionLostError, ReplicaError, server_error
from ..position import FilePos, Gtid, GtidTriple, MysqlGtidSet, parse_gtid_triples
from ..schema.history import DdlMark, SchemaHistory
from ..schema.model import ColumnDef, TableDef

__all__ = [
    "PRIMARY_STATE_SQL",
    "SYSTEM_SCHEMAS",
    "Answer",
    "BinlogEnd",
    "Procedure",
    "Query",
    "QueryFailed",
    "ScanQueries",
    "ScannedQuery",
    "PreparedHistory",
    "PrimaryState",
    "ServerFacts",
    "binlog_end",
    "client_error",
    "column_def",
    "prepare_history",
    "primary_state_from",
    "server_facts",
    "table_definitions",
    "table_defs_from_rows",
    "tracked_patterns",
    "tracked_schemas",
]

T = TypeVar("T")


@dataclass(frozen=True, slots=True)
class Query:
    """One statement; its answer is the list of result rows (tuples).

    ``tolerate``: server error numbers that are an answer rather than a failure
    (the runner sends a :class:`QueryFailed` back instead of raising).
    """

    sql: str
    args: tuple[Any, ...] = ()
    tolerate: frozenset[int] = frozenset()


@dataclass(frozen=True, slots=True)
class QueryFailed:
    """A tolerated error: the server refused the statement with ``errno``."""

    errno: int
    message: str


@dataclass(frozen=True, slots=True)
class ScannedQuery:
    """A QueryEvent met by :class:`ScanQueries`, where it sits in the binlog."""

    position: FilePos
    gtid: str | None
    event: QueryEvent


@dataclass(frozen=True, slots=True)
class ScanQueries:
    """Read the binlog from ``start`` (None: the first file the primary has) to its end
    (now) over a replication connection; the answer is every QueryEvent met (a list of
    :class:`ScannedQuery`)."""

    start: FilePos | Gtid | MysqlGtidSet | None


#: What a runner sends back into a procedure.
Answer = list[tuple[Any, ...]] | QueryFailed | list[ScannedQuery]
#: A procedure: yields what it needs, gets the answer, returns its result.
Procedure = Generator[Query | ScanQueries, Any, T]

#: Error numbers of a missing privilege (1227: "Access denied; you need ... privilege").
ACCESS_DENIED: Final = frozenset({1227, 1142, 1143, 1044, 1045})
#: Schemas whose tables are the server's own.
SYSTEM_SCHEMAS: Final = frozenset({"information_schema", "performance_schema", "sys"})


def client_error(exc: BaseException, address: str) -> ReplicaError:
    """The library's error for what a client driver (PyMySQL, aiomysql) raised: the
    server's errors (1000-1999) by errno, anything else a lost connection."""
    args: tuple[Any, ...] = tuple(exc.args)
    if len(args) >= 2 and isinstance(args[0], int) and 1000 <= args[0] < 2000:
        return server_error(args[0], "HY000", str(args[1]))
    cause: BaseException | None = exc
    while cause is not None:
        if isinstance(cause, ssl.SSLError):
            return ConnectionLostError(
                f"TLS handshake with the primary at {address} failed: {cause}"
            )
        cause = cause.__cause__ or cause.__context__
    return ConnectionLostError(f"cannot connect to the primary at {address} (SQL): {exc}")


def _one(rows: Answer) -> tuple[Any, ...]:
    if isinstance(rows, QueryFailed) or not rows:
        raise LookupError("the query returned no row")
    row = rows[0]
    assert isinstance(row, tuple)
    return row


# -- what the server is ----------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class ServerFacts:
    """What a primary says about itself and how it writes its binlog.

    Attributes:
        version: ``SELECT VERSION()``.
        mariadb: the flavour, from the version text (the one place that decides it).
        variables: the global variables of :data:`_FACT_VARIABLES`, lower-case
            names, as text (absent when the server has no such variable).
    """

    version: str
    mariadb: bool
    variables: dict[str, str] = field(default_factory=dict)

    @property
    def major_minor(self) -> tuple[int, int]:
        m = re.match(r"(\d+)\.(\d+)", self.version)
        return (int(m[1]), int(m[2])) if m else (0, 0)

    @property
    def binlog_format(self) -> str:
        return self.variables.get("binlog_format", "").upper()

    @property
    def row_metadata(self) -> str:
        """FULL, MINIMAL or NO_LOG (a server without the variable writes none)."""
        return self.variables.get("binlog_row_metadata", "NO_LOG").upper() or "NO_LOG"

    @property
    def server_id(self) -> int:
        return int(self.variables.get("server_id", "0") or 0)


_FACT_VARIABLES: Final = (
    "server_id",
    "binlog_format",
    "binlog_row_metadata",
    "binlog_row_image",
    "binlog_checksum",
    "log_bin",
    "read_only",
    "rpl_semi_sync_master_enabled",
    "rpl_semi_sync_source_enabled",
    "collation_server",
    "explicit_defaults_for_timestamp",
)


def is_mariadb(version: str) -> bool:
    """The flavour of a server from its ``VERSION()`` text."""
    return is_mariadb_version(version)


def server_facts() -> Procedure[ServerFacts]:
    """Version, flavour and the global binlog settings (no privilege beyond a login)."""
    version = str(_one((yield Query("SELECT VERSION()")))[0])
    names = ", ".join(f"'{n}'" for n in _FACT_VARIABLES)
    rows = yield Query(f"SHOW GLOBAL VARIABLES WHERE Variable_name IN ({names})")
    variables = {str(name).lower(): "" if value is None else str(value) for name, value in rows}
    return ServerFacts(version, is_mariadb(version), variables)


@dataclass(frozen=True, slots=True)
class PrimaryState:
    """Whether a server can be streamed from as a primary, and what it has."""

    version: str
    is_mariadb: bool
    read_only: bool
    #: What its binlog holds: ``@@gtid_binlog_pos`` (MariaDB) or ``@@gtid_executed`` (MySQL).
    gtid_state: Gtid | MysqlGtidSet
    #: MariaDB ``@@gtid_binlog_state``: the last GTID of each domain and server in its binlog.
    binlog_state: tuple[GtidTriple, ...] | None = None


#: What :class:`PrimaryState` is read from, by flavor (is MariaDB -> SQL).
PRIMARY_STATE_SQL: dict[bool, str] = {
    True: "SELECT @@GLOBAL.read_only, @@GLOBAL.gtid_binlog_pos, @@GLOBAL.gtid_binlog_state",
    False: "SELECT @@GLOBAL.read_only, @@GLOBAL.super_read_only, @@GLOBAL.gtid_executed",
}


def primary_state_from(version: str, row: Sequence[Any]) -> PrimaryState:
    """A :class:`PrimaryState` from ``SELECT VERSION()`` and the row of ``PRIMARY_STATE_SQL``."""
    if is_mariadb_version(version):
        held = parse_gtid_triples(str(row[2] or ""))
        return PrimaryState(version, True, bool(int(row[0])), Gtid(str(row[1] or "")), held)
    read_only = bool(int(row[0])) or bool(int(row[1]))
    return PrimaryState(version, False, read_only, MysqlGtidSet(str(row[2] or "")))


# -- where the binlog ends ---------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class BinlogEnd:
    """The primary's binlog end at one moment: file position (None without the
    privilege to read it) and GTID state."""

    position: FilePos | None
    gtid: Gtid | MysqlGtidSet


def binlog_end(facts: ServerFacts) -> Procedure[BinlogEnd]:
    """The binlog's end now: ``SHOW MASTER STATUS`` (MariaDB) / ``SHOW BINARY LOG STATUS``
    (MySQL; needs BINLOG MONITOR / REPLICATION CLIENT, else the position is None) and the
    GTID state (``@@gtid_binlog_pos`` / ``@@gtid_executed``)."""
    statement = "SHOW MASTER STATUS" if facts.mariadb else "SHOW BINARY LOG STATUS"
    rows = yield Query(statement, tolerate=ACCESS_DENIED)
    position = None
    if not isinstance(rows, QueryFailed) and rows:
        position = FilePos(str(rows[0][0]), int(rows[0][1]))
    variable = "gtid_binlog_pos" if facts.mariadb else "gtid_executed"
    text = str(_one((yield Query(f"SELECT @@GLOBAL.{variable}")))[0] or "")
    gtid: Gtid | MysqlGtidSet = Gtid(text) if facts.mariadb else MysqlGtidSet(text)
    return BinlogEnd(position, gtid)


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
    "FROM information_schema.COLUMNS c JOIN information_schema.TABLES t "
    "ON t.TABLE_SCHEMA = c.TABLE_SCHEMA AND t.TABLE_NAME = c.TABLE_NAME "
    "WHERE t.TABLE_TYPE <> 'VIEW' AND t.TABLE_TYPE <> 'SYSTEM VIEW' AND c.TABLE_SCHEMA IN ({}) "
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
