"""Collation ids and character decoding (binlog/charsets.py) against the servers' data.

The expected values come from the servers themselves: the known conversions
below were read with ``SELECT HEX(CONVERT(CAST(x'..' AS CHAR CHARACTER SET cs)
USING utf8mb4))`` on MariaDB 10.11, MariaDB 11.8 and MySQL 9.7, and the data
files under ``replica_client/binlog/charset_data`` hold a digest of every
sequence each server converted (see ``scripts/gen_charsets.py``), recomputed
here from the decoders so a changed Python codec cannot slip through.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import random
from functools import cache
from importlib import resources
from typing import Any

import pytest

from replica_client.binlog import charsets, row_plans
from replica_client.binlog.charsets import (
    charset_for_collation,
    decoder_for_collation,
    encoding_for_collation,
)
from replica_client.binlog.columns import reader_for
from replica_client.binlog.constants import ColumnType as T
from replica_client.binlog.events import ColumnInfo, TableMapEvent
from replica_client.binlog.header import EventHeader
from replica_client.binlog.row_decoders import RowDecoder
from replica_client.binlog.table_map import _Col


def _data(name: str) -> Any:
    path = resources.files("replica_client.binlog").joinpath("charset_data", name)
    return json.loads(path.read_text(encoding="utf-8"))


_META = _data("collations.json")
_TABLES = {name: _data(f"{name}.json") for name in _META["tables"]}


def _listed(collation: int) -> list[bool]:
    """The flavours listing ``collation``, as ``mariadb`` flags."""
    return [f == "mariadb" for f, ids in _META["collations"].items() if str(collation) in ids]


def _decode(collation: int, data: bytes, mariadb: bool | None = None) -> str | None:
    """The decoded text (None: stays bytes); without a flavour, that of every
    flavour listing the collation, which must agree."""
    out: set[str | None] = set()
    for flavor in _listed(collation) if mariadb is None else [mariadb]:
        decode = decoder_for_collation(collation, flavor)
        assert decode is not None, collation
        try:
            out.add(decode(data))
        except UnicodeDecodeError:
            out.add(None)
    assert len(out) == 1, (collation, data, out)
    return out.pop()


# -- collation ids -----------------------------------------------------------------------


def test_data_names_the_servers_it_came_from() -> None:
    versions = _META["generated_from"]
    assert any("10.11" in v and "MariaDB" in v for v in versions)
    assert any(v.startswith("11.8") and "MariaDB" in v for v in versions)
    assert any(v.startswith("9.7") and "MariaDB" not in v for v in versions)
    for data in _TABLES.values():
        assert data["generated_from"] == versions


@pytest.mark.parametrize("flavor", ["mariadb", "mysql"])
def test_every_listed_collation_resolves_and_decodes(flavor: str) -> None:
    ids = _META["collations"][flavor]
    assert len(ids) > (1200 if flavor == "mariadb" else 280)
    mariadb = flavor == "mariadb"
    for cid, (charset, _name) in ids.items():
        assert charset_for_collation(int(cid)) == charset, cid
        if charset == "binary":
            assert encoding_for_collation(int(cid), mariadb) is None
            assert decoder_for_collation(int(cid), mariadb) is None
        else:
            assert encoding_for_collation(int(cid), mariadb) is not None, (cid, charset)
            assert decoder_for_collation(int(cid), mariadb) is not None, (cid, charset)


def test_flavours_never_share_an_id_between_charsets() -> None:
    maria, mysql = _META["collations"]["mariadb"], _META["collations"]["mysql"]
    shared = maria.keys() & mysql.keys()
    assert len(shared) > 200
    assert [c for c in shared if maria[c][0] != mysql[c][0]] == []


@pytest.mark.parametrize(
    ("collation", "charset", "encoding"),
    [
        (8, "latin1", "latin1-mysql"),
        (33, "utf8mb3", "utf8mb3"),
        (45, "utf8mb4", "utf-8"),
        (35, "ucs2", "ucs2"),  # ids PyMySQL's table lacked: 35, 54-62, 90, 128 and up
        (54, "utf16", "utf16"),
        (56, "utf16le", "utf16le"),
        (60, "utf32", "utf32"),
        (62, "utf16le", "utf16le"),
        (90, "ucs2", "ucs2"),
        (128, "ucs2", "ucs2"),
        (248, "gb18030", "gb18030"),  # MySQL only
        (255, "utf8mb4", "utf-8"),  # utf8mb4_0900_ai_ci (MySQL, MariaDB 11.8)
        (1025, "big5", "big5"),  # big5_chinese_nopad_ci
        (1032, "latin1", "latin1-mysql"),  # latin1_swedish_nopad_ci
        (1057, "utf8mb3", "utf8mb3"),  # utf8mb3_general_nopad_ci
        (1069, "utf8mb4", "utf-8"),  # utf8mb4_general_nopad_ci
        (1070, "utf8mb4", "utf-8"),  # utf8mb4_nopad_bin
        (2048, "utf8mb3", "utf8mb3"),  # utf8mb3_uca1400_ai_ci
        (2304, "utf8mb4", "utf-8"),  # utf8mb4_uca1400_ai_ci
        (2560, "ucs2", "ucs2"),
        (2816, "utf16", "utf16"),
        (3271, "utf32", "utf32"),  # utf32_uca1400_croatian_nopad_as_cs
        (63, "binary", None),
    ],
)
def test_known_collations(collation: int, charset: str, encoding: str | None) -> None:
    assert charset_for_collation(collation) == charset
    for mariadb in _listed(collation):
        assert encoding_for_collation(collation, mariadb) == encoding


def test_nopad_names() -> None:
    maria = _META["collations"]["mariadb"]
    assert maria["1069"] == ["utf8mb4", "utf8mb4_general_nopad_ci"]
    assert maria["1032"] == ["latin1", "latin1_swedish_nopad_ci"]
    assert maria["2304"] == ["utf8mb4", "utf8mb4_uca1400_ai_ci"]


def test_uca1400_ids_follow_their_layout() -> None:
    # Unlisted ids of the uca1400 block resolve by its layout: it must agree
    # with every listed one.
    order = ("utf8mb3", "utf8mb4", "ucs2", "utf16", "utf32")
    listed = {int(c): v[0] for c, v in _META["collations"]["mariadb"].items() if int(c) >= 2048}
    assert len(listed) == 5 * 184
    for cid, charset in listed.items():
        assert order[(cid - 2048) >> 8] == charset
    assert charset_for_collation(2048 + 256 + 250) == "utf8mb4"  # unlisted, same block
    assert charset_for_collation(2048 + 5 * 256) is None
    assert charset_for_collation(999) is None
    assert encoding_for_collation(999) is None
    assert decoder_for_collation(None) is None


# -- known values ------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("collation", "raw", "text"),
    [
        (19, "A141", "좥"),  # euckr: Windows-949 extension
        (19, "B0A1", "가"),
        (1, "F9D6", "碁"),  # big5 ETEN extension
        (1, "A15A", "\ufffd"),  # the server's own table says U+FFFD
        (97, "A1C1", "\uff5e"),  # eucjpms
        (12, "A1C1", "\u301c"),  # ujis
        (12, "8FA2B7", "~"),
        (13, "815F", "\\"),  # sjis
        (13, "5C", "\\"),
        (95, "815F", "\uff3c"),  # cp932
        (10, "7D", "å"),  # swe7
        (10, "5B", "Ä"),
        (10, "41", "A"),
        (28, "A1A4", "·"),  # gbk
        (28, "A8BC", None),
        (248, "A8BC", "\u1e3f"),  # gb18030 (Python's codec says U+E7C7)
        (248, "8135F437", "\ue7c7"),
        (248, "9439FC36", "\U0001f600"),
        (248, "95328236", "\U00020000"),
        (24, "B0A1", "啊"),  # gb2312
        (57, "8A", None),  # cp1256: the server has no character there
        (36, "FC", "\u207f"),  # cp866
        (36, "FD", "²"),
        (16, "AF", "\u203e"),  # hebrew
        (18, "AF", "\u0e0f"),  # tis620
        (25, "A1", "\u02bd"),  # greek
        (22, "95", "\u2022"),  # koi8u
        (32, "B2", "\u0531"),  # armscii8
        (32, "FF", "'"),
        (37, "80", "\u010c"),  # keybcs2
        (92, "C0", "\u10d0"),  # geostd8
        (3, "A4", None),  # dec8
        (6, "A1", "À"),  # hp8
        (11, "41", "A"),  # ascii
        (11, "80", None),
        (8, "80", "\u20ac"),  # latin1 = cp1252 ...
        (8, "81", "\x81"),  # ... with C1 controls in its holes
        (1032, "64E966", "déf"),  # latin1_swedish_nopad_ci
        (1069, "616263", "abc"),  # utf8mb4_general_nopad_ci
        (2304, "F09F9880", "\U0001f600"),  # utf8mb4_uca1400_ai_ci
        (33, "E282AC", "€"),
        (33, "F09F9880", None),  # no 4-byte sequences in utf8mb3
        (35, "006100620063", "abc"),  # ucs2
        (35, "D83CDE00", None),  # a surrogate pair is not UCS-2
        (35, "0061D800", None),
        (35, "00", None),
        (54, "00FC", "ü"),  # utf16
        (54, "D83CDE00", "\U0001f200"),
        (54, "DE00", None),
        (56, "E900", "é"),  # utf16le
        (56, "3CD800DE", "\U0001f200"),
        (60, "00000079", "y"),  # utf32
        (60, "0001F601", "\U0001f601"),
        (60, "0000D800", None),
        (60, "00110000", None),
        (2816, "00E9", "é"),  # utf16_uca1400_ai_ci
    ],
)
def test_known_values(collation: int, raw: str, text: str | None) -> None:
    assert _decode(collation, bytes.fromhex(raw)) == text


def test_empty_values() -> None:
    for cid in (1, 8, 10, 12, 13, 33, 35, 45, 54, 56, 60, 248):
        assert _decode(cid, b"") == ""


# -- the tables reproduce every server answer ----------------------------------------------------


_VARIANTS = [
    (name, i) for name, data in sorted(_TABLES.items()) for i in range(len(data["variants"]))
]


@cache
def _sequences(name: str, index: int) -> list[bytes]:
    """Every single byte and every sequence matching the conversion's byte classes."""
    out = [bytes((b,)) for b in range(256)]
    for classes in _TABLES[name]["variants"][index]["structure"]:
        sets = [sorted(charsets.expand_byte_ranges(c)) for c in classes]
        prefixes = [b""]
        for byte_set in sets:
            prefixes = [p + bytes((b,)) for p in prefixes for b in byte_set]
        out.extend(prefixes)
    return out


