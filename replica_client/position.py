"""Position value types shared by every layer: file/offset, MariaDB and MySQL GTIDs.

No I/O. ``FilePos`` names a binlog file and a byte offset; ``Gtid`` is a MariaDB
GTID state ("domain-server-seq" triples, comma-separated, one per domain);
``MysqlGtidSet`` a MySQL GTID set (``uuid:1-100:200,uuid2:tag:1-5``). All
validate their input, so values built from them are safe to put in SQL.
"""

from __future__ import annotations

import re
import struct
import uuid
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from typing import Any, Final, NamedTuple

from .accel import speedups
from .errors import ConfigError

__all__ = [
    "FilePos",
    "binlog_file_order",
    "Gtid",
    "GtidTriple",
    "MysqlGtidSet",
    "MysqlSource",
    "PositionMaker",
    "missing_transactions",
    "parse_gtid_state",
    "parse_gtid_triples",
    "point_from_json",
    "point_to_json",
    "validate_binlog_file_name",
]

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


def binlog_file_order(name: str) -> tuple[str, int, str]:
    """The order of binlog files: by base name, then by the number of the extension
    (``mysql-bin.000009`` < ``mysql-bin.000010`` < ``mysql-bin.1000000``, which the
    server writes after ``.999999``). A name without a numeric extension sorts by
    its text after the numbered ones of its base. The one definition of file order."""
    base, dot, ext = name.rpartition(".")
    if dot and ext.isdigit():
        return base, int(ext), ""
    return name, 1 << 64, name


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

    @property
    def order(self) -> tuple[str, int, str, int]:
        """A key that sorts positions in binlog order (files by number, see
        :func:`binlog_file_order`; ``<`` on FilePos itself compares the names as text)."""
        return (*binlog_file_order(self.file), self.pos)

    @classmethod
    def parse(cls, text: str) -> FilePos:
        """Parse ``"mysql-bin.000003:4"``."""
        name, sep, pos = text.rpartition(":")
        if not sep or not pos.isdigit():
            raise ConfigError(f"expected FILE:POS, got {text!r}")
        return cls(name, int(pos))


class PositionMaker:
    """``make(file, pos)``: ``FilePos(file, pos)`` for the many positions of a few files.

    What ``FilePos`` checks, checked here: the file name once per name (the
    same ``str`` object is not checked again), the offset every time. With
    the accelerator the instance is then built without the dataclass
    ``__init__`` (a 4-event transaction's change position in a stream, or
    every rows event of a file: the name check was most of the cost).
    """

    __slots__ = ("_file", "_new")

    def __init__(self) -> None:
        self._file: str | None = None
        sp = speedups()
        self._new: Callable[[str, int], FilePos] = (
            FilePos if sp is None else sp.Maker(FilePos, ("file", "pos"))
        )

    def make(self, file: str, pos: int) -> FilePos:
        """``FilePos(file, pos)``.

        Raises:
            ConfigError: an invalid file name or offset.
        """
        if file is not self._file:
            validate_binlog_file_name(file)
            self._file = file
        if not 0 <= pos < 1 << 64:
            raise ConfigError(f"invalid binlog position {pos!r}")
        return self._new(file, pos)


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
        for triple in parse_gtid_triples(text):
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


#: One source of a MySQL GTID set: (server UUID, tag, "" when untagged).
MysqlSource = tuple[str, str]
#: Inclusive (first, last) intervals of transaction numbers, sorted and disjoint.
Intervals = tuple[tuple[int, int], ...]

_U64: Final = struct.Struct("<Q")
_INTERVAL: Final = struct.Struct("<QQ")
_GNO: Final = re.compile(r"(\d{1,19})(?:-(\d{1,19}))?")
_TAG: Final = re.compile(r"[a-z_][a-z0-9_]{0,31}")
_MAX_GNO: Final = (1 << 63) - 1


def _merge(intervals: Iterable[tuple[int, int]]) -> Intervals:
    merged: list[tuple[int, int]] = []
    for first, last in sorted(intervals):
        if merged and first <= merged[-1][1] + 1:
            if last > merged[-1][1]:
                merged[-1] = (merged[-1][0], last)
        else:
            merged.append((first, last))
    return tuple(merged)


