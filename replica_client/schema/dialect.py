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

This module is the front end (the dialects, :func:`parse_ddl`, :func:`read_dml`,
:func:`salvage_tables`); the names above are defined in :mod:`.executable_comments`,
:mod:`.grammar_nodes` (the tree) and :mod:`.grammar` (:class:`DdlParser`, made of
:mod:`.grammar_tokens`, :mod:`.grammar_definitions`, :mod:`.grammar_alter` and
:mod:`.grammar_dml`).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from functools import cache
from typing import ClassVar, cast

from sqlglot import Parser, Token, TokenType, exp
from sqlglot.dialects.mysql import MySQL
from sqlglot.errors import ErrorLevel, ParseError, TokenError

from .executable_comments import ExecutableCommentError, expand_executable_comments
from .grammar import DdlParser
from .grammar_nodes import (
    AlterDatabase,
    AlterSequence,
    AlterTable,
    ChangeColumn,
    ColumnAttr,
    ColumnType,
    ConvertCharset,
    CreateDatabase,
    CreateIndex,
    CreateSequence,
    CreateTable,
    DmlTargets,
    DropColumn,
    DropDatabase,
    DropIndex,
    DropTables,
    Opaque,
    PrimaryKeyDef,
    RenameTables,
    TableOption,
    TruncateTable,
)

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


@dataclass(frozen=True, slots=True)
class DmlReading:
    """A row statement read for its targets: its tokens and target tables; ``columns_at``
    the token index of an INSERT's column list (a parenthesis that is no call)."""

    tokens: list[Token]
    targets: list[exp.Table]
    columns_at: int | None


def _read_with(
    rule: Callable[[DdlParser], exp.Expr | None], sql: str, dialect: MySQL
) -> tuple[list[Token], list[exp.Expr | None]] | None:
    """The tokens of ``sql`` and the trees :class:`DdlParser` reads from them with one of
    its grammar rules (``rule``) in place of a whole statement; None when the text does
    not tokenize or the rule does not read it."""
    try:
        tokens = dialect.tokenize(sql)
        parser = DdlParser(dialect=dialect, error_level=ErrorLevel.IMMEDIATE)
        trees = parser._parse(cast("Callable[[Parser], exp.Expr | None]", rule), tokens, sql)
    except (TokenError, ParseError):
        return None
    return tokens, trees


def read_dml(sql: str) -> DmlReading | None:
    """The tokens and target tables of an INSERT, REPLACE, UPDATE, DELETE or LOAD
    statement; None when they cannot be read."""
    read = _read_with(DdlParser._dml_targets, sql, dialect_for())
    if read is None:
        return None
    tokens, trees = read
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
    read = _read_with(DdlParser._salvage, sql, dialect_for(ansi_quotes, backslash_escapes))
    if read is None:
        return None
    trees = read[1]
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
