"""A Spark Connect server on loopback, from the installed pyspark.

:class:`SparkConnectServer` runs ``org.apache.spark.sql.connect.service.SparkConnectServer``
(the class ``sbin/start-connect-server.sh`` submits) with ``bin/spark-submit``
of the pyspark package directory (its ``SPARK_HOME``; the server's jar,
``jars/spark-connect_*.jar``, ships with pyspark): a ``local[N]`` driver whose
gRPC service listens on 127.0.0.1 only, on a free port of its own, with no UI
and its scratch and log files in a temporary directory. The server's Python
workers (a Python data source's readers, UDFs) run this interpreter with the
project leading ``PYTHONPATH`` (:func:`~.spark_cluster.python_env`). ``start``
returns once the port accepts connections; ``stop`` ends the server's whole
process group (the JVM and its Python workers) and removes the directory, and
so does a start that fails.

A client connects with ``SparkSession.builder.remote(server.url).getOrCreate()``.
Do that in a process with no classic SparkContext: pyspark refuses a Connect
session beside an active classic one (``SESSION_ALREADY_EXIST``), and creating
one sets ``SPARK_CONNECT_MODE_ENABLED`` in ``os.environ``, after which every
pyspark call of the process takes the Connect path.

No pyspark import: the package directory is only located.
"""

from __future__ import annotations

import shutil
import socket
from collections.abc import Mapping
from pathlib import Path
from types import TracebackType
from typing import Self

from .process import ServerProcess, free_port, owned_temp_dir
from .spark_cluster import QUICK_JVM, python_env, spark_home

__all__ = ["SERVER_CLASS", "TEMP_PREFIX", "SparkConnectServer"]

#: Prefix of the server's temporary directory.
TEMP_PREFIX = "replica-client-spark-connect-"
#: The main class of a Spark Connect server.
SERVER_CLASS = "org.apache.spark.sql.connect.service.SparkConnectServer"

_LOOPBACK = "127.0.0.1"


class SparkConnectServer:
    """A Spark Connect server on 127.0.0.1 whose Python workers import the project at
    ``root``.

    ``conf`` adds Spark settings (``spark.sql.session.timeZone``, ...) to the
    server's, which start the JVM quickly (C1 only, serial GC) and log warnings and
    errors only; ``master`` is its driver's (``local[2]``). Use as a context manager
    (or :meth:`start` and :meth:`stop`).
    """

    def __init__(
        self,
        root: Path,
        *,
        conf: Mapping[str, str] | None = None,
        master: str = "local[2]",
        timeout: float = 120.0,
    ) -> None:
        self.root = root
        self.conf = dict(conf or {})
        self.master = master
        self.timeout = timeout
        self.home = spark_home()
        self.port = 0
        self._dir: Path | None = None
        self._process = ServerProcess("spark connect server")

    @property
    def url(self) -> str:
        """The address a client connects to: ``sc://127.0.0.1:<port>``."""
        return f"sc://{_LOOPBACK}:{self.port}"

    @property
    def directory(self) -> Path:
        """The server's temporary directory (its console log, scratch space)."""
        if self._dir is None:
            raise RuntimeError("the Spark Connect server is not started")
        return self._dir

    @property
    def log(self) -> Path:
        """The server's stdout and stderr (Spark's log)."""
        return self.directory / "server.log"

    def command(self) -> list[str]:
        """The ``spark-submit`` command line of the server."""
        conf = {
            # quick to start and warm for test-sized queries; warnings and errors only
            "spark.driver.extraJavaOptions": QUICK_JVM,
            "spark.log.level": "WARN",
            **self.conf,
            "spark.connect.grpc.binding.address": _LOOPBACK,
            "spark.connect.grpc.binding.port": str(self.port),
            # a taken port fails the start instead of moving to the next one unseen
            "spark.port.maxRetries": "0",
            "spark.ui.enabled": "false",
            "spark.local.dir": str(self.directory / "local"),
        }
        settings = [arg for key, value in conf.items() for arg in ("--conf", f"{key}={value}")]
        return [
            str(self.home / "bin" / "spark-submit"),
            "--class", SERVER_CLASS,
            "--name", "Spark Connect server",
            "--master", self.master,
            *settings,
        ]  # fmt: skip

    def env(self) -> dict[str, str]:
        """The server's environment: this one, Spark's home, loopback, and Python
        workers that run this interpreter with the project importable."""
        return {
            **python_env(self.root),
            "SPARK_HOME": str(self.home),
            "SPARK_LOCAL_IP": _LOOPBACK,
            "SPARK_LOG_DIR": str(self.directory / "logs"),
            "SPARK_LAUNCHER_OPTS": QUICK_JVM,
        }

    def start(self) -> Self:
        """Start the server; return once its port accepts connections (ServerStartError
        with the log's tail, the server stopped, when it exits or is not up in time)."""
        if self._dir is not None:
            raise RuntimeError("the Spark Connect server is already started")
        self._dir = owned_temp_dir(TEMP_PREFIX)
        try:
            self.port = free_port()
            self._process.launch(self.command(), self.log, self.env())
            self._process.wait_ready(
                self._listening,
                timeout=self.timeout,
                context=f"({self.url})",
                error_log=self.log,
                log_offset=0,
                console=self.log,
            )
        except BaseException:
            self.stop()
            raise
        return self

    def stop(self) -> None:
        """Stop the server's process group; remove its directory."""
        self._process.stop(timeout=20, group=True)
        if self._dir is not None:
            shutil.rmtree(self._dir, ignore_errors=True)
            self._dir = None

    def __enter__(self) -> Self:
        return self.start()

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.stop()

    def _listening(self) -> bool:
        try:
            with socket.create_connection((_LOOPBACK, self.port), timeout=1):
                return True
        except OSError:
            return False
