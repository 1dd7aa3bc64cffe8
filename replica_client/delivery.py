"""What a replication stream hands out, and what its consumer has been handed.

:class:`StreamItem` is one event packet of the stream with its place in the
primary's binlog (what :class:`~replica_client.session.ReplicaSession`
produces); :class:`Delivery` follows the items the driver hands to the consumer
(the last checkpoint passed, the events since) and says where a new connection
restarts the dump: a :class:`ResumePoint`; :class:`AckPolicy` says when a
semi-sync ACK goes out. No I/O.
"""

from __future__ import annotations

from collections import deque
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import Final, Literal

from .binlog.constants import TRANSACTION_START_TYPES
from .binlog.events import Event, GtidEvent, MysqlGtidEvent
from .binlog.transactions import Checkpoint
from .errors import FailoverError
from .position import FilePos, Gtid, GtidTriple, MysqlGtidSet, missing_transactions

#: "auto": ACK each flagged event when it is handed to the consumer;
#: "manual": only when the consumer calls ``await stream.ack()``;
#: "receipt": as soon as it is received and the checksums of the events that
#: came with it hold, before they are decoded and before the consumer sees
#: them (what a MariaDB replica's I/O thread does once its relay log has the
#: event): the primary's commits wait least, but an acknowledged
#: transaction is only in this process's memory until the consumer gets to it.
AckMode = Literal["auto", "manual", "receipt"]

__all__ = [
    "ANY_EVENT",
    "AckMode",
    "AckPolicy",
    "Delivery",
    "ResumePoint",
    "StreamItem",
]


@dataclass(frozen=True, slots=True)
class StreamItem:
    """One event packet of the stream, with where it sits in the primary's binlog.

    Attributes:
        event: the decoded event; ``None`` when the decoder dropped it (rows of
            a table excluded by the table filter) or it was skipped on resume.
        file: the binlog file the event belongs to.
        start: the event's start position in ``file`` (0 when unknown).
        end: the event's end position (what a semi-sync ACK reports).
        size: bytes of the event, for backpressure accounting.
        needs_ack: the primary waits for a semi-sync ACK of this event.
        checkpoint: set when the stream may resume right after this event.
        countable: a real event of the binlog (not artificial, not a heartbeat);
            only these are counted for ``resume_skip``.
        skipped: already delivered before a reconnect; not for the consumer.
        deliver: the consumer's event-type filter wants it.
        raw: the event's bytes (header to checksum), when the session keeps them.
    """

    event: Event | None
    file: str
    start: int
    end: int
    size: int
    needs_ack: bool = False
    checkpoint: Checkpoint | None = None
    countable: bool = True
    skipped: bool = False
    deliver: bool = True
    raw: bytes | None = None

    @property
    def for_consumer(self) -> bool:
        """True when the consumer should see this item's event."""
        return self.event is not None and self.deliver and not self.skipped


@dataclass(frozen=True, slots=True)
class ResumePoint:
    """Where a new connection restarts the dump so that nothing is lost or repeated.

    Attributes:
        start: the position or GTID state to dump from ("now": the primary's current
            end; None: its first binlog).
        gtid_state: the GTID state at ``start``.
        skip: the type codes of the binlog events after ``start`` already handed
            to the consumer (of the transaction that was being delivered when the
            connection broke), in order: the new dump must send the same ones again.
        group: the GTID of that transaction, checked against the re-sent one.
        schema: the table definitions at ``start`` (a schema history, opaque
            here), None without them.
    """

    start: FilePos | Gtid | MysqlGtidSet | Literal["now"] | None
    gtid_state: Gtid | MysqlGtidSet
    skip: tuple[int, ...] = ()
    group: str | None = None
    schema: object = None


