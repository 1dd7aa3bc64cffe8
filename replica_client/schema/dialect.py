"""The SQL of table and database DDL as MariaDB and MySQL write it to the binlog. No I/O.

sqlglot's MySQL dialect tokenizes the text (MySQL's quoting and escapes) and
parses default values and the table references of row statements; its parser
is extended here (:class:`DdlParser`) with the grammar of the DDL statements
that define tables, as both servers accept it, where sqlglot lacks it or reads
it for another dialect: column types with every alias and attribute
(``NATIONAL VARCHAR``, ``LONG VARBINARY``, ``SERIAL``, ``UNSIGNED ZEROFILL``,
``CHARACTER SET binary``, MariaDB's ``COMPRESSED``, ``PERSISTENT``,
``UUID``...), table elements and options, every ALTER TABLE action of both
flavours, ``RENAME TABLE`` lists, sequences and databases. The result is a
sqlglot tree made of sqlglot's own nodes (identifiers, literals, tables) and
the DDL nodes defined here, which keep exactly what decides the columns of a
table and mark the rest as opaque (index definitions, CHECK and parenthesized
DEFAULT expressions, partitioning): a clause the grammar does not know is a
``ParseError``, never skipped. :func:`read_dml` reads the target tables of an
INSERT, REPLACE, UPDATE, DELETE or LOAD statement the same way.

Before tokenizing, :func:`expand_executable_comments` does what the server's
lexer does with ``/*!NNNNN ... */`` and ``/*M!NNNNNN ... */``: their content is
part of the statement when the server's version is at least ``NNNNN``
(MariaDB ignores ``/*!`` comments for MySQL 5.7 to 9.x, 50700-99999, and only
MariaDB reads ``/*M!``). A server version known as (major, minor) only cannot
tell a comment of the same major and minor with a patch level above 0: both
readings are returned and the caller compares their effects.

SQL modes that change how text is read (:func:`dialect_for`):
``ANSI_QUOTES`` makes ``"..."`` an identifier, ``NO_BACKSLASH_ESCAPES`` makes
``\\`` an ordinary character in strings.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass
from functools import cache
from typing import Any, ClassVar, Final, TypeVar, cast

from sqlglot import Parser, Token, TokenType, exp
from sqlglot.dialects.mysql import MySQL
from sqlglot.errors import ErrorLevel, ParseError, TokenError
from sqlglot.parsers.mysql import MySQLParser

__all__ = [
    "AlterDatabase",
    "AlterSequence",
    "AlterTable",
    "ColumnAttr",
    "ChangeColumn",
    "ColumnType",
    "ConvertCharset",
    "CreateDatabase",
    "CreateIndex",
    "CreateSequence",
    "CreateTable",
    "DdlParser",
    "DmlReading",
    "DmlTargets",
    "DropColumn",
    "DropDatabase",
    "DropIndex",
    "DropTables",
    "ExecutableCommentError",
    "Opaque",
    "PrimaryKeyDef",
    "RenameTables",
    "TableOption",
    "TruncateTable",
    "dialect_for",
    "expand_executable_comments",
    "parse_ddl",
    "read_dml",
    "salvage_tables",
]

# -- executable comments -------------------------------------------------------------------

#: MariaDB executes ``/*!NNNNN`` only outside MySQL 5.7 - 9.x's numbers (sql_lex.cc).
_MARIADB_IGNORED_MYSQL: Final = range(50700, 100000)
#: Ambiguous comments beyond this many (2**n readings) are refused.
_MAX_AMBIGUOUS: Final = 4


class ExecutableCommentError(ValueError):
    """The executable comments of a statement cannot be read (unterminated, too many
    whose execution depends on the server's patch level)."""


def _comment_version(sql: str, pos: int, mariadb: bool) -> tuple[int | None, int]:
    """The version number of an executable comment whose digits start at ``pos`` and
    where they end; (None, pos) when no number follows (an unconditional comment)."""
    digits = 0
    while pos + digits < len(sql) and sql[pos + digits].isdigit() and digits < 7:
        digits += 1
    if digits < 5:
        return None, pos
    if digits == 5:
        length = 5
    elif mariadb:
        length = 6  # MariaDB: a sixth digit always belongs to the number
    else:
        length = 6 if digits == 6 else 5  # MySQL: six digits when a seventh is not a digit
    return int(sql[pos : pos + length]), pos + length


def _executes(
    number: int | None, maria_only: bool, mariadb: bool, version: tuple[int, int]
) -> bool | None:
    """Whether the server runs the comment's content: True, False or None (it depends
    on the patch level the version (major, minor) does not give)."""
    if number is None:
        return True
    if mariadb and not maria_only and number in _MARIADB_IGNORED_MYSQL:
        return False
    wanted = (number // 10000, number // 100 % 100)
    if wanted != version:
        return wanted < version
    return True if number % 100 == 0 else None


def expand_executable_comments(
    sql: str,
    mariadb: bool,
    version: tuple[int, int],
    *,
    backslash_escapes: bool = True,
    ansi_quotes: bool = False,
) -> tuple[str, ...]:
    """``sql`` as the server reads it: executable comments opened (their markers
    become spaces) or removed. One text, or one per reading when a comment's
    execution depends on the unknown patch level.

    Raises:
        ExecutableCommentError: an unterminated comment, or more than a few
            ambiguous ones.
    """
    if "/*" not in sql:
        return (sql,)
    # Each piece is text, or (ambiguous content, index): kept in some readings only.
    pieces: list[str | tuple[str, int]] = []
    out: list[str] = []
    ambiguous = 0
    i = 0
    n = len(sql)
    inside: bool | None = False  # inside an opened executable comment (None: ambiguous one)
    ambiguous_start = 0
    quotes = "'\"`"
    while i < n:
        c = sql[i]
        if c in quotes:
            j = i + 1
            while j < n:
                d = sql[j]
                if d == "\\" and backslash_escapes and c != "`" and not (ansi_quotes and c == '"'):
                    j += 2
                    continue
                if d == c:
                    if j + 1 < n and sql[j + 1] == c:
                        j += 2
                        continue
                    break
                j += 1
            out.append(sql[i : j + 1])
            i = j + 1
            continue
        if c == "#" or (
            c == "-"
            and sql.startswith("--", i)
            and (i + 2 >= n or sql[i + 2] in " \t\n\r\f\v" or ord(sql[i + 2]) < 32)
        ):
            j = sql.find("\n", i)
            j = n if j < 0 else j
            out.append(sql[i:j])
            i = j
            continue
        if c == "*" and inside is not False and sql.startswith("*/", i):
            # the end of an opened executable comment
            if inside is None:
                out = []  # the content, scanned for its end, is kept apart:
                pieces.append((sql[ambiguous_start:i], ambiguous))
                ambiguous += 1
            out.append(" ")
            inside = False
            i += 2
            continue
        if c == "/" and sql.startswith("/*", i):
            maria_only = sql.startswith("/*M!", i) and mariadb
            if inside is False and (sql.startswith("/*!", i) or maria_only):
                start = i + (4 if maria_only else 3)
                number, body = _comment_version(sql, start, mariadb)
                runs = _executes(number, maria_only, mariadb, version)
                if runs is not False:
                    out.append(" ")
                    inside = True if runs else None
                    if runs is None:
                        if ambiguous >= _MAX_AMBIGUOUS:
                            raise ExecutableCommentError(
                                "too many executable comments whose execution depends on "
                                "the server's patch level"
                            )
                        pieces.append("".join(out))
                        out = []
                        ambiguous_start = body
                    i = body
                    continue
            j = sql.find("*/", i + 2)
            if j < 0:
                raise ExecutableCommentError("unterminated comment")
            out.append(" ")
            i = j + 2
            continue
        out.append(c)
        i += 1
    if inside is not False:
        raise ExecutableCommentError("unterminated executable comment")
    pieces.append("".join(out))
    if ambiguous == 0:
        return ("".join(p for p in pieces if isinstance(p, str)),)
    readings = []
    for mask in range(1 << ambiguous):
        text = []
        for p in pieces:
            if isinstance(p, str):
                text.append(p)
            elif mask >> p[1] & 1:
                text.append(p[0])
        readings.append("".join(text))
    return tuple(readings)


# -- nodes -------------------------------------------------------------------------------------


class ColumnType(exp.Expression):
    """A column's data type as written.

    Args: ``this``: the type's words, upper case, one space apart (``"NATIONAL
    VARCHAR"``, ``"LONG VARBINARY"``, ``"DOUBLE PRECISION"``); ``expressions``:
    its parameters (number or string literals); ``unsigned``, ``zerofill``,
    ``binary`` (the BINARY attribute of a character type); ``charset``: the
    character set written with it (``CHARACTER SET x``, ``ASCII`` as latin1,
    ``UNICODE`` as ucs2, ``BYTE`` as binary), lower case; ``compressed``: MariaDB's
    COMPRESSED written among those attributes (as SHOW CREATE TABLE writes it).
    """

    arg_types: ClassVar[dict[str, bool]] = {
        "this": True,
        "expressions": False,
        "unsigned": False,
        "zerofill": False,
        "binary": False,
        "charset": False,
        "compressed": False,
    }


class ColumnAttr(exp.Expression):
    """A column attribute: ``this`` its kind (see :data:`ATTRIBUTE_KINDS`), ``expression``
    its value where it has one (a collation name, a generated column's storage)."""

    arg_types: ClassVar[dict[str, bool]] = {"this": True, "expression": False}


#: The kinds of :class:`ColumnAttr`.
ATTRIBUTE_KINDS: Final = frozenset(
    {
        "NULL",
        "NOT NULL",
        "DEFAULT",
        "ON UPDATE",
        "AUTO_INCREMENT",
        "PRIMARY KEY",
        "UNIQUE",
        "COMMENT",
        "COLLATE",  # expression: the collation name (lower case)
        "GENERATED",  # expression: VIRTUAL, STORED or PERSISTENT
        "INVISIBLE",
        "VISIBLE",
        "COMPRESSED",
        "SERIAL DEFAULT VALUE",
        "CHECK",
        "REFERENCES",
        "OPTION",  # COLUMN_FORMAT, STORAGE, SRID, ENGINE_ATTRIBUTE, ...: no effect on the type
        "SYSTEM VERSIONING",  # expression: WITH or WITHOUT
    }
)


class Opaque(exp.Expression):
    """A clause that changes no column: ``this`` says what it is (``"INDEX"``,
    ``"FOREIGN KEY"``, ``"PARTITION"``, ``"ALGORITHM"``...), ``expression`` its text."""

    arg_types: ClassVar[dict[str, bool]] = {"this": True, "expression": False}


class PrimaryKeyDef(exp.Expression):
    """``PRIMARY KEY (a, b(10) DESC, ...)``: ``expressions`` the key's column names
    (identifiers) in key order; ``functional``: a part is an expression."""

    arg_types: ClassVar[dict[str, bool]] = {"expressions": True, "functional": False}


class TableOption(exp.Expression):
    """A table option: ``this`` its name (upper case: ``"CHARACTER SET"``, ``"COLLATE"``,
    ``"ENGINE"``, ``"SEQUENCE"``, ``"WITH SYSTEM VERSIONING"``...), ``expression`` its
    value (a name lower case for CHARACTER SET and COLLATE, ``"default"`` for DEFAULT)."""

    arg_types: ClassVar[dict[str, bool]] = {"this": True, "expression": False}


class CreateTable(exp.Expression):
    """CREATE [OR REPLACE] [TEMPORARY] TABLE [IF NOT EXISTS] ``this``: ``expressions``
    its elements (``exp.ColumnDef`` with a :class:`ColumnType`, :class:`PrimaryKeyDef`,
    :class:`Opaque`), ``like`` the table it copies, ``options`` its
    :class:`TableOption` list, ``partition`` its partitioning (opaque), ``query``
    true when a query fills it (CREATE ... SELECT)."""

    arg_types: ClassVar[dict[str, bool]] = {
        "this": True,
        "expressions": False,
        "like": False,
        "options": False,
        "partition": False,
        "query": False,
        "exists": False,
        "replace": False,
        "temporary": False,
    }


class AlterTable(exp.Expression):
    """ALTER [ONLINE] [IGNORE] TABLE [IF EXISTS] ``this`` ``actions``.

    Actions: ``exp.ColumnDef`` (ADD, ``exists``: IF NOT EXISTS, ``position``),
    :class:`ChangeColumn`, :class:`DropColumn`, ``exp.RenameColumn``,
    ``exp.AlterColumn``, ``exp.AlterRename``,
    ``exp.DropPrimaryKey``, :class:`PrimaryKeyDef` (ADD PRIMARY KEY),
    :class:`ConvertCharset`, :class:`TableOption`, :class:`Opaque` (DROP INDEX is
    an Opaque ``"DROP INDEX"`` whose expression is the index name).
    """

    arg_types: ClassVar[dict[str, bool]] = {"this": True, "actions": False, "exists": False}


class ChangeColumn(exp.Expression):
    """MODIFY/CHANGE [COLUMN] [IF EXISTS]: ``this`` the new definition (an
    ``exp.ColumnDef``), ``rename_from`` the old name of CHANGE."""

    arg_types: ClassVar[dict[str, bool]] = {"this": True, "rename_from": False, "exists": False}


class DropColumn(exp.Expression):
    """DROP [COLUMN] [IF EXISTS] ``this``."""

    arg_types: ClassVar[dict[str, bool]] = {"this": True, "exists": False}


class ConvertCharset(exp.Expression):
    """CONVERT TO CHARACTER SET ``this`` [COLLATE ``expression``] (lower case;
    ``this`` is ``"default"`` for CHARACTER SET DEFAULT)."""

    arg_types: ClassVar[dict[str, bool]] = {"this": True, "expression": False}


class RenameTables(exp.Expression):
    """RENAME TABLE a TO b, c TO d: ``expressions`` (old, new) ``exp.Tuple`` pairs of tables."""

    arg_types: ClassVar[dict[str, bool]] = {"expressions": True, "exists": False}


class DropTables(exp.Expression):
    """DROP [TEMPORARY] TABLE|SEQUENCE [IF EXISTS] ``expressions``."""

    arg_types: ClassVar[dict[str, bool]] = {
        "expressions": True,
        "exists": False,
        "temporary": False,
        "sequence": False,
    }


class TruncateTable(exp.Expression):
    """TRUNCATE [TABLE] ``this``."""

    arg_types: ClassVar[dict[str, bool]] = {"this": True}


class CreateIndex(exp.Expression):
    """CREATE [UNIQUE|FULLTEXT|SPATIAL|VECTOR] INDEX ``expression`` ON ``this`` (...)."""

    arg_types: ClassVar[dict[str, bool]] = {"this": True, "expression": False}


class DropIndex(exp.Expression):
    """DROP INDEX ``expression`` ON ``this``."""

    arg_types: ClassVar[dict[str, bool]] = {"this": True, "expression": True}


class CreateSequence(exp.Expression):
    """CREATE [OR REPLACE] [TEMPORARY] SEQUENCE [IF NOT EXISTS] ``this`` [AS ``kind``]."""

    arg_types: ClassVar[dict[str, bool]] = {
        "this": True,
        "kind": False,
        "exists": False,
        "replace": False,
        "temporary": False,
    }


class AlterSequence(exp.Expression):
    """ALTER SEQUENCE [IF EXISTS] ``this`` [AS ``kind``] ..."""

    arg_types: ClassVar[dict[str, bool]] = {"this": True, "kind": False, "exists": False}


class CreateDatabase(exp.Expression):
    """CREATE [OR REPLACE] DATABASE|SCHEMA [IF NOT EXISTS] ``this`` ``options``."""

    arg_types: ClassVar[dict[str, bool]] = {
        "this": True,
        "options": False,
        "exists": False,
        "replace": False,
    }


class AlterDatabase(exp.Expression):
    """ALTER DATABASE|SCHEMA [``this``] ``options`` (``this`` absent: the current one)."""

    arg_types: ClassVar[dict[str, bool]] = {"this": False, "options": False}


class DropDatabase(exp.Expression):
    """DROP DATABASE|SCHEMA [IF EXISTS] ``this``."""

    arg_types: ClassVar[dict[str, bool]] = {"this": True, "exists": False}


class DmlTargets(exp.Expression):
    """The tables an INSERT, REPLACE, UPDATE, DELETE or LOAD statement writes:
    ``expressions`` the tables (as written: a multi-table DELETE's aliases resolved);
    ``columns_at``: the token index of the column list after an INSERT's table."""

    arg_types: ClassVar[dict[str, bool]] = {"expressions": True, "columns_at": False}


# -- the parser ---------------------------------------------------------------------------------

#: Column type words: the first word -> the words that may follow it (longest first).
_TYPE_PHRASES: Final[dict[str, tuple[tuple[str, ...], ...]]] = {
    "NATIONAL": (
        ("CHARACTER", "VARYING"),
        ("CHAR", "VARYING"),
        ("CHARACTER",),
        ("CHAR",),
        ("VARCHAR",),
    ),
    "NCHAR": (("VARCHAR",), ("VARYING",), ()),
    "LONG": (
        ("CHARACTER", "VARYING"),
        ("CHAR", "VARYING"),
        ("VARCHAR",),
        ("VARBINARY",),
        (),
    ),
    "CHAR": (("VARYING",), ()),
    "CHARACTER": (("VARYING",), ()),
    "DOUBLE": (("PRECISION",), ()),
}
#: Every type phrase this parser knows (the first words of :data:`_TYPE_PHRASES` included).
TYPE_NAMES: Final = frozenset(
    {
        "TINYINT", "SMALLINT", "MEDIUMINT", "INT", "INTEGER", "BIGINT",
        "INT1", "INT2", "INT3", "INT4", "INT8", "MIDDLEINT",
        "BOOL", "BOOLEAN", "SERIAL",
        "DECIMAL", "DEC", "NUMERIC", "FIXED",
        "FLOAT", "FLOAT4", "FLOAT8", "DOUBLE", "DOUBLE PRECISION", "REAL",
        "BIT", "DATE", "TIME", "DATETIME", "TIMESTAMP", "YEAR",
        "CHAR", "CHARACTER", "NCHAR", "NATIONAL CHAR", "NATIONAL CHARACTER",
        "VARCHAR", "VARCHARACTER", "CHAR VARYING", "CHARACTER VARYING", "NVARCHAR",
        "NATIONAL VARCHAR", "NATIONAL CHAR VARYING", "NATIONAL CHARACTER VARYING",
        "NCHAR VARCHAR", "NCHAR VARYING",
        "BINARY", "VARBINARY",
        "TINYTEXT", "TEXT", "MEDIUMTEXT", "LONGTEXT",
        "LONG", "LONG VARCHAR", "LONG CHAR VARYING", "LONG CHARACTER VARYING",
        "TINYBLOB", "BLOB", "MEDIUMBLOB", "LONGBLOB", "LONG VARBINARY",
        "ENUM", "SET", "JSON",
        "GEOMETRY", "POINT", "LINESTRING", "POLYGON", "MULTIPOINT", "MULTILINESTRING",
        "MULTIPOLYGON", "GEOMETRYCOLLECTION", "GEOMCOLLECTION",
        "UUID", "INET4", "INET6", "VECTOR",
    }
)  # fmt: skip
#: Types with UNSIGNED / ZEROFILL.
_NUMERIC_WORDS: Final = frozenset(
    {
        "TINYINT", "SMALLINT", "MEDIUMINT", "INT", "INTEGER", "BIGINT", "INT1", "INT2",
        "INT3", "INT4", "INT8", "MIDDLEINT", "BOOL", "BOOLEAN", "SERIAL", "DECIMAL", "DEC",
        "NUMERIC", "FIXED", "FLOAT", "FLOAT4", "FLOAT8", "DOUBLE", "DOUBLE PRECISION",
        "REAL",
    }
)  # fmt: skip
#: Types followed by a character set clause (``opt_charset_with_opt_binary``).
_CHARACTER_WORDS: Final = frozenset(
    {
        "CHAR", "CHARACTER", "VARCHAR", "VARCHARACTER", "CHAR VARYING", "CHARACTER VARYING",
        "TINYTEXT", "TEXT", "MEDIUMTEXT", "LONGTEXT", "LONG", "LONG VARCHAR",
        "LONG CHAR VARYING", "LONG CHARACTER VARYING", "ENUM", "SET",
        "NCHAR", "NATIONAL CHAR", "NATIONAL CHARACTER", "NVARCHAR", "NATIONAL VARCHAR",
        "NATIONAL CHAR VARYING", "NATIONAL CHARACTER VARYING", "NCHAR VARCHAR", "NCHAR VARYING",
    }
)  # fmt: skip

#: Words that open a table element other than a column.
_ELEMENT_WORDS: Final = frozenset(
    {"PRIMARY", "PRIMARY KEY", "KEY", "INDEX", "UNIQUE", "FULLTEXT", "SPATIAL", "FOREIGN",
     "FOREIGN KEY", "CONSTRAINT", "CHECK"}
)  # fmt: skip
#: Table options that take a value and change no column.
_PLAIN_TABLE_OPTIONS: Final = frozenset(
    {
        "ENGINE", "TYPE", "AUTO_INCREMENT", "AVG_ROW_LENGTH", "CHECKSUM", "TABLE_CHECKSUM",
        "COMMENT", "COMPRESSION", "CONNECTION", "DELAY_KEY_WRITE", "ENCRYPTION",
        "ENGINE_ATTRIBUTE", "SECONDARY_ENGINE_ATTRIBUTE", "INSERT_METHOD", "KEY_BLOCK_SIZE",
        "MAX_ROWS", "MIN_ROWS", "PACK_KEYS", "PASSWORD", "ROW_FORMAT", "STATS_AUTO_RECALC",
        "STATS_PERSISTENT", "STATS_SAMPLE_PAGES", "AUTOEXTEND_SIZE", "PAGE_CHECKSUM",
        "PAGE_COMPRESSED", "PAGE_COMPRESSION_LEVEL", "TRANSACTIONAL", "ENCRYPTED",
        "ENCRYPTION_KEY_ID", "IETF_QUOTES", "SECONDARY_ENGINE", "SEQUENCE", "TABLESPACE",
        "STORAGE",
    }
)  # fmt: skip
#: ALTER TABLE words that begin a partition operation (the operation runs to the end).
_PARTITION_OPS: Final = frozenset(
    {"DISCARD", "IMPORT", "TRUNCATE", "COALESCE", "REORGANIZE", "EXCHANGE", "ANALYZE",
     "CHECK", "OPTIMIZE", "REBUILD", "REPAIR"}
)  # fmt: skip
#: Words of a column attribute list that take one value (kind OPTION).
_COLUMN_OPTIONS: Final = frozenset(
    {"COLUMN_FORMAT", "STORAGE", "SRID", "ENGINE_ATTRIBUTE", "SECONDARY_ENGINE_ATTRIBUTE",
     "REF_SYSTEM_ID"}
)  # fmt: skip
_NAME: Final = re.compile(r"[0-9A-Za-z_$\u0080-\uffff]+")
_QUOTED: Final = frozenset({TokenType.IDENTIFIER})
_STRINGS: Final = frozenset(
    {TokenType.STRING, TokenType.NATIONAL_STRING, TokenType.HEX_STRING, TokenType.BIT_STRING}
)


_N = TypeVar("_N", bound=exp.Expression)


class DdlParser(MySQLParser):
    """sqlglot's MySQL parser with the grammar of table and database DDL of both servers.

    Statements: CREATE/ALTER/DROP TABLE, RENAME TABLE, TRUNCATE, CREATE/DROP INDEX,
    CREATE/ALTER/DROP SEQUENCE, CREATE/ALTER/DROP DATABASE|SCHEMA. Any other
    statement, or a clause of these the grammar here does not know, raises
    ``ParseError``.
    """

    STATEMENT_PARSERS: ClassVar[dict[TokenType, Callable[[Any], exp.Expr]]] = {
        TokenType.CREATE: lambda self: self._ddl_create(),
        TokenType.ALTER: lambda self: self._ddl_alter(),
        TokenType.DROP: lambda self: self._ddl_drop(),
        TokenType.RENAME: lambda self: self._ddl_rename(),
        TokenType.TRUNCATE: lambda self: self._ddl_truncate(),
    }

    # -- tokens -------------------------------------------------------------------------

    def _word_at(self, index: int) -> str:
        """The upper-case text of the token at ``index`` ("" for a quoted or missing one)."""
        if index >= len(self._tokens):
            return ""
        tok: Token = self._tokens[index]
        if tok.token_type in _QUOTED or tok.token_type in _STRINGS:
            return ""
        return " ".join(tok.text.upper().split())

    def _peek_words(self, *words: str) -> bool:
        """Whether the next tokens spell ``words`` (a token may hold several words)."""
        return self._words_end(words) is not None

    def _words_end(self, words: tuple[str, ...]) -> int | None:
        index = self._index
        pending = list(words)
        while pending:
            word = self._word_at(index)
            if not word:
                return None
            parts = word.split(" ")
            if parts != pending[: len(parts)]:
                return None
            del pending[: len(parts)]
            index += 1
        return index

    def _accept(self, *words: str) -> bool:
        """Consume the next tokens when they spell ``words``."""
        end = self._words_end(words)
        if end is None:
            return False
        self._advance(end - self._index)
        return True

    def _expect(self, *words: str) -> None:
        if not self._accept(*words):
            self.raise_error(f"Expected {' '.join(words)}")

    def _at(self, token_type: TokenType) -> bool:
        tok: Token = self._curr
        return tok.token_type == token_type

    def _accept_type(self, token_type: TokenType) -> bool:
        if self._at(token_type):
            self._advance()
            return True
        return False

    def _at_end(self) -> bool:
        return self._index >= len(self._tokens) or (
            self._at(TokenType.SEMICOLON) and self._index == len(self._tokens) - 1
        )

    def _name(self) -> exp.Identifier:
        """An identifier: quoted, or a word that is not punctuation, a string or a number."""
        tok: Token | None = self._curr if self._index < len(self._tokens) else None
        if tok is None:
            self.raise_error("Expected a name")
            raise AssertionError  # raise_error raises at IMMEDIATE
        if tok.token_type in _QUOTED:
            self._advance()
            return exp.Identifier(this=tok.text, quoted=True)
        if (
            tok.token_type in _STRINGS
            or tok.token_type == TokenType.NUMBER
            or not _NAME.fullmatch(tok.text)
        ):
            self.raise_error(f"Expected a name, got {tok.text!r}")
        self._advance()
        return exp.Identifier(this=tok.text, quoted=False)

    def _table_name(self) -> exp.Table:
        """``name`` or ``db.name``."""
        first = self._name()
        if self._accept_type(TokenType.DOT):
            return exp.Table(this=self._name(), db=first)
        return exp.Table(this=first)

    def _skip_balanced(self) -> str:
        """Skip tokens up to the end or to a top-level ``,`` or ``)``; the text skipped."""
        start = self._index
        depth = 0
        while self._index < len(self._tokens):
            tt = self._curr.token_type
            if depth == 0 and tt in (TokenType.COMMA, TokenType.R_PAREN, TokenType.SEMICOLON):
                break
            if tt == TokenType.L_PAREN:
                depth += 1
            elif tt == TokenType.R_PAREN:
                depth -= 1
            self._advance()
        if depth != 0:
            self.raise_error("Unbalanced parentheses")
        return self._text_between(start, self._index)

    def _skip_wrapped(self) -> str:
        """Skip ``( ... )``; its text."""
        if not self._accept_type(TokenType.L_PAREN):
            self.raise_error("Expecting (")
        text = self._skip_balanced()
        if not self._accept_type(TokenType.R_PAREN):
            self.raise_error("Expecting )")
        return text

    def _skip_rest(self) -> str:
        start = self._index
        depth = 0
        while self._index < len(self._tokens) and not (
            depth == 0 and self._at(TokenType.SEMICOLON)
        ):
            if self._at(TokenType.L_PAREN):
                depth += 1
            elif self._at(TokenType.R_PAREN):
                depth -= 1
            self._advance()
        return self._text_between(start, self._index)

    def _text_between(self, start: int, end: int) -> str:
        if end <= start:
            return ""
        first: Token = self._tokens[start]
        last: Token = self._tokens[end - 1]
        return str(self.sql[first.start : last.end + 1])

    def _option_value(self) -> exp.Expr:
        """One token of a table option's value: a string, number or word."""
        tok: Token | None = self._curr if self._index < len(self._tokens) else None
        if tok is None or tok.token_type in (
            TokenType.COMMA,
            TokenType.L_PAREN,
            TokenType.R_PAREN,
            TokenType.SEMICOLON,
        ):
            self.raise_error("Expected an option value")
            raise AssertionError
        self._advance()
        if tok.token_type in _STRINGS:
            return exp.Literal.string(tok.text)
        if tok.token_type == TokenType.NUMBER:
            return exp.Literal.number(tok.text)
        return exp.Var(this=tok.text)

    def _charset_name(self) -> str:
        """A character set or collation name (a word, quoted name or string), lower case."""
        tok: Token | None = self._curr if self._index < len(self._tokens) else None
        if tok is None:
            self.raise_error("Expected a character set or collation name")
            raise AssertionError
        if tok.token_type in (TokenType.STRING, TokenType.IDENTIFIER) or _NAME.fullmatch(tok.text):
            self._advance()
            return str(tok.text).lower()
        self.raise_error(f"Expected a character set or collation name, got {tok.text!r}")
        raise AssertionError

    def _if_exists(self) -> bool:
        return self._accept("IF", "EXISTS")

    def _if_not_exists(self) -> bool:
        return self._accept("IF", "NOT", "EXISTS")

    def _wait_option(self) -> None:
        """MariaDB's ``WAIT n`` / ``NOWAIT`` after a table name."""
        if self._accept("NOWAIT"):
            return
        if (
            self._peek_words("WAIT")
            and self._index + 1 < len(self._tokens)
            and self._tokens[self._index + 1].token_type == TokenType.NUMBER
        ):
            self._advance(2)

    # -- column definitions --------------------------------------------------------------

    def _type_phrase(self) -> str | None:
        first = self._word_at(self._index)
        if not first:
            return None
        if " " in first:  # a multi-word token: CHAR VARYING, DOUBLE PRECISION
            if first in TYPE_NAMES:
                self._advance()
                return first
            return None
        follows = _TYPE_PHRASES.get(first)
        if follows is not None:
            self._advance()
            for words in follows:
                if words and self._accept(*words):
                    return " ".join((first, *words))
            return first
        if first in TYPE_NAMES:
            self._advance()
            return first
        return None

    def _type_param(self) -> exp.Expr:
        tok: Token | None = self._curr if self._index < len(self._tokens) else None
        if tok is not None and tok.token_type == TokenType.NUMBER and tok.text.isdigit():
            self._advance()
            return exp.Literal.number(tok.text)
        self.raise_error("Expected a number")
        raise AssertionError

    def _type_label(self) -> exp.Expr:
        """An ENUM/SET label: a string, or the hex or bit literal MySQL writes for the bytes
        of a binary label that are not UTF-8 (``x'e9'``)."""
        tok: Token | None = self._curr if self._index < len(self._tokens) else None
        if tok is not None and tok.token_type == TokenType.STRING:
            self._advance()
            return exp.Literal.string(tok.text)
        if tok is not None and tok.token_type == TokenType.HEX_STRING:
            self._advance()
            return exp.HexString(this=tok.text)
        if tok is not None and tok.token_type == TokenType.BIT_STRING:
            self._advance()
            return exp.BitString(this=tok.text)
        self.raise_error("Expected an ENUM or SET label")
        raise AssertionError

    def _column_type(self) -> ColumnType:
        phrase = self._type_phrase()
        if phrase is None:
            self.raise_error("Expected a column type")
            raise AssertionError
        node = ColumnType(this=phrase)
        if phrase in ("ENUM", "SET"):
            node.set("expressions", self._parse_wrapped_csv(self._type_label))
        elif self._at(TokenType.L_PAREN):
            node.set("expressions", self._parse_wrapped_csv(self._type_param))
        if phrase in _NUMERIC_WORDS:
            while True:
                if self._accept("UNSIGNED"):
                    node.set("unsigned", True)
                elif self._accept("SIGNED"):
                    pass
                elif self._accept("ZEROFILL"):
                    node.set("zerofill", True)
                else:
                    break
        if phrase in _CHARACTER_WORDS:
            self._charset_clause(node)
        return node

    def _charset_clause(self, node: ColumnType) -> None:
        """``opt_charset_with_opt_binary``: ASCII, UNICODE, BYTE, BINARY and CHARACTER SET
        in the orders both servers accept."""
        while True:
            if self._accept("BINARY"):
                node.set("binary", True)
            elif self._accept("ASCII"):
                self._set_charset(node, "latin1")
            elif self._accept("UNICODE"):
                self._set_charset(node, "ucs2")
            elif self._accept("BYTE"):
                self._set_charset(node, "binary")
            elif self._accept("CHARACTER", "SET") or self._accept("CHARSET"):
                self._set_charset(node, self._charset_name())
            elif self._accept("COMPRESSED"):  # MariaDB writes it before CHARACTER SET
                if self._accept_type(TokenType.EQ):
                    self._option_value()
                node.set("compressed", True)
            else:
                return

    def _set_charset(self, node: ColumnType, name: str) -> None:
        if node.args.get("charset") is not None:
            self.raise_error("Two character sets for one column")
        node.set("charset", name)

    def _column_definition(self, name: exp.Identifier) -> exp.ColumnDef:
        kind = self._column_type()
        attrs: list[exp.Expr] = []
        while True:
            attr = self._column_attribute()
            if attr is None:
                break
            attrs.append(attr)
        return exp.ColumnDef(this=name, kind=kind, constraints=attrs)

    def _column_position(self, column: exp.ColumnDef) -> None:
        if self._accept("FIRST"):
            column.set("position", exp.ColumnPosition(position="FIRST"))
        elif self._accept("AFTER"):
            column.set("position", exp.ColumnPosition(this=self._name(), position="AFTER"))

    def _column_attribute(self) -> ColumnAttr | None:
        if self._accept("NOT", "NULL"):
            return ColumnAttr(this="NOT NULL")
        if self._accept("NULL"):
            return ColumnAttr(this="NULL")
        if self._accept("DEFAULT"):
            return ColumnAttr(this="DEFAULT", expression=self._default_value())
        if self._accept("ON", "UPDATE"):
            return ColumnAttr(this="ON UPDATE", expression=self._default_value())
        if self._accept("AUTO_INCREMENT"):
            return ColumnAttr(this="AUTO_INCREMENT")
        if self._accept("SERIAL", "DEFAULT", "VALUE"):
            return ColumnAttr(this="SERIAL DEFAULT VALUE")
        if self._accept("PRIMARY", "KEY") or self._accept("KEY"):
            return ColumnAttr(this="PRIMARY KEY")
        if self._accept("UNIQUE"):
            self._accept("KEY")
            return ColumnAttr(this="UNIQUE")
        if self._accept("COMMENT"):
            return ColumnAttr(this="COMMENT", expression=self._option_value())
        if self._accept("COLLATE"):
            return ColumnAttr(this="COLLATE", expression=exp.Var(this=self._charset_name()))
        if self._peek_words("GENERATED", "ALWAYS", "AS") or self._peek_words("AS"):
            self._accept("GENERATED", "ALWAYS")
            self._expect("AS")
            if self._peek_words("ROW"):
                self.raise_error("Row start/end columns of system versioning")
            self._skip_wrapped()
            storage = "VIRTUAL"
            for word in ("VIRTUAL", "STORED", "PERSISTENT"):
                if self._accept(word):
                    storage = word
                    break
            return ColumnAttr(this="GENERATED", expression=exp.Var(this=storage))
        if self._accept("INVISIBLE"):
            return ColumnAttr(this="INVISIBLE")
        if self._accept("VISIBLE"):
            return ColumnAttr(this="VISIBLE")
        if self._accept("COMPRESSED"):
            if self._accept_type(TokenType.EQ):
                self._option_value()
            return ColumnAttr(this="COMPRESSED")
        if self._accept("WITH", "SYSTEM", "VERSIONING"):
            return ColumnAttr(this="SYSTEM VERSIONING", expression=exp.Var(this="WITH"))
        if self._accept("WITHOUT", "SYSTEM", "VERSIONING"):
            return ColumnAttr(this="SYSTEM VERSIONING", expression=exp.Var(this="WITHOUT"))
        if self._peek_words("CONSTRAINT") or self._peek_words("CHECK"):
            if self._accept("CONSTRAINT") and not self._peek_words("CHECK"):
                self._name()
            self._expect("CHECK")
            self._skip_wrapped()
            if not self._accept("NOT", "ENFORCED"):
                self._accept("ENFORCED")
            return ColumnAttr(this="CHECK")
        if self._accept("REFERENCES"):
            self._references_rest()
            return ColumnAttr(this="REFERENCES")
        word = self._word_at(self._index)
        if word in _COLUMN_OPTIONS:
            self._advance()
            self._accept_type(TokenType.EQ)
            self._option_value()
            return ColumnAttr(this="OPTION")
        return None

    def _references_rest(self) -> None:
        self._table_name()
        if self._at(TokenType.L_PAREN):
            self._skip_wrapped()
        while True:
            if self._accept("MATCH"):
                self._option_value()
            elif self._accept("ON", "DELETE") or self._accept("ON", "UPDATE"):
                if not (
                    self._accept("RESTRICT")
                    or self._accept("CASCADE")
                    or self._accept("SET", "NULL")
                    or self._accept("SET", "DEFAULT")
                    or self._accept("NO", "ACTION")
                ):
                    self.raise_error("Expected a referential action")
            else:
                return

    def _default_value(self) -> exp.Expr:
        """A DEFAULT / ON UPDATE value: ``(expr)``, or one signed literal or function call."""
        start = self._index
        if self._at(TokenType.L_PAREN):
            return Opaque(this="EXPRESSION", expression=self._skip_wrapped())
        if self._accept("NEXT", "VALUE", "FOR") or self._accept("PREVIOUS", "VALUE", "FOR"):
            return Opaque(this="SEQUENCE VALUE", expression=self._table_name())
        value = self._parse_unary()
        if value is None or self._index == start:
            self.raise_error("Expected a default value")
            raise AssertionError
        return value

    # -- table elements ------------------------------------------------------------------

    def _table_element(self) -> exp.Expr:
        word = self._word_at(self._index)
        if word in _ELEMENT_WORDS:
            return self._key_element()
        if word == "PERIOD" and self._word_at(self._index + 1) == "FOR":
            self._advance(2)
            if self._accept("SYSTEM_TIME"):
                self.raise_error("PERIOD FOR SYSTEM_TIME (system versioning)")
            return Opaque(this="PERIOD", expression=self._skip_balanced())
        name = self._name()
        return self._column_definition(name)

    def _key_element(self) -> exp.Expr:
        """A key, index, foreign key or check definition of a table."""
        if self._accept("CONSTRAINT") and not (
            self._peek_words("PRIMARY", "KEY")
            or self._peek_words("UNIQUE")
            or self._peek_words("FOREIGN", "KEY")
            or self._peek_words("CHECK")
        ):
            self._name()
        if self._accept("PRIMARY", "KEY"):
            return self._primary_key_rest()
        kind = self._word_at(self._index)
        return Opaque(this=kind or "KEY", expression=self._skip_balanced())

    def _primary_key_rest(self) -> PrimaryKeyDef:
        """After PRIMARY KEY: [USING x] (key parts) [options]."""
        if self._accept("USING"):
            self._option_value()
        if not self._accept_type(TokenType.L_PAREN):
            self.raise_error("Expecting (")
        names: list[exp.Expr] = []
        functional = False
        while True:
            if self._at(TokenType.L_PAREN):
                self._skip_wrapped()  # a functional key part
                functional = True
            else:
                names.append(self._name())
                if self._at(TokenType.L_PAREN):
                    self._skip_wrapped()  # prefix length
            if not self._accept("ASC"):
                self._accept("DESC")
            if self._accept_type(TokenType.COMMA):
                continue
            break
        if not self._accept_type(TokenType.R_PAREN):
            self.raise_error("Expecting )")
        self._skip_balanced()  # index options
        return PrimaryKeyDef(expressions=names, functional=functional)

    # -- table options -------------------------------------------------------------------

    def _table_option(self) -> TableOption | None:
        start = self._index
        default = self._accept("DEFAULT")
        if self._accept("CHARACTER", "SET") or self._accept("CHARSET"):
            self._accept_type(TokenType.EQ)
            return TableOption(this="CHARACTER SET", expression=exp.Var(this=self._charset_name()))
        if self._accept("COLLATE"):
            self._accept_type(TokenType.EQ)
            return TableOption(this="COLLATE", expression=exp.Var(this=self._charset_name()))
        if default:
            if self._accept("ENCRYPTION"):
                self._accept_type(TokenType.EQ)
                return TableOption(this="ENCRYPTION", expression=self._option_value())
            self._retreat(start)
            return None
        if self._accept("WITH", "SYSTEM", "VERSIONING"):
            return TableOption(this="WITH SYSTEM VERSIONING")
        if self._accept("START", "TRANSACTION"):
            return TableOption(this="START TRANSACTION")
        if self._accept("DATA", "DIRECTORY") or self._accept("INDEX", "DIRECTORY"):
            self._accept_type(TokenType.EQ)
            return TableOption(this="DIRECTORY", expression=self._option_value())
        if self._accept("UNION"):
            self._accept_type(TokenType.EQ)
            return TableOption(this="UNION", expression=exp.Var(this=self._skip_wrapped()))
        word = self._word_at(self._index)
        if word in _PLAIN_TABLE_OPTIONS:
            self._advance()
            self._accept_type(TokenType.EQ)
            value = self._option_value()
            if word == "TABLESPACE" and self._accept("STORAGE"):
                self._option_value()
            return TableOption(this=word, expression=value)
        # MariaDB's engine-defined options: name = value
        if (
            word
            and _NAME.fullmatch(word)
            and self._index + 1 < len(self._tokens)
            and self._tokens[self._index + 1].token_type == TokenType.EQ
            and word not in ("PARTITION", "PARTITIONS")
        ):
            self._advance(2)
            return TableOption(this=word, expression=self._option_value())
        return None

    def _table_options(self) -> list[exp.Expr]:
        options: list[exp.Expr] = []
        while True:
            index = self._index
            comma = self._accept_type(TokenType.COMMA)
            option = self._table_option()
            if option is None:
                if comma:
                    self._retreat(index)
                return options
            options.append(option)

    # -- row statements (their targets only) --------------------------------------------

    def _dml_targets(self) -> exp.Expr | None:
        """The target tables of a row-changing statement, read from its start; the rest
        (values, queries, conditions) is skipped."""
        if self._accept("INSERT") or self._accept("REPLACE"):
            for word in ("LOW_PRIORITY", "DELAYED", "HIGH_PRIORITY", "IGNORE"):
                self._accept(word)
            self._accept("INTO")
            table = self._table_name()
            columns_at = None
            if self._accept("PARTITION"):
                self._skip_wrapped()
            if self._at(TokenType.L_PAREN):
                columns_at = exp.Literal.number(self._index)
            return self._skip_to_end(DmlTargets(expressions=[table], columns_at=columns_at))
        if self._accept("LOAD"):
            if not (self._accept("DATA") or self._accept("XML")):
                return None
            for word in ("LOW_PRIORITY", "CONCURRENT", "LOCAL"):
                self._accept(word)
            self._expect("INFILE")
            self._option_value()
            if not self._accept("REPLACE"):
                self._accept("IGNORE")
            self._expect("INTO", "TABLE")
            return self._skip_to_end(DmlTargets(expressions=[self._table_name()]))
        if self._accept("UPDATE"):
            for word in ("LOW_PRIORITY", "IGNORE"):
                self._accept(word)
            references = self._parse_csv(self._table_reference)
            if not self._peek_words("SET"):
                self.raise_error("Expected SET")
            return self._skip_to_end(DmlTargets(expressions=_base_tables(references)))
        if self._accept("DELETE"):
            for word in ("LOW_PRIORITY", "QUICK", "IGNORE"):
                self._accept(word)
            if self._accept("FROM"):
                names = self._parse_csv(self._delete_target)
                if self._accept("USING"):  # DELETE FROM t1, t2 USING references
                    references = self._parse_csv(self._table_reference)
                    return self._skip_to_end(
                        DmlTargets(expressions=_resolve_aliases(names, references))
                    )
                if len(names) != 1:
                    self.raise_error("Expected USING")
                return self._skip_to_end(DmlTargets(expressions=names))
            names = self._parse_csv(self._delete_target)  # DELETE t1, t2 FROM references
            self._expect("FROM")
            references = self._parse_csv(self._table_reference)
            return self._skip_to_end(DmlTargets(expressions=_resolve_aliases(names, references)))
        return None

    def _table_reference(self) -> exp.Expr | None:
        """A table reference with its joins (sqlglot's), SET never taken for an alias."""
        return self._parse_table(joins=True, alias_tokens=self.TABLE_ALIAS_TOKENS - {TokenType.SET})

    def _delete_target(self) -> exp.Table:
        """``t``, ``db.t``, ``t.*`` or ``db.t.*``."""
        first = self._name()
        table = exp.Table(this=first)
        if self._star_follows():
            return table
        if self._accept_type(TokenType.DOT):
            table = exp.Table(this=self._name(), db=first)
            self._star_follows()
        return table

    def _star_follows(self) -> bool:
        if (
            self._at(TokenType.DOT)
            and self._index + 1 < len(self._tokens)
            and self._tokens[self._index + 1].token_type == TokenType.STAR
        ):
            self._advance(2)
            return True
        return False

    def _skip_to_end(self, node: _N) -> _N:
        while self._index < len(self._tokens):
            self._advance()
        return node

    # -- statements ----------------------------------------------------------------------

    def _salvage(self) -> exp.Expr | None:
        """The tables a table DDL statement names, read from its start (the rest skipped);
        None for a statement whose tables cannot be told this way."""
        tables: list[exp.Expr] = []
        if self._accept("CREATE"):
            self._accept("OR", "REPLACE")
            self._accept("TEMPORARY")
            if self._accept("TABLE") or self._accept("SEQUENCE"):
                self._if_not_exists()
                tables.append(self._table_name())
            else:
                for word in ("UNIQUE", "FULLTEXT", "SPATIAL", "VECTOR", "ONLINE", "OFFLINE"):
                    self._accept(word)
                if not self._accept("INDEX"):
                    return None
                self._if_not_exists()
                self._name()
                if self._accept("USING"):
                    self._option_value()
                self._expect("ON")
                tables.append(self._table_name())
        elif self._accept("ALTER"):
            self._accept("ONLINE")
            self._accept("IGNORE")
            if not (self._accept("TABLE") or self._accept("SEQUENCE")):
                return None
            self._if_exists()
            tables.append(self._table_name())
        elif self._accept("DROP"):
            self._accept("TEMPORARY")
            if self._accept("TABLE") or self._accept("TABLES") or self._accept("SEQUENCE"):
                self._if_exists()
                tables.extend(self._parse_csv(self._table_name))
            else:
                if not self._accept("ONLINE"):
                    self._accept("OFFLINE")
                if not self._accept("INDEX"):
                    return None
                self._if_exists()
                self._name()
                self._expect("ON")
                tables.append(self._table_name())
        elif self._accept("TRUNCATE"):
            self._accept("TABLE")
            tables.append(self._table_name())
        elif self._accept("RENAME"):
            if not (self._accept("TABLE") or self._accept("TABLES")):
                return None
            self._if_exists()
            while True:
                tables.append(self._table_name())
                self._wait_option()
                self._expect("TO")
                tables.append(self._table_name())
                if not self._accept_type(TokenType.COMMA):
                    break
        else:
            return None
        while self._index < len(self._tokens):
            self._advance()
        return exp.Tuple(expressions=tables)

    def _ddl_create(self) -> exp.Expr:
        replace = self._accept("OR", "REPLACE")
        temporary = self._accept("TEMPORARY")
        if self._accept("TABLE"):
            return self._create_table(replace, temporary)
        if self._accept("SEQUENCE"):
            return self._create_sequence(replace, temporary)
        if temporary:
            self.raise_error("Expected TABLE or SEQUENCE")
        if self._accept("DATABASE") or self._accept("SCHEMA"):
            exists = self._if_not_exists()
            name = self._name()
            return CreateDatabase(
                this=name, options=self._database_options(), exists=exists, replace=replace
            )
        for word in ("UNIQUE", "FULLTEXT", "SPATIAL", "VECTOR"):
            if self._accept(word):
                break
        if not self._accept("ONLINE"):
            self._accept("OFFLINE")
        if self._accept("INDEX"):
            self._if_not_exists()
            index = self._name()
            if self._accept("USING"):
                self._option_value()
            self._expect("ON")
            table = self._table_name()
            self._skip_rest()
            return CreateIndex(this=table, expression=index)
        self.raise_error("Not a table or database definition")
        raise AssertionError

    def _create_table(self, replace: bool, temporary: bool) -> CreateTable:
        exists = self._if_not_exists()
        node = CreateTable(
            this=self._table_name(), exists=exists, replace=replace, temporary=temporary
        )
        if self._accept("LIKE"):
            node.set("like", self._table_name())
            return self._end(node)
        if self._at(TokenType.L_PAREN):
            if self._word_at(self._index + 1) == "LIKE":
                self._advance(2)
                node.set("like", self._table_name())
                if not self._accept_type(TokenType.R_PAREN):
                    self.raise_error("Expecting )")
                return self._end(node)
            if self._word_at(self._index + 1) not in ("SELECT", "WITH", "VALUES", "TABLE"):
                self._advance()
                node.set("expressions", self._parse_csv(self._table_element))
                if not self._accept_type(TokenType.R_PAREN):
                    self.raise_error("Expecting )")
        node.set("options", self._table_options())
        if self._peek_words("PARTITION", "BY"):
            partition = self._skip_rest()
            node.set("partition", Opaque(this="PARTITION", expression=partition))
            if re.search(r"\bselect\b", partition, re.IGNORECASE):
                node.set("query", True)
            return node
        if not self._at_end():
            # [IGNORE | REPLACE] [AS] query
            self._skip_rest()
            node.set("query", True)
        return node

    def _create_sequence(self, replace: bool, temporary: bool) -> CreateSequence:
        exists = self._if_not_exists()
        node = CreateSequence(
            this=self._table_name(), exists=exists, replace=replace, temporary=temporary
        )
        if self._accept("AS"):
            node.set("kind", self._column_type())
        self._sequence_options()
        return self._end(node)

    def _sequence_options(self) -> None:
        """The options of CREATE/ALTER SEQUENCE: none of them changes a column."""
        while not self._at_end():
            if self._accept_type(TokenType.COMMA):
                continue
            word = self._word_at(self._index)
            if word in ("START", "INCREMENT", "MINVALUE", "MAXVALUE", "CACHE", "RESTART"):
                self._advance()
                if not self._accept("WITH"):
                    self._accept("BY")
                self._accept_type(TokenType.EQ)
                signed = self._accept_type(TokenType.DASH) or self._accept_type(TokenType.PLUS)
                if self._at(TokenType.NUMBER):
                    self._advance()
                elif signed or word != "RESTART":
                    self.raise_error(f"Expected a number after {word}")
            elif word in ("NOMINVALUE", "NOMAXVALUE", "NOCACHE", "CYCLE", "NOCYCLE"):
                self._advance()
            elif word == "NO" and self._word_at(self._index + 1) in (
                "MINVALUE", "MAXVALUE", "CACHE", "CYCLE",
            ):  # fmt: skip
                self._advance(2)
            else:
                option = self._table_option()
                if option is None:
                    self.raise_error("Unknown sequence option")
                if option is not None and option.this not in _PLAIN_TABLE_OPTIONS:
                    self.raise_error(f"Sequence option {option.this}")

    def _database_options(self) -> list[exp.Expr]:
        options: list[exp.Expr] = []
        while not self._at_end():
            option = self._table_option()
            if option is None:
                if self._accept("READ", "ONLY"):
                    self._accept_type(TokenType.EQ)
                    self._option_value()
                    continue
                self.raise_error("Unknown database option")
                raise AssertionError
            if option.this not in ("CHARACTER SET", "COLLATE", "ENCRYPTION", "COMMENT"):
                self.raise_error(f"Database option {option.this}")
            options.append(option)
        return options

    def _end(self, node: _N) -> _N:
        self._accept_type(TokenType.SEMICOLON)
        if self._index < len(self._tokens):
            self.raise_error("Unexpected text after the statement")
        return node

    def _ddl_drop(self) -> exp.Expr:
        temporary = self._accept("TEMPORARY")
        if self._accept("TABLE") or self._accept("TABLES") or self._accept("SEQUENCE"):
            sequence = self._prev.text.upper() == "SEQUENCE"
            exists = self._if_exists()
            tables = self._parse_csv(self._table_name)
            self._wait_option()
            if not self._accept("RESTRICT"):
                self._accept("CASCADE")
            drop = DropTables(
                expressions=tables, exists=exists, temporary=temporary, sequence=sequence
            )
            return self._end(drop)
        if temporary:
            self.raise_error("Expected TABLE or SEQUENCE")
        if self._accept("DATABASE") or self._accept("SCHEMA"):
            exists = self._if_exists()
            return self._end(DropDatabase(this=self._name(), exists=exists))
        if not self._accept("ONLINE"):
            self._accept("OFFLINE")
        if self._accept("INDEX"):
            self._if_exists()
            index = self._name()
            self._expect("ON")
            table = self._table_name()
            self._skip_rest()
            return DropIndex(this=table, expression=index)
        self.raise_error("Not a table or database definition")
        raise AssertionError

    def _ddl_rename(self) -> exp.Expr:
        if not (self._accept("TABLE") or self._accept("TABLES")):
            self.raise_error("Expected TABLE")
        exists = self._if_exists()
        pairs: list[exp.Expr] = []
        while True:
            old = self._table_name()
            self._wait_option()
            self._expect("TO")
            new = self._table_name()
            pairs.append(exp.Tuple(expressions=[old, new]))
            if not self._accept_type(TokenType.COMMA):
                break
        return self._end(RenameTables(expressions=pairs, exists=exists))

    def _ddl_truncate(self) -> exp.Expr:
        self._accept("TABLE")
        table = self._table_name()
        self._wait_option()
        return self._end(TruncateTable(this=table))

    def _ddl_alter(self) -> exp.Expr:
        self._accept("ONLINE")
        self._accept("IGNORE")
        if self._accept("TABLE"):
            return self._alter_table()
        if self._accept("DATABASE") or self._accept("SCHEMA"):
            index = self._index
            try:  # without a name: the current database
                return self._end(AlterDatabase(this=None, options=self._database_options()))
            except ParseError:
                self._retreat(index)
            name = self._name()
            if self._accept("UPGRADE", "DATA", "DIRECTORY", "NAME"):
                return self._end(AlterDatabase(this=name, options=[]))
            return self._end(AlterDatabase(this=name, options=self._database_options()))
        if self._accept("SEQUENCE"):
            exists = self._if_exists()
            node = AlterSequence(this=self._table_name(), exists=exists)
            if self._accept("AS"):
                node.set("kind", self._column_type())
            self._sequence_options()
            return self._end(node)
        self.raise_error("Not a table or database definition")
        raise AssertionError

    def _alter_table(self) -> AlterTable:
        exists = self._if_exists()
        node = AlterTable(this=self._table_name(), exists=exists)
        self._wait_option()
        actions: list[exp.Expr] = []
        while not self._at_end():
            if self._peek_words("PARTITION", "BY") or self._peek_words("REMOVE", "PARTITIONING"):
                # partitioning comes last, after a comma or not
                actions.append(Opaque(this="PARTITION", expression=self._skip_rest()))
                break
            actions.extend(self._alter_action())
            if isinstance(actions[-1], TableOption):
                # table options may follow each other without commas
                while (option := self._table_option()) is not None:
                    actions.append(option)
            if not self._accept_type(TokenType.COMMA) and not (
                self._peek_words("PARTITION", "BY") or self._peek_words("REMOVE", "PARTITIONING")
            ):
                break
        node.set("actions", actions)
        return self._end(node)

    def _alter_action(self) -> list[exp.Expr]:
        """One item of an ALTER TABLE list (ADD COLUMN (a, b) gives several)."""
        word = self._word_at(self._index)
        if word == "ADD":
            return self._alter_add()
        if word == "DROP":
            return [self._alter_drop()]
        if word in ("MODIFY", "CHANGE"):
            self._advance()
            self._accept("COLUMN")
            exists = self._if_exists()
            old = self._name()
            new = self._name() if word == "CHANGE" else old
            column = self._column_definition(new)
            self._column_position(column)
            return [
                ChangeColumn(
                    this=column, rename_from=old if word == "CHANGE" else None, exists=exists
                )
            ]
        if word == "ALTER":
            self._advance()
            return [self._alter_alter()]
        if word == "RENAME":
            self._advance()
            return [self._alter_rename()]
        if self._accept("CONVERT", "TO"):
            if not (self._accept("CHARACTER", "SET") or self._accept("CHARSET")):
                self.raise_error("Expected CHARACTER SET")
            charset = self._charset_name()
            collation = None
            if self._accept("COLLATE"):
                collation = self._charset_name()
            return [
                ConvertCharset(
                    this=exp.Var(this=charset),
                    expression=exp.Var(this=collation) if collation else None,
                )
            ]
        if self._accept("CONVERT", "PARTITION"):  # MariaDB: a partition becomes table t
            self._name()
            self._expect("TO", "TABLE")
            table = self._table_name()
            self._skip_rest()
            return [Opaque(this="CONVERT PARTITION", expression=table)]
        if self._accept("CONVERT", "TABLE"):  # MariaDB: table t becomes a partition
            table = self._table_name()
            self._skip_rest()
            return [Opaque(this="CONVERT TABLE", expression=table)]
        if self._accept("EXCHANGE", "PARTITION"):
            self._name()
            self._expect("WITH", "TABLE")
            table = self._table_name()
            self._skip_balanced()
            return [Opaque(this="EXCHANGE PARTITION", expression=table)]
        if word in ("ALGORITHM", "LOCK"):
            self._advance()
            self._accept_type(TokenType.EQ)
            return [Opaque(this=word, expression=self._option_value())]
        if word in ("FORCE", "NOWAIT"):
            self._advance()
            return [Opaque(this=word)]
        if word in ("ENABLE", "DISABLE") and self._word_at(self._index + 1) == "KEYS":
            self._advance(2)
            return [Opaque(this="KEYS")]
        if word in ("DISCARD", "IMPORT") and self._word_at(self._index + 1) == "TABLESPACE":
            self._advance(2)
            return [Opaque(this="TABLESPACE")]
        if word in ("WITH", "WITHOUT") and self._word_at(self._index + 1) == "VALIDATION":
            self._advance(2)
            return [Opaque(this="VALIDATION")]
        if word in ("SECONDARY_LOAD", "SECONDARY_UNLOAD"):
            self._advance()
            return [Opaque(this=word)]
        if word == "ORDER BY":
            self._advance()
            return [Opaque(this="ORDER BY", expression=self._skip_balanced())]
        if word in _PARTITION_OPS and self._word_at(self._index + 1) in ("PARTITION",):
            return [Opaque(this="PARTITION", expression=self._skip_rest())]
        if word == "UPGRADE" and self._word_at(self._index + 1) == "PARTITIONING":
            self._advance(2)
            return [Opaque(this="PARTITION")]
        option = self._table_option()
        if option is not None:
            return [option]
        self.raise_error(f"Unknown ALTER TABLE action {word or self._curr.text!r}")
        raise AssertionError

    def _alter_add(self) -> list[exp.Expr]:
        self._expect("ADD")
        word = self._word_at(self._index)
        if word in _ELEMENT_WORDS:
            element = self._key_element()
            return [element]
        if word == "PARTITION":
            return [Opaque(this="PARTITION", expression=self._skip_rest())]
        if word == "PERIOD" and self._word_at(self._index + 1) == "FOR":
            self._advance(2)
            if self._accept("SYSTEM_TIME"):
                self.raise_error("PERIOD FOR SYSTEM_TIME (system versioning)")
            return [Opaque(this="PERIOD", expression=self._skip_balanced())]
        if word == "SYSTEM" and self._word_at(self._index + 1) == "VERSIONING":
            self.raise_error("ADD SYSTEM VERSIONING")
        self._accept("COLUMN")
        exists = self._if_not_exists()
        if self._at(TokenType.L_PAREN):
            self._advance()
            elements = self._parse_csv(self._table_element)
            if not self._accept_type(TokenType.R_PAREN):
                self.raise_error("Expecting )")
            for element in elements:
                if isinstance(element, exp.ColumnDef):
                    element.set("exists", exists)
            return list(elements)
        column = self._column_definition(self._name())
        column.set("exists", exists)
        self._column_position(column)
        return [column]

    def _alter_drop(self) -> exp.Expr:
        self._expect("DROP")
        if self._accept("PRIMARY", "KEY"):
            return exp.DropPrimaryKey()
        if self._accept("INDEX") or self._accept("KEY"):
            self._if_exists()
            return Opaque(this="DROP INDEX", expression=self._name())
        if self._accept("FOREIGN", "KEY"):
            self._if_exists()
            return Opaque(this="DROP FOREIGN KEY", expression=self._name())
        if self._accept("CONSTRAINT") or self._accept("CHECK"):
            self._if_exists()
            return Opaque(this="DROP CONSTRAINT", expression=self._name())
        if self._peek_words("PARTITION"):
            return Opaque(this="PARTITION", expression=self._skip_rest())
        if self._peek_words("SYSTEM", "VERSIONING"):
            self.raise_error("DROP SYSTEM VERSIONING")
        if self._peek_words("PERIOD", "FOR"):
            self._advance(2)
            if self._accept("SYSTEM_TIME"):
                self.raise_error("DROP PERIOD FOR SYSTEM_TIME (system versioning)")
            return Opaque(this="PERIOD", expression=self._skip_balanced())
        self._accept("COLUMN")
        exists = self._if_exists()
        name = self._name()
        if not self._accept("RESTRICT"):
            self._accept("CASCADE")
        return DropColumn(this=name, exists=exists)

    def _alter_alter(self) -> exp.Expr:
        if self._accept("INDEX") or self._accept("KEY"):
            return Opaque(this="ALTER INDEX", expression=self._skip_balanced())
        if self._accept("CHECK") or self._accept("CONSTRAINT"):
            return Opaque(this="ALTER CHECK", expression=self._skip_balanced())
        self._accept("COLUMN")
        exists = self._if_exists()
        column = self._name()
        if self._accept("SET", "DEFAULT"):
            return exp.AlterColumn(this=column, default=self._default_value(), exists=exists)
        if self._accept("DROP", "DEFAULT"):
            return exp.AlterColumn(this=column, drop=True, exists=exists)
        if self._accept("SET", "VISIBLE"):
            return exp.AlterColumn(this=column, visible="VISIBLE", exists=exists)
        if self._accept("SET", "INVISIBLE"):
            return exp.AlterColumn(this=column, visible="INVISIBLE", exists=exists)
        self.raise_error("Unknown ALTER COLUMN action")
        raise AssertionError

    def _alter_rename(self) -> exp.Expr:
        if self._accept("COLUMN"):
            exists = self._if_exists()
            old = self._name()
            self._expect("TO")
            return exp.RenameColumn(this=old, to=self._name(), exists=exists)
        if self._accept("INDEX") or self._accept("KEY"):
            self._if_exists()
            old = self._name()
            self._expect("TO")
            new = self._name()
            return Opaque(this="RENAME INDEX", expression=exp.Tuple(expressions=[old, new]))
        if not self._accept("TO"):
            self._accept("AS")
        return exp.AlterRename(this=self._table_name())


def _dialect_class(ansi_quotes: bool, backslash_escapes: bool) -> type[MySQL]:
    quotes: list[str | tuple[str, str]] = ["'"] if ansi_quotes else ["'", '"']
    identifiers: list[str | tuple[str, str]] = ["`", '"'] if ansi_quotes else ["`"]
    escapes = ["'", '"', "\\"] if backslash_escapes else ["'", '"']

    class Tokenizer(MySQL.Tokenizer):
        QUOTES: ClassVar[list[str | tuple[str, str]]] = quotes
        IDENTIFIERS: ClassVar[list[str | tuple[str, str]]] = identifiers
        STRING_ESCAPES: ClassVar[list[str]] = escapes
        # RENAME would make the rest of the statement one string
        COMMANDS: ClassVar[set[TokenType]] = {
            TokenType.COMMAND,
            TokenType.EXECUTE,
            TokenType.FETCH,
        }

    suffix = ("Ansi" if ansi_quotes else "") + ("" if backslash_escapes else "NoEsc")
    return type(
        f"ReplicaDdl{suffix}",
        (MySQL,),
        {"Tokenizer": Tokenizer, "Parser": DdlParser, "__module__": __name__},
    )


@cache
def dialect_for(ansi_quotes: bool = False, backslash_escapes: bool = True) -> MySQL:
    """The dialect that reads DDL text under these SQL modes (``ANSI_QUOTES``, and
    backslash escapes unless ``NO_BACKSLASH_ESCAPES``)."""
    return _dialect_class(ansi_quotes, backslash_escapes)()


def _base_tables(references: list[exp.Expr]) -> list[exp.Expr]:
    """The tables of table references, not those inside subqueries (derived tables)."""
    out: list[exp.Expr] = []
    for ref in references:
        for table in ref.find_all(exp.Table):
            if table.find_ancestor(exp.Subquery, exp.Select) is None:
                out.append(exp.Table(this=table.this, db=table.args.get("db")))
    return out


def _resolve_aliases(names: list[exp.Table], references: list[exp.Expr]) -> list[exp.Expr]:
    """Multi-table DELETE targets: a name that is an alias in the references is its table."""
    aliases: dict[str, exp.Expr] = {}
    for ref in references:
        for table in ref.find_all(exp.Table):
            alias = table.args.get("alias")
            if alias is not None and table.find_ancestor(exp.Subquery, exp.Select) is None:
                aliases[alias.name] = exp.Table(this=table.this, db=table.args.get("db"))
    out: list[exp.Expr] = []
    for name in names:
        if name.args.get("db") is None and name.name in aliases:
            out.append(aliases[name.name])
        else:
            out.append(name)
    return out


@dataclass(frozen=True, slots=True)
class DmlReading:
    """A row statement read for its targets: its tokens and target tables; ``columns_at``
    the token index of an INSERT's column list (a parenthesis that is no call)."""

    tokens: list[Token]
    targets: list[exp.Table]
    columns_at: int | None


def read_dml(sql: str) -> DmlReading | None:
    """The tokens and target tables of an INSERT, REPLACE, UPDATE, DELETE or LOAD
    statement; None when they cannot be read."""
    dialect = dialect_for()
    try:
        tokens = dialect.tokenize(sql)
        parser = DdlParser(dialect=dialect, error_level=ErrorLevel.IMMEDIATE)
        method = cast("Callable[[Parser], exp.Expr | None]", DdlParser._dml_targets)
        trees = parser._parse(method, tokens, sql)
    except (TokenError, ParseError):
        return None
    if len(trees) != 1 or not isinstance(trees[0], DmlTargets):
        return None
    node = trees[0]
    targets = [t for t in node.expressions if isinstance(t, exp.Table)]
    if len(targets) != len(node.expressions) or not targets:
        return None
    columns_at = node.args.get("columns_at")
    return DmlReading(tokens, targets, int(columns_at.this) if columns_at is not None else None)


def salvage_tables(
    sql: str, *, ansi_quotes: bool = False, backslash_escapes: bool = True
) -> list[exp.Table] | None:
    """The tables a table DDL statement that :func:`parse_ddl` refuses names (read from
    its start), or None when they cannot be told (a database statement, a RENAME TABLE
    list that does not read, a text that does not tokenize)."""
    dialect = dialect_for(ansi_quotes, backslash_escapes)
    try:
        tokens = dialect.tokenize(sql)
        parser = DdlParser(dialect=dialect, error_level=ErrorLevel.IMMEDIATE)
        method = cast("Callable[[Parser], exp.Expr | None]", DdlParser._salvage)
        trees = parser._parse(method, tokens, sql)
    except (TokenError, ParseError):
        return None
    if not trees or not isinstance(trees[0], exp.Tuple):
        return None
    tables = [t for t in trees[0].expressions if isinstance(t, exp.Table)]
    return tables or None


def parse_ddl(sql: str, *, ansi_quotes: bool = False, backslash_escapes: bool = True) -> exp.Expr:
    """The tree of one table or database DDL statement (no executable comments left).

    Raises:
        ParseError: not such a statement, or a clause this grammar does not know.
    """
    dialect = dialect_for(ansi_quotes, backslash_escapes)
    try:
        tokens = dialect.tokenize(sql)
    except TokenError as exc:
        raise ParseError(str(exc)) from exc
    parser = dialect.parser(error_level=ErrorLevel.IMMEDIATE)
    trees = parser.parse(tokens, sql)
    trees = [t for t in trees if t is not None and not isinstance(t, exp.Semicolon)]
    if len(trees) != 1:
        raise ParseError("not one statement")
    tree = trees[0]
    if not isinstance(
        tree,
        (
            CreateTable,
            AlterTable,
            DropTables,
            RenameTables,
            TruncateTable,
            CreateIndex,
            DropIndex,
            CreateSequence,
            AlterSequence,
            CreateDatabase,
            AlterDatabase,
            DropDatabase,
        ),
    ):
        raise ParseError("not a table or database definition")
    return tree
