"""Seeded table definitions and column values for the generated oracle.

Each :class:`GenColumn` knows its DDL, how the oracle compares it (``kind``,
the same kinds as ``tests/oracle.py``) and how to draw a value for it: an SQL
literal, edge values (min, max, zero dates, empty strings, ...) a third of the
time, random ones otherwise.
"""

from __future__ import annotations

import json
import random
import re
from collections.abc import Callable
from dataclasses import dataclass, replace

__all__ = [
    "CHARSETS",
    "EXACT_LABEL_CHARSETS",
    "GenColumn",
    "GenTable",
    "generate_column",
    "generate_table",
    "quote",
]

#: charset -> (bytes per character at most, characters to draw text from)
CHARSETS: dict[str, tuple[int, str]] = {
    "latin1": (1, "abcXYZ 09éÑüßç'\\"),
    "utf8mb3": (3, "abc XYZ09éж中文'\\"),
    "utf8mb4": (4, "abc XYZ09éж中文🙂𝄞'\\"),
    "ucs2": (2, "abc XYZéж中文"),
    "utf16": (4, "abc XYZéж中🙂"),
    "utf16le": (4, "abcé中🙂"),
    "utf32": (4, "abc XYZé中🙂"),
    "sjis": (2, "abcアイｱ漢字\\"),
    "gbk": (2, "abc中文汉字"),
    "big5": (2, "abc中文碁"),
    "euckr": (2, "abc한국어"),
    "eucjpms": (3, "abc日本語〜"),
}


#: Character sets in which a schema history can tell how the server keeps non-ASCII
#: ENUM/SET labels of a statement (Unicode ones, and the single-byte latin1); in the
#: others it cannot (replica_client/schema/ddl_charsets.py ``labels_in``), so the oracle writes
#: them only where the binlog carries the labels (binlog_row_metadata=FULL).
EXACT_LABEL_CHARSETS = frozenset(
    {"latin1", "utf8mb3", "utf8mb4", "ucs2", "utf16", "utf16le", "utf32"}
)


def quote(text: str) -> str:
    """An SQL string literal (the connection is utf8mb4; the server converts)."""
    return "'" + text.replace("\\", "\\\\").replace("'", "''") + "'"


def _hex(data: bytes) -> str:
    return f"X'{data.hex()}'" if data else "''"


Gen = Callable[[random.Random], str]


@dataclass(frozen=True)
class GenColumn:
    name: str
    ddl: str
    kind: str
    gen: Gen
    fsp: int = 0
    nullable: bool = False
    #: bytes this column takes of the 65,535-byte row limit (VARCHAR/CHAR)
    row_bytes: int = 0
    #: a BLOB/TEXT column (omitted from NOBLOB images)
    blob: bool = False
    #: the type family it was drawn from (``generate_column(pick=...)``), -1: none
    family: int = -1
    #: the character set of a text, ENUM or SET column
    charset: str | None = None

    def value(self, rng: random.Random) -> str:
        if self.nullable and rng.random() < 0.1:
            return "NULL"
        return self.gen(rng)

    def renamed(self, name: str) -> GenColumn:
        return replace(self, name=name)

    def nullable_copy(self) -> GenColumn:
        """The same column, NULL allowed (what an added GEOMETRY/JSON column needs)."""
        if self.nullable:
            return self
        return replace(self, ddl=self.ddl.replace(" NOT NULL", " NULL"), nullable=True)

    def converted(self, charset: str) -> GenColumn:
        """The column after ``CONVERT TO CHARACTER SET charset`` (its type's name may
        grow, TEXT to MEDIUMTEXT: the kind stays)."""
        if self.charset is None:
            return self
        ddl = re.sub(r"CHARACTER SET \w+", f"CHARACTER SET {charset}", self.ddl)
        return replace(self, ddl=ddl, charset=charset)


@dataclass(frozen=True)
class GenTable:
    seed: int
    columns: tuple[GenColumn, ...]  # the primary key "id" is one of them

    def ddl(self, name: str) -> str:
        cols = ", ".join(f"`{c.name}` {c.ddl}" for c in self.columns)
        return f"CREATE TABLE {name} ({cols}, PRIMARY KEY (id)) ENGINE=InnoDB"


def _edge(rng: random.Random, edges: list[str], rand: Gen) -> str:
    return rng.choice(edges) if rng.random() < 0.35 else rand(rng)


