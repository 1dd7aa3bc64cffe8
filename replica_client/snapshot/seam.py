"""The stream's side of the seam: which changes are delivered, which DDL removes tables.

:class:`Seam` keeps or drops each change of the stream by the point its row key
was read at (see :mod:`replica_client.snapshot`); :func:`ddl_tables` names the
tables a ``TRUNCATE``/``DROP``/``RENAME`` statement of the stream removes. No I/O.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import replace

from ..changes import Change
from .plan import TablePlan
from .state import Key, SnapshotState, TableProgress

__all__ = ["Seam", "ddl_tables"]

# -- DDL seen in the stream --------------------------------------------------------------------

_IDENT = r"(?:`(?:[^`]|``)+`|[A-Za-z0-9_$]+)"
_NAME = re.compile(rf"({_IDENT})(?:\s*\.\s*({_IDENT}))?")
_DDL = re.compile(r"\s*(TRUNCATE|DROP|RENAME)\b(.*)", re.IGNORECASE | re.DOTALL)
_COMMENTS = re.compile(r"/\*.*?\*/|(?:--\s|#)[^\n]*", re.DOTALL)
_DDL_WORDS = frozenset(
    {"TABLE", "TABLES", "TEMPORARY", "IF", "EXISTS", "TO", "RESTRICT", "CASCADE", "NOWAIT", "WAIT"}
)


def _unquote(name: str) -> str:
    return name[1:-1].replace("``", "`") if name.startswith("`") else name


def ddl_tables(query: str, schema: str) -> tuple[str, list[str]]:
    """The statement (``TRUNCATE``, ``DROP``, ``RENAME``) and the ``"schema.table"`` names
    a table-removing DDL statement names (``("", [])`` for any other statement)."""
    m = _DDL.match(_COMMENTS.sub(" ", query))
    if m is None:
        return "", []
    kind, rest = m[1].upper(), m[2]
    words = rest.split(None, 2)
    if kind != "TRUNCATE" and not (
        words and (words[0].upper().startswith("TABLE") or words[0].upper() == "TEMPORARY")
    ):
        return "", []  # DROP DATABASE, RENAME USER, ...
    names = []
    for found in _NAME.finditer(rest):
        first, second = found[1], found[2]
        if (second is None and first.upper() in _DDL_WORDS) or first.isdigit():
            continue
        if second is None:
            names.append(f"{schema}.{_unquote(first)}")
        else:
            names.append(f"{_unquote(first)}.{_unquote(second)}")
    return kind, names


# -- the seam ---------------------------------------------------------------------------------


class Seam:
    """Which of the stream's changes to deliver while a snapshot's read points are ahead of it."""

    def __init__(self, state: SnapshotState, plans: Mapping[str, TablePlan]) -> None:
        self.state = state
        self._plans = plans
        self._tables = {t.name: t for t in state.tables}

    def keep(self, change: Change) -> Change | None:
        """``change`` (or its delivered side, for a key-moving update), or None to drop it."""
        progress = self._tables.get(f"{change.schema}.{change.table}")
        if progress is None:
            return change  # not a snapshot table
        plan = self._plans.get(progress.name)
        if plan is None or not plan.key:
            # Not planned yet (read later) or without a key: one segment holds the whole
            # table (read in one go), or nothing was read yet.
            point = progress.segments[0].point if progress.done and progress.segments else None
            return change if point is not None and not point.includes(change) else None
        before = plan.key_of(change.before) if change.before is not None else None
        after = None
        if change.after is not None:
            image = change.after if change.before is None else {**change.before, **change.after}
            after = plan.key_of(image)
        keep_before = before is not None and self._delivered(progress, before, change)
        keep_after = after is not None and self._delivered(progress, after, change)
        if change.op == "update" and before != after:
            if keep_before and keep_after:
                return change
            if keep_before:
                return replace(change, op="delete", after=None)
            if keep_after:
                return replace(change, op="insert", before=None)
            return None
        return change if (keep_before or keep_after) else None

    @staticmethod
    def _delivered(progress: TableProgress, key: Key, change: Change) -> bool:
        point = progress.point_for(key)
        return point is not None and not point.includes(change)