class Delivery:
    """What the consumer has been handed: the last checkpoint passed, and the events since.

    The driver calls :meth:`passed` for every item the consumer is handed (or
    that its filters drop), in order; :meth:`resume_point` says where a new
    connection restarts. ``position`` and ``gtid_state`` move only at
    transaction boundaries.

    A stream started from a GTID state (or "now", which the primary resolves to
    one) resumes from its GTID state: the primary skipped the start's
    transactions wherever they sit in its binlog, so a file position after one
    of them would send the others again. Its checkpoints move only when the
    state does (a resumed dump's header events name places it never passed).

    Args:
        start: the stream's start (a position, a GTID state, or None).
        remember: how many of the last delivered MariaDB GTIDs to keep, to name
            them when a new primary lacks them.
        schema: the table definitions at ``start`` (a schema history), if any.
    """

    __slots__ = (
        "_by_gtid",
        "_checkpoint",
        "_group",
        "_kinds",
        "_resolved",
        "_start_gtid",
        "_start_pos",
        "_start_schema",
        "recent",
    )

    def __init__(
        self,
        start: FilePos | Gtid | MysqlGtidSet | None = None,
        *,
        remember: int = 100_000,
        schema: object = None,
    ) -> None:
        self._start_schema = schema
        self._start_pos = start if isinstance(start, FilePos) else None
        self._by_gtid = isinstance(start, Gtid | MysqlGtidSet)
        self._start_gtid: Gtid | MysqlGtidSet = (
            start if isinstance(start, Gtid | MysqlGtidSet) else Gtid("")
        )
        self._checkpoint: Checkpoint | None = None
        self._kinds: list[int] = []  # type codes of the events passed since the checkpoint
        # the GTID event of the transaction being delivered
        self._group: GtidEvent | MysqlGtidEvent | None = None
        self._resolved: FilePos | Gtid | MysqlGtidSet | None = None
        #: The MariaDB GTIDs of the last transactions delivered whole, oldest first.
        self.recent: deque[GtidTriple] = deque(maxlen=remember)

    @property
    def position(self) -> FilePos | None:
        """Where the next undelivered transaction starts (None: not known yet)."""
        cp = self._checkpoint
        return cp.position if cp is not None else self._start_pos

    @property
    def gtid_state(self) -> Gtid | MysqlGtidSet:
        """The GTID state after the last transaction delivered whole."""
        cp = self._checkpoint
        return cp.gtid_state if cp is not None else self._start_gtid

    @property
    def schema(self) -> object:
        """The table definitions after the last transaction delivered whole (a schema
        history; None without one)."""
        cp = self._checkpoint
        if cp is not None and cp.schema is not None:
            return cp.schema
        return self._start_schema

    @property
    def gtid(self) -> str | None:
        """The GTID of the transaction being delivered (None: no GTID event opened it).

        Its GTID event was handed out last among those of the stream; the
        transaction ends at the next checkpoint (what :meth:`TransactionTracker.gtid`
        says of the same events, kept here without a second tracker).
        """
        group = self._group
        return None if group is None else group.gtid

    @property
    def since_checkpoint(self) -> int:
        """Binlog events delivered after the last checkpoint."""
        return len(self._kinds)

    def connected(self, resolved_start: FilePos | Gtid | MysqlGtidSet | None) -> None:
        """The first connection resolved the start ("now", "earliest") to this."""
        if self._resolved is None:
            self._resolved = resolved_start
            if self._checkpoint is None and isinstance(resolved_start, Gtid | MysqlGtidSet):
                self._by_gtid = True  # "now"
        if (
            self._checkpoint is None
            and not self._start_gtid
            and isinstance(resolved_start, Gtid | MysqlGtidSet)
        ):
            self._start_gtid = resolved_start

    def passed(self, item: StreamItem) -> bool:
        """Account for an item handed out; True when it completed a transaction."""
        cp = item.checkpoint
        event = item.event
        completed = False
        if cp is not None:
            # the end of a transaction whose GTID event was handed out (a heartbeat
            # or a resumed dump's artificial events end nothing)
            group = self._group
            if cp is not self._checkpoint and self._apply(cp):
                completed = group is not None and item.countable and not item.skipped
                if completed and type(group) is GtidEvent:
                    # the checkpoint's state holds its triple: no second one is built
                    self.recent.append(cp.mariadb.get(group.domain_id) or group.triple)
        elif item.countable and not item.skipped:  # skipped ones were counted before
            self._kinds.append(event.header[1] if event is not None else ANY_EVENT)
        if type(event) in _GTID_EVENT_TYPES:
            # after the checkpoint before it was applied
            self._group = event  # type: ignore[assignment]  # (no cast() call per transaction)
        return completed

    def _apply(self, cp: Checkpoint) -> bool:
        """Move to ``cp``; False when it is no progress."""
        last = self._checkpoint
        # (positions first: comparing whole checkpoints costs a tuple of fields each)
        if (last is not None and cp.pos == last.pos and cp == last) or (
            last is None and cp.position == self._start_pos and cp.gtid_state == self._start_gtid
        ):
            # No progress (the artificial ROTATE/FDE of a resumed dump, a heartbeat):
            # keep counting, or a second cut while the resumed dump is still
            # skipping would resume with too small a skip and repeat events.
            return False
        if self._by_gtid and (
            cp.gtid_state == self._start_gtid
            if last is None
            else cp.mariadb == last.mariadb and cp.mysql == last.mysql
        ):
            return False  # the same state elsewhere (a dump's header events)
        self._checkpoint = cp
        self._kinds = []
        self._group = None
        return True

    def resume_point(self, *, by_gtid: bool = False) -> ResumePoint:
        """Where a new connection restarts the dump.

        ``by_gtid``: from the GTID state rather than the position (another
        primary, whose file positions are its own).

        Raises:
            FailoverError: ``by_gtid`` but the GTID state is not known.
        """
        state = self.gtid_state
        start: FilePos | Gtid | MysqlGtidSet | None
        if by_gtid:
            if not state:
                raise FailoverError(
                    "cannot resume on another primary: the stream's GTID state is not known "
                    "(it started at a file position of a MySQL primary, or has seen no GTID)"
                )
            start = state
        elif self._by_gtid:
            start = state
        else:
            start = self.position or self._resolved
        kinds = tuple(self._kinds)
        group = self._group.gtid if kinds and self._group is not None else None
        if (by_gtid or self._by_gtid) and kinds:
            # a dump by GTID sends its header events first, then the interrupted
            # transaction: what it sends again starts at that transaction's GTID event
            at = [i for i, kind in enumerate(kinds) if kind in TRANSACTION_START_TYPES]
            kinds = kinds[at[-1] :] if at and group is not None else ()
            group = group if kinds else None
        return ResumePoint(start, state, kinds, group, self.schema)

    def missing_on(
        self, primary: Gtid | MysqlGtidSet, held: Iterable[GtidTriple] | None = None
    ) -> tuple[str, ...]:
        """The delivered transactions a primary with GTID state ``primary`` lacks
        (``held``: its MariaDB ``@@gtid_binlog_state``, see :func:`missing_transactions`)."""
        return missing_transactions(self.gtid_state, primary, self.recent, held)


