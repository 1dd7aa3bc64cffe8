"""Collation id -> decoder of character data, as the server converts it. No I/O
besides reading this package's own data files, lazily, on first use.

The decoded text of a value is what ``SELECT`` gives for it through a utf8mb4
connection, in every character set the servers support. A value holding a
sequence the server itself cannot convert (it shows ``?`` for it) stays
``bytes``: the decoder raises ``UnicodeDecodeError``, which callers turn into
keeping the raw value.

Where the data comes from (``charset_data/``, written by
``scripts/gen_charsets.py`` from the servers it names in ``generated_from``):

* ``collations.json``: every collation id of MariaDB and MySQL with its
  character set, from ``information_schema`` (NO PAD ids 1024 and up, MariaDB's
  uca1400 ids 2048 and up included). The two flavours never give one id to two
  character sets, so one map serves both; the generator refuses to write data
  where they would. MariaDB's uca1400 ids encode the character set in the id
  (``2048 + 256 * k + ...``), which resolves ids of that block a newer server
  adds.
* ``<charset>.json``, one per character set decoded by table: for each group
  of its collations that convert alike (each collation has its own conversion
  table in the server: latin2_czech_cs has no characters at 0x80-0x9F,
  latin2_general_ci has the C1 controls there), the Python codec closest to
  the server (or none), the sequences where the server differs from it, and
  the byte classes of the charset's multi-byte sequences.

Character sets decoded by fixed rules instead (checked against the servers by
the generator too): utf8mb4 (UTF-8), utf8mb3 (UTF-8 up to U+FFFF), ``latin1``
(Windows-1252 with the five bytes it leaves undefined mapped to the C1
controls, as the server does), ucs2 (UTF-16BE without surrogates), utf16
(UTF-16BE), utf16le and utf32 (UTF-32BE).

MariaDB and MySQL give no id to two different character sets, but they do
convert a few sequences differently (0x7F of latin2_czech_cs), so the decoders
take the flavour of the server that wrote the binlog (``mariadb``, from its
FORMAT_DESCRIPTION; MariaDB when unknown, as the event decoder assumes).
"""

from __future__ import annotations

import codecs
import json
import re
from collections.abc import Callable
from functools import cache
from importlib import resources
from typing import Any, Final

__all__ = [
    "Decoder",
    "build_collation_map",
    "build_table_decoder",
    "charset_for_collation",
    "charset_info",
    "collation_id",
    "collation_name",
    "decoder_for_collation",
    "encoding_for_collation",
    "expand_byte_ranges",
    "rule_decoder",
]

Decoder = Callable[[bytes], str]

_DATA_DIR: Final = "charset_data"
_BINARY: Final = "binary"
# MariaDB's uca1400 collations: id = 2048 + 256 * k + (language, flags), k below.
_UCA1400_BASE: Final = 2048
_UCA1400_CHARSETS: Final = ("utf8mb3", "utf8mb4", "ucs2", "utf16", "utf32")
#: Marks a byte the server cannot convert in a single-byte decoding table
#: (``codecs.charmap_decode`` refuses it).
_UNDEFINED: Final = "\ufffe"


def _load(name: str) -> Any:
    path = resources.files(__package__).joinpath(_DATA_DIR, name)
    return json.loads(path.read_text(encoding="utf-8"))


# -- collation ids ----------------------------------------------------------------------


def build_collation_map(data: dict[str, Any]) -> dict[int, str]:
    """Collation id -> character set name from ``collations.json``'s content."""
    out: dict[int, str] = {}
    for ids in data["collations"].values():
        for cid, (charset, _name) in ids.items():
            if out.setdefault(int(cid), charset) != charset:
                raise ValueError(f"collation {cid} belongs to two character sets")
    return out


@cache
def _collation_map() -> dict[int, str]:
    return build_collation_map(_load("collations.json"))


def charset_for_collation(collation: int | None) -> str | None:
    """The server's character set name of a collation id; None when unknown."""
    if collation is None:
        return None
    name = _collation_map().get(collation)
    if name is None and collation >= _UCA1400_BASE:
        k = (collation - _UCA1400_BASE) >> 8
        name = _UCA1400_CHARSETS[k] if k < len(_UCA1400_CHARSETS) else None
    return name


