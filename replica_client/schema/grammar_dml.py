"""The target tables of row statements, read from their start. No I/O.

:class:`DmlGrammar` reads which tables an INSERT, REPLACE, UPDATE, DELETE or
LOAD statement writes (a multi-table DELETE's aliases resolved, the tables of
derived tables left out) and skips the rest (values, queries, conditions).
"""

from __future__ import annotations

from sqlglot import TokenType, exp

from .grammar_nodes import DmlTargets
from .grammar_tokens import NodeT, TokenReader


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


class DmlGrammar(TokenReader):
    """The rules of the target tables of row statements."""

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

    def _skip_to_end(self, node: NodeT) -> NodeT:
        while self._index < len(self._tokens):
            self._advance()
        return node
