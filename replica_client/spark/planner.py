"""Micro-batch planning for the streaming source: offsets, limits, partitions.

Driver side, no pyspark import (the Spark classes in ``source.py`` delegate
here). One :class:`StreamPlanner` lives in Spark's driver-side Python process
for the streaming reader, created lazily on the first call (the reader object
itself is pickled before that).

Offsets are JSON objects ``{"file": "mysql-bin.000003", "pos": 1234, "gtid":
"0-1-77"}``: the position right after a transaction and the MariaDB GTID state
there. ``file`` is empty only for a query started from a GTID state that has
not read a transaction yet.

Exactly once: a batch always ends at a transaction boundary, and a batch's
range is re-read deterministically from the primary (``partitions(start,
end)`` after a restart reads from ``start`` until exactly ``end``); when the
primary no longer has that range, :class:`BinlogPositionError` is raised.
"""

from __future__ import annotations

import json
import math
import re
from collections import deque
from collections.abc import Iterator
from dataclasses import dataclass, replace
from typing import Any

from ..control.queries import PRIMARY_STATE_SQL, PrimaryState, primary_state_from
from ..errors import (
    BinlogPositionError,
    ConfigError,
    ConnectionLostError,
    FailoverError,
    LostTransactionsError,
    ReplicaError,
    ReplicaTimeoutError,
)
from ..position import (
    FilePos,
    Gtid,
    GtidTriple,
    MysqlGtidSet,
    missing_transactions,
    parse_gtid_state,
)
from .dump import BinlogDump, Txn, position_key
from .options import SourceOptions
from .snapshot import Chunk, plan_snapshot

__all__ = ["Offset", "StreamPlanner", "TxnSlice", "query", "split_partitions"]

#: What a partition carries per transaction: (FDE, file, GTID, [(pos, raw event)]).
TxnSlice = tuple[bytes, str, "str | None", list[tuple[int, bytes]]]

_CACHE_ENTRIES = 8
_MARIADB_GTID = re.compile(r"\d+-\d+-\d+")

_Key = tuple[tuple[str, int, str], tuple[str, int, str]]


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

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> Offset:
        try:
            snapshot = data.get("snapshot")
            return cls(
                str(data.get("file") or ""),
                int(data.get("pos") or 0),
                str(data["gtid"]),
                str(data.get("host") or ""),
                json.dumps(snapshot, separators=(",", ":")) if snapshot else "",
            )
        except (KeyError, TypeError, ValueError) as exc:
            raise ConfigError(f"not an offset of the mariadb_binlog source: {data!r}") from exc

    def to_json(self) -> dict[str, Any]:
        out: dict[str, Any] = {"file": self.file, "pos": self.pos, "gtid": self.gtid}
        if self.host:
            out["host"] = self.host
        if self.snapshot:
            out["snapshot"] = json.loads(self.snapshot)
        return out

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
                f"offset {self.to_json()} has no GTID state: it cannot be resumed on "
                f"another primary ({address})"
            )
        return parse_gtid_state(self.gtid)

    def gtid_state(self) -> Gtid | MysqlGtidSet:
        """The GTID state at this offset (MariaDB state or MySQL executed set)."""
        return parse_gtid_state(self.gtid)


def connection_kwargs(opts: SourceOptions) -> dict[str, Any]:
    """PyMySQL connection arguments for the primary of ``opts``."""
    kwargs: dict[str, Any] = {
        "host": opts.host,
        "port": opts.port,
        "user": opts.user,
        "password": opts.password,
        "connect_timeout": opts.connect_timeout,
        "autocommit": True,
    }
    if opts.tls != "off":
        kwargs["ssl"] = {"ca": opts.tls_ca} if opts.tls_ca else {}
        kwargs["ssl_verify_cert"] = opts.tls != "required"
        kwargs["ssl_verify_identity"] = opts.tls == "verify_identity"
    return kwargs


def _control_connection(opts: SourceOptions) -> Any:
    import pymysql

    return pymysql.connect(**connection_kwargs(opts))


def query(opts: SourceOptions, sql: str, args: tuple[Any, ...] = ()) -> list[tuple[Any, ...]]:
    """The rows of one statement on the primary, over a short control connection."""
    conn = _control_connection(opts)
    try:
        with conn.cursor() as cur:
            cur.execute(sql, args or None)
            return [tuple(r) for r in cur.fetchall()]
    finally:
        conn.close()


