#!/usr/bin/env python3
"""Generate the character-set data of ``replica_client.binlog.charsets`` from servers.

The decoder must turn a character column's bytes into exactly the text the
server shows for them through a utf8mb4 connection. Python's codecs do not
always agree with the server (``euckr`` is Windows-949, ``sjis`` maps 0x815F to
U+005C, ...) and some server character sets have no Python codec at all (swe7,
keybcs2, ...). This script asks the servers themselves:

* the collation ids of each flavour: ``information_schema.COLLATIONS`` and, on
  MariaDB, ``COLLATION_CHARACTER_SET_APPLICABILITY`` (which lists the uca1400
  collations of every character set with their full name and id);
* for every collation, what ``CONVERT(CAST(<bytes> AS CHAR CHARACTER SET cs)
  COLLATE <collation> USING utf8mb4)`` gives (each collation converts with its
  own table: latin2_czech_cs has no characters at 0x80-0x9F) over the code
  space of its character set: all 256 bytes; all lead x trail byte pairs of
  the multi-byte sets; the 3-byte 0x8F range of ujis/eucjpms; the whole 4-byte
  space of gb18030 (0x81-0xFE 0x30-0x39 0x81-0xFE 0x30-0x39; one sixteenth of
  it for its non-default collations). ucs2, utf16, utf16le, utf32, utf8mb3,
  utf8mb4 and latin1 are decoded by fixed rules rather than tables: their
  default collations are checked over a wide space (all 2-byte units, a sample
  of surrogate pairs, planes and multi-byte UTF-8), every other collation over
  its single bytes and 1000 sequences of that space.

A sequence is "unconvertible" when the server gives NULL (MySQL refuses bytes
that are not well formed), a ``?`` that does not come from a 0x3F byte, more or
less than one character, or bytes that are not UTF-8 (MariaDB writes lone
UTF-16 surrogates of ucs2 that way). A value holding such a sequence is decoded
as ``bytes``. Each sequence is sent followed by a newline: the server drops an
incomplete sequence at the very end of a string silently.

For each group of collations that convert alike it picks the Python codec
that agrees with the server most (or none) and stores only what differs; the
data records the server versions it came from. When MariaDB and MySQL convert
a collation differently (0x7F of latin2_czech_cs), each flavour keeps its own
table; two servers of one flavour that disagree stop the script, and so do two
flavours giving one collation id to different character sets (the decoder
would then have to look ids up per flavour).

Usage (from the repository root; any running servers will do, the user needs
CREATE, INSERT and SELECT on a scratch schema ``charset_gen``, dropped at the
end)::

    python scripts/gen_charsets.py mariadb://user:pass@127.0.0.1:3306 \\
        mariadb://user:pass@127.0.0.1:3307 mysql://user:pass@127.0.0.1:3308

A private MariaDB from the machine's install, through the project's harness::

    python -c "from replica_client.testing import MariaDBServer; s = MariaDBServer(); \\
        s.start(); print(s.dsn); input('running; Enter stops it')"

``--charsets-only`` asks the servers only for their character sets (maximal
bytes per character and default collation, from ``information_schema.CHARACTER_SETS``)
and rewrites ``charsets.json`` alone: what a column defined by DDL text (a
character set without a collation, a length in characters) is stored as.

``--out DIR`` writes the data elsewhere (default: the package's
``binlog/charset_data``), ``--raw FILE`` also saves the servers' answers and
``--from-raw FILE`` regenerates from saved answers without servers. It prints,
per server and character set, the collations and sequences asked, and for
each group of collations the sequences in the code space, the unconvertible
ones and the differences from the Python codec (for the rule-decoded sets: the
differences from the rule); then it decodes every answer again with decoders
built from the new data and exits non-zero if one differs.
"""

from __future__ import annotations

import argparse
import codecs
import gzip
import hashlib
import json
import random
import sys
from collections.abc import Iterable, Iterator
from pathlib import Path
from typing import Any

import pymysql
import pymysql.cursors

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))  # this checkout's package, installed or not

from replica_client.binlog import charsets  # noqa: E402
from replica_client.binlog.charsets import expand_byte_ranges as _expand  # noqa: E402

DEFAULT_OUT = ROOT / "replica_client" / "binlog" / "charset_data"

# Character sets decoded by fixed rules in charsets.py, checked but not tabled.
RULE_CHARSETS = ("utf8mb3", "utf8mb4", "ucs2", "utf16", "utf16le", "utf32", "latin1", "binary")

