"""Column definitions of DDL as the server keeps them. No I/O.

A column type with its aliases normalised as ``information_schema`` spells
them (:data:`_KINDS`), its length, precision, fsp or labels from the type's
parameters, its nullability (PRIMARY KEY, AUTO_INCREMENT, SERIAL, TIMESTAMP
under ``explicit_defaults_for_timestamp``), and its character set and
collation from the column's own clause, the table's default or a CONVERT TO
of the same ALTER TABLE: the rules of :class:`ColumnRules`.
"""

from __future__ import annotations

from dataclasses import replace
from typing import Final

from sqlglot import exp

from . import grammar_nodes as d
from .ddl_context import NotExactError
from .ddl_state import RunState
from .model import BLOB_TYPES, TEXT_TYPES, ColumnDef

# -- types ---------------------------------------------------------------------------------

_KINDS: Final[dict[str, str]] = {
    "TINYINT": "tinyint", "INT1": "tinyint", "BOOL": "tinyint", "BOOLEAN": "tinyint",
    "SMALLINT": "smallint", "INT2": "smallint",
    "MEDIUMINT": "mediumint", "INT3": "mediumint", "MIDDLEINT": "mediumint",
    "INT": "int", "INTEGER": "int", "INT4": "int",
    "BIGINT": "bigint", "INT8": "bigint", "SERIAL": "bigint",
    "DECIMAL": "decimal", "DEC": "decimal", "NUMERIC": "decimal", "FIXED": "decimal",
    "FLOAT": "float", "FLOAT4": "float",
    "DOUBLE": "double", "DOUBLE PRECISION": "double", "FLOAT8": "double", "REAL": "double",
    "BIT": "bit", "DATE": "date", "TIME": "time", "DATETIME": "datetime",
    "TIMESTAMP": "timestamp", "YEAR": "year",
    "CHAR": "char", "CHARACTER": "char", "NCHAR": "char", "NATIONAL CHAR": "char",
    "NATIONAL CHARACTER": "char",
    "VARCHAR": "varchar", "VARCHARACTER": "varchar", "CHAR VARYING": "varchar",
    "CHARACTER VARYING": "varchar", "NVARCHAR": "varchar", "NATIONAL VARCHAR": "varchar",
    "NATIONAL CHAR VARYING": "varchar", "NATIONAL CHARACTER VARYING": "varchar",
    "NCHAR VARCHAR": "varchar", "NCHAR VARYING": "varchar",
    "BINARY": "binary", "VARBINARY": "varbinary",
    "TINYTEXT": "tinytext", "TEXT": "text", "MEDIUMTEXT": "mediumtext", "LONGTEXT": "longtext",
    "LONG": "mediumtext", "LONG VARCHAR": "mediumtext", "LONG CHAR VARYING": "mediumtext",
    "LONG CHARACTER VARYING": "mediumtext",
    "TINYBLOB": "tinyblob", "BLOB": "blob", "MEDIUMBLOB": "mediumblob", "LONGBLOB": "longblob",
    "LONG VARBINARY": "mediumblob",
    "ENUM": "enum", "SET": "set", "JSON": "json",
    "GEOMETRY": "geometry", "POINT": "point", "LINESTRING": "linestring",
    "POLYGON": "polygon", "MULTIPOINT": "multipoint", "MULTILINESTRING": "multilinestring",
    "MULTIPOLYGON": "multipolygon", "GEOMETRYCOLLECTION": "geometrycollection",
    "GEOMCOLLECTION": "geomcollection",
    "UUID": "uuid", "INET4": "inet4", "INET6": "inet6", "VECTOR": "vector",
}  # fmt: skip
_NATIONAL: Final = frozenset(
    {"NCHAR", "NATIONAL CHAR", "NATIONAL CHARACTER", "NVARCHAR", "NATIONAL VARCHAR",
     "NATIONAL CHAR VARYING", "NATIONAL CHARACTER VARYING", "NCHAR VARCHAR", "NCHAR VARYING"}
)  # fmt: skip
INTEGER_KINDS: Final = frozenset({"tinyint", "smallint", "mediumint", "int", "bigint"})
_SIGNED_KINDS: Final = INTEGER_KINDS | {"decimal", "float", "double"}
_TEMPORAL: Final = frozenset({"time", "datetime", "timestamp"})
_CHARACTER: Final = frozenset({"char", "varchar", "enum", "set"}) | TEXT_TYPES
#: TEXT and BLOB kinds by their byte capacity.
_TEXT_SIZES: Final = ((255, "tinytext"), (65535, "text"), (16777215, "mediumtext"))
_BLOB_SIZES: Final = ((255, "tinyblob"), (65535, "blob"), (16777215, "mediumblob"))
TEXT_BYTES: Final = {"tinytext": 255, "text": 65535, "mediumtext": 16777215,
                      "longtext": 4294967295}  # fmt: skip
