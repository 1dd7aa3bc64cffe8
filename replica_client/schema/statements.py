"""What a QueryEvent's statement is, and which tables a row-changing one writes. No I/O.

:func:`classify` sorts a statement into :class:`StatementKind`: transaction
control, table DDL (what :func:`~.ddl.interpret` may give an effect for), a
statement that changes rows when the binlog logs it as SQL text, or the rest.
It runs for every QueryEvent of a stream, so "BEGIN" and "COMMIT" are a dict
lookup, and other statements are told by their leading keywords (executable
comments opened, comments skipped) before anything is tokenized.

:func:`written_tables` reads the target tables of a row-changing statement
with the grammar of :mod:`.dialect` (sqlglot's MySQL dialect, extended).

Rules (conservative: a statement that *may* write rows is ROWS):

- SELECT, DO, SET, VALUES, TABLE and WITH statements are ROWS when they may
  call a stored function (a function can write rows): any call of a name
  that is not one of the servers' built-in functions, or of a qualified or
  quoted name; else OTHER. CALL, EXECUTE, compound statements (BEGIN NOT
  ATOMIC, IF, WHILE, ...) are ROWS.
- The tables a statement writes are those it names as targets: a view named
  there writes its base table, and a trigger on a target may write others;
  neither is visible in the text. A statement that may call a stored function
  gives None (it may write any table).
"""

from __future__ import annotations

import enum
import re
from typing import Final

from sqlglot import Token, TokenType, exp

from . import dialect as d

__all__ = ["StatementKind", "classify", "written_tables"]


class StatementKind(enum.Enum):
    """The kind of a QueryEvent's statement."""

    #: BEGIN, COMMIT, ROLLBACK [TO SAVEPOINT], SAVEPOINT, RELEASE SAVEPOINT, XA, START TRANSACTION.
    TRANSACTION = "transaction"
    #: DDL of tables, indexes, sequences and databases.
    TABLE_DDL = "table_ddl"
    #: A statement that changes (or may change) rows.
    ROWS = "rows"
    #: Anything else (grants, users, views, routines' definitions, FLUSH, ANALYZE TABLE...).
    OTHER = "other"


_T = StatementKind.TRANSACTION
_FAST: Final[dict[str, StatementKind]] = {
    q: _T
    for base in ("BEGIN", "COMMIT", "ROLLBACK", "START TRANSACTION", "BEGIN WORK", "COMMIT WORK")
    for q in (base, base.lower(), base + ";", base.lower() + ";")
}

#: Words skipped between CREATE/ALTER/DROP and what they define.
_CREATE_PREFIX: Final = frozenset(
    {"OR", "REPLACE", "TEMPORARY", "UNIQUE", "FULLTEXT", "SPATIAL", "VECTOR", "ONLINE",
     "OFFLINE", "IGNORE"}
)  # fmt: skip
_TABLE_OBJECTS: Final = frozenset({"TABLE", "TABLES", "SEQUENCE", "DATABASE", "SCHEMA", "INDEX"})
_ROW_VERBS: Final = frozenset({"INSERT", "REPLACE", "UPDATE", "DELETE", "LOAD", "CALL", "EXECUTE"})
#: Statements that change rows only through a function they call.
_MAY_CALL: Final = frozenset({"SELECT", "DO", "SET", "VALUES", "TABLE", "WITH", "("})
#: MariaDB compound statements outside a routine.
_COMPOUND: Final = frozenset({"IF", "WHILE", "REPEAT", "LOOP", "CASE", "FOR", "DECLARE"})
_WORD: Final = re.compile(r"[A-Za-z0-9_$]+")
#: What the leading words of a statement are read from, one match at a time.
_LEAD: Final = re.compile(
    r"(?P<word>[A-Za-z0-9_$]+)"
    r"|(?P<space>\s+)"
    r"|(?P<line>#[^\n]*|--(?:[ \t\r\f\v][^\n]*)?(?=\n|$))"
    r"|(?P<exec>/\*M?!\d{0,6})"
    r"|(?P<comment>/\*)"
    r"|(?P<end>\*/)"
    r"|(?P<other>.)",
    re.DOTALL,
)
#: Larger statements are not tokenized to find their targets (written_tables gives None).
_MAX_SCAN: Final = 4 << 20


def _leading_words(query: str, limit: int = 6) -> list[str]:
    """The first words of a statement, upper case: comments skipped, executable comments
    opened (whatever the version: only the kind of statement is wanted here); a quote or
    punctuation is a word of its own and ends the scan unless it is ``(``."""
    words: list[str] = []
    i, n = 0, len(query)
    match = _LEAD.match
    while i < n and len(words) < limit:
        m = match(query, i)
        assert m is not None  # the last alternative matches any character
        kind = m.lastgroup
        i = m.end()
        if kind == "word":
            words.append(m.group().upper())
        elif kind == "comment":
            j = query.find("*/", i)
            i = n if j < 0 else j + 2
        elif kind == "other":
            c = m.group()
            words.append(c)
            if c != "(":
                break
        # space, a line comment, an executable comment's opening or end: skipped
    return words


