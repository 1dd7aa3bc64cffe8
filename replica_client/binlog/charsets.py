"""Collation id -> Python codec, for decoding character columns. No I/O.

The collation table is PyMySQL's (MySQL and MariaDB share ids below 2048);
MariaDB 11's UCA-14.0 collations (ids 2048 and up) encode the character set in
the id. ``None`` means "binary or unknown": such values stay ``bytes``.

MySQL's ``latin1`` is Windows-1252 with the five bytes cp1252 leaves undefined
mapped to the C1 controls; Python's ``cp1252`` codec refuses those, so latin1
is decoded through a translation table that never fails.
"""

from __future__ import annotations

import codecs
from collections.abc import Callable
from functools import cache
from typing import Final

import pymysql.charset

__all__ = ["decoder_for_collation", "encoding_for_collation"]

# Server character set name -> Python codec name, where they differ.
_CODEC_FOR_CHARSET: Final[dict[str, str]] = {
    "utf8mb4": "utf-8",
    "utf8mb3": "utf-8",
    "utf8": "utf-8",
    "latin1": "latin1-mysql",
    "latin2": "iso8859-2",
    "latin5": "iso8859-9",
    "latin7": "iso8859-13",
    "ucs2": "utf-16-be",
    "utf16": "utf-16-be",
    "utf16le": "utf-16-le",
    "utf32": "utf-32-be",
    "koi8r": "koi8-r",
    "koi8u": "koi8-u",
    "greek": "iso8859-7",
    "hebrew": "iso8859-8",
    "cp1250": "cp1250",
    "cp1251": "cp1251",
    "cp1256": "cp1256",
    "cp1257": "cp1257",
    "cp850": "cp850",
    "cp852": "cp852",
    "cp866": "cp866",
    "cp932": "cp932",
    "eucjpms": "euc-jp",
    "ujis": "euc-jp",
    "sjis": "shift_jis",
    "euckr": "euc-kr",
    "gb2312": "gb2312",
    "gbk": "gbk",
    "gb18030": "gb18030",
    "big5": "big5",
    "tis620": "tis-620",
    "macroman": "mac-roman",
    "macce": "mac-latin2",
    "ascii": "ascii",
}

# MariaDB 11.x UCA-14.0 collations: id = 2048 + 256 * k + flags.
_UCA1400_CHARSETS: Final = ("utf8mb3", "utf8mb4", "ucs2", "utf16", "utf32")

_LATIN1_TABLE: Final = str.maketrans(
    {
        i: c
        for i, c in zip(
            range(0x80, 0xA0),
            bytes(range(0x80, 0xA0)).decode("cp1252", errors="replace"),
            strict=True,
        )
        if c != "\ufffd"
    }
)


def _decode_latin1(data: bytes) -> str:
    return data.decode("latin-1").translate(_LATIN1_TABLE)


def _charset_name(collation: int) -> str | None:
    if collation >= 2048:
        k = (collation - 2048) >> 8
        return _UCA1400_CHARSETS[k] if k < len(_UCA1400_CHARSETS) else None
    try:
        return str(pymysql.charset.charset_by_id(collation).name)
    except KeyError:
        return None


@cache
def encoding_for_collation(collation: int | None) -> str | None:
    """The Python codec for a collation id; None for binary or unknown ids."""
    if collation is None or collation == 63:
        return None
    name = _charset_name(collation)
    if name is None or name == "binary":
        return None
    codec = _CODEC_FOR_CHARSET.get(name, name)
    if codec == "latin1-mysql":
        return codec
    try:
        codecs.lookup(codec)
    except LookupError:
        return None
    return codec


@cache
def decoder_for_collation(collation: int | None) -> Callable[[bytes], str] | None:
    """A function bytes -> str for the collation, or None for binary/unknown.

    The function raises ``UnicodeDecodeError`` on bytes invalid in the
    charset; callers turn that into keeping the value as ``bytes``.
    """
    codec = encoding_for_collation(collation)
    if codec is None:
        return None
    if codec == "latin1-mysql":
        return _decode_latin1
    decode = codecs.getdecoder(codec)

    def run(data: bytes) -> str:
        return decode(data)[0]

    return run
