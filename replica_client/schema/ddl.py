"""What one DDL statement of the binlog does to table definitions. No I/O.

:func:`interpret` reads a statement's text (a QueryEvent's query) with the
grammar of :mod:`.dialect` (sqlglot's MySQL dialect, extended) and applies it
to the definitions it looks up, as the server does: column types with their
aliases normalised as ``information_schema`` spells them, character sets and
collations resolved from the column's own clause, the table's default, the
database's and the server's, column order (FIRST/AFTER, the order in which
one ALTER TABLE applies its clauses), the primary key. The result is a
:class:`DdlEffect`.

The rule: what cannot be applied exactly is reported as *unknown* for the
table, with the reason, and never guessed nor applied in part. A statement
whose tables cannot even be named raises :class:`DdlError`.

Choices and limits (the tests under ``tests/schema`` check each against
MariaDB 10.11, 11.8 and MySQL 9.7):

- Names are compared as written (case-sensitive for databases and tables,
  as on a server with ``lower_case_table_names=0``; column names are
  case-insensitive). An unqualified table name is in ``ctx.default_schema``.
- ``tables`` holds the tables whose definition the statement changes (None:
  the table is gone); a statement that changes no column, key or default
  character set (ADD INDEX, ENGINE=, TRUNCATE, CREATE/DROP INDEX, partition
  operations, ALTER SEQUENCE without AS) only puts the table in ``touched``.
- CREATE TEMPORARY TABLE/SEQUENCE: the name becomes unknown. A temporary table
  is not replicated in ROW format; where the binlog has it (STATEMENT or MIXED
  format), it hides the table of the same name for one session, so what the
  later statements on that name do cannot be told apart.
  DROP TEMPORARY TABLE changes nothing (None).
- CREATE TABLE IF NOT EXISTS: no change when the table is known to exist.
  MariaDB logs the statement only when it created the table, MySQL also when
  the table existed: there an unknown table (``ctx.exists`` and ``lookup`` say
  nothing) is reported unknown.
- CREATE TABLE ... SELECT with its query (STATEMENT format; in ROW format the
  server logs the full column list instead) is reported unknown: the query's
  columns are not known here.
- System versioning (WITH SYSTEM VERSIONING, PERIOD FOR SYSTEM_TIME, ADD/DROP
  SYSTEM VERSIONING) adds hidden row start/end columns: reported unknown.
- ``CONVERT TO CHARACTER SET DEFAULT`` and ``CHARACTER SET DEFAULT`` are
  reported unknown; so is a VARCHAR whose byte length passes 65535 (a server
  in a non-strict mode turns it into a TEXT type).
- CREATE OR REPLACE DATABASE drops the database's tables: its entry in
  ``databases`` is None (dropped), so the caller forgets its tables and its
  collation.
- SQL modes (``ctx.sql_mode``, the QueryEvent's): ANSI_QUOTES and
  NO_BACKSLASH_ESCAPES change how the text is read, REAL_AS_FLOAT makes REAL
  a FLOAT; MariaDB's ORACLE mode (other type names and meanings) is reported
  unknown. ``explicit_defaults_for_timestamp`` OFF makes a TIMESTAMP column
  without NULL NOT NULL.
- The default collation of a character set is the server's default
  (``character_set_collations`` of MariaDB 11, ``default_collation_for_utf8mb4``
  of MySQL at their default values); ``utf8`` is ``utf8mb3``.

What the servers do that the rules above follow (each seen on all three
unless a flavour is named):

- ALTER TABLE applies a CHANGE/MODIFY without position in the old column's
  place, then the ADDs and positioned changes in statement order, AFTER
  naming columns by their new names; DROP, CHANGE, RENAME COLUMN and MariaDB's
  IF [NOT] EXISTS test the old table's columns (ADD COLUMN IF NOT EXISTS also
  the names added or changed before it in the statement).
- A primary key's columns are NOT NULL (MariaDB makes them so silently) and
  stay NOT NULL when the key is dropped; MySQL drops a column from its key,
  MariaDB refuses to drop a column of a several-column key.
- CONVERT TO CHARACTER SET grows TEXT kinds to hold as many characters as
  before (latin1 TEXT -> utf8mb4 MEDIUMTEXT); the columns the same ALTER
  defines take the new character set as declared, except that MySQL sizes a
  changed TEXT column by the old column's length (reported unknown). It keeps
  the *bytes* of ENUM/SET labels and reads them in the new character set
  (latin1 'é' becomes 'Ã©' in utf8mb4; into ucs2 MariaDB gives '?', MySQL
  ''): reported unknown unless the bytes read the same.
- ENUM/SET labels lose trailing spaces (not in the binary character set); a
  character the column's character set lacks becomes '?'.
- ``BINARY`` with ``COLLATE``: MySQL takes the character set's _bin
  collation, MariaDB the COLLATE (it refuses one that is not binary).
- MariaDB JSON is LONGTEXT utf8mb4_bin (a COLLATE may change it);
  GEOMETRYCOLLECTION is ``geomcollection`` on MySQL.
- MariaDB's DEFAULT CHARACTER SET x with CONVERT TO y: the columns take y,
  the table default x (MySQL refuses the pair).
- A sequence is a table of eight NOT NULL columns; MariaDB 11.5+ types the
  first four by ``AS``.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field, replace
from typing import Final

from sqlglot import exp
from sqlglot.errors import ParseError

from ..binlog.charsets import charset_info, collation_id, decoder_for_collation
from . import dialect as d
from .model import BLOB_TYPES, TEXT_TYPES, ColumnDef, TableDef

__all__ = ["DdlContext", "DdlEffect", "DdlError", "interpret"]

TableKey = tuple[str, str]

#: sql_mode bits of the QueryEvent (the same on both flavours).
MODE_REAL_AS_FLOAT: Final = 1
MODE_ANSI_QUOTES: Final = 4
MODE_ORACLE: Final = 512  # MariaDB only (MySQL has no such bit since 8.0)
MODE_NO_BACKSLASH_ESCAPES: Final = 1 << 20


@dataclass(frozen=True, slots=True)
class DdlContext:
    """What a statement is read against.

    Attributes:
        default_schema: the QueryEvent's current database ("" when none).
        mariadb, version: the server's flavour and (major, minor).
        server_collation: ``collation_server`` for this statement (None: unknown).
        lookup: the current definition of (schema, table); None: not known.
        database_collation: the default collation of a database; None: not known.
        sql_mode: the QueryEvent's sql_mode bits (None: the default modes).
        explicit_defaults_for_timestamp: the server's setting (None: unknown).
        exists: whether (schema, table) exists now, when the caller knows more
            than ``lookup`` (a table whose definition is unknown exists); None:
            only ``lookup`` is asked (a definition means the table exists).
    """

    default_schema: str
    mariadb: bool
    version: tuple[int, int]
    server_collation: str | None
    lookup: Callable[[str, str], TableDef | None]
    database_collation: Callable[[str], str | None]
    sql_mode: int | None = None
    explicit_defaults_for_timestamp: bool | None = True
    exists: Callable[[str, str], bool | None] | None = None


@dataclass(frozen=True, slots=True)
class DdlEffect:
    """What a statement did.

    Attributes:
        tables: new definitions of the tables it changed; None: the table is gone.
        unknown: tables changed in a way not applied exactly -> why.
        databases: database -> its default collation now; None: dropped.
        touched: every table the statement may change (both names of a rename).
    """

    tables: Mapping[TableKey, TableDef | None] = field(default_factory=dict)
    unknown: Mapping[TableKey, str] = field(default_factory=dict)
    databases: Mapping[str, str | None] = field(default_factory=dict)
    touched: frozenset[TableKey] = frozenset()


class DdlError(Exception):
    """A table or database DDL statement whose tables cannot even be named."""

    def __init__(self, statement: str, reason: str) -> None:
        super().__init__(f"{reason}: {statement[:200]!r}")
        self.statement = statement
        self.reason = reason


@dataclass(frozen=True, slots=True)
class _Unknown:
    reason: str


class _NotExactError(Exception):
    """A clause that cannot be applied exactly; the table becomes unknown."""


_State = TableDef | None | _Unknown

# -- types ---------------------------------------------------------------------------------

_KINDS: Final[dict[str, str]] = {
    "TINYINT": "tinyint", "INT1": "tinyint", "BOOL": "tinyint", "BOOLEAN": "tinyint",
    "SMALLINT": "smallint", "INT2": "smallint",
    "MEDIUMINT": "mediumint", "INT3": "mediumint", "MIDDLEINT": "mediumint",
    "INT": "int", "INTEGER": "int", "INT4": "int",
    "BIGINT": "bigint", "INT8": "bigint", "SERIAL": "bigint",
    "DECIMAL": "decimal", "DEC": "decimal", "NUMERIC": "decimal", "FIXED": "decimal",
    "FLOAT": "float", "FLOAT4": "float",
    "DOUBLE": "double", "DOUBLE PRECISION": "double", "FLOAT8": "double", "REAL": "double",
    "BIT": "bit", "DATE": "date", "TIME": "time", "DATETIME": "datetime",
    "TIMESTAMP": "timestamp", "YEAR": "year",
    "CHAR": "char", "CHARACTER": "char", "NCHAR": "char", "NATIONAL CHAR": "char",
    "NATIONAL CHARACTER": "char",
    "VARCHAR": "varchar", "VARCHARACTER": "varchar", "CHAR VARYING": "varchar",
    "CHARACTER VARYING": "varchar", "NVARCHAR": "varchar", "NATIONAL VARCHAR": "varchar",
    "NATIONAL CHAR VARYING": "varchar", "NATIONAL CHARACTER VARYING": "varchar",
    "NCHAR VARCHAR": "varchar", "NCHAR VARYING": "varchar",
    "BINARY": "binary", "VARBINARY": "varbinary",
    "TINYTEXT": "tinytext", "TEXT": "text", "MEDIUMTEXT": "mediumtext", "LONGTEXT": "longtext",
    "LONG": "mediumtext", "LONG VARCHAR": "mediumtext", "LONG CHAR VARYING": "mediumtext",
    "LONG CHARACTER VARYING": "mediumtext",
    "TINYBLOB": "tinyblob", "BLOB": "blob", "MEDIUMBLOB": "mediumblob", "LONGBLOB": "longblob",
    "LONG VARBINARY": "mediumblob",
    "ENUM": "enum", "SET": "set", "JSON": "json",
    "GEOMETRY": "geometry", "POINT": "point", "LINESTRING": "linestring",
    "POLYGON": "polygon", "MULTIPOINT": "multipoint", "MULTILINESTRING": "multilinestring",
    "MULTIPOLYGON": "multipolygon", "GEOMETRYCOLLECTION": "geometrycollection",
    "GEOMCOLLECTION": "geomcollection",
    "UUID": "uuid", "INET4": "inet4", "INET6": "inet6", "VECTOR": "vector",
}  # fmt: skip
_NATIONAL: Final = frozenset(
    {"NCHAR", "NATIONAL CHAR", "NATIONAL CHARACTER", "NVARCHAR", "NATIONAL VARCHAR",
     "NATIONAL CHAR VARYING", "NATIONAL CHARACTER VARYING", "NCHAR VARCHAR", "NCHAR VARYING"}
)  # fmt: skip
_INTEGERS: Final = frozenset({"tinyint", "smallint", "mediumint", "int", "bigint"})
_SIGNED_KINDS: Final = _INTEGERS | {"decimal", "float", "double"}
_TEMPORAL: Final = frozenset({"time", "datetime", "timestamp"})
_CHARACTER: Final = frozenset({"char", "varchar", "enum", "set"}) | TEXT_TYPES
#: TEXT and BLOB kinds by their byte capacity.
_TEXT_SIZES: Final = ((255, "tinytext"), (65535, "text"), (16777215, "mediumtext"))
_BLOB_SIZES: Final = ((255, "tinyblob"), (65535, "blob"), (16777215, "mediumblob"))
_TEXT_BYTES: Final = {"tinytext": 255, "text": 65535, "mediumtext": 16777215,
                      "longtext": 4294967295}  # fmt: skip
_TO_BINARY: Final = {
    "char": "binary", "varchar": "varbinary", "tinytext": "tinyblob", "text": "blob",
    "mediumtext": "mediumblob", "longtext": "longblob",
}  # fmt: skip
_COMPRESSIBLE: Final = frozenset({"varchar", "varbinary"}) | TEXT_TYPES | BLOB_TYPES
_MAX_VARCHAR_BYTES: Final = 65535


_UNICODE_FULL: Final = frozenset({"utf8mb4", "utf16", "utf16le", "utf32"})
_UNICODE_BMP: Final = frozenset({"utf8mb3", "ucs2"})


#: Character sets whose ASCII characters are not single ASCII bytes.
_WIDE: Final = frozenset({"ucs2", "utf16", "utf16le", "utf32"})
#: (from, to): every character of ``from`` has the same bytes in ``to``.
_SAME_BYTES: Final = frozenset({("utf8mb3", "utf8mb4"), ("ucs2", "utf16")})


def _same_label_bytes(labels: tuple[str, ...], old: str, new: str) -> bool:
    """Whether labels kept as ``old`` bytes read the same in ``new``."""
    if old == new or (old, new) in _SAME_BYTES:
        return True
    return old not in _WIDE and new not in _WIDE and all(label.isascii() for label in labels)


def _replace_missing(label: str, has: Callable[[str], bool]) -> str:
    return "".join(c if has(c) else "?" for c in label)


def _sized(kind: str, nbytes: int) -> str:
    sizes = _BLOB_SIZES if kind in BLOB_TYPES else _TEXT_SIZES
    for limit, name in sizes:
        if nbytes <= limit:
            return name
    return "longblob" if kind in BLOB_TYPES else "longtext"


# -- character sets ------------------------------------------------------------------------


class _Charsets:
    """Character set and collation names on one server."""

    def __init__(self, mariadb: bool, version: tuple[int, int]) -> None:
        self.mariadb = mariadb
        self.version = version

    @staticmethod
    def charset_name(name: str) -> str:
        name = name.lower()
        return "utf8mb3" if name == "utf8" else name

    @staticmethod
    def collation_name(name: str) -> str:
        name = name.lower()
        return "utf8mb3_" + name[5:] if name.startswith("utf8_") else name

    def charset_of(self, collation: str) -> str:
        known = collation_id(self.collation_name(collation), self.mariadb)
        if known is None:
            raise _NotExactError(f"collation {collation!r} is not known")
        return known[1]

    def default_collation(self, charset: str) -> str:
        info = charset_info(self.charset_name(charset), self.mariadb, self.version)
        if info is None:
            raise _NotExactError(f"character set {charset!r} is not known")
        return info[1]

    def maxlen(self, charset: str) -> int:
        info = charset_info(self.charset_name(charset), self.mariadb, self.version)
        if info is None:
            raise _NotExactError(f"character set {charset!r} is not known")
        return info[0]

    def bin_collation(self, charset: str) -> str:
        charset = self.charset_name(charset)
        name = "binary" if charset == "binary" else f"{charset}_bin"
        if collation_id(name, self.mariadb) is None:
            raise _NotExactError(f"no binary collation of {charset!r} is known")
        return name

    def labels_in(self, labels: tuple[str, ...], charset: str, collation: str) -> tuple[str, ...]:
        """ENUM/SET labels as the server keeps them in ``charset``: a character the
        character set lacks becomes ``?``."""
        if all(label.isascii() for label in labels):
            return labels
        if charset in _UNICODE_FULL:
            return labels
        if charset in _UNICODE_BMP:
            return tuple(_replace_missing(label, lambda c: ord(c) <= 0xFFFF) for label in labels)
        repertoire = self.repertoire(collation)
        if repertoire is None:
            raise _NotExactError(f"ENUM/SET labels with characters that {charset} may lack")
        return tuple(_replace_missing(label, repertoire.__contains__) for label in labels)

    def repertoire(self, collation: str) -> frozenset[str] | None:
        """The characters of a single-byte character set (None for the others)."""
        known = collation_id(self.collation_name(collation), self.mariadb)
        if known is None or self.maxlen(known[1]) != 1:
            return None
        decode = decoder_for_collation(known[0], self.mariadb)
        if decode is None:
            return None
        chars = set()
        for byte in range(256):
            try:
                chars.add(decode(bytes([byte])))
            except UnicodeDecodeError:
                continue
        return frozenset(chars)

    def resolve(self, charset: str | None, collation: str | None) -> tuple[str, str] | None:
        """(charset, collation) of a CHARACTER SET / COLLATE pair (None when neither)."""
        if charset == "default" or collation == "default":
            raise _NotExactError("CHARACTER SET / COLLATE DEFAULT")
        if collation is not None:
            coll = self.collation_name(collation)
            cs = self.charset_of(coll)
            if charset is not None and self.charset_name(charset) != cs:
                raise _NotExactError(f"collation {collation} is not of character set {charset}")
            return cs, coll
        if charset is not None:
            cs = self.charset_name(charset)
            return cs, self.default_collation(cs)
        return None


# -- the statement's run -------------------------------------------------------------------


class _Run:
    """One reading of one statement: the tables as it leaves them."""

    def __init__(self, ctx: DdlContext, statement: str) -> None:
        self.ctx = ctx
        self.statement = statement
        self.cs = _Charsets(ctx.mariadb, ctx.version)
        self.result: dict[TableKey, _State] = {}
        self.databases: dict[str, str | None] = {}
        self.touched: set[TableKey] = set()
        mode = ctx.sql_mode or 0
        self.real_as_float = bool(mode & MODE_REAL_AS_FLOAT)
        self.oracle = ctx.mariadb and bool(mode & MODE_ORACLE)

    # -- names and states ------------------------------------------------------------

    def key(self, table: exp.Expr) -> TableKey:
        assert isinstance(table, exp.Table)
        name = table.name
        db = table.args.get("db")
        schema = db.name if isinstance(db, exp.Identifier) else self.ctx.default_schema
        if not schema:
            raise DdlError(self.statement, f"no database for table {name!r}")
        return (schema, name)

    def current(self, key: TableKey) -> _State:
        if key in self.result:
            return self.result[key]
        return self.ctx.lookup(*key)

    def exists(self, key: TableKey) -> bool | None:
        if key in self.result:
            state = self.result[key]
            return None if isinstance(state, _Unknown) else state is not None
        if self.ctx.exists is not None:
            known = self.ctx.exists(*key)
            if known is not None:
                return known
        return True if self.ctx.lookup(*key) is not None else None

    def set(self, key: TableKey, state: _State) -> None:
        self.touched.add(key)
        if isinstance(state, TableDef) and (state.schema, state.name) != key:
            state = replace(state, schema=key[0], name=key[1])
        self.result[key] = state

    def effect(self) -> DdlEffect:
        tables = {k: v for k, v in self.result.items() if not isinstance(v, _Unknown)}
        unknown = {k: v.reason for k, v in self.result.items() if isinstance(v, _Unknown)}
        return DdlEffect(tables, unknown, dict(self.databases), frozenset(self.touched))

    def database_default(self, schema: str) -> tuple[str, str] | None:
        collation = self.ctx.database_collation(schema)
        if collation is None:
            return None
        try:
            return self.cs.charset_of(collation), self.cs.collation_name(collation)
        except _NotExactError:
            return None

    # -- statements ------------------------------------------------------------------

    def run(self, tree: exp.Expr) -> None:
        if isinstance(tree, d.CreateTable):
            self.create_table(tree)
        elif isinstance(tree, d.AlterTable):
            self.alter_table(tree)
        elif isinstance(tree, d.DropTables):
            for table in tree.expressions:
                key = self.key(table)
                if tree.args.get("temporary"):
                    continue  # the persistent table of the name, if any, stays
                self.set(key, None)
        elif isinstance(tree, d.RenameTables):
            for pair in tree.expressions:
                old_key, new_key = (self.key(t) for t in pair.expressions)
                if tree.args.get("exists") and self.exists(old_key) is False:
                    continue  # MariaDB's RENAME TABLE IF EXISTS skips a missing table
                state = self.current(old_key)
                self.set(old_key, None)
                if state is None:
                    state = _Unknown(f"renamed from {old_key[0]}.{old_key[1]}, not known")
                self.set(new_key, state)
        elif isinstance(tree, (d.TruncateTable, d.CreateIndex)):
            self.touched.add(self.key(tree.this))
        elif isinstance(tree, d.DropIndex):
            key = self.key(tree.this)
            self.touched.add(key)
            if tree.expression.name.lower() == "primary":
                self.drop_primary_key(key)
        elif isinstance(tree, d.CreateSequence):
            self.create_sequence(tree)
        elif isinstance(tree, d.AlterSequence):
            self.alter_sequence(tree)
        elif isinstance(tree, (d.CreateDatabase, d.AlterDatabase, d.DropDatabase)):
            self.database(tree)
        else:  # pragma: no cover - parse_ddl returns only the kinds above
            raise DdlError(self.statement, f"no interpretation of {type(tree).__name__}")

    def drop_primary_key(self, key: TableKey) -> None:
        state = self.current(key)
        if isinstance(state, TableDef):
            self.set(key, replace(state, primary_key=()))
        else:
            self.set(key, _Unknown("its primary key was dropped while its definition was unknown"))

    # -- CREATE TABLE ------------------------------------------------------------------

    def create_table(self, node: d.CreateTable) -> None:
        key = self.key(node.this)
        self.touched.add(key)
        if node.args.get("temporary"):
            self.set(
                key,
                _Unknown(
                    "a temporary table of this name was created: in the session that has it, "
                    "the statements on the name are about that table"
                ),
            )
            return
        if node.args.get("exists") and not node.args.get("replace"):
            exists = self.exists(key)
            if exists:
                return
            if exists is None and not self.ctx.mariadb:
                self.set(
                    key,
                    _Unknown(
                        "CREATE TABLE IF NOT EXISTS of a table whose existence is not known "
                        "(MySQL logs it also when the table existed)"
                    ),
                )
                return
        like = node.args.get("like")
        if like is not None:
            source = self.current(self.key(like))
            if source is None:
                source = _Unknown(f"created LIKE {like.sql()}, whose definition is not known")
            self.set(key, source)
            return
        try:
            self.set(key, self.new_table(key, node))
        except _NotExactError as exc:
            self.set(key, _Unknown(str(exc)))

    def new_table(self, key: TableKey, node: d.CreateTable) -> TableDef:
        if node.args.get("query"):
            raise _NotExactError("CREATE TABLE ... SELECT: the query's columns are not known")
        options = node.args.get("options") or []
        base = self.database_default(key[0])
        table_cs = self.table_charset(options, base)
        columns: list[ColumnDef] = []
        pk: list[str] = []
        for element in node.expressions:
            if isinstance(element, exp.ColumnDef):
                column, inline_pk = self.column(element, table_cs)
                columns.append(column)
                if inline_pk:
                    if pk:
                        raise _NotExactError("two primary keys")
                    pk = [column.name]
            elif isinstance(element, d.PrimaryKeyDef):
                if pk:
                    raise _NotExactError("two primary keys")
                pk = self.key_columns(element)
            elif not isinstance(element, d.Opaque):
                raise _NotExactError(f"table element {type(element).__name__}")
        return self.table(key, columns, pk, table_cs)

    def table(
        self,
        key: TableKey,
        columns: list[ColumnDef],
        pk: list[str],
        charset: tuple[str, str] | None,
    ) -> TableDef:
        names = {c.name.lower(): i for i, c in enumerate(columns)}
        if len(names) != len(columns):
            raise _NotExactError("a column name twice")
        key_names = []
        for name in pk:
            i = names.get(name.lower())
            if i is None:
                raise _NotExactError(f"primary key column {name!r} is not in the table")
            columns[i] = replace(columns[i], nullable=False)
            key_names.append(columns[i].name)
        return TableDef(
            schema=key[0],
            name=key[1],
            columns=tuple(columns),
            primary_key=tuple(key_names),
            charset=charset[0] if charset else None,
            collation=charset[1] if charset else None,
        )

    def key_columns(self, element: d.PrimaryKeyDef) -> list[str]:
        if element.args.get("functional"):
            raise _NotExactError("a primary key with an expression part")
        return [e.name for e in element.expressions]

    def table_charset(
        self, options: Iterable[exp.Expr], base: tuple[str, str] | None
    ) -> tuple[str, str] | None:
        """The table's default (charset, collation): its options over ``base``."""
        charset: str | None = None
        collation: str | None = None
        for option in options:
            if not isinstance(option, d.TableOption):
                raise _NotExactError(f"table option {type(option).__name__}")
            name = option.this
            if name == "CHARACTER SET":
                charset = option.expression.name
            elif name == "COLLATE":
                collation = option.expression.name
            elif name == "WITH SYSTEM VERSIONING":
                raise _NotExactError("system versioning adds hidden row start and end columns")
            # every other option (ENGINE, ROW_FORMAT, SEQUENCE=1 with its columns written,
            # MariaDB's engine-defined ones) leaves the columns as written
        resolved = self.cs.resolve(charset, collation)
        return resolved if resolved is not None else base

    # -- columns ----------------------------------------------------------------------

    def column(
        self,
        node: exp.ColumnDef,
        table_cs: tuple[str, str] | None,
        convert: tuple[str, str] | None = None,
    ) -> tuple[ColumnDef, bool]:
        """The column of a definition, and whether it says PRIMARY KEY; ``convert``: the
        character set of a CONVERT TO in the same ALTER TABLE, which every character
        column takes whatever its definition says."""
        kind_node = node.args.get("kind")
        if not isinstance(kind_node, d.ColumnType):
            raise _NotExactError("a column without a type")
        if self.oracle:
            raise _NotExactError("MariaDB's sql_mode=ORACLE gives column types other meanings")
        name = node.name
        phrase = kind_node.this
        kind = _KINDS.get(phrase)
        if kind is None:
            raise _NotExactError(f"column type {phrase}")
        if kind == "double" and phrase == "REAL" and self.real_as_float:
            kind = "float"
        if kind == "geometrycollection" and not self.ctx.mariadb:
            kind = "geomcollection"
        params = [_label_text(p) for p in kind_node.expressions]
        numbers = [int(p) for p in params] if kind not in ("enum", "set") else []
        unsigned = bool(kind_node.args.get("unsigned") or kind_node.args.get("zerofill"))
        nullable = True
        null_given = False
        forced_not_null = False
        generated = invisible = inline_pk = False
        compressed = bool(kind_node.args.get("compressed"))
        collate: str | None = None
        for attr in node.constraints:
            if not isinstance(attr, d.ColumnAttr):
                raise _NotExactError(f"column attribute {type(attr).__name__}")
            what = attr.this
            if what == "NULL":
                nullable, null_given = True, True
            elif what == "NOT NULL":
                nullable, null_given = False, True
            elif what in ("AUTO_INCREMENT", "SERIAL DEFAULT VALUE"):
                forced_not_null = True
            elif what == "PRIMARY KEY":
                forced_not_null = inline_pk = True
            elif what == "COLLATE":
                collate = attr.expression.name
            elif what == "GENERATED":
                generated = True
            elif what == "INVISIBLE":
                invisible = True
            elif what == "VISIBLE":
                invisible = False
            elif what == "COMPRESSED":
                compressed = True
            elif what == "SYSTEM VERSIONING":
                raise _NotExactError("system versioning of a column")
            elif what not in d.ATTRIBUTE_KINDS:
                raise _NotExactError(f"column attribute {what}")
        if phrase == "SERIAL":
            unsigned = forced_not_null = True
        if kind == "timestamp" and not null_given and not generated:
            if self.ctx.explicit_defaults_for_timestamp is None:
                raise _NotExactError(
                    "TIMESTAMP nullability with explicit_defaults_for_timestamp unknown"
                )
            if not self.ctx.explicit_defaults_for_timestamp:
                nullable = False
        if forced_not_null:
            nullable = False
        if unsigned and kind not in _SIGNED_KINDS:
            raise _NotExactError(f"UNSIGNED {phrase}")
        if compressed and (not self.ctx.mariadb or kind not in _COMPRESSIBLE):
            raise _NotExactError(f"COMPRESSED {phrase}")
        column = ColumnDef(
            name=name,
            data_type=kind,
            unsigned=unsigned,
            nullable=nullable,
            generated=generated,
            invisible=invisible,
            compressed=compressed,
        )
        column = self.sized(column, phrase, numbers, [str(p) for p in params])
        column = self.charset(column, kind_node, phrase, collate, table_cs, convert)
        return column, inline_pk

    def sized(
        self, column: ColumnDef, phrase: str, numbers: list[int], labels: list[str]
    ) -> ColumnDef:
        """``column`` with its length, precision, fsp or labels from the type's parameters."""
        kind = column.data_type
        n = len(numbers)
        if kind in ("enum", "set"):
            if not labels:
                raise _NotExactError(f"{phrase} without members")
            return replace(column, labels=tuple(labels))
        if kind in _INTEGERS or kind == "year":
            if n > 1:
                raise _NotExactError(f"{phrase} with {n} parameters")
            return column
        if kind == "decimal":
            if n > 2:
                raise _NotExactError(f"{phrase} with {n} parameters")
            precision = numbers[0] if n else 10
            scale = numbers[1] if n > 1 else 0
            if precision == 0:
                precision = 10  # DECIMAL(0) is DECIMAL(10)
            return replace(column, precision=precision, scale=scale)
        if kind in ("float", "double"):
            if n > 2:
                raise _NotExactError(f"{phrase} with {n} parameters")
            if kind == "float" and n == 1:
                if numbers[0] > 53:
                    raise _NotExactError(f"FLOAT({numbers[0]})")
                if numbers[0] > 24:
                    return replace(column, data_type="double")
            return column
        if kind == "bit":
            if n > 1:
                raise _NotExactError(f"{phrase} with {n} parameters")
            return replace(column, length=numbers[0] if n else 1)
        if kind in _TEMPORAL:
            if n > 1 or (n and numbers[0] > 6):
                raise _NotExactError(f"{phrase}{tuple(numbers)}")
            return replace(column, fsp=numbers[0] if n else 0)
        if kind in ("char", "binary"):
            if n > 1 or (n and numbers[0] > 255):
                raise _NotExactError(f"{phrase}{tuple(numbers)}")
            return replace(column, length=numbers[0] if n else 1)
        if kind in ("varchar", "varbinary", "vector"):
            if n != 1:
                raise _NotExactError(f"{phrase} needs one length")
            return replace(column, length=numbers[0])
        if kind in TEXT_TYPES or kind in BLOB_TYPES:
            if n > 1:
                raise _NotExactError(f"{phrase} with {n} parameters")
            if n and phrase in ("TEXT", "BLOB"):
                # TEXT(n) / BLOB(n): the smallest kind that holds n characters / bytes;
                # the bytes of TEXT(n) are counted when the character set is known
                return replace(column, length=numbers[0])
            if n:
                raise _NotExactError(f"{phrase}({numbers[0]})")
            return column
        if n:
            raise _NotExactError(f"{phrase} with parameters")
        return column

    def charset(
        self,
        column: ColumnDef,
        kind_node: d.ColumnType,
        phrase: str,
        collate: str | None,
        table_cs: tuple[str, str] | None,
        convert: tuple[str, str] | None = None,
    ) -> ColumnDef:
        """``column`` with its character set and collation (and the binary type a
        ``CHARACTER SET binary`` makes of a character type)."""
        kind = column.data_type
        charset: str | None = kind_node.args.get("charset")
        binary = bool(kind_node.args.get("binary"))
        if phrase in _NATIONAL:
            if charset is not None:
                raise _NotExactError(f"{phrase} with a character set")
            charset = "utf8mb3"
        if kind == "json" and self.ctx.mariadb:
            # MariaDB: JSON is LONGTEXT CHARSET utf8mb4 COLLATE utf8mb4_bin (COLLATE may change it)
            if charset is not None or binary:
                raise _NotExactError("JSON with a character set")
            collation = self.cs.collation_name(collate) if collate else "utf8mb4_bin"
            if self.cs.charset_of(collation) != "utf8mb4":
                raise _NotExactError(f"JSON with collation {collation}")
            json_cs = convert if convert is not None else ("utf8mb4", collation)
            return replace(column, data_type="longtext", charset=json_cs[0], collation=json_cs[1])
        text_length = (
            column.length if kind in ("text", "blob") and phrase in ("TEXT", "BLOB") else None
        )
        if kind in ("text", "blob"):
            column = replace(column, length=None)
        if kind not in _CHARACTER:
            if charset is not None or binary or collate is not None:
                raise _NotExactError(f"a character set or collation for {phrase}")
            if text_length is not None:
                column = replace(column, data_type=_sized(kind, text_length))
            return column
        if collate is not None or charset is not None:
            resolved = self.cs.resolve(charset, collate)
            assert resolved is not None
            cs, coll = resolved
            if binary and (collate is None or not self.ctx.mariadb):
                coll = self.cs.bin_collation(cs)  # MySQL: BINARY wins over COLLATE
            elif binary and not coll.endswith("_bin"):
                raise _NotExactError(f"BINARY with COLLATE {coll}")  # MariaDB refuses it
        else:
            if table_cs is None:
                raise _NotExactError("the table's default character set is not known")
            cs, coll = table_cs
            if binary:
                coll = self.cs.bin_collation(cs)
        if convert is not None and cs != "binary":
            if column.labels and not all(label.isascii() for label in column.labels):
                raise _NotExactError("non-ASCII ENUM/SET labels defined with CONVERT TO")
            cs, coll = convert
            if binary:
                coll = self.cs.bin_collation(cs)
        if column.labels and cs != "binary":
            # the server drops trailing spaces of the members (not of binary ones)
            column = replace(column, labels=tuple(x.rstrip(" ") for x in column.labels))
        if cs == "binary":
            if kind in ("enum", "set"):
                if not all(label.isascii() for label in column.labels):
                    # their bytes are kept; information_schema shows each non-ASCII one as ?
                    raise _NotExactError("non-ASCII ENUM/SET labels in the binary character set")
                if self.ctx.mariadb:
                    return replace(column, charset="binary", collation="binary")
                return column
            kind = _TO_BINARY[kind]
            column = replace(column, data_type=kind)
            if text_length is not None:
                column = replace(column, data_type=_sized(kind, text_length))
            return column
        if text_length is not None:
            column = replace(column, data_type=_sized(kind, text_length * self.cs.maxlen(cs)))
        if kind == "varchar" and (column.length or 0) * self.cs.maxlen(cs) > _MAX_VARCHAR_BYTES:
            raise _NotExactError(f"VARCHAR({column.length}) in {cs} passes 65535 bytes")
        if column.labels:
            column = replace(column, labels=self.cs.labels_in(column.labels, cs, coll))
        return replace(column, charset=cs, collation=coll)

    # -- ALTER TABLE -------------------------------------------------------------------

    def alter_table(self, node: d.AlterTable) -> None:
        key = self.key(node.this)
        self.touched.add(key)
        actions = list(node.args.get("actions") or [])
        new_key = key
        for action in actions:
            if isinstance(action, exp.AlterRename):
                new_key = self.key(action.this)
            elif isinstance(action, d.Opaque) and action.this in (
                "EXCHANGE PARTITION",
                "CONVERT PARTITION",
                "CONVERT TABLE",
            ):
                other = self.key(action.expression)
                self.touched.add(other)
                if action.this == "CONVERT PARTITION":
                    self.set(other, _Unknown("made from a partition of another table"))
                elif action.this == "CONVERT TABLE":
                    self.set(other, None)
        old = self.current(key)
        if not any(_changes_definition(a) for a in actions):
            new: _State = old
        elif isinstance(old, TableDef):
            try:
                new = self.altered(old, actions)
            except _NotExactError as exc:
                new = _Unknown(str(exc))
        else:
            new = (
                old
                if isinstance(old, _Unknown)
                else _Unknown("altered while its definition was not known")
            )
        if new_key != key:
            self.set(key, None)
            if new is None:
                new = _Unknown(f"renamed from {key[0]}.{key[1]}, not known")
            self.set(new_key, new)
        elif new is not old:
            self.set(key, new)

    def altered(self, old: TableDef, actions: list[exp.Expr]) -> TableDef:
        """``old`` after the actions of one ALTER TABLE, in the order the server applies them."""
        cs = self.cs
        # the table's default character set first: new columns take it
        charset: str | None = None
        collation: str | None = None
        convert: tuple[str, str] | None = None
        for action in actions:
            if isinstance(action, d.TableOption):
                if action.this == "CHARACTER SET":
                    charset = action.expression.name
                elif action.this == "COLLATE":
                    collation = action.expression.name
                elif action.this == "WITH SYSTEM VERSIONING":
                    raise _NotExactError("system versioning adds hidden row start and end columns")
            elif isinstance(action, d.ConvertCharset):
                coll = action.expression.name if action.expression else None
                target = cs.resolve(action.this.name, coll)
                if convert is not None and target != convert:
                    raise _NotExactError("two CONVERT TO CHARACTER SET")  # the servers refuse it
                convert = target
        table_cs: tuple[str, str] | None
        if old.charset is not None and old.collation is not None:
            table_cs = (old.charset, old.collation)
        else:
            table_cs = None
        if convert is not None:
            table_cs = convert
        if charset is not None or collation is not None:
            # with CONVERT TO too (MariaDB), the columns take CONVERT's, the table this one
            table_cs = cs.resolve(charset, collation)

        old_names = {c.name.lower() for c in old.columns}
        drops: dict[str, bool] = {}
        changes: dict[str, d.ChangeColumn] = {}
        renames: dict[str, str] = {}
        visibility: dict[str, bool] = {}
        create: list[tuple[exp.ColumnDef, d.ChangeColumn | None]] = []
        pk: list[str] | None = list(old.primary_key)
        drop_pk = False
        add_pk: list[str] | None = None
        added: set[str] = set()
        for action in actions:
            if isinstance(action, exp.ColumnDef):
                name = action.name.lower()
                if action.args.get("exists") and (name in old_names or name in added):
                    continue  # ADD COLUMN IF NOT EXISTS of a column the table has
                added.add(name)
                create.append((action, None))
            elif isinstance(action, d.ChangeColumn):
                source = action.args.get("rename_from") or action.this.this
                name = source.name.lower()
                if name not in old_names:
                    if action.args.get("exists"):
                        continue
                    raise _NotExactError(f"no column {source.name!r} to change")
                if name in changes or name in renames:
                    raise _NotExactError(f"column {source.name!r} changed twice")
                changes[name] = action
                added.add(action.this.name.lower())  # what a later ADD IF NOT EXISTS sees
                create.append((action.this, action))
            elif isinstance(action, d.DropColumn):
                name = action.name.lower()
                if name not in old_names:
                    if action.args.get("exists"):
                        continue
                    raise _NotExactError(f"no column {action.name!r} to drop")
                drops[name] = True
            elif isinstance(action, exp.RenameColumn):
                name = action.this.name.lower()
                if name not in old_names:
                    if action.args.get("exists"):
                        continue
                    raise _NotExactError(f"no column {action.this.name!r} to rename")
                if name in renames or name in changes:
                    raise _NotExactError(f"column {action.this.name!r} renamed twice")
                renames[name] = action.args["to"].name
            elif isinstance(action, exp.AlterColumn):
                name = action.this.name.lower()
                if name not in old_names:
                    if action.args.get("exists"):
                        continue
                    raise _NotExactError(f"no column {action.this.name!r} to alter")
                visible = action.args.get("visible")
                if visible is not None:
                    visibility[name] = visible == "INVISIBLE"
            elif isinstance(action, d.PrimaryKeyDef):
                if add_pk is not None:
                    raise _NotExactError("two primary keys added")
                add_pk = self.key_columns(action)
            elif isinstance(action, exp.DropPrimaryKey) or (
                isinstance(action, d.Opaque)
                and action.this == "DROP INDEX"
                and action.expression.name.lower() == "primary"
            ):
                drop_pk = True
            elif not isinstance(
                action, (d.TableOption, d.ConvertCharset, d.Opaque, exp.AlterRename)
            ):
                raise _NotExactError(f"ALTER TABLE action {type(action).__name__}")

        # the columns kept, in place (a change without a position takes the old one)
        placed: list[ColumnDef | d.ChangeColumn] = []
        built: dict[int, ColumnDef] = {}
        for kept in old.columns:
            name = kept.name.lower()
            if name in drops:
                continue
            change = changes.get(name)
            if change is not None:
                placed.append(change)
                continue
            if name in renames:
                kept = kept.renamed(renames[name])  # noqa: PLW2901
            if name in visibility:
                kept = replace(kept, invisible=visibility[name])  # noqa: PLW2901
            placed.append(kept)
        inline_pk: list[str] = []
        fresh: set[int] = set()
        for definition, change in create:
            column, is_pk = self.column(definition, convert or table_cs, convert)
            fresh.add(id(column))
            if (
                convert is not None
                and change is not None
                and not self.ctx.mariadb
                and column.data_type in TEXT_TYPES
            ):
                # MySQL sizes it by the changed column's old length in characters
                raise _NotExactError("a TEXT column changed with CONVERT TO CHARACTER SET")
            if is_pk:
                inline_pk.append(column.name)
            built[id(change if change is not None else definition)] = column
            position = definition.args.get("position")
            if change is not None and position is None:
                continue
            if change is not None:
                placed.remove(change)
            entry: ColumnDef | d.ChangeColumn = change if change is not None else column
            if position is None:
                placed.append(entry)
            elif position.args.get("position") == "FIRST":
                placed.insert(0, entry)
            else:
                after = position.this.name.lower()
                names = [self.placed_name(p, built) for p in placed]
                if after not in names:
                    raise _NotExactError(
                        f"no column {position.this.name!r} to place a column after"
                    )
                placed.insert(names.index(after) + 1, entry)
        columns = [p if isinstance(p, ColumnDef) else built[id(p)] for p in placed]

        # the primary key: old key parts renamed or dropped, then DROP / ADD
        renamed = dict(renames)
        for name, change in changes.items():
            renamed[name] = built[id(change)].name
        if pk:
            pk = [renamed.get(n.lower(), n) for n in pk if n.lower() not in drops]
        if drop_pk:
            pk = []
        if add_pk is not None and inline_pk:
            raise _NotExactError("a second primary key")
        new_key = add_pk if add_pk is not None else inline_pk
        if new_key:
            if pk or len(inline_pk) > 1:
                raise _NotExactError("a second primary key")
            pk = new_key
        if convert is not None:
            # the columns this ALTER defines already have the new character set
            columns = [c if id(c) in fresh else self.converted(c, convert) for c in columns]
        # the key's columns are NOT NULL; a column that leaves the key stays NOT NULL
        return self.table((old.schema, old.name), columns, pk or [], table_cs)

    @staticmethod
    def placed_name(entry: ColumnDef | d.ChangeColumn, built: dict[int, ColumnDef]) -> str:
        if isinstance(entry, ColumnDef):
            return entry.name.lower()
        return built[id(entry)].name.lower() if id(entry) in built else entry.this.name.lower()

    def converted(self, column: ColumnDef, target: tuple[str, str]) -> ColumnDef:
        """A column after CONVERT TO CHARACTER SET: every character column (not those of
        the binary character set) takes the new one; TEXT kinds grow to hold as many
        characters as before."""
        if column.charset is None or column.charset == "binary":
            return column
        cs, coll = target
        old_max = self.cs.maxlen(column.charset)
        new_max = self.cs.maxlen(cs)
        kind = column.data_type
        if kind in TEXT_TYPES:
            chars = _TEXT_BYTES[kind] // old_max
            kind = _sized(kind, chars * new_max)
        if cs == "binary":
            raise _NotExactError("CONVERT TO CHARACTER SET binary")
        if kind == "varchar" and (column.length or 0) * new_max > _MAX_VARCHAR_BYTES:
            raise _NotExactError(f"VARCHAR({column.length}) in {cs} passes 65535 bytes")
        if column.labels and not _same_label_bytes(column.labels, column.charset, cs):
            # the servers keep a label's bytes and read them in the new character set
            raise _NotExactError(
                f"CONVERT TO CHARACTER SET {cs} of ENUM/SET {column.name!r}: the server reads "
                f"the labels' {column.charset} bytes as {cs}"
            )
        return replace(column, data_type=kind, charset=cs, collation=coll)

    # -- sequences ----------------------------------------------------------------------

    def create_sequence(self, node: d.CreateSequence) -> None:
        key = self.key(node.this)
        self.touched.add(key)
        if node.args.get("temporary"):
            self.set(key, _Unknown("a temporary sequence of this name was created"))
            return
        if node.args.get("exists") and not node.args.get("replace"):
            exists = self.exists(key)
            if exists:
                return
        try:
            self.set(key, self.sequence(key, node.args.get("kind"), self.database_default(key[0])))
        except _NotExactError as exc:
            self.set(key, _Unknown(str(exc)))

    def alter_sequence(self, node: d.AlterSequence) -> None:
        key = self.key(node.this)
        self.touched.add(key)
        kind = node.args.get("kind")
        if kind is None:
            return
        old = self.current(key)
        if not isinstance(old, TableDef):
            self.set(key, _Unknown("sequence altered while its definition was not known"))
            return
        charset = (old.charset, old.collation) if old.charset and old.collation else None
        try:
            self.set(key, self.sequence(key, kind, charset))
        except _NotExactError as exc:
            self.set(key, _Unknown(str(exc)))

    def sequence(
        self, key: TableKey, kind: exp.Expr | None, charset: tuple[str, str] | None
    ) -> TableDef:
        """MariaDB's sequence table: its value columns of the sequence's type (BIGINT by
        default), then increment, cache_size, cycle_option, cycle_count."""
        value = ColumnDef("next_not_cached_value", "bigint", nullable=False)
        if kind is not None:
            assert isinstance(kind, d.ColumnType)
            typed, _ = self.column(exp.ColumnDef(this=exp.to_identifier("v"), kind=kind), None)
            if typed.data_type not in _INTEGERS:
                raise _NotExactError(f"sequence of type {kind.this}")
            value = replace(value, data_type=typed.data_type, unsigned=typed.unsigned)
        columns = [
            value,
            value.renamed("minimum_value"),
            value.renamed("maximum_value"),
            value.renamed("start_value"),
            ColumnDef("increment", "bigint", nullable=False),
            ColumnDef("cache_size", "bigint", unsigned=True, nullable=False),
            ColumnDef("cycle_option", "tinyint", unsigned=True, nullable=False),
            ColumnDef("cycle_count", "bigint", nullable=False),
        ]
        return self.table(key, columns, [], charset)

    # -- databases ----------------------------------------------------------------------

    def database(self, node: exp.Expr) -> None:
        if isinstance(node, d.DropDatabase):
            self.databases[node.name] = None
            return
        if isinstance(node, d.AlterDatabase):
            this = node.args.get("this")
            name = this.name if this is not None else self.ctx.default_schema
            if not name:
                raise DdlError(self.statement, "ALTER DATABASE without a database")
        else:
            assert isinstance(node, d.CreateDatabase)
            name = node.name
            if node.args.get("replace"):
                self.databases[name] = None  # its tables are dropped
                return
            if node.args.get("exists") and self.ctx.database_collation(name) is not None:
                return  # both servers log CREATE DATABASE IF NOT EXISTS of one that exists
            # (a database whose collation is not known here is taken as a new one)
        charset: str | None = None
        collation: str | None = None
        for option in node.args.get("options") or []:
            if option.this == "CHARACTER SET":
                charset = option.expression.name
            elif option.this == "COLLATE":
                collation = option.expression.name
        try:
            resolved = self.cs.resolve(charset, collation)
        except _NotExactError:
            self.databases[name] = None
            return
        if resolved is not None:
            self.databases[name] = resolved[1]
        elif isinstance(node, d.CreateDatabase):
            server = self.ctx.server_collation
            self.databases[name] = self.cs.collation_name(server) if server else None


