"""The Spark planner's failover (driver side, no JVM): a ``hosts`` option with real replication.

A is the primary, B a semi-synchronous replica of it. Batches are planned on A;
A is SIGKILLed, B promoted, rows written on B. The next batch moves to B by the
GTID state of the last offset and continues; a batch planned on A and re-read
after the move (a restart) comes from B by GTID and gives the same rows.
"""

from __future__ import annotations

import json
from typing import Any

import pytest

from replica_client.errors import LostTransactionsError
from replica_client.spark import parse_options
from replica_client.spark.partitions import read_range
from replica_client.spark.planner import Offset, StreamPlanner
from replica_client.testing.server import MariaDBServer
from tests.integration._replication import TABLE, pair, promote, wait_caught_up
from tests.integration._stream_support import REPL_PASSWORD, REPL_USER, next_server_id

__all__: list[str] = []

pytestmark = pytest.mark.integration


def _planner(primary: MariaDBServer, replica: MariaDBServer, start: str) -> StreamPlanner:
    opts = parse_options(
        {
            "hosts": f"{primary.host}:{primary.port},{replica.host}:{replica.port}",
            "user": REPL_USER,
            "password": REPL_PASSWORD,
            "serverId": str(next_server_id()),
            "startingPosition": start,
            "connectTimeout": "3",
            "readTimeout": "10",
        }
    )
    return StreamPlanner(opts)


def _ids(planner: StreamPlanner, start: Offset, end: Offset) -> list[int]:
    ids = []
    for partition in planner.plan(start, end):
        for batch in read_range(planner.opts, partition):
            for after in batch.column("after").to_pylist():
                if after is not None:
                    ids.append(int(json.loads(after)["id"]))
    return ids


def _insert(srv: MariaDBServer, ids: range) -> None:
    for i in ids:
        srv.sql(f"INSERT INTO {TABLE} VALUES (%s, 'row')", (i,))


def test_planner_fails_over_by_gtid_and_rereads_old_batches_from_the_new_primary() -> None:
    with pair(semi_sync=True) as (primary, replica):
        start_gtid = str(primary.sql("SELECT @@gtid_binlog_pos")[0][0])
        planner = _planner(primary, replica, start_gtid)
        first = planner.initial_offset()
        _insert(primary, range(0, 40))
        middle = planner.latest_offset(first, None, None)
        assert middle.host == f"{primary.host}:{primary.port}"
        on_a = _ids(planner, first, middle)
        assert on_a == list(range(40))
        wait_caught_up(replica, primary)
        primary.kill()
        promote(replica)
        _insert(replica, range(100, 130))
        end = planner.latest_offset(middle, None, None)
        assert end.host == f"{replica.host}:{replica.port}"
        assert _ids(planner, middle, end) == list(range(100, 130))
        # a restart re-plans the batch taken on A: it is re-read from B by GTID
        planner._cache.clear()
        assert _ids(planner, first, middle) == on_a
        planner.close()


def test_planner_refuses_a_primary_that_lacks_planned_transactions() -> None:
    with pair(semi_sync=False) as (primary, replica):
        start_gtid = str(primary.sql("SELECT @@gtid_binlog_pos")[0][0])
        planner = _planner(primary, replica, start_gtid)
        first = planner.initial_offset()
        replica.sql("STOP SLAVE")
        _insert(primary, range(0, 5))
        end = planner.latest_offset(first, None, None)
        assert len(_ids(planner, first, end)) == 5
        lost = primary.sql("SELECT @@gtid_binlog_pos")[0][0]
        planned: dict[str, Any] = end.to_json()
        primary.kill()
        replica.sql("RESET SLAVE ALL")
        replica.sql("SET GLOBAL read_only = 0")
        with pytest.raises(LostTransactionsError) as info:
            planner.latest_offset(Offset.from_json(planned), None, None)
        last = int(str(lost).rsplit("-", 1)[1])
        assert info.value.missing == tuple(f"0-1-{seq}" for seq in range(last - 4, last + 1))
        planner.close()
