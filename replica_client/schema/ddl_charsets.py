"""Character set and collation rules of DDL on one server. No I/O.

Names as the server spells them (``utf8`` is ``utf8mb3``), the default and
binary collation of a character set, its maximum character length, a
CHARACTER SET / COLLATE pair resolved, and what becomes of ENUM/SET labels in a
character set (a character it lacks is ``?``; the same bytes read in another
one).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Final

from ..binlog.charsets import charset_info, collation_id, decoder_for_collation
from .ddl_context import NotExactError

_UNICODE_FULL: Final = frozenset({"utf8mb4", "utf16", "utf16le", "utf32"})
_UNICODE_BMP: Final = frozenset({"utf8mb3", "ucs2"})


#: Character sets whose ASCII characters are not single ASCII bytes.
_WIDE: Final = frozenset({"ucs2", "utf16", "utf16le", "utf32"})
#: (from, to): every character of ``from`` has the same bytes in ``to``.
_SAME_BYTES: Final = frozenset({("utf8mb3", "utf8mb4"), ("ucs2", "utf16")})


def same_label_bytes(labels: tuple[str, ...], old: str, new: str) -> bool:
    """Whether labels kept as ``old`` bytes read the same in ``new``."""
    if old == new or (old, new) in _SAME_BYTES:
        return True
    return old not in _WIDE and new not in _WIDE and all(label.isascii() for label in labels)


def _replace_missing(label: str, has: Callable[[str], bool]) -> str:
    return "".join(c if has(c) else "?" for c in label)


# -- character sets ------------------------------------------------------------------------


class Charsets:
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
            raise NotExactError(f"collation {collation!r} is not known")
        return known[1]

    def default_collation(self, charset: str) -> str:
        info = charset_info(self.charset_name(charset), self.mariadb, self.version)
        if info is None:
            raise NotExactError(f"character set {charset!r} is not known")
        return info[1]

    def maxlen(self, charset: str) -> int:
        info = charset_info(self.charset_name(charset), self.mariadb, self.version)
        if info is None:
            raise NotExactError(f"character set {charset!r} is not known")
        return info[0]

    def bin_collation(self, charset: str) -> str:
        charset = self.charset_name(charset)
        name = "binary" if charset == "binary" else f"{charset}_bin"
        if collation_id(name, self.mariadb) is None:
            raise NotExactError(f"no binary collation of {charset!r} is known")
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
            raise NotExactError(f"ENUM/SET labels with characters that {charset} may lack")
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
            raise NotExactError("CHARACTER SET / COLLATE DEFAULT")
        if collation is not None:
            coll = self.collation_name(collation)
            cs = self.charset_of(coll)
            if charset is not None and self.charset_name(charset) != cs:
                raise NotExactError(f"collation {collation} is not of character set {charset}")
            return cs, coll
        if charset is not None:
            cs = self.charset_name(charset)
            return cs, self.default_collation(cs)
        return None
