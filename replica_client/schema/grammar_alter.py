"""The grammar of ALTER TABLE: every action of both flavours. No I/O.

:class:`AlterGrammar` reads the action list of one ALTER TABLE into the
nodes of :mod:`.grammar_nodes`: column ADD / DROP / MODIFY / CHANGE / ALTER /
RENAME, keys, CONVERT TO CHARACTER SET, table options, and the actions that
change no column (partition operations, ALGORITHM, LOCK, ...) as opaque.
"""

from __future__ import annotations

from typing import Final

from sqlglot import TokenType, exp

from .grammar_definitions import ELEMENT_WORDS, DefinitionGrammar
from .grammar_nodes import AlterTable, ChangeColumn, ConvertCharset, DropColumn, Opaque, TableOption

#: ALTER TABLE words that begin a partition operation (the operation runs to the end).
_PARTITION_OPS: Final = frozenset(
    {"DISCARD", "IMPORT", "TRUNCATE", "COALESCE", "REORGANIZE", "EXCHANGE", "ANALYZE",
     "CHECK", "OPTIMIZE", "REBUILD", "REPAIR"}
)  # fmt: skip


class AlterGrammar(DefinitionGrammar):
    """The rules of ALTER TABLE's actions."""

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
        if word in ELEMENT_WORDS:
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