# -- names: what DDL text and information_schema say ---------------------------------------


@cache
def _collation_ids() -> dict[tuple[bool, str], tuple[int, str]]:
    """(is MariaDB, collation name) -> (id, character set)."""
    out: dict[tuple[bool, str], tuple[int, str]] = {}
    for flavor, ids in _load("collations.json")["collations"].items():
        for cid, (charset, name) in ids.items():
            out.setdefault((flavor == "mariadb", name), (int(cid), charset))
    return out


def collation_id(name: str, mariadb: bool = True) -> tuple[int, str] | None:
    """(id, character set) of a collation name on a flavour; None when unknown.

    MariaDB's uca1400 collations are known by their full name
    (``utf8mb4_uca1400_ai_ci``), as ``information_schema.COLUMNS`` shows them.
    """
    return _collation_ids().get((mariadb, name.lower()))


def collation_name(collation: int, mariadb: bool = True) -> str | None:
    """The name of collation id ``collation`` on a flavour; None when unknown."""
    ids = _load_ids(mariadb)
    return ids.get(collation)


@cache
def _load_ids(mariadb: bool) -> dict[int, str]:
    data = _load("collations.json")["collations"].get("mariadb" if mariadb else "mysql", {})
    return {int(cid): name for cid, (_cs, name) in data.items()}


@cache
def _charset_servers() -> dict[str, dict[str, tuple[int, str]]]:
    servers = _load("charsets.json")["servers"]
    return {
        key: {cs: (int(v[0]), str(v[1])) for cs, v in sets.items()} for key, sets in servers.items()
    }


def _version_key(mariadb: bool, version: tuple[int, int]) -> str:
    """The key of ``charsets.json`` for a server: the newest known version not newer
    than it, of its flavour (the oldest known when it is older than all)."""
    flavor = "mariadb" if mariadb else "mysql"
    known = sorted(
        (tuple(int(x) for x in key.split("-", 1)[1].split(".")), key)
        for key in _charset_servers()
        if key.startswith(flavor + "-")
    )
    if not known:
        raise LookupError(f"no character set data for {flavor}")
    best = known[0][1]
    for v, key in known:
        if v <= version:
            best = key
    return best


def charset_info(
    charset: str, mariadb: bool = True, version: tuple[int, int] = (99, 0)
) -> tuple[int, str] | None:
    """(bytes per character at most, default collation) of a character set on a server
    of this flavour and version (``information_schema.CHARACTER_SETS``, in
    ``charsets.json``); None when the server has no such character set.

    ``utf8`` is read as ``utf8mb3``, as both flavours do by default (MariaDB's
    ``old_mode`` without ``UTF8_IS_UTF8MB3`` would make it ``utf8mb4``).
    """
    name = charset.lower()
    if name == "utf8":
        name = "utf8mb3"
    return _charset_servers()[_version_key(mariadb, version)].get(name)


# -- decoders by rule -----------------------------------------------------------------------

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


def _decode_utf8(data: bytes) -> str:
    return data.decode("utf-8")


_FOUR_BYTE_LEAD: Final = re.compile(b"[\xf0-\xff]").search


def _decode_utf8mb3(data: bytes) -> str:
    # utf8mb3 stops at U+FFFF: the server cannot convert a 4-byte sequence.
    text = data.decode("utf-8")
    if _FOUR_BYTE_LEAD(data) is not None:
        raise UnicodeDecodeError("utf8mb3", data, 0, len(data), "4-byte sequence in utf8mb3")
    return text


def _decode_ucs2(data: bytes) -> str:
    # UCS-2 has no surrogate pairs: the server converts each half on its own
    # (to a sequence that is not UTF-8), so a value holding one stays bytes.
    text = data.decode("utf-16-be")
    if 2 * len(text) != len(data):
        raise UnicodeDecodeError("ucs2", data, 0, len(data), "UTF-16 surrogates are not UCS-2")
    return text


