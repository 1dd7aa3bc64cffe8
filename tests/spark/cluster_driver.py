"""A SparkSession on a standalone cluster, in a driver process of its own.

Why a process of its own: a process has one SparkContext, and the local
``spark`` session of the other Spark tests (session-scoped, conftest.py) may
already run in the pytest process; the driver JVM's log4j2 configuration,
which writes the task log (:class:`replica_client.testing.spark_cluster.TaskLog`),
must also be given when that JVM starts. So the cluster tests keep the pytest
process as it is and drive this child:

- :meth:`ClusterDriver.call` sends ``fn`` (a module-level function, pickled by
  reference) and its arguments; the child runs ``fn(spark, *args)`` and sends
  back the result (pickled: Rows, lists, ...) or the error's traceback;
- the tasks the call launched are read from the cluster's task log
  (:class:`Ran`.tasks): the log is flushed line by line, and a call returns
  only after its jobs ended.

The child's stdin and a copy of its stdout carry the messages (8-byte length,
then a pickle); its stdout and stderr, and the JVM's, go to ``driver.log`` in
the cluster's directory. The child ends when its stdin closes.
"""

from __future__ import annotations

import contextlib
import os
import pickle
import select
import signal
import subprocess
import sys
import time
import traceback
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import IO, Any, Concatenate, Generic, ParamSpec, Self, TypeVar

from replica_client.testing.process import log_tail
from replica_client.testing.spark_cluster import SparkCluster, Tasks

from .conftest import SESSION_CONF

__all__ = ["ClusterDriver", "Ran"]

P = ParamSpec("P")
T = TypeVar("T")

_READY = "ready"


@dataclass(frozen=True, slots=True)
class Ran(Generic[T]):
    """What a call on the cluster returned, and the tasks it launched."""

    value: T
    tasks: Tasks


class ClusterDriver:
    """The driver process of a SparkSession on ``cluster`` (see the module's docstring)."""

    def __init__(self, cluster: SparkCluster, root: Path, *, timeout: float = 240.0) -> None:
        self.cluster = cluster
        self.root = root
        #: The longest a call (or the start) may take.
        self.timeout = timeout
        self._proc: subprocess.Popen[bytes] | None = None
        self._log = cluster.directory / "driver.log"

    def start(self) -> Self:
        """Start the driver process; :meth:`wait_ready` waits for its session."""
        conf = {**SESSION_CONF, **self.cluster.driver_conf(self.root)}
        conf["spark.app.name"] = "replica_client-cluster-tests"
        conf_file = self.cluster.directory / "driver-conf.pickle"
        conf_file.write_bytes(pickle.dumps((conf, self.cluster.workers, self.timeout)))
        with self._log.open("ab") as log:
            self._proc = subprocess.Popen(
                [sys.executable, "-m", "tests.spark.cluster_driver", str(conf_file)],
                cwd=self.root,
                env=self.cluster.driver_env(self.root),
                stdin=subprocess.PIPE,
                stdout=subprocess.PIPE,
                stderr=log,
                start_new_session=True,
            )
        return self

    def wait_ready(self) -> None:
        """Return when the session is up and every executor has registered."""
        kind, value = self._receive()
        if kind != _READY:
            raise RuntimeError(f"the cluster's driver did not start:\n{value}")

    def call(
        self, fn: Callable[Concatenate[Any, P], T], *args: P.args, **kwargs: P.kwargs
    ) -> Ran[T]:
        """``fn(spark, *args, **kwargs)`` in the driver process; its result and tasks.

        The first argument is the driver's SparkSession. An error in the driver is
        raised here as a RuntimeError with the driver's traceback.
        """
        mark = self.cluster.task_log.mark()
        self._send((fn, args, kwargs))
        kind, value = self._receive()
        if kind != "ok":
            raise RuntimeError(f"{getattr(fn, '__name__', fn)} failed in the driver:\n{value}")
        return Ran(value, self.cluster.task_log.since(mark))

    def close(self) -> None:
        """Stop the session (stdin closes), then the whole process group."""
        proc = self._proc
        if proc is None:
            return
        self._proc = None
        if proc.stdin is not None:
            proc.stdin.close()
        with contextlib.suppress(subprocess.TimeoutExpired):
            proc.wait(60)
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.killpg(proc.pid, signal.SIGKILL)  # the JVM, and anything left of the group
        proc.wait()
        if proc.stdout is not None:
            proc.stdout.close()

    def __enter__(self) -> Self:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    # -- messages -------------------------------------------------------------------------

    def _send(self, message: object) -> None:
        proc = self._running()
        assert proc.stdin is not None
        _write(proc.stdin, message)

    def _receive(self) -> tuple[str, Any]:
        proc = self._running()
        assert proc.stdout is not None
        fd = proc.stdout.fileno()
        deadline = time.monotonic() + self.timeout

        def read(n: int) -> bytes:
            data = b""
            while len(data) < n:
                left = deadline - time.monotonic()
                if left <= 0 or not select.select([fd], [], [], left)[0]:
                    raise TimeoutError(
                        f"no answer from the cluster's driver in {self.timeout:.0f} s:\n"
                        f"{log_tail(self._log)}"
                    )
                chunk = os.read(fd, n - len(data))
                if not chunk:
                    raise RuntimeError(
                        f"the cluster's driver exited ({proc.poll()}):\n{log_tail(self._log)}"
                    )
                data += chunk
            return data

        size = int.from_bytes(read(8), "big")
        kind, value = pickle.loads(read(size))
        if kind == "ok":  # the result, pickled on its own so that it cannot fail the reply
            value = pickle.loads(value)
        return str(kind), value

    def _running(self) -> subprocess.Popen[bytes]:
        if self._proc is None:
            raise RuntimeError("the cluster's driver is not running")
        return self._proc


