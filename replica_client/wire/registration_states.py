"""The phases of the connection state machine, and the inputs that move it. No I/O.

Phases are data: :data:`TRANSITIONS` maps ``(State, Input)`` to the next state,
the table :class:`~.registration.RegistrationMachine` and
:class:`~.registration.QueryMachine` follow.
"""

from __future__ import annotations

from enum import Enum, auto
from typing import Final

__all__ = [
    "TRANSITIONS",
    "Input",
    "State",
]


class State(Enum):
    """Phases of the replication connection."""

    AWAIT_GREETING = auto()
    TLS_UPGRADE = auto()
    AUTHENTICATING = auto()
    REGISTERING = auto()
    STREAMING = auto()
    ENDED = auto()
    FAILED = auto()
    #: :class:`QueryMachine`: logged in, no statement running.
    READY = auto()
    #: :class:`QueryMachine`: a statement's reply is being read.
    QUERYING = auto()


class Input(Enum):
    """What a received packet (or the driver) means for the state machine."""

    GREETING = auto()
    TLS_DONE = auto()
    AUTH_SWITCH = auto()
    AUTH_MORE_DATA = auto()
    OK = auto()
    ERR = auto()
    RESULT_PART = auto()
    EVENT = auto()
    EOF = auto()


#: (state, input) -> next state. ``REGISTERING + OK`` may also move to
#: ``STREAMING`` when the plan is done; that choice is made by the plan runner.
TRANSITIONS: Final[dict[tuple[State, Input], State]] = {
    (State.AWAIT_GREETING, Input.GREETING): State.AUTHENTICATING,
    (State.AWAIT_GREETING, Input.ERR): State.FAILED,
    (State.TLS_UPGRADE, Input.TLS_DONE): State.AUTHENTICATING,
    (State.AUTHENTICATING, Input.AUTH_SWITCH): State.AUTHENTICATING,
    (State.AUTHENTICATING, Input.AUTH_MORE_DATA): State.AUTHENTICATING,
    (State.AUTHENTICATING, Input.OK): State.REGISTERING,
    (State.AUTHENTICATING, Input.ERR): State.FAILED,
    (State.REGISTERING, Input.OK): State.REGISTERING,
    (State.REGISTERING, Input.RESULT_PART): State.REGISTERING,
    (State.REGISTERING, Input.ERR): State.FAILED,
    (State.STREAMING, Input.EVENT): State.STREAMING,
    (State.STREAMING, Input.EOF): State.ENDED,
    (State.STREAMING, Input.ERR): State.FAILED,
    # QueryMachine: a statement's reply; an ERR answers the statement, the
    # connection stays usable
    (State.QUERYING, Input.RESULT_PART): State.QUERYING,
    (State.QUERYING, Input.OK): State.READY,
    (State.QUERYING, Input.ERR): State.READY,
}
