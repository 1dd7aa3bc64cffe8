"""Every example in ``examples/`` run as a user runs it, against the private primary.

The CDC service (``examples/cdc_microservice.py``, Redis Streams) is SIGKILLed
while a writer commits transactions, then restarted: the Redis stream must
hold every committed change exactly once, in commit order, which is checked
against SELECT and against the GTIDs the changes carry. Each run uses its own
stream key and deletes it afterwards (the Redis server is shared).
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import threading
import time
import uuid
from collections import Counter
from collections.abc import Iterator
from pathlib import Path

import pytest
import redis

from replica_client.testing.server import MariaDBServer

from ._support import REPO, fresh_database, gtid_now, next_server_id

__all__: list[str] = []

pytestmark = pytest.mark.integration

REDIS_URL = os.environ.get("REPLICA_CLIENT_TEST_REDIS", "redis://127.0.0.1:6379/0")
CDC_USER, CDC_PASSWORD = "rc_cdc", "cdc-Secret-pw-8812"


def _example(name: str) -> str:
    return str(REPO / "examples" / name)


def _env(password: str) -> dict[str, str]:
    return {**os.environ, "REPLICA_CLIENT_PASSWORD": password}


def test_tail_example(mariadb_primary: MariaDBServer) -> None:
    db = fresh_database(mariadb_primary, "ex_tail")
    mariadb_primary.sql(f"CREATE TABLE {db}.t (id INT PRIMARY KEY, name VARCHAR(10))")
    start = gtid_now(mariadb_primary)
    mariadb_primary.sql(f"INSERT INTO {db}.t VALUES (1, 'one'), (2, 'two')")
    mariadb_primary.sql(f"DELETE FROM {db}.t WHERE id = 1")
    dsn = f"mariadb://{mariadb_primary.user}@{mariadb_primary.host}:{mariadb_primary.port}"
    proc = subprocess.run(
        [sys.executable, _example("tail.py"), dsn, "--from-gtid", start, "--non-blocking",
         "--tables", f"{db}.t", "--server-id", str(next_server_id())],
        capture_output=True, text=True, timeout=60, env=_env(mariadb_primary.password),
        check=False,
    )  # fmt: skip
    assert proc.returncode == 0, proc.stderr
    lines = [json.loads(line) for line in proc.stdout.splitlines()]
    assert [(x["op"], (x["after"] or x["before"])["name"]) for x in lines] == [
        ("c", "one"),
        ("c", "two"),
        ("d", "one"),
    ]


def test_read_files_example(mariadb_primary: MariaDBServer) -> None:
    db = fresh_database(mariadb_primary, "ex_read")
    mariadb_primary.sql_many(
        [
            f"CREATE TABLE {db}.t (id INT PRIMARY KEY, v INT)",
            f"INSERT INTO {db}.t VALUES (7, 70)",
            f"UPDATE {db}.t SET v = 71 WHERE id = 7",
            "FLUSH BINARY LOGS",
        ]
    )
    proc = subprocess.run(
        [sys.executable, _example("read_files.py"), str(mariadb_primary.datadir),
         "--tables", f"{db}.t"],
        capture_output=True, text=True, timeout=60, check=False,
    )  # fmt: skip
    assert proc.returncode == 0, proc.stderr
    lines = proc.stdout.splitlines()
    assert len(lines) == 2
    assert lines[0].startswith(f"insert {db}.t gtid=0-1-") and '{"id": 7, "v": 70}' in lines[0]
    assert lines[1].startswith(f"update {db}.t") and '{"id": 7, "v": 71}' in lines[1]


def test_my_app_example_runs_with_the_plugin() -> None:
    # A separate pytest process: the plugin comes from the pytest11 entry point.
    proc = subprocess.run(
        [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider",
         _example("test_my_app.py")],
        capture_output=True, text=True, timeout=180, cwd=REPO, check=False,
    )  # fmt: skip
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert "1 passed" in proc.stdout


# -- the CDC microservice -----------------------------------------------------------------


@pytest.fixture
def stream_key() -> Iterator[str]:
    key = f"replica-client-test:cdc:{uuid.uuid4().hex}"
    client = redis.Redis.from_url(REDIS_URL)
    assert client.ping(), f"no Redis at {REDIS_URL}"
    try:
        yield key
    finally:
        client.delete(key, f"{key}:checkpoint")
        client.close()


def _launch(command: list[str], log_file: Path) -> subprocess.Popen[bytes]:
    with log_file.open("ab") as log:
        return subprocess.Popen(
            command, stdout=log, stderr=subprocess.STDOUT, env=_env(CDC_PASSWORD)
        )


def _kill_once_published(
    client: redis.Redis, stream_key: str, count: int, service: subprocess.Popen[bytes], log: Path
) -> int:
    """SIGKILL the service once ``count`` entries are in the stream; how many there are."""
    deadline = time.monotonic() + 60
    while client.xlen(stream_key) < count:
        assert service.poll() is None, log.read_text()
        assert time.monotonic() < deadline, "the service published nothing"
        time.sleep(0.01)
    service.send_signal(signal.SIGKILL)
    service.wait(30)
    return int(client.xlen(stream_key))


def test_cdc_service_killed_mid_stream_keeps_every_change_exactly_once(
    mariadb_primary: MariaDBServer, stream_key: str, tmp_path: Path
) -> None:
    mariadb_primary.create_user(CDC_USER, CDC_PASSWORD)
    db = fresh_database(mariadb_primary, "cdc")
    mariadb_primary.sql_many(
        [
            f"CREATE TABLE {db}.items (id INT PRIMARY KEY, v INT)",
            f"CREATE TABLE {db}.counter (id INT PRIMARY KEY, n INT)",
            f"CREATE TABLE {db}.ignored (id INT PRIMARY KEY)",
            f"INSERT INTO {db}.counter VALUES (0, 0)",
        ]
    )
    start = gtid_now(mariadb_primary)
    transactions = 80
    log_file = tmp_path / "service.log"
    command = [
        sys.executable, _example("cdc_microservice.py"),
        f"mariadb://{CDC_USER}@{mariadb_primary.host}:{mariadb_primary.port}",
        "--redis", REDIS_URL, "--stream-key", stream_key,
        "--tables", f"{db}.items,{db}.counter", "--start-gtid", start,
        "--server-id", str(next_server_id()), "--metrics-every", "0.5",
    ]  # fmt: skip

    def writer() -> None:
        for i in range(transactions):
            mariadb_primary.sql_many(
                [
                    "BEGIN",
                    f"INSERT INTO {db}.items VALUES ({i}, {i * 10})",
                    f"INSERT INTO {db}.ignored VALUES ({i})",
                    f"UPDATE {db}.counter SET n = n + 1 WHERE id = 0",
                    "COMMIT",
                ]
            )
            time.sleep(0.03)

    client = redis.Redis.from_url(REDIS_URL)
    service = _launch(command, log_file)
    writing = threading.Thread(target=writer)
    try:
        writing.start()
        killed_at = _kill_once_published(client, stream_key, 20, service, log_file)
        assert killed_at < 2 * transactions and writing.is_alive(), "not killed mid-stream"

        service = _launch(command, log_file)
        writing.join(120)
        deadline = time.monotonic() + 60
        while client.xlen(stream_key) < 2 * transactions:
            assert service.poll() is None, log_file.read_text()
            assert time.monotonic() < deadline, f"only {client.xlen(stream_key)} changes"
            time.sleep(0.05)
        time.sleep(1.5)  # nothing more may come (a duplicate would arrive now)
        service.send_signal(signal.SIGTERM)
        assert service.wait(30) == 0, log_file.read_text()
        entries: list[tuple[bytes, dict[bytes, bytes]]] = client.xrange(stream_key)  # type: ignore[assignment]
        checkpoint: bytes | None = client.get(f"{stream_key}:checkpoint")  # type: ignore[assignment]
    finally:
        if service.poll() is None:
            service.kill()
        writing.join(120)
        client.close()

    changes = [json.loads(fields[b"data"]) for _, fields in entries]
    keys = [(fields[b"gtid"], fields[b"index"]) for _, fields in entries]
    assert len(keys) == len(set(keys)) == 2 * transactions
    # Every committed change once, in commit order, checked against SELECT.
    items = [c["after"]["id"] for c in changes if c["source"]["table"] == "items"]
    counts = [c["after"]["n"] for c in changes if c["source"]["table"] == "counter"]
    selected = mariadb_primary.sql(f"SELECT id FROM {db}.items ORDER BY id")
    assert items == [int(r[0]) for r in selected] == list(range(transactions))
    final_n = int(mariadb_primary.sql(f"SELECT n FROM {db}.counter")[0][0])
    assert counts == list(range(1, final_n + 1)) and final_n == transactions
    # Each transaction: its two changes under one GTID, the GTIDs increasing.
    per_gtid = Counter(c["source"]["gtid"] for c in changes)
    assert set(per_gtid.values()) == {2} and len(per_gtid) == transactions
    seqs = [int(g.rsplit("-", 1)[1]) for g in per_gtid]
    assert seqs == sorted(seqs)
    assert checkpoint is not None and checkpoint.decode() == gtid_now(mariadb_primary)
    log = log_file.read_text()
    assert "resuming from checkpoint" in log and "metrics {" in log
    assert CDC_PASSWORD not in log


@pytest.mark.parametrize("mode", ["consistent", "chunked"])
def test_cdc_service_snapshot_killed_mid_snapshot_resumes_it(
    mariadb_primary: MariaDBServer, stream_key: str, tmp_path: Path, mode: str
) -> None:
    """``--snapshot``: SIGKILLed in the middle of the snapshot while a writer changes
    rows already published and rows not read yet; restarted, it resumes from its
    checkpoint. Replaying the Redis stream gives exactly SELECT, no row twice."""
    mariadb_primary.create_user(CDC_USER, CDC_PASSWORD)
    db = fresh_database(mariadb_primary, "cdcsnap")
    rows = 3000
    mariadb_primary.sql_many(
        [
            f"CREATE TABLE {db}.items (id INT PRIMARY KEY, v INT)",
            f"CREATE TABLE {db}.marker (id INT PRIMARY KEY)",
            f"INSERT INTO {db}.items SELECT seq, seq FROM {db}.seq_1_to_{rows}",
        ]
    )
    log_file = tmp_path / "service.log"
    command = [
        sys.executable, _example("cdc_microservice.py"),
        f"mariadb://{CDC_USER}@{mariadb_primary.host}:{mariadb_primary.port}",
        "--redis", REDIS_URL, "--stream-key", stream_key,
        "--tables", f"{db}.items,{db}.marker", "--snapshot", mode,
        "--server-id", str(next_server_id()), "--metrics-every", "0.5",
    ]  # fmt: skip

    stop = threading.Event()

    def writer() -> None:
        i = 0
        while not stop.is_set():
            key = (i * 7919) % (rows + i // 3 + 1) + 1
            mariadb_primary.sql_many(
                [
                    "BEGIN",
                    f"UPDATE {db}.items SET v = v + 1 WHERE id = {key}",
                    f"INSERT INTO {db}.items VALUES ({rows + 1 + i}, 0)",
                    f"DELETE FROM {db}.items WHERE id = {(key * 31) % rows + 1}",
                    "COMMIT",
                ]
            )
            i += 1
            time.sleep(0.005)

    client = redis.Redis.from_url(REDIS_URL)
    service = _launch(command, log_file)
    writing = threading.Thread(target=writer)
    try:
        writing.start()
        killed_at = _kill_once_published(client, stream_key, 400, service, log_file)
        stored: bytes | None = client.get(f"{stream_key}:checkpoint")  # type: ignore[assignment]
        assert killed_at < rows and stored is not None and stored.startswith(b"{")

        service = _launch(command, log_file)
        # the writer goes on until the resumed snapshot is over (the checkpoint is a
        # GTID state again), and a little after: changes then come as c/u/d
        deadline = time.monotonic() + 90

        def in_snapshot() -> bool:
            saved: bytes | None = client.get(f"{stream_key}:checkpoint")  # type: ignore[assignment]
            return saved is None or saved.startswith(b"{")

        while in_snapshot():
            assert service.poll() is None, log_file.read_text()
            assert time.monotonic() < deadline, "the resumed snapshot did not end"
            time.sleep(0.05)
        time.sleep(0.5)
        stop.set()
        writing.join(60)
        mariadb_primary.sql(f"INSERT INTO {db}.marker VALUES (1)")
        deadline = time.monotonic() + 90

        def marker_published() -> bool:
            last: list[tuple[bytes, dict[bytes, bytes]]] = client.xrevrange(stream_key, count=20)  # type: ignore[assignment]
            return any(b"marker" in fields[b"table"] for _, fields in last)

        while not marker_published():
            assert service.poll() is None, log_file.read_text()
            assert time.monotonic() < deadline, f"{client.xlen(stream_key)} changes, no marker"
            time.sleep(0.05)
        service.send_signal(signal.SIGTERM)
        assert service.wait(30) == 0, log_file.read_text()
        entries: list[tuple[bytes, dict[bytes, bytes]]] = client.xrange(stream_key)  # type: ignore[assignment]
    finally:
        stop.set()
        if service.poll() is None:
            service.kill()
        writing.join(60)
        client.close()

    mirror: dict[int, dict[str, int]] = {}
    problems: list[str] = []
    ops: Counter[str] = Counter()
    for _, fields in entries:
        change = json.loads(fields[b"data"])
        if change["source"]["table"] != "items":
            continue
        op, before, after = change["op"], change["before"], change["after"]
        ops[op] += 1
        if op in ("r", "c") and after["id"] in mirror:
            problems.append(f"{op} of id {after['id']} already there")
        if op in ("u", "d") and before["id"] not in mirror:
            problems.append(f"{op} of id {before['id']} not there")
        if before is not None:
            mirror.pop(before["id"], None)
        if after is not None:
            mirror[after["id"]] = after
    want = {
        int(i): {"id": int(i), "v": int(v)}
        for i, v in mariadb_primary.sql(f"SELECT id, v FROM {db}.items")
    }
    assert not problems, problems[:10]
    assert ops["r"] >= rows - ops["d"] and ops["c"] > 0 and ops["u"] > 0
    assert mirror == want
    assert "resuming from checkpoint {" in log_file.read_text()