def primary_end(opts: SourceOptions) -> FilePos:
    """The end of the primary's binlog now (``SHOW MASTER STATUS`` / ``SHOW BINARY LOG STATUS``)."""
    rows = _binlog_status(opts)
    if not rows:
        raise ConfigError(f"the server at {opts.address} has no binary log (log_bin off)")
    return FilePos(str(rows[0][0]), int(rows[0][1]))


def _binlog_status(opts: SourceOptions) -> list[tuple[Any, ...]]:
    try:
        return query(opts, "SHOW MASTER STATUS")
    except Exception:  # MySQL 8.4+ names it SHOW BINARY LOG STATUS
        return query(opts, "SHOW BINARY LOG STATUS")


def resolve_start(opts: SourceOptions) -> Offset:
    """The offset of ``startingPosition`` (asks the primary for earliest/latest)."""
    start = opts.starting_position
    if isinstance(start, FilePos):
        return Offset(start.file, start.pos, "", opts.address)
    if isinstance(start, Gtid | MysqlGtidSet):
        return Offset("", 0, str(start), opts.address)
    if start == "earliest":
        rows = query(opts, "SHOW BINARY LOGS")
        if not rows:
            raise ConfigError(f"the server at {opts.address} has no binary logs")
        return Offset(str(rows[0][0]), 4, "", opts.address)
    rows = _binlog_status(opts)
    if not rows:
        raise ConfigError(f"the server at {opts.address} has no binary log (log_bin off)")
    end = FilePos(str(rows[0][0]), int(rows[0][1]))
    version = str(query(opts, "SELECT VERSION()")[0][0])
    if "mariadb" in version.lower():
        found = query(opts, "SELECT BINLOG_GTID_POS(%s, %s)", (end.file, end.pos))
        gtid = str(found[0][0] or "") if found else ""
    else:
        executed = str(rows[0][4] or "") if len(rows[0]) > 4 else ""
        gtid = str(MysqlGtidSet(executed)) if executed else ""
    return Offset(end.file, end.pos, gtid, opts.address)


def probe_primary(opts: SourceOptions) -> PrimaryState:
    """Whether the server of ``opts`` is a writable primary, and its GTID state."""
    version = str(query(opts, "SELECT VERSION()")[0][0])
    row = query(opts, PRIMARY_STATE_SQL["mariadb" in version.lower()])[0]
    return primary_state_from(version, row)


