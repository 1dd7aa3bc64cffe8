"""Every character set and collation a live server lists, decoded exactly as SELECT shows it.

For each collation the server lists (``information_schema``; on MariaDB the
uca1400 ones of every character set too) a group of CHAR, VARCHAR, TEXT, ENUM
and SET columns in that collation; rows of sample values drawn from the
character set's repertoire by the server itself:

* text written through a utf8mb4 connection (the server converts it): the empty
  string, ASCII, trailing spaces (trimmed from CHAR by SELECT and by the
  server's binlog writer alike), and characters from a pool of scripts that
  survive the round trip utf8mb4 -> charset -> utf8mb4 on this server;
* sequences written as ``_charset X'..'`` literals: every convertible byte of a
  single-byte charset, and multi-byte sequences picked at random from the code
  space and kept when the server converts them (plus the known troublemakers:
  sjis 0x815F, euckr 0xA141, big5 0xF9D6, ...), so that bytes a utf8mb4 client
  would never produce reach the binlog too.

The binlog file is decoded (``open_binlog`` + ``iter_changes``) and every value
compared with ``HEX(CONVERT(col USING utf8mb4))`` from the same server: the
decoded text encoded as UTF-8 must be those bytes, so no driver conversion sits
between them.

:func:`check_charsets` is the whole check against any running server
(``ExternalServer(dsn)`` for one started by hand); the test runs it on each
variant of :data:`VARIANTS`.
"""

from __future__ import annotations

import random
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from typing import Any

import pytest

import replica_client as rc
from replica_client.testing import MariaDBServer, ServerVariant
from replica_client.testing.pytest_plugin import PrimaryFactory

#: The servers the test runs on. MariaDB 11.8 and MySQL 9.7 join with
#: ``ServerVariant(flavor="mariadb", version="11.8")`` and
#: ``ServerVariant(flavor="mysql", version="9.7")`` once the harness starts them.
VARIANTS: tuple[ServerVariant, ...] = (
    ServerVariant(),
    ServerVariant(flavor="mariadb", version="11.8"),
    ServerVariant(flavor="mysql", version="9.7"),
)

SCHEMA = "live_charsets"
#: Collations per table (each brings five columns).
CHUNK = 16
CHAR_LEN, VARCHAR_LEN = 12, 40

# Characters offered to every charset; each keeps those it can hold.
POOL = (
    "àáâãäåæçèéêëìíîïðñòóôõöøùúûüýþÿßÀÉÑÖÜ"  # Latin-1
    "ĀāČčĎďĘęĞğİıŁłŃńŐőŘřŚśŞşŠšŢţŰűŸŹźŻżŽž"  # Latin Extended-A
    "ΑΒΓΔΘΛΞΠΣΦΨΩαβγδεζηθλμξπσςφψωάέ"  # Greek
    "АБВГДЕЁЖЗИЙКЛМНОПРСТУФХЦЧШЩЪЫЬЭЮЯабвгдеёжзийклмнопрстуфхцчшщъыьэюяЄєІіЇїҐґ"
    "ԱԲԳաբգ"  # Armenian
    "აბგდ"  # Georgian
    "אבגדהוזחטיךכלםמןנסעףפץצקרשת"  # Hebrew
    "ءآأؤإئابةتثجحخدذرزسشصضطظعغفقكلمنهوىيپچژگ"  # Arabic, Persian
    "กขฃคฅฆงจฉชซฌญฎฏฐฑฒณดตถทธนบปผฝพฟภมยรฤลฦวศษสหฬอฮ"  # Thai
    "あいうえおかきくけこアイウエオカキクケコｱｲｳｴｵ"  # kana, half-width katakana
    "漢字日本語中文汉字简体繁體碁髙﨑"  # CJK
    "가각간갇갈감갑값한국어좥"  # Hangul
    "€£¥¢©®™°±²³µ¶·¹º¼½¾¿¡§¤¦¨¬¯´¸×÷‰†‡•…‘’‚“”„‹›–—"  # symbols  # noqa: RUF001
    "─│┌┐└┘├┤┬┴┼═║╔╗╚╝░▒▓█■□▲△▼▽○●◎◇◆★☆♀♂♪"  # box drawing, shapes
    "～＼＄￠￡￢ー〜∥－"  # full-width and look-alikes  # noqa: RUF001
    "😀🎉𠀀𝄞"  # outside the BMP
)

