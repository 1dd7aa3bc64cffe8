"""Helpers shared by the harness's own tests."""

from __future__ import annotations

from pathlib import Path

from replica_client.testing.server import DatabaseServer

__all__ = ["BINLOG_MAGIC", "default_binlog_settings", "process_gone", "variables"]

BINLOG_MAGIC = b"\xfebin"


def variables(server: DatabaseServer, *names: str) -> dict[str, str]:
    """Global variables by name (SHOW GLOBAL VARIABLES: the same on every flavour)."""
    placeholders = ", ".join(["%s"] * len(names))
    rows = server.sql(
        f"SHOW GLOBAL VARIABLES WHERE Variable_name IN ({placeholders})",
        tuple(n.lower() for n in names),
    )
    found = {str(name).lower(): str(value) for name, value in rows}
    assert set(found) == set(names), f"missing server variables: {set(names) - set(found)}"
    return found


def process_gone(pid: int) -> bool:
    """True when ``pid`` no longer exists or is a zombie nobody reaped yet (not ours)."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except FileNotFoundError:
        return True
    return stat.rsplit(")", 1)[1].split()[0] in ("Z", "X")


def default_binlog_settings(server: DatabaseServer) -> dict[str, str]:
    """The binlog variables every flavour's default variant sets, with their values."""
    return {
        "log_bin": "ON",
        "binlog_format": "ROW",
        "binlog_row_image": "FULL",
        "binlog_row_metadata": "FULL",
        "binlog_checksum": "CRC32",
        "server_id": "1",
        "log_bin_basename": str(server.datadir / "mysql-bin"),
    }
