"""``replica-client`` subcommands end to end, each run as a subprocess against a real primary.

What is shown:

* ``tail --non-blocking`` prints one Debezium-like JSON line per change with
  JSON-safe values and the source block; ``--tables``/``--exclude`` filter;
* ``tail`` stopped by SIGTERM exits 0 after whole transactions and prints
  ``--from-gtid`` / ``--from-file --from-pos``; a second ``tail`` from either
  prints exactly the rest: nothing lost, nothing repeated;
* ``read`` decodes the primary's binlog files to the same JSON lines
  (compared with SELECT) and to a text view;
* ``position`` prints the primary's GTID state and file/pos;
* errors print one line, exit non-zero, and show a traceback only with --debug;
* ``demo`` (the README's first command) shows the decoded sample transactions;
* ``tail --semi-sync on --ack-mode written`` (on both event loops): a commit
  returns only once its line is written, each one acknowledged in time.
"""

from __future__ import annotations

import base64
import json
import os
import re
import signal
import subprocess
import threading
import time
from pathlib import Path
from typing import Any

import pymysql
import pytest

from replica_client.testing.server import MariaDBServer

from ._support import (
    REPO,
    cli_command,
    connection_args,
    fresh_database,
    gtid_now,
    run_cli,
)

__all__: list[str] = []


def _lines(text: str) -> list[dict[str, Any]]:
    return [json.loads(line) for line in text.splitlines() if line.strip()]


def _types_table(server: MariaDBServer) -> str:
    db = fresh_database(server, "cli")
    server.sql_many(
        [
            f"CREATE TABLE {db}.t (id INT PRIMARY KEY, price DECIMAL(10,2), raw VARBINARY(8), "
            "day DATE, at DATETIME(3), note VARCHAR(20))",
            f"CREATE TABLE {db}.other (id INT PRIMARY KEY)",
        ]
    )
    return db


def test_tail_non_blocking_prints_envelopes(mariadb_primary: MariaDBServer) -> None:
    db = _types_table(mariadb_primary)
    start = gtid_now(mariadb_primary)
    mariadb_primary.sql_many(
        [
            f"INSERT INTO {db}.t VALUES (1, 12.50, x'00ff10', '2024-02-29', "
            "'2024-02-29 23:59:59.125', 'héllo')",
            f"INSERT INTO {db}.other VALUES (1)",
            f"UPDATE {db}.t SET price = 13.00 WHERE id = 1",
            f"DELETE FROM {db}.t WHERE id = 1",
        ]
    )
    proc = run_cli(
        "tail",
        *connection_args(mariadb_primary),
        "--from-gtid",
        start,
        "--non-blocking",
        "--tables",
        f"{db}.*",
        "--exclude",
        f"{db}.other",
        password=mariadb_primary.password,
    )
    assert proc.returncode == 0, proc.stderr
    lines = _lines(proc.stdout)
    assert [line["op"] for line in lines] == ["c", "u", "d"]
    first = lines[0]
    assert first["before"] is None
    assert first["after"] == {
        "id": 1,
        "price": "12.50",
        "raw": base64.b64encode(b"\x00\xff\x10").decode(),
        "day": "2024-02-29",
        "at": "2024-02-29T23:59:59.125000",
        "note": "héllo",
    }
    assert lines[1]["before"]["price"] == "12.50"
    assert lines[1]["after"]["price"] == "13.00"
    assert lines[2]["after"] is None
    src = first["source"]
    assert (src["db"], src["table"], src["server_id"]) == (db, "t", 1)
    assert re.fullmatch(r"0-1-\d+", src["gtid"])
    assert src["file"].startswith("mysql-bin.") and src["pos"] > 4
    assert src["ts_ms"] > 1_600_000_000_000
    assert "resume with --from-gtid" in proc.stderr



def test_tail_snapshot_prints_existing_rows_as_reads(mariadb_primary: MariaDBServer) -> None:
    db = _types_table(mariadb_primary)
    mariadb_primary.sql_many(
        [
            f"INSERT INTO {db}.t VALUES (2, 1.25, x'01', '2024-01-02', '2024-01-02 03:04:05.5', "
            "'ünï'), (1, NULL, NULL, NULL, NULL, NULL)",
            f"INSERT INTO {db}.other VALUES (7)",
        ]
    )
    for mode in ("consistent", "chunked"):
        proc = run_cli(
            "tail",
            *connection_args(mariadb_primary),
            "--snapshot",
            mode,
            "--non-blocking",
            "--tables",
            f"{db}.t",
            password=mariadb_primary.password,
        )
        assert proc.returncode == 0, proc.stderr
        lines = _lines(proc.stdout)
        assert [(line["op"], line["source"]["table"]) for line in lines] == [("r", "t")] * 2
        assert [line["after"] for line in lines] == [
            {"id": 1, "price": None, "raw": None, "day": None, "at": None, "note": None},
            {
                "id": 2,
                "price": "1.25",
                "raw": base64.b64encode(b"\x01").decode(),
                "day": "2024-01-02",
                "at": "2024-01-02T03:04:05.500000",
                "note": "ünï",
            },
        ]
        assert all(line["before"] is None for line in lines)
        assert "resume with --from-gtid" in proc.stderr

