"""Binlog file reader over the shared ``binlog/`` decoder.

``open_binlog(path)`` takes one file, a directory (every binlog in it, in the
order of its ``.index`` file or of the numeric extension), or a list of files,
and yields typed events. Reading follows from one file to the next; each file
must start with the binlog magic; its first event tells the binlog format
version (v4 FORMAT_DESCRIPTION_EVENT, or a v1/v3 log of MySQL 3.23/4.0, see
``binlog.legacy``). Event positions are file offsets, also in relay logs
(whose headers carry the primary's positions in ``log_pos``). Crashed
logs that end without ROTATE/STOP are read to their last whole event; a file
that ends inside an event raises :class:`TruncatedBinlogError` naming the
position. ``*.gz`` files are read through gzip.

This module does the file I/O (mmap); the decoding is ``binlog.EventDecoder``.
"""

from __future__ import annotations

import gzip
import itertools
import mmap
import os
import re
from collections.abc import Iterable, Iterator, Sequence
from pathlib import Path
from types import TracebackType
from typing import Final

from .binlog.constants import (
    BINLOG_MAGIC,
    EVENT_HEADER_LEN,
    TRANSACTION_START_TYPES,
    EventType,
)
from .binlog.decoder import EventDecoder
from .binlog.events import Event
from .binlog.legacy import OLD_HEADER_LEN
from .config import DecoderOptions, TableFilter
from .errors import ConfigError, MalformedEventError, ReplicaError, TruncatedBinlogError
from .position import FilePos, PositionMaker
from .schema import SchemaHistory, SchemaTracker, Unproven

__all__ = ["BinlogFileReader", "binlog_files_in", "file_spans", "open_binlog"]

_NUMBERED: Final = re.compile(r".*\.(\d+)(\.gz)?$")
_RELEASE_EVERY: Final = 16 << 20  # bytes of mapped file read between page releases
_SIZE_OFFSET: Final = 9  # event_size u32 sits at bytes 9..12 of the header
_TYPE_OFFSET: Final = 4
_FDE: Final = int(EventType.FORMAT_DESCRIPTION_EVENT)
#: Events that set how the file's later events are read: decoded in every span.
_FILE_STATE: Final = frozenset(
    {EventType.FORMAT_DESCRIPTION_EVENT, EventType.START_ENCRYPTION_EVENT}
)

PathLike = str | os.PathLike[str]


def binlog_files_in(directory: PathLike) -> list[Path]:
    """The binlog files of a directory, oldest first.

    Uses the server's ``*.index`` file when there is exactly one; otherwise
    every file with a numeric extension (``mysql-bin.000042``), by number.
    """
    d = Path(directory)
    indexes = sorted(d.glob("*.index"))
    if len(indexes) == 1:
        names = [line.strip() for line in indexes[0].read_text().splitlines() if line.strip()]
        files = [d / Path(n).name for n in names]
        present = [f for f in files if f.exists()]
        if present:
            return present
    numbered = []
    for f in d.iterdir():
        m = _NUMBERED.fullmatch(f.name)
        if m and f.is_file():
            numbered.append((int(m[1]), f.name, f))
    if not numbered:
        raise ConfigError(f"no binlog files in directory {str(d)!r}")
    return [f for _, _, f in sorted(numbered)]


