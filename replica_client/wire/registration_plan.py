"""The registration plans: the commands a replica sends between its login and the dump. No I/O.

Once authenticated, the connection (:class:`~.registration.RegistrationMachine`)
runs a plan of steps (:data:`MARIADB_PLAN`, :data:`MYSQL_PLAN`), each a command
whose reply is an OK or a result set, as a real replica does (MariaDB KB
"Replication protocol"; ``sql/slave.cc``):

    SELECT UNIX_TIMESTAMP()                       primary's clock
    SHOW VARIABLES LIKE 'SERVER_ID'               refuse the primary's own id
    SET @master_heartbeat_period=<ns>
    SET @master_binlog_checksum=@@global.binlog_checksum
    SELECT @master_binlog_checksum                negotiated checksum
    SET @mariadb_slave_capability=4               real GTID events, not BEGIN
    SELECT @@GLOBAL.gtid_domain_id
    [SELECT @@GLOBAL.gtid_binlog_pos]             start='now'
    [SET @slave_connect_state='...' and the GTID mode variables]
    COM_REGISTER_SLAVE
    [SHOW VARIABLES LIKE 'rpl_semi_sync_master_enabled', SET @rpl_semi_sync_slave=1]
    COM_BINLOG_DUMP / COM_BINLOG_DUMP_GTID        then the stream

Every value put into SQL is validated first (file names and GTIDs by their
types, numbers by type), so nothing from the caller can inject SQL.

Steps read the settings and record what the primary said in a
:class:`RegistrationContext`.
"""

from __future__ import annotations

import uuid
from collections.abc import Callable
from dataclasses import dataclass
from enum import Enum
from typing import Final

from ..errors import ConfigError, ProtocolError, UnsupportedError
from ..position import FilePos, Gtid, MysqlGtidSet
from .constants import BinlogDumpFlag
from .packets import (
    ResultSet,
    build_binlog_dump,
    build_binlog_dump_gtid,
    build_query,
    build_register_slave,
)
from .registration_settings import RegistrationSettings

__all__ = [
    "MARIADB_PLAN",
    "MYSQL_PLAN",
    "Flavor",
    "RegistrationContext",
    "Step",
    "StepReply",
    "dump_command",
]

#: MariaDB: send real GTID events (``MARIA_SLAVE_CAPABILITY_GTID``).
_MARIA_SLAVE_CAPABILITY: Final = 4


class Flavor(Enum):
    """Which server family the greeting announced."""

    MARIADB = "mariadb"
    MYSQL = "mysql"


@dataclass(slots=True)
class RegistrationContext:
    """Values learned while registering (read by the plan steps)."""

    settings: RegistrationSettings
    flavor: Flavor = Flavor.MARIADB
    primary_timestamp: int | None = None
    primary_server_id: int | None = None
    crc32: bool = False
    gtid_domain_id: int | None = None
    start: FilePos | Gtid | MysqlGtidSet | None = None
    semi_sync_available: bool = False
    semi_sync: bool = False


StepReply = ResultSet | None  # None: an OK packet


@dataclass(frozen=True, slots=True)
class Step:
    """One registration command: ``build`` returns the payload (None = skip the step),
    ``handle`` checks the reply. ``result_set`` says whether a result set is expected."""

    name: str
    build: Callable[[RegistrationContext], bytes | None]
    handle: Callable[[RegistrationContext, StepReply], None] | None = None
    result_set: bool = False


# -- step helpers ------------------------------------------------------------------------


def _q(sql: str) -> Callable[[RegistrationContext], bytes | None]:
    payload = build_query(sql)
    return lambda ctx: payload


def _int_value(reply: StepReply, what: str, column: int = 0) -> int | None:
    if reply is None or not reply.rows:
        return None
    row = reply.rows[0]
    if len(row) <= column:
        raise ProtocolError(f"{what}: a reply row of {len(row)} columns, expected {column + 1}")
    text = row[column]
    if text is None:
        return None
    try:
        return int(text)
    except ValueError as exc:
        raise ProtocolError(f"{what}: expected a number, got {text!r}") from exc


def _on_timestamp(ctx: RegistrationContext, reply: StepReply) -> None:
    ctx.primary_timestamp = _int_value(reply, "UNIX_TIMESTAMP()")