def _write(out: IO[bytes], message: object) -> None:
    data = pickle.dumps(message)
    out.write(len(data).to_bytes(8, "big") + data)
    out.flush()


def _read(inp: IO[bytes]) -> Any:
    head = inp.read(8)
    if len(head) < 8:
        return None
    return pickle.loads(inp.read(int.from_bytes(head, "big")))


# -- the driver process ---------------------------------------------------------------------


def _executors(spark: Any) -> int:
    """How many executors have registered (the driver's block manager is not one)."""
    return int(spark.sparkContext._jsc.sc().getExecutorMemoryStatus().size()) - 1


def main(conf_file: str) -> None:
    """Build the session, wait for the executors, then serve calls until stdin closes."""
    out = os.fdopen(os.dup(1), "wb")
    os.dup2(2, 1)  # print() and the JVM's stdout go to the log, not into the messages
    inp = sys.stdin.buffer
    try:
        from pyspark.sql import SparkSession

        from replica_client.spark import register

        conf, executors, timeout = pickle.loads(Path(conf_file).read_bytes())
        started = time.monotonic()
        spark = SparkSession.builder.config(map=conf).getOrCreate()
        register(spark)
        deadline = started + timeout
        while _executors(spark) < executors:
            if time.monotonic() > deadline:
                raise TimeoutError(f"{_executors(spark)} of {executors} executors registered")
            time.sleep(0.1)
        print(f"{executors} executors in {time.monotonic() - started:.1f} s", file=sys.stderr)
    except BaseException:
        _write(out, ("error", traceback.format_exc()))
        raise
    _write(out, (_READY, None))
    while True:
        try:
            message = _read(inp)
            if message is None:
                break
            fn, args, kwargs = message
            reply: tuple[str, object] = ("ok", pickle.dumps(fn(spark, *args, **kwargs)))
        except Exception:
            reply = ("error", traceback.format_exc())
        _write(out, reply)
    spark.stop()


if __name__ == "__main__":
    main(sys.argv[1])
