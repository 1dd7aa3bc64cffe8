"""The registration state machine: transition table, packets, refusals."""

from __future__ import annotations

import itertools

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from replica_client.errors import ConfigError, ProtocolError, ReplicaError, ServerError
from replica_client.position import FilePos, Gtid, MysqlGtidSet
from replica_client.wire.framing import frame_payload
from replica_client.wire.packets import (
    ResultSetReader,
    build_binlog_dump,
    build_binlog_dump_gtid,
    build_register_slave,
    build_semisync_ack,
    parse_err,
    parse_handshake,
    semi_sync_ack_requested,
)
from replica_client.wire.registration import (
    TRANSITIONS,
    Input,
    RegistrationMachine,
    RegistrationSettings,
    State,
)
from tests.fake_primary import FakePrimary

__all__: list[str] = []


#: The phases of a replication connection, written out: (state, input) -> next
#: state. Every other (state, input) is a protocol error that moves to FAILED.
EXPECTED_TRANSITIONS = {
    (State.AWAIT_GREETING, Input.GREETING): State.AUTHENTICATING,
    (State.AWAIT_GREETING, Input.ERR): State.FAILED,
    (State.TLS_UPGRADE, Input.TLS_DONE): State.AUTHENTICATING,
    (State.AUTHENTICATING, Input.AUTH_SWITCH): State.AUTHENTICATING,
    (State.AUTHENTICATING, Input.AUTH_MORE_DATA): State.AUTHENTICATING,
    (State.AUTHENTICATING, Input.OK): State.REGISTERING,
    (State.AUTHENTICATING, Input.ERR): State.FAILED,
    (State.REGISTERING, Input.OK): State.REGISTERING,
    (State.REGISTERING, Input.RESULT_PART): State.REGISTERING,
    (State.REGISTERING, Input.ERR): State.FAILED,
    (State.STREAMING, Input.EVENT): State.STREAMING,
    (State.STREAMING, Input.EOF): State.ENDED,
    (State.STREAMING, Input.ERR): State.FAILED,
    # QueryMachine: an ERR answers a statement, the connection stays ready
    (State.QUERYING, Input.RESULT_PART): State.QUERYING,
    (State.QUERYING, Input.OK): State.READY,
    (State.QUERYING, Input.ERR): State.READY,
}


@pytest.mark.parametrize(("state", "inp"), list(itertools.product(State, Input)))
def test_transition_table(state: State, inp: Input) -> None:
    m = RegistrationMachine(RegistrationSettings(user="u", server_id=3))
    m.state = state
    expected = EXPECTED_TRANSITIONS.get((state, inp))
    if expected is None:
        with pytest.raises(ProtocolError):
            m._transition(inp)
        assert m.state is State.FAILED
    else:
        m._transition(inp)
        assert m.state is expected


def test_terminal_states_have_no_exits() -> None:
    for (state, _), _nxt in TRANSITIONS.items():
        assert state not in (State.FAILED, State.ENDED)


def test_semi_sync_header() -> None:
    # an event packet: 0x00 | 0xEF | flags (bit 0: the primary waits for an ACK) | event
    assert semi_sync_ack_requested(b"\x00\xef\x01event") is True
    assert semi_sync_ack_requested(b"\x00\xef\x00event") is False
    assert semi_sync_ack_requested(b"\x00\xef\x02event") is False
    assert semi_sync_ack_requested(b"\x00\x01\x00event") is None  # no semi-sync header
    assert semi_sync_ack_requested(b"\x00\xef") is None


def test_err_packet_mapping() -> None:
    err = parse_err(b"\xff\xd4\x04#HY000Could not find first log file name in binary log")
    assert type(err).__name__ == "BinlogPositionError"
    assert err.errno == 1236
    assert err.sqlstate == "HY000"
    err2 = parse_err(b"\xff\x15\x04#28000Access denied")
    assert type(err2).__name__ == "AuthenticationError"
    assert isinstance(err2, ServerError)
    assert "Check the user name" in str(err2)


def test_binlog_position_error_errno() -> None:
    err = parse_err(b"\xff" + (1236).to_bytes(2, "little") + b"#HY000purged")
    assert err.errno == 1236
    assert "purged" in str(err) and "start='earliest'" in str(err)


def test_handshake_parse_mariadb_and_mysql() -> None:
    for flavor, mariadb in (("mariadb", True), ("mysql", False)):
        fp = FakePrimary(flavor=flavor)
        greeting = fp.greeting()
        hs = parse_handshake(greeting[4:])
        assert hs.is_mariadb is mariadb
        assert len(hs.scramble) == 20
        assert hs.auth_plugin == "mysql_native_password"


def test_truncated_greeting_is_protocol_error() -> None:
    greeting = FakePrimary().greeting()[4:]
    for n in range(1, 40):
        with pytest.raises(ProtocolError):
            parse_handshake(greeting[:n])