def _label_text(param: exp.Expr) -> str:
    """A type parameter's text: a number or string as written; a hex or bit literal's
    bytes when they are ASCII (other bytes are no text this module can tell)."""
    if isinstance(param, (exp.HexString, exp.BitString)):
        digits = str(param.this)
        if isinstance(param, exp.HexString):
            raw = bytes.fromhex(digits if len(digits) % 2 == 0 else "0" + digits)
        else:
            raw = int(digits or "0", 2).to_bytes((len(digits) + 7) // 8, "big")
        if not raw.isascii():
            raise _NotExactError("an ENUM/SET label of non-ASCII bytes")
        return raw.decode("ascii")
    return str(param.this)


def _changes_definition(action: exp.Expr) -> bool:
    """Whether an ALTER TABLE action may change the columns, key or default charset."""
    if isinstance(action, d.TableOption):
        return bool(action.this in ("CHARACTER SET", "COLLATE", "WITH SYSTEM VERSIONING"))
    if isinstance(action, d.Opaque):
        return bool(action.this == "DROP INDEX" and action.expression.name.lower() == "primary")
    if isinstance(action, exp.AlterColumn):
        return action.args.get("visible") is not None
    return not isinstance(action, exp.AlterRename)


def _parse(text: str, ctx: DdlContext) -> exp.Expr:
    mode = ctx.sql_mode or 0
    return d.parse_ddl(
        text,
        ansi_quotes=bool(mode & MODE_ANSI_QUOTES),
        backslash_escapes=not mode & MODE_NO_BACKSLASH_ESCAPES,
    )


def _interpret_text(statement: str, text: str, ctx: DdlContext) -> DdlEffect:
    run = _Run(ctx, statement)
    try:
        tree = _parse(text, ctx)
    except ParseError as exc:
        reason = f"the statement is not understood ({str(exc).splitlines()[0]})"
        mode = ctx.sql_mode or 0
        tables = d.salvage_tables(
            text,
            ansi_quotes=bool(mode & MODE_ANSI_QUOTES),
            backslash_escapes=not mode & MODE_NO_BACKSLASH_ESCAPES,
        )
        if tables is None:
            raise DdlError(statement, reason) from exc
        for table in tables:
            run.set(run.key(table), _Unknown(reason))
        return run.effect()
    run.run(tree)
    return run.effect()


def interpret(statement: str, ctx: DdlContext) -> DdlEffect | None:
    """The effect of one DDL statement on table and database definitions.

    Returns None when the statement changes no table or database definition
    (it is not DDL, or DDL of views, routines, users, triggers, events; a DROP
    TEMPORARY TABLE).

    Raises:
        DdlError: table or database DDL whose tables cannot even be named.
    """
    from .statements import StatementKind, classify

    if classify(statement) is not StatementKind.TABLE_DDL:
        return None
    mode = ctx.sql_mode or 0
    try:
        readings = d.expand_executable_comments(
            statement,
            ctx.mariadb,
            ctx.version,
            backslash_escapes=not mode & MODE_NO_BACKSLASH_ESCAPES,
            ansi_quotes=bool(mode & MODE_ANSI_QUOTES),
        )
    except d.ExecutableCommentError as exc:
        raise DdlError(statement, str(exc)) from exc
    effects = [_interpret_text(statement, text, ctx) for text in readings]
    effect = effects[0] if len(effects) == 1 else _merge(statement, effects)
    if not (effect.tables or effect.unknown or effect.databases or effect.touched):
        return None
    return effect


def _merge(statement: str, effects: list[DdlEffect]) -> DdlEffect:
    """One effect of the readings of a statement whose executable comments depend on the
    server's patch level: what they agree on; the tables they disagree on are unknown."""
    first = effects[0]
    if any(e == first for e in effects[1:]) and all(e == first for e in effects):
        return first
    keys = set().union(*(set(e.tables) | set(e.unknown) for e in effects))
    tables: dict[TableKey, TableDef | None] = {}
    unknown: dict[TableKey, str] = {}
    for key in keys:
        states = [e.tables.get(key, e.unknown.get(key, "")) for e in effects]
        if all(s == states[0] for s in states) and key in first.tables:
            tables[key] = first.tables[key]
        elif key in first.unknown and all(key in e.unknown for e in effects):
            unknown[key] = first.unknown[key]
        else:
            unknown[key] = (
                "the statement's executable comments run or not by the server's patch level"
            )
    databases = dict(first.databases)
    for e in effects[1:]:
        if e.databases != first.databases:
            raise DdlError(
                statement,
                "the effect on databases depends on the server's patch level (executable comments)",
            )
    touched = frozenset().union(*(e.touched for e in effects))
    return DdlEffect(tables, unknown, databases, touched)