def _decoder(name: str, index: int) -> charsets.Decoder:
    data = _TABLES[name]
    return charsets.build_table_decoder(name, data["maxlen"], data["variants"][index])


@pytest.mark.parametrize(("name", "index"), _VARIANTS)
def test_table_reproduces_the_servers(name: str, index: int) -> None:
    variant = _TABLES[name]["variants"][index]
    decode = _decoder(name, index)
    pairs = []
    checked = unconvertible = 0
    for token in _sequences(name, index):
        checked += 1
        try:
            text = decode(token)
        except UnicodeDecodeError:
            unconvertible += 1
            continue
        assert len(text) == 1, token
        pairs.append((token, ord(text)))
    assert (checked, unconvertible) == (variant["checked"], variant["unconvertible"])
    h = hashlib.sha256()
    for token, cp in sorted(pairs):
        h.update(f"{token.hex()}={cp};".encode())
    assert h.hexdigest() == variant["digest"]
    # The packaged decoder of each of its collations is this one.
    sample = _sequences(name, index)[::97]
    for flavor in ("mariadb", "mysql"):
        for cid in variant[flavor]:
            packaged = decoder_for_collation(cid, flavor == "mariadb")
            assert packaged is not None
            assert [_try(packaged, t) for t in sample] == [_try(decode, t) for t in sample]