@dataclass(frozen=True, slots=True)
class MysqlGtidSet:
    """A MySQL GTID set, validated and normalised (``str()`` is the canonical text).

    ``MysqlGtidSet("3e11fa47-71ca-11e1-9e33-c80aa9429562:1-5:7")``; tagged GTIDs
    (MySQL 8.4+) read ``uuid:tag:1-3``. Sources are sorted by UUID, a source's
    untagged intervals come before its tags (sorted), as the server prints them.
    """

    text: str

    def __post_init__(self) -> None:
        object.__setattr__(self, "text", _gtid_set_text(self._parse(self.text)))

    @staticmethod
    def _parse(text: str) -> dict[MysqlSource, Intervals]:
        by_source: dict[MysqlSource, list[tuple[int, int]]] = {}
        for part in text.replace(" ", "").replace("\n", "").split(","):
            if not part:
                continue
            sid_text, _, rest = part.partition(":")
            try:
                sid = str(uuid.UUID(sid_text))
            except ValueError as exc:
                raise ConfigError(f"invalid server UUID {sid_text!r} in GTID set") from exc
            if not rest:
                raise ConfigError(f"GTID set entry {part!r} has no intervals")
            tag = ""
            for item in rest.split(":"):
                m = _GNO.fullmatch(item)
                if m is None:
                    if not _TAG.fullmatch(item):
                        raise ConfigError(f"invalid GTID interval or tag {item!r} in {part!r}")
                    tag = item
                    by_source.setdefault((sid, tag), [])
                    continue
                first = int(m[1])
                last = int(m[2]) if m[2] else first
                if not 1 <= first <= last <= _MAX_GNO:
                    raise ConfigError(f"invalid GTID interval {item!r} in {part!r}")
                by_source.setdefault((sid, tag), []).append((first, last))
        for source, intervals in by_source.items():
            if not intervals:
                raise ConfigError(f"GTID tag {source[1]!r} of {source[0]} has no intervals")
        return {src: _merge(ivs) for src, ivs in sorted(by_source.items())}

    @classmethod
    def from_sources(cls, sources: Mapping[MysqlSource, Iterable[tuple[int, int]]]) -> MysqlGtidSet:
        """The set holding these intervals (inclusive), without parsing text."""
        merged = {src: _merge(ivs) for src, ivs in sorted(sources.items()) if ivs}
        for (sid, tag), intervals in merged.items():
            if (tag and not _TAG.fullmatch(tag)) or any(
                not 1 <= a <= b <= _MAX_GNO for a, b in intervals
            ):
                raise ConfigError(f"invalid GTID intervals {intervals!r} for {sid}:{tag}")
        state = object.__new__(cls)
        object.__setattr__(state, "text", _gtid_set_text(merged))
        return state

    @property
    def sources(self) -> dict[MysqlSource, Intervals]:
        """(uuid, tag) -> inclusive intervals."""
        return self._parse(self.text)

    def __contains__(self, gtid: object) -> bool:
        """``"uuid:5" in s`` / ``"uuid:tag:5" in s``."""
        if not isinstance(gtid, str):
            return False
        sid, _, rest = gtid.partition(":")
        tag, _, gno_text = rest.rpartition(":")
        if not gno_text.isdigit():
            return False
        gno = int(gno_text)
        intervals = self.sources.get((str(uuid.UUID(sid)), tag), ())
        return any(a <= gno <= b for a, b in intervals)

    def missing_from(self, other: MysqlGtidSet) -> MysqlGtidSet:
        """The GTIDs of this set that ``other`` lacks (empty when ``other`` has them all)."""
        theirs = other.sources
        out: dict[MysqlSource, list[tuple[int, int]]] = {}
        for source, intervals in self.sources.items():
            for first, last in intervals:
                cursor = first
                for a, b in theirs.get(source, ()):
                    if b < cursor or a > last:
                        continue
                    if a > cursor:
                        out.setdefault(source, []).append((cursor, a - 1))
                    cursor = b + 1
                if cursor <= last:
                    out.setdefault(source, []).append((cursor, last))
        return MysqlGtidSet.from_sources(out)

    def encode(self) -> bytes:
        """The binary form sent in COM_BINLOG_DUMP_GTID (``Gtid_set::encode``).

        ``n_sids u64 | { sid[16] | [tag] | n_intervals u64 | { start u64 | end u64 } }``
        with exclusive ends. A set with tagged GTIDs uses the tagged format: the
        first u64 is ``1 << 56 | n_sids << 8 | 1`` and every source carries its
        tag as a serialization-library string (length << 1 in one byte, then
        the bytes; an untagged source an empty one).
        """
        sources = self.sources
        tagged = any(tag for _, tag in sources)
        count = 1 << 56 | len(sources) << 8 | 1 if tagged else len(sources)
        parts = [_U64.pack(count)]
        for (sid, tag), intervals in sources.items():
            parts.append(uuid.UUID(sid).bytes)
            if tagged:
                parts.append(bytes([len(tag) << 1]) + tag.encode("ascii"))
            parts.append(_U64.pack(len(intervals)))
            parts.extend(_INTERVAL.pack(a, b + 1) for a, b in intervals)
        return b"".join(parts)

    def __str__(self) -> str:
        return self.text

    def __bool__(self) -> bool:
        return bool(self.text)


def _gtid_set_text(sources: Mapping[MysqlSource, Intervals]) -> str:
    by_sid: dict[str, list[str]] = {}
    for (sid, tag), intervals in sorted(sources.items()):
        text = ":".join(f"{a}-{b}" if a != b else str(a) for a, b in intervals)
        by_sid.setdefault(sid, []).append(f"{tag}:{text}" if tag else text)
    return ",".join(f"{sid}:" + ":".join(parts) for sid, parts in by_sid.items())


