"""The format of the log being decoded: what a body decoder may know of it. No I/O.

A :class:`BinlogFormat` is what the log's FORMAT_DESCRIPTION_EVENT says about
every event after it (binlog v4), or what the rules of MySQL Internals
"Binlog Versions" say for v1/v3 logs, which have none: the binlog version, the
common-header length, the checksum algorithm, the flavour (MariaDB or MySQL)
and the post-header length of every event type. It is a value: the decoder
makes a new one when the format changes (an FDE, a legacy log's first event),
never changes one.

Every body decoder of the dispatch table (``decoder.DECODERS``) is called as
``fn(fmt, header, view, pos, end)``: ``fmt`` is the current format, ``pos``
the first byte after the common header, ``end`` where the body stops (before
the checksum trailer). The stateless ones see nothing else of the decoder.

Post-header lengths: the FDE lists one per type (``post_header_lengths``,
index 0 = type 1); a type it does not list, or lists as 0, takes the length
the server itself writes for it (:data:`DEFAULT_POST_HEADER_LENS`, from
MySQL ``Format_description_event::Format_description_event`` and MariaDB
``Format_description_log_event``), the one table of those defaults.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Final

from .constants import EVENT_HEADER_LEN, BinlogChecksumAlg, EventType
from .header import EventHeader

if TYPE_CHECKING:
    from .events import Event

__all__ = ["DEFAULT_POST_HEADER_LENS", "BinlogFormat", "BodyDecoder", "resolve_post_header_lens"]

E = EventType

#: Post-header length of the types whose decoders read one, as servers write them.
DEFAULT_POST_HEADER_LENS: Final[dict[int, int]] = {
    E.QUERY_EVENT: 13,
    E.ROTATE_EVENT: 8,
    E.LOAD_EVENT: 18,
    E.CREATE_FILE_EVENT: 4,
    E.APPEND_BLOCK_EVENT: 4,
    E.NEW_LOAD_EVENT: 18,
    E.BEGIN_LOAD_QUERY_EVENT: 4,
    E.EXECUTE_LOAD_QUERY_EVENT: 26,
    E.TABLE_MAP_EVENT: 8,
    E.PRE_GA_WRITE_ROWS_EVENT: 8,
    E.PRE_GA_UPDATE_ROWS_EVENT: 8,
    E.PRE_GA_DELETE_ROWS_EVENT: 8,
    E.WRITE_ROWS_EVENT_V1: 8,
    E.UPDATE_ROWS_EVENT_V1: 8,
    E.DELETE_ROWS_EVENT_V1: 8,
    E.INCIDENT_EVENT: 2,
    E.WRITE_ROWS_EVENT: 10,
    E.UPDATE_ROWS_EVENT: 10,
    E.DELETE_ROWS_EVENT: 10,
    E.TRANSACTION_CONTEXT_EVENT: 18,
    E.VIEW_CHANGE_EVENT: 52,
    E.PARTIAL_UPDATE_ROWS_EVENT: 10,
    E.QUERY_COMPRESSED_EVENT: 13,
    E.WRITE_ROWS_COMPRESSED_EVENT_V1: 8,
    E.UPDATE_ROWS_COMPRESSED_EVENT_V1: 8,
    E.DELETE_ROWS_COMPRESSED_EVENT_V1: 8,
    E.WRITE_ROWS_COMPRESSED_EVENT: 10,
    E.UPDATE_ROWS_COMPRESSED_EVENT: 10,
    E.DELETE_ROWS_COMPRESSED_EVENT: 10,
}


def resolve_post_header_lens(listed: Iterable[int] = ()) -> tuple[int, ...]:
    """Post-header length of every type code 0-255.

    ``listed`` is an FDE's list (index 0 = type 1); a type it does not list, or
    lists as 0, takes its default.
    """
    lens = [DEFAULT_POST_HEADER_LENS.get(code, 0) for code in range(256)]
    for code, n in enumerate(listed, start=1):
        if n and code < 256:
            lens[code] = n
    return tuple(lens)


_DEFAULT_LENS: Final = resolve_post_header_lens()


@dataclass(frozen=True, slots=True)
class BinlogFormat:
    """The format of the events being decoded (see the module docstring).

    Attributes:
        binlog_version: 4, or 1/3 for a MySQL 3.23/4.0 log.
        header_len: the common-header length: 19, or 13 in a v1 log.
        checksum_alg: a :class:`BinlogChecksumAlg` value: CRC32 trailers or none.
        mariadb: the log was written by MariaDB (some layouts differ by flavour).
        post_header_lens: post-header length by type code (0-255), defaults filled in.
        pre_ga: written by a MySQL 5.1/5.2 pre-GA tree, which numbered types
            16-22 differently (``legacy.PRE_GA_PERMUTATION``).
        old_table_map: TABLE_MAPs without column metadata or null bitmap (pre-GA, v1/v3).
    """

    binlog_version: int = 4
    header_len: int = EVENT_HEADER_LEN
    checksum_alg: int = BinlogChecksumAlg.UNDEF
    mariadb: bool = True
    post_header_lens: tuple[int, ...] = _DEFAULT_LENS
    pre_ga: bool = False
    old_table_map: bool = False

    @property
    def crc32(self) -> bool:
        """Events end with a CRC32 trailer."""
        return self.checksum_alg == BinlogChecksumAlg.CRC32

    def post_header_len(self, type_code: int) -> int:
        """The post-header length of ``type_code`` in this format."""
        return self.post_header_lens[type_code]


#: Signature of a stateless entry of the dispatch table: decodes the body of
#: one event between ``pos`` and ``end`` in format ``fmt``.
BodyDecoder = Callable[[BinlogFormat, EventHeader, memoryview, int, int], "Event"]
