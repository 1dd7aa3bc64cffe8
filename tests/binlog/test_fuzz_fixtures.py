"""Property: mutated real binlog files decode or raise ProtocolError, nothing else, never hang.

Inputs are the fixture files of tests/data/binlogs (MySQL 5.0 - 9.x,
legacy pre-GA 5.2, relay logs, Aurora, MariaDB, transaction payloads, partial
JSON updates), mutated by truncation, bit flips, byte overwrites and splices
of bytes from elsewhere in the same or another file. Each mutant is written to
a file and read whole with ``rc.open_binlog`` -- with CRC32 verification on
(most mutants stop at the checksum) and off (mutations reach the body
decoders, the row decoders, JSON, decompression). The invariant: iteration
ends normally or with a ``ProtocolError`` subclass; the hypothesis deadline
bounds the time per example. Runs are derandomized: CI sees the same examples.
"""

from __future__ import annotations

import os
import tempfile
from pathlib import Path

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import replica_client as rc
from tests.binlog_files import FIXTURES

_NAMES = [
    "rust_mysql_common/binlog_transaction_with_GTID_TAG.000001",
    "rust_mysql_common/json.binlog.000001",
    "rust_mysql_common/json-opaque.binlog",
    "rust_mysql_common/vector.binlog",
    "rust_mysql_common/ver_5_1-wl2325_r.001",
    "rust_mysql_common/binlog_savepoint.000001",
    "rust_mysql_common/mysql-enum-string-set.000001",
    "rust_mysql_common/binlog-invisible-columns.000001",
    "rust_mysql_common/transaction_compression.000001",
    "rust_mysql_common/bug11747887-bin.000003",
    "rust_mysql_common/mariadb-bin.000001",
    "osheroff-mysql-binlog-connector-java/mysql-bin.compressed",
    "osheroff-mysql-binlog-connector-java/mysql-bin.aurora-padding",
    "apecloud-mysql-binlog-connector-rust/mysql-bin.000057",
    "mysql-cdc-rs/8.0/31_update_rows_v2/binlog.000001",
    "canal/mysql-bin.000002",
]


def _load() -> list[bytes]:
    if not FIXTURES.is_dir():
        raise RuntimeError(f"binlog fixtures missing: {FIXTURES}")
    return [(FIXTURES / n).read_bytes() for n in _NAMES]


DATA = _load()
_TMP = tempfile.TemporaryDirectory(prefix="fuzz-fixtures-")
_PATH = Path(_TMP.name) / "mutant.000001"


@st.composite
def mutants(draw: st.DrawFn) -> bytes:
    data = bytearray(draw(st.sampled_from(DATA)))
    for _ in range(draw(st.integers(1, 4))):
        kind = draw(st.sampled_from(["flip", "byte", "truncate", "splice", "splice_other"]))
        if not data:
            break
        at = draw(st.integers(0, len(data) - 1))
        if kind == "flip":
            data[at] ^= 1 << draw(st.integers(0, 7))
        elif kind == "byte":
            data[at] = draw(st.integers(0, 255))
        elif kind == "truncate":
            del data[at:]
        else:
            source = data if kind == "splice" else draw(st.sampled_from(DATA))
            start = draw(st.integers(0, len(source) - 1))
            piece = bytes(source[start : start + draw(st.integers(1, 64))])
            if draw(st.booleans()):
                data[at : at + len(piece)] = piece  # overwrite
            else:
                data[at:at] = piece  # insert
    return bytes(data)


def _decode_all(data: bytes, verify: bool) -> None:
    _PATH.write_bytes(data)
    try:
        for _ in rc.open_binlog(_PATH, verify_checksum=verify):
            pass
    except rc.ProtocolError:
        pass


_SETTINGS = settings(
    max_examples=int(os.environ.get("REPLICA_CLIENT_FUZZ_EXAMPLES", "300")),
    deadline=2000,
    derandomize="REPLICA_CLIENT_FUZZ_EXAMPLES" not in os.environ,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
    database=None,
)


@_SETTINGS
@given(mutants())
def test_mutants_with_checksums(data: bytes) -> None:
    _decode_all(data, verify=True)


@_SETTINGS
@given(mutants())
def test_mutants_without_checksums(data: bytes) -> None:
    _decode_all(data, verify=False)


def test_unmutated_inputs_decode() -> None:
    """The corpus itself is valid: a failure above is the mutation's doing."""
    for name, data in zip(_NAMES, DATA, strict=True):
        _PATH.write_bytes(data)
        assert list(rc.open_binlog(_PATH)), name