def parse_gtid_triples(text: str) -> tuple[GtidTriple, ...]:
    """``d-s-n`` triples of a comma-separated list that may name a domain more than once
    (``@@gtid_binlog_state``: the last GTID of each domain and server)."""
    triples = []
    for part in text.replace(" ", "").split(","):
        if not part:
            continue
        m = _TRIPLE.fullmatch(part)
        if m is None:
            raise ConfigError(f"invalid MariaDB GTID {part!r} in {text!r}")
        triple = GtidTriple(int(m[1]), int(m[2]), int(m[3]))
        if triple.domain >= 1 << 32 or triple.server_id >= 1 << 32 or triple.seq >= 1 << 64:
            raise ConfigError(f"GTID component out of range in {part!r}")
        triples.append(triple)
    return tuple(triples)


def parse_gtid_state(text: str) -> Gtid | MysqlGtidSet:
    """A GTID state in either flavour's text form: MySQL sets name a server UUID and a colon."""
    return MysqlGtidSet(text) if ":" in text else Gtid(text)


def missing_transactions(
    delivered: Gtid | MysqlGtidSet,
    primary: Gtid | MysqlGtidSet,
    recent: Iterable[GtidTriple] = (),
    held: Iterable[GtidTriple] | None = None,
) -> tuple[str, ...]:
    """The transactions of ``delivered`` that a primary whose binlog holds ``primary`` lacks.

    MySQL: the set difference, exactly (``uuid:a-b`` entries). MariaDB: a
    delivered ``d-s-n`` is held when the primary's ``@@gtid_binlog_state``
    (``held``: the last GTID of each domain and server) has ``d-s-m`` with
    ``m >= n``; sequence numbers alone cannot tell, because a promoted replica
    that never received ``0-1-308`` writes its own ``0-2-308`` and goes past it.
    Without ``held``, by ``primary``'s sequence number per domain. The lacking
    ones are named from ``recent`` (the last delivered GTIDs) or as a range
    ``domain-*-first..last`` where they are not known.
    """
    if isinstance(delivered, MysqlGtidSet):
        if not isinstance(primary, MysqlGtidSet):
            return tuple(str(delivered).split(",")) if delivered else ()
        lacking = delivered.missing_from(primary)
        return tuple(str(lacking).split(",")) if lacking else ()
    theirs = {t.domain: t for t in primary.triples} if isinstance(primary, Gtid) else {}
    by_server = None if held is None else {(t.domain, t.server_id): t.seq for t in held}
    remembered = list(recent)
    missing: list[str] = []
    for mine in delivered.triples:
        have = theirs.get(mine.domain)
        if by_server is not None:
            after = by_server.get((mine.domain, mine.server_id), 0)
            if after >= mine.seq:
                continue
            named = [
                str(g)
                for g in remembered
                if (g.domain, g.server_id) == (mine.domain, mine.server_id) and g.seq > after
            ]
            if str(mine) not in named:
                named.append(str(mine))
        else:
            if have is not None and (
                have.seq > mine.seq or (have.seq == mine.seq and have.server_id == mine.server_id)
            ):
                continue
            after = have.seq if have is not None else 0
            if have is not None and have.seq == mine.seq:
                named = [str(mine)]  # another transaction holds this GTID's place
            else:
                named = [str(g) for g in remembered if g.domain == mine.domain and g.seq > after]
        first = int(named[0].rsplit("-", 1)[1]) if named else mine.seq + 1
        if first > after + 1:
            named.insert(0, f"{mine.domain}-*-{after + 1}..{first - 1}")
        missing.extend(named)
    return tuple(missing)


# -- the JSON form of a binlog point ------------------------------------------------------


def point_to_json(
    position: FilePos | None, gtid: Gtid | MysqlGtidSet | str | None
) -> dict[str, Any]:
    """The one JSON form of a point in a primary's binlog, shared by every resume
    point (``Checkpoint``, the snapshot's read points, Spark's offsets):
    ``{"file": name, "pos": offset, "gtid": state}``. ``file`` "" and ``pos`` 0:
    no position known; ``gtid`` "": no transaction known, null: no GTIDs on that
    primary."""
    file, pos = (position.file, position.pos) if position is not None else ("", 0)
    return {"file": file, "pos": pos, "gtid": None if gtid is None else str(gtid)}


def point_from_json(data: Mapping[str, Any]) -> tuple[FilePos | None, Gtid | MysqlGtidSet | None]:
    """The inverse of :func:`point_to_json` (also ``{"position": "file:pos"}``, the
    form checkpoints were first written in).

    Raises:
        ConfigError: not a binlog point.
    """
    try:
        file = data.get("file")
        if file is None and "position" in data:
            text = data["position"]
            position = FilePos.parse(str(text)) if text else None
        else:
            position = FilePos(str(file), int(data.get("pos") or 0)) if file else None
        gtid = data.get("gtid")
        state = None if gtid is None else parse_gtid_state(str(gtid)) if gtid else Gtid("")
    except (TypeError, ValueError, AttributeError) as exc:
        raise ConfigError(f"not a binlog point: {exc}") from exc
    return position, state
