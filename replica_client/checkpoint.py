"""Where a stream stands between transactions, with one JSON form: :class:`Checkpoint`.

Value layer, no I/O. A checkpoint is what a consumer stores after it has
processed a transaction, and what it starts from next time: the binlog
position, the GTID state (MariaDB's domain states, or MySQL's executed set)
and the schema history (the table definitions valid there, where the binlog
does not carry them). ``stream.checkpoint`` gives one; ``connect(start=cp)``
starts from it, so the restarted stream decodes names and types as they were
at that point, not as they are now.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from .errors import ConfigError
from .position import FilePos, Gtid, MysqlGtidSet, point_from_json, point_to_json
from .schema.history import SchemaHistory

__all__ = ["Checkpoint"]


@dataclass(frozen=True, slots=True)
class Checkpoint:
    """A resume point between transactions.

    Attributes:
        position: where the next transaction starts in the primary's binlog
            (None: not known, e.g. before the first event of a GTID start).
        gtid_state: the GTID state after the last transaction (empty when unknown).
        schema_history: the table definitions valid at this point (None: the
            stream kept none).
    """

    position: FilePos | None
    gtid_state: Gtid | MysqlGtidSet
    schema_history: SchemaHistory | None = None

    @property
    def start(self) -> FilePos | Gtid | MysqlGtidSet:
        """What a stream starts from: the GTID state when there is one, else the position.

        Raises:
            ConfigError: neither is known.
        """
        if self.gtid_state:
            return self.gtid_state
        if self.position is not None:
            return self.position
        raise ConfigError("this checkpoint has neither a GTID state nor a position")

    def to_dict(self) -> dict[str, Any]:
        """The binlog point in its one JSON form (:func:`~replica_client.position.point_to_json`),
        and the schema history."""
        out = point_to_json(self.position, self.gtid_state)
        if self.schema_history is not None:
            out["schema"] = self.schema_history.to_json()
        return out

    def to_json(self) -> str:
        """The checkpoint as JSON text: ``{"file", "pos", "gtid", "schema"}``."""
        return json.dumps(self.to_dict(), separators=(",", ":"), sort_keys=True)

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> Checkpoint:
        """The inverse of :meth:`to_dict`; also reads checkpoints written as
        ``{"position": "file:pos", ...}`` and the point of any resume point of the
        project (a Spark offset's JSON, a snapshot's read point).

        Raises:
            ConfigError: not a checkpoint.
        """
        try:
            position, gtid = point_from_json(data)
            schema = data.get("schema")
            return cls(
                position,
                gtid if gtid is not None else Gtid(""),
                SchemaHistory.from_json(schema) if schema is not None else None,
            )
        except (ValueError, TypeError, AttributeError, ConfigError) as exc:
            raise ConfigError(f"not a checkpoint: {exc}") from exc

    @classmethod
    def from_json(cls, text: str | bytes) -> Checkpoint:
        """The inverse of :meth:`to_json`.

        Raises:
            ConfigError: not a checkpoint's JSON.
        """
        try:
            data = json.loads(text)
        except ValueError as exc:
            raise ConfigError(f"not a checkpoint's JSON: {exc}") from exc
        if not isinstance(data, dict):
            raise ConfigError("not a checkpoint's JSON: not an object")
        return cls.from_dict(data)
