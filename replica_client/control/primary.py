"""What the primary is, where its binlog ends, and who takes over from it. No I/O.

The procedures (see :mod:`.procedure`) every layer asks the primary with:

- :func:`server_facts`: version, flavour (decided once, from the version text)
  and the global binlog settings;
- :func:`binlog_end`: the binlog's end now, file position and GTID state, as
  one consistent pair when ``exact``;
- :func:`binlog_files`: ``SHOW BINARY LOGS``;
- :func:`snapshot_point`: start a consistent-snapshot transaction and say the
  binlog point it reads at (MariaDB without a lock; MySQL under a brief global
  read lock, released in the procedure's ``finally``);
- :func:`primary_state`: writable or not, and the GTIDs it holds;

and :class:`FailoverChoice`, the one rule of which host takes over a lost
primary, for the asyncio stream and the Spark driver alike.
"""

from __future__ import annotations

import re
from collections.abc import Callable, MutableMapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Final

from ..codec import is_mariadb_version
from ..errors import FailoverError, LostTransactionsError, SnapshotError
from ..position import FilePos, Gtid, GtidTriple, MysqlGtidSet, parse_gtid_triples
from .procedure import ACCESS_DENIED, Procedure, Query, QueryFailed, one_row

__all__ = [
    "NO_BINLOG",
    "BinlogEnd",
    "FailoverChoice",
    "PrimaryState",
    "ServerFacts",
    "binlog_end",
    "binlog_files",
    "current_end",
    "primary_state",
    "server_facts",
    "snapshot_point",
]

#: The message when the binlog's end has no file position.
NO_BINLOG: Final = (
    "the primary's binlog position is unknown: it writes no binlog (log_bin is off), or "
    "the account lacks BINLOG MONITOR (MariaDB) / REPLICATION CLIENT (MySQL)"
)


@dataclass(frozen=True, slots=True)
class ServerFacts:
    """What a primary says about itself and how it writes its binlog.

    Attributes:
        version: ``SELECT VERSION()``.
        mariadb: the flavour, from the version text (the one place that decides it).
        variables: the global variables of :data:`_FACT_VARIABLES`, lower-case
            names, as text (absent when the server has no such variable).
    """

    version: str
    mariadb: bool
    variables: dict[str, str] = field(default_factory=dict)

    @property
    def major_minor(self) -> tuple[int, int]:
        m = re.match(r"(\d+)\.(\d+)", self.version)
        return (int(m[1]), int(m[2])) if m else (0, 0)

    @property
    def binlog_format(self) -> str:
        return self.variables.get("binlog_format", "").upper()

    @property
    def row_metadata(self) -> str:
        """FULL, MINIMAL or NO_LOG (a server without the variable writes none)."""
        return self.variables.get("binlog_row_metadata", "NO_LOG").upper() or "NO_LOG"

    @property
    def server_id(self) -> int:
        return int(self.variables.get("server_id", "0") or 0)

    @property
    def semi_sync_enabled(self) -> bool:
        """The primary waits for semi-sync ACKs (``rpl_semi_sync_master/source_enabled``)."""
        value = self.variables.get("rpl_semi_sync_master_enabled") or self.variables.get(
            "rpl_semi_sync_source_enabled", ""
        )
        return value.upper() in ("ON", "1")


_FACT_VARIABLES: Final = (
    "server_id",
    "binlog_format",
    "binlog_row_metadata",
    "binlog_row_image",
    "binlog_checksum",
    "log_bin",
    "read_only",
    "gtid_mode",
    "rpl_semi_sync_master_enabled",
    "rpl_semi_sync_source_enabled",
    "collation_server",
    "explicit_defaults_for_timestamp",
)


def server_facts() -> Procedure[ServerFacts]:
    """Version, flavour and the global binlog settings (no privilege beyond a login)."""
    version = str(one_row((yield Query("SELECT VERSION()")))[0])
    names = ", ".join(f"'{n}'" for n in _FACT_VARIABLES)
    rows = yield Query(f"SHOW GLOBAL VARIABLES WHERE Variable_name IN ({names})")
    variables = {str(name).lower(): "" if value is None else str(value) for name, value in rows}
    return ServerFacts(version, is_mariadb_version(version), variables)


# -- where the binlog ends ---------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class BinlogEnd:
    """The primary's binlog end at one moment: file position (None without the
    privilege to read it) and GTID state."""

    position: FilePos | None
    gtid: Gtid | MysqlGtidSet