def _try(decode: charsets.Decoder, token: bytes) -> str | None:
    try:
        return decode(token)
    except UnicodeDecodeError:
        return None


def test_every_charset_collation_has_a_conversion() -> None:
    for name, data in _TABLES.items():
        for flavor, ids in _META["collations"].items():
            listed = [int(c) for c, v in ids.items() if v[0] == name]
            covered = [cid for variant in data["variants"] for cid in variant[flavor]]
            assert sorted(covered) == sorted(listed), (name, flavor)


def test_czech_collations_convert_by_their_own_table() -> None:
    # latin2_czech_cs (2) has no characters at 0x80-0x9F; latin2_general_ci (9) the C1 controls.
    assert _decode(2, b"\x80") is None
    assert _decode(9, b"\x80") == "\x80"
    assert _decode(2, b"\xa9") == _decode(9, b"\xa9") == "Š"
    # ... and 0x7F is DEL on MySQL but nothing on MariaDB.
    assert _decode(2, b"a\x7f", mariadb=True) is None
    assert _decode(2, b"a\x7f", mariadb=False) == "a\x7f"
    assert _decode(9, b"a\x7f") == "a\x7f"
    assert encoding_for_collation(248, mariadb=True) is None  # gb18030: MySQL only
    assert encoding_for_collation(248, mariadb=False) == "gb18030"


