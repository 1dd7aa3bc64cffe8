"""MySQL 9.7 partial JSON updates that set a member to JSON null, streamed live.

With ``binlog_row_value_options=PARTIAL_JSON`` and a FULL row image the after
image of an UPDATE carries JSON diffs, which the stream applies to the before
image. A diff whose value is JSON null must leave ``None`` inside the document
(as ``json.loads`` of the server's text gives), so that the after image of one
update equals the before image the server logs for the next update of the row.
"""

from __future__ import annotations

import json
from typing import Any

import pytest

import replica_client as rc
from replica_client.binlog.events import PartialUpdateRowsEvent
from replica_client.testing.pytest_plugin import PrimaryFactory
from replica_client.testing.server import MariaDBServer, ServerVariant
from tests.integration._stream_support import config_for, repl_user

__all__: list[str] = []

PARTIAL_JSON_MYSQL = ServerVariant(
    flavor="mysql",
    version="9.7",
    row_image="FULL",
    extra_args=("--binlog-row-value-options=PARTIAL_JSON",),
)


def _selected(srv: MariaDBServer) -> Any:
    (row,) = srv.sql("SELECT j FROM rc_pjn.t WHERE id = 1")
    text = row[0]
    return json.loads(text if isinstance(text, str | bytes) else str(text))


@pytest.mark.integration
async def test_consecutive_partial_updates_to_null_agree_with_each_other_and_select(
    mariadb_primary_factory: PrimaryFactory,
) -> None:
    srv = mariadb_primary_factory(PARTIAL_JSON_MYSQL)
    repl_user(srv)
    assert str(srv.sql("SELECT @@GLOBAL.binlog_row_value_options")[0][0]) == "PARTIAL_JSON"
    srv.sql("CREATE DATABASE IF NOT EXISTS rc_pjn")
    srv.sql("DROP TABLE IF EXISTS rc_pjn.t")
    srv.sql("CREATE TABLE rc_pjn.t (id INT PRIMARY KEY, j JSON)")
    doc = {"a": 1, "b": [1, 2, 3], "name": "x" * 200}
    srv.sql("INSERT INTO rc_pjn.t VALUES (1, %s)", (json.dumps(doc),))
    start = rc.MysqlGtidSet(str(srv.sql("SELECT @@GLOBAL.gtid_executed")[0][0]))

    shown = []
    for change in (
        "JSON_SET(j, '$.a', CAST('null' AS JSON))",
        "JSON_SET(j, '$.b[1]', CAST('null' AS JSON))",
    ):
        srv.sql(f"UPDATE rc_pjn.t SET j = {change} WHERE id = 1")
        shown.append(_selected(srv))
    assert shown == [
        {"a": None, "b": [1, 2, 3], "name": "x" * 200},
        {"a": None, "b": [1, None, 3], "name": "x" * 200},
    ]

    async with rc.connect(config_for(srv, start=start, blocking=False)) as stream:
        events = [e async for e in stream]
    partial = [e for e in events if isinstance(e, PartialUpdateRowsEvent) and e.table.table == "t"]
    assert len(partial) == 2
    assert all(e.json_diffs[0].get(1) for e in partial)  # the server sent diffs
    (first_before, first_after), (second_before, second_after) = (e.rows[0] for e in partial)
    assert first_before[1] == doc
    assert first_after[1] == second_before[1] == shown[0]
    assert second_after[1] == shown[1]
    assert first_after[1]["a"] is None and second_after[1]["b"][1] is None

    # the same through changes(): the row dicts a consumer sees
    async with rc.connect(config_for(srv, start=start, blocking=False)) as stream:
        changes = [c async for c in stream.changes() if c.table == "t" and c.op == "update"]
    assert [(c.before, c.after) for c in changes] == [
        ({"id": 1, "j": doc}, {"id": 1, "j": shown[0]}),
        ({"id": 1, "j": shown[0]}, {"id": 1, "j": shown[1]}),
    ]
