"""The control layer's procedures and failover rule, driven by scripted answers.

Each procedure is run by :func:`drive` against a script: the statements it must
send, in order, and the rows (or error) each gets. What the primary would
answer is taken from the servers' documented result shapes (``SHOW BINARY LOG
STATUS`` has the executed set in its fifth column); the live check of the same
procedures against the three servers is tests/integration/test_control_live.py.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import pytest

from replica_client.control.primary import (
    NO_BINLOG,
    BinlogEnd,
    FailoverChoice,
    PrimaryState,
    ServerFacts,
    binlog_end,
    primary_state,
    server_facts,
    snapshot_point,
)
from replica_client.control.procedure import (
    Answer,
    Query,
    QueryFailed,
    ScanQueries,
    drive,
    text_rows,
    tolerated,
)
from replica_client.errors import (
    FailoverError,
    LostTransactionsError,
    ServerError,
    SnapshotError,
    server_error,
)
from replica_client.position import FilePos, Gtid, MysqlGtidSet

MARIADB = ServerFacts("11.8.9-MariaDB-0+deb13u1", True, {"binlog_row_metadata": "FULL"})
MYSQL = ServerFacts("9.7.4", False, {"gtid_mode": "ON"})
UUID = "3e11fa47-71ca-11e1-9e33-c80aa9429562"


class Script:
    """Answers statements in the order given; records what was asked."""

    def __init__(self, *steps: tuple[str, Any]) -> None:
        self.steps = list(steps)
        self.asked: list[str] = []

    def __call__(self, request: Query | ScanQueries) -> Answer:
        assert isinstance(request, Query)
        sql = request.sql % request.args if request.args else request.sql
        self.asked.append(sql)
        assert self.steps, f"unexpected statement {sql!r}"
        want, answer = self.steps.pop(0)
        assert sql == want, f"asked {sql!r}, the script expected {want!r}"
        if isinstance(answer, Exception):
            if (failed := tolerated(request, answer)) is not None:
                return failed
            raise answer
        rows: list[tuple[Any, ...]] = answer
        return rows

    def finished(self) -> bool:
        return not self.steps


def test_server_facts_decide_the_flavour_from_the_version() -> None:
    script = Script(
        ("SELECT VERSION()", [("10.11.6-MariaDB-log",)]),
        (
            "SHOW GLOBAL VARIABLES WHERE Variable_name IN ('server_id', 'binlog_format', "
            "'binlog_row_metadata', 'binlog_row_image', 'binlog_checksum', 'log_bin', "
            "'read_only', 'gtid_mode', 'rpl_semi_sync_master_enabled', "
            "'rpl_semi_sync_source_enabled', 'collation_server', "
            "'explicit_defaults_for_timestamp')",
            [
                ("Server_id", "7"),
                ("binlog_format", "mixed"),
                ("rpl_semi_sync_master_enabled", "ON"),
            ],
        ),
    )
    facts = drive(server_facts(), script)
    assert facts.mariadb and facts.server_id == 7 and facts.binlog_format == "MIXED"
    assert facts.row_metadata == "NO_LOG"  # a server without the variable writes none
    assert facts.semi_sync_enabled and facts.major_minor == (10, 11)
    assert script.finished()


def test_mariadb_binlog_end_exact_asks_the_state_at_the_position() -> None:
    loose = Script(
        ("SHOW MASTER STATUS", [("mariadb-bin.000003", 1234, "", "")]),
        ("SELECT @@GLOBAL.gtid_binlog_pos", [("0-1-9",)]),
    )
    assert drive(binlog_end(MARIADB), loose) == BinlogEnd(
        FilePos("mariadb-bin.000003", 1234), Gtid("0-1-9")
    )
    exact = Script(
        ("SHOW MASTER STATUS", [("mariadb-bin.000003", 1234, "", "")]),
        ("SELECT BINLOG_GTID_POS(mariadb-bin.000003, 1234)", [("0-1-8",)]),
    )
    assert drive(binlog_end(MARIADB, exact=True), exact).gtid == Gtid("0-1-8")
    assert loose.finished() and exact.finished()


def test_mysql_binlog_end_takes_the_executed_set_of_the_status_row() -> None:
    status = [("binlog.000002", 155, "", "", f"{UUID}:1-5,\n{UUID[:-1]}3:1")]
    end = drive(binlog_end(MYSQL), Script(("SHOW BINARY LOG STATUS", status)))
    assert end.position == FilePos("binlog.000002", 155)
    assert end.gtid == MysqlGtidSet(f"{UUID}:1-5,{UUID[:-1]}3:1")
    # gtid_mode OFF: anonymous transactions, no set to resume by
    off = ServerFacts("9.7.4", False, {"gtid_mode": "OFF"})
    assert not drive(binlog_end(off), Script(("SHOW BINARY LOG STATUS", status))).gtid


def test_binlog_end_without_the_privilege_has_no_position() -> None:
    denied = server_error(1227, "42000", "Access denied; you need BINLOG MONITOR")
    script = Script(
        ("SHOW BINARY LOG STATUS", denied),
        ("SELECT @@GLOBAL.gtid_executed", [(f"{UUID}:1-3",)]),
    )
    end = drive(binlog_end(MYSQL, exact=True), script)
    assert end.position is None and end.gtid == MysqlGtidSet(f"{UUID}:1-3")
    # an error the query does not tolerate is raised
    other = server_error(1064, "42000", "syntax")
    with pytest.raises(ServerError):
        drive(binlog_end(MYSQL), Script(("SHOW BINARY LOG STATUS", other)))


#: The read lock, with its wait for running commits cut short, then restored.
_WAIT: tuple[tuple[str, list[tuple[object, ...]]], ...] = (
    ("SET SESSION lock_wait_timeout = 1", []),
    ("FLUSH TABLES WITH READ LOCK", []),
    ("SET SESSION lock_wait_timeout = DEFAULT", []),
)


def test_mysql_snapshot_point_unlocks_even_when_the_transaction_fails() -> None:
    failed = server_error(1205, "HY000", "Lock wait timeout exceeded")
    script = Script(
        *_WAIT,
        ("START TRANSACTION WITH CONSISTENT SNAPSHOT", failed),
        ("UNLOCK TABLES", []),
    )
    with pytest.raises(ServerError) as caught:
        drive(snapshot_point(MYSQL), script)
    assert caught.value is failed and script.finished()
    good = Script(
        *_WAIT,
        ("START TRANSACTION WITH CONSISTENT SNAPSHOT", []),
        ("SHOW BINARY LOG STATUS", [("binlog.000001", 900, "", "", f"{UUID}:1-2")]),
        ("UNLOCK TABLES", []),
    )
    point = drive(snapshot_point(MYSQL), good)
    assert point == BinlogEnd(FilePos("binlog.000001", 900), MysqlGtidSet(f"{UUID}:1-2"))
    # no status row (log_bin off): a typed error, and the lock is released first
    off = Script(
        *_WAIT,
        ("START TRANSACTION WITH CONSISTENT SNAPSHOT", []),
        ("SHOW BINARY LOG STATUS", []),
        ("SELECT @@GLOBAL.gtid_executed", [("",)]),
        ("UNLOCK TABLES", []),
    )
    with pytest.raises(SnapshotError, match="log_bin"):
        drive(snapshot_point(MYSQL), off)
    assert off.finished()


def test_mysql_snapshot_lock_gives_way_to_running_commits() -> None:
    """A commit can hold the read lock off while it waits for this replica's semi-sync
    ACK, which only the stream's progress sends: the lock waits 1 s, then the answer
    is None (ask again), and the session's lock_wait_timeout is restored."""
    busy = server_error(1205, "HY000", "Lock wait timeout exceeded")
    script = Script(
        ("SET SESSION lock_wait_timeout = 1", []),
        ("FLUSH TABLES WITH READ LOCK", busy),
        ("SET SESSION lock_wait_timeout = DEFAULT", []),
    )
    assert drive(snapshot_point(MYSQL), script) is None
    assert script.finished()
    # another refusal is raised
    denied = server_error(1227, "42000", "Access denied; you need the RELOAD privilege")
    script = Script(
        ("SET SESSION lock_wait_timeout = 1", []),
        ("FLUSH TABLES WITH READ LOCK", denied),
    )
    with pytest.raises(ServerError) as caught:
        drive(snapshot_point(MYSQL), script)
    assert caught.value is denied and script.finished()


