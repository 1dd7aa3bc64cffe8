"""Progress lines of the command line on a terminal: a file read, a snapshot.

Driver layer (stderr only; :mod:`replica_client.cli` shows them when stderr is a
terminal). :class:`FileProgress` draws a bar over binlog files by bytes read;
:class:`SnapshotMeter` a line per snapshot table: rows read of the server's
estimate, rows per second and the time left at that rate.
"""

from __future__ import annotations

import sys
import time
from collections.abc import Callable, Iterable, Iterator, Sequence
from pathlib import Path
from typing import Any, TextIO

from .binlog.events import Event
from .position import FilePos
from .snapshot.progress import SnapshotProgress

__all__ = ["FileProgress", "SnapshotMeter"]


class FileProgress:
    """A one-line progress bar on stderr over binlog files (by their bytes)."""

    def __init__(self, files: list[Path]) -> None:
        self.sizes = {f.name.removesuffix(".gz"): f.stat().st_size for f in files}
        self.total = max(sum(self.sizes.values()), 1)
        self.order = list(self.sizes)
        self._last = -1

    def update(self, pos: FilePos | None) -> None:
        if pos is None or pos.file not in self.sizes:
            return
        idx = self.order.index(pos.file)
        done = sum(self.sizes[n] for n in self.order[:idx]) + pos.pos
        pct = min(100, done * 100 // self.total)
        if pct != self._last:
            self._last = pct
            bar = "#" * (pct // 4)
            sys.stderr.write(f"\r[{bar:<25}] {pct:3d}% {pos}")
            sys.stderr.flush()

    def follow(self, events: Iterable[Event], reader: Any) -> Iterator[Event]:
        """Pass ``events`` through, redrawing the bar every few hundred events."""
        for n, event in enumerate(events):
            if n % 256 == 0:
                self.update(reader.position)
            yield event

    def done(self) -> None:
        bar = "#" * 25
        sys.stderr.write(f"\r[{bar}] 100%{' ' * 40}\n")
        sys.stderr.flush()


class SnapshotMeter:
    """One status line for a running snapshot, redrawn at most every ``every`` seconds:
    the table being read, its rows read of the server's estimate, rows/s over the
    whole snapshot and the time left at that rate."""

    def __init__(
        self,
        out: TextIO | None = None,
        *,
        every: float = 0.5,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self._out = out if out is not None else sys.stderr
        self._every = every
        self._clock = clock
        self._began = clock()
        self._drawn = self._began - every
        self._width = 0

    def update(self, tables: Sequence[SnapshotProgress] | None) -> None:
        """Redraw from ``stream.snapshot_progress`` (None: no snapshot runs)."""
        now = self._clock()
        if tables is None or now - self._drawn < self._every:
            return
        self._drawn = now
        self._draw(line(tables, now - self._began))

    def done(self) -> None:
        """End the line (the snapshot is over, or the command stops)."""
        if self._width:
            self._out.write("\n")
            self._out.flush()
            self._width = 0

    def _draw(self, text: str) -> None:
        self._out.write("\r" + text.ljust(self._width))
        self._out.flush()
        self._width = len(text)


def line(tables: Sequence[SnapshotProgress], seconds: float) -> str:
    """The status line of a snapshot that has run ``seconds``."""
    read = sum(t.rows_read for t in tables)
    rate = read / seconds if seconds > 0 else 0.0
    current = next((t for t in tables if not t.done), None)
    done = sum(1 for t in tables if t.done)
    text = f"snapshot: {read:,} rows, {rate:,.0f} rows/s, {done}/{len(tables)} tables read"
    if current is None:
        return text
    text += f"; {current.table}: {current.rows_read:,}"
    if current.rows_estimated:
        text += f" of ~{current.rows_estimated:,}"
        fraction = current.fraction
        if fraction is not None:
            text += f" ({fraction:.0%})"
    rest = sum(max((t.rows_estimated or 0) - t.rows_read, 0) for t in tables if not t.done)
    if rate > 0 and rest:
        text += f", about {_duration(rest / rate)} left"
    return text


def _duration(seconds: float) -> str:
    if seconds < 60:
        return f"{seconds:.0f} s"
    if seconds < 3600:
        return f"{seconds / 60:.0f} min"
    return f"{seconds / 3600:.1f} h"
