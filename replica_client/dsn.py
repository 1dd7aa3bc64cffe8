"""DSNs of the form ``mariadb://user:pass@host:port``, parsed in one place.

Used by the command line and the test harness. Contract:

- :func:`split_dsn` takes ``mariadb://`` or ``mysql://`` DSNs and returns a
  :class:`Dsn` whose parts are ``None`` where the DSN leaves them out (the
  command line fills those from its options); user and password are
  percent-decoded. Several hosts are comma-separated
  (``mariadb://repl@db1:3306,db2:3306``): ``hosts`` lists them all as
  ``host:port``, ``host``/``port`` are the first one's.
- :func:`parse_dsn` is the strict form the harness uses: a host is required,
  the port defaults to 3306, the user to ``root``, the password to ``""``.
- :func:`format_dsn` builds a DSN, percent-encoding user and password.
- A malformed DSN raises ``ValueError`` whose message never repeats the DSN:
  it may hold a password. :func:`dsn_secrets` gives the password as written
  and decoded, whatever the scheme, for redacting messages.

Only the standard library is imported: the command line uses this module.
"""

from __future__ import annotations

from dataclasses import dataclass
from urllib.parse import quote, unquote

from .config import format_address, parse_address
from .errors import ConfigError

__all__ = ["DSN_SCHEMES", "Dsn", "dsn_secrets", "format_dsn", "parse_dsn", "split_dsn"]

DSN_SCHEMES = ("mariadb", "mysql")
_EXPECTED = "expected a DSN like mariadb://user:pass@host:port"


@dataclass(frozen=True, slots=True)
class Dsn:
    """The parts of a DSN; ``None`` where the DSN does not give one."""

    scheme: str
    host: str | None
    port: int | None
    user: str | None
    password: str | None
    #: Every host of the DSN as ``host:port`` (empty when it names none).
    hosts: tuple[str, ...] = ()


@dataclass(frozen=True, slots=True)
class _UrlParts:
    scheme: str
    username: str | None  # as written (percent-encoded); None without "@"
    password: str | None  # as written; None without ":" before the "@"
    where: str  # the host list after the "@"


def _url_parts(dsn: str) -> _UrlParts | None:
    """The parts of a URL-like ``scheme://user:pass@hosts/...``; None if it is not one.

    Not ``urllib.parse.urlsplit``: Pythons that reject square brackets inside a
    host (Debian 12's python3.11 among them) reject a host list such as
    ``db1:3307,[::1]:3309`` as an invalid IPv6 URL.
    """
    scheme, sep, rest = dsn.partition("://")
    if not sep or not scheme:
        return None
    netloc = rest
    for end in "/?#":
        netloc = netloc.partition(end)[0]
    userinfo, at, where = netloc.rpartition("@")
    if not at:
        return _UrlParts(scheme.lower(), None, None, where)
    user, colon, password = userinfo.partition(":")
    return _UrlParts(scheme.lower(), user, password if colon else None, where)


def split_dsn(dsn: str) -> Dsn:
    """The parts of ``mariadb://user:pass@host:port``; ``ValueError`` if it is not one."""
    parts = _url_parts(dsn)
    if parts is None or parts.scheme not in DSN_SCHEMES:
        raise ValueError(_EXPECTED)
    where = parts.where
    try:
        addresses = [parse_address(h) for h in where.split(",")] if where else []
    except ConfigError:
        raise ValueError(_EXPECTED) from None
    host, port = addresses[0] if addresses else (None, None)
    explicit_port = port if addresses and ":" in where.split(",")[0].rpartition("]")[2] else None
    return Dsn(
        scheme=parts.scheme,
        host=host,
        port=explicit_port,
        user=unquote(parts.username) if parts.username else None,
        password=unquote(parts.password) if parts.password is not None else None,
        hosts=tuple(format_address(h, p) for h, p in addresses),
    )


def parse_dsn(dsn: str) -> tuple[str, int, str, str]:
    """Split ``mariadb://user:pass@host:port`` into ``(host, port, user, password)``."""
    parts = split_dsn(dsn)
    if parts.host is None:
        raise ValueError(_EXPECTED)
    return parts.host, parts.port or 3306, parts.user or "root", parts.password or ""


def format_dsn(user: str, password: str, host: str, port: int, scheme: str = "mariadb") -> str:
    """``scheme://user:password@host:port`` with user and password percent-encoded."""
    if scheme not in DSN_SCHEMES:
        raise ValueError(f"DSN scheme must be one of {DSN_SCHEMES}, got {scheme!r}")
    return f"{scheme}://{quote(user, safe='')}:{quote(password, safe='')}@{host}:{port}"


def dsn_secrets(dsn: str) -> tuple[str, ...]:
    """The password of any URL-like ``dsn`` as written and decoded (for redaction); or ``()``."""
    parts = _url_parts(dsn)
    raw = parts.password if parts is not None else None
    return tuple(dict.fromkeys((raw, unquote(raw)))) if raw else ()
