"""Compressed and encrypted binlogs of a private MariaDB primary decode to what SELECT returns.

* ``log_bin_compress=ON``: QUERY_COMPRESSED and WRITE/UPDATE/DELETE_ROWS_COMPRESSED
  events appear in the file (checked on the raw type bytes) and decode to the
  same event classes as their plain twins; every row image equals SELECT.
* ``encrypt_binlog=ON`` (file_key_management): the file starts with a
  START_ENCRYPTION_EVENT, decrypts with the server's key file, every row image
  equals SELECT; without a key, or with a wrong key, a DecryptionError.
"""

from __future__ import annotations

import struct
from collections import Counter
from pathlib import Path

import pytest

import replica_client as rc
from replica_client.binlog.events import StartEncryptionEvent
from replica_client.config import DecoderOptions
from replica_client.files import BinlogFileReader, file_spans
from replica_client.testing.pytest_plugin import PrimaryFactory
from replica_client.testing.server import MariaDBServer, ServerVariant
from tests import oracle

_COMPRESSED_TYPES = frozenset(range(165, 172))


def _raw_types(path: Path) -> Counter[int]:
    data = path.read_bytes()
    pos = 4
    counts: Counter[int] = Counter()
    while pos + 13 <= len(data):
        counts[data[pos + 4]] += 1
        pos += struct.unpack_from("<I", data, pos + 9)[0]
    return counts


def _run(srv: MariaDBServer) -> tuple[oracle.Workload, list[Path]]:
    conn = oracle.connect(srv.host, srv.port, srv.user, srv.password)
    try:
        srv.sql("FLUSH BINARY LOGS")
        first = srv.binlog_files()[-1]
        workload = oracle.run_workload(conn, random_rows=60, full_metadata=True)
        srv.sql("FLUSH BINARY LOGS")
    finally:
        conn.close()
    # Closed files only: the server may still add a BINLOG_CHECKPOINT event to the
    # active one while it is read (it holds none of the workload).
    return workload, [f for f in srv.binlog_files()[:-1] if f.name >= first.name]


def _compare(events: rc.BinlogFileReader, workload: oracle.Workload) -> None:
    result = oracle.compare(rc.iter_changes(events), workload, full_metadata=True)
    assert result.mismatches == [], "\n".join(result.mismatches[:30])
    assert result.counts == {
        "insert": workload.inserted,
        "update": len(workload.updated),
        "delete": len(workload.deleted),
    }


def test_compressed_binlog_images_equal_select(mariadb_primary_factory: PrimaryFactory) -> None:
    srv = mariadb_primary_factory(ServerVariant(compress=True))
    workload, files = _run(srv)
    raw: Counter[int] = Counter()
    for f in files:
        raw += _raw_types(f)
    assert raw[165] > 0, raw  # QUERY_COMPRESSED_EVENT
    assert sum(raw[t] for t in range(166, 172)) > 0, raw  # compressed rows events
    seen: Counter[int] = Counter()
    with rc.open_binlog(files) as events:
        for event in events:
            seen[event.type_code] += 1
            if event.type_code in _COMPRESSED_TYPES:
                twin = rc.QueryEvent if event.type_code == 165 else rc.RowsEvent
                assert isinstance(event, twin)
    assert seen == raw
    with rc.open_binlog(files) as events:
        _compare(events, workload)
    # halves of each file, read apart, are the file (compressed events are whole events)
    options = rc.open_binlog(files).options
    for f in files:
        spans = file_spans(f, f.stat().st_size // 2)
        assert len(spans) == 2
        halves = [_span(f, options, s) for s in spans]
        assert all(halves) and halves[0] + halves[1] == _span(f, options, None)


def _span(path: Path, options: DecoderOptions, span: tuple[int, int] | None) -> list[str]:
    with BinlogFileReader([path], options, span=span) as reader:
        return [f"{reader.event_position} {event!r}" for event in reader]


def test_encrypted_binlog_images_equal_select(
    mariadb_primary_factory: PrimaryFactory, tmp_path: Path
) -> None:
    srv = mariadb_primary_factory(ServerVariant(encrypt=True))
    assert srv.key_file is not None
    workload, files = _run(srv)
    with rc.open_binlog(files, key_file=srv.key_file) as events:
        decoded = list(events)
    starts = [e for e in decoded if isinstance(e, StartEncryptionEvent)]
    assert len(starts) == len(files)
    assert all(len(s.nonce) == 12 for s in starts)
    assert sum(isinstance(e, rc.RowsEvent) for e in decoded) > 0
    with rc.open_binlog(files, key_file=srv.key_file) as events:
        _compare(events, workload)
    # Encrypted events hide their sizes: a file is one span, read by the first.
    options = rc.open_binlog(files, key_file=srv.key_file).options
    for f in files:
        size = f.stat().st_size
        assert file_spans(f, size // 2) == [(0, size)]
        first, second = (_span(f, options, s) for s in ((0, size // 2), (size // 2, size)))
        assert first == _span(f, options, None) and second == []

    # No key: a typed error naming the remedy, not garbage rows.
    with pytest.raises(rc.DecryptionError, match="key_file"):
        list(rc.open_binlog(files))
    # Wrong key: the CRC32 of the decrypted event does not verify.
    wrong = tmp_path / "wrong.key"
    lines = srv.key_file.read_text().splitlines()
    wrong.write_text(
        "\n".join(f"{line.split(';')[0]};{'ab' * 32}" if ";" in line else line for line in lines)
        + "\n"
    )
    with pytest.raises(rc.DecryptionError):
        list(rc.open_binlog(files, key_file=wrong))