def classify(query: str) -> StatementKind:
    """The kind of a QueryEvent's statement."""
    kind = _FAST.get(query)
    if kind is not None:
        return kind
    words = _leading_words(query)
    if not words:
        return StatementKind.OTHER
    first = words[0]
    second = words[1] if len(words) > 1 else ""
    if first == "BEGIN":
        return StatementKind.ROWS if second == "NOT" else _T
    if first in ("COMMIT", "ROLLBACK", "SAVEPOINT", "XA"):
        return _T
    if first == "RELEASE" and second == "SAVEPOINT":
        return _T
    if first == "START":
        return _T if second == "TRANSACTION" else StatementKind.OTHER
    if first in ("CREATE", "ALTER", "DROP"):
        rest = [w for w in words[1:] if w not in _CREATE_PREFIX]
        if rest and rest[0] in _TABLE_OBJECTS:
            return StatementKind.TABLE_DDL
        return StatementKind.OTHER
    if first == "RENAME":
        return StatementKind.TABLE_DDL if second in ("TABLE", "TABLES") else StatementKind.OTHER
    if first == "TRUNCATE":
        return StatementKind.TABLE_DDL
    if first in _ROW_VERBS or first in _COMPOUND:
        return StatementKind.ROWS
    if first in _MAY_CALL:
        tokens = _tokens(query)
        if tokens is None or _may_call_stored(tokens, None):
            return StatementKind.ROWS
        if first == "WITH" and any(
            t.token_type in (TokenType.UPDATE, TokenType.DELETE, TokenType.INSERT) for t in tokens
        ):
            return StatementKind.ROWS
        return StatementKind.OTHER
    return StatementKind.OTHER


def written_tables(query: str, default_schema: str) -> tuple[tuple[str, str], ...] | None:
    """The (schema, table) pairs a row statement may write: an INSERT's or REPLACE's
    target (not the tables of its SELECT), every table an UPDATE or DELETE names as a
    target (a multi-table UPDATE: all the tables it joins), LOAD DATA/XML's table.

    None when they cannot be told: a statement that may call a stored function (it may
    write any table), CALL and the like, a text that does not read.
    """
    if classify(query) is not StatementKind.ROWS or len(query) > _MAX_SCAN:
        return None
    reading = d.read_dml(query)
    if reading is None:
        return None
    if _may_call_stored(reading.tokens, reading.columns_at):
        return None
    out: list[tuple[str, str]] = []
    for table in reading.targets:
        db = table.args.get("db")
        schema = db.name if isinstance(db, exp.Identifier) else default_schema
        if not schema:
            return None
        key = (schema, table.name)
        if key not in out:
            out.append(key)
    return tuple(out)


def _tokens(query: str) -> list[Token] | None:
    if len(query) > _MAX_SCAN:
        return None
    try:
        return list(d.dialect_for().tokenize(query))
    except Exception:  # sqlglot's TokenError, or anything its tokenizer raises
        return None


def _may_call_stored(tokens: list[Token], columns_at: int | None) -> bool:
    """Whether the statement calls a function that is not built in: a name followed by
    ``(`` that is neither a built-in function nor a keyword that takes parentheses, or a
    qualified or quoted name followed by ``(``."""
    for i in range(len(tokens) - 1):
        if tokens[i + 1].token_type != TokenType.L_PAREN or i + 1 == columns_at:
            continue
        tok = tokens[i]
        if tok.token_type == TokenType.IDENTIFIER:
            return True  # `f`(...): a quoted name is never a built-in function
        if tok.token_type in (TokenType.STRING, TokenType.NUMBER) or not _WORD.fullmatch(
            tok.text.replace(" ", "_")
        ):
            continue
        if i > 0 and tokens[i - 1].token_type == TokenType.DOT:
            return True  # db.f(...)
        name = tok.text.upper()
        if name in _BUILTINS or name in _PAREN_KEYWORDS or name.startswith(("ST_", "MBR")):
            continue
        if " " in name and all(part in _PAREN_KEYWORDS for part in name.split()):
            continue  # "ORDER BY (", "MEMBER OF (" and the like
        return True
    return False


