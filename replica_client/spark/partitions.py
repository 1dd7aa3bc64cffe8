"""A micro-batch cut into partitions: the binlog range each task reads itself.

:func:`split_partitions` cuts a batch's transactions into ranges of about
``partitionBytes`` at transaction boundaries. A :class:`RangePartition` holds
no binlog data: where its task starts (an :class:`~.offset.Offset` on the
primary the batch was planned on, with the GTID state and the schema history
valid there), where it ends, and the replica id the task registers with. The
task dumps that range on a connection of its own. No pyspark import.
"""

from __future__ import annotations

import math
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Final

from ..errors import ServerIdConflictError
from ..position import FilePos
from ..schema import SchemaTracker
from .dump import BinlogDump, RangeRow, Txn
from .history import HistoryJson
from .offset import Offset
from .options import SourceOptions

if TYPE_CHECKING:
    import pyarrow as pa

    from .changelog import ChangelogBuilder

__all__ = ["RangePartition", "read_range", "split_partitions"]


@dataclass(frozen=True, slots=True)
class RangePartition:
    """The binlog range one task reads: from ``start`` to the transaction boundary ``end``.

    Attributes:
        start: where the task's dump starts, on the primary ``start.host``: the end
            of the last transaction before the range (its file position, else its
            GTID state), with the schema history valid there.
        end: the boundary after the range's last transaction.
        server_id: the replica id the task registers with (one of ``taskServerIds``;
            a Spark task takes the one its attempt id picks, see ``source.py``).
        transactions: transactions of the range holding changes of the selected tables.
        nbytes: binlog bytes of those transactions.
    """

    start: Offset
    end: FilePos
    server_id: int
    transactions: int
    nbytes: int


def split_partitions(
    txns: list[Txn],
    opts: SourceOptions,
    history_json: Callable[[object], dict[str, Any] | None] | None = None,
) -> list[RangePartition]:
    """Cut a batch into ranges of about ``partitionBytes``, at transaction boundaries,
    about ``maxPartitions`` at most (one more where the batch moved to another primary:
    a range is read from one).

    Only transactions holding changes of the selected tables are read: a range
    starts at the first such transaction, so the ones between ranges are not.
    ``history_json``: the JSON form of a history, as an offset holds it.
    """
    kept = [t for t in txns if t.events]
    if not kept:
        return []
    form = history_json if history_json is not None else HistoryJson(opts.tables or None)
    total = sum(t.nbytes for t in kept)
    ids = opts.task_server_ids
    count = ids[1] - ids[0] + 1  # replica ids for the batch's tasks, which run at once
    n = max(1, min(opts.max_partitions, count, math.ceil(total / opts.partition_bytes), len(kept)))
    groups: list[list[Txn]] = []
    acc = 0
    index = -1
    for t in kept:
        at = min(n - 1, acc * n // total) if total else 0
        if at != index or t.host != groups[-1][-1].host:
            groups.append([])
            index = at
        groups[-1].append(t)
        acc += t.nbytes
    out: list[RangePartition] = []
    for group in groups:
        first, last = group[0], group[-1]
        begin = first.begin
        file, pos = (begin.file, begin.pos) if isinstance(begin, FilePos) else ("", 0)
        start = Offset(file, pos, first.begin_state, first.host, schema=form(first.begin_schema))
        server_id = ids[0] + len(out) % count  # (one more range where the batch moved)
        nbytes = sum(t.nbytes for t in group)
        out.append(RangePartition(start, last.end, server_id, len(group), nbytes))
    return out


def read_range(
    opts: SourceOptions, part: RangePartition, builder: ChangelogBuilder | None = None
) -> Iterator[pa.RecordBatch]:
    """The changelog batches of one range, read by the task on a dump of its own (the
    executor side of :func:`split_partitions`).

    Raises:
        BinlogPositionError: the primary no longer has the range.
        SchemaHistoryError: a TABLE_MAP the range's history cannot prove.
    """
    if builder is None:
        from .changelog import ChangelogBuilder

        builder = ChangelogBuilder()
    dump, rows, first = _open_range(opts, part)
    with dump:
        if first is not None:
            builder.add(*first)
            for event, file, pos, gtid in rows:
                builder.add(event, file, pos, gtid)
                yield from builder.ready()
    yield from builder.rest()


#: Seconds a task waits for its replica id to be free (see :func:`_open_range`).
ID_WAIT: Final = 30.0


def _open_range(
    opts: SourceOptions, part: RangePartition
) -> tuple[BinlogDump, Iterator[RangeRow], RangeRow | None]:
    """The dump of a range, its rows, and the first of them (None: the range has none).

    The task's replica id may still be the primary's for a moment: the dump of the
    batch before, whose task closed its connection, or another read of the same
    partition (a query that reads the micro-batch twice). The primary then refuses
    the registration (``ServerIdConflictError``) before any event: it is asked again,
    for up to :data:`ID_WAIT` seconds.
    """
    start = part.start
    history = start.history()
    deadline = time.monotonic() + ID_WAIT
    delay = 0.05
    while True:
        tracker = SchemaTracker(history, unproven=opts.unproven) if history is not None else None
        dump = BinlogDump(
            opts.for_address(start.host) if start.host else opts,
            start.start(start.host),
            start.gtid_state(),
            decode_rows=True,
            definitions=tracker,
            server_id=part.server_id,
        )
        rows = dump.rows(part.end)
        try:
            return dump, rows, next(rows, None)
        except ServerIdConflictError:
            dump.close()
            if time.monotonic() + delay > deadline:
                raise
        time.sleep(delay)
        delay = min(1.0, delay * 2)