_TO_BINARY: Final = {
    "char": "binary", "varchar": "varbinary", "tinytext": "tinyblob", "text": "blob",
    "mediumtext": "mediumblob", "longtext": "longblob",
}  # fmt: skip
_COMPRESSIBLE: Final = frozenset({"varchar", "varbinary"}) | TEXT_TYPES | BLOB_TYPES
MAX_VARCHAR_BYTES: Final = 65535


def kind_for_bytes(kind: str, nbytes: int) -> str:
    """The smallest TEXT kind (BLOB kind, when ``kind`` is one) that holds ``nbytes``."""
    sizes = _BLOB_SIZES if kind in BLOB_TYPES else _TEXT_SIZES
    for limit, name in sizes:
        if nbytes <= limit:
            return name
    return "longblob" if kind in BLOB_TYPES else "longtext"


def _label_text(param: exp.Expr) -> str:
    """A type parameter's text: a number or string as written; a hex or bit literal's
    bytes when they are ASCII (other bytes are no text this module can tell)."""
    if isinstance(param, (exp.HexString, exp.BitString)):
        digits = str(param.this)
        if isinstance(param, exp.HexString):
            raw = bytes.fromhex(digits if len(digits) % 2 == 0 else "0" + digits)
        else:
            raw = int(digits or "0", 2).to_bytes((len(digits) + 7) // 8, "big")
        if not raw.isascii():
            raise NotExactError("an ENUM/SET label of non-ASCII bytes")
        return raw.decode("ascii")
    return str(param.this)


class ColumnRules(RunState):
    """The column of a definition."""

    # -- columns ----------------------------------------------------------------------

    def column(
        self,
        node: exp.ColumnDef,
        table_cs: tuple[str, str] | None,
        convert: tuple[str, str] | None = None,
    ) -> tuple[ColumnDef, bool]:
        """The column of a definition, and whether it says PRIMARY KEY; ``convert``: the
        character set of a CONVERT TO in the same ALTER TABLE, which every character
        column takes whatever its definition says."""
        kind_node = node.args.get("kind")
        if not isinstance(kind_node, d.ColumnType):
            raise NotExactError("a column without a type")
        if self.oracle:
            raise NotExactError("MariaDB's sql_mode=ORACLE gives column types other meanings")
        name = node.name
        phrase = kind_node.this
        kind = _KINDS.get(phrase)
        if kind is None:
            raise NotExactError(f"column type {phrase}")
        if kind == "double" and phrase == "REAL" and self.real_as_float:
            kind = "float"
        if kind == "geometrycollection" and not self.ctx.mariadb:
            kind = "geomcollection"
        params = [_label_text(p) for p in kind_node.expressions]
        numbers = [int(p) for p in params] if kind not in ("enum", "set") else []
        unsigned = bool(kind_node.args.get("unsigned") or kind_node.args.get("zerofill"))
        nullable = True
        null_given = False
        forced_not_null = False
        generated = invisible = inline_pk = False
        compressed = bool(kind_node.args.get("compressed"))
        collate: str | None = None
        for attr in node.constraints:
            if not isinstance(attr, d.ColumnAttr):
                raise NotExactError(f"column attribute {type(attr).__name__}")
            what = attr.this
            if what == "NULL":
                nullable, null_given = True, True
            elif what == "NOT NULL":
                nullable, null_given = False, True
            elif what in ("AUTO_INCREMENT", "SERIAL DEFAULT VALUE"):
                forced_not_null = True
            elif what == "PRIMARY KEY":
                forced_not_null = inline_pk = True
            elif what == "COLLATE":
                collate = attr.expression.name
            elif what == "GENERATED":
                generated = True
            elif what == "INVISIBLE":
                invisible = True
            elif what == "VISIBLE":
                invisible = False
            elif what == "COMPRESSED":
                compressed = True
            elif what == "SYSTEM VERSIONING":
                raise NotExactError("system versioning of a column")
            elif what not in d.ATTRIBUTE_KINDS:
                raise NotExactError(f"column attribute {what}")
        if phrase == "SERIAL":
            unsigned = forced_not_null = True
        if kind == "timestamp" and not null_given and not generated:
            if self.ctx.explicit_defaults_for_timestamp is None:
                raise NotExactError(
                    "TIMESTAMP nullability with explicit_defaults_for_timestamp unknown"
                )
            if not self.ctx.explicit_defaults_for_timestamp:
                nullable = False
        if forced_not_null:
            nullable = False
        if unsigned and kind not in _SIGNED_KINDS:
            raise NotExactError(f"UNSIGNED {phrase}")
        if compressed and (not self.ctx.mariadb or kind not in _COMPRESSIBLE):
            raise NotExactError(f"COMPRESSED {phrase}")
        column = ColumnDef(
            name=name,
            data_type=kind,
            unsigned=unsigned,
            nullable=nullable,
            generated=generated,
            invisible=invisible,
            compressed=compressed,
        )
        column = self.sized(column, phrase, numbers, [str(p) for p in params])
        column = self.charset(column, kind_node, phrase, collate, table_cs, convert)
        return column, inline_pk

    def sized(
        self, column: ColumnDef, phrase: str, numbers: list[int], labels: list[str]
    ) -> ColumnDef:
        """``column`` with its length, precision, fsp or labels from the type's parameters."""
        kind = column.data_type
        n = len(numbers)
        if kind in ("enum", "set"):
            if not labels:
                raise NotExactError(f"{phrase} without members")
            return replace(column, labels=tuple(labels))
        if kind in INTEGER_KINDS or kind == "year":
            if n > 1:
                raise NotExactError(f"{phrase} with {n} parameters")
            return column
        if kind == "decimal":
            if n > 2:
                raise NotExactError(f"{phrase} with {n} parameters")
            precision = numbers[0] if n else 10
            scale = numbers[1] if n > 1 else 0
            if precision == 0:
                precision = 10  # DECIMAL(0) is DECIMAL(10)
            return replace(column, precision=precision, scale=scale)
        if kind in ("float", "double"):
            if n > 2:
                raise NotExactError(f"{phrase} with {n} parameters")
            if kind == "float" and n == 1:
                if numbers[0] > 53:
                    raise NotExactError(f"FLOAT({numbers[0]})")
                if numbers[0] > 24:
                    return replace(column, data_type="double")
            return column
        if kind == "bit":
            if n > 1:
                raise NotExactError(f"{phrase} with {n} parameters")
            return replace(column, length=numbers[0] if n else 1)
        if kind in _TEMPORAL:
            if n > 1 or (n and numbers[0] > 6):
                raise NotExactError(f"{phrase}{tuple(numbers)}")
            return replace(column, fsp=numbers[0] if n else 0)
        if kind in ("char", "binary"):
            if n > 1 or (n and numbers[0] > 255):
                raise NotExactError(f"{phrase}{tuple(numbers)}")
            return replace(column, length=numbers[0] if n else 1)
        if kind in ("varchar", "varbinary", "vector"):
            if n != 1:
                raise NotExactError(f"{phrase} needs one length")
            return replace(column, length=numbers[0])
        if kind in TEXT_TYPES or kind in BLOB_TYPES:
            if n > 1:
                raise NotExactError(f"{phrase} with {n} parameters")
            if n and phrase in ("TEXT", "BLOB"):
                # TEXT(n) / BLOB(n): the smallest kind that holds n characters / bytes;
                # the bytes of TEXT(n) are counted when the character set is known
                return replace(column, length=numbers[0])
            if n:
                raise NotExactError(f"{phrase}({numbers[0]})")
            return column
        if n:
            raise NotExactError(f"{phrase} with parameters")
        return column

    def charset(
        self,
        column: ColumnDef,
        kind_node: d.ColumnType,
        phrase: str,
        collate: str | None,
        table_cs: tuple[str, str] | None,
        convert: tuple[str, str] | None = None,
    ) -> ColumnDef:
        """``column`` with its character set and collation (and the binary type a
        ``CHARACTER SET binary`` makes of a character type)."""
        kind = column.data_type
        charset: str | None = kind_node.args.get("charset")
        binary = bool(kind_node.args.get("binary"))
        if phrase in _NATIONAL:
            if charset is not None:
                raise NotExactError(f"{phrase} with a character set")
            charset = "utf8mb3"
        if kind == "json" and self.ctx.mariadb:
            # MariaDB: JSON is LONGTEXT CHARSET utf8mb4 COLLATE utf8mb4_bin (COLLATE may change it)
            if charset is not None or binary:
                raise NotExactError("JSON with a character set")
            collation = self.cs.collation_name(collate) if collate else "utf8mb4_bin"
            if self.cs.charset_of(collation) != "utf8mb4":
                raise NotExactError(f"JSON with collation {collation}")
            json_cs = convert if convert is not None else ("utf8mb4", collation)
            return replace(column, data_type="longtext", charset=json_cs[0], collation=json_cs[1])
        text_length = (
            column.length if kind in ("text", "blob") and phrase in ("TEXT", "BLOB") else None
        )
        if kind in ("text", "blob"):
            column = replace(column, length=None)
        if kind not in _CHARACTER:
            if charset is not None or binary or collate is not None:
                raise NotExactError(f"a character set or collation for {phrase}")
            if text_length is not None:
                column = replace(column, data_type=kind_for_bytes(kind, text_length))
            return column
        if collate is not None or charset is not None:
            resolved = self.cs.resolve(charset, collate)
            assert resolved is not None
            cs, coll = resolved
            if binary and (collate is None or not self.ctx.mariadb):
                coll = self.cs.bin_collation(cs)  # MySQL: BINARY wins over COLLATE
            elif binary and not coll.endswith("_bin"):
                raise NotExactError(f"BINARY with COLLATE {coll}")  # MariaDB refuses it
        else:
            if table_cs is None:
                raise NotExactError("the table's default character set is not known")
            cs, coll = table_cs
            if binary:
                coll = self.cs.bin_collation(cs)
        if convert is not None and cs != "binary":
            if column.labels and not all(label.isascii() for label in column.labels):
                raise NotExactError("non-ASCII ENUM/SET labels defined with CONVERT TO")
            cs, coll = convert
            if binary:
                coll = self.cs.bin_collation(cs)
        if column.labels and cs != "binary":
            # the server drops trailing spaces of the members (not of binary ones)
            column = replace(column, labels=tuple(x.rstrip(" ") for x in column.labels))
        if cs == "binary":
            if kind in ("enum", "set"):
                if not all(label.isascii() for label in column.labels):
                    # their bytes are kept; information_schema shows each non-ASCII one as ?
                    raise NotExactError("non-ASCII ENUM/SET labels in the binary character set")
                if self.ctx.mariadb:
                    return replace(column, charset="binary", collation="binary")
                return column
            kind = _TO_BINARY[kind]
            column = replace(column, data_type=kind)
            if text_length is not None:
                column = replace(column, data_type=kind_for_bytes(kind, text_length))
            return column
        if text_length is not None:
            column = replace(
                column, data_type=kind_for_bytes(kind, text_length * self.cs.maxlen(cs))
            )
        if kind == "varchar" and (column.length or 0) * self.cs.maxlen(cs) > MAX_VARCHAR_BYTES:
            raise NotExactError(f"VARCHAR({column.length}) in {cs} passes 65535 bytes")
        if column.labels:
            column = replace(column, labels=self.cs.labels_in(column.labels, cs, coll))
        return replace(column, charset=cs, collation=coll)