# Python codecs worth comparing with each server character set (the best one
# is kept as the base of the table; "None" = a full table).
CANDIDATES: dict[str, tuple[str, ...]] = {
    "armscii8": (),
    "ascii": ("ascii", "latin-1"),
    "big5": ("big5", "cp950", "big5hkscs"),
    "cp1250": ("cp1250",),
    "cp1251": ("cp1251",),
    "cp1256": ("cp1256",),
    "cp1257": ("cp1257",),
    "cp850": ("cp850",),
    "cp852": ("cp852",),
    "cp866": ("cp866",),
    "cp932": ("cp932", "shift_jis", "shift_jis_2004"),
    "dec8": ("latin-1",),
    "eucjpms": ("euc_jp", "euc_jis_2004", "euc_jisx0213"),
    "euckr": ("euc_kr", "cp949"),
    "gb18030": ("gb18030",),
    "gb2312": ("gb2312", "gbk", "gb18030"),
    "gbk": ("gbk", "gb18030"),
    "geostd8": (),
    "greek": ("iso8859-7", "cp1253"),
    "hebrew": ("iso8859-8", "cp1255"),
    "hp8": ("hp-roman8", "latin-1"),
    "keybcs2": ("cp437", "cp852"),
    "koi8r": ("koi8-r",),
    "koi8u": ("koi8-u",),
    "latin2": ("iso8859-2",),
    "latin5": ("iso8859-9", "cp1254"),
    "latin7": ("iso8859-13", "cp1257"),
    "macce": ("mac-latin2",),
    "macroman": ("mac-roman",),
    "sjis": ("shift_jis", "cp932", "shift_jis_2004"),
    "swe7": ("ascii",),
    "tis620": ("tis-620", "cp874", "iso8859-11"),
    "ujis": ("euc_jp", "euc_jis_2004", "euc_jisx0213"),
}

SCHEMA = "charset_gen"
INVALID = -1


# -- reading the servers -----------------------------------------------------------------


def _connect(dsn: str) -> pymysql.connections.Connection[Any]:
    from urllib.parse import unquote, urlsplit

    parts = urlsplit(dsn)
    if parts.scheme not in ("mariadb", "mysql") or not parts.hostname:
        raise SystemExit("expected DSNs like mariadb://user:pass@host:port")
    return pymysql.connect(
        host=parts.hostname,
        port=parts.port or 3306,
        user=unquote(parts.username or "root"),
        password=unquote(parts.password or ""),
        charset="utf8mb4",
        autocommit=True,
        cursorclass=pymysql.cursors.SSCursor,
    )


def _rows(conn: pymysql.connections.Connection[Any], sql: str) -> Iterator[tuple[Any, ...]]:
    with conn.cursor() as cur:
        cur.execute(sql)
        yield from cur.fetchall_unbuffered()


# A newline in the charset, written after each sequence (see server_text()).
_SENTINEL = {"ucs2": "000A", "utf16": "000A", "utf16le": "0A00", "utf32": "0000000A"}


def _convert(cs: str, collation: str, expr: str) -> str:
    # Each collation converts with its own table (latin2_czech_cs has no
    # characters at 0x80-0x9F, latin2_general_ci has the C1 controls there).
    return (
        f"HEX(CONVERT(CAST({expr} AS CHAR CHARACTER SET {cs}) COLLATE {collation} USING utf8mb4))"
    )