def binlog_end(facts: ServerFacts, *, exact: bool = False) -> Procedure[BinlogEnd]:
    """The binlog's end now: ``SHOW MASTER STATUS`` (MariaDB) / ``SHOW BINARY LOG STATUS``
    (MySQL; needs BINLOG MONITOR / REPLICATION CLIENT, else the position is None) and the
    GTID state.

    MySQL's state is the status row's executed set (``@@gtid_executed`` without the
    privilege): the state at the position. MariaDB's is ``@@gtid_binlog_pos``, read
    after the position, so a transaction committed in between may be in it; with
    ``exact`` it is ``BINLOG_GTID_POS(file, pos)``, the state at the position (the
    server reads the binlog file up to it).
    """
    statement = "SHOW MASTER STATUS" if facts.mariadb else "SHOW BINARY LOG STATUS"
    rows = yield Query(statement, tolerate=ACCESS_DENIED)
    position = None
    if not isinstance(rows, QueryFailed) and rows:
        row = rows[0]
        position = FilePos(str(row[0]), int(row[1]))
        if not facts.mariadb and len(row) > 4:
            return BinlogEnd(position, _mysql_state(facts, row[4]))
    if facts.mariadb and exact and position is not None:
        query = Query("SELECT BINLOG_GTID_POS(%s, %s)", (position.file, position.pos))
        return BinlogEnd(position, Gtid(str(one_row((yield query))[0] or "")))
    variable = "gtid_binlog_pos" if facts.mariadb else "gtid_executed"
    text = one_row((yield Query(f"SELECT @@GLOBAL.{variable}")))[0]
    if facts.mariadb:
        return BinlogEnd(position, Gtid(str(text or "")))
    return BinlogEnd(position, _mysql_state(facts, text))


def current_end(*, exact: bool = False) -> Procedure[BinlogEnd]:
    """:func:`binlog_end` of a server not asked about yet (its facts first)."""
    facts = yield from server_facts()
    return (yield from binlog_end(facts, exact=exact))


def _mysql_state(facts: ServerFacts, text: Any) -> MysqlGtidSet:
    """A MySQL executed set as the status shows it (newlines between UUIDs); empty
    unless ``gtid_mode`` is ON (anonymous transactions have no place in a set)."""
    if facts.variables.get("gtid_mode", "ON").upper() != "ON":
        return MysqlGtidSet("")
    return MysqlGtidSet(str(text or "").replace("\n", ""))


def binlog_files() -> Procedure[list[tuple[str, int]]]:
    """``SHOW BINARY LOGS``: (file name, size) pairs, oldest first."""
    rows = yield Query("SHOW BINARY LOGS")
    return [(str(r[0]), int(r[1])) for r in rows]


#: Seconds a snapshot's ``FLUSH TABLES WITH READ LOCK`` (MySQL) waits for the commits
#: running: while it waits, every write on the primary waits behind it.
SNAPSHOT_LOCK_WAIT: Final = 1
#: ER_LOCK_WAIT_TIMEOUT.
_LOCK_WAIT_TIMEOUT: Final = frozenset({1205})


def snapshot_point(
    facts: ServerFacts, known: MutableMapping[FilePos, Gtid] | None = None
) -> Procedure[BinlogEnd | None]:
    """Start a consistent-snapshot transaction; the binlog point its reads stand at.

    MariaDB: the status variables ``binlog_snapshot_file`` / ``_position`` of the
    transaction, and ``BINLOG_GTID_POS()`` of them: exact, without a lock. The
    server reads the binlog file from its start for it, so the GTID states of points
    already asked are taken from ``known`` (and new ones kept there): a snapshot in
    chunks asks once for every chunk that finds the binlog where the last one did.
    MySQL: the transaction starts under ``FLUSH TABLES WITH READ LOCK`` (the account
    needs RELOAD), held while the binlog status is read: writes wait for that moment
    only. The lock waits for running commits at most :data:`SNAPSHOT_LOCK_WAIT`
    seconds; then the answer is None: ask again once the stream has moved on (a
    commit may be waiting for this replica's semi-sync ACK, which only the stream's
    progress sends).

    Raises:
        SnapshotError: the primary writes no binlog.
    """
    if facts.mariadb:
        yield Query("START TRANSACTION WITH CONSISTENT SNAPSHOT")
        status = {str(k): v for k, v in (yield Query("SHOW STATUS LIKE 'binlog_snapshot_%'"))}
        file = str(status.get("Binlog_snapshot_file") or "")
        if not file:
            raise SnapshotError(NO_BINLOG)
        point = FilePos(file, int(status.get("Binlog_snapshot_position") or 0))
        gtid = known.get(point) if known is not None else None
        if gtid is None:
            query = Query("SELECT BINLOG_GTID_POS(%s, %s)", (point.file, point.pos))
            gtid = Gtid(str(one_row((yield query))[0] or ""))
            if known is not None:
                known[point] = gtid
        return BinlogEnd(point, gtid)
    yield Query(f"SET SESSION lock_wait_timeout = {SNAPSHOT_LOCK_WAIT}")
    locked = yield Query("FLUSH TABLES WITH READ LOCK", tolerate=_LOCK_WAIT_TIMEOUT)
    yield Query("SET SESSION lock_wait_timeout = DEFAULT")
    if isinstance(locked, QueryFailed):
        return None
    try:
        yield Query("START TRANSACTION WITH CONSISTENT SNAPSHOT")
        end = yield from binlog_end(facts)
    finally:
        yield Query("UNLOCK TABLES")
    if end.position is None:
        raise SnapshotError(NO_BINLOG)
    return end


