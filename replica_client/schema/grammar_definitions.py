"""The grammar of what defines a table's columns, as both servers accept it. No I/O.

Column types with every alias and attribute (``NATIONAL VARCHAR``, ``LONG
VARBINARY``, ``SERIAL``, ``UNSIGNED ZEROFILL``, ``CHARACTER SET binary``,
MariaDB's ``COMPRESSED``, ``PERSISTENT``, ``UUID``...), column attributes and
positions, DEFAULT values, table elements (keys, the primary key, PERIOD) and
table options: the rules of :class:`DefinitionGrammar`, which CREATE TABLE,
ALTER TABLE and the sequence statements share.
"""

from __future__ import annotations

from typing import Final

from sqlglot import Token, TokenType, exp

from .grammar_nodes import ColumnAttr, ColumnType, Opaque, PrimaryKeyDef, TableOption
from .grammar_tokens import UNQUOTED_NAME, TokenReader

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
ELEMENT_WORDS: Final = frozenset(
    {"PRIMARY", "PRIMARY KEY", "KEY", "INDEX", "UNIQUE", "FULLTEXT", "SPATIAL", "FOREIGN",
     "FOREIGN KEY", "CONSTRAINT", "CHECK"}
)  # fmt: skip
#: Table options that take a value and change no column.
PLAIN_TABLE_OPTIONS: Final = frozenset(
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
#: Words of a column attribute list that take one value (kind OPTION).
_COLUMN_OPTIONS: Final = frozenset(
    {"COLUMN_FORMAT", "STORAGE", "SRID", "ENGINE_ATTRIBUTE", "SECONDARY_ENGINE_ATTRIBUTE",
     "REF_SYSTEM_ID"}
)  # fmt: skip


class DefinitionGrammar(TokenReader):
    """The rules of column definitions, table elements and table options."""

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
        if word in ELEMENT_WORDS:
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
        if word in PLAIN_TABLE_OPTIONS:
            self._advance()
            self._accept_type(TokenType.EQ)
            value = self._option_value()
            if word == "TABLESPACE" and self._accept("STORAGE"):
                self._option_value()
            return TableOption(this=word, expression=value)
        # MariaDB's engine-defined options: name = value
        if (
            word
            and UNQUOTED_NAME.fullmatch(word)
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