def _spaces(cs: str, maxlen: int, *, thin: bool = False) -> list[tuple[str, str, str]]:
    """(description, SELECT expression of the sequence, FROM/WHERE) per code space.

    ``thin``: one in 16 of the 4-byte gb18030 space (collations that share the
    default collation's conversion)."""
    b = f"{SCHEMA}.b"
    one = ("1 byte", "CHAR(x.i)", f"FROM {b} x")
    two = ("2 bytes", "CHAR(x.i, y.i)", f"FROM {b} x JOIN {b} y")
    if cs == "binary":
        return []
    if maxlen == 1:
        return [one]
    if cs in ("ucs2", "utf16", "utf16le"):
        pair = (
            "surrogate pairs (every 4th high surrogate, all low ones)",
            "CHAR(x.i, y.i, z.i, w.i)" if cs != "utf16le" else "CHAR(y.i, x.i, w.i, z.i)",
            f"FROM {b} x JOIN {b} y JOIN {b} z JOIN {b} w "
            "WHERE x.i BETWEEN 216 AND 219 AND y.i % 4 = 0 AND z.i BETWEEN 220 AND 223",
        )
        return [two, pair]
    if cs == "utf32":
        return [
            ("BMP", "CHAR(0, 0, x.i, y.i)", f"FROM {b} x JOIN {b} y"),
            (
                "planes 1-16 (every 64th code point)",
                "CHAR(0, p.i, x.i, y.i)",
                f"FROM {b} p JOIN {b} x JOIN {b} y WHERE p.i BETWEEN 1 AND 16 AND y.i % 64 = 1",
            ),
            (
                "beyond U+10FFFF",
                "CHAR(h.i, p.i, 0, 65)",
                f"FROM {b} h JOIN {b} p WHERE (h.i = 0 AND p.i > 16) OR p.i IN (0, 16, 255)",
            ),
        ]
    if cs in ("utf8mb3", "utf8mb4"):
        spaces = [
            one,
            two,
            (
                "3 bytes (leads E0-EF x all seconds x 6 thirds)",
                "CHAR(x.i, y.i, z.i)",
                f"FROM {b} x JOIN {b} y JOIN {b} z "
                "WHERE x.i BETWEEN 224 AND 239 AND z.i IN (65, 128, 159, 160, 191, 192)",
            ),
            (
                "4 bytes (leads F0-F7 x all seconds x 3 x 3)",
                "CHAR(x.i, y.i, z.i, w.i)",
                f"FROM {b} x JOIN {b} y JOIN {b} z JOIN {b} w "
                "WHERE x.i BETWEEN 240 AND 247 AND z.i IN (65, 128, 191) AND w.i IN (65, 128, 191)",
            ),
        ]
        return spaces
    spaces = [one, two]
    if cs in ("ujis", "eucjpms"):
        spaces.append(("3 bytes 0x8F", "CHAR(143, x.i, y.i)", f"FROM {b} x JOIN {b} y"))
    if cs == "gb18030":
        spaces.append(
            (
                "4 bytes",
                "CHAR(x.i, d.i + 48, y.i, e.i + 48)",
                f"FROM {b} x JOIN {b} d JOIN {b} y JOIN {b} e WHERE x.i BETWEEN 129 AND 254 "
                "AND y.i BETWEEN 129 AND 254 AND d.i < 10 AND e.i < 10"
                + (" AND (x.i * 10 + d.i) % 16 = 0" if thin else ""),
            )
        )
    return spaces


def read_server(dsn: str) -> dict[str, Any]:
    """Everything the generator needs from one server, as plain JSON-able data."""
    conn = _connect(dsn)
    version = next(_rows(conn, "SELECT VERSION()"))[0]
    flavor = "mariadb" if "mariadb" in version.lower() else "mysql"
    print(f"== {version} ({flavor})", flush=True)
    collations: dict[int, tuple[str, str]] = {}
    for cid, cs, name in _rows(
        conn,
        "SELECT ID, CHARACTER_SET_NAME, COLLATION_NAME FROM information_schema.COLLATIONS "
        "WHERE ID IS NOT NULL",
    ):
        collations[int(cid)] = (cs, name)
    if flavor == "mariadb":
        columns = {
            r[0].upper()
            for r in _rows(
                conn,
                "SELECT COLUMN_NAME FROM information_schema.COLUMNS WHERE TABLE_SCHEMA = "
                "'information_schema' AND TABLE_NAME = 'COLLATION_CHARACTER_SET_APPLICABILITY'",
            )
        }
        if {"ID", "FULL_COLLATION_NAME"} <= columns:
            for cid, cs, name in _rows(
                conn,
                "SELECT ID, CHARACTER_SET_NAME, FULL_COLLATION_NAME "
                "FROM information_schema.COLLATION_CHARACTER_SET_APPLICABILITY",
            ):
                old = collations.setdefault(int(cid), (cs, name))
                if old[0] != cs:
                    raise SystemExit(f"{version}: collation {cid} is {old} and {cs}")
    charsets: dict[str, dict[str, Any]] = {}
    for name, maxlen, default in _rows(
        conn,
        "SELECT CHARACTER_SET_NAME, MAXLEN, DEFAULT_COLLATE_NAME "
        "FROM information_schema.CHARACTER_SETS",
    ):
        default_id = next(c for c, (cs, n) in collations.items() if n == default and cs == name)
        charsets[name] = {"maxlen": int(maxlen), "default": default_id, "default_name": default}
    with conn.cursor() as cur:
        cur.execute(f"DROP DATABASE IF EXISTS {SCHEMA}")
        cur.execute(f"CREATE DATABASE {SCHEMA}")
        cur.execute(f"CREATE TABLE {SCHEMA}.b (i INT PRIMARY KEY)")
        cur.execute(f"INSERT INTO {SCHEMA}.b VALUES " + ",".join(f"({i})" for i in range(256)))
        cur.execute(f"CREATE TABLE {SCHEMA}.s (cs VARCHAR(32), t VARBINARY(8))")
    rng = random.Random(0)
    conversions: dict[str, dict[str, str | None]] = {}
    try:
        for cs in sorted(charsets):
            maxlen, default = charsets[cs]["maxlen"], charsets[cs]["default"]
            others = sorted(c for c, (n, _) in collations.items() if n == cs and c != default)
            conversions[str(default)] = full = _probe(conn, cs, collations[default][1], maxlen)
            if cs in RULE_CHARSETS and full:
                # Hundreds of collations share one conversion: check each on a sample.
                picks = rng.sample(sorted(full), min(1000, len(full)))
                sample = [t for t in full if len(t) == 2] + picks
                with conn.cursor() as cur:
                    cur.execute(
                        f"INSERT INTO {SCHEMA}.s VALUES "
                        + ",".join(f"('{cs}', X'{t}')" for t in sorted(set(sample)))
                    )
            for cid in others:
                conversions[str(cid)] = _probe(
                    conn, cs, collations[cid][1], maxlen, sampled=cs in RULE_CHARSETS, thin=True
                )
            print(f"   {cs}: {len(full)} sequences, {len(others)} more collations", flush=True)
    finally:
        with conn.cursor() as cur:
            cur.execute(f"DROP DATABASE IF EXISTS {SCHEMA}")
        conn.close()
    return {
        "version": version,
        "flavor": flavor,
        "collations": {str(k): list(v) for k, v in sorted(collations.items())},
        "charsets": charsets,
        "conversions": conversions,
    }


