"""Options of the ``mariadb_binlog`` Spark source, parsed once into a frozen value.

No pyspark import: the options arrive as a plain mapping. Spark lowercases
option names before the source sees them (``maxRowsPerTrigger`` arrives as
``maxrowspertrigger``), so every name is matched case-insensitively, and
``server_id``, ``serverId`` and ``server-id`` are the same option.

See :mod:`replica_client.spark` for the table of options.
"""

from __future__ import annotations

import os
import re
from collections.abc import Mapping
from dataclasses import dataclass, field, replace
from typing import Any, Final, Literal

from ..config import DecoderOptions, TableFilter, format_address, parse_address
from ..errors import ConfigError
from ..position import FilePos, Gtid, MysqlGtidSet
from ..tls import TLS_MODES, TlsMode

__all__ = ["DEFAULT_MAX_BYTES_PER_TRIGGER", "SourceOptions", "StartingPosition", "parse_options"]

#: A micro-batch's binlog bytes, capped by default (its tasks read them in parallel).
DEFAULT_MAX_BYTES_PER_TRIGGER: Final = 64 << 20

#: "earliest", "latest", "snapshot" (the tables' rows first, then the stream from
#: the binlog's end then), a MariaDB GTID state, a MySQL GTID set, or a file position.
StartingPosition = Literal["earliest", "latest", "snapshot"] | Gtid | MysqlGtidSet | FilePos


_KNOWN: Final = frozenset(
    {
        "path",
        "paths",
        "host",
        "hosts",
        "port",
        "user",
        "password",
        "serverid",
        "taskserverids",
        "startingposition",
        "splitbytes",
        "tables",
        "excludetables",
        "keyfile",
        "keyfilepassword",
        "verifychecksum",
        "maxrowspertrigger",
        "maxbytespertrigger",
        "maxpartitions",
        "partitionbytes",
        "connecttimeout",
        "readtimeout",
        "tls",
        "tlsca",
        "snapshotchunkrows",
        "typed",
        "invalidvalues",
        "schemahistory",
        "unproven",
    }
)

#: invalidValues: what typed mode does with a value Spark cannot hold.
InvalidValues = Literal["error", "null"]
#: schemaHistory: where the table definitions the binlog lacks come from (a stream):
#: read from the primary at the query's start ("auto": the binlog between the start
#: and that moment read for DDL where it matters; "scan": always), or none ("off").
SchemaHistoryMode = Literal["auto", "scan", "off"]
#: unproven: a TABLE_MAP the schema history cannot vouch for fails the query
#: ("error") or is read as the binlog has it, columns ``@1``, ``@2``, ... ("positional").
UnprovenMode = Literal["error", "positional"]


def _key(name: str) -> str:
    return name.lower().replace("_", "").replace("-", "").replace(".", "")


def _int(opts: Mapping[str, str], name: str, default: int | None, minimum: int) -> int | None:
    raw = opts.get(name)
    if raw is None or str(raw).strip() == "":
        return default
    try:
        value = int(str(raw).strip())
    except ValueError:
        raise ConfigError(f"option {name} must be an integer, got {raw!r}") from None
    if value < minimum:
        raise ConfigError(f"option {name} must be at least {minimum}, got {value}")
    return value


def _float(opts: Mapping[str, str], name: str, default: float) -> float:
    raw = opts.get(name)
    if raw is None or str(raw).strip() == "":
        return default
    try:
        value = float(str(raw))
    except ValueError:
        raise ConfigError(f"option {name} must be a number, got {raw!r}") from None
    if value <= 0:
        raise ConfigError(f"option {name} must be positive, got {value}")
    return value


def _bool(opts: Mapping[str, str], name: str, default: bool) -> bool:
    raw = opts.get(name)
    if raw is None:
        return default
    text = str(raw).strip().lower()
    if text in ("true", "1", "yes", "on"):
        return True
    if text in ("false", "0", "no", "off"):
        return False
    raise ConfigError(f"option {name} must be true or false, got {raw!r}")