class BinlogFileReader:
    """Iterates the events of one or more binlog files. Use as a context manager.

    Args:
        files: the files, read in this order.
        options: the decoder's options.
        span: ``(lo, hi)``: read only the transactions of one file whose GTID
            event starts in ``[lo, hi)`` (the events before the first
            transaction go with ``lo == 0``), so that spans that tile the file
            read each of its events once, in parallel (:func:`file_spans`).
            ``lo`` is 0 or where a GTID event starts: the reader goes there
            straight after the file's FORMAT_DESCRIPTION_EVENT (so no other
            event before ``lo`` may change how later ones read, as a relay
            log's second FDE does; :func:`file_spans` never cuts such a file
            after it). An encrypted file (its events' sizes are encrypted
            too) or a pre-v4 one is one span: ``lo == 0`` reads it all, the
            others nothing.
        schema_history: the tables' definitions at the start of the first file
            (:class:`~replica_client.schema.SchemaHistory`): they complete TABLE_MAPs
            written without full metadata and move with the DDL read (a span's
            history must be the one at its start).
        unproven: with a history, what a TABLE_MAP it cannot vouch for does:
            ``"error"`` raises ``SchemaHistoryError``, ``"positional"`` passes it
            as the binlog has it.

    Attributes:
        event_position: ``FilePos`` where the event last yielded starts.
        position: ``FilePos`` just after the event last yielded.
        schema: the schema tracker (None without a history); ``schema.history``
            is the history after the events read.
    """

    def __init__(
        self,
        files: Sequence[Path],
        options: DecoderOptions,
        *,
        span: tuple[int, int] | None = None,
        schema_history: SchemaHistory | None = None,
        unproven: Unproven = "error",
    ) -> None:
        if not files:
            raise ConfigError("no binlog files given")
        if span is not None and (len(files) != 1 or not 0 <= span[0] <= span[1]):
            raise ConfigError(f"a span {span!r} is a range of offsets in one file")
        self.files = list(files)
        self._span = span
        self.options = options
        self.schema = (
            None if schema_history is None else SchemaTracker(schema_history, unproven=unproven)
        )
        self.decoder = EventDecoder(options, definitions=self.schema)
        # (file, start, end) of the event last yielded; FilePos objects are
        # built only when asked for, not once per event.
        self._where: tuple[str, int, int] | None = None
        self._position = PositionMaker().make
        self._closed = False
        self._iterating = False

    @property
    def event_position(self) -> FilePos | None:
        """Where the event last yielded starts."""
        where = self._where
        return self._position(where[0], where[1]) if where is not None else None

    @property
    def position(self) -> FilePos | None:
        """Just after the event last yielded."""
        where = self._where
        return self._position(where[0], where[2]) if where is not None else None

    def __enter__(self) -> BinlogFileReader:
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.close()

    def close(self) -> None:
        self._closed = True

    def __iter__(self) -> Iterator[Event]:
        if self._iterating:
            raise ReplicaError("a BinlogFileReader can be iterated once")
        self._iterating = True
        for path in self.files:
            if self._closed:
                return
            yield from self._read_file(path)

    def _read_file(self, path: Path) -> Iterator[Event]:
        name = path.name[:-3] if path.name.endswith(".gz") else path.name
        with _open_bytes(path) as data:
            size = len(data)
            if size < len(BINLOG_MAGIC) or data[:4] != BINLOG_MAGIC:
                raise MalformedEventError(
                    f"{str(path)!r} is not a binlog file (bad magic {bytes(data[:4])!r})",
                    position=0,
                )
            # Each file starts afresh: its first event tells the format version
            # (v4 FDE; v1/v3 START_EVENT_V3 or none), and with it the header
            # length. event_size is at bytes 9..12 in every version.
            decoder = self.decoder
            decoder.begin_file(name)
            pos = len(BINLOG_MAGIC)
            decode = decoder.iter_decode
            released = 0
            span = self._span
            lo, hi = span if span is not None else (0, size)
            # the events before the first transaction belong to the first span
            mine = lo == 0
            while pos < size:
                if self._closed:
                    return
                header_len = decoder.header_len
                if pos == len(BINLOG_MAGIC):
                    header_len = OLD_HEADER_LEN  # v1 or not is known after this event
                if pos + header_len > size:
                    raise TruncatedBinlogError(
                        f"{name} ends inside an event header "
                        f"({size - pos} of {decoder.header_len} bytes)",
                        position=pos,
                    )
                event_size = int.from_bytes(
                    data[pos + _SIZE_OFFSET : pos + _SIZE_OFFSET + 4], "little"
                )
                if event_size < header_len:
                    raise MalformedEventError(
                        f"event size {event_size} is smaller than the header",
                        event_type=data[pos + 4],
                        position=pos,
                    )
                end = pos + event_size
                if end > size:
                    raise TruncatedBinlogError(
                        f"{name} ends inside an event: {event_size} bytes announced, "
                        f"{size - pos} present",
                        event_type=data[pos + 4],
                        position=pos,
                    )
                read = state = True
                if span is not None:
                    kind = data[pos + _TYPE_OFFSET]
                    if kind in TRANSACTION_START_TYPES:
                        mine = lo <= pos < hi
                    read = mine
                    state = pos == len(BINLOG_MAGIC) or kind in _FILE_STATE
                    if state and not mine:  # how the later events read: decoded in every span
                        for _ in decode(data[pos:end], pos):
                            pass
                if read:
                    self._where = (name, pos, end)
                    yield from decode(data[pos:end], pos)
                if span is not None and state:
                    if kind == EventType.START_ENCRYPTION_EVENT or decoder.binlog_version != 4:
                        span = None  # one span: encrypted sizes, or a log without GTID events
                        if not mine:
                            return
                    elif lo > end and (end + 5 > size or data[end + 4] not in _FILE_STATE):
                        # after the FDE, straight to the span's first transaction
                        if lo < size and (
                            lo + EVENT_HEADER_LEN > size
                            or data[lo + _TYPE_OFFSET] not in TRANSACTION_START_TYPES
                        ):
                            raise ConfigError(
                                f"span {span!r} of {name}: no transaction starts at {lo} "
                                "(cut files with file_spans)"
                            )
                        end = lo
                pos = end
                if pos - released >= _RELEASE_EVERY and isinstance(data, mmap.mmap):
                    # Events are copied out of the map: let the pages read so
                    # far go, or RSS grows with the file (they stay in the
                    # page cache).
                    upto = pos - pos % mmap.PAGESIZE
                    data.madvise(mmap.MADV_DONTNEED, released, upto - released)
                    released = upto