def _ints(bits: int, unsigned: bool) -> Gen:
    lo, hi = (0, (1 << bits) - 1) if unsigned else (-(1 << (bits - 1)), (1 << (bits - 1)) - 1)
    edges = [str(lo), str(hi), "0", "1"] + ([] if unsigned else ["-1"])
    return lambda rng: _edge(rng, edges, lambda r: str(r.randint(lo, hi)))


def _decimal(p: int, s: int, unsigned: bool) -> Gen:
    top = "9" * (p - s) or "0"
    most = top + ("." + "9" * s if s else "")
    edges = [most, "0", "0." + "0" * (s - 1) + "1" if s else "1"]
    if not unsigned:
        edges.append("-" + most)

    def rand(r: random.Random) -> str:
        whole = "".join(r.choice("0123456789") for _ in range(r.randint(1, max(p - s, 1))))
        if p == s:
            whole = "0"
        frac = "".join(r.choice("0123456789") for _ in range(s))
        sign = "" if unsigned or r.random() < 0.5 else "-"
        return sign + whole + ("." + frac if s else "")

    return lambda rng: _edge(rng, edges, rand)


def _float(double: bool) -> Gen:
    if double:
        edges = ["0", "-1.5", "1.7976931348623157e308", "-2.2250738585072014e-308", "1e-300"]
    else:
        edges = ["0", "-1.5", "3.4e38", "-1.17549e-38", "16777217"]
    span = 1e300 if double else 1e37

    def rand(r: random.Random) -> str:
        return repr(r.choice([r.uniform(-1e6, 1e6), r.uniform(-span, span), r.random()]))

    return lambda rng: _edge(rng, edges, rand)


def _frac(r: random.Random, fsp: int) -> str:
    return "." + "".join(r.choice("0123456789") for _ in range(fsp)) if fsp else ""


def _date_text(r: random.Random) -> str:
    return f"{r.randint(1, 9999):04d}-{r.randint(1, 12):02d}-{r.randint(1, 28):02d}"


def _clock(r: random.Random) -> str:
    return f"{r.randint(0, 23):02d}:{r.randint(0, 59):02d}:{r.randint(0, 59):02d}"


def _date() -> Gen:
    edges = ["'0000-00-00'", "'2024-00-00'", "'2024-02-00'", "'1000-01-01'", "'9999-12-31'"]
    return lambda rng: _edge(rng, [*edges, "'0001-01-01'"], lambda r: f"'{_date_text(r)}'")


def _time(fsp: int) -> Gen:
    f = "." + "9" * fsp if fsp else ""
    edges = [f"'-838:59:59{f}'", f"'838:59:59{f}'", "'00:00:00'", "'-00:00:01'"]
    if fsp:
        edges.append(f"'-00:00:00.{'5'.ljust(fsp, '0')}'")

    def rand(r: random.Random) -> str:
        sign = r.choice(["", "-"])
        hours, minutes, seconds = r.randint(0, 838), r.randint(0, 59), r.randint(0, 59)
        return f"'{sign}{hours}:{minutes:02d}:{seconds:02d}{_frac(r, fsp)}'"

    return lambda rng: _edge(rng, edges, rand)


def _datetime(fsp: int) -> Gen:
    f = "." + "9" * fsp if fsp else ""
    edges = [
        "'0000-00-00 00:00:00'",
        "'1000-01-01 00:00:00'",
        f"'9999-12-31 23:59:59{f}'",
        "'2024-02-00 10:00:00'",
    ]
    return lambda rng: _edge(rng, edges, lambda r: f"'{_date_text(r)} {_clock(r)}{_frac(r, fsp)}'")


def _timestamp(fsp: int, far: bool) -> Gen:
    f = "." + "9" * fsp if fsp else ""
    last = "2106-02-07 06:28:15" if far else "2038-01-19 03:14:07"
    edges = ["'1970-01-01 00:00:01'", f"'{last}{f}'", "'0000-00-00 00:00:00'"]

    def rand(r: random.Random) -> str:
        year = r.randint(1971, 2105 if far else 2037)
        return f"'{year}-{r.randint(1, 12):02d}-{r.randint(1, 28):02d} {_clock(r)}{_frac(r, fsp)}'"

    return lambda rng: _edge(rng, edges, rand)


