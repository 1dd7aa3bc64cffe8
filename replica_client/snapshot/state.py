"""Where a snapshot's reads stand: read points, the keys read at each, the checkpoint.

A :class:`ReadPoint` is the binlog point a read of rows stands at;
:class:`TableProgress` records which key ranges of a table were read at which
point; :class:`SnapshotState` is the snapshot's checkpoint and its JSON form
(keys saved by :func:`key_to_json` / :func:`key_from_json`). No I/O.
"""

from __future__ import annotations

import bisect
import datetime as dt
import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, replace
from decimal import Decimal
from typing import Any, Final, Literal

from ..changes import Change
from ..errors import ConfigError, SnapshotError
from ..position import FilePos, Gtid, MysqlGtidSet, point_from_json, point_to_json

__all__ = [
    "Key",
    "ReadPoint",
    "Segment",
    "SnapshotMode",
    "SnapshotState",
    "TableProgress",
    "key_from_json",
    "key_to_json",
]

#: "consistent": every table in one transaction; "chunked": primary-key ranges
#: in short transactions while the stream runs.
SnapshotMode = Literal["consistent", "chunked"]


# -- where a read stands in the binlog --------------------------------------------------------


@dataclass(frozen=True, slots=True)
class ReadPoint:
    """The binlog point a read of rows stands at: the transactions before it are in the rows.

    ``gtid`` is the GTID state at that point (None on a MySQL primary without
    GTIDs); it decides when both it and the change have one (it survives a
    failover), else ``position`` (file order, then offset) does.
    """

    position: FilePos
    gtid: Gtid | MysqlGtidSet | None = None

    def includes(self, change: Change) -> bool:
        """Whether ``change``'s transaction is already in what was read at this point."""
        if self.gtid is not None and change.gtid:
            return _gtid_in(change.gtid, self.gtid)
        if change.position is None:
            return False
        return change.position.order < self.position.order

    def passed(self, position: FilePos | None, gtid: Gtid | MysqlGtidSet | None) -> bool:
        """Whether a stream that delivered up to ``position`` / ``gtid`` has passed this point."""
        if self.gtid is not None and gtid is not None and (self.gtid or gtid):
            if isinstance(self.gtid, Gtid) and isinstance(gtid, Gtid):
                have = {t.domain: t.seq for t in gtid.triples}
                return all(have.get(t.domain, -1) >= t.seq for t in self.gtid.triples)
            if isinstance(self.gtid, MysqlGtidSet) and isinstance(gtid, MysqlGtidSet):
                return not self.gtid.missing_from(gtid)
        if position is None:
            return False
        return position.order >= self.position.order

    def to_json(self) -> dict[str, Any]:
        return point_to_json(self.position, self.gtid)

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> ReadPoint:
        position, gtid = point_from_json(data)
        if position is None:
            raise ValueError("a read point without a binlog position")
        return cls(position, gtid)


def _gtid_in(gtid: str, state: Gtid | MysqlGtidSet) -> bool:
    if isinstance(state, MysqlGtidSet):
        return gtid in state
    domain, _, rest = gtid.partition("-")
    seq = rest.rpartition("-")[2]
    if not (domain.isdigit() and seq.isdigit()):
        return False
    return any(t.domain == int(domain) and t.seq >= int(seq) for t in state.triples)


# -- progress: which keys were read where -------------------------------------------------------

Key = tuple[Any, ...]


@dataclass(slots=True)
class Segment:
    """Keys ``after < key <= upto`` of a table (None: unbounded) were read at ``point``.

    Mutable: the last segment grows with every row read (a new object per row cost
    12% of the read path); ``SnapshotState.resumed_at`` hands out copies."""

    after: Key | None
    upto: Key | None
    point: ReadPoint


@dataclass(slots=True)
class TableProgress:
    """What of one table has been read: its segments in key order, and whether it is done."""

    name: str  # "schema.table"
    segments: list[Segment] = field(default_factory=list)
    done: bool = False

    @property
    def last_key(self) -> Key | None:
        """The last key read (where the next read continues), None if none."""
        return self.segments[-1].upto if self.segments else None

    def point_for(self, key: Key) -> ReadPoint | None:
        """The point ``key`` was read at; None when it is not read yet."""
        segments = self.segments
        if not segments:
            return None
        if len(segments) == 1 and segments[0].after is None:
            s = segments[0]
            return s.point if s.upto is None or _le(key, s.upto) else None
        uppers = [s.upto for s in segments]
        i = bisect.bisect_left(_Keys(uppers), key)
        return segments[i].point if i < len(segments) else None

    def read(self, after: Key | None, upto: Key | None, point: ReadPoint) -> None:
        """Record that keys in ``(after, upto]`` were read at ``point`` (extends the last one)."""
        last = self.segments[-1] if self.segments else None
        if last is not None and last.upto == after and (last.point is point or last.point == point):
            last.upto = upto
        else:
            self.segments.append(Segment(after, upto, point))