def split_partitions(txns: list[Txn], opts: SourceOptions) -> list[list[TxnSlice]]:
    """Cut a batch into partitions of about ``partitionBytes`` at transaction boundaries."""
    slices = [(t.fde, t.file, t.gtid, t.events) for t in txns if t.events]
    if not slices:
        return []
    sizes = [sum(len(raw) for _, raw in s[3]) for s in slices]
    total = sum(sizes)
    n = max(1, min(opts.max_partitions, math.ceil(total / opts.partition_bytes), len(slices)))
    parts: list[list[TxnSlice]] = [[] for _ in range(n)]
    acc = 0
    for s, size in zip(slices, sizes, strict=True):
        index = min(n - 1, acc * n // total) if total else 0
        parts[index].append(s)
        acc += size
    return [p for p in parts if p]


class StreamPlanner:
    """Driver-side state of one streaming query: the live dump, read-ahead, cache."""

    def __init__(self, opts: SourceOptions) -> None:
        opts.require_connection()
        self.opts = opts
        #: The primary streamed from now (one of ``opts.hosts``).
        self._address = opts.addresses[0]
        self._target: FilePos | None = None
        self._dump: BinlogDump | None = None
        self._txns: Iterator[Txn] | None = None
        self._live: Offset | None = None  # where the live dump's next txn starts
        self._peek: Txn | None = None
        self._counting = False
        self._cache: dict[_Key, list[Txn]] = {}
        # The MariaDB GTIDs of the last transactions planned, to name the ones a new
        # primary lacks.
        self._recent: deque[GtidTriple] = deque(maxlen=100_000)
        self._initial: Offset | None = None  # startingPosition=snapshot: its plan

    # -- Spark calls ------------------------------------------------------------------------

    @property
    def primary(self) -> SourceOptions:
        """The options of the primary streamed from now."""
        return self.opts.for_address(self._address)

    def initial_offset(self) -> Offset:
        if self.opts.starting_position != "snapshot":
            return resolve_start(self.primary)
        if self._initial is None:  # the same plan for every call of this query run
            (file, pos, gtid), chunks = plan_snapshot(self.primary, self.opts.snapshot_chunk_rows)
            self._initial = Offset(file, pos, gtid, self._address).with_snapshot(chunks, 0)
        return self._initial

    def prepare_available_now(self) -> None:
        """Fix the target: the primary's binlog end now; batches never pass it."""
        self._target = primary_end(self.primary)

    def latest_offset(self, start: Offset, max_rows: int | None, max_bytes: int | None) -> Offset:
        """The end of the next batch from ``start``, within the limits and the target."""
        if start.snapshot:
            # Snapshot batches: up to maxPartitions key ranges each (one task a range).
            chunks, planned = start.snapshot_plan()
            return start.with_snapshot(chunks, planned + self.opts.max_partitions)
        target = self._target
        if (
            target is not None
            and start.file
            and start.on(self._address)
            and position_key(FilePos(start.file, start.pos)) >= position_key(target)
        ):
            return start
        self._open(start, count_rows=max_rows is not None)
        taken: list[Txn] = []
        rows = nbytes = 0
        end = start
        while True:
            txn = self._next()
            if txn is None:
                break
            if target is not None and txn.real and position_key(txn.end) > position_key(target):
                self._peek = txn
                break
            if (rows or nbytes) and (
                (max_rows is not None and rows + txn.rows > max_rows)
                or (max_bytes is not None and nbytes + txn.nbytes > max_bytes)
            ):
                self._peek = txn
                break
            rows += txn.rows
            nbytes += txn.nbytes
            if txn.events:
                taken.append(txn)
            if txn.gtid is not None and _MARIADB_GTID.fullmatch(txn.gtid):
                self._recent.append(GtidTriple(*map(int, txn.gtid.split("-"))))
            if txn.real:
                end = Offset(txn.end.file, txn.end.pos, txn.gtid_state, self._address)
                self._live = end
        if end != start:
            self._remember((start.key, end.key), taken)
        return end

    def snapshot_chunks(self, start: Offset, end: Offset) -> list[Chunk]:
        """The key ranges the snapshot batch ``[start, end)`` reads.

        The plan is the end's where it has one: a first batch replayed after a
        restart may start from a newly planned initial offset, while its end and
        every later offset hold the plan that was logged.
        """
        planned = start.snapshot_plan()[1]
        if end.snapshot:
            chunks, upto = end.snapshot_plan()
            return chunks[planned:upto]
        chunks = start.snapshot_plan()[0]
        return chunks[planned:]

    def plan(self, start: Offset, end: Offset) -> list[list[TxnSlice]]:
        """The partitions of the batch ``[start, end)`` (re-read when not cached)."""
        if start == end:
            return []
        txns = self._cache.pop((start.key, end.key), None)
        if txns is None:
            txns = self._reread(start, end)
        return split_partitions(txns, self.opts)

    def commit(self, end: Offset) -> None:
        """Forget cached batches that end at or before ``end`` (Spark calls this late)."""
        if not end.file:
            return
        done = position_key(FilePos(end.file, end.pos))
        for key in list(self._cache):
            file, pos, _ = key[1]
            if file and position_key(FilePos(file, pos)) <= done:
                del self._cache[key]

    def close(self) -> None:
        """Close the live dump (Spark may never call stop(); nothing depends on it)."""
        self._drop_live()
        self._cache.clear()

    # -- internals --------------------------------------------------------------------------

    def _remember(
        self, key: tuple[tuple[str, int, str], tuple[str, int, str]], txns: list[Txn]
    ) -> None:
        if len(self._cache) >= _CACHE_ENTRIES:
            del self._cache[next(iter(self._cache))]
        self._cache[key] = txns

    def _drop_live(self) -> None:
        if self._txns is not None and hasattr(self._txns, "close"):
            self._txns.close()
        if self._dump is not None:
            self._dump.close()
        self._dump = self._txns = self._live = self._peek = None

    def _open(self, start: Offset, *, count_rows: bool) -> None:
        """The transactions from ``start``: the live dump when it is there, else a new one."""
        if self._txns is not None and self._live == start and self._counting >= count_rows:
            return
        self._drop_live()
        count_rows = count_rows or self.opts.max_rows_per_trigger is not None
        dump = BinlogDump(
            self.primary,
            start.start(self._address),
            start.gtid_state(),
            count_rows=count_rows,
        )
        self._dump = dump
        self._counting = count_rows
        self._txns = dump.transactions()
        self._live = start

    def _next(self) -> Txn | None:
        """The next transaction of the live dump (None at the binlog's end).

        A dump left open between two micro-batches may have been dropped by the
        primary meanwhile (``net_write_timeout``): on a connection error the
        dump is opened again, once, from the last transaction taken.
        """
        if self._peek is not None:
            txn, self._peek = self._peek, None
            return txn
        for attempt in range(3):
            assert self._txns is not None
            try:
                return next(self._txns)
            except StopIteration:
                self._dump = self._txns = self._live = None
                return None
            except (ConnectionLostError, ReplicaTimeoutError) as exc:
                resume = self._live
                if resume is None or attempt == 2 or (attempt and len(self.opts.addresses) < 2):
                    raise
                self._drop_live()
                if attempt:  # the primary did not come back: another host takes over
                    self._fail_over(resume, exc)
                self._open(resume, count_rows=self._counting)
        raise AssertionError("unreachable")  # pragma: no cover

    def _fail_over(self, delivered: Offset, cause: BaseException) -> None:
        """Move to the next writable primary holding every transaction planned so far.

        Raises:
            LostTransactionsError: a writable primary lacks planned transactions.
            FailoverError: no host can take over.
        """
        lost = self._address
        addresses = self.opts.addresses
        index = addresses.index(lost) if lost in addresses else -1
        tried: list[str] = []
        for address in [*addresses[index + 1 :], *addresses[: max(index, 0)]]:
            try:
                state = probe_primary(self.opts.for_address(address))
            except Exception as exc:  # unreachable, refused: try the next one
                tried.append(f"{address}: {exc}")
                continue
            if state.read_only:
                tried.append(f"{address}: read-only (not a primary)")
                continue
            missing = missing_transactions(
                delivered.gtid_state(), state.gtid_state, self._recent, state.binlog_state
            )
            if missing:
                raise LostTransactionsError(address, missing) from cause
            self._address = address
            if self._target is not None:
                self._target = primary_end(self.primary)
            return
        raise FailoverError(
            f"the primary {lost} was lost and no other host could take over: "
            + "; ".join(tried or ["no other host"])
        ) from cause

    def _reread(self, start: Offset, end: Offset) -> list[Txn]:
        """Read ``[start, end)`` again (a restart from the checkpoint)."""
        self._drop_live()
        if not end.file and not end.gtid:
            raise ConfigError(f"offset {end.to_json()} has no position to read up to")
        taken: list[Txn] = []
        try:
            self._open(start, count_rows=False)
            while True:
                txn = self._next()
                if txn is None:
                    break
                if end.on(self._address):
                    reached = txn.end == FilePos(end.file, end.pos)
                    beyond = position_key(txn.end) > position_key(FilePos(end.file, end.pos))
                else:  # a batch planned on another primary: its end is a GTID state
                    reached = bool(end.gtid) and txn.gtid_state == str(end.gtid_state())
                    beyond = False
                if txn.real and beyond:
                    break
                if txn.events:
                    taken.append(txn)
                if txn.real:
                    self._live = Offset(txn.end.file, txn.end.pos, txn.gtid_state, self._address)
                    if reached:
                        return taken
        except BinlogPositionError:
            raise
        except ReplicaError:
            self._drop_live()
            raise
        self._drop_live()
        raise BinlogPositionError(
            1236,
            "HY000",
            f"cannot re-read the binlog from {start.to_json()} to {end.to_json()}: the primary's "
            "binlog no longer has a transaction boundary at the end offset",
            "The binlog was purged, reset or rewritten since the checkpoint was written; "
            "restart the query from a new checkpoint (startingPosition)",
        )
