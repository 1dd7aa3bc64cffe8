"""MySQL/MariaDB client-protocol constants. No I/O.

Names follow the server sources (``include/mysql_com.h``, MariaDB
``sql/sql_repl.cc``) so they can be looked up there; our own API elsewhere
says primary/replica.
"""

from __future__ import annotations

from enum import IntEnum, IntFlag
from typing import Final

__all__ = [
    "DEFAULT_CHARSET",
    "EOF_MARKER",
    "ERR_MARKER",
    "LOCAL_INFILE_MARKER",
    "MORE_DATA_MARKER",
    "OK_MARKER",
    "SEMI_SYNC_INDICATOR",
    "AuthSwitch",
    "BinlogDumpFlag",
    "Capability",
    "Command",
    "SemiSyncFlag",
    "ServerStatus",
]

#: utf8mb4_general_ci: the collation we ask for in the handshake response.
DEFAULT_CHARSET: Final = 45

#: First byte of an OK packet (and of every binlog event packet).
OK_MARKER: Final = 0x00
#: First byte of an ERR packet.
ERR_MARKER: Final = 0xFF
#: First byte of an EOF packet (when shorter than 9 bytes) and of an auth switch request.
EOF_MARKER: Final = 0xFE
#: First byte of an AuthMoreData packet.
MORE_DATA_MARKER: Final = 0x01
#: First byte of a LOCAL INFILE request (never expected here).
LOCAL_INFILE_MARKER: Final = 0xFB
#: First byte of the semi-sync header of an event packet, and of an ACK.
SEMI_SYNC_INDICATOR: Final = 0xEF


class Command(IntEnum):
    """Command bytes (``enum_server_command``) this client sends."""

    QUIT = 0x01
    QUERY = 0x03
    PING = 0x0E
    BINLOG_DUMP = 0x12
    REGISTER_SLAVE = 0x15
    BINLOG_DUMP_GTID = 0x1E


class Capability(IntFlag):
    """Client/server capability flags (``CLIENT_*``)."""

    LONG_PASSWORD = 0x1
    FOUND_ROWS = 0x2
    LONG_FLAG = 0x4
    CONNECT_WITH_DB = 0x8
    NO_SCHEMA = 0x10
    COMPRESS = 0x20
    ODBC = 0x40
    LOCAL_FILES = 0x80
    IGNORE_SPACE = 0x100
    PROTOCOL_41 = 0x200
    INTERACTIVE = 0x400
    SSL = 0x800
    IGNORE_SIGPIPE = 0x1000
    TRANSACTIONS = 0x2000
    RESERVED = 0x4000
    SECURE_CONNECTION = 0x8000
    MULTI_STATEMENTS = 0x10000
    MULTI_RESULTS = 0x20000
    PS_MULTI_RESULTS = 0x40000
    PLUGIN_AUTH = 0x80000
    CONNECT_ATTRS = 0x100000
    PLUGIN_AUTH_LENENC_CLIENT_DATA = 0x200000
    CAN_HANDLE_EXPIRED_PASSWORDS = 0x400000
    SESSION_TRACK = 0x800000
    DEPRECATE_EOF = 0x1000000


class ServerStatus(IntFlag):
    """Server status flags of OK/EOF packets (``SERVER_STATUS_*``), the ones we read."""

    IN_TRANS = 0x1
    AUTOCOMMIT = 0x2
    MORE_RESULTS_EXISTS = 0x8


class BinlogDumpFlag(IntFlag):
    """Flags of COM_BINLOG_DUMP / COM_BINLOG_DUMP_GTID."""

    #: ``BINLOG_DUMP_NON_BLOCK``: send EOF at the end of the log instead of waiting.
    NON_BLOCK = 0x01
    #: MariaDB ``BINLOG_SEND_ANNOTATE_ROWS_EVENT``: include ANNOTATE_ROWS events.
    SEND_ANNOTATE_ROWS_EVENT = 0x02
    #: MySQL ``BINLOG_THROUGH_GTID`` (COM_BINLOG_DUMP_GTID carries a GTID set).
    THROUGH_GTID = 0x04


class SemiSyncFlag(IntFlag):
    """Second byte of the semi-sync header of an event packet."""

    #: ``ReplSemiSyncBase::kPacketFlagSync``: the primary waits for an ACK of this event.
    SYNC = 0x01


class AuthSwitch(IntEnum):
    """Single-byte requests/answers inside caching_sha2/sha256 exchanges."""

    #: caching_sha2_password: client asks for the server's RSA public key.
    REQUEST_PUBLIC_KEY = 0x02
    #: sha256_password: client asks for the server's RSA public key.
    SHA256_REQUEST_PUBLIC_KEY = 0x01
    #: caching_sha2_password AuthMoreData: the scramble matched the cache.
    FAST_AUTH_SUCCESS = 0x03
    #: caching_sha2_password AuthMoreData: send the full password.
    PERFORM_FULL_AUTH = 0x04