# Sequences the servers convert differently from Python's codecs.
KNOWN: dict[str, tuple[str, ...]] = {
    "sjis": ("815F", "5C", "8160", "817C", "8191", "8192", "81CA"),
    "cp932": ("815F", "8160", "817C", "8191", "8192", "81CA", "ED40", "FA40"),
    "euckr": ("A141", "B0A1", "C8A5", "FE50"),
    "big5": ("F9D6", "F9D7", "F9FE", "A15A", "A1C3", "A240"),
    "eucjpms": ("A1C1", "A1C2", "A1DD", "A1F1", "A2CC", "8FA2B7", "8FA2C3", "ADA1", "F5A1"),
    "ujis": ("A1C1", "A1C2", "A1DD", "8FA2B7", "8FA2C3", "F5A1", "8FF5A1"),
    "gbk": ("A1A4", "A1AA", "80", "A2E3", "FE50"),
    "gb2312": ("A1A4", "A1AA", "B0A1"),
    "gb18030": ("A8BC", "8135F437", "A1A4", "9439FC36", "95328236", "FE50", "84318730"),
    "cp1256": ("81", "8D", "90"),
    "cp866": ("FC", "FD"),
    "greek": ("A1", "A2"),
    "hebrew": ("AF",),
    "koi8u": ("95",),
    "tis620": ("A1", "DF"),
}

_UNICODE = {"ucs2": "utf-16-be", "utf16": "utf-16-be", "utf16le": "utf-16-le", "utf32": "utf-32-be"}
_MULTI_SPACES: dict[str, tuple[int, ...]] = {"ujis": (2, 3), "eucjpms": (2, 3), "gb18030": (2, 4)}


@dataclass
class Report:
    server: str
    charsets: int = 0
    collations: int = 0
    tables: int = 0
    rows: int = 0
    values: int = 0
    #: values decoded as bytes (the server shows ``?`` for some of their bytes)
    unconvertible: int = 0
    #: (table, column, collation, row id, expected hex, decoded value)
    mismatches: list[tuple[str, str, str, int, str | None, Any]] = field(default_factory=list)
    skipped: list[str] = field(default_factory=list)

    def __str__(self) -> str:
        return (
            f"{self.server}: {self.charsets} character sets, {self.collations} collations, "
            f"{self.tables} tables, {self.rows} rows, {self.values} values compared "
            f"({self.unconvertible} kept as bytes where the server shows '?'), "
            f"{len(self.mismatches)} differ"
        )


@dataclass
class _Column:
    table: str
    name: str
    charset: str
    collation: str
    kind: str  # c(har) v(archar) t(ext) e(num) s(et)


def _sql(server: MariaDBServer, query: str) -> list[tuple[Any, ...]]:
    return server.sql(query)


def _collations(server: MariaDBServer, mariadb: bool) -> dict[str, list[str]]:
    """charset -> collation names usable in COLLATE."""
    if mariadb:
        rows = _sql(
            server,
            "SELECT CHARACTER_SET_NAME, FULL_COLLATION_NAME "
            "FROM information_schema.COLLATION_CHARACTER_SET_APPLICABILITY",
        )
    else:
        rows = _sql(
            server, "SELECT CHARACTER_SET_NAME, COLLATION_NAME FROM information_schema.COLLATIONS"
        )
    out: dict[str, list[str]] = {}
    for charset, name in rows:
        if charset != "binary":
            out.setdefault(str(charset), []).append(str(name))
    return {cs: sorted(set(names)) for cs, names in sorted(out.items())}


def _hex_literal(cs: str, raw: bytes) -> str:
    return f"_{cs} X'{raw.hex().upper()}'"


def _server_texts(server: MariaDBServer, exprs: Sequence[str]) -> list[str | None]:
    """``HEX(expr)`` of each expression, decoded from UTF-8; None if NULL or not UTF-8."""
    out: list[str | None] = []
    for start in range(0, len(exprs), 200):
        part = exprs[start : start + 200]
        row = _sql(server, "SELECT " + ", ".join(f"HEX({e})" for e in part))[0]
        for value in row:
            try:
                out.append(None if value is None else bytes.fromhex(str(value)).decode("utf-8"))
            except UnicodeDecodeError:
                out.append(None)
    return out


def _repertoire(server: MariaDBServer, cs: str) -> list[str]:
    """The characters of ASCII and POOL that survive utf8mb4 -> cs -> utf8mb4."""
    candidates = [chr(c) for c in range(0x20, 0x7F)] + list(POOL)
    exprs = [
        f"CONVERT(CONVERT(_utf8mb4 X'{c.encode().hex()}' USING {cs}) USING utf8mb4)"
        for c in candidates
    ]
    texts = _server_texts(server, exprs)
    return [c for c, t in zip(candidates, texts, strict=True) if t == c]


