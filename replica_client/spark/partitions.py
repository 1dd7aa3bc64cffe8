"""A micro-batch cut into partitions: the transactions each task decodes.

:func:`split_partitions` cuts a batch's transactions into partitions of about
``partitionBytes`` at transaction boundaries; each :class:`PlannedPartition`
carries the distinct schema histories of its transactions once. No pyspark import.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from .dump import Txn
from .history import HistoryJson
from .options import SourceOptions

__all__ = ["PlannedPartition", "TxnSlice", "split_partitions"]

#: What a partition carries per transaction: (FDE, file, GTID, [(pos, raw event)],
#: the index of its schema history in the partition's histories, -1 without one).
TxnSlice = tuple[bytes, str, "str | None", list[tuple[int, bytes]], int]


@dataclass(slots=True)
class PlannedPartition:
    """The transactions one task decodes, and the schema histories they are decoded
    with: each distinct history once, in its JSON form (``SchemaHistory.to_json``)."""

    txns: list[TxnSlice]
    histories: list[dict[str, Any]] = field(default_factory=list)


def split_partitions(
    txns: list[Txn],
    opts: SourceOptions,
    history_json: Callable[[object], dict[str, Any] | None] | None = None,
) -> list[PlannedPartition]:
    """Cut a batch into partitions of about ``partitionBytes`` at transaction boundaries.

    ``history_json``: the JSON form of a transaction's history (``Txn.schema``); each
    partition holds each distinct one once, its transactions name it by index.
    """
    kept = [t for t in txns if t.events]
    if not kept:
        return []
    form = history_json if history_json is not None else HistoryJson(opts.tables or None)
    sizes = [sum(len(raw) for _, raw in t.events) for t in kept]
    total = sum(sizes)
    n = max(1, min(opts.max_partitions, math.ceil(total / opts.partition_bytes), len(kept)))
    parts = [PlannedPartition([]) for _ in range(n)]
    # per partition: id(history) -> its index in the partition's histories
    places: list[dict[int, int]] = [{} for _ in range(n)]
    acc = 0
    for t, size in zip(kept, sizes, strict=True):
        index = min(n - 1, acc * n // total) if total else 0
        part = parts[index]
        where = -1
        if t.schema is not None:
            known = places[index]
            where = known.get(id(t.schema), -1)
            if where < 0:
                data = form(t.schema)
                if data is not None:
                    where = known[id(t.schema)] = len(part.histories)
                    part.histories.append(data)
        part.txns.append((t.fde, t.file, t.gtid, t.events, where))
        acc += size
    return [p for p in parts if p.txns]