def _probe(
    conn: pymysql.connections.Connection[Any],
    cs: str,
    collation: str,
    maxlen: int,
    *,
    sampled: bool = False,
    thin: bool = False,
) -> dict[str, str | None]:
    """Sequence (hex) -> HEX of its conversion, followed by a newline, in ``collation``.

    The newline after the sequence: the server drops an incomplete sequence
    at the very end of a string silently. ``sampled``: only the sequences of
    the charset stored in ``SCHEMA.s``; ``thin``: see _spaces().
    """
    end = _SENTINEL.get(cs, "0A")
    if sampled:
        spaces = [("sample", "s.t", f"FROM {SCHEMA}.s s WHERE s.cs = '{cs}'")]
    else:
        spaces = _spaces(cs, maxlen, thin=thin)
    answers: dict[str, str | None] = {}
    for _what, expr, source in spaces:
        probe = f"CONCAT({expr}, X'{end}')"
        sql = f"SELECT HEX({expr}), {_convert(cs, collation, probe)} {source}"
        for token, result in _rows(conn, sql):
            answers[token] = result
    return answers


# -- classifying the answers ---------------------------------------------------------------


# A question mark in each charset whose code unit is more than one byte.
_QUESTION = {"ucs2": b"\x00?", "utf16": b"\x00?", "utf16le": b"?\x00", "utf32": b"\x00\x00\x00?"}


def server_text(cs: str, token: bytes, result_hex: str | None) -> str | None:
    """The text the server converts ``token`` to; None when it cannot convert it.

    ``result_hex`` is the conversion of the token followed by a newline (see
    read_server()). The server cannot convert the token when it answers NULL
    (MySQL, for bytes that are not well formed), bytes that are not UTF-8, no
    newline at the end, or a ``?`` that is not in the token.
    """
    if result_hex is None:
        return None
    try:
        text = bytes.fromhex(result_hex).decode("utf-8")
    except UnicodeDecodeError:
        return None
    if not text.endswith("\n"):
        return None
    text = text[:-1]
    unit = _QUESTION.get(cs, b"?")
    marks = sum(1 for i in range(0, len(token), len(unit)) if token[i : i + len(unit)] == unit)
    return text if text.count("?") == marks else None


def classify(text: str | None) -> int:
    """The code point of a one-character conversion, else INVALID."""
    return ord(text) if text is not None and len(text) == 1 else INVALID


def codec_answer(codec: str | None, token: bytes) -> int:
    if codec is None:
        return INVALID
    try:
        text = token.decode(codec)
    except UnicodeDecodeError:
        return INVALID
    return ord(text) if len(text) == 1 else INVALID


