"""The transaction tracker: places, boundaries and GTID state, on real and made-up streams.

Real bytes first: the server's own next file says what the state was at the end
of the previous one (MariaDB's GTID_LIST), and every fixture binlog with GTIDs
must end with every group closed and the executed set holding each of them.
Then the rules one by one on hand-made event sequences: standalone DDL, MySQL's
GTID + BEGIN, XA, anonymous GTIDs, a transaction cut off by a crash, GTID_LIST
and PREVIOUS_GTIDS, compressed MySQL transactions.
"""

from __future__ import annotations

from collections.abc import Iterable
from pathlib import Path

import pytest

import replica_client as rc
from replica_client.binlog.events import (
    AnonymousGtidEvent,
    Event,
    GtidEvent,
    GtidListEvent,
    GtidSetEntry,
    HeartbeatEvent,
    MysqlGtidEvent,
    PreviousGtidsEvent,
    QueryEvent,
    RotateEvent,
    TransactionPayloadEvent,
    WriteRowsEvent,
    XaPrepareEvent,
    XidEvent,
)
from replica_client.binlog.header import EventHeader
from replica_client.binlog.transactions import Checkpoint, TransactionTracker
from replica_client.position import FilePos, Gtid, GtidTriple, MysqlGtidSet
from tests.binlog_files import FIXTURES

SID = "3e11fa47-71ca-11e1-9e33-c80aa9429562"


def _walk(paths: Iterable[Path]) -> tuple[TransactionTracker, list[Event]]:
    tracker = TransactionTracker()
    events = []
    with rc.open_binlog(list(paths)) as reader:
        for event in reader:
            tracker.observe(event)
            events.append(event)
    return tracker, events


def test_mariadb_state_at_a_files_end_is_the_next_files_gtid_list() -> None:
    directory = FIXTURES / "mariadb-operator-poc" / "domain_id_0"
    tracker, _ = _walk([directory / "mariadb-repl-bin.000004"])
    assert not tracker.in_group
    with rc.open_binlog(directory / "mariadb-repl-bin.000005") as reader:
        gtid_list = next(e for e in reader if isinstance(e, GtidListEvent))
    assert tracker.gtid_state == Gtid(",".join(str(g) for g in gtid_list.gtids))


# Files that stop inside a transaction (the server crashed or the test cut them).
_UNFINISHED = {
    "mysql-cdc-rs/5.7/02_query/log.bin",
    "osheroff-mysql-binlog-connector-java/mysql-bin.aurora-padding",
    "rust_mysql_common/binlog_truncated_event.000001",
}


def _gtid_files() -> list[Path]:
    names = [
        "apecloud-mysql-binlog-connector-rust/mysql-bin.000057",
        "apecloud-mysql-binlog-connector-rust/mysql-bin.000080",
        "go-parse/mysql-bin.000012",
        "mysql-cdc-rs/5.7/16_xid/log.bin",
        "mysql-cdc-rs/5.7/32_delete_rows_v2/log.bin",
        "mysql-cdc-rs/5.7/34_anonymous_gtid/log.bin",
        "osheroff-mysql-binlog-connector-java/mysql-bin.compressed",
        "rust_mysql_common/binlog-invisible-columns.000001",
        "rust_mysql_common/binlog_56_gtid_reserved_word.000001",
        "rust_mysql_common/binlog_transaction_with_GTID.000001",
        "rust_mysql_common/binlog_transaction_with_GTID_TAG.000001",
        "rust_mysql_common/rpl_atomic_ddl_rollback_full.000001",
        "rust_mysql_common/transaction_compression.000001",
        "mariadb-operator-poc/domain_id_0/mariadb-repl-bin.000005",
        "rust_mysql_common/mariadb-bin.000001",
    ]
    return [FIXTURES / n for n in names]


@pytest.mark.parametrize("path", _gtid_files(), ids=lambda p: p.relative_to(FIXTURES).as_posix())
def test_every_group_of_a_real_binlog_closes_and_lands_in_the_state(path: Path) -> None:
    tracker, events = _walk([path])
    assert not tracker.in_group
    state = tracker.gtid_state
    mysql = [e for e in events if type(e) is MysqlGtidEvent]
    mariadb = [e for e in events if isinstance(e, GtidEvent)]
    if mysql:
        assert isinstance(state, MysqlGtidSet)
        for event in mysql:
            assert event.gtid in state
        previous = [e for e in events if isinstance(e, PreviousGtidsEvent)]
        assert MysqlGtidSet(previous[0].gtid_set).missing_from(state) == MysqlGtidSet("")
    elif mariadb:
        assert isinstance(state, Gtid)
        last = {e.domain_id: e.triple for e in mariadb}
        for triple in last.values():
            assert triple in state.triples


