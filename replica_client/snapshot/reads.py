"""The ``op="read"`` changes of a batch of rows read from one table. No I/O.

The snapshot reads rows in batches (a fetch of row packets, typed by the
table's text-row plan); :func:`read_changes` makes their changes in one call,
and the keys that move the table's progress once they are handed out.
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Sequence
from operator import itemgetter
from typing import Any, Final

from ..accel import constructor
from ..binlog.events import MISSING
from ..changes import Change, row_changes
from .plan import TablePlan
from .state import Key, ReadPoint

__all__ = ["read_changes"]

#: Change(...) with every field, without the generated __init__ (see accel.constructor).
_new_change: Final = constructor(Change)
#: The image goes to ``after``; no row index (a read row is not in a rows event).
_READ_SLOTS: Final = (4, -1, -1)


def read_changes(
    plan: TablePlan, rows: Sequence[tuple[Any, ...]], point: ReadPoint, at: dt.datetime
) -> tuple[list[Change], list[Key] | None]:
    """The ``op="read"`` changes of ``rows`` (values in the plan's column order) read at
    ``point``, and their keys in order (None when the table's key order is not
    Python's: its progress is not kept per key)."""
    names = tuple(c.name for c in plan.columns)
    fields = (
        "read",
        plan.schema,
        plan.table,
        None,
        None,
        None,
        point.position,
        at,
        0,
        plan.key,
        0,
        None,
    )
    changes = row_changes(_new_change, names, tuple(rows), MISSING, fields, _READ_SLOTS)
    key = plan.key
    if not plan.ordered_key:
        return changes, None
    index = [names.index(k) for k in key]
    if len(index) == 1:
        i = index[0]
        return changes, [(v[i],) for v in rows]
    get = itemgetter(*index)
    return changes, [get(v) for v in rows]
