"""How a :class:`~replica_client.aio.stream.BinlogStream` reaches its primary and stays connected.

Driver layer. :class:`ConnectionKeeper`, a base class of ``BinlogStream``,
holds the stream's connection methods:

* ``_prepare_schema``: the table definitions at the start and, for a start at
  "now", the exact point they were read at (an ordinary connection, before
  the first dump);
* ``_open``: log in, register and start the dump from the start or from the
  resume point (a new :class:`~replica_client.session.ReplicaSession` and
  :class:`~replica_client.aio.protocol.ReplicaProtocol` each time);
* ``_reconnect``: after a lost or stalled connection, open again with the
  reconnect policy's backoff, or fail over once its attempts are used up;
* ``_fail_over``: move to the next host (``hosts``) that is a writable primary
  holding every delivered transaction, resuming by GTID.

The state they use is ``BinlogStream``'s (set in its ``__init__``); the
attributes are declared here for the type checker.
"""

from __future__ import annotations

import asyncio
import dataclasses
import logging
from typing import TYPE_CHECKING

from ..delivery import AckPolicy
from ..errors import (
    BinlogPositionError,
    ConnectionLostError,
    LostTransactionsError,
    ReplicaError,
    ReplicaTimeoutError,
)
from ..position import FilePos, Gtid, MysqlGtidSet
from ..schema import SchemaHistory, SchemaTracker
from ..session import Delivery, ReplicaSession, ResumePoint
from .config import ReplicaConfig
from .metrics import StreamMetrics
from .protocol import ReplicaProtocol

__all__ = ["ConnectionKeeper"]

_log = logging.getLogger("replica_client.aio")