def test_groups_close_exactly_where_the_server_put_the_transaction_ends() -> None:
    # go-parse/mysql-bin.000012: 123 GTID transactions of MySQL 5.7 (GTID, BEGIN,
    # rows..., XID); a boundary after exactly each XID and each lone statement.
    tracker = TransactionTracker()
    ends = []
    with rc.open_binlog(FIXTURES / "go-parse" / "mysql-bin.000012") as reader:
        for event in reader:
            if tracker.observe(event) and isinstance(event, XidEvent | QueryEvent):
                ends.append(type(event).__name__)
    assert ends.count("XidEvent") == 123


# -- the rules, one by one, on hand-made sequences -----------------------------------


def _h(type_code: int = 0, log_pos: int = 0, size: int = 30, flags: int = 0) -> EventHeader:
    return EventHeader(0, type_code, 1, size, log_pos, flags)


def _mariadb_gtid(seq: int, *, domain: int = 0, standalone: bool = False) -> GtidEvent:
    flags = GtidEvent.FL_STANDALONE if standalone else GtidEvent.FL_TRANSACTIONAL
    return GtidEvent(_h(162), domain, seq, flags)


def _mysql_gtid(gno: int, tag: str | None = None) -> MysqlGtidEvent:
    return MysqlGtidEvent(_h(33), 0, SID, gno, tag)


def _query(text: str) -> QueryEvent:
    return QueryEvent(_h(2), 1, 0, 0, "db", text)


def _xid() -> XidEvent:
    return XidEvent(_h(16), 7)


def _rows() -> WriteRowsEvent:
    table = rc.TableMapEvent(_h(19), 1, 0, "db", "t", ())
    return WriteRowsEvent(_h(30), 1, 1, table, 0, b"", ())


def _run(events: Iterable[Event], tracker: TransactionTracker | None = None) -> list[bool]:
    t = tracker if tracker is not None else TransactionTracker()
    return [t.observe(e) for e in events]


def test_mariadb_transaction_and_standalone_ddl() -> None:
    t = TransactionTracker(gtid_state=Gtid("0-1-5"))
    assert _run([_mariadb_gtid(6), _rows(), _xid()], t) == [False, False, True]
    assert _run([_mariadb_gtid(7, standalone=True), _query("CREATE TABLE x (a INT)")], t) == [
        False,
        True,
    ]
    assert t.gtid_state == Gtid("0-1-7")
    assert t.gtid == "0-1-7"


def test_mysql_gtid_opens_the_group_before_begin() -> None:
    t = TransactionTracker(gtid_state=MysqlGtidSet(f"{SID}:1-5"))
    # a DML transaction: no boundary between the GTID event and BEGIN
    assert _run([_mysql_gtid(6), _query("BEGIN"), _rows(), _xid()], t) == [
        False,
        False,
        False,
        True,
    ]
    # a DDL stands alone
    assert _run([_mysql_gtid(7), _query("CREATE TABLE x (a INT)")], t) == [False, True]
    assert t.gtid_state == MysqlGtidSet(f"{SID}:1-7")
    assert t.gtid == f"{SID}:7"


def test_mysql_anonymous_gtid_groups_close_too() -> None:
    t = TransactionTracker()
    anonymous = AnonymousGtidEvent(_h(34), 0, SID, 0)
    assert _run([anonymous, _query("BEGIN"), _rows(), _xid()], t) == [False, False, False, True]
    assert t.gtid is None
    assert t.gtid_state == Gtid("")  # unknown MySQL state: cannot start a MySQL dump


def test_mysql_tagged_gtids_and_gaps_in_the_executed_set() -> None:
    t = TransactionTracker(gtid_state=MysqlGtidSet(f"{SID}:1-3"))
    _run([_mysql_gtid(9), _query("CREATE TABLE a (x INT)")], t)
    _run([_mysql_gtid(1, "batch"), _query("CREATE TABLE b (x INT)")], t)
    _run([_mysql_gtid(4), _query("CREATE TABLE c (x INT)")], t)
    assert str(t.gtid_state) == f"{SID}:1-4:9:batch:1"


def test_xa_transactions() -> None:
    t = TransactionTracker()
    prepared = XaPrepareEvent(_h(38), False, 1, b"g", b"")
    assert _run([_mariadb_gtid(1), _query("XA START X'67',X'',1"), _rows(), prepared], t)[-1]
    assert _run([_mariadb_gtid(2), _query("XA COMMIT X'67',X'',1")], t) == [False, True]
    assert _run([_query("XA START X'68',X'',1"), _rows(), _query("XA ROLLBACK X'68'")], t) == [
        False,
        False,
        True,
    ]