def test_tail_sigterm_prints_a_position_that_resumes_exactly(
    mariadb_primary: MariaDBServer,
) -> None:
    db = fresh_database(mariadb_primary, "sigterm")
    mariadb_primary.sql(f"CREATE TABLE {db}.t (id INT PRIMARY KEY, tx INT)")
    start = gtid_now(mariadb_primary)
    transactions = 60

    def writer() -> None:
        for i in range(transactions):
            mariadb_primary.sql_many(
                [
                    "BEGIN",
                    f"INSERT INTO {db}.t VALUES ({2 * i}, {i}), ({2 * i + 1}, {i})",
                    "COMMIT",
                ]
            )
            time.sleep(0.02)

    env_password = mariadb_primary.password
    env = {**os.environ, "REPLICA_CLIENT_PASSWORD": env_password}
    tail = subprocess.Popen(
        [
            *cli_command(),
            "tail",
            *connection_args(mariadb_primary),
            "--from-gtid",
            start,
            "--tables",
            f"{db}.t",
        ],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env=env,
    )
    first: list[str] = []
    enough = threading.Event()

    def reader() -> None:
        assert tail.stdout is not None
        for line in tail.stdout:
            first.append(line)
            if len(first) >= 10:
                enough.set()
        enough.set()

    reading = threading.Thread(target=reader)
    reading.start()
    writing = threading.Thread(target=writer)
    writing.start()
    try:
        assert enough.wait(60), "tail printed nothing"
        tail.send_signal(signal.SIGTERM)
        reading.join(30)  # the reader takes every line up to EOF
        tail.wait(30)
        assert tail.stderr is not None
        stderr = tail.stderr.read()
    finally:
        if tail.poll() is None:
            tail.kill()
        reading.join(30)
        writing.join(120)
    assert tail.returncode == 0, stderr
    stopped_early = len(first) < 2 * transactions
    found = re.search(
        r"resume with --from-gtid (\S+) or --from-file (\S+) --from-pos (\d+)", stderr
    )
    assert found, stderr
    gtid, file, pos = found.groups()

    rows_first = _lines("".join(first))
    tx_of = [(r["after"]["tx"], r["source"]["gtid"]) for r in rows_first]
    # Whole transactions only: both rows of every transaction printed.
    assert all(tx_of.count(t) == 2 for t in tx_of)

    for resume in (["--from-gtid", gtid], ["--from-file", file, "--from-pos", pos]):
        rest = run_cli(
            "tail",
            *connection_args(mariadb_primary),
            *resume,
            "--non-blocking",
            "--tables",
            f"{db}.t",
            password=env_password,
        )
        assert rest.returncode == 0, rest.stderr
        ids = [r["after"]["id"] for r in rows_first + _lines(rest.stdout)]
        assert sorted(ids) == list(range(2 * transactions)), resume
    assert stopped_early or len(first) == 2 * transactions


def test_read_files_json_and_text(mariadb_primary: MariaDBServer) -> None:
    db = fresh_database(mariadb_primary, "readcli")
    mariadb_primary.sql_many(
        [
            f"CREATE TABLE {db}.t (id INT PRIMARY KEY, v VARCHAR(10), d DECIMAL(6,3))",
            f"INSERT INTO {db}.t VALUES (1, 'a', 1.5), (2, 'b', -2.25), (3, NULL, 0)",
            f"UPDATE {db}.t SET v = 'z' WHERE id = 3",
            "FLUSH BINARY LOGS",
        ]
    )
    files = [str(p) for p in mariadb_primary.binlog_files()]
    proc = run_cli("read", *files, "--tables", f"{db}.t")
    assert proc.returncode == 0, proc.stderr
    final: dict[int, Any] = {}
    for line in _lines(proc.stdout):
        row = line["after"]
        final[row["id"]] = (row["v"], row["d"])
    selected = {
        int(r[0]): (r[1], format(r[2], "f"))
        for r in mariadb_primary.sql(f"SELECT id, v, d FROM {db}.t")
    }
    assert final == selected

    datadir = str(mariadb_primary.datadir)
    text = run_cli("read", datadir, "--format", "text", "--tables", f"{db}.t")
    assert text.returncode == 0, text.stderr
    assert "WriteRowsEvent" in text.stdout and f'"table": "{db}.t"' in text.stdout
    assert "UpdateRowsEvent" in text.stdout
    assert text.stderr == ""  # no progress bar when stderr is not a terminal


