"""The executable comments of a statement, opened or removed as the server's lexer does. No I/O.

``/*!NNNNN ... */`` and ``/*M!NNNNNN ... */``: their content is part of the
statement when the server's version is at least ``NNNNN`` (MariaDB ignores
``/*!`` comments for MySQL 5.7 to 9.x, 50700-99999, and only MariaDB reads
``/*M!``). A server version known as (major, minor) only cannot tell a comment
of the same major and minor with a patch level above 0: both readings are
returned and the caller compares their effects. Plain text, before any
tokenizing: this module does not import sqlglot.
"""

from __future__ import annotations

from typing import Final

__all__ = ["ExecutableCommentError", "expand_executable_comments"]

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