_UUID_PREFIX: Final = re.compile(r"[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-")


def parse_starting_position(text: str) -> StartingPosition:
    """``earliest`` | ``latest`` | ``0-1-100[,1-2-7]`` | ``uuid:1-100`` | ``mysql-bin.000003:4``."""
    value = text.strip()
    lowered = value.lower()
    if lowered == "earliest":
        return "earliest"
    if lowered == "latest":
        return "latest"
    if lowered == "snapshot":
        return "snapshot"
    if _UUID_PREFIX.match(value):
        return MysqlGtidSet(value)
    if ":" in value:
        return FilePos.parse(value)
    if value:
        return Gtid(value)
    raise ConfigError("startingPosition is empty")


@dataclass(frozen=True, slots=True)
class SourceOptions:
    """Every option of the source, validated. Picklable (shipped to executors)."""

    paths: tuple[str, ...] = ()
    host: str = "127.0.0.1"
    port: int = 3306
    #: Every primary the stream may use (``host:port``), the first one by default.
    hosts: tuple[str, ...] = ()
    user: str = ""
    password: str = field(default="", repr=False)
    server_id: int | None = None
    #: The replica ids stream tasks register with (``taskServerIds``, first and
    #: last); None: the ``maxPartitions`` ids after ``server_id``.
    task_server_id_range: tuple[int, int] | None = None
    starting_position: StartingPosition = "earliest"
    tables: TableFilter = field(default_factory=TableFilter)
    key_file: str | None = None
    key_file_password: str | None = field(default=None, repr=False)
    verify_checksum: bool = True
    max_rows_per_trigger: int | None = None
    max_bytes_per_trigger: int | None = DEFAULT_MAX_BYTES_PER_TRIGGER
    max_partitions: int = 16
    partition_bytes: int = 4 << 20
    #: batch: a file larger than this is read by several tasks, cut at transaction starts.
    split_bytes: int = 16 << 20
    connect_timeout: float = 10.0
    read_timeout: float = 60.0
    tls: TlsMode = "off"
    tls_ca: str | None = None
    #: startingPosition=snapshot: about this many rows per key range (one task each).
    snapshot_chunk_rows: int = 50_000
    #: typed=true: ``before``/``after`` as structs of the one table in ``tables``.
    typed: bool = False
    #: typed=true: a value Spark cannot hold (a zero date, ...) fails the query
    #: (``error``) or is read as NULL (``null``).
    invalid_values: InvalidValues = "error"
    #: schemaHistory auto|scan|off (a stream); a file's history is ``schema_history_file``.
    schema_history: SchemaHistoryMode = "auto"
    #: schemaHistory naming a JSON file (a Checkpoint's or a SchemaHistory's): the
    #: history valid at the start (of the first binlog file, or at startingPosition).
    schema_history_file: str | None = None
    #: unproven: error | positional (see :data:`UnprovenMode`).
    unproven: UnprovenMode = "error"

    @property
    def uses_history(self) -> bool:
        """True when TABLE_MAPs are completed from a schema history."""
        return self.schema_history_file is not None or self.schema_history != "off"

    @property
    def task_server_ids(self) -> tuple[int, int]:
        """The first and last replica id of stream tasks: each task of a micro-batch
        registers with its own, so that the primary never drops one for another."""
        if self.task_server_id_range is not None:
            return self.task_server_id_range
        base = self.server_id or 0
        return base + 1, base + self.max_partitions

    @property
    def typed_table(self) -> tuple[str, str]:
        """The ``(schema, table)`` of typed mode (the one table of ``tables``)."""
        schema, _, table = self.tables.include[0].partition(".")
        return schema, table

    def decoder_options(self, *, with_filter: bool = True) -> DecoderOptions:
        """Decoder options for executors (the filter is applied by the driver in streams)."""
        return DecoderOptions(
            verify_checksum=self.verify_checksum,
            tables=self.tables if with_filter else TableFilter(),
        )

    @property
    def address(self) -> str:
        return format_address(self.host, self.port)

    @property
    def addresses(self) -> tuple[str, ...]:
        """The primaries a stream may use, in order."""
        return self.hosts or (self.address,)

    def for_address(self, address: str) -> SourceOptions:
        """These options pointed at one of the hosts."""
        host, port = parse_address(address)
        return replace(self, host=host, port=port)

    def connection_kwargs(self) -> dict[str, Any]:
        """PyMySQL connection arguments for the primary of these options."""
        kwargs: dict[str, Any] = {
            "host": self.host,
            "port": self.port,
            "user": self.user,
            "password": self.password,
            "connect_timeout": self.connect_timeout,
            "autocommit": True,
        }
        if self.tls != "off":
            kwargs["ssl"] = {"ca": self.tls_ca} if self.tls_ca else {}
            kwargs["ssl_verify_cert"] = self.tls != "required"
            kwargs["ssl_verify_identity"] = self.tls == "verify_identity"
        return kwargs

    def require_connection(self) -> None:
        """Raise ConfigError unless the options name a primary to stream from."""
        if not self.user:
            raise ConfigError("option user is required to stream from a primary")
        if self.server_id is None:
            raise ConfigError(
                "option server_id is required to stream from a primary: a replica id "
                "unique among the primary's replicas (a duplicate disconnects the other)"
            )
        first, last = self.task_server_ids
        if first <= self.server_id <= last:
            raise ConfigError(
                f"option taskServerIds ({first}-{last}) holds server_id {self.server_id}: the "
                "stream's tasks register with those ids, and a duplicate disconnects the other"
            )