def _ranges(values: Iterable[int]) -> str:
    out: list[str] = []
    for v in sorted(set(values)):
        if out and int(out[-1].split("-")[-1], 16) == v - 1:
            out[-1] = f"{out[-1].split('-')[0]}-{v:02X}"
        else:
            out.append(f"{v:02X}")
    return ",".join(out)


def digest(pairs: Iterable[tuple[bytes, int]]) -> str:
    """sha256 over the sorted (sequence, code point) pairs of the valid sequences."""
    h = hashlib.sha256()
    for token, cp in sorted(pairs):
        h.update(f"{token.hex()}={cp};".encode())
    return h.hexdigest()


def runs(overrides: dict[bytes, int]) -> list[list[Any]]:
    """{sequence: code point or -1} as ``[first (hex), code point, count]`` runs of
    consecutive sequences of one length mapping to consecutive code points
    (or all unconvertible)."""
    out: list[list[Any]] = []
    prev: tuple[int, int, int] | None = None  # (length, sequence, code point) of the last
    for token in sorted(overrides, key=lambda t: (len(t), t)):
        n, value, cp = len(token), int.from_bytes(token, "big"), overrides[token]
        if (
            prev is not None
            and prev[0] == n
            and prev[1] + 1 == value
            and (cp == prev[2] + 1 if cp >= 0 else prev[2] == INVALID)
        ):
            out[-1][2] += 1
        else:
            out.append([token.hex().upper(), cp, 1])
        prev = (n, value, cp)
    return out


def build_table(
    cs: str, maxlen: int, server: dict[bytes, int]
) -> tuple[dict[str, Any], dict[str, Any]]:
    """The stored description of one conversion of a table-decoded charset, and
    summary figures."""
    valid = {t: cp for t, cp in server.items() if cp != INVALID}
    structure: list[list[str]] = []
    if maxlen > 1:
        for n in range(2, 5):
            tokens = [t for t in valid if len(t) == n]
            if tokens:
                structure.append([_ranges(t[k] for t in tokens) for k in range(n)])
        _check_structure(cs, valid, structure)
    # What the decoder can meet: single bytes and sequences matching the classes.
    classes = [[_expand(c) for c in entry] for entry in structure]
    checked = {t: cp for t, cp in server.items() if _in_structure(t, classes)}
    best: tuple[int, str | None, dict[bytes, int]] | None = None
    for codec in (*CANDIDATES.get(cs, ()), None):
        if codec is not None:
            try:
                codecs.lookup(codec)
            except LookupError:
                continue
        differ = {t: cp for t, cp in checked.items() if codec_answer(codec, t) != cp}
        if best is None or len(runs(differ)) < len(runs(best[2])):
            best = (len(differ), codec, differ)
    assert best is not None
    ndiff, codec, overrides = best
    spec: dict[str, Any] = {
        "codec": codec,
        "structure": structure,
        "checked": len(checked),
        "unconvertible": len(checked) - len(valid),
        "digest": digest(valid.items()),
        "overrides": runs(overrides),
    }
    figures = {
        "checked": len(checked),
        "unconvertible": len(checked) - len(valid),
        "codec": codec,
        "differences": ndiff,
        "runs": len(spec["overrides"]),
    }
    return spec, figures


def _in_structure(token: bytes, classes: list[list[set[int]]]) -> bool:
    return len(token) == 1 or any(
        len(entry) == len(token) and all(b in c for b, c in zip(token, entry, strict=True))
        for entry in classes
    )


def _check_structure(cs: str, valid: dict[bytes, int], structure: list[list[str]]) -> None:
    """Longest-first matching over the classes must split valid text as the server does:
    no valid sequence may begin like a longer one."""
    sets = [[_expand(c) for c in classes] for classes in structure]
    for token in valid:
        for classes in sets:
            if len(classes) > len(token) and all(
                b in c for b, c in zip(token, classes, strict=False)
            ):
                raise SystemExit(
                    f"{cs}: valid {token.hex()} begins like a {len(classes)}-byte sequence"
                )


# -- main ----------------------------------------------------------------------------------


