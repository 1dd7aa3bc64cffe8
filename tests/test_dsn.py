"""DSN parsing, shared by the harness and the command line; the command line imports no
test machinery."""

from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest

from replica_client.dsn import Dsn, dsn_secrets, format_dsn, parse_dsn, split_dsn
from replica_client.testing.pytest_plugin import PrimaryFactory
from replica_client.testing.server import ServerVariant

__all__: list[str] = []


def test_split_keeps_what_is_missing_as_none() -> None:
    assert split_dsn("mariadb://h") == Dsn("mariadb", "h", None, None, None, ("h:3306",))
    assert split_dsn("mysql://u@h:3307") == Dsn("mysql", "h", 3307, "u", None, ("h:3307",))
    assert split_dsn("mariadb://u:@h") == Dsn("mariadb", "h", None, "u", "", ("h:3306",))
    assert split_dsn("mariadb://:p%40ss@") == Dsn("mariadb", None, None, None, "p@ss")


def test_several_hosts_are_comma_separated() -> None:
    dsn = split_dsn("mariadb://repl:pw@db1:3307,db2,[::1]:3309")
    assert (dsn.host, dsn.port, dsn.user, dsn.password) == ("db1", 3307, "repl", "pw")
    assert dsn.hosts == ("db1:3307", "db2:3306", "[::1]:3309")
    with pytest.raises(ValueError, match="expected a DSN"):
        split_dsn("mariadb://u:topsecret@db1:x,db2")


def test_parse_fills_defaults_and_requires_a_host() -> None:
    assert parse_dsn("mariadb://h") == ("h", 3306, "root", "")
    assert parse_dsn("mysql://r%20u:p%3Aw@10.0.0.1:3310") == ("10.0.0.1", 3310, "r u", "p:w")
    with pytest.raises(ValueError, match="expected a DSN"):
        parse_dsn("mariadb://u:p@")


@pytest.mark.parametrize(
    "bad", ["http://u:topsecret@h", "mariadb://u:topsecret@h:notaport", "topsecret", ""]
)
def test_malformed_dsns_never_echo_the_password(bad: str) -> None:
    with pytest.raises(ValueError) as info:
        split_dsn(bad)
    assert "topsecret" not in str(info.value)


def test_format_round_trips_through_parse() -> None:
    dsn = format_dsn("us er", "p@ss:w/rd%", "127.0.0.1", 4000)
    assert dsn == "mariadb://us%20er:p%40ss%3Aw%2Frd%25@127.0.0.1:4000"
    assert parse_dsn(dsn) == ("127.0.0.1", 4000, "us er", "p@ss:w/rd%")
    assert format_dsn("u", "p", "h", 1, scheme="mysql").startswith("mysql://")
    with pytest.raises(ValueError):
        format_dsn("u", "p", "h", 1, scheme="http")


def test_secrets_are_found_whatever_the_scheme() -> None:
    assert dsn_secrets("http://u:p%40ss@h") == ("p%40ss", "p@ss")
    assert dsn_secrets("mariadb://u:plain@h") == ("plain",)
    assert dsn_secrets("mariadb://u@h") == ()
    # an IPv6 host after the first: some Pythons' urlsplit rejects the list
    assert dsn_secrets("mariadb://u:topsecret@db1,[::1]:3309") == ("topsecret",)


def test_the_command_line_imports_no_test_machinery() -> None:
    probe = (
        "import sys, replica_client.cli\n"
        "loaded = [m for m in sys.modules if m == 'pytest' or m.startswith('_pytest')"
        " or m in ('replica_client.testing.server', 'replica_client.testing.pytest_plugin')]\n"
        "assert 'replica_client.dsn' in sys.modules\n"
        "print(loaded)\n"
    )
    result = subprocess.run(
        [sys.executable, "-c", probe], capture_output=True, text=True, check=True, timeout=120
    )
    assert result.stdout.strip() == "[]"


def test_the_command_line_takes_a_mysql_dsn(mariadb_primary_factory: PrimaryFactory) -> None:
    server = mariadb_primary_factory(ServerVariant(flavor="mysql", version="9.7"))
    dsn = server.create_user("dsn_user", "p@ss:w/rd", plugin="caching_sha2_password")
    result = subprocess.run(
        [sys.executable, "-m", "replica_client.cli", "position", dsn.replace("mariadb:", "mysql:")],
        capture_output=True,
        text=True,
        check=False,
        timeout=120,
        env={k: v for k, v in os.environ.items() if k != "REPLICA_CLIENT_PASSWORD"},
    )
    assert result.returncode == 0, result.stderr
    position = json.loads(result.stdout)
    assert position["version"] == server.version
    assert position["file"] == server.binlog_position()[0]