def parse_options(options: Mapping[str, str]) -> SourceOptions:
    """Validate the options Spark hands to the source (names in any case).

    Raises:
        ConfigError: an unknown option, or a value of the wrong form.
    """
    opts: dict[str, str] = {}
    for name, value in options.items():
        key = _key(str(name))
        if key not in _KNOWN:
            raise ConfigError(
                f"unknown option {name!r} for mariadb_binlog; known: "
                "host, port, hosts, user, password, server_id, taskServerIds, "
                "startingPosition, tables, "
                "excludeTables, keyFile, keyFilePassword, verifyChecksum, maxRowsPerTrigger, "
                "maxBytesPerTrigger, maxPartitions, partitionBytes, splitBytes, connectTimeout, "
                "readTimeout, tls, tlsCa, snapshotChunkRows, typed, invalidValues, "
                "schemaHistory, unproven, path"
            )
        opts[key] = "" if value is None else str(value)
    paths: list[str] = []
    for key in ("path", "paths"):
        raw = opts.get(key, "").strip()
        if not raw:
            continue
        if raw.startswith("["):  # DataFrameReader.load([...]) passes a JSON list
            import json

            paths.extend(str(p) for p in json.loads(raw))
        else:
            paths.extend(p.strip() for p in raw.split(",") if p.strip())
    tls = opts.get("tls", "off").strip().lower() or "off"
    if tls in ("true", "on", "1"):
        tls = "required"
    elif tls in ("false", "0"):
        tls = "off"
    if tls not in TLS_MODES:
        raise ConfigError(f"option tls must be off, required, verify_ca or verify_identity: {tls}")
    max_bytes = _int(opts, "maxbytespertrigger", DEFAULT_MAX_BYTES_PER_TRIGGER, 0)
    key_file = opts.get("keyfile") or None
    if key_file is not None:
        key_file = os.path.expanduser(key_file)
    host = opts.get("host", "127.0.0.1") or "127.0.0.1"
    port = _int(opts, "port", 3306, 1) or 3306
    hosts: tuple[str, ...] = ()
    if opts.get("hosts", "").strip():
        parsed = [parse_address(h) for h in opts["hosts"].split(",") if h.strip()]
        host, port = parsed[0]
        hosts = tuple(format_address(h, p) for h, p in parsed)
    invalid = opts.get("invalidvalues", "").strip().lower() or "error"
    if invalid not in ("error", "null"):
        raise ConfigError(f"option invalidValues must be error or null, got {invalid!r}")
    history_mode, history_file = _schema_history(opts.get("schemahistory", ""))
    unproven = opts.get("unproven", "").strip().lower() or "error"
    if unproven not in ("error", "positional"):
        raise ConfigError(f"option unproven must be error or positional, got {unproven!r}")
    result = SourceOptions(
        paths=tuple(paths),
        host=host,
        port=port,
        hosts=hosts,
        user=opts.get("user", ""),
        password=opts.get("password", ""),
        server_id=_int(opts, "serverid", None, 1),
        task_server_id_range=_id_range(opts.get("taskserverids", "")),
        starting_position=parse_starting_position(opts.get("startingposition", "earliest")),
        tables=TableFilter.parse(opts.get("tables", ""), opts.get("excludetables", "")),
        key_file=key_file,
        key_file_password=opts.get("keyfilepassword") or None,
        verify_checksum=_bool(opts, "verifychecksum", True),
        max_rows_per_trigger=_int(opts, "maxrowspertrigger", None, 1),
        max_bytes_per_trigger=max_bytes or None,
        max_partitions=_int(opts, "maxpartitions", 16, 1) or 16,
        partition_bytes=_int(opts, "partitionbytes", 4 << 20, 1) or (4 << 20),
        split_bytes=_int(opts, "splitbytes", 16 << 20, 1) or (16 << 20),
        connect_timeout=_float(opts, "connecttimeout", 10.0),
        read_timeout=_float(opts, "readtimeout", 60.0),
        tls=tls,
        tls_ca=opts.get("tlsca") or None,
        snapshot_chunk_rows=_int(opts, "snapshotchunkrows", 50_000, 1) or 50_000,
        typed=_bool(opts, "typed", False),
        invalid_values="null" if invalid == "null" else "error",
        schema_history=history_mode,
        schema_history_file=history_file,
        unproven="positional" if unproven == "positional" else "error",
    )
    if result.typed:
        _check_typed(result)
    elif "invalidvalues" in opts:
        raise ConfigError("option invalidValues applies only with typed=true")
    return result


