"""Typed legacy events: binlog v1/v3 (MySQL 3.23 - 5.0) and their LOAD DATA events. No I/O.

Frozen, slotted dataclasses, decoded by :mod:`.legacy`. Re-exported by
:mod:`replica_client.binlog.events`.
"""

from __future__ import annotations

from dataclasses import dataclass

from .events_base import Event

__all__ = [
    "CreateFileEvent",
    "DeleteFileEvent",
    "ExecLoadEvent",
    "LoadEvent",
    "SlaveEvent",
    "StartEventV3",
]


@dataclass(frozen=True, slots=True)
class StartEventV3(Event):
    """START_EVENT_V3 (1): first event of a v1 (3.23) or v3 (4.0) binlog."""

    binlog_version: int
    server_version: str
    create_timestamp: int


@dataclass(frozen=True, slots=True)
class LoadEvent(Event):
    """LOAD_EVENT (6) / NEW_LOAD_EVENT (12): LOAD DATA INFILE as logged by 3.23/4.0.

    ``field_term`` ... ``escaped`` are the FIELDS/LINES options; ``fields`` the
    column list; ``file_name`` the file on the primary.
    """

    thread_id: int
    exec_time: int
    skip_lines: int
    schema: str
    table: str
    fields: tuple[str, ...]
    file_name: str
    field_term: bytes
    enclosed: bytes
    line_term: bytes
    line_start: bytes
    escaped: bytes
    opt_flags: int
    empty_flags: int = 0


@dataclass(frozen=True, slots=True)
class CreateFileEvent(LoadEvent):
    """CREATE_FILE_EVENT (8): a LOAD DATA statement with the first block of its file."""

    file_id: int = 0
    data: bytes = b""


@dataclass(frozen=True, slots=True)
class ExecLoadEvent(Event):
    """EXEC_LOAD_EVENT (10): execute the LOAD DATA of ``file_id``."""

    file_id: int


@dataclass(frozen=True, slots=True)
class DeleteFileEvent(Event):
    """DELETE_FILE_EVENT (11): the LOAD DATA of ``file_id`` failed; drop its file."""

    file_id: int


@dataclass(frozen=True, slots=True)
class SlaveEvent(Event):
    """SLAVE_EVENT (7): a replica's primary coordinates (never written by any server)."""

    master_pos: int
    master_port: int
    master_host: str
    master_log: str