def _codec(name: str) -> Decoder:
    decode = codecs.getdecoder(name)

    def run(data: bytes) -> str:
        return decode(data)[0]

    return run


# Character set -> (encoding name reported by encoding_for_collation, decoder).
_RULES: Final[dict[str, tuple[str, Decoder]]] = {
    "utf8mb4": ("utf-8", _decode_utf8),
    "utf8mb3": ("utf8mb3", _decode_utf8mb3),
    "latin1": ("latin1-mysql", _decode_latin1),
    "ucs2": ("ucs2", _decode_ucs2),
    "utf16": ("utf16", _codec("utf-16-be")),
    "utf16le": ("utf16le", _codec("utf-16-le")),
    "utf32": ("utf32", _codec("utf-32-be")),
}


def rule_decoder(charset: str) -> Decoder | None:
    """The fixed decoder of a character set not decoded by table, if it is one."""
    rule = _RULES.get(charset)
    return rule[1] if rule is not None else None


# -- decoders by table ----------------------------------------------------------------------


def _byte_class(ranges: str) -> str:
    parts = []
    for part in ranges.split(","):
        lo, _, hi = part.partition("-")
        parts.append(f"\\x{lo.lower()}" + (f"-\\x{hi.lower()}" if hi else ""))
    return "[" + "".join(parts) + "]"


def _overrides(runs: list[list[Any]]) -> dict[bytes, int]:
    """``[[first sequence (hex), code point or -1, count], ...]`` -> {sequence: code point}."""
    out: dict[bytes, int] = {}
    for first, cp, count in runs:
        n = len(first) // 2
        start = int(first, 16)
        for i in range(count):
            out[(start + i).to_bytes(n, "big")] = cp + i if cp >= 0 else -1
    return out


def _codec_char(codec: str | None, token: bytes) -> str | None:
    if codec is None:
        return None
    try:
        text = token.decode(codec)
    except UnicodeDecodeError:
        return None
    return text if len(text) == 1 else None


def build_table_decoder(charset: str, maxlen: int, variant: dict[str, Any]) -> Decoder:
    """The decoder of one conversion in ``<charset>.json`` (see scripts/gen_charsets.py)."""
    codec: str | None = variant["codec"]
    overrides = _overrides(variant["overrides"])
    if maxlen == 1:
        chars = []
        for b in range(256):
            token = bytes((b,))
            cp = overrides.get(token)
            char = _codec_char(codec, token) if cp is None else (chr(cp) if cp >= 0 else None)
            if char == _UNDEFINED:
                raise ValueError(f"{charset}: byte {b:02X} maps to U+FFFE")
            chars.append(_UNDEFINED if char is None else char)
        table = "".join(chars)
        charmap_decode = codecs.charmap_decode

        def single(data: bytes) -> str:
            return charmap_decode(data, "strict", table)[0]

        return single
    return _MultiByte(charset, codec, overrides, variant["structure"]).decode


class _Chars(dict[bytes, str]):
    """Sequence -> character, filled on first sight of each sequence."""

    __slots__ = ("_codec", "_overrides")

    _LIMIT: Final = 65536

    def __init__(self, codec: str | None, overrides: dict[bytes, int]) -> None:
        super().__init__()
        self._codec = codec
        self._overrides = overrides

    def __missing__(self, token: bytes) -> str:
        cp = self._overrides.get(token)
        char = _codec_char(self._codec, token) if cp is None else (chr(cp) if cp >= 0 else None)
        if char is None:
            raise KeyError(token)
        if len(self) < self._LIMIT:
            self[token] = char
        return char


