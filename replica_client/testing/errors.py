"""The harness's error types, shared by every module of ``replica_client.testing``.

Contract: anything that keeps a server from being had (no binaries, a
provisioning failure, a bootstrap or start failure) raises
:class:`ServerStartError` or a subclass, with a message that says what failed
and what to do; an operation that does not apply to a server or to its current
state raises :class:`ServerStateError`. Nothing here imports beyond the
standard library.
"""

from __future__ import annotations

__all__ = ["PortInUseError", "ServerStartError", "ServerStateError"]


class ServerStartError(RuntimeError):
    """The server could not be provisioned, initialized or started; the message says why."""


class ServerStateError(RuntimeError):
    """The operation does not apply to this server or to its current state."""


class PortInUseError(ServerStartError):
    """The server could not bind its port (another process took it first): try another."""