def test_a_group_cut_off_by_a_crash_never_lands_in_the_state() -> None:
    t = TransactionTracker(gtid_state=Gtid("0-1-1"))
    _run([_mariadb_gtid(2), _rows()], t)  # the server crashed before the XID
    assert _run([_mariadb_gtid(3), _rows(), _xid()], t)[-1]
    assert t.gtid_state == Gtid("0-1-3")
    t = TransactionTracker(gtid_state=MysqlGtidSet(f"{SID}:1"))
    _run([_mysql_gtid(2), _query("BEGIN"), _rows()], t)
    _run([_mysql_gtid(3), _query("BEGIN"), _rows(), _xid()], t)
    assert t.gtid_state == MysqlGtidSet(f"{SID}:1:3")


def test_gtid_list_adds_unknown_domains_only_outside_a_group() -> None:
    t = TransactionTracker(gtid_state=Gtid("0-1-10"))
    listed = GtidListEvent(_h(163), (GtidTriple(0, 1, 4), GtidTriple(3, 2, 8)))
    assert _run([listed], t) == [True]
    assert t.gtid_state == Gtid("0-1-10,3-2-8")
    _run([_mariadb_gtid(11)], t)
    _run([GtidListEvent(_h(163), (GtidTriple(5, 1, 1),))], t)
    assert t.gtid_state == Gtid("0-1-10,3-2-8")


def test_previous_gtids_seed_an_unknown_mysql_state() -> None:
    t = TransactionTracker()
    unknown = t.gtid_state
    assert unknown == Gtid("")
    previous = PreviousGtidsEvent(_h(35), (GtidSetEntry(SID, "", ((1, 5),)),))
    _run([previous, _mysql_gtid(6), _query("BEGIN"), _xid()], t)
    known = t.gtid_state
    assert known == MysqlGtidSet(f"{SID}:1-6")


def test_compressed_mysql_transaction_inner_events() -> None:
    t = TransactionTracker(gtid_state=MysqlGtidSet(f"{SID}:1"))
    payload = TransactionPayloadEvent(_h(40), 0, 10, 20, ())
    inner = [_query("BEGIN"), _rows(), _xid()]
    assert _run([_mysql_gtid(2), payload, *inner], t) == [False, False, False, False, True]
    assert t.gtid_state == MysqlGtidSet(f"{SID}:1-2")


# -- places of a replication stream ----------------------------------------------------


def test_places_follow_log_pos_rotate_and_zero_positions() -> None:
    # step: (file, start, end, countable, boundary)
    t = TransactionTracker(FilePos("mysql-bin.000001", 4))
    rotate = RotateEvent(_h(4, 0, 44, flags=0x20), 4, "mysql-bin.000002")
    assert t.step(rotate.header, rotate) == ("mysql-bin.000001", 4, 48, False, True)
    assert (t.file, t.pos) == ("mysql-bin.000002", 4)
    fde = _h(15, 0, 120)  # re-sent FDE of a dump starting past 4: no place
    assert t.step(fde, None) == ("mysql-bin.000002", 4, 4, False, True)
    assert t.step(_h(162, 300, 42), None) == ("mysql-bin.000002", 4, 300, True, True)
    # MariaDB 11.4+: log_pos 0 inside a transaction means start + size
    assert t.step(_h(19, 0, 60), None) == ("mysql-bin.000002", 300, 360, True, True)
    beat = HeartbeatEvent(_h(27, 0, 40, flags=0x20), "mysql-bin.000002")
    assert t.step(beat.header, beat) == ("mysql-bin.000002", 360, 360, False, True)
    assert (t.file, t.pos) == ("mysql-bin.000002", 360)


def test_step_places_and_observes_in_one_call() -> None:
    t = TransactionTracker(FilePos("mysql-bin.000001", 4))
    begin = _query("BEGIN")
    assert t.step(begin.header, begin)[3:] == (True, False)  # the group is open
    assert t.in_group
    xid = _xid()
    assert t.step(xid.header, xid)[3:] == (True, True)  # and closed
    assert not t.in_group


def test_checkpoints_are_values_and_reused_while_nothing_moves() -> None:
    t = TransactionTracker(FilePos("b.000001", 4), Gtid("0-1-1"))
    first = t.checkpoint()
    assert t.checkpoint() is first
    _run([_mariadb_gtid(2), _xid()], t)
    second = t.checkpoint()
    assert second != first
    assert second == Checkpoint("b.000001", 4, {0: GtidTriple(0, 1, 2)})
    assert second.position == FilePos("b.000001", 4)
    assert second.gtid_state == Gtid("0-1-2")
    assert first.gtid_state == Gtid("0-1-1")  # earlier checkpoints keep their state