class _MultiByte:
    """A multi-byte charset: split into sequences as the server does, then map each."""

    __slots__ = ("_ascii", "_chars", "_split", "charset")

    def __init__(
        self,
        charset: str,
        codec: str | None,
        overrides: dict[bytes, int],
        structure: list[list[str]],
    ) -> None:
        self.charset = charset
        self._chars = _Chars(codec, overrides)
        # Longest sequences first; any other byte is a sequence of its own (and
        # fails the lookup when it is not a character by itself).
        alternatives = [
            "".join(_byte_class(c) for c in classes)
            for classes in sorted(structure, key=len, reverse=True)
        ]
        pattern = "|".join([*alternatives, "[\\x00-\\xff]"])
        self._split = re.compile(pattern.encode("ascii")).findall
        leads = {b for classes in structure for b in expand_byte_ranges(classes[0])}
        self._ascii = all(b not in leads and self._char(bytes((b,))) == chr(b) for b in range(0x80))

    def _char(self, token: bytes) -> str | None:
        try:
            return self._chars[token]
        except KeyError:
            return None

    def decode(self, data: bytes) -> str:
        if self._ascii and data.isascii():
            return data.decode("ascii")
        try:
            return "".join(map(self._chars.__getitem__, self._split(data)))
        except KeyError as exc:
            token: bytes = exc.args[0]
            raise UnicodeDecodeError(
                self.charset, data, 0, len(data), f"no conversion of {token.hex()}"
            ) from None


def expand_byte_ranges(ranges: str) -> set[int]:
    """``"81-9F,E0-FC"`` -> the set of those byte values."""
    out: set[int] = set()
    for part in ranges.split(","):
        lo, _, hi = part.partition("-")
        out.update(range(int(lo, 16), int(hi or lo, 16) + 1))
    return out


@cache
def _tabled() -> frozenset[str]:
    return frozenset(_load("collations.json")["tables"])


@cache
def _table_decoders(charset: str) -> dict[tuple[bool, int], Decoder]:
    """(written by MariaDB, collation id) -> decoder, for one table-decoded charset.

    Collations of one charset mostly convert alike; a few have their own table
    (latin2_czech_cs has no characters at 0x80-0x9F), and a few convert
    differently on MariaDB and MySQL (0x7F in latin2_czech_cs)."""
    data = _load(f"{charset}.json")
    out: dict[tuple[bool, int], Decoder] = {}
    for variant in data["variants"]:
        decode = build_table_decoder(charset, data["maxlen"], variant)
        out.update(((True, cid), decode) for cid in variant.get("mariadb", ()))
        out.update(((False, cid), decode) for cid in variant.get("mysql", ()))
    return out


def _collation_decoder(collation: int, charset: str, mariadb: bool) -> Decoder | None:
    rule = rule_decoder(charset)
    if rule is not None:
        return rule
    if charset not in _tabled():
        return None
    return _table_decoders(charset).get((mariadb, collation))


# -- the API ---------------------------------------------------------------------------------


@cache
def encoding_for_collation(collation: int | None, mariadb: bool = True) -> str | None:
    """How a collation's values are decoded; None for binary or unknown ids.

    ``"utf-8"`` (utf8mb4), ``"utf8mb3"`` (UTF-8 up to U+FFFF) and
    ``"latin1-mysql"`` are the ones the compiled accelerator decodes itself; any
    other decodable character set gives its server name (``"sjis"``,
    ``"ucs2"``, ...), decoded by :func:`decoder_for_collation`. ``mariadb``:
    the flavour of the server that wrote the value (its FORMAT_DESCRIPTION).
    """
    charset = charset_for_collation(collation)
    if collation is None or charset is None or charset == _BINARY:
        return None
    rule = _RULES.get(charset)
    if rule is not None:
        return rule[0]
    return charset if _collation_decoder(collation, charset, mariadb) is not None else None


@cache
def decoder_for_collation(collation: int | None, mariadb: bool = True) -> Decoder | None:
    """A function bytes -> str for the collation, or None for binary/unknown.

    ``mariadb``: the flavour of the server that wrote the bytes (the two
    convert a few sequences differently). The function raises
    ``UnicodeDecodeError`` on bytes that server cannot convert; callers turn
    that into keeping the value as ``bytes``.
    """
    charset = charset_for_collation(collation)
    if collation is None or charset is None or charset == _BINARY:
        return None
    return _collation_decoder(collation, charset, mariadb)