def test_position(mariadb_primary: MariaDBServer) -> None:
    proc = run_cli(
        "position", *connection_args(mariadb_primary), password=mariadb_primary.password
    )
    assert proc.returncode == 0, proc.stderr
    info = json.loads(proc.stdout)
    status = mariadb_primary.sql("SHOW MASTER STATUS")[0]
    assert info["gtid"] == gtid_now(mariadb_primary)
    assert (info["file"], info["pos"]) == (status[0], int(status[1]))
    assert info["server_id"] == 1 and "MariaDB" in info["version"]


def test_position_from_a_dsn(mariadb_primary: MariaDBServer) -> None:
    proc = run_cli("position", mariadb_primary.dsn)
    assert proc.returncode == 0, proc.stderr
    assert json.loads(proc.stdout)["gtid"] == gtid_now(mariadb_primary)


def test_errors_are_one_line_and_exit_nonzero(mariadb_primary: MariaDBServer) -> None:
    bad = run_cli("position", *connection_args(mariadb_primary), password="wrong-password")
    assert bad.returncode == 1
    assert bad.stderr.count("\n") == 1 and "Traceback" not in bad.stderr
    assert bad.stderr.startswith("replica-client: error:") and "Access denied" in bad.stderr

    refused = run_cli("tail", "mariadb://root@127.0.0.1:1", "--non-blocking")
    assert refused.returncode == 1 and refused.stderr.count("\n") == 1
    assert "127.0.0.1:1" in refused.stderr

    missing = run_cli("read", str(REPO / "no-such-binlog.000001"))
    assert missing.returncode == 1 and missing.stderr.count("\n") == 1

    debug = run_cli(
        "position", *connection_args(mariadb_primary), "--debug", password="wrong-password"
    )
    assert debug.returncode != 0 and "Traceback" in debug.stderr


@pytest.mark.integration
def test_demo_as_the_readme_runs_it() -> None:
    proc = run_cli("demo", timeout=180)
    assert proc.returncode == 0, proc.stderr
    out = proc.stdout
    assert "starting a private MariaDB primary" in out
    assert re.search(r'^insert shop\.customers .*"email": "c1@example\.com"', out, re.M)
    assert re.search(r'^insert shop\.orders .*"total": "10\.99".*"tags": \["gift"\]', out, re.M)
    assert re.search(r'^update shop\.orders .*"status": "paid".*"express", "gift"', out, re.M)
    assert re.search(r"^delete shop\.orders .*after=null", out, re.M)
    assert "14 row changes decoded" in out
    assert out.rstrip().endswith("-- primary stopped")


def test_tail_output_file_and_read_progress_bar_on_a_terminal(
    mariadb_primary: MariaDBServer, tmp_path: Any
) -> None:
    db = fresh_database(mariadb_primary, "outfile")
    mariadb_primary.sql(f"CREATE TABLE {db}.t (id INT PRIMARY KEY)")
    start = gtid_now(mariadb_primary)
    mariadb_primary.sql_many([f"INSERT INTO {db}.t VALUES (1), (2)", "FLUSH BINARY LOGS"])
    out = tmp_path / "changes.jsonl"
    proc = run_cli(
        "tail", *connection_args(mariadb_primary), "--from-gtid", start, "--non-blocking",
        "--tables", f"{db}.t", "--output", str(out), password=mariadb_primary.password,
    )  # fmt: skip
    assert proc.returncode == 0 and proc.stdout == "", proc.stderr
    assert [r["after"]["id"] for r in _lines(out.read_text())] == [1, 2]

    # stderr on a terminal: `read` draws a progress bar there; stdout stays clean JSON.
    master, slave = os.openpty()
    try:
        reading = subprocess.run(
            [*cli_command(), "read", str(mariadb_primary.datadir), "--tables", f"{db}.t"],
            stdout=subprocess.PIPE, stderr=slave, text=True, timeout=60, check=False,
        )  # fmt: skip
        os.close(slave)
        slave = -1
        chunks = []
        while True:
            try:
                chunk = os.read(master, 65536)
            except OSError:
                break
            if not chunk:
                break
            chunks.append(chunk)
    finally:
        if slave != -1:
            os.close(slave)
        os.close(master)
    assert reading.returncode == 0
    assert [r["after"]["id"] for r in _lines(reading.stdout)] == [1, 2]
    bar = b"".join(chunks).decode()
    assert "100%" in bar and "[#" in bar