def _on_server_id(ctx: RegistrationContext, reply: StepReply) -> None:
    ctx.primary_server_id = _int_value(reply, "SERVER_ID", 1)
    if ctx.primary_server_id == ctx.settings.server_id:
        raise ConfigError(
            f"server_id {ctx.settings.server_id} is the primary's own server_id; a replica "
            "must use an id that differs from the primary's and from every other replica's"
        )


def _heartbeat(ctx: RegistrationContext) -> bytes | None:
    if ctx.settings.heartbeat_period <= 0:
        return None
    ns = int(ctx.settings.heartbeat_period * 1e9)
    if ctx.flavor is Flavor.MYSQL:
        return build_query(f"SET @master_heartbeat_period={ns}, @source_heartbeat_period={ns}")
    return build_query(f"SET @master_heartbeat_period={ns}")


def _on_checksum(ctx: RegistrationContext, reply: StepReply) -> None:
    value = reply.scalar() if reply is not None else None
    if value is None or value.upper() == "NONE":
        ctx.crc32 = False
    elif value.upper() == "CRC32":
        ctx.crc32 = True
    else:
        raise UnsupportedError(f"the primary uses binlog_checksum={value!r}; only CRC32/NONE")


def _on_domain(ctx: RegistrationContext, reply: StepReply) -> None:
    ctx.gtid_domain_id = _int_value(reply, "gtid_domain_id")


def _resolve_now(ctx: RegistrationContext) -> bytes | None:
    if ctx.settings.start != "now":
        return None
    if ctx.flavor is Flavor.MYSQL:
        return build_query("SELECT @@GLOBAL.gtid_executed")
    return build_query("SELECT @@GLOBAL.gtid_binlog_pos")


def _on_now(ctx: RegistrationContext, reply: StepReply) -> None:
    text = (reply.scalar() if reply is not None else None) or ""
    if ctx.flavor is Flavor.MYSQL:
        ctx.start = MysqlGtidSet(text)
    else:
        ctx.start = Gtid(text)


def _mariadb_gtid(ctx: RegistrationContext) -> Gtid | None:
    return ctx.start if isinstance(ctx.start, Gtid) else None


def _connect_state(ctx: RegistrationContext) -> bytes | None:
    gtid = _mariadb_gtid(ctx)
    if gtid is None:
        return None
    # Gtid has validated and normalised the text: digits, '-' and ',' only.
    return build_query(f"SET @slave_connect_state='{gtid}'")


def _flag_var(name: str, attr: str) -> Callable[[RegistrationContext], bytes | None]:
    def build(ctx: RegistrationContext) -> bytes | None:
        value = getattr(ctx.settings, attr)
        if _mariadb_gtid(ctx) is None or value is None:
            return None
        return build_query(f"SET @{name}={int(bool(value))}")

    return build


def _replica_uuid(ctx: RegistrationContext) -> bytes | None:
    text = ctx.settings.replica_uuid or str(
        uuid.uuid5(uuid.NAMESPACE_OID, f"replica-client-{ctx.settings.server_id}")
    )
    text = str(uuid.UUID(text))  # validated: hex digits and dashes only
    return build_query(f"SET @slave_uuid='{text}', @replica_uuid='{text}'")


def _register(ctx: RegistrationContext) -> bytes | None:
    s = ctx.settings
    return build_register_slave(
        server_id=s.server_id,
        report_host=s.report_host,
        report_user=s.report_user,
        report_port=s.report_port,
    )


def _semi_sync_check(ctx: RegistrationContext) -> bytes | None:
    # A non-blocking dump is a one-off read, not a replica a commit should wait
    # for; MariaDB also leaves semi-sync dump threads hanging when such a dump
    # ends, so semi-sync is only negotiated for blocking dumps.
    if ctx.settings.semi_sync == "off" or not ctx.settings.blocking:
        return None
    if ctx.flavor is Flavor.MYSQL:
        return build_query("SHOW VARIABLES LIKE 'rpl_semi_sync_%_enabled'")
    return build_query("SHOW VARIABLES LIKE 'rpl_semi_sync_master_enabled'")


