"""MySQL GTID sets (``uuid:1-100:200,uuid2:1-5``) and their COM_BINLOG_DUMP_GTID encoding.

No I/O. MariaDB GTIDs are :class:`replica_client.position.Gtid`; this type is
only for the MySQL flavor. Encoding (MySQL ``Gtid_set::encode``):

    n_sids u64 | { sid[16] | n_intervals u64 | { start u64 | end u64 (exclusive) }* }*
"""

from __future__ import annotations

import re
import struct
import uuid
from dataclasses import dataclass
from typing import Final

from ..errors import ConfigError

__all__ = ["MysqlGtidSet"]

_U64: Final = struct.Struct("<Q")
_INTERVAL: Final = struct.Struct("<QQ")
_INTERVAL_RE: Final = re.compile(r"(\d{1,19})(?:-(\d{1,19}))?")


@dataclass(frozen=True, slots=True)
class MysqlGtidSet:
    """A MySQL GTID set, validated and normalised (``str()`` is the canonical text)."""

    text: str

    def __post_init__(self) -> None:
        parsed = self._parse(self.text)
        canonical = ",".join(
            f"{sid}:" + ":".join(f"{a}-{b}" if a != b else str(a) for a, b in ivs)
            for sid, ivs in parsed
        )
        object.__setattr__(self, "text", canonical)

    @staticmethod
    def _parse(text: str) -> list[tuple[uuid.UUID, list[tuple[int, int]]]]:
        by_sid: dict[uuid.UUID, list[tuple[int, int]]] = {}
        for part in text.replace(" ", "").replace("\n", "").split(","):
            if not part:
                continue
            sid_text, _, rest = part.partition(":")
            try:
                sid = uuid.UUID(sid_text)
            except ValueError as exc:
                raise ConfigError(f"invalid server UUID {sid_text!r} in GTID set") from exc
            if not rest:
                raise ConfigError(f"GTID set entry {part!r} has no intervals")
            intervals = by_sid.setdefault(sid, [])
            for iv in rest.split(":"):
                m = _INTERVAL_RE.fullmatch(iv)
                if m is None:
                    raise ConfigError(f"invalid GTID interval {iv!r} in {part!r}")
                start = int(m[1])
                end = int(m[2]) if m[2] else start
                if not 1 <= start <= end < 1 << 63:
                    raise ConfigError(f"invalid GTID interval {iv!r} in {part!r}")
                intervals.append((start, end))
        result = []
        for sid in sorted(by_sid, key=str):
            merged: list[tuple[int, int]] = []
            for start, end in sorted(by_sid[sid]):
                if merged and start <= merged[-1][1] + 1:
                    merged[-1] = (merged[-1][0], max(end, merged[-1][1]))
                else:
                    merged.append((start, end))
            result.append((sid, merged))
        return result

    def encode(self) -> bytes:
        """The binary form sent in COM_BINLOG_DUMP_GTID."""
        parsed = self._parse(self.text)
        parts = [_U64.pack(len(parsed))]
        for sid, intervals in parsed:
            parts.append(sid.bytes)
            parts.append(_U64.pack(len(intervals)))
            parts.extend(_INTERVAL.pack(a, b + 1) for a, b in intervals)
        return b"".join(parts)

    def __str__(self) -> str:
        return self.text