# -- the primary's state, and who takes over -----------------------------------------------------


@dataclass(frozen=True, slots=True)
class PrimaryState:
    """Whether a server can be streamed from as a primary, and what it has."""

    version: str
    is_mariadb: bool
    read_only: bool
    #: What its binlog holds: ``@@gtid_binlog_pos`` (MariaDB) or ``@@gtid_executed`` (MySQL).
    gtid_state: Gtid | MysqlGtidSet
    #: MariaDB ``@@gtid_binlog_state``: the last GTID of each domain and server in its binlog.
    binlog_state: tuple[GtidTriple, ...] | None = None


#: What :class:`PrimaryState` is read from, by flavour (is MariaDB -> SQL).
_STATE_SQL: Final = {
    True: "SELECT @@GLOBAL.read_only, @@GLOBAL.gtid_binlog_pos, @@GLOBAL.gtid_binlog_state",
    False: "SELECT @@GLOBAL.read_only, @@GLOBAL.super_read_only, @@GLOBAL.gtid_executed",
}


def primary_state() -> Procedure[PrimaryState]:
    """Flavour, read-only flag and GTID state (no privilege needed beyond a login)."""
    version = str(one_row((yield Query("SELECT VERSION()")))[0])
    mariadb = is_mariadb_version(version)
    row = one_row((yield Query(_STATE_SQL[mariadb])))
    if mariadb:
        held = parse_gtid_triples(str(row[2] or ""))
        return PrimaryState(version, True, bool(int(row[0])), Gtid(str(row[1] or "")), held)
    read_only = bool(int(row[0])) or bool(int(row[1]))
    executed = MysqlGtidSet(str(row[2] or "").replace("\n", ""))
    return PrimaryState(version, False, read_only, executed)


class FailoverChoice:
    """Which host takes over from the lost primary: the rule, without the I/O.

    The candidates are the other configured hosts in order, starting after the
    lost one. The driver probes each (its :class:`PrimaryState`) and says what it
    found: a host that cannot be reached, or is read-only, is passed over with its
    reason; a writable one that lacks delivered transactions ends the failover
    (:class:`LostTransactionsError`: taking it over would lose them); any other is
    taken (:meth:`accepts`). When the driver cannot start streaming from a taken
    host, it says so (:meth:`passed_over`) and goes on to the next. :meth:`error`
    is what to raise when no host is left.

    Args:
        addresses: every configured host (``host:port``), in the configured order.
        lost: the host that was lost.
        missing: the delivered GTIDs a state lacks (empty: it has them all).
        cause: the failure that lost the primary (the errors' cause).
    """

    def __init__(
        self,
        addresses: Sequence[str],
        lost: str,
        missing: Callable[[PrimaryState], Sequence[str]],
        cause: BaseException | None = None,
    ) -> None:
        index = addresses.index(lost) if lost in addresses else -1
        self.lost = lost
        self.candidates: tuple[str, ...] = (*addresses[index + 1 :], *addresses[: max(index, 0)])
        self.tried: list[str] = []
        self._missing = missing
        self._cause = cause

    def passed_over(self, address: str, reason: object) -> None:
        """``address`` cannot take over (unreachable, refused, failed to stream)."""
        self.tried.append(f"{address}: {reason}")

    def accepts(self, address: str, state: PrimaryState) -> bool:
        """Whether ``address``, in ``state``, takes over.

        Raises:
            LostTransactionsError: it is writable but lacks delivered transactions.
        """
        if state.read_only:
            self.passed_over(address, "read-only (not a primary)")
            return False
        missing = tuple(self._missing(state))
        if missing:
            raise LostTransactionsError(address, missing) from self._cause
        return True

    def error(self) -> FailoverError:
        """No host could take over."""
        return FailoverError(
            f"the primary {self.lost} was lost and no other host could take over: "
            + "; ".join(self.tried or ["no other host"])
        )