@pytest.mark.parametrize(("name", "index"), [v for v in _VARIANTS if _TABLES[v[0]]["maxlen"] > 1])
def test_multibyte_text_splits_as_the_server_does(name: str, index: int) -> None:
    # Text of many characters is the concatenation of its characters.
    decode = _decoder(name, index)
    rng = random.Random(name)
    sequences = _sequences(name, index)
    valid: list[tuple[bytes, str]] = []
    for token in rng.sample(sequences, min(20000, len(sequences))):
        with contextlib.suppress(UnicodeDecodeError):
            valid.append((token, decode(token)))
    assert len(valid) > 1000
    lead = next(t for t, _ in valid if len(t) > 1)[:1]
    for _ in range(300):
        picks = rng.choices(valid, k=rng.randint(1, 40))
        raw = b"".join(t for t, _ in picks)
        assert decode(raw) == "".join(c for _, c in picks)
        # A lone lead byte at the end is not a character.
        with pytest.raises(UnicodeDecodeError):
            decode(raw + lead)


def test_decoders_are_shared_and_lazy() -> None:
    assert decoder_for_collation(13) is decoder_for_collation(13)
    assert decoder_for_collation(13) is decoder_for_collation(1037)  # sjis_japanese_nopad_ci


# -- row images and TABLE_MAP labels ---------------------------------------------------------------


def _varchar(collation: int) -> ColumnInfo:
    return ColumnInfo(0, T.VARCHAR, T.VARCHAR, 40, True, "c", None, collation)


