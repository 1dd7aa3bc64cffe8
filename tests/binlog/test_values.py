"""replica_client.binlog.values: the values Python's own types cannot hold."""

from __future__ import annotations

import pickle

import replica_client as rc
from replica_client.binlog import events
from replica_client.binlog.values import MISSING, Geometry, InvalidDate, InvalidDatetime


def test_zero_dates_print_as_the_server_does() -> None:
    assert str(InvalidDate(0, 0, 0)) == "0000-00-00"
    assert str(InvalidDate(2024, 2, 0)) == "2024-02-00"
    assert str(InvalidDatetime(0, 0, 0, 0, 0, 0, 0)) == "0000-00-00 00:00:00"
    assert str(InvalidDatetime(2024, 0, 1, 10, 0, 5, 500)) == "2024-00-01 10:00:05.000500"


def test_missing_is_one_value_that_survives_pickling() -> None:
    assert repr(MISSING) == "MISSING" and MISSING is not None
    assert pickle.loads(pickle.dumps(MISSING)) is MISSING
    assert pickle.loads(pickle.dumps(Geometry(4326, b"\x01"))) == Geometry(4326, b"\x01")


def test_the_old_import_paths_name_the_same_objects() -> None:
    assert events.MISSING is MISSING is rc.MISSING
    assert events.InvalidDate is InvalidDate and events.Geometry is Geometry