def test_command_builders() -> None:
    assert build_binlog_dump(server_id=7, file="mysql-bin.000002", position=4, flags=1) == (
        b"\x12\x04\x00\x00\x00\x01\x00\x07\x00\x00\x00mysql-bin.000002"
    )
    assert build_register_slave(server_id=7, report_host="h", report_port=3307) == (
        b"\x15\x07\x00\x00\x00\x01h\x00\x00\xeb\x0c\x00\x00\x00\x00\x00\x00\x00\x00"
    )
    assert build_semisync_ack(file="f.1", position=0x0102) == b"\xef\x02\x01" + b"\0" * 6 + b"f.1"
    gs = MysqlGtidSet("3E11FA47-71CA-11E1-9E33-C80AA9429562:1-5:7")
    dump = build_binlog_dump_gtid(server_id=7, gtid_set=gs.encode(), flags=0)
    assert dump[:11] == b"\x1e\x04\x00\x07\x00\x00\x00\x00\x00\x00\x00"
    assert dump[11:19] == (4).to_bytes(8, "little")
    data = dump[23:]
    assert int.from_bytes(dump[19:23], "little") == len(data)
    assert data[:8] == (1).to_bytes(8, "little")
    assert data[8:24].hex() == "3e11fa4771ca11e19e33c80aa9429562"
    assert data[24:32] == (2).to_bytes(8, "little")
    assert data[32:48] == (1).to_bytes(8, "little") + (6).to_bytes(8, "little")
    assert data[48:64] == (7).to_bytes(8, "little") + (8).to_bytes(8, "little")


def test_mysql_gtid_set_normalises_and_validates() -> None:
    sid = "3e11fa47-71ca-11e1-9e33-c80aa9429562"
    gs = MysqlGtidSet(f"{sid}:5-7:1-4, {sid}:9")
    assert str(gs) == f"{sid}:1-7:9"
    for bad in ["x:1", sid, f"{sid}:0", f"{sid}:5-3", f"{sid}:1';--"]:
        with pytest.raises(ConfigError):
            MysqlGtidSet(bad)


def test_result_set_reader_rows_and_null() -> None:
    fp = FakePrimary()
    raw = fp._result_set(["a", "b"], [["1", None], ["x", "y"]])
    reader = ResultSetReader()
    pos, result = 0, None
    while pos < len(raw):
        n = int.from_bytes(raw[pos : pos + 3], "little")
        result = reader.feed(raw[pos + 4 : pos + 4 + n])
        pos += 4 + n
    assert result is not None
    assert [c.name for c in result.columns] == ["a", "b"]
    assert result.rows == (("1", None), ("x", "y"))


def test_settings_validation() -> None:
    with pytest.raises(ConfigError):
        RegistrationSettings(user="u", server_id=0)
    with pytest.raises(ConfigError):
        RegistrationSettings(user="u", server_id=1, heartbeat_period=-1)
    with pytest.raises(ConfigError):
        RegistrationSettings(user="u", server_id=1, semi_sync="maybe")  # type: ignore[arg-type]
    with pytest.raises(ConfigError):
        RegistrationSettings(user="u", server_id=1, semi_sync="on", blocking=False)
    with pytest.raises(ConfigError):
        FilePos("mysql-bin.000001'; DROP TABLE x; --", 4)
    with pytest.raises(ConfigError):
        Gtid("0-1-1'; --")


def test_unexpected_packet_during_registration() -> None:
    m = RegistrationMachine(RegistrationSettings(user="repl", password=b"secret", server_id=3))
    fp = FakePrimary()
    m.receive_data(fp.greeting())
    m.next_stream_packet()
    m.receive_data(fp.receive(m.data_to_send()))  # OK: authenticated, first query sent
    m.next_stream_packet()
    m.data_to_send()
    # an OK packet where a result set belongs
    m.receive_data(frame_payload(b"\x00\x00\x00\x02\x00\x00\x00", 1)[0])
    with pytest.raises(ProtocolError):
        m.next_stream_packet()
    assert m.state is State.FAILED


def test_mysql_flavor_rejects_mariadb_gtid() -> None:
    fp = FakePrimary(flavor="mysql")
    m = RegistrationMachine(
        RegistrationSettings(user="repl", password=b"secret", server_id=3, start=Gtid("0-1-1"))
    )
    m.receive_data(fp.greeting())
    with pytest.raises(ConfigError, match="MariaDB GTID"):
        for _ in range(30):
            m.next_stream_packet()
            m.receive_data(fp.receive(m.data_to_send()))


@settings(max_examples=300, deadline=None)
@given(data=st.binary(max_size=300), stage=st.integers(min_value=0, max_value=3))
def test_any_bytes_give_replica_errors_only(data: bytes, stage: int) -> None:
    """Garbage at any point of the conversation raises ReplicaError subclasses, nothing else."""
    fp = FakePrimary()
    m = RegistrationMachine(RegistrationSettings(user="repl", password=b"secret", server_id=3))
    try:
        if stage:
            m.receive_data(fp.greeting())
            m.next_stream_packet()
            for _ in range(stage - 1):
                m.receive_data(fp.receive(m.data_to_send()))
                m.next_stream_packet()
        m.receive_data(frame_payload(data, m._framer._seq)[0] if stage else data)
        for _ in range(5):
            m.next_stream_packet()
    except ReplicaError:
        pass  # any typed error is fine
