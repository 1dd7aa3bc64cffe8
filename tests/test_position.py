"""replica_client.position: which delivered transactions a would-be primary lacks."""

from __future__ import annotations

import pytest

from replica_client.errors import ConfigError
from replica_client.position import (
    FilePos,
    Gtid,
    GtidTriple,
    MysqlGtidSet,
    PositionMaker,
    missing_transactions,
    parse_gtid_triples,
)

SID = "3e11fa47-71ca-11e1-9e33-c80aa9429562"


def test_binlog_state_lists_a_domain_once_per_server() -> None:
    assert parse_gtid_triples("0-1-307, 0-2-315,1-1-4") == (
        GtidTriple(0, 1, 307),
        GtidTriple(0, 2, 315),
        GtidTriple(1, 1, 4),
    )
    assert parse_gtid_triples("") == ()
    with pytest.raises(ConfigError, match="invalid MariaDB GTID"):
        parse_gtid_triples("0-1")


def test_a_promoted_replica_that_wrote_past_a_delivered_gtid_still_lacks_it() -> None:
    # The stream delivered 0-1-308 from the old primary; the replica never received
    # it, was promoted and wrote 0-2-308.. itself: by sequence number it looks ahead.
    delivered = Gtid("0-1-308")
    recent = [GtidTriple(0, 1, 306), GtidTriple(0, 1, 307), GtidTriple(0, 1, 308)]
    position = Gtid("0-2-315")
    assert missing_transactions(delivered, position, recent) == ()  # what the position says
    held = parse_gtid_triples("0-1-307,0-2-315")
    assert missing_transactions(delivered, position, recent, held) == ("0-1-308",)


def test_a_replica_that_received_everything_lacks_nothing() -> None:
    held = parse_gtid_triples("0-1-308,0-2-315")
    assert missing_transactions(Gtid("0-1-308"), Gtid("0-2-315"), (), held) == ()
    held = parse_gtid_triples("0-1-310")
    assert missing_transactions(Gtid("0-1-308"), Gtid("0-1-310"), (), held) == ()


def test_lacking_transactions_are_named_from_the_recent_ones_or_as_a_range() -> None:
    recent = [GtidTriple(0, 1, s) for s in range(300, 309)] + [GtidTriple(1, 5, 9)]
    held = parse_gtid_triples("0-1-305,1-5-9")
    assert missing_transactions(Gtid("0-1-308,1-5-9"), Gtid("0-1-305,1-5-9"), recent, held) == (
        "0-1-306",
        "0-1-307",
        "0-1-308",
    )
    # the recent ones no longer reach back to what the replica has
    recent = [GtidTriple(0, 1, 307), GtidTriple(0, 1, 308)]
    held = (GtidTriple(0, 1, 300),)
    assert missing_transactions(Gtid("0-1-308"), Gtid("0-1-300"), recent, held) == (
        "0-*-301..306",
        "0-1-307",
        "0-1-308",
    )
    # a domain the replica never saw
    assert missing_transactions(Gtid("2-1-3"), Gtid("0-1-300"), (), []) == ("2-*-1..2", "2-1-3")


def test_without_the_binlog_state_sequence_numbers_decide() -> None:
    assert missing_transactions(Gtid("0-1-308"), Gtid("0-1-305")) == ("0-*-306..308",)
    assert missing_transactions(Gtid("0-1-308"), Gtid("0-2-308")) == ("0-1-308",)
    assert missing_transactions(Gtid("0-1-308"), Gtid("0-1-309")) == ()


def test_mysql_sets_are_compared_exactly() -> None:
    delivered = MysqlGtidSet(f"{SID}:1-10")
    assert missing_transactions(delivered, MysqlGtidSet(f"{SID}:1-10")) == ()
    assert missing_transactions(delivered, MysqlGtidSet(f"{SID}:1-7")) == (f"{SID}:8-10",)
    assert missing_transactions(delivered, Gtid("0-1-5")) == (f"{SID}:1-10",)


def test_position_maker_checks_what_filepos_checks() -> None:
    make = PositionMaker().make
    name = "mariadb-bin.000012"
    for pos in (0, 4, 12345, (1 << 64) - 1):
        made = make(name, pos)
        assert type(made) is FilePos
        assert made == FilePos(name, pos) and hash(made) == hash(FilePos(name, pos))
        assert made.file is name and str(made) == f"{name}:{pos}"
    # the name it checked last is not checked again; every other one is, every offset is
    for pos in (-1, 1 << 64):
        with pytest.raises(ConfigError, match="invalid binlog position"):
            make(name, pos)
    for bad in ("", "..", "bin.000001; DROP TABLE t", "x" * 256, "a/b"):
        with pytest.raises(ConfigError, match="invalid binlog file name"):
            make(bad, 4)
        with pytest.raises(ConfigError, match="invalid binlog file name"):
            FilePos(bad, 4)
    assert make("other-bin.000001", 4) == FilePos("other-bin.000001", 4)
    with pytest.raises(ConfigError, match="invalid binlog file name"):
        make("bin.000001\n", 4)