#: Keywords that may be followed by a parenthesis without being a function call.
_PAREN_KEYWORDS: Final = frozenset(
    """
    VALUES VALUE IN EXISTS ANY SOME ALL AS USING ON AND OR NOT XOR WHERE SELECT FROM JOIN
    SET WHEN THEN ELSE CASE RETURNING ROW ROWS INTERVAL LIKE IS BETWEEN INTO TABLE WITH OVER
    PARTITION KEY INDEX PRIMARY UNIQUE FOREIGN REFERENCES CHECK UPDATE BY ORDER GROUP HAVING
    LIMIT UNION EXCEPT INTERSECT DISTINCT DISTINCTROW COLUMNS NESTED PATH LATERAL DIV REGEXP
    RLIKE SOUNDS AGAINST FOR LOCK SHARE ELSEIF WHILE UNTIL RETURN BINARY CHAR CHARACTER
    VARCHAR DECIMAL DEC NUMERIC SIGNED UNSIGNED INTEGER INT DATETIME TIME DATE DOUBLE FLOAT
    REAL JSON NCHAR VARBINARY YEAR FIXED STRAIGHT_JOIN DUPLICATE IGNORE FORCE USE MEMBER OF
    ESCAPE ASC DESC WINDOW RANGE PRECEDING FOLLOWING CURRENT INNER OUTER CROSS NATURAL LEFT
    RIGHT FULL DELETE INSERT REPLACE DO LOW_PRIORITY HIGH_PRIORITY DELAYED QUICK
    SQL_CALC_FOUND_ROWS SQL_NO_CACHE SQL_CACHE SQL_BUFFER_RESULT SQL_SMALL_RESULT
    SQL_BIG_RESULT RECURSIVE ARRAY ERROR EMPTY NULL TRUE FALSE UNKNOWN COLLATE
    """.split()  # noqa: SIM905
)