def _convertible(server: MariaDBServer, cs: str, sequences: Iterable[bytes]) -> list[bytes]:
    """The sequences the server converts to one character that is not an error mark."""
    seqs = list(dict.fromkeys(sequences))
    newline = "\n".encode(_UNICODE.get(cs, "ascii"))
    exprs = [
        f"CONVERT(CAST(X'{(s + newline).hex()}' AS CHAR CHARACTER SET {cs}) USING utf8mb4)"
        for s in seqs
    ]
    texts = _server_texts(server, exprs)
    return [
        s
        for s, t in zip(seqs, texts, strict=True)
        if t is not None and len(t) == 2 and t[1] == "\n" and (t[0] != "?" or s == b"?")
    ]


def _raw_samples(server: MariaDBServer, cs: str, maxlen: int, rng: random.Random) -> list[bytes]:
    """Raw values: convertible sequences of the charset's code space, a few per value."""
    if cs in _UNICODE:
        cps = [rng.randrange(0x80, 0xD800) for _ in range(40)] + [0xFFFD, 0xFEFF, 0x20AC]
        if cs != "ucs2":
            cps += [rng.randrange(0x10000, 0x110000) for _ in range(12)]
        seqs = [chr(c).encode(_UNICODE[cs]) for c in cps]
    elif maxlen == 1:
        seqs = [bytes((b,)) for b in (*range(0x80, 0x100), *range(0x20), 0x7F)]
    else:
        seqs = [bytes.fromhex(h) for h in KNOWN.get(cs, ())]
        lengths = _MULTI_SPACES.get(cs, (2,))
        for _ in range(600):
            n = rng.choice(lengths)
            if n == 3:
                seqs.append(bytes((0x8F, rng.randrange(0xA1, 0xFF), rng.randrange(0xA1, 0xFF))))
            elif n == 4:
                seqs.append(
                    bytes(
                        (
                            rng.randrange(0x81, 0xFF),
                            rng.randrange(0x30, 0x3A),
                            rng.randrange(0x81, 0xFF),
                            rng.randrange(0x30, 0x3A),
                        )
                    )
                )
            else:
                seqs.append(bytes((rng.randrange(0x81, 0xFF), rng.randrange(0x40, 0xFF))))
    if maxlen == 1:
        seqs = [bytes.fromhex(h) for h in KNOWN.get(cs, ())] + seqs
    good = _convertible(server, cs, seqs)
    # Values of up to CHAR_LEN characters, known ones first.
    return [b"".join(good[i : i + CHAR_LEN]) for i in range(0, min(len(good), 180), CHAR_LEN)]


def _text_samples(chars: list[str]) -> list[str]:
    ascii_chars = [c for c in chars if c.isascii()]
    words = [c for c in ascii_chars if c.isalnum()]
    others = [c for c in chars if not c.isascii()]
    samples = ["", "".join(words[:10]), "".join(words[:2]) + "   ", " " + "".join(words[2:5])]
    samples += [
        "".join(ascii_chars[i : i + CHAR_LEN]) for i in range(0, len(ascii_chars), CHAR_LEN)
    ]
    samples += ["".join(others[i : i + CHAR_LEN]) for i in range(0, len(others), CHAR_LEN)]
    if others:
        samples.append(others[0] + "  ")  # trailing spaces after a non-ASCII character
    return [s for s in dict.fromkeys(samples) if len(s) <= CHAR_LEN]


