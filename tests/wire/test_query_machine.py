"""QueryMachine: the replica's login, then SQL statements one at a time; bytes in, replies out.

Driven by the scripted fake primary (tests/fake_primary.py), whole and byte by
byte: a result set's rows, a statement without one, an ERR that answers a
statement and leaves the connection usable, every auth plugin of the login,
and garbage bytes raising only library errors.
"""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from replica_client.codec import read_lenenc_bytes_or_null
from replica_client.errors import ProtocolError, ReplicaError, ServerError
from replica_client.wire.packets import ResultSet
from replica_client.wire.query_machine import QueryMachine
from replica_client.wire.registration import RegistrationSettings, State
from tests.fake_primary import FakePrimary

__all__: list[str] = []


def _feed(m: QueryMachine, data: bytes, byte_by_byte: bool) -> ResultSet | None:
    """Feed the server's bytes; the reply once whole (the login's replies give None)."""
    result = None
    chunks = [data[i : i + 1] for i in range(len(data))] if byte_by_byte else [data]
    for chunk in chunks:
        m.receive_data(chunk)
        got = m.next_result()
        if got is not None:
            assert result is None, "two replies to one statement"
            result = got
    return result


def _logged_in(fp: FakePrimary, byte_by_byte: bool = False) -> QueryMachine:
    m = QueryMachine(RegistrationSettings(user=fp.user, password=fp.password, server_id=9))
    assert _feed(m, fp.greeting(), byte_by_byte) is None
    for _ in range(6):  # handshake response, auth switch / more data, OK
        if m.ready:
            break
        assert _feed(m, fp.receive(m.data_to_send()), byte_by_byte) is None
    assert m.ready and fp.authenticated
    return m


def _ask(fp: FakePrimary, m: QueryMachine, sql: str, byte_by_byte: bool) -> ResultSet | None:
    m.query(sql)
    assert m.state is State.QUERYING and not m.ready
    return _feed(m, fp.receive(m.data_to_send()), byte_by_byte)


@pytest.mark.parametrize("byte_by_byte", [False, True])
def test_statements_one_at_a_time(byte_by_byte: bool) -> None:
    fp = FakePrimary()
    m = _logged_in(fp, byte_by_byte)
    rows = _ask(fp, m, "SELECT UNIX_TIMESTAMP()", byte_by_byte)
    assert rows is not None and rows.rows == (("1700000000",),)
    assert [c.name for c in rows.columns] == ["UNIX_TIMESTAMP()"]
    assert m.ready
    # a statement without a result set: an empty reply
    assert _ask(fp, m, "SET @x = 1", byte_by_byte) == ResultSet((), ())
    # an ERR answers the statement; the connection stays usable
    m.query("SELECT no_such_thing")
    m.receive_data(fp.receive(m.data_to_send()))
    with pytest.raises(ServerError) as info:
        m.next_result()
    assert info.value.errno == 1064 and m.ready
    again = _ask(fp, m, "SHOW VARIABLES LIKE 'SERVER_ID'", byte_by_byte)
    assert again is not None and again.rows == (("server_id", "1"),)
    assert fp.queries == [
        "SELECT UNIX_TIMESTAMP()",
        "SET @x = 1",
        "SELECT no_such_thing",
        "SHOW VARIABLES LIKE 'SERVER_ID'",
    ]


@pytest.mark.parametrize(
    "plugin", ["mysql_native_password", "caching_sha2_password", "client_ed25519", "parsec"]
)
def test_every_login_plugin_of_the_replica(plugin: str) -> None:
    fp = FakePrimary(
        auth=plugin, flavor="mysql" if plugin == "caching_sha2_password" else "mariadb"
    )
    m = _logged_in(fp)
    assert _ask(fp, m, "SELECT UNIX_TIMESTAMP()", False) is not None


def test_a_statement_waits_for_the_login_and_for_the_last_reply() -> None:
    fp = FakePrimary()
    m = QueryMachine(RegistrationSettings(user="repl", password=b"secret", server_id=9))
    with pytest.raises(ProtocolError, match="AWAIT_GREETING"):
        m.query("SELECT 1")
    m = _logged_in(fp)
    m.query("SELECT UNIX_TIMESTAMP()")
    with pytest.raises(ProtocolError, match="QUERYING"):
        m.query("SELECT 2")


def test_a_wrong_password_fails_the_login() -> None:
    fp = FakePrimary()
    m = QueryMachine(RegistrationSettings(user="repl", password=b"wrong", server_id=9))
    m.receive_data(fp.greeting())
    assert m.next_result() is None
    m.receive_data(fp.receive(m.data_to_send()))
    with pytest.raises(ServerError) as info:
        m.next_result()
    assert info.value.errno == 1045 and m.state is State.FAILED


