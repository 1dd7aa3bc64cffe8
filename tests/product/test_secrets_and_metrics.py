"""No password in logs, reprs, error messages or CLI output; the stream's metrics.

The secret-leak tests use an account with a distinctive password and look for
it (plain and URL-encoded) everywhere a user could see it: ``repr`` of the
config, the stream and the servers; every log record at DEBUG while a stream
runs and while a login fails; exception messages; CLI stdout/stderr, with and
without ``--debug``, with the password in the environment, an option or a DSN.

The metrics test uses the plugin's ``binlog_stream`` fixture, as a user would.
"""

from __future__ import annotations

import asyncio
import logging
from urllib.parse import quote

import pytest

import replica_client as rc
from replica_client.testing.pytest_plugin import take_changes
from replica_client.testing.server import ExternalServer, MariaDBServer, parse_dsn

from ._support import connection_args, fresh_database, gtid_now, next_server_id, run_cli

__all__: list[str] = []

USER, SECRET = "rc_leak", "S3cret/pw:with@odd%chars"
WRONG = "Wr0ng-Pa55word-777"


def _assert_clean(text: str) -> None:
    for secret in (SECRET, quote(SECRET, safe=""), WRONG):
        assert secret not in text


@pytest.fixture(scope="module")
def leak_user(mariadb_primary: MariaDBServer) -> str:
    mariadb_primary.create_user(USER, SECRET)
    return USER


async def test_no_password_in_reprs_logs_or_errors(
    mariadb_primary: MariaDBServer, leak_user: str, caplog: pytest.LogCaptureFixture
) -> None:
    db = fresh_database(mariadb_primary, "leak")
    mariadb_primary.sql(f"CREATE TABLE {db}.t (id INT PRIMARY KEY)")
    caplog.set_level(logging.DEBUG)
    config = rc.ReplicaConfig(
        host=mariadb_primary.host,
        port=mariadb_primary.port,
        user=leak_user,
        password=SECRET,
        server_id=next_server_id(),
        start=rc.Gtid(gtid_now(mariadb_primary)),
        blocking=False,
        reconnect=rc.ReconnectPolicy(enabled=False),
    )
    seen = [repr(config), str(config)]
    mariadb_primary.sql(f"INSERT INTO {db}.t VALUES (1)")
    async with rc.connect(config) as stream:
        seen.append(repr(stream))
        seen += [repr(c) for c in [c async for c in stream.changes()]]
    errors = []
    for bad in (WRONG, SECRET):
        wrong = rc.ReplicaConfig(
            host=mariadb_primary.host,
            port=mariadb_primary.port if bad == WRONG else 1,
            user=leak_user,
            password=bad,
            server_id=next_server_id(),
            reconnect=rc.ReconnectPolicy(enabled=False),
        )
        with pytest.raises(rc.ReplicaError) as caught:
            await rc.connect(wrong)
        errors.append(caught.value)
    assert isinstance(errors[0], rc.AuthenticationError)
    assert isinstance(errors[1], rc.ConnectionLostError)
    seen += [str(e) for e in errors] + [repr(e) for e in errors]
    external = ExternalServer(f"mariadb://{leak_user}:{quote(SECRET, safe='')}@127.0.0.1:1")
    seen.append(repr(external))
    with pytest.raises(Exception) as failed_start:
        external.start()
    seen.append(str(failed_start.value))
    with pytest.raises(ValueError) as bad_dsn:
        parse_dsn(f"http://{leak_user}:{SECRET}@host")
    seen.append(str(bad_dsn.value))
    seen.append(caplog.text)
    seen.append(repr(mariadb_primary))
    assert caplog.records, "the stream logged nothing at DEBUG"
    _assert_clean("\n".join(seen))


def test_no_password_in_cli_output(mariadb_primary: MariaDBServer, leak_user: str) -> None:
    conn = connection_args(mariadb_primary)
    conn[conn.index("--user") + 1] = leak_user
    runs = [
        run_cli("position", *conn, "-v", "--debug", password=SECRET),
        run_cli("tail", *conn, "--from-now", "--non-blocking", "-v", "--debug", password=SECRET),
        run_cli("position", *conn, password=WRONG),
        run_cli("position", *conn, "--debug", password=WRONG),
        run_cli("tail", *conn, "--password", WRONG, "--non-blocking"),
        run_cli(
            "tail",
            f"mariadb://{leak_user}:{quote(WRONG, safe='')}@127.0.0.1:{mariadb_primary.port}",
            "--non-blocking",
        ),
        run_cli("position", f"mariadb://{leak_user}:{quote(SECRET, safe='')}@127.0.0.1:1"),
    ]
    assert [r.returncode for r in runs] == [0, 0, 1, 1, 1, 1, 1]
    assert "Access denied" in runs[2].stderr and "Traceback" in runs[3].stderr
    for run in runs:
        _assert_clean(run.stdout + run.stderr)


async def test_stream_metrics(
    mariadb_primary: MariaDBServer, binlog_stream: rc.BinlogStream
) -> None:
    db = fresh_database(mariadb_primary, "metrics")
    mariadb_primary.sql(f"CREATE TABLE {db}.t (id INT PRIMARY KEY, v VARCHAR(100))")
    before = rc.StreamMetrics(**binlog_stream.metrics.as_dict())  # type: ignore[arg-type]
    for i in range(3):
        mariadb_primary.sql(f"INSERT INTO {db}.t VALUES ({2 * i}, 'x'), ({2 * i + 1}, 'y')")
    changes = await take_changes(binlog_stream, 6)
    assert [c.after["id"] for c in changes if c.after] == list(range(6))
    target = rc.Gtid(gtid_now(mariadb_primary))
    async with asyncio.timeout(10):
        async for _ in binlog_stream:
            if binlog_stream.gtid_state == target:
                break
    m = binlog_stream.metrics
    assert m.rows - before.rows == 6
    # CREATE DATABASE, CREATE TABLE and the 3 inserts.
    assert m.transactions - before.transactions == 5
    # Each insert transaction: GTID, (ANNOTATE), TABLE_MAP, WRITE_ROWS, XID.
    assert m.events - before.events >= 4 * 3 + 2
    assert m.bytes > before.bytes and m.reconnects == 0
    assert m.seconds_behind_primary is not None and m.seconds_behind_primary >= 0
    assert m.last_event_timestamp is not None
    assert set(m.as_dict()) >= {"events", "rows", "bytes", "transactions", "reconnects"}