def read_charsets(dsn: str) -> dict[str, Any]:
    """A server's character sets: ``{"version", "flavor", "charsets": {name: {maxlen,
    default}}}`` with the default collation's name (what ``--charsets-only`` keeps)."""
    conn = _connect(dsn)
    try:
        version = next(_rows(conn, "SELECT VERSION()"))[0]
        flavor = "mariadb" if "mariadb" in version.lower() else "mysql"
        charsets = {
            name: {"maxlen": int(maxlen), "default": default}
            for name, maxlen, default in _rows(
                conn,
                "SELECT CHARACTER_SET_NAME, MAXLEN, DEFAULT_COLLATE_NAME "
                "FROM information_schema.CHARACTER_SETS",
            )
        }
    finally:
        conn.close()
    return {"version": version, "flavor": flavor, "charsets": charsets}


def server_key(flavor: str, version: str) -> str:
    """``mariadb-10.11``: the flavour and major.minor version a server's answers are kept under."""
    major_minor = ".".join(version.split("-", maxsplit=1)[0].split(".")[:2])
    return f"{flavor}-{major_minor}"


def write_charsets(servers: list[dict[str, Any]], out: Path) -> None:
    """charsets.json: per server, character set -> [maxlen, default collation name]."""
    by_server: dict[str, dict[str, list[Any]]] = {}
    for s in servers:
        by_server[server_key(s["flavor"], s["version"])] = {
            cs: [info["maxlen"], info["default"]] for cs, info in sorted(s["charsets"].items())
        }
    data = {"generated_from": [s["version"] for s in servers], "servers": by_server}
    lines = [json.dumps({"generated_from": data["generated_from"]})[:-1] + ', "servers": {']
    for n, (key, sets) in enumerate(sorted(by_server.items())):
        comma = "," if n + 1 < len(by_server) else ""
        lines.append(f"{json.dumps(key)}: {json.dumps(sets, ensure_ascii=True)}{comma}")
    lines.append("}}")
    out.mkdir(parents=True, exist_ok=True)
    (out / "charsets.json").write_text("\n".join(lines) + "\n", encoding="utf-8")
    print(f"wrote charsets.json for {', '.join(sorted(by_server))}")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=(__doc__ or "").split("\n\n")[0])
    parser.add_argument("dsn", nargs="*", help="mariadb://user:pass@host:port (or mysql://)")
    parser.add_argument("--out", type=Path, default=DEFAULT_OUT, help="data directory")
    parser.add_argument("--raw", type=Path, help="save the servers' answers here (.json.gz)")
    parser.add_argument("--from-raw", type=Path, help="use saved answers instead of servers")
    parser.add_argument(
        "--charsets-only", action="store_true", help="rewrite charsets.json alone (fast)"
    )
    args = parser.parse_args(argv)
    if args.charsets_only:
        if not args.dsn:
            parser.error("--charsets-only needs the servers' DSNs")
        write_charsets([read_charsets(dsn) for dsn in args.dsn], args.out)
        return 0
    if args.from_raw:
        with gzip.open(args.from_raw, "rt") as f:
            servers: list[dict[str, Any]] = json.load(f)
    elif args.dsn:
        servers = [read_server(dsn) for dsn in args.dsn]
        if args.raw:
            with gzip.open(args.raw, "wt") as f:
                json.dump(servers, f)
    else:
        parser.error("give the servers' DSNs (or --from-raw)")
    tables, meta = build(servers)
    write(tables, meta, args.out)
    if all("default_name" in i for s in servers for i in s["charsets"].values()):
        write_charsets(
            [
                {
                    **s,
                    "charsets": {
                        cs: {"maxlen": i["maxlen"], "default": i["default_name"]}
                        for cs, i in s["charsets"].items()
                    },
                }
                for s in servers
            ],
            args.out,
        )
    return verify(servers, tables, meta)


def _answers(server: dict[str, Any], cid: int, cs: str) -> dict[bytes, str | None]:
    """Sequence -> the text collation ``cid`` converts it to (None: unconvertible)."""
    out: dict[bytes, str | None] = {}
    for hex_token, result in server["conversions"].get(str(cid), {}).items():
        token = bytes.fromhex(hex_token)
        out[token] = server_text(cs, token, result)
    return out


def _code_points(answers: dict[bytes, str | None]) -> dict[bytes, int]:
    return {t: classify(text) for t, text in answers.items()}


def _ids_of(server: dict[str, Any], cs: str) -> list[int]:
    return sorted(int(c) for c, (name, _n) in server["collations"].items() if name == cs)


Key = tuple[str, int]  # (flavour, collation id)


