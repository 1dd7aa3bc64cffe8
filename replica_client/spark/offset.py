"""The resume point of the streaming source: :class:`Offset` and its JSON form.

Offsets are JSON objects ``{"file": "mysql-bin.000003", "pos": 1234, "gtid":
"0-1-77"}``: the position right after a transaction and the GTID state there,
in the JSON form of every resume point of the project
(:func:`~replica_client.position.point_to_json`; ``Checkpoint.from_dict`` reads
an offset, :meth:`Offset.checkpoint` gives one). ``file`` is empty only for a
query started from a GTID state that has not read a transaction yet.

An offset also holds the schema history valid at it (``"schema"``) and, while
a ``startingPosition=snapshot`` query has key ranges left, its snapshot plan.
No pyspark import.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field, replace
from typing import Any

from ..checkpoint import Checkpoint
from ..errors import ConfigError
from ..position import (
    FilePos,
    Gtid,
    MysqlGtidSet,
    parse_gtid_state,
    point_from_json,
    point_to_json,
)
from ..schema import SchemaHistory
from .history import history_from_json
from .snapshot import Chunk

__all__ = ["Offset"]

#: The keys of an offset's JSON that hold histories (left out of messages).
_HISTORIES = frozenset({"schema", "initial_schema"})


@dataclass(frozen=True, slots=True)
class Offset:
    """A resume point of the stream: after a transaction, with the GTID state there.

    ``file``/``pos`` are positions in the binlog of ``host`` (the primary the
    offset was taken on; empty in offsets written before hosts were tracked):
    on another primary the offset resumes by its GTID state.
    """

    file: str
    pos: int
    gtid: str
    host: str = ""
    #: startingPosition=snapshot, while key ranges are left: JSON of
    #: ``{"chunks": [...], "next": n}`` (the ranges, and how many are planned);
    #: the stream starts at file/pos once they are all planned.
    snapshot: str = ""
    #: The schema history valid at this offset, in its JSON form (None: without one,
    #: schemaHistory=off or an offset written before histories were kept). Not
    #: compared: two offsets at one binlog point of one query hold the same history.
    schema: dict[str, Any] | None = field(default=None, compare=False, repr=False)
    #: In the end offset of a query's first stream batch only: the history at the
    #: query's initial offset, which Spark does not log (a replay of that batch after
    #: a restart starts from a newly made initial offset, whose history is not the
    #: one the batch was planned with).
    initial_schema: dict[str, Any] | None = field(default=None, compare=False, repr=False)

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> Offset:
        try:
            snapshot = data.get("snapshot")
            schema = data.get("schema")
            initial = data.get("initial_schema")
            if not all(isinstance(v, dict | None) for v in (schema, initial)):
                raise TypeError("schema is not an object")
            position, gtid = point_from_json(data)
            if gtid is None:
                raise KeyError("gtid")
            return cls(
                position.file if position is not None else "",
                position.pos if position is not None else 0,
                str(data["gtid"]),
                str(data.get("host") or ""),
                json.dumps(snapshot, separators=(",", ":")) if snapshot else "",
                schema,
                initial,
            )
        except (KeyError, TypeError, ValueError, ConfigError) as exc:
            shown = data
            if isinstance(data, dict):
                shown = {k: v for k, v in data.items() if k not in _HISTORIES}
            raise ConfigError(f"not an offset of the mariadb_binlog source: {shown!r}") from exc

    def to_json(self) -> dict[str, Any]:
        """The JSON form Spark keeps (the history last: an offset read back and written
        again is the same text, as Spark compares offsets by their text)."""
        out = point_to_json(FilePos(self.file, self.pos) if self.file else None, self.gtid)
        if self.host:
            out["host"] = self.host
        if self.snapshot:
            out["snapshot"] = json.loads(self.snapshot)
        if self.schema is not None:
            out["schema"] = self.schema
        if self.initial_schema is not None:
            out["initial_schema"] = self.initial_schema
        return out

    def history(self) -> SchemaHistory | None:
        """The schema history this offset holds (None without one).

        Raises:
            ConfigError: its ``schema`` is not a schema history's JSON form.
        """
        if self.schema is None:
            return None
        return history_from_json(self.schema, f"offset {self.file}:{self.pos}")

    def snapshot_plan(self) -> tuple[list[Chunk], int]:
        """The key ranges of the snapshot and how many of them are planned so far."""
        if not self.snapshot:
            return [], 0
        data = json.loads(self.snapshot)
        return [(str(n), a, u) for n, a, u in data["chunks"]], int(data["next"])

    def with_snapshot(self, chunks: list[Chunk], planned: int) -> Offset:
        """This offset with ``planned`` of ``chunks`` planned (none left: the stream's)."""
        if planned >= len(chunks):
            return replace(self, snapshot="")
        text = json.dumps({"chunks": chunks, "next": planned}, separators=(",", ":"))
        return replace(self, snapshot=text)

    @property
    def key(self) -> tuple[str, int, str]:
        return (self.file, self.pos, self.gtid + self.snapshot)

    def on(self, address: str) -> bool:
        """Whether the offset's file position is one of ``address``'s binlog."""
        return not self.host or self.host == address

    def start(self, address: str = "") -> FilePos | Gtid | MysqlGtidSet:
        """Where a dump from this offset starts on the primary at ``address``."""
        if self.file and (not address or self.on(address)):
            return FilePos(self.file, self.pos)
        if not self.gtid:
            raise ConfigError(
                f"offset {self.shown()} has no GTID state: it cannot be resumed on "
                f"another primary ({address})"
            )
        return parse_gtid_state(self.gtid)

    def shown(self) -> dict[str, Any]:
        """The offset for messages (without its schema history)."""
        return {k: v for k, v in self.to_json().items() if k not in _HISTORIES}

    def gtid_state(self) -> Gtid | MysqlGtidSet:
        """The GTID state at this offset (MariaDB state or MySQL executed set)."""
        return parse_gtid_state(self.gtid)

    def checkpoint(self) -> Checkpoint:
        """This offset as the resume point of a stream: ``connect(start=...)`` goes on
        from it (on the offset's primary; by its GTID state elsewhere).

        Raises:
            ConfigError: its ``schema`` is not a schema history's JSON form.
        """
        position = FilePos(self.file, self.pos) if self.file else None
        return Checkpoint(position, self.gtid_state() if self.gtid else Gtid(""), self.history())
