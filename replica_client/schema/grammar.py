"""The statements of the DDL grammar: :class:`DdlParser`. No I/O.

sqlglot's MySQL parser extended with the grammar of the DDL statements that
define tables, as both servers accept it: CREATE/DROP TABLE, RENAME TABLE
lists, TRUNCATE, CREATE/DROP INDEX, sequences and databases here; the rules
they are made of come from :mod:`.grammar_tokens`, :mod:`.grammar_definitions`,
:mod:`.grammar_alter` (ALTER TABLE's actions) and :mod:`.grammar_dml` (the
target tables of row statements).
"""

from __future__ import annotations

import re
from collections.abc import Callable
from typing import Any, ClassVar

from sqlglot import TokenType, exp
from sqlglot.errors import ParseError

from .grammar_alter import AlterGrammar
from .grammar_definitions import PLAIN_TABLE_OPTIONS
from .grammar_dml import DmlGrammar
from .grammar_nodes import (
    AlterDatabase,
    AlterSequence,
    CreateDatabase,
    CreateIndex,
    CreateSequence,
    CreateTable,
    DropDatabase,
    DropIndex,
    DropTables,
    Opaque,
    RenameTables,
    TruncateTable,
)

__all__ = ["DdlParser"]

# -- the parser ---------------------------------------------------------------------------------


class DdlParser(AlterGrammar, DmlGrammar):
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
                if option is not None and option.this not in PLAIN_TABLE_OPTIONS:
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
