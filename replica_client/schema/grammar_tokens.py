"""The token level of the DDL grammar, under every rule of :class:`~.grammar.DdlParser`. No I/O.

:class:`TokenReader` extends sqlglot's MySQL parser with what the rules read
tokens with: words (one token may hold several: ``CHAR VARYING``), names and
table names, character set and collation names, option values, a balanced or
parenthesized clause or the rest of the statement skipped (their text kept),
``IF [NOT] EXISTS``, MariaDB's ``WAIT n`` / ``NOWAIT``, the end of a statement.
"""

from __future__ import annotations

import re
from typing import Final, TypeVar

from sqlglot import Token, TokenType, exp
from sqlglot.parsers.mysql import MySQLParser

#: An unquoted name (of a table, column, character set or collation).
UNQUOTED_NAME: Final = re.compile(r"[0-9A-Za-z_$\u0080-\uffff]+")
_QUOTED: Final = frozenset({TokenType.IDENTIFIER})
_STRINGS: Final = frozenset(
    {TokenType.STRING, TokenType.NATIONAL_STRING, TokenType.HEX_STRING, TokenType.BIT_STRING}
)


#: A node of the grammar, returned as it was given.
NodeT = TypeVar("NodeT", bound=exp.Expression)


class TokenReader(MySQLParser):
    """sqlglot's MySQL parser with the token reading of the DDL grammar."""

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
            or not UNQUOTED_NAME.fullmatch(tok.text)
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
        if tok.token_type in (TokenType.STRING, TokenType.IDENTIFIER) or UNQUOTED_NAME.fullmatch(
            tok.text
        ):
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

    def _end(self, node: NodeT) -> NodeT:
        self._accept_type(TokenType.SEMICOLON)
        if self._index < len(self._tokens):
            self.raise_error("Unexpected text after the statement")
        return node