ANY_EVENT: Final = -1  # an event the table filter dropped: its type is not kept
#: The classes of events that open a transaction group (a type test per event).
_GTID_EVENT_TYPES: Final = frozenset({GtidEvent, MysqlGtidEvent, *MysqlGtidEvent.__subclasses__()})


class AckPolicy:
    """When the semi-sync ACK of a flagged event goes out, by ``mode`` (:data:`AckMode`).

    The driver reports what it does with the items (:meth:`passed`,
    :meth:`handed_over`, :meth:`at_head`) and sends the ACKs this says are
    due. "receipt": the session ACKs on receipt, nothing here. "manual":
    flagged events handed out wait for the consumer's ``ack()`` (:meth:`due`).
    "auto": a flagged event is ACKed when it is passed, and a transaction's
    end that has arrived is ACKed ahead of the consumer once the consumer
    holds everything before it (``caught_up``): the driver then walks its
    queue (:meth:`at_head`), passing the items the consumer need not be
    handed. No I/O.

    Attributes:
        caught_up: the consumer holds everything taken so far (False while
            changes of a taken item wait to be handed out).
        takes: which items the consumer is handed, where it takes only some of
            the events it wants (a changes consumer: the ones that give
            changes); None: every one.
    """

    __slots__ = ("_acked", "_mode", "_unacked", "caught_up", "confirmed", "settling", "takes")

    def __init__(self, mode: AckMode) -> None:
        self._mode = mode
        #: Semi-sync negotiated and ACKs are the driver's (auto or manual).
        self.settling = False
        self.caught_up = False
        #: "manual": the consumer's last ack() came after everything was handed out.
        self.confirmed = False
        self.takes: Callable[[StreamItem], bool] | None = None
        self._unacked: list[StreamItem] = []
        self._acked: StreamItem | None = None  # the last end ACKed ahead of the consumer

    def connected(self, semi_sync: bool) -> None:
        """A new connection: ACKs of the previous one cannot be sent any more."""
        self.settling = semi_sync and self._mode != "receipt"
        self._unacked.clear()

    @property
    def early(self) -> bool:
        """ACK transaction ends ahead of the consumer as they arrive ("auto")."""
        return self.settling and self._mode == "auto"

    def passed(self, item: StreamItem) -> bool:
        """``item`` (flagged) was handed out or passed on the way; True: send :meth:`due`."""
        if self._mode == "receipt" or item is self._acked:
            return False  # ACKed when it was decoded, or ahead of the consumer
        self._unacked.append(item)
        return self._mode == "auto" or item.skipped

    def passed_on(self, item: StreamItem) -> bool:
        """``item`` (flagged, :meth:`passed`) was passed by a reader that takes the
        stream's items itself (the snapshot's merge) while the consumer holds every
        change before it: True: ACK it now. "auto" ACKed it as it passed; "manual"
        ACKs it here when the consumer's last ``ack()`` came after everything it
        was handed (that ``ack()`` covers the transaction, whose end had not
        arrived then), else at the next ``ack()``."""
        if not self.confirmed:
            return False
        unacked = self._unacked
        for i, held in enumerate(unacked):
            if held is item:
                del unacked[i]
                return True
        return False  # ACKed already ("auto", "receipt")

    def due(self) -> list[StreamItem]:
        """The flagged items to ACK now (taken: each is returned once)."""
        due, self._unacked = self._unacked, []
        return due

    def handed_over(self) -> bool:
        """The consumer holds everything taken; True: settle the queue's head now."""
        self.caught_up = True
        self.confirmed = False
        return self.settling and self._mode == "auto"

    def acked(self) -> None:
        """The consumer called ``ack()`` ("manual")."""
        self.confirmed = self.caught_up

    def at_head(self, item: StreamItem) -> tuple[bool, bool]:
        """Settling, ``item`` at the head of the queue: (ACK it now, stop here).

        It stops at an item the consumer is to be handed (or its error); the
        driver passes the others on the way.
        """
        ack = item.needs_ack and item is not self._acked
        if ack:
            self._acked = item
        takes = self.takes
        return ack, item.for_consumer and (takes is None or takes(item))