def test_mariadb_snapshot_point_is_the_transactions_own() -> None:
    script = Script(
        ("START TRANSACTION WITH CONSISTENT SNAPSHOT", []),
        (
            "SHOW STATUS LIKE 'binlog_snapshot_%'",
            [("Binlog_snapshot_file", "mariadb-bin.000002"), ("Binlog_snapshot_position", "77")],
        ),
        ("SELECT BINLOG_GTID_POS(mariadb-bin.000002, 77)", [("0-1-4,1-1-2",)]),
    )
    point = drive(snapshot_point(MARIADB), script)
    assert point == BinlogEnd(FilePos("mariadb-bin.000002", 77), Gtid("0-1-4,1-1-2"))
    # the GTID state of a point asked before is not asked again (the server reads the
    # binlog file from its start for it); a new point's is
    known: dict[FilePos, Gtid] = {}
    for position, asks in ((77, True), (77, False), (90, True)):
        steps: list[tuple[str, Any]] = [
            ("START TRANSACTION WITH CONSISTENT SNAPSHOT", []),
            (
                "SHOW STATUS LIKE 'binlog_snapshot_%'",
                [
                    ("Binlog_snapshot_file", "mariadb-bin.000002"),
                    ("Binlog_snapshot_position", str(position)),
                ],
            ),
        ]
        gtid = f"0-1-{position}"
        if asks:
            steps.append((f"SELECT BINLOG_GTID_POS(mariadb-bin.000002, {position})", [(gtid,)]))
        script = Script(*steps)
        point = drive(snapshot_point(MARIADB, known), script)
        assert point == BinlogEnd(FilePos("mariadb-bin.000002", position), Gtid(gtid))
        assert not script.steps and len(script.asked) == (3 if asks else 2)
    off = Script(
        ("START TRANSACTION WITH CONSISTENT SNAPSHOT", []),
        ("SHOW STATUS LIKE 'binlog_snapshot_%'", [("Binlog_snapshot_file", "")]),
    )
    with pytest.raises(SnapshotError) as caught:
        drive(snapshot_point(MARIADB), off)
    assert str(caught.value) == NO_BINLOG


