"""One JSON form for every resume point: a stream's Checkpoint, a snapshot's read
points, Spark's offsets (``point_to_json`` / ``point_from_json``)."""

from __future__ import annotations

import json

import pytest

from replica_client.checkpoint import Checkpoint
from replica_client.errors import ConfigError
from replica_client.position import (
    FilePos,
    Gtid,
    MysqlGtidSet,
    point_from_json,
    point_to_json,
)
from replica_client.snapshot import ReadPoint, SnapshotState
from replica_client.spark.offset import Offset

SID = "3e11fa47-71ca-11e1-9e33-c80aa9429562"
AT = FilePos("mysql-bin.000012", 4711)


@pytest.mark.parametrize(
    "position, gtid",
    [
        (AT, Gtid("0-1-77,1-2-5")),
        (AT, MysqlGtidSet(f"{SID}:1-40")),
        (None, Gtid("0-1-77")),  # a GTID start before its first transaction
        (AT, Gtid("")),  # no transaction known
        (AT, None),  # a MySQL primary without GTIDs
    ],
)
def test_the_point_form_reads_back(
    position: FilePos | None, gtid: Gtid | MysqlGtidSet | None
) -> None:
    data = json.loads(json.dumps(point_to_json(position, gtid)))
    assert set(data) == {"file", "pos", "gtid"}
    assert point_from_json(data) == (position, gtid)


def test_every_resume_point_writes_the_same_point() -> None:
    gtid = Gtid("0-1-77")
    point = point_to_json(AT, gtid)
    checkpoint = Checkpoint(AT, gtid).to_dict()
    read_point = ReadPoint(AT, gtid).to_json()
    offset = Offset(AT.file, AT.pos, str(gtid), "db1:3306").to_json()
    for form in (checkpoint, read_point, offset):
        assert {k: form[k] for k in point} == point
    # and each reads the others' point
    assert Checkpoint.from_dict(offset) == Checkpoint(AT, gtid)
    assert Checkpoint.from_dict(read_point) == Checkpoint(AT, gtid)
    assert ReadPoint.from_json(checkpoint) == ReadPoint(AT, gtid)
    assert Offset.from_json(checkpoint) == Offset(AT.file, AT.pos, str(gtid))
    assert Offset(AT.file, AT.pos, str(gtid)).checkpoint() == Checkpoint(AT, gtid)


def test_checkpoints_written_in_the_first_form_still_read() -> None:
    old = '{"gtid":"0-1-9","position":"mysql-bin.000002:1200"}'
    assert Checkpoint.from_json(old) == Checkpoint(FilePos("mysql-bin.000002", 1200), Gtid("0-1-9"))
    assert Checkpoint.from_json('{"gtid":"0-1-9","position":null}').position is None
    new = Checkpoint.from_json(old).to_json()
    assert json.loads(new) == {"file": "mysql-bin.000002", "pos": 1200, "gtid": "0-1-9"}


def test_a_snapshot_state_keeps_its_points_in_the_one_form() -> None:
    state = SnapshotState("consistent", ReadPoint(AT, None), [])
    data = json.loads(state.to_json())
    assert data["start"] == point_to_json(AT, None)
    assert SnapshotState.from_json(state.to_json()).start == ReadPoint(AT, None)


@pytest.mark.parametrize(
    "bad",
    [
        {"file": "mysql bin;000001", "pos": 4, "gtid": ""},
        {"file": "mysql-bin.000001", "pos": "four", "gtid": ""},
        {"file": "mysql-bin.000001", "pos": 4, "gtid": "not a gtid"},
        {"position": "no-colon", "gtid": ""},
    ],
)
def test_a_bad_point_is_refused_by_every_reader(bad: dict[str, object]) -> None:
    with pytest.raises(ConfigError):
        point_from_json(bad)
    with pytest.raises(ConfigError, match="not a checkpoint"):
        Checkpoint.from_dict(bad)
    with pytest.raises(ConfigError, match="not an offset"):
        Offset.from_json(bad)
    with pytest.raises(ConfigError, match="not a snapshot state"):
        SnapshotState.from_json(json.dumps({"mode": "chunked", "start": bad, "tables": []}))