@settings(max_examples=300, deadline=None)
@given(data=st.binary(max_size=200), stream=st.booleans())
def test_any_reply_bytes_give_replica_errors_only(data: bytes, stream: bool) -> None:
    fp = FakePrimary()
    m = _logged_in(fp)
    m.query("SELECT UNIX_TIMESTAMP()", stream=stream)
    m.data_to_send()
    try:
        m.receive_data(data)
        if m.next_result() is not None and stream:
            m.next_rows([], 100)
    except ReplicaError:
        pass


_ROWS: list[list[str | None] | None] = [
    ["1", "a"],
    [None, ""],
    ["3", "\u00e9" * 300],  # a length prefix of three bytes
    ["4", None],
]


def _stream(
    fp: FakePrimary, m: QueryMachine, sql: str, limit: int, byte_by_byte: bool
) -> tuple[ResultSet | None, list[bytes], bool]:
    m.query(sql, stream=True)
    data = fp.receive(m.data_to_send())
    header, rows, ended = None, list[bytes](), False
    for chunk in [data[i : i + 1] for i in range(len(data))] if byte_by_byte else [data]:
        m.receive_data(chunk)
        if header is None and (header := m.next_result()) is None:
            continue
        while not ended:
            before = len(rows)
            ended = m.next_rows(rows, limit)
            assert len(rows) - before <= limit
            if len(rows) == before:
                break
    return header, rows, ended


def _values(payload: bytes, n: int) -> tuple[str | None, ...]:
    out, pos = [], 0
    for _ in range(n):
        value, pos = read_lenenc_bytes_or_null(payload, pos)
        out.append(None if value is None else bytes(value).decode())
    assert pos == len(payload)
    return tuple(out)


@pytest.mark.parametrize("byte_by_byte", [False, True])
@pytest.mark.parametrize("limit", [1, 3, 100])
def test_a_streamed_result_set_hands_out_its_rows_unparsed(limit: int, byte_by_byte: bool) -> None:
    fp = FakePrimary(results={"SELECT * FROM t": (["id", "name"], _ROWS)})
    m = _logged_in(fp)
    collected = _ask(fp, m, "SELECT * FROM t", False)
    assert collected is not None
    header, rows, ended = _stream(fp, m, "SELECT * FROM t", limit, byte_by_byte)
    assert header is not None and header.rows == () and header.columns == collected.columns
    assert ended and m.ready
    assert [_values(r, 2) for r in rows] == list(collected.rows)
    # the connection goes on: the next statement, collected as before
    again = _ask(fp, m, "SELECT UNIX_TIMESTAMP()", byte_by_byte)
    assert again is not None and again.rows == (("1700000000",),)


def test_an_error_in_the_middle_of_streamed_rows_ends_the_statement() -> None:
    fp = FakePrimary(results={"SELECT * FROM t": (["id", "name"], [["1", "a"], None])})
    m = _logged_in(fp)
    m.query("SELECT * FROM t", stream=True)
    m.receive_data(fp.receive(m.data_to_send()))
    assert m.next_result() is not None
    rows: list[bytes] = []
    with pytest.raises(ServerError) as info:
        m.next_rows(rows, 100)
    assert info.value.errno == 1317 and len(rows) == 1 and m.ready
    with pytest.raises(ProtocolError, match="no result set is being streamed"):
        m.next_rows(rows, 100)


def test_the_drivers_steps_read_a_reply_and_rows() -> None:
    """result_ready/take_result and rows_ready/take_rows: what both drivers call."""
    fp = FakePrimary(results={"SELECT * FROM t": (["id", "name"], _ROWS)})
    m = _logged_in(fp)
    m.query("SELECT * FROM t", stream=True)
    data = fp.receive(m.data_to_send())
    with pytest.raises(ProtocolError, match="no reply"):
        m.take_result()
    m.receive_data(data[:5])
    assert not m.result_ready()
    m.receive_data(data[5:])
    assert m.result_ready() and [c.name for c in m.take_result().columns] == ["id", "name"]
    taken: list[bytes] = []
    while m.rows_ready(3) and (rows := m.take_rows()) is not None:
        assert len(rows) <= 3
        taken += rows
    assert [_values(r, 2) for r in taken] == [tuple(r) for r in _ROWS if r is not None]
    assert not m.reading_rows and m.take_rows() is None and m.ready
    # an error among the rows: the rows read with it go with the statement
    fp = FakePrimary(results={"SELECT * FROM t": (["id", "name"], [["1", "a"], None])})
    m = _logged_in(fp)
    m.query("SELECT * FROM t", stream=True)
    m.receive_data(fp.receive(m.data_to_send()))
    assert m.result_ready() and m.take_result().columns
    with pytest.raises(ServerError):
        m.rows_ready(100)
    assert not m.reading_rows and m.take_rows() is None and m.ready