def _id_range(raw: str) -> tuple[int, int] | None:
    """Option taskServerIds: ``first-last`` (or one id), None when not given."""
    raw = raw.strip()
    if not raw:
        return None
    first, _, last = raw.partition("-")
    try:
        ids = int(first), int(last or first)
    except ValueError:
        raise ConfigError(f"option taskServerIds must be first-last, got {raw!r}") from None
    if not 1 <= ids[0] <= ids[1] <= 0xFFFFFFFF:
        raise ConfigError(
            f"option taskServerIds must be first-last with 1 <= first <= last < 2**32, got {raw!r}"
        )
    return ids


def _schema_history(raw: str) -> tuple[SchemaHistoryMode, str | None]:
    """schemaHistory: ``auto`` (default), ``scan``, ``off``, or the path of a JSON file."""
    value = raw.strip()
    lowered = value.lower()
    if lowered in ("", "auto"):
        return "auto", None
    if lowered == "scan":
        return "scan", None
    if lowered in ("off", "false", "none"):
        return "off", None
    path = os.path.expanduser(value)
    if not os.path.isfile(path):
        raise ConfigError(
            "option schemaHistory must be auto, scan, off or the path of a JSON file "
            f"(a checkpoint's or a schema history's); no such file: {value!r}"
        )
    return "auto", path


_GLOB_CHARS: Final = re.compile(r"[*?\[]")


def _check_typed(options: SourceOptions) -> None:
    """typed=true needs exactly one table, named without wildcards, and a stream of changes."""
    include = options.tables.include
    if len(include) != 1 or _GLOB_CHARS.search(include[0]):
        given = ",".join(include) or "(none)"
        raise ConfigError(
            "option typed=true needs tables to name exactly one table as schema.table, "
            f"without wildcards (the struct columns are that table's); tables is {given}"
        )
    if options.starting_position == "snapshot":
        raise ConfigError(
            "option typed=true does not support startingPosition=snapshot: start from "
            "earliest, latest, a GTID or a file position"
        )