def _text(charset: str, max_chars: int) -> Gen:
    alphabet = CHARSETS[charset][1]

    def rand(r: random.Random) -> str:
        n = r.choice([0, 1, r.randint(0, max_chars), max_chars])
        return quote("".join(r.choice(alphabet) for _ in range(n)))

    return rand


def _bytes(max_len: int, big: int = 0) -> Gen:
    def rand(r: random.Random) -> str:
        if big and r.random() < 0.02:
            return _hex(r.randbytes(r.randint(big // 2, big)))
        n = r.choice([0, 1, r.randint(0, min(max_len, 300)), min(max_len, 2000)])
        return _hex(r.randbytes(n))

    return rand


def _long_text(charset: str, max_chars: int, big: int = 0) -> Gen:
    short = _text(charset, min(max_chars, 300))
    alphabet = CHARSETS[charset][1]

    def rand(r: random.Random) -> str:
        if big and r.random() < 0.02:
            return quote("".join(r.choice(alphabet) for _ in range(r.randint(1000, big))))
        return short(r)

    return rand


def _enum(labels: list[str]) -> Gen:
    return lambda rng: quote(rng.choice(labels)) if rng.random() < 0.95 else "''"


def _set(labels: list[str]) -> Gen:
    def rand(r: random.Random) -> str:
        k = r.choice([0, 1, r.randint(0, len(labels)), len(labels)])
        return quote(",".join(r.sample(labels, k)))

    return rand


def _json_value(r: random.Random, depth: int) -> object:
    pick = r.randint(0, 9 if depth < 3 else 5)
    if pick == 0:
        return None
    if pick == 1:
        return r.choice([True, False])
    if pick == 2:
        return r.choice([0, -1, 2**31, -(2**63), 2**64 - 1, r.randint(-1000, 1000)])
    if pick == 3:
        return r.choice([1.5, -0.25, 1e300, r.uniform(-1e6, 1e6)])
    if pick in (4, 5):
        return "".join(r.choice('ab c"\\é中🙂\n') for _ in range(r.randint(0, 12)))
    if pick in (6, 7):
        return [_json_value(r, depth + 1) for _ in range(r.randint(0, 4))]
    return {f"k{i}{r.choice('aé')}": _json_value(r, depth + 1) for i in range(r.randint(0, 4))}


def _json() -> Gen:
    return lambda rng: quote(json.dumps(_json_value(rng, 0), ensure_ascii=False))


def _geometry(kind: str) -> Gen:
    def rand(r: random.Random) -> str:
        def pt() -> str:
            return f"{r.uniform(-180, 180):.6f} {r.uniform(-90, 90):.6f}"

        shapes = {
            "POINT": [f"POINT({pt()})"],
            "LINESTRING": [f"LINESTRING({pt()}, {pt()}, {pt()})"],
            "POLYGON": ["POLYGON((0 0, 10 0, 10 10, 0 10, 0 0))"],
        }
        if kind == "GEOMETRY":
            wkt = r.choice([s for v in shapes.values() for s in v])
        else:
            wkt = shapes[kind][0]
        return f"ST_GeomFromText('{wkt}')"

    return rand


def _vector(n: int) -> Gen:
    def rand(r: random.Random) -> str:
        values = [r.choice([0.0, -1.5, 3.4e38, r.uniform(-1e6, 1e6)]) for _ in range(n)]
        return "STRING_TO_VECTOR('[" + ",".join(repr(v) for v in values) + "]')"

    return rand


def _labels(r: random.Random, charset: str, n: int, exact: bool) -> list[str]:
    extra = [ch for ch in CHARSETS[charset][1] if ch.isalpha() and not ch.isascii()]
    prefix = r.choice(extra) if extra and r.random() < 0.5 else "v"
    if exact and charset not in EXACT_LABEL_CHARSETS:
        prefix = "v"
    return [f"{prefix}{i}" for i in range(n)]


#: the type families of ``generate_column`` (``pick``)
FAMILIES = 19
#: families of text, ENUM and SET columns (those with a character set)
CHARSET_FAMILIES = (11, 12, 14, 15)


def generate_column(
    r: random.Random,
    name: str,
    flavor: str,
    version: str,
    *,
    pick: int | None = None,
    charset: str | None = None,
    exact_labels: bool = False,
) -> GenColumn:
    """One column of a random type (every type this flavour supports).

    ``pick`` forces the type family (0 to ``FAMILIES - 1``: the same family is a
    compatible type change, another one an incompatible one); ``charset`` the
    character set of a text, ENUM or SET column (family 14 is then TEXT, not
    BLOB); ``exact_labels`` keeps ENUM/SET labels ASCII in the character sets
    outside :data:`EXACT_LABEL_CHARSETS`.
    """
    return _column(r, name, flavor, version, pick, charset, exact_labels)


def _column(
    r: random.Random,
    name: str,
    flavor: str,
    version: str,
    forced: int | None = None,
    forced_charset: str | None = None,
    exact_labels: bool = False,
) -> GenColumn:
    pick = r.randint(0, 18) if forced is None else forced
    col = _typed_column(r, name, flavor, version, pick, forced_charset, exact_labels)
    return replace(col, family=pick)


def _charset(r: random.Random, forced: str | None) -> str:
    drawn = r.choice(list(CHARSETS))
    return drawn if forced is None else forced


def _typed_column(
    r: random.Random,
    name: str,
    flavor: str,
    version: str,
    pick: int,
    forced_charset: str | None,
    exact_labels: bool,
) -> GenColumn:
    nullable = r.random() < 0.4
    null = " NULL" if nullable else " NOT NULL"
    if pick <= 2:
        bits, word = r.choice(
            [(8, "TINYINT"), (16, "SMALLINT"), (24, "MEDIUMINT"), (32, "INT"), (64, "BIGINT")]
        )
        unsigned = r.random() < 0.5
        zerofill = unsigned and r.random() < 0.2
        ddl = word + (" UNSIGNED" if unsigned else "") + (" ZEROFILL" if zerofill else "")
        return GenColumn(name, ddl + null, "int", _ints(bits, unsigned), nullable=nullable)
    if pick == 3:
        return GenColumn(name, "YEAR" + null, "year", _year(), nullable=nullable)
    if pick == 4:
        n = r.choice([1, 2, 7, 8, 9, 17, 63, 64, r.randint(1, 64)])
        return GenColumn(name, f"BIT({n})" + null, "bit", _bits(n), nullable=nullable)
    if pick == 5:
        p, s = r.choice([(65, 30), (1, 0), (65, 0), (30, 30), (10, 2), (18, 9)])
        if r.random() < 0.5:
            p = r.randint(1, 65)
            s = r.randint(0, min(p, 30))
        unsigned = r.random() < 0.2
        ddl = f"DECIMAL({p},{s})" + (" UNSIGNED" if unsigned else "")
        return GenColumn(name, ddl + null, "decimal", _decimal(p, s, unsigned), nullable=nullable)
    if pick == 6:
        double = r.random() < 0.5
        kind = "double" if double else "float"
        ddl = "DOUBLE" if double else "FLOAT"
        return GenColumn(name, ddl + null, kind, _float(double), nullable=nullable)
    if pick == 7:
        return GenColumn(name, "DATE" + null, "date", _date(), nullable=nullable)
    if pick == 8:
        fsp = r.randint(0, 6)
        return GenColumn(name, f"TIME({fsp})" + null, "time", _time(fsp), fsp, nullable)
    if pick == 9:
        fsp = r.randint(0, 6)
        return GenColumn(name, f"DATETIME({fsp})" + null, "datetime", _datetime(fsp), fsp, nullable)
    if pick == 10:
        fsp = r.randint(0, 6)
        far = flavor == "mariadb" and version == "11.8"
        ddl = f"TIMESTAMP({fsp}) NULL DEFAULT NULL"
        return GenColumn(name, ddl, "timestamp", _timestamp(fsp, far), fsp, True)
    if pick in (11, 12):
        charset = _charset(r, forced_charset)
        width = CHARSETS[charset][0]
        if r.random() < 0.3:
            n = r.choice([1, 10, 255])
            ddl = f"CHAR({n}) CHARACTER SET {charset}"
        else:
            # around the 255/256-byte boundary of the length prefix
            n = r.choice([255 // width, 255 // width + 1, 256 // width + 1, 20, 300])
            ddl = f"VARCHAR({n}) CHARACTER SET {charset}"
        gen = _text(charset, n)
        return GenColumn(
            name,
            ddl + null,
            "text",
            gen,
            nullable=nullable,
            row_bytes=n * width + 2,
            charset=charset,
        )
    if pick == 13:
        if r.random() < 0.4:
            n = r.choice([1, 16, 255])
            ddl, row = f"BINARY({n})", n
        else:
            n = r.choice([255, 256, 1000])
            ddl, row = f"VARBINARY({n})", n + 2
        return GenColumn(name, ddl + null, "bytes", _bytes(n), nullable=nullable, row_bytes=row)
    if pick == 14:
        word, size, big = r.choice(
            [("TINY", 255, 0), ("", 65535, 0), ("MEDIUM", 1 << 24, 200_000), ("LONG", 1 << 32, 0)]
        )
        if r.random() < 0.5 or forced_charset is not None:
            charset = _charset(r, forced_charset)
            width = CHARSETS[charset][0]
            ddl = f"{word}TEXT CHARACTER SET {charset}"
            gen = _long_text(charset, size // width, big // 4)
            return GenColumn(
                name, ddl + null, "text", gen, nullable=nullable, blob=True, charset=charset
            )
        gen = _bytes(size, big if word != "LONG" else 1_200_000)
        return GenColumn(name, f"{word}BLOB" + null, "bytes", gen, nullable=nullable, blob=True)
    if pick == 15:
        charset = _charset(r, forced_charset)
        if r.random() < 0.5:
            labels = _labels(r, charset, r.choice([1, 3, 255, 256, 300]), exact_labels)
            ddl = "ENUM(" + ",".join(quote(x) for x in labels) + f") CHARACTER SET {charset}"
            gen = _enum(labels)
            return GenColumn(name, ddl + null, "enum", gen, nullable=nullable, charset=charset)
        labels = _labels(r, charset, r.choice([1, 8, 9, 64]), exact_labels)
        ddl = "SET(" + ",".join(quote(x) for x in labels) + f") CHARACTER SET {charset}"
        gen = _set(labels)
        return GenColumn(name, ddl + null, "set", gen, nullable=nullable, charset=charset)
    if pick == 16:
        return GenColumn(name, "JSON" + null, "json", _json(), nullable=nullable, blob=True)
    if pick == 18 and flavor == "mysql":
        n = r.choice([1, 3, 16, 100])
        return GenColumn(name, f"VECTOR({n})" + null, "vector", _vector(n), nullable=nullable)
    kind = r.choice(["GEOMETRY", "POINT", "LINESTRING", "POLYGON"])
    return GenColumn(name, kind + null, "geometry", _geometry(kind), nullable=nullable, blob=True)


def _bits(n: int) -> Gen:
    top = (1 << n) - 1
    return lambda rng: str(rng.choice([0, top, 1, rng.randint(0, top)]))


def _zero(rng: random.Random) -> str:
    return "0"


def _year() -> Gen:
    return lambda rng: _edge(rng, ["0", "1901", "2155"], lambda r: str(r.randint(1901, 2155)))


#: the row-size budget of a table's VARCHAR/CHAR columns (the limit is 65,535 bytes)
_ROW_BUDGET = 30_000


def generate_table(
    seed: int | str,
    flavor: str,
    version: str,
    max_columns: int = 60,
    *,
    exact_labels: bool = False,
    prefix: str = "c",
) -> GenTable:
    """A table of 1 to ``max_columns`` random columns plus ``id`` at a random place
    (``exact_labels``: see :func:`generate_column`; ``prefix``: of the column names)."""
    r = random.Random(seed)
    count = r.choice([1, 2, r.randint(1, max_columns), r.randint(1, max_columns), max_columns])
    columns: list[GenColumn] = []
    budget = _ROW_BUDGET
    for i in range(count):
        col = _column(r, f"{prefix}{i}", flavor, version, exact_labels=exact_labels)
        if col.row_bytes > budget:
            continue
        budget -= col.row_bytes
        columns.append(col)
    pk = GenColumn("id", "INT NOT NULL", "int", _ints(32, False))
    rev = GenColumn("rev", "INT NOT NULL", "int", _zero)
    columns.insert(r.randint(0, len(columns)), pk)
    columns.insert(r.randint(0, len(columns)), rev)
    return GenTable(seed if isinstance(seed, int) else 0, tuple(columns))


def extra_column(
    seed: int, index: int, flavor: str, version: str, *, exact_labels: bool = False
) -> GenColumn:
    """A column for ``ALTER TABLE ... ADD`` (its own stream of randomness)."""
    r = random.Random(seed * 7919 + index)
    col = _column(r, f"a{index}", flavor, version, exact_labels=exact_labels)
    if col.row_bytes <= 2_000:
        return col
    return extra_column(seed, index + 1000, flavor, version, exact_labels=exact_labels)