def test_primary_state_of_each_flavour() -> None:
    maria = Script(
        ("SELECT VERSION()", [("11.8.9-MariaDB",)]),
        (
            "SELECT @@GLOBAL.read_only, @@GLOBAL.gtid_binlog_pos, @@GLOBAL.gtid_binlog_state",
            [(0, "0-2-10", "0-1-9,0-2-10")],
        ),
    )
    state = drive(primary_state(), maria)
    assert not state.read_only and state.gtid_state == Gtid("0-2-10")
    assert state.binlog_state is not None and len(state.binlog_state) == 2
    mysql = Script(
        ("SELECT VERSION()", [("9.7.4",)]),
        (
            "SELECT @@GLOBAL.read_only, @@GLOBAL.super_read_only, @@GLOBAL.gtid_executed",
            [(0, 1, f"{UUID}:1-4")],
        ),
    )
    state = drive(primary_state(), mysql)
    assert state.read_only  # super_read_only alone makes it a replica
    assert state.gtid_state == MysqlGtidSet(f"{UUID}:1-4")


def test_drive_raises_what_the_procedure_lets_out_and_returns_its_value() -> None:
    def procedure() -> Any:
        try:
            rows = yield Query("SELECT 1")
        except LookupError:
            return "handled"
        return rows

    assert drive(procedure(), lambda q: [(1,)]) == [(1,)]

    def fails(request: Query | ScanQueries) -> Answer:
        raise LookupError("no row")

    assert drive(procedure(), fails) == "handled"


def test_text_rows_and_tolerated() -> None:
    assert text_rows([(b"mariadb-bin.000001", 4, None, b"\xe9")]) == [
        ("mariadb-bin.000001", 4, None, "é")  # bytes that are not UTF-8: latin-1
    ]

    class DriverError(Exception):  # a client driver's error: (errno, message)
        pass

    request = Query("SHOW MASTER STATUS", tolerate=frozenset({1227}))
    assert tolerated(request, DriverError(1227, "denied")) == QueryFailed(1227, "denied")
    assert tolerated(request, DriverError(1064, "syntax")) is None
    assert tolerated(request, server_error(1227, "42000", "no")) == QueryFailed(1227, "no")
    assert tolerated(request, OSError("reset")) is None


# -- who takes over ------------------------------------------------------------------------


def _state(read_only: bool = False, gtid: str = "0-1-5") -> PrimaryState:
    return PrimaryState("11.8.9-MariaDB", True, read_only, Gtid(gtid))


def _missing(state: PrimaryState) -> Sequence[str]:
    have = (
        {t.domain: t.seq for t in state.gtid_state.triples}
        if isinstance(state.gtid_state, Gtid)
        else {}
    )
    return () if have.get(0, 0) >= 5 else ("0-1-5",)


def test_failover_candidates_start_after_the_lost_host() -> None:
    hosts = ("a:1", "b:2", "c:3", "d:4")
    assert FailoverChoice(hosts, "c:3", _missing).candidates == ("d:4", "a:1", "b:2")
    assert FailoverChoice(hosts, "a:1", _missing).candidates == ("b:2", "c:3", "d:4")
    # a lost host not in the list (a DSN alias): every configured host, in order
    assert FailoverChoice(hosts, "x:9", _missing).candidates == hosts


def test_failover_passes_over_replicas_and_refuses_a_primary_that_lacks_transactions() -> None:
    cause = ConnectionResetError("primary gone")
    choice = FailoverChoice(("a:1", "b:2", "c:3"), "a:1", _missing, cause)
    assert not choice.accepts("b:2", _state(read_only=True))
    with pytest.raises(LostTransactionsError) as caught:
        choice.accepts("c:3", _state(gtid="0-1-4"))
    assert caught.value.host == "c:3" and caught.value.missing == ("0-1-5",)
    assert caught.value.__cause__ is cause
    assert choice.accepts("c:3", _state(gtid="0-1-6"))


def test_failover_error_lists_every_host_tried() -> None:
    choice = FailoverChoice(("a:1", "b:2", "c:3"), "a:1", _missing)
    choice.passed_over("b:2", "connection refused")
    assert not choice.accepts("c:3", _state(read_only=True))
    error = choice.error()
    assert isinstance(error, FailoverError)
    assert str(error) == (
        "the primary a:1 was lost and no other host could take over: "
        "b:2: connection refused; c:3: read-only (not a primary)"
    )
    assert str(FailoverChoice(("a:1",), "a:1", _missing).error()).endswith("no other host")
