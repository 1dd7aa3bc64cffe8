"""Configuration value types shared by every layer. No I/O.

:class:`DecoderOptions` configures the binlog decoder (files and network alike);
the network replica's own options live in :class:`replica_client.aio` 's
``ReplicaConfig``, which embeds a ``DecoderOptions``.
"""

from __future__ import annotations

import fnmatch
import re
from collections.abc import Iterable
from dataclasses import dataclass, field

from .errors import ConfigError

__all__ = [
    "DEFAULT_MAX_EVENT_SIZE",
    "DecoderOptions",
    "TableFilter",
    "format_address",
    "parse_address",
]

#: 1 GiB: the largest event MariaDB can write (max_allowed_packet's ceiling).
DEFAULT_MAX_EVENT_SIZE = 1 << 30


@dataclass(frozen=True, slots=True)
class TableFilter:
    """Which ``schema.table`` pairs to decode: ``fnmatch`` patterns, case-sensitive.

    ``TableFilter.parse("shop.*,crm.users", exclude="shop.tmp_*")``. An empty
    include list means every table. Rows of excluded tables are never decoded.
    """

    include: tuple[str, ...] = ()
    exclude: tuple[str, ...] = ()
    _include_re: re.Pattern[str] | None = field(default=None, init=False, repr=False, compare=False)
    _exclude_re: re.Pattern[str] | None = field(default=None, init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        for pattern in (*self.include, *self.exclude):
            if pattern.count(".") < 1:
                raise ConfigError(f"table pattern {pattern!r} must look like 'schema.table'")
        object.__setattr__(self, "_include_re", _compile(self.include))
        object.__setattr__(self, "_exclude_re", _compile(self.exclude))

    @classmethod
    def parse(
        cls, include: str | Iterable[str] = (), exclude: str | Iterable[str] = ()
    ) -> TableFilter:
        return cls(_split(include), _split(exclude))

    def __call__(self, schema: str, table: str) -> bool:
        name = f"{schema}.{table}"
        if self._include_re is not None and not self._include_re.match(name):
            return False
        return not (self._exclude_re is not None and self._exclude_re.match(name))

    def __bool__(self) -> bool:
        return bool(self.include or self.exclude)


def _split(value: str | Iterable[str]) -> tuple[str, ...]:
    items = value.split(",") if isinstance(value, str) else list(value)
    return tuple(s.strip() for s in items if s.strip())


def _compile(patterns: tuple[str, ...]) -> re.Pattern[str] | None:
    if not patterns:
        return None
    return re.compile("|".join(f"(?:{fnmatch.translate(p)})" for p in patterns))


@dataclass(frozen=True, slots=True)
class DecoderOptions:
    """Options of the binlog decoder.

    Attributes:
        verify_checksum: verify the CRC32 trailer of every event (default on);
            a mismatch raises ``ChecksumMismatchError``.
        tables: decode rows only for these tables; row events of other tables
            are dropped before their rows are decoded.
        max_event_size: larger events raise ``LimitExceededError``.
        table_map_cache_size: distinct table definitions kept compiled.
        encryption_keys: key id -> AES key, for encrypted MariaDB binlog files.
        unknown_events: what to do with an event type the decoder does not
            know and the server did not flag LOG_EVENT_IGNORABLE_F: ``"error"``
            (default) raises ``UnknownEventError``; ``"keep"`` returns it as an
            ``UnknownEvent`` with its body (for vendor events). Flagged
            events are always kept as ``UnknownEvent``; none is ever dropped.
        decode_rows: False leaves the rows of rows events undecoded: they come as
            ``RawRowsEvent`` (table and flags only), for a reader that only
            splits the binlog into transactions and hands the raw events on.
    """

    verify_checksum: bool = True
    tables: TableFilter = field(default_factory=TableFilter)
    max_event_size: int = DEFAULT_MAX_EVENT_SIZE
    table_map_cache_size: int = 4096
    encryption_keys: dict[int, bytes] | None = field(default=None, repr=False)
    unknown_events: str = "error"
    decode_rows: bool = True

    def __post_init__(self) -> None:
        if self.max_event_size < 19:
            raise ConfigError("max_event_size must be at least 19 bytes")
        if self.table_map_cache_size < 1:
            raise ConfigError("table_map_cache_size must be positive")
        if self.unknown_events not in ("error", "keep"):
            raise ConfigError("unknown_events must be 'error' or 'keep'")


def parse_address(text: str, default_port: int = 3306) -> tuple[str, int]:
    """``"host"``, ``"host:port"`` or ``"[v6 address]:port"`` -> (host, port)."""
    text = text.strip()
    if text.startswith("["):
        host, _, rest = text[1:].partition("]")
        port_text = rest[1:] if rest.startswith(":") else ""
    elif text.count(":") == 1:
        host, _, port_text = text.partition(":")
    else:
        host, port_text = text, ""
    if not host:
        raise ConfigError(f"invalid host address {text!r}")
    try:
        port = int(port_text) if port_text else default_port
    except ValueError:
        raise ConfigError(f"invalid port in host address {text!r}") from None
    if not 0 < port < 65536:
        raise ConfigError(f"invalid port in host address {text!r}")
    return host, port


def format_address(host: str, port: int) -> str:
    """``host:port``, with brackets around an IPv6 address."""
    return f"[{host}]:{port}" if ":" in host else f"{host}:{port}"