@pytest.mark.parametrize(
    ("collation", "raw", "value"),
    [
        (35, b"\x00a\x00b\x00c", "abc"),
        (13, bytes.fromhex("815F"), "\\"),
        (33, "€".encode(), "€"),
        (33, "😀".encode(), "😀".encode()),
        (2048, "😀".encode(), "😀".encode()),
        (45, "😀".encode(), "😀"),
        (1069, b"abc", "abc"),
        (1032, b"d\xe9f", "déf"),
        (35, bytes.fromhex("D83DDE00"), bytes.fromhex("D83DDE00")),
        # utf8mb3 holding an encoded surrogate (MariaDB 10.11 stores it when a utf16 or
        # ucs2 value with a surrogate half is copied into a utf8mb3 column): bytes
        (33, b"a\xed\xa0\x94b", b"a\xed\xa0\x94b"),
    ],
)
def test_row_values_on_both_paths(collation: int, raw: bytes, value: str | bytes) -> None:
    col = _varchar(collation)
    row = b"\x00" + bytes((len(raw),)) + raw  # null bitmap, length, bytes
    for mariadb in _listed(collation):
        assert reader_for(col, mariadb)(memoryview(row), 1) == (value, len(row))
        table = TableMapEvent(EventHeader(0, 19, 1, 0, 0, 0), 1, 0, "db", "t", (col,))
        decoder = RowDecoder(table, mariadb)  # accelerated unless switched off
        assert decoder.decode_image(memoryview(row), 0, 1) == ((value,), len(row))
        decoder._plan = None
        assert decoder.decode_image(memoryview(row), 0, 1) == ((value,), len(row))


def test_row_values_follow_the_flavour() -> None:
    col = _varchar(2)  # latin2_czech_cs
    row = b"\x00\x02a\x7f"
    table = TableMapEvent(EventHeader(0, 19, 1, 0, 0, 0), 1, 0, "db", "t", (col,))
    assert RowDecoder(table, True).decode_image(memoryview(row), 0, 1)[0] == (b"a\x7f",)
    assert RowDecoder(table, False).decode_image(memoryview(row), 0, 1)[0] == ("a\x7f",)
    gb = _varchar(248)  # gb18030
    row = b"\x00\x02" + bytes.fromhex("A8BC")
    table = TableMapEvent(EventHeader(0, 19, 1, 0, 0, 0), 1, 0, "db", "t", (gb,))
    assert RowDecoder(table, False).decode_image(memoryview(row), 0, 1)[0] == ("\u1e3f",)
    assert RowDecoder(table, True).decode_image(memoryview(row), 0, 1)[0] == (b"\xa8\xbc",)


def test_utf8_collations_take_the_accelerated_path() -> None:
    for cid in (33, 45, 1057, 1069, 2048, 2304, 255):
        assert row_plans.column_spec(_varchar(cid))[0] == row_plans.STRING, cid
    for cid in (8, 1032):
        assert row_plans.column_spec(_varchar(cid))[0] == row_plans.STRING, cid
    for cid in (13, 35, 10):
        assert row_plans.column_spec(_varchar(cid))[0] == row_plans.FALLBACK, cid


def _labels(collation: int | None, raw: tuple[bytes, ...] | None) -> tuple[str, ...] | None:
    col = _Col(T.STRING, T.ENUM, 0, True, collation=collation)
    return col.labels(raw, True)


def test_enum_labels_in_their_charset() -> None:
    assert _labels(60, (b"\x00\x00\x00x", b"\x00\x00\x00y")) == ("x", "y")  # utf32
    assert _labels(35, (b"\x00\xe5",)) == ("å",)  # ucs2
    assert _labels(10, (b"}", b"b")) == ("å", "b")  # swe7
    assert _labels(13, (bytes.fromhex("815F"),)) == ("\\",)  # sjis
    assert _labels(45, ("ü".encode(),)) == ("ü",)
    # Binary or no charset: UTF-8, else latin-1 (as before).
    assert _labels(63, (b"a", b"\xe9")) == ("a", "é")
    assert _labels(None, ("ü".encode(),)) == ("ü",)
    # Not text in the charset, or a charset this decoder does not know:
    # no labels, the values stay indexes.
    assert _labels(10, (b"\x80",)) is None
    assert _labels(999, (b"a",)) is None
    assert _labels(10, None) is None