class ConnectionKeeper:
    """The connection part of :class:`~replica_client.aio.stream.BinlogStream`: where the
    dump starts, opening it, reconnecting and failing over."""

    _config: ReplicaConfig
    #: The config of the primary streamed from now (one of ``config.hosts``).
    _target: ReplicaConfig
    _protocol: ReplicaProtocol | None
    _session: ReplicaSession | None
    #: What the consumer was handed: the resume point.
    _delivery: Delivery
    #: The primary's global binlog_format, when it was read (for error messages).
    _binlog_format: str | None
    #: When semi-sync ACKs go out.
    _acks: AckPolicy
    _closed: bool
    reconnects: int
    metrics: StreamMetrics

    if TYPE_CHECKING:  # BinlogStream's

        @property
        def position(self) -> FilePos | None: ...

        @property
        def gtid_state(self) -> Gtid | MysqlGtidSet: ...

        def _on_arrival(self) -> None: ...

    async def _prepare_schema(self) -> None:
        """The table definitions at the start (``schema_history="auto"``/``"scan"``),
        read from the primary over an ordinary connection; a start at "now" becomes
        the exact point they were read at."""
        from ..control.queries import prepare_history
        from .control import ask

        config = self._config
        option = config.schema_history
        if not isinstance(option, str) or option == "off" or self._delivery.schema is not None:
            return
        start = config.start
        prepared = await ask(
            self._target,
            prepare_history(
                config.decoder.tables or None,
                start,
                scan="always" if option == "scan" else "auto",
            ),
        )
        self._binlog_format = prepared.facts.binlog_format or None
        if start == "now":
            point = prepared.point
            exact: FilePos | Gtid | MysqlGtidSet | None = point.gtid or point.position
            if exact is not None:
                start = exact
                self._config = dataclasses.replace(config, start=start)
                self._target = dataclasses.replace(self._target, start=start)
        self._delivery = Delivery(
            None if isinstance(start, str) else start, schema=prepared.history
        )

    async def _open(self, *, resume: bool, by_gtid: bool = False) -> None:
        cfg = self._target
        loop = asyncio.get_running_loop()
        if resume:
            point = self._delivery.resume_point(by_gtid=by_gtid)
        else:
            point = ResumePoint(None if cfg.start == "earliest" else cfg.start, Gtid(""))
        settings = cfg.registration_settings(point.start)
        schema = self._delivery.schema if not resume else point.schema
        definitions = (
            SchemaTracker(schema, unproven=cfg.unproven)
            if isinstance(schema, SchemaHistory)
            else None
        )
        session = ReplicaSession(
            settings,
            decoder_options=cfg.decoder,
            event_types=cfg.event_types,
            gtid_state=point.gtid_state if resume else self._delivery.gtid_state,
            resume_skip=point.skip,
            resume_gtid=point.group,
            ack_on_receipt=cfg.ack_mode == "receipt",
            definitions=definitions,
        )
        ctx = cfg.ssl_context()
        protocol = ReplicaProtocol(
            session,
            address=cfg.address,
            ssl_context=ctx,
            server_hostname=cfg.host if ctx is not None and ctx.check_hostname else None,
            high_events=cfg.max_buffered_events,
            high_bytes=cfg.max_buffered_bytes,
            stall_timeout=2 * cfg.heartbeat_period if cfg.heartbeat_period > 0 else None,
            eager=cfg.ack_mode == "receipt",
        )
        try:
            async with asyncio.timeout(cfg.connect_timeout):
                if cfg.unix_socket:
                    await loop.create_unix_connection(lambda: protocol, cfg.unix_socket)
                else:
                    await loop.create_connection(lambda: protocol, cfg.host, cfg.port)
                await protocol.registered
        except TimeoutError as exc:
            protocol.close()
            raise ReplicaTimeoutError(
                f"connecting to the primary at {cfg.address} took longer than "
                f"{cfg.connect_timeout} s"
            ) from exc
        except OSError as exc:
            protocol.close()
            raise ConnectionLostError(
                f"cannot connect to the primary at {cfg.address}: {exc}"
            ) from exc
        except BaseException:
            protocol.close()
            raise
        self._protocol = protocol
        self._session = session
        self._acks.connected(session.semi_sync)
        protocol.on_arrival = self._on_arrival if self._acks.early else None
        self._delivery.connected(session.machine.start)
        _log.debug("streaming from %s (%s)", cfg.address, session.machine.start)

    async def _reconnect(self, cause: BaseException) -> None:
        policy = self._config.reconnect
        address = self._target.address
        _log.info("connection to %s lost (%s); reconnecting", address, cause)
        if self._protocol is not None:
            self._protocol.close()
        self._acks.connected(False)  # ACKs cannot go to a closed connection
        attempt = 0
        while True:
            await asyncio.sleep(policy.delay(attempt))
            if self._closed:
                raise StopAsyncIteration
            try:
                await self._open(resume=True)
            except (ConnectionLostError, ReplicaTimeoutError) as exc:
                attempt += 1
                _log.info("reconnect attempt %d to %s failed: %s", attempt, address, exc)
                if policy.max_attempts is not None and attempt >= policy.max_attempts:
                    if len(self._config.addresses) > 1:
                        await self._fail_over(cause)
                        return
                    raise ConnectionLostError(
                        f"gave up reconnecting to {address} after {attempt} "
                        f"attempts; resume from position {self.position} / GTID "
                        f"{self.gtid_state or '-'}"
                    ) from cause
                continue
            self.reconnects += 1
            self.metrics.reconnects = self.reconnects
            _log.info(
                "reconnected to %s at %s (skipping %d events already delivered)",
                address,
                self.position,
                self._delivery.since_checkpoint,
            )
            return

    async def _fail_over(self, cause: BaseException) -> None:
        """Move to the next host that is a writable primary holding every delivered transaction.

        Raises:
            LostTransactionsError: a writable primary lacks transactions already
                delivered (it never takes over).
            FailoverError: no host could take over.
        """
        from ..control.primary import FailoverChoice, primary_state
        from .control import ask

        lost = self._target.address
        choice = FailoverChoice(
            self._config.addresses,
            lost,
            lambda state: self._delivery.missing_on(state.gtid_state, state.binlog_state),
            cause,
        )
        for address in choice.candidates:
            target = self._config.for_address(address)
            try:
                state = await ask(target, primary_state())
            except ReplicaError as exc:
                choice.passed_over(address, exc)
                continue
            if not choice.accepts(address, state):
                continue
            previous, self._target = self._target, target
            try:
                await self._open(resume=True, by_gtid=True)
            except (ConnectionLostError, ReplicaTimeoutError) as exc:
                self._target = previous
                choice.passed_over(address, exc)
                continue
            except BinlogPositionError as exc:
                # The primary refused the GTID state: it does not have it.
                self._target = previous
                raise LostTransactionsError(
                    address, (str(self.gtid_state),), f" (the primary says: {exc.message})"
                ) from exc
            self.metrics.failovers += 1
            _log.warning(
                "primary %s lost; streaming from %s by GTID %s (skipping %d events)",
                lost,
                address,
                self.gtid_state,
                self._delivery.since_checkpoint,
            )
            return
        raise choice.error() from cause
