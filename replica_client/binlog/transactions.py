"""Where events sit in a binlog and where transactions begin and end. No I/O.

One :class:`TransactionTracker` follows one binlog stream event by event: a
replication connection (the session), the Spark driver's dump, the change
builder over files or a stream. It answers three questions, once, for all of
them:

* **Where does this event sit?** (:meth:`TransactionTracker.step`, for events
  whose headers carry the primary's positions, as on a replication connection.)
  A ROTATE moves to the file and position it names; a non-zero ``log_pos`` is
  where the event ends; a zero ``log_pos`` on a real event (MariaDB 11.4+ with
  ``binlog_legacy_event_pos=OFF`` writes it inside transactions) means start +
  size; heartbeats and artificial events (the fake ROTATE that opens a dump, a
  re-sent FORMAT_DESCRIPTION) move nothing and are not counted.
* **Where do transactions begin and end?** (:meth:`TransactionTracker.observe`.)
  A MariaDB GTID event or a MySQL GTID event opens a group, and so do ``BEGIN``
  and ``XA START`` outside one. A group ends with XID, XA PREPARE, ``COMMIT``,
  ``ROLLBACK``, ``XA COMMIT`` or ``XA ROLLBACK``; a standalone group (a MariaDB
  GTID flagged standalone, a MySQL GTID not followed by ``BEGIN``: DDL) ends
  with its one statement. Any other event outside a group is a boundary by itself.
* **What is the GTID state after the last complete transaction?** MariaDB: one
  triple per replication domain; a GTID_LIST event outside a group adds the
  domains the state did not know. MySQL: the executed set, i.e. the start set
  plus every transaction since, seeded by PREVIOUS_GTIDS when the state was not
  known. :meth:`TransactionTracker.checkpoint` gives the position and state
  from which reading can resume without losing or repeating a transaction.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Final

from ..accel import constructor
from ..position import FilePos, Gtid, GtidTriple, MysqlGtidSet, MysqlSource
from .constants import HEARTBEAT_TYPES, EventFlag, EventType
from .events import (
    AnonymousGtidEvent,
    Event,
    GtidEvent,
    GtidListEvent,
    MysqlGtidEvent,
    PreviousGtidsEvent,
    QueryEvent,
    RotateEvent,
    XaPrepareEvent,
    XidEvent,
)
from .header import EventHeader

if TYPE_CHECKING:
    from .table_bindings import TableDefinitions

__all__ = ["PLACE_SPECIAL", "Checkpoint", "TransactionTracker"]

E = EventType
_ROTATE: Final = int(E.ROTATE_EVENT)
_FDE: Final = int(E.FORMAT_DESCRIPTION_EVENT)
_ARTIFICIAL: Final = int(EventFlag.ARTIFICIAL)
#: Events whose place is not simply "ends at log_pos" (heartbeats, ROTATE, FDE).
PLACE_SPECIAL: Final = HEARTBEAT_TYPES | {_ROTATE, _FDE}
_GROUP_END_QUERIES: Final = ("COMMIT", "ROLLBACK", "XA COMMIT", "XA ROLLBACK")

#: MySQL executed set while it is tracked: (uuid, tag) -> inclusive intervals.
MysqlState = Mapping[MysqlSource, tuple[tuple[int, int], ...]]


@dataclass(frozen=True, slots=True)
class Checkpoint:
    """A resume point between transactions: the next event's place and the GTID state.

    ``mariadb`` and ``mysql`` are the tracker's states, never changed after they
    were handed out; the value types are built when asked for.
    """

    file: str
    pos: int
    mariadb: Mapping[int, GtidTriple]
    #: None: not a MySQL stream, or one whose executed set is unknown (it started
    #: at a file position inside a file).
    mysql: MysqlState | None = None
    #: What else holds from this point on: the table definitions (a schema history,
    #: opaque here), None without one.
    schema: object = None

    @property
    def position(self) -> FilePos:
        """Where the next event starts."""
        return FilePos(self.file, self.pos)

    @property
    def gtid_state(self) -> Gtid | MysqlGtidSet:
        """The GTID state after the transactions before this point.

        A MariaDB ``Gtid``, or the MySQL executed set when it is known; an empty
        ``Gtid`` otherwise (it cannot start a MySQL dump: resume by position).
        """
        if self.mysql is not None:
            return MysqlGtidSet.from_sources(self.mysql)
        return Gtid.from_domains(self.mariadb)


#: Checkpoint(...) with every field, without the generated __init__ (see accel.constructor):
#: one per transaction on every stream.
_new_checkpoint: Final = constructor(Checkpoint)


class TransactionTracker:
    """Follows one binlog stream: places, transaction boundaries, GTID state.

    Args:
        position: where the stream starts, when known.
        gtid_state: the GTID state at the start (a MariaDB state, or a MySQL set).
    """

    __slots__ = (
        "_await_begin",
        "_checkpoint",
        "_group_mysql",
        "_group_triple",
        "_gtid_text",
        "_gtid_triple",
        "_mariadb",
        "_mysql",
        "_standalone",
        "definitions",
        "file",
        "in_group",
        "pos",
    )

    def __init__(
        self,
        position: FilePos | None = None,
        gtid_state: Gtid | MysqlGtidSet | None = None,
    ) -> None:
        #: The file of the next event ("" until a ROTATE or the start names it).
        self.file = position.file if position is not None else ""
        #: Where the next event starts.
        self.pos = position.pos if position is not None else 0
        #: Inside a transaction (between its first and its last event).
        self.in_group = False
        self._standalone = False
        self._await_begin = False
        self._group_triple: GtidTriple | None = None
        self._group_mysql: tuple[MysqlSource, int] | None = None
        self._gtid_text: str | None = None
        # a MariaDB GTID's triple, formatted into _gtid_text when first asked for
        self._gtid_triple: GtidTriple | None = None
        # Both maps are replaced, never changed in place: checkpoints hold them.
        self._mariadb: dict[int, GtidTriple] = {}
        self._mysql: MysqlState | None = None
        if isinstance(gtid_state, Gtid):
            self._mariadb = {t.domain: t for t in gtid_state.triples}
        elif isinstance(gtid_state, MysqlGtidSet):
            self._mysql = gtid_state.sources
        self._checkpoint: Checkpoint | None = None
        #: The table definitions the decoder consults (their ``state`` goes into
        #: every checkpoint), None without them.
        self.definitions: TableDefinitions | None = None

    def __repr__(self) -> str:
        return f"<TransactionTracker {self.file}:{self.pos} in_group={self.in_group}>"

    # -- what the stream is at -----------------------------------------------------------

    @property
    def gtid(self) -> str | None:
        """The GTID of the transaction being read (or last read): ``d-s-n`` or ``uuid:n``."""
        text = self._gtid_text
        if text is None and self._gtid_triple is not None:
            text = self._gtid_text = str(self._gtid_triple)
        return text

    @property
    def gtid_state(self) -> Gtid | MysqlGtidSet:
        """The state after the last complete transaction (see :attr:`Checkpoint.gtid_state`)."""
        return Checkpoint(self.file, self.pos, self._mariadb, self._mysql).gtid_state

    def checkpoint(self) -> Checkpoint:
        """The resume point after the last event (the same object while nothing moved)."""
        cp = self._checkpoint
        definitions = self.definitions
        schema = definitions.state if definitions is not None else None
        if (
            cp is not None
            and cp.pos == self.pos
            and cp.file == self.file
            and cp.mariadb is self._mariadb
            and cp.mysql is self._mysql
            and cp.schema is schema
        ):
            return cp
        cp = self._checkpoint = _new_checkpoint(
            self.file, self.pos, self._mariadb, self._mysql, schema
        )
        return cp

    # -- per event -----------------------------------------------------------------------

    def step(self, header: EventHeader, event: Event | None) -> tuple[str, int, int, bool, bool]:
        """One event of a replication stream: ``(file, start, end, countable, boundary)``.

        Where it sits, and :meth:`observe` (``boundary``: it leaves no
        transaction open), in one call: this runs for every event received.
        ``countable``: a real event of the binlog (not artificial, not a
        heartbeat), the ones a resumed dump sends again. Moves the tracker to
        the next event's place.
        """
        # (indexes: unpacking a named tuple goes through an iterator, 6 calls)
        type_code = header[1]
        log_pos = header[4]
        file = self.file
        start = self.pos
        artificial = header[5] & _ARTIFICIAL
        countable = not artificial
        if log_pos and type_code not in PLACE_SPECIAL:
            end = self.pos = log_pos  # the common case first
        elif type_code in HEARTBEAT_TYPES:
            end = start  # never written to the binlog
            countable = False
        elif type_code == _ROTATE and isinstance(event, RotateEvent):
            end = log_pos or start + header[3]
            self.file, self.pos = event.next_file, event.position
        elif type_code == _FDE and not log_pos:
            # re-sent FDE of a dump that starts past position 4: not in the stream's place
            end = start
            countable = False
        elif log_pos:
            end = self.pos = log_pos
        elif artificial:
            end = start
        else:
            end = self.pos = start + header[3]  # log_pos 0 inside a transaction (MariaDB 11.4+)
        if event is not None:
            handler = _OBSERVERS.get(type(event))
            if handler is not None:
                handler(self, event)
        return file, start, end, countable, not self.in_group

    def observe(self, event: Event) -> bool:
        """Follow transaction boundaries; True when ``event`` leaves no transaction open."""
        handler = _OBSERVERS.get(type(event))
        if handler is not None:
            handler(self, event)
        return not self.in_group

    # One method per event class that matters (the _OBSERVERS table below); every
    # other event leaves the group state as it is.

    def _mariadb_gtid(self, event: GtidEvent) -> None:
        self._open_group(bool(event.flags2 & GtidEvent.FL_STANDALONE))
        self._group_triple = self._gtid_triple = event.triple
        self._gtid_text = None  # formatted when asked for (gtid)

    def _mysql_gtid(self, event: MysqlGtidEvent) -> None:
        # A DDL stands alone; a DML transaction follows with BEGIN.
        self._open_group(True)
        self._await_begin = True
        self._gtid_triple = None
        text = self._gtid_text = event.gtid
        if text is not None:  # None: ANONYMOUS_GTID (gtid_mode=OFF)
            self._group_mysql = ((event.uuid, event.tag or ""), event.gno)

    def _query(self, event: QueryEvent) -> None:
        query = event.query.strip().upper()
        opens = query == "BEGIN" or query.startswith("XA START")
        if not self.in_group:
            if opens:
                self._open_group(False)
                self._gtid_text = self._gtid_triple = None
        elif self._await_begin and opens:
            self._standalone = self._await_begin = False
        elif self._standalone or query.startswith(_GROUP_END_QUERIES):
            self._end_group()

    def _group_end(self, event: Event) -> None:  # XID, XA PREPARE
        if self.in_group:
            self._end_group()

    def _gtid_list(self, event: GtidListEvent) -> None:
        if self.in_group:
            return
        missing = [g for g in event.gtids if g.domain not in self._mariadb]
        if missing:
            self._mariadb = {**self._mariadb, **{g.domain: g for g in missing}}

    def _previous_gtids(self, event: PreviousGtidsEvent) -> None:
        previous: dict[MysqlSource, tuple[tuple[int, int], ...]] = {}
        for entry in event.entries:
            previous[(entry.uuid, entry.tag)] = entry.intervals
        if self._mysql is not None:
            for source, intervals in self._mysql.items():
                previous[source] = (*previous.get(source, ()), *intervals)
        self._mysql = MysqlGtidSet.from_sources(previous).sources

    def _open_group(self, standalone: bool) -> None:
        self.in_group = True
        self._standalone = standalone
        self._await_begin = False
        self._group_triple = None
        self._group_mysql = None

    def _end_group(self) -> None:
        triple = self._group_triple
        if triple is not None:
            mariadb = self._mariadb.copy()
            mariadb[triple.domain] = triple
            self._mariadb = mariadb
        mysql_gtid = self._group_mysql
        if mysql_gtid is not None and self._mysql is not None:
            self._mysql = _add_gno(self._mysql, *mysql_gtid)
        self.in_group = False
        self._standalone = False
        self._await_begin = False
        self._group_triple = None
        self._group_mysql = None


_Observer = Callable[[TransactionTracker, Any], None]
#: Event class -> what it does to the transaction state (exact classes: a dict lookup
#: per event; rows, TABLE_MAP and the rest are not in it).
_OBSERVERS: Final[dict[type[Event], _Observer]] = {
    GtidEvent: TransactionTracker._mariadb_gtid,
    MysqlGtidEvent: TransactionTracker._mysql_gtid,
    AnonymousGtidEvent: TransactionTracker._mysql_gtid,
    QueryEvent: TransactionTracker._query,
    XidEvent: TransactionTracker._group_end,
    XaPrepareEvent: TransactionTracker._group_end,
    GtidListEvent: TransactionTracker._gtid_list,
    PreviousGtidsEvent: TransactionTracker._previous_gtids,
}


def _add_gno(state: MysqlState, source: MysqlSource, gno: int) -> MysqlState:
    """``state`` plus one transaction number, as a new map (usually the last interval grows)."""
    intervals = state.get(source, ())
    if intervals and intervals[-1][1] + 1 == gno:
        updated = (*intervals[:-1], (intervals[-1][0], gno))
    elif any(a <= gno <= b for a, b in intervals):
        return state
    else:
        updated = MysqlGtidSet.from_sources({source: (*intervals, (gno, gno))}).sources[source]
    return {**state, source: updated}