@pytest.mark.parametrize(
    ("argv", "hosts", "first"),
    [
        (["tail", "--host", "db1", "--host", "db2:3307"], ("db1:3306", "db2:3307"), ("db1", 3306)),
        (["tail", "mariadb://repl@db1:3310,db2"], ("db1:3310", "db2:3306"), ("db1", 3310)),
        (["tail", "--host", "db9:3311"], None, ("db9", 3311)),
    ],
)
def test_several_hosts_from_options_or_a_dsn(
    argv: list[str], hosts: tuple[str, ...] | None, first: tuple[str, int]
) -> None:
    from replica_client import cli
    from replica_client.aio.config import ReplicaConfig

    opts = cli._connection(cli._parser().parse_args(argv))
    assert opts.get("hosts") == hosts
    assert (opts["host"], opts["port"]) == first
    config = ReplicaConfig.from_kwargs(**opts)
    assert config.addresses == (hosts or (f"{first[0]}:{first[1]}",))


def _semi_sync_status(server: MariaDBServer, name: str) -> str:
    return str(server.sql("SHOW GLOBAL STATUS LIKE %s", (f"Rpl_semi_sync_master_{name}",))[0][1])


@pytest.mark.parametrize("loop", ["asyncio", "uvloop"])
def test_tail_ack_mode_written_acks_a_commit_once_its_line_is_out(
    mariadb_primary: MariaDBServer, tmp_path: Path, loop: str
) -> None:
    """``--semi-sync on --ack-mode written``: a commit returns only once its line is in
    the output file, and every commit counts as acknowledged in time (500 ms)."""
    srv = mariadb_primary
    assert srv.sql("SELECT @@GLOBAL.rpl_semi_sync_master_enabled")[0][0] == 1
    db = fresh_database(srv, "cliack")
    srv.sql(f"CREATE TABLE {db}.t (id INT PRIMARY KEY)")
    out = tmp_path / "changes.jsonl"
    env = {**os.environ, "REPLICA_CLIENT_PASSWORD": srv.password}
    tail = subprocess.Popen(
        [
            *cli_command(),
            "tail",
            *connection_args(srv),
            "--from-now",
            "--semi-sync",
            "on",
            "--ack-mode",
            "written",
            "--loop",
            loop,
            "--tables",
            f"{db}.t",
            "--output",
            str(out),
            "-v",
        ],
        stderr=subprocess.PIPE,
        text=True,
        env=env,
    )
    conn = pymysql.connect(
        host=srv.host, port=srv.port, user=srv.user, password=srv.password, autocommit=True
    )
    commits = 200
    try:
        with conn.cursor() as cur:
            deadline = time.monotonic() + 30
            while _semi_sync_status(srv, "clients") != "1":
                assert time.monotonic() < deadline and tail.poll() is None, "tail never registered"
                time.sleep(0.05)
            # commits made while no semi-sync replica was there switched the primary
            # to asynchronous replication; it switches back once ACKs catch up
            warm = 0
            while _semi_sync_status(srv, "status") != "ON":
                assert time.monotonic() < deadline, "semi-sync never came back on"
                warm -= 1
                cur.execute(f"INSERT INTO {db}.t VALUES (%s)", (warm,))
            yes = int(_semi_sync_status(srv, "yes_tx"))
            no = int(_semi_sync_status(srv, "no_tx"))
            for i in range(commits):
                cur.execute(f"INSERT INTO {db}.t VALUES (%s)", (i,))
                last = json.loads(out.read_text().splitlines()[-1])
                assert last["after"] == {"id": i}, f"commit {i} returned before its line"
            assert int(_semi_sync_status(srv, "yes_tx")) - yes == commits
            assert int(_semi_sync_status(srv, "no_tx")) - no == 0
    finally:
        conn.close()
        tail.send_signal(signal.SIGTERM)
        _, err = tail.communicate(timeout=30)
    assert tail.returncode == 0, err
    assert f"on {loop}'s event loop" in err
    ids = [line["after"]["id"] for line in _lines(out.read_text())]
    assert ids == list(range(-1, warm - 1, -1)) + list(range(commits))