def _group(
    cs: str, per_id: dict[Key, dict[bytes, int]], names: dict[int, str]
) -> list[tuple[list[Key], dict[bytes, int]]]:
    """Collations that convert alike, as (keys, answers); the fullest probes first.

    A collation probed on part of the code space joins a fully probed one that
    agrees with it everywhere it was probed."""
    groups: list[tuple[list[Key], dict[bytes, int]]] = []
    for key in sorted(per_id, key=lambda k: (-len(per_id[k]), k)):
        answers = per_id[key]
        for keys, ref in groups:
            if answers.keys() <= ref.keys() and all(ref[t] == cp for t, cp in answers.items()):
                keys.append(key)
                break
        else:
            if groups and len(answers) < len(groups[0][1]):
                raise SystemExit(
                    f"{cs}: {names[key[1]]} ({key[0]}) converts differently and was probed on "
                    "part of the code space only: probe it in full"
                )
            groups.append(([key], answers))
    return groups


def build(servers: list[dict[str, Any]]) -> tuple[dict[str, dict[str, Any]], dict[str, Any]]:
    """(charset -> data file content, collations.json content); prints the summary."""
    versions = [s["version"] for s in servers]
    flavors = sorted({s["flavor"] for s in servers})
    collations: dict[str, dict[str, list[str]]] = {}
    by_id: dict[str, str] = {}
    names: dict[int, str] = {}
    for flavor in flavors:
        merged: dict[str, list[str]] = {}
        for s in (s for s in servers if s["flavor"] == flavor):
            for cid, (cs, name) in s["collations"].items():
                names.setdefault(int(cid), name)
                if merged.setdefault(cid, [cs, name])[0] != cs:
                    raise SystemExit(f"{s['version']}: collation {cid} is {merged[cid][0]}, {cs}")
                if by_id.setdefault(cid, cs) != cs:
                    raise SystemExit(
                        f"collation {cid} is {by_id[cid]} on one flavour and {cs} on the other: "
                        "charsets.py must then look ids up per flavour"
                    )
        collations[flavor] = dict(sorted(merged.items(), key=lambda kv: int(kv[0])))
        print(f"{flavor}: {len(merged)} collation ids")
    tables: dict[str, dict[str, Any]] = {}
    for cs in sorted({cs for s in servers for cs in s["charsets"]}):
        if cs == "binary":
            continue
        per_id: dict[Key, dict[bytes, int]] = {}
        maxlen = 0
        for s in (s for s in servers if cs in s["charsets"]):
            maxlen = max(maxlen, s["charsets"][cs]["maxlen"])
            ids = _ids_of(s, cs)
            asked = wrong = invalid = 0
            mine: dict[Key, dict[bytes, int]] = {}
            for cid in ids:
                texts = _answers(s, cid, cs)
                asked += len(texts)
                if cs in RULE_CHARSETS:
                    wrong += check_rule(cs, texts)
                    invalid += sum(1 for v in texts.values() if v is None)
                    continue
                key = (s["flavor"], cid)
                mine[key] = answers = _code_points(texts)
                known = per_id.setdefault(key, {})
                differ = [t for t in answers.keys() & known.keys() if answers[t] != known[t]]
                if differ:
                    raise SystemExit(
                        f"{cs}: {s['version']} converts {len(differ)} sequences of {names[cid]} "
                        f"differently from another {s['flavor']} server (e.g. {differ[0].hex()}):"
                        " the tables must then be kept per server version"
                    )
                known.update(answers)
            head = f"{cs:9} {s['version']}: {len(ids)} collations, {asked} sequences asked"
            if cs in RULE_CHARSETS:
                print(f"{head}, {invalid} unconvertible, {wrong} decoded differently by the rule")
                continue
            print(head)
            for group, answers in _group(cs, mine, names):
                _spec, fig = build_table(cs, s["charsets"][cs]["maxlen"], answers)
                print(
                    f"    {_names(group, names)}: {fig['checked']} sequences in the code space, "
                    f"{fig['unconvertible']} unconvertible, {fig['differences']} differ from "
                    f"codec {fig['codec']}"
                )
        if cs in RULE_CHARSETS:
            continue
        for cid in sorted({cid for _f, cid in per_id}):
            if len(flavors) == 2 and all((f, cid) in per_id for f in flavors):
                one, two = (per_id[(f, cid)] for f in flavors)
                differ = sorted(t for t in one.keys() & two.keys() if one[t] != two[t])
                if differ:
                    print(
                        f"    !! {names[cid]}: the flavours convert {len(differ)} sequences "
                        f"differently ({', '.join(t.hex().upper() for t in differ[:8])})"
                    )
        variants = []
        for group, answers in _group(cs, per_id, names):
            spec, fig = build_table(cs, maxlen, answers)
            by_flavor = {f: sorted(cid for g, cid in group if g == f) for f in flavors}
            variants.append({**by_flavor, **spec})
            print(
                f"    stored for {_names(group, names)}: codec {fig['codec']}, "
                f"{fig['runs']} runs of differences"
            )
        tables[cs] = {
            "charset": cs,
            "generated_from": versions,
            "maxlen": maxlen,
            "variants": variants,
        }
    meta = {"generated_from": versions, "collations": collations, "tables": sorted(tables)}
    return tables, meta


