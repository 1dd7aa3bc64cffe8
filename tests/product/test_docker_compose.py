"""``docker-compose.yml`` is valid, and what it runs is accepted by a real mariadbd.

There is no Docker engine on the CI machine, so the services' ``mariadbd``
flags, ``docker/mariadb/init.sql`` and the key file are given to a private
server from the local install instead (container paths mapped back to the
repository's files). Then the replication user of ``init.sql`` streams from it
with the CLI, and ``read --key-file`` decodes its compressed, encrypted binlog.
"""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import pytest
import yaml

from replica_client.testing.pytest_plugin import PrimaryFactory
from replica_client.testing.server import ServerVariant

from ._support import REPO, fresh_database, gtid_now, next_server_id, run_cli

__all__: list[str] = []


def _compose() -> dict[str, Any]:
    data = yaml.safe_load((REPO / "docker-compose.yml").read_text())
    assert isinstance(data, dict)
    return data


def _local_flags(service: dict[str, Any]) -> tuple[str, ...]:
    """The service's flags with container paths replaced by the mounted repo files."""
    mounts = {}
    for volume in service["volumes"]:
        host, container = volume.split(":")[:2]
        mounts[container] = str((REPO / host).resolve())
    flags = []
    for original in service["command"]:
        flag = original
        for container, host in mounts.items():
            flag = flag.replace(container, host)
        flags.append(flag)
    return tuple(flags)


def _init_statements() -> list[str]:
    text = (REPO / "docker" / "mariadb" / "init.sql").read_text()
    body = "\n".join(line for line in text.splitlines() if not line.startswith("--"))
    return [s.strip() for s in body.split(";") if s.strip()]


def test_compose_file_describes_both_primaries() -> None:
    services = _compose()["services"]
    assert set(services) == {"primary", "primary-compressed"}
    for service in services.values():
        assert re.fullmatch(r"mariadb:11\.(4|8)", service["image"]), "a current LTS image"
        assert all(p.startswith("127.0.0.1:") for p in service["ports"])
        assert service["healthcheck"]["test"][:2] == ["CMD", "healthcheck.sh"]
        flags = service["command"]
        for needed in (
            "--log-bin=mysql-bin",
            "--binlog-format=ROW",
            "--binlog-row-image=FULL",
            "--binlog-row-metadata=FULL",
            "--rpl-semi-sync-master-enabled=ON",
        ):
            assert needed in flags
        assert any(v.endswith("/docker-entrypoint-initdb.d/10-replication.sql:ro")
                   for v in service["volumes"])  # fmt: skip
    assert "--log-bin-compress=ON" in services["primary-compressed"]["command"]
    assert "--encrypt-binlog=ON" in services["primary-compressed"]["command"]
    for service in services.values():
        for volume in service["volumes"]:
            assert (REPO / volume.split(":")[0]).is_file()


@pytest.mark.parametrize("name", ["primary", "primary-compressed"])
def test_compose_flags_init_sql_and_keys_work_on_local_mariadbd(
    mariadb_primary_factory: PrimaryFactory, name: str, tmp_path: Path
) -> None:
    service = _compose()["services"][name]
    server = mariadb_primary_factory(ServerVariant(extra_args=_local_flags(service)))
    server.sql_many(_init_statements())
    settings = dict(
        server.sql(
            "SHOW GLOBAL VARIABLES WHERE Variable_name IN ('binlog_format', "
            "'binlog_row_metadata', 'rpl_semi_sync_master_enabled', 'log_bin_compress', "
            "'encrypt_binlog', 'server_id')"
        )
    )
    assert settings["binlog_format"] == "ROW" and settings["binlog_row_metadata"] == "FULL"
    assert settings["rpl_semi_sync_master_enabled"] == "ON"
    compressed = name == "primary-compressed"
    assert settings["log_bin_compress"] == ("ON" if compressed else "OFF")
    assert settings["encrypt_binlog"] == ("ON" if compressed else "OFF")

    db = fresh_database(server, "compose")
    start = gtid_now(server)
    server.sql_many(
        [
            f"CREATE TABLE {db}.t (id INT PRIMARY KEY, doc TEXT)",
            f"INSERT INTO {db}.t VALUES (1, REPEAT('compressible ', 20)), (2, 'b')",
            "FLUSH BINARY LOGS",
        ]
    )
    # The replication user init.sql creates streams, as the README shows.
    repl = f"mariadb://repl@127.0.0.1:{server.port}"
    args = ["--server-id", str(next_server_id()), "--from-gtid", start, "--non-blocking"]
    tail = run_cli("tail", repl, *args, "--tables", f"{db}.t", password="replpass")
    assert tail.returncode == 0, tail.stderr
    rows = [json.loads(line)["after"] for line in tail.stdout.splitlines()]
    assert [r["id"] for r in rows] == [1, 2] and rows[0]["doc"] == "compressible " * 20
    position = run_cli("position", repl, password="replpass")
    assert position.returncode == 0, position.stderr
    assert json.loads(position.stdout)["server_id"] == (2 if compressed else 1)

    files = [str(p) for p in server.binlog_files()]
    key_file = str(REPO / "docker" / "mariadb" / "keys.txt")
    read = run_cli("read", *files, "--key-file", key_file, "--tables", f"{db}.t")
    assert read.returncode == 0, read.stderr
    assert [json.loads(line)["after"]["id"] for line in read.stdout.splitlines()] == [1, 2]
    if compressed:
        unreadable = run_cli("read", *files, "--tables", f"{db}.t")
        assert unreadable.returncode == 1 and "key" in unreadable.stderr.lower()
