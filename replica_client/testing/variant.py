"""What server to run and how it writes its binary log: :class:`ServerVariant`.

Contract: a variant is frozen, hashable and validated at construction, so it
serves as a cache key (one server per distinct variant in a test session).

- ``flavor="mariadb", version=None`` is the MariaDB installed on the machine
  (``mariadbd`` on PATH or in the sbin directories), the default.
- ``flavor="mariadb", version="11.8"`` and ``flavor="mysql", version="9.7"``
  (MySQL's default version) run from a prefix provisioned from Debian packages
  (:mod:`replica_client.testing.provision`).
- ``binlog_format`` (``ROW``, the default, ``MIXED`` or ``STATEMENT``),
  ``row_metadata`` (``FULL`` by default), ``row_image``, ``checksum``,
  ``tls`` and ``extra_args`` apply to every flavour; ``compress`` and
  ``encrypt`` (MariaDB's ``log_bin_compress`` and ``encrypt_binlog``) to
  MariaDB only, ``transaction_compression``
  (``binlog_transaction_compression``) to MySQL only. An option that does not
  apply to the flavour, or a value the flavour does not know, raises
  ``ValueError``; the string options are upper-cased. MySQL 9.7 takes
  ``--binlog-format`` with a deprecation warning in its error log.
- The default variant of every flavour writes the recommended binlog: ROW,
  FULL row image and metadata, CRC32. A server started without flags writes
  what :data:`SERVER_DEFAULTS` names instead (MariaDB 10.11 and 11.8:
  ``MIXED`` and ``NO_LOG``; MySQL 9.7: ``ROW`` and ``MINIMAL``), which is
  what most primaries run with. :meth:`ServerVariant.server_defaults` is that
  variant of a flavour (its label says ``server_defaults``), and
  :attr:`ServerVariant.is_server_defaults` is true for any variant whose
  ``binlog_format`` and ``row_metadata`` are the server's own.
- ``--binlog-format`` and ``--binlog-row-metadata`` reach the server only
  when the variant's value differs from the server's own default, so a
  server-defaults variant starts the way a user's server would. Such a
  variant also leaves the annotation of row events at the server's default
  (MariaDB's ``binlog_annotate_row_events`` ON, MySQL's
  ``binlog_rows_query_log_events`` OFF); other variants turn it on. Every
  variant keeps what the harness needs: ``log-bin``, server id, row image,
  checksum, semi-sync with a short timeout, a 1G ``max_allowed_packet``, and
  on MySQL GTIDs (``gtid_mode=ON``, which is not MySQL's default).

Only the standard library and the provisioning recipes are imported.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from typing import Any

from .provision import RECIPES

__all__ = ["SERVER_DEFAULTS", "SERVER_VERSIONS", "ServerVariant"]

#: Flavour -> the versions a variant may name (``None``: the machine's own install).
SERVER_VERSIONS: dict[str, tuple[str | None, ...]] = {
    "mariadb": (None, *(v for f, v in RECIPES if f == "mariadb")),
    "mysql": tuple(v for f, v in RECIPES if f == "mysql"),
}
_DEFAULT_VERSION: dict[str, str | None] = {"mariadb": None, "mysql": "9.7"}
#: Flavour -> (binlog_format, binlog_row_metadata) of a server started without flags.
SERVER_DEFAULTS: dict[str, tuple[str, str]] = {
    "mariadb": ("MIXED", "NO_LOG"),
    "mysql": ("ROW", "MINIMAL"),
}
_BINLOG_FORMAT = ("ROW", "MIXED", "STATEMENT")
_ROW_METADATA = {"mariadb": ("MINIMAL", "FULL", "NO_LOG"), "mysql": ("MINIMAL", "FULL")}
_ROW_IMAGE = ("FULL", "MINIMAL", "NOBLOB")
_CHECKSUM = ("CRC32", "NONE")
_ONLY_FOR = {"compress": "mariadb", "encrypt": "mariadb", "transaction_compression": "mysql"}


@dataclass(frozen=True, slots=True, kw_only=True)
class ServerVariant:
    """Which server, and how it writes its binary log. Frozen and hashable: a cache key."""

    flavor: str = "mariadb"
    version: str | None = None
    binlog_format: str = "ROW"
    row_metadata: str = "FULL"
    row_image: str = "FULL"
    checksum: str = "CRC32"
    compress: bool = False
    encrypt: bool = False
    tls: bool = False
    transaction_compression: bool = False
    extra_args: tuple[str, ...] = ()

    def __post_init__(self) -> None:
        flavor = str(self.flavor).lower()
        if flavor not in SERVER_VERSIONS:
            raise ValueError(
                f"ServerVariant.flavor must be one of {tuple(SERVER_VERSIONS)}, got {flavor!r}"
            )
        object.__setattr__(self, "flavor", flavor)
        version = _DEFAULT_VERSION[flavor] if self.version is None else str(self.version)
        if version not in SERVER_VERSIONS[flavor]:
            choices = ", ".join(
                "None (the machine's install)" if v is None else repr(v)
                for v in SERVER_VERSIONS[flavor]
            )
            raise ValueError(
                f"ServerVariant.version for {flavor} must be one of {choices}, got {version!r}"
            )
        object.__setattr__(self, "version", version)
        for name, allowed in (
            ("binlog_format", _BINLOG_FORMAT),
            ("row_metadata", _ROW_METADATA[flavor]),
            ("row_image", _ROW_IMAGE),
            ("checksum", _CHECKSUM),
        ):
            value = str(getattr(self, name)).upper()
            if value not in allowed:
                raise ValueError(
                    f"ServerVariant.{name} for {flavor} must be one of {allowed}, got {value!r}"
                )
            object.__setattr__(self, name, value)
        for name, only in _ONLY_FOR.items():
            if getattr(self, name) and flavor != only:
                raise ValueError(f"ServerVariant.{name} applies to {only} only, not to {flavor}")
        if isinstance(self.extra_args, str):
            raise TypeError("ServerVariant.extra_args must be a sequence of flags, not a string")
        object.__setattr__(self, "extra_args", tuple(str(a) for a in self.extra_args))

    @classmethod
    def server_defaults(
        cls, flavor: str = "mariadb", version: str | None = None, **fields: Any
    ) -> ServerVariant:
        """The variant of ``flavor``/``version`` that writes its binlog as the server does
        when started without flags (:data:`SERVER_DEFAULTS`): no ``--binlog-format`` nor
        ``--binlog-row-metadata`` on its command line. ``fields`` are the other options;
        ``binlog_format`` and ``row_metadata`` are this method's to set (TypeError)."""
        taken = sorted({"binlog_format", "row_metadata"}.intersection(fields))
        if taken:
            raise TypeError(
                f"ServerVariant.server_defaults() sets {' and '.join(taken)} itself; "
                "use ServerVariant(...) for other binlog settings"
            )
        variant = cls(flavor=flavor, version=version, **fields)
        binlog_format, row_metadata = SERVER_DEFAULTS[variant.flavor]
        return dataclasses.replace(variant, binlog_format=binlog_format, row_metadata=row_metadata)

    @property
    def is_server_defaults(self) -> bool:
        """True when ``binlog_format`` and ``row_metadata`` are the server's own defaults."""
        return (self.binlog_format, self.row_metadata) == SERVER_DEFAULTS[self.flavor]

    @property
    def server_name(self) -> str:
        """Flavour and version: ``mariadb`` (the machine's), ``mariadb-11.8``, ``mysql-9.7``."""
        return self.flavor if self.version is None else f"{self.flavor}-{self.version}"

    @property
    def label(self) -> str:
        """The server and what differs from the variant defaults, e.g.
        ``mysql-9.7:row_image=MINIMAL``; ``mariadb-11.8:server_defaults`` names a
        server-defaults variant (:meth:`server_defaults`)."""
        default = ServerVariant(flavor=self.flavor, version=self.version)
        parts: list[str] = ["server_defaults"] if self.is_server_defaults else []
        for name in ("binlog_format", "row_metadata", "row_image", "checksum"):
            if self.is_server_defaults and name in ("binlog_format", "row_metadata"):
                continue
            value = getattr(self, name)
            if value != getattr(default, name):
                parts.append(f"{name}={value}")
        parts.extend(
            name
            for name in ("compress", "encrypt", "tls", "transaction_compression")
            if getattr(self, name)
        )
        parts.extend(self.extra_args)
        return ":".join((self.server_name, ",".join(parts))) if parts else self.server_name

    @property
    def provisioned(self) -> bool:
        """True when the server runs from a provisioned prefix, not the machine's install."""
        return self.version is not None