def _labels(chars: list[str]) -> list[str]:
    # A digit first keeps labels distinct under every collation.
    others = [c for c in chars if not c.isascii()]
    words = [c for c in chars if c.isascii() and c.isalpha()]
    picks = (others[:: max(1, len(others) // 6)][:6] + words[:2]) or ["x"]
    return [f"{i}{c}" for i, c in enumerate(picks)]


def _quote(text: str) -> str:
    return "_utf8mb4 X'" + text.encode().hex().upper() + "'" if text else "''"


def check_charsets(server: MariaDBServer, seed: int = 20240601) -> Report:
    """Write samples of every collation, decode the binlog, compare with SELECT."""
    version = str(_sql(server, "SELECT VERSION()")[0][0])
    mariadb = "mariadb" in version.lower()
    report = Report(version)
    rng = random.Random(seed)
    maxlens = {
        str(cs): int(n)
        for cs, n in _sql(
            server, "SELECT CHARACTER_SET_NAME, MAXLEN FROM information_schema.CHARACTER_SETS"
        )
    }
    by_charset = _collations(server, mariadb)
    server.sql_many([f"DROP DATABASE IF EXISTS {SCHEMA}", f"CREATE DATABASE {SCHEMA}"])
    columns: dict[tuple[str, str], _Column] = {}
    inserted: dict[str, list[int]] = {}
    statements: list[str] = []
    for cs, collations in by_charset.items():
        chars = _repertoire(server, cs)
        texts = _text_samples(chars)
        raws = _raw_samples(server, cs, maxlens[cs], rng)
        labels = _labels(chars)
        enum_def = ",".join(f"'{x}'" for x in labels)  # digits, letters: nothing to escape
        report.charsets += 1
        for n, start in enumerate(range(0, len(collations), CHUNK)):
            table = f"{cs}_{n}"
            defs, names = ["id INT PRIMARY KEY"], []
            for k, coll in enumerate(collations[start : start + CHUNK]):
                spec = f"CHARACTER SET {cs} COLLATE {coll}"
                defs += [
                    f"c{k} CHAR({CHAR_LEN}) {spec}",
                    f"v{k} VARCHAR({VARCHAR_LEN}) {spec}",
                    f"t{k} TEXT {spec}",
                    f"e{k} ENUM({enum_def}) {spec}",
                    f"s{k} SET({enum_def}) {spec}",
                ]
                for kind in ("c", "v", "t", "e", "s"):
                    columns[(table, f"{kind}{k}")] = _Column(table, f"{kind}{k}", cs, coll, kind)
                names.append(k)
                report.collations += 1
            statements.append(f"CREATE TABLE {SCHEMA}.{table} ({', '.join(defs)})")
            report.tables += 1
            rows = []
            values = [_quote(t) for t in texts] + [_hex_literal(cs, r) for r in raws]
            for i, value in enumerate(values):
                enum = _quote(labels[i % len(labels)])
                members = ",".join(labels[j] for j in range(len(labels)) if (i >> j) & 1)
                cells = [str(i)]
                for _k in names:
                    longer = f"CONCAT({value}, {value}, {value})"
                    cells += [value, longer, longer, enum, _quote(members)]
                rows.append("(" + ", ".join(cells) + ")")
            statements.append(f"INSERT INTO {SCHEMA}.{table} VALUES " + ", ".join(rows))
            inserted[table] = list(range(len(values)))
            report.rows += len(values)

    server.sql("FLUSH BINARY LOGS")
    first = server.binlog_files()[-1]
    server.sql_many(statements)
    server.sql("FLUSH BINARY LOGS")
    files = [f for f in server.binlog_files() if f.name >= first.name][:-1]

    decoded: dict[tuple[str, int], dict[str, Any]] = {}
    with rc.open_binlog(files) as reader:
        for change in rc.iter_changes(reader):
            if change.schema == SCHEMA and change.after is not None:
                decoded[(change.table, int(change.after["id"]))] = change.after

    for table, ids in inserted.items():
        cols = [c for (t, _n), c in columns.items() if t == table]
        exprs = ", ".join(f"HEX(CONVERT({c.name} USING utf8mb4)), HEX({c.name})" for c in cols)
        for row in _sql(server, f"SELECT id, {exprs} FROM {SCHEMA}.{table} ORDER BY id"):
            got = decoded.get((table, int(row[0])))
            for n, col in enumerate(cols):
                expected, raw = row[1 + 2 * n], row[2 + 2 * n]
                report.values += 1
                found = None if got is None else got.get(col.name)
                if isinstance(found, bytes):
                    report.unconvertible += 1
                if not _same(col, expected, raw, found):
                    report.mismatches.append(
                        (table, col.name, col.collation, int(row[0]), expected, found)
                    )
        if len(ids) != len([k for k in decoded if k[0] == table]):
            report.skipped.append(f"{table}: {len(ids)} rows written, not all decoded")
    server.sql(f"DROP DATABASE {SCHEMA}")
    return report


def _same(col: _Column, expected_hex: str | None, raw_hex: str | None, value: Any) -> bool:
    """Is ``value`` what SELECT shows? bytes only where the server shows a ``?``
    it cannot convert, and then the column's own bytes."""
    if expected_hex is None:
        return value is None
    expected = bytes.fromhex(expected_hex)
    if col.kind == "s":
        if not isinstance(value, frozenset):
            return False
        text = expected.decode("utf-8")
        return value == (frozenset(text.split(",")) if text else frozenset())
    if isinstance(value, bytes) and col.kind in "cvt" and raw_hex is not None:
        question = "?".encode(_UNICODE.get(col.charset, "ascii"))
        raw = bytes.fromhex(raw_hex)
        marks = sum(
            1 for i in range(0, len(raw), len(question)) if raw[i : i + len(question)] == question
        )
        return value == raw and expected.count(b"?") > marks
    return isinstance(value, str) and value.encode("utf-8") == expected


@pytest.mark.integration
@pytest.mark.parametrize("variant", VARIANTS, ids=lambda v: v.label)
def test_every_collation_decodes_as_select_shows(
    mariadb_primary_factory: PrimaryFactory, variant: ServerVariant
) -> None:
    server = mariadb_primary_factory(variant)
    report = check_charsets(server)
    print(report)
    assert report.mismatches[:20] == []
    assert report.skipped == []
    assert report.charsets >= 39  # every charset but binary
    assert report.collations >= 280
    assert report.values > report.rows * 5