class _Keys(Sequence[Any]):
    """Segment upper bounds for bisect (None: above every key)."""

    def __init__(self, uppers: list[Key | None]) -> None:
        self._uppers = uppers

    def __len__(self) -> int:
        return len(self._uppers)

    def __getitem__(self, i: Any) -> Any:
        upto = self._uppers[i]
        return _Top if upto is None else upto


class _TopKey:
    def __lt__(self, other: object) -> bool:
        return False

    def __gt__(self, other: object) -> bool:
        return True


_Top: Final = _TopKey()


def _le(a: Key, b: Key) -> bool:
    try:
        return bool(a <= b)
    except TypeError as exc:
        raise SnapshotError(f"key {a!r} cannot be ordered against {b!r}") from exc


@dataclass(slots=True)
class SnapshotState:
    """Where a snapshot stands: its checkpoint (``stream.snapshot_state``).

    ``start`` is where the stream starts (the first read point); ``tables``
    the tables to read, in order, with what of each was read. ``to_json()`` /
    ``from_json()`` save and restore it; ``connect(snapshot=state)`` resumes.
    """

    mode: SnapshotMode
    start: ReadPoint
    tables: list[TableProgress]

    @property
    def reading(self) -> TableProgress | None:
        """The first table not read to its end, None once all are."""
        return next((t for t in self.tables if not t.done), None)

    def resumed_at(self, start: ReadPoint) -> SnapshotState:
        """A copy whose stream starts at ``start`` (where the stream has delivered up to)."""
        return SnapshotState(
            self.mode,
            start,
            [TableProgress(t.name, [replace(s) for s in t.segments], t.done) for t in self.tables],
        )

    def points(self) -> list[ReadPoint]:
        return [s.point for t in self.tables for s in t.segments]

    def to_json(self) -> str:
        return json.dumps(
            {
                "mode": self.mode,
                "start": self.start.to_json(),
                "tables": [
                    {
                        "name": t.name,
                        "done": t.done,
                        "segments": [
                            [key_to_json(s.after), key_to_json(s.upto), s.point.to_json()]
                            for s in t.segments
                        ],
                    }
                    for t in self.tables
                ],
            },
            sort_keys=True,
        )

    @classmethod
    def from_json(cls, text: str) -> SnapshotState:
        try:
            data = json.loads(text)
            mode = data["mode"]
            if mode not in ("consistent", "chunked"):
                raise ValueError(f"mode {mode!r}")
            return cls(
                mode,
                ReadPoint.from_json(data["start"]),
                [
                    TableProgress(
                        str(t["name"]),
                        [
                            Segment(key_from_json(a), key_from_json(u), ReadPoint.from_json(p))
                            for a, u, p in t["segments"]
                        ],
                        bool(t["done"]),
                    )
                    for t in data["tables"]
                ],
            )
        except (ValueError, KeyError, TypeError) as exc:
            raise ConfigError(f"not a snapshot state: {exc}") from exc


def key_to_json(key: Key | None) -> list[Any] | None:
    if key is None:
        return None
    out: list[Any] = []
    for v in key:
        if isinstance(v, bool) or v is None:
            raise SnapshotError(f"key value {v!r} cannot be saved")
        if isinstance(v, int):
            out.append(v)
        elif isinstance(v, Decimal):
            out.append({"decimal": str(v)})
        elif isinstance(v, dt.datetime):
            out.append({"datetime": v.isoformat()})
        elif isinstance(v, dt.date):
            out.append({"date": v.isoformat()})
        elif isinstance(v, bytes):
            out.append({"hex": v.hex()})
        else:
            raise SnapshotError(f"key value {v!r} of type {type(v).__name__} cannot be saved")
    return out


def key_from_json(data: list[Any] | None) -> Key | None:
    if data is None:
        return None
    out: list[Any] = []
    for v in data:
        if isinstance(v, int):
            out.append(v)
        elif "decimal" in v:
            out.append(Decimal(v["decimal"]))
        elif "datetime" in v:
            out.append(dt.datetime.fromisoformat(v["datetime"]))
        elif "date" in v:
            out.append(dt.date.fromisoformat(v["date"]))
        else:
            out.append(bytes.fromhex(v["hex"]))
    return tuple(out)