def _on_semi_sync_check(ctx: RegistrationContext, reply: StepReply) -> None:
    rows = reply.rows if reply is not None else ()
    ctx.semi_sync_available = any(
        (name or "").lower() in ("rpl_semi_sync_master_enabled", "rpl_semi_sync_source_enabled")
        and (value or "").upper() in ("ON", "1")
        for name, value, *_ in rows
    )
    if not ctx.semi_sync_available and ctx.settings.semi_sync == "on":
        raise UnsupportedError(
            "semi_sync='on' but the primary does not have semi-sync enabled "
            "(rpl_semi_sync_master_enabled=OFF); enable it there or use semi_sync='auto'"
        )


def _semi_sync_enable(ctx: RegistrationContext) -> bytes | None:
    if not ctx.semi_sync_available:
        return None
    ctx.semi_sync = True
    if ctx.flavor is Flavor.MYSQL:
        return build_query("SET @rpl_semi_sync_replica=1, @rpl_semi_sync_slave=1")
    return build_query("SET @rpl_semi_sync_slave=1")


def dump_command(ctx: RegistrationContext) -> bytes:
    s = ctx.settings
    flags = 0 if s.blocking else BinlogDumpFlag.NON_BLOCK
    if s.annotate_rows and ctx.flavor is Flavor.MARIADB:
        flags |= BinlogDumpFlag.SEND_ANNOTATE_ROWS_EVENT
    start = ctx.start
    if isinstance(start, MysqlGtidSet):
        return build_binlog_dump_gtid(server_id=s.server_id, gtid_set=start.encode(), flags=flags)
    if isinstance(start, FilePos):
        return build_binlog_dump(
            server_id=s.server_id, file=start.file, position=start.pos, flags=flags
        )
    # MariaDB GTID start (state set above) or the first binlog: empty name, position 4.
    return build_binlog_dump(server_id=s.server_id, file="", position=4, flags=flags)


#: MariaDB's registration, in order (``sql/slave.cc: get_master_version_and_clock``,
#: ``request_dump``).
MARIADB_PLAN: Final[tuple[Step, ...]] = (
    Step("unix_timestamp", _q("SELECT UNIX_TIMESTAMP()"), _on_timestamp, result_set=True),
    Step("server_id", _q("SHOW VARIABLES LIKE 'SERVER_ID'"), _on_server_id, result_set=True),
    Step("heartbeat", _heartbeat),
    Step("checksum_set", _q("SET @master_binlog_checksum=@@global.binlog_checksum")),
    Step("checksum_get", _q("SELECT @master_binlog_checksum"), _on_checksum, result_set=True),
    Step("capability", _q(f"SET @mariadb_slave_capability={_MARIA_SLAVE_CAPABILITY}")),
    Step("domain_id", _q("SELECT @@GLOBAL.gtid_domain_id"), _on_domain, result_set=True),
    Step("now", _resolve_now, _on_now, result_set=True),
    Step("connect_state", _connect_state),
    Step("strict_mode", _flag_var("slave_gtid_strict_mode", "gtid_strict_mode")),
    Step("ignore_dups", _flag_var("slave_gtid_ignore_duplicates", "gtid_ignore_duplicates")),
    Step("register", _register),
    Step("semi_sync_check", _semi_sync_check, _on_semi_sync_check, result_set=True),
    Step("semi_sync_enable", _semi_sync_enable),
)

#: MySQL's registration (``sql/rpl_replica.cc``), with both old and new variable names.
MYSQL_PLAN: Final[tuple[Step, ...]] = (
    Step("unix_timestamp", _q("SELECT UNIX_TIMESTAMP()"), _on_timestamp, result_set=True),
    Step("server_id", _q("SHOW VARIABLES LIKE 'SERVER_ID'"), _on_server_id, result_set=True),
    Step("heartbeat", _heartbeat),
    Step(
        "checksum_set",
        _q(
            "SET @master_binlog_checksum=@@global.binlog_checksum, "
            "@source_binlog_checksum=@@global.binlog_checksum"
        ),
    ),
    Step("checksum_get", _q("SELECT @master_binlog_checksum"), _on_checksum, result_set=True),
    Step("replica_uuid", _replica_uuid),
    Step("now", _resolve_now, _on_now, result_set=True),
    Step("register", _register),
    Step("semi_sync_check", _semi_sync_check, _on_semi_sync_check, result_set=True),
    Step("semi_sync_enable", _semi_sync_enable),
)
