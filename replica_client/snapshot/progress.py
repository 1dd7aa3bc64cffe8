"""How far a snapshot has read each table: :class:`SnapshotProgress`. No I/O."""

from __future__ import annotations

from dataclasses import dataclass

__all__ = ["SnapshotProgress"]


@dataclass(frozen=True, slots=True)
class SnapshotProgress:
    """One table of a running snapshot (``stream.snapshot_progress``).

    Attributes:
        table: ``"schema.table"``.
        rows_read: rows read and handed on so far (in this run of the snapshot).
        rows_estimated: ``information_schema.TABLES.TABLE_ROWS`` when the snapshot
            began: the server's estimate (InnoDB's is approximate), None if unknown.
        done: the table is read to its end.
    """

    table: str
    rows_read: int
    rows_estimated: int | None
    done: bool

    @property
    def fraction(self) -> float | None:
        """Read of the estimate, 0..1 (1 once done); None without an estimate."""
        if self.done:
            return 1.0
        if not self.rows_estimated:
            return None
        return min(self.rows_read / self.rows_estimated, 0.99)