def _names(keys: list[Key], names: dict[int, str]) -> str:
    ids = sorted({cid for _f, cid in keys})
    flavors = "/".join(sorted({f for f, _cid in keys}))
    shown = ", ".join(names[i] for i in ids[:3])
    return f"{shown}{f' and {len(ids) - 3} more' if len(ids) > 3 else ''} ({flavors})"


def check_rule(cs: str, answers: dict[bytes, str | None]) -> int:
    """How many answers the fixed decoder of ``cs`` (utf8mb4, ucs2, ...) gets wrong."""
    return _count_wrong(cs, charsets.rule_decoder(cs), answers)


def _count_wrong(cs: str, decode: Any, answers: dict[bytes, str | None]) -> int:
    bad = 0
    for token, want in answers.items():
        try:
            got = decode(token) if decode is not None else None
        except UnicodeDecodeError:
            got = None
        if got != want:
            bad += 1
            if bad <= 5:
                print(f"   !! {cs} {token.hex()}: server {want!r}, decoder {got!r}")
    return bad


def write(tables: dict[str, dict[str, Any]], meta: dict[str, Any], out: Path) -> None:
    out.mkdir(parents=True, exist_ok=True)
    for path in out.glob("*.json"):
        path.unlink()
    _dump_collations(out / "collations.json", meta)
    for cs, data in tables.items():
        _dump(out / f"{cs}.json", data)
    size = sum(p.stat().st_size for p in out.glob("*.json"))
    print(f"wrote {len(tables) + 1} files, {size} bytes, to {out}")


def _dump_collations(path: Path, meta: dict[str, Any]) -> None:
    """collations.json with one collation a line (readable diffs when a server adds some)."""
    head = {k: v for k, v in meta.items() if k != "collations"}
    lines = [json.dumps(head, ensure_ascii=True)[:-1] + ', "collations": {']
    for n, (flavor, ids) in enumerate(meta["collations"].items()):
        lines.append(f"{json.dumps(flavor)}: {{")
        items = list(ids.items())
        for i, (cid, value) in enumerate(items):
            comma = "," if i + 1 < len(items) else ""
            lines.append(f"{json.dumps(cid)}: {json.dumps(value, ensure_ascii=True)}{comma}")
        lines.append("}" + ("," if n + 1 < len(meta["collations"]) else ""))
    lines.append("}}")
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")


def _dump(path: Path, data: Any) -> None:
    text = json.dumps(data, ensure_ascii=True, separators=(",", ":"))
    path.write_text(text + "\n", encoding="utf-8")


def verify(
    servers: list[dict[str, Any]], tables: dict[str, dict[str, Any]], meta: dict[str, Any]
) -> int:
    """Decode every answer again with decoders built from the new data."""
    failures = 0
    ids = charsets.build_collation_map(meta)
    decoders: dict[Key, Any] = {}
    for cs, data in tables.items():
        for variant in data["variants"]:
            decode = charsets.build_table_decoder(cs, data["maxlen"], variant)
            for flavor in ("mariadb", "mysql"):
                decoders.update(((flavor, cid), decode) for cid in variant.get(flavor, ()))
    for s in servers:
        wrong_ids = [cid for cid, (cs, _n) in s["collations"].items() if ids.get(int(cid)) != cs]
        total = bad = 0
        for cs in sorted(tables):
            for cid in _ids_of(s, cs) if cs in s["charsets"] else ():
                answers = _answers(s, cid, cs)
                total += len(answers)
                bad += _count_wrong(cs, decoders.get((s["flavor"], cid)), answers)
        failures += bad + len(wrong_ids)
        print(
            f"verified {s['version']}: {len(s['collations']) - len(wrong_ids)} of "
            f"{len(s['collations'])} collation ids resolve; {total} sequences, "
            f"{bad} decoded differently"
        )
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