#: Functions built into MariaDB and MySQL (none of them writes rows of a table).
_BUILTINS: Final = frozenset(
    """
    ABS ACOS ADDDATE ADDTIME ADD_MONTHS AES_DECRYPT AES_ENCRYPT ANY_VALUE ASCII ASIN ATAN
    ATAN2 AVG BENCHMARK BIN BIN_TO_UUID BINLOG_GTID_POS BIT_AND BIT_COUNT BIT_LENGTH BIT_OR
    BIT_XOR CAST CEIL CEILING CHAR_LENGTH CHARACTER_LENGTH CHARSET CHR COALESCE COERCIBILITY
    COLLATION COLUMN_ADD COLUMN_CHECK COLUMN_CREATE COLUMN_DELETE COLUMN_EXISTS COLUMN_GET
    COLUMN_JSON COLUMN_LIST COMPRESS CONCAT CONCAT_WS CONNECTION_ID CONV CONVERT CONVERT_TZ
    COS COT COUNT CRC32 CRC32C CUME_DIST CURDATE CURRENT_DATE CURRENT_ROLE CURRENT_TIME
    CURRENT_TIMESTAMP CURRENT_USER CURTIME DATABASE DATE_ADD DATE_FORMAT DATE_SUB DATEDIFF
    DAY DAYNAME DAYOFMONTH DAYOFWEEK DAYOFYEAR DECODE DECODE_HISTOGRAM DEFAULT DEGREES
    DENSE_RANK DES_DECRYPT DES_ENCRYPT ELT ENCODE ENCRYPT EXP EXPORT_SET EXTRACT
    EXTRACTVALUE FIELD FIND_IN_SET FIRST_VALUE FLOOR FORMAT FORMAT_BYTES FORMAT_PICO_TIME
    FOUND_ROWS FROM_BASE64 FROM_DAYS FROM_UNIXTIME GEOMCOLLECTION GEOMETRYCOLLECTION
    GEOMFROMTEXT GEOMFROMWKB GET_FORMAT GET_LOCK GREATEST GROUP_CONCAT GROUPING GTID_SUBSET
    GTID_SUBTRACT HEX HOUR ICU_VERSION IF IFNULL INET_ATON INET_NTOA INET6_ATON INET6_NTOA
    INSTR IS_FREE_LOCK IS_IPV4 IS_IPV4_COMPAT IS_IPV4_MAPPED IS_IPV6 IS_USED_LOCK IS_UUID
    ISNULL JSON_ARRAY JSON_ARRAY_APPEND JSON_ARRAY_INSERT JSON_ARRAY_INTERSECT JSON_ARRAYAGG
    JSON_COMPACT JSON_CONTAINS JSON_CONTAINS_PATH JSON_DEPTH JSON_DETAILED JSON_EQUALS
    JSON_EXISTS JSON_EXTRACT JSON_INSERT JSON_KEY_VALUE JSON_KEYS JSON_LENGTH JSON_LOOSE
    JSON_MERGE JSON_MERGE_PATCH JSON_MERGE_PRESERVE JSON_NORMALIZE JSON_OBJECT
    JSON_OBJECT_FILTER_KEYS JSON_OBJECT_TO_ARRAY JSON_OBJECTAGG JSON_OVERLAPS JSON_PRETTY
    JSON_QUERY JSON_QUOTE JSON_REMOVE JSON_REPLACE JSON_SCHEMA_VALID
    JSON_SCHEMA_VALIDATION_REPORT JSON_SEARCH JSON_SET JSON_STORAGE_FREE JSON_STORAGE_SIZE
    JSON_TABLE JSON_TYPE JSON_UNQUOTE JSON_VALID JSON_VALUE KDF LAG LAST_DAY LAST_INSERT_ID
    LAST_VALUE LCASE LEAD LEAST LENGTH LENGTHB LINESTRING LN LOAD_FILE LOCALTIME
    LOCALTIMESTAMP LOCATE LOG LOG10 LOG2 LOWER LPAD LTRIM MAKE_SET MAKEDATE MAKETIME
    MASTER_GTID_WAIT MASTER_POS_WAIT MATCH MAX MD5 MEDIAN MICROSECOND MID MIN MINUTE MOD
    MONTH MONTHNAME MONTHS_BETWEEN MULTILINESTRING MULTIPOINT MULTIPOLYGON NAME_CONST
    NATURAL_SORT_KEY NOW NTH_VALUE NTILE NULLIF NVL NVL2 OCT OCTET_LENGTH OLD_PASSWORD ORD
    PASSWORD PERCENT_RANK PERCENTILE_CONT PERCENTILE_DISC PERIOD_ADD PERIOD_DIFF PI POINT
    POLYGON POSITION POW POWER PS_CURRENT_THREAD_ID PS_THREAD_ID QUARTER QUOTE RADIANS RAND
    RANDOM_BYTES RANK REGEXP_INSTR REGEXP_LIKE REGEXP_REPLACE REGEXP_SUBSTR
    RELEASE_ALL_LOCKS RELEASE_LOCK REPEAT REVERSE ROUND ROW_COUNT ROW_NUMBER RPAD RTRIM
    SCHEMA SEC_TO_TIME SECOND SESSION_USER SFORMAT SHA SHA1 SHA2 SIGN SIN SLEEP SOUNDEX
    SPACE SQRT STATEMENT_DIGEST STATEMENT_DIGEST_TEXT STD STDDEV STDDEV_POP STDDEV_SAMP
    STR_TO_DATE STRCMP STRING_TO_VECTOR SUBDATE SUBSTR SUBSTRING SUBSTRING_INDEX SUBTIME
    SUM SYS_GUID SYSDATE SYSTEM_USER TAN TIMEDIFF TIMESTAMP TIMESTAMPADD TIMESTAMPDIFF
    TIME_FORMAT TIME_TO_SEC TO_BASE64 TO_CHAR TO_DAYS TO_NUMBER TO_SECONDS TRIM TRUNCATE
    UCASE UNCOMPRESS UNCOMPRESSED_LENGTH UNHEX UNIX_TIMESTAMP UPDATEXML UPPER USER UTC_DATE
    UTC_TIME UTC_TIMESTAMP UUID UUID_SHORT UUID_TO_BIN UUID_V4 UUID_V7
    VALIDATE_PASSWORD_STRENGTH VAR_POP VAR_SAMP VARIANCE VEC_DISTANCE VEC_DISTANCE_COSINE
    VEC_DISTANCE_EUCLIDEAN VEC_FROMTEXT VEC_TOTEXT VECTOR_DIM VECTOR_TO_STRING VERSION
    WAIT_FOR_EXECUTED_GTID_SET WEEK WEEKDAY WEEKOFYEAR WEIGHT_STRING WSREP_LAST_SEEN_GTID
    WSREP_LAST_WRITTEN_GTID WSREP_SYNC_WAIT_UPTO_GTID YEARWEEK ASTEXT ASWKT ASBINARY ASWKB
    GEOMETRYFROMTEXT POINTFROMTEXT POLYFROMTEXT LINEFROMTEXT DISTANCE CONTAINS WITHIN
    INTERSECTS TOUCHES OVERLAPS CROSSES DISJOINT EQUALS ENVELOPE BUFFER CENTROID AREA
    GLENGTH ISEMPTY ISSIMPLE DIMENSION GEOMETRYTYPE SRID X Y NUMPOINTS POINTN STARTPOINT
    ENDPOINT NUMGEOMETRIES GEOMETRYN NUMINTERIORRINGS INTERIORRINGN EXTERIORRING
    """.split()  # noqa: SIM905
)
