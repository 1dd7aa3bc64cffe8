"""Every decoded row image equals what SELECT returns: binlog files of a private primary.

The workload (tests/oracle.py) writes edge and random rows of every column
type, updates and deletes some; the primary's binlog files are then read with
``rc.open_binlog`` and each INSERT after-image, UPDATE before/after image and
DELETE before-image is compared with the SELECT snapshot of that row.
"""

from __future__ import annotations

import pytest

import replica_client as rc
from replica_client.testing.pytest_plugin import PrimaryFactory
from replica_client.testing.server import ServerVariant
from tests import oracle

VARIANTS = [
    ServerVariant(),
    ServerVariant(row_metadata="MINIMAL"),
    ServerVariant(row_image="MINIMAL"),
    ServerVariant(checksum="NONE"),
]


@pytest.mark.parametrize("variant", VARIANTS, ids=lambda v: v.label)
def test_file_images_equal_select(
    mariadb_primary_factory: PrimaryFactory, variant: ServerVariant
) -> None:
    srv = mariadb_primary_factory(variant)
    full = variant.row_metadata == "FULL"
    conn = oracle.connect(srv.host, srv.port, srv.user, srv.password)
    try:
        srv.sql("FLUSH BINARY LOGS")
        first = srv.binlog_files()[-1]
        workload = oracle.run_workload(conn, random_rows=150, full_metadata=full)
    finally:
        conn.close()
    files = [f for f in srv.binlog_files() if f.name >= first.name]
    with rc.open_binlog(files) as events:
        result = oracle.compare(
            rc.iter_changes(events),
            workload,
            full_metadata=full,
            minimal_image=variant.row_image == "MINIMAL",
        )
    assert result.mismatches == [], "\n".join(result.mismatches[:30])
    assert result.counts == {
        "insert": workload.inserted,
        "update": len(workload.updated),
        "delete": len(workload.deleted),
    }
    assert result.compared_images == workload.inserted + 2 * len(workload.updated) + len(
        workload.deleted
    )
