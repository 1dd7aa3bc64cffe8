"""Position value types shared by every layer: file/offset and MariaDB GTIDs.

No I/O. ``FilePos`` names a binlog file and a byte offset; ``Gtid`` is a MariaDB
GTID state ("domain-server-seq" triples, comma-separated, one per domain).
Both validate their input, so values built from them are safe to put in SQL.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass
from typing import NamedTuple

from .errors import ConfigError

__all__ = ["FilePos", "Gtid", "GtidTriple", "validate_binlog_file_name"]

# Binlog file names are made by the server from log_bin's basename plus a
# numeric extension; anything outside this set is refused before it reaches SQL
# or a COM_BINLOG_DUMP packet.
_FILE_NAME = re.compile(r"[A-Za-z0-9_.\-]{1,255}")
_TRIPLE = re.compile(r"(\d{1,10})-(\d{1,10})-(\d{1,20})")


def validate_binlog_file_name(name: str) -> str:
    """Return ``name`` if it is a plausible binlog file name, else raise ConfigError."""
    if not _FILE_NAME.fullmatch(name) or name in {".", ".."}:
        raise ConfigError(f"invalid binlog file name {name!r}")
    return name


@dataclass(frozen=True, slots=True, order=True)
class FilePos:
    """A position in the primary's binary log: file name and byte offset."""

    file: str
    pos: int

    def __post_init__(self) -> None:
        validate_binlog_file_name(self.file)
        if not 0 <= self.pos < 1 << 64:
            raise ConfigError(f"invalid binlog position {self.pos!r}")

    def __str__(self) -> str:
        return f"{self.file}:{self.pos}"

    @classmethod
    def parse(cls, text: str) -> FilePos:
        """Parse ``"mysql-bin.000003:4"``."""
        name, sep, pos = text.rpartition(":")
        if not sep or not pos.isdigit():
            raise ConfigError(f"expected FILE:POS, got {text!r}")
        return cls(name, int(pos))


class GtidTriple(NamedTuple):
    """One MariaDB GTID: replication domain, originating server id, sequence number."""

    domain: int
    server_id: int
    seq: int

    def __str__(self) -> str:
        return f"{self.domain}-{self.server_id}-{self.seq}"


@dataclass(frozen=True, slots=True)
class Gtid:
    """A MariaDB GTID state: at most one ``domain-server-seq`` per domain.

    ``Gtid("0-1-100,1-2-7")``; ``str()`` gives the canonical form (sorted by
    domain), which is what goes into ``@slave_connect_state``.
    """

    text: str

    def __post_init__(self) -> None:
        triples = self._parse(self.text)
        object.__setattr__(self, "text", ",".join(str(t) for t in triples))

    @staticmethod
    def _parse(text: str) -> tuple[GtidTriple, ...]:
        by_domain: dict[int, GtidTriple] = {}
        for part in text.replace(" ", "").split(","):
            if not part:
                continue
            m = _TRIPLE.fullmatch(part)
            if m is None:
                raise ConfigError(f"invalid MariaDB GTID {part!r} in {text!r}")
            triple = GtidTriple(int(m[1]), int(m[2]), int(m[3]))
            if triple.domain >= 1 << 32 or triple.server_id >= 1 << 32 or triple.seq >= 1 << 64:
                raise ConfigError(f"GTID component out of range in {part!r}")
            if triple.domain in by_domain:
                raise ConfigError(f"GTID state {text!r} names domain {triple.domain} twice")
            by_domain[triple.domain] = triple
        return tuple(by_domain[d] for d in sorted(by_domain))

    @classmethod
    def from_domains(cls, by_domain: Mapping[int, GtidTriple]) -> Gtid:
        """The state holding ``by_domain``'s triples (domain -> triple), without re-parsing.

        Raises:
            ConfigError: a triple is out of range or filed under another domain.
        """
        for domain, t in by_domain.items():
            if (
                t.domain != domain
                or not 0 <= t.domain < 1 << 32
                or not 0 <= t.server_id < 1 << 32
                or not 0 <= t.seq < 1 << 64
            ):
                raise ConfigError(f"invalid GTID {t} for domain {domain}")
        state = object.__new__(cls)
        text = ",".join(f"{t.domain}-{t.server_id}-{t.seq}" for _, t in sorted(by_domain.items()))
        object.__setattr__(state, "text", text)
        return state

    @property
    def triples(self) -> tuple[GtidTriple, ...]:
        """The GTIDs of this state, one per domain, sorted by domain."""
        return self._parse(self.text)

    def advance(self, gtid: GtidTriple) -> Gtid:
        """Return the state after ``gtid`` was applied (replaces its domain's entry)."""
        rest = [t for t in self.triples if t.domain != gtid.domain]
        rest.append(gtid)
        return Gtid(",".join(str(t) for t in rest))

    def __str__(self) -> str:
        return self.text

    def __bool__(self) -> bool:
        return bool(self.text)