def file_spans(path: PathLike, span_bytes: int) -> list[tuple[int, int]]:
    """Cut one binlog file into spans of about ``span_bytes`` at transaction starts.

    The spans, ``(lo, hi)`` in order, tile the file; each but the first starts
    at a transaction's GTID event at least ``span_bytes`` after the previous
    cut, so that :class:`BinlogFileReader` with ``span=`` reads each from its
    start. One span when the file is smaller, encrypted, of a pre-v4 format,
    has a second FORMAT_DESCRIPTION_EVENT (a relay log's), or no GTID events
    after the first ``span_bytes``. Only the headers are
    read (one pass over the file's event sizes); a malformed or truncated file
    stops the cutting there, and its readers report it.
    """
    if span_bytes < 1:
        raise ConfigError(f"span_bytes must be positive, got {span_bytes}")
    with _open_bytes(Path(path)) as data:
        size = len(data)
        magic = len(BINLOG_MAGIC)
        if (
            size <= span_bytes
            or size < magic + EVENT_HEADER_LEN
            or data[magic + _TYPE_OFFSET] != _FDE
        ):
            return [(0, size)]
        cuts = [0]
        pos, next_cut = magic, span_bytes
        while pos + EVENT_HEADER_LEN <= size:
            kind = data[pos + _TYPE_OFFSET]
            if kind in _FILE_STATE and pos > magic:
                # encrypted, or a relay log's second FDE: the readers of a span
                # go from the first FDE straight to their start
                return [(0, size)]
            if pos >= next_cut and kind in TRANSACTION_START_TYPES:
                cuts.append(pos)
                next_cut = pos + span_bytes
            event_size = int.from_bytes(data[pos + _SIZE_OFFSET : pos + _SIZE_OFFSET + 4], "little")
            if event_size < EVENT_HEADER_LEN:
                break
            pos += event_size
    cuts.append(size)
    return list(itertools.pairwise(cuts))


class _open_bytes:  # noqa: N801 - used like a function
    """Context manager giving a file's bytes: mmap for plain files, gzip in memory."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self._mm: mmap.mmap | None = None

    def __enter__(self) -> bytes | mmap.mmap:
        if self.path.name.endswith(".gz"):
            with gzip.open(self.path, "rb") as f:
                return f.read()
        with open(self.path, "rb") as f:
            if os.fstat(f.fileno()).st_size == 0:
                return b""
            self._mm = mmap.mmap(f.fileno(), 0, access=mmap.ACCESS_READ)
            return self._mm

    def __exit__(self, *exc: object) -> None:
        if self._mm is not None:
            self._mm.close()


def open_binlog(
    path: PathLike | Iterable[PathLike],
    *,
    key_file: PathLike | None = None,
    key_file_password: str | None = None,
    verify_checksum: bool = True,
    tables: str | Iterable[str] | TableFilter | None = None,
    options: DecoderOptions | None = None,
    schema_history: SchemaHistory | None = None,
    unproven: Unproven = "error",
) -> BinlogFileReader:
    """Open binlog files for reading typed events.

    Args:
        path: a binlog file, a directory of binlogs, or a list of files (read
            in the given order).
        key_file: file_key_management key file for encrypted MariaDB binlogs.
        key_file_password: password of an encrypted key file.
        verify_checksum: verify every event's CRC32 (default on).
        tables: only decode rows of these tables (``"db.t,db2.*"``).
        options: full decoder options (overrides ``verify_checksum``/``tables``).
        schema_history: the tables' definitions at the start of the first file, for
            binlogs written without full row metadata: captured from the server
            (a checkpoint's, ``Checkpoint.schema_history``, or
            :func:`replica_client.control.queries.prepare_history`), or built from
            ``CREATE TABLE`` texts (:meth:`SchemaHistory.from_ddl`). Without one,
            TABLE_MAPs are as the binlog has them (columns ``@1``, ``@2``, ... and integers read as
            signed where it says neither names nor signedness).
        unproven: see :class:`BinlogFileReader`.

    Raises:
        ConfigError: no such file, or no binlogs in the directory.
    """
    if isinstance(path, (str, os.PathLike)):
        p = Path(path)
        if p.is_dir():
            files = binlog_files_in(p)
        elif p.exists():
            files = [p]
        else:
            raise ConfigError(f"no such binlog file or directory: {str(p)!r}")
    else:
        files = [Path(f) for f in path]
        for f in files:
            if not f.is_file():
                raise ConfigError(f"no such binlog file: {str(f)!r}")
    if options is None:
        if isinstance(tables, TableFilter):
            table_filter = tables
        else:
            table_filter = TableFilter.parse(tables or ())
        options = DecoderOptions(verify_checksum=verify_checksum, tables=table_filter)
    if key_file is not None:
        from .binlog.encryption import parse_key_file

        keys = parse_key_file(Path(key_file).read_bytes(), key_file_password)
        options = _with_keys(options, keys)
    return BinlogFileReader(files, options, schema_history=schema_history, unproven=unproven)


def _with_keys(options: DecoderOptions, keys: dict[int, bytes]) -> DecoderOptions:
    from dataclasses import replace

    return replace(options, encryption_keys=keys)
