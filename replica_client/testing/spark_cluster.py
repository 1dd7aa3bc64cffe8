"""A Spark standalone cluster on loopback, and the sizes of the tasks a driver sent it.

``local[N]`` runs tasks in the driver's JVM: nothing is serialized and sent over
RPC, so a task that carries too much (``spark.rpc.message.maxSize`` is 128 MiB,
Spark warns from 1000 KiB on) only shows on a cluster. :class:`SparkCluster`
starts one from the installed pyspark: a master and ``workers`` workers of
``cores`` cores each, run with ``bin/spark-class`` of the pyspark package
directory (its ``SPARK_HOME``), bound to 127.0.0.1 on free ports of its own,
with its configuration, work and log directories in a temporary directory. It
waits until every worker has registered with the master (the master's JSON
status), and stops every process it started, each in its own process group,
also when starting fails.

A driver connects with the configuration :meth:`SparkCluster.driver_conf`
gives, before its JVM starts (a SparkSession's builder, in a process that has
no SparkContext yet): the master's URL, executors that run this interpreter
with the project on ``PYTHONPATH``, and a log4j2 configuration that writes
every task launch of ``TaskSetManager`` to :attr:`SparkCluster.task_log`.
:meth:`TaskLog.since` parses those lines into :class:`Tasks`: each task's
executor and serialized size, as Spark logs it::

    Starting task 0.0 in stage 1.0 (TID 1) (127.0.0.1, executor 0, partition 0,
    PROCESS_LOCAL, 9134 bytes)

(Neither Spark's listener events nor its REST API carry that size: the
driver's log line is where it is stated. The driver's process also needs
:meth:`SparkCluster.driver_env`.)

No pyspark import: the package directory is only located.
"""

from __future__ import annotations

import importlib.util
import json
import os
import re
import shutil
import sys
import urllib.request
from collections import Counter
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path
from types import TracebackType
from typing import Any, Self

from .errors import ServerStartError
from .process import ServerProcess, free_port, log_tail, owned_temp_dir, sweep_stale_dirs

__all__ = [
    "QUICK_JVM",
    "TEMP_PREFIX",
    "SparkCluster",
    "TaskLaunch",
    "TaskLog",
    "Tasks",
    "parse_task_launches",
    "python_env",
    "spark_home",
]

#: Prefix of the cluster's temporary directory.
TEMP_PREFIX = "replica-client-spark-cluster-"
#: The logger that states each task's serialized size when it launches the task.
TASK_LOGGER = "org.apache.spark.scheduler.TaskSetManager"

#: JVM options of short-lived test JVMs (daemons, drivers, executors): a serial
#: collector and the first compiler tier only, which start the JVMs faster.
QUICK_JVM = "-XX:+UseSerialGC -XX:TieredStopAtLevel=1"

_LOOPBACK = "127.0.0.1"
#: Loopback requests never go through an HTTP proxy the environment names.
_DIRECT = urllib.request.build_opener(urllib.request.ProxyHandler({}))
_LAUNCH = re.compile(
    r"Starting task (?P<task>\S+) in stage (?P<stage>\S+) \(TID (?P<tid>\d+)\) "
    r"\((?P<host>[^,]+),\s*executor (?P<executor>[^,]+),\s*partition (?P<partition>\d+),\s*"
    r"(?P<locality>\w+),\s*(?P<size>\d+) bytes\)"
)
#: The master's and the workers' own log: warnings and errors to their console file.
_DAEMON_LOG4J = """\
rootLogger.level = warn
rootLogger.appenderRef.console.ref = console
appender.console.type = Console
appender.console.name = console
appender.console.target = SYSTEM_ERR
appender.console.layout.type = PatternLayout
appender.console.layout.pattern = %d{HH:mm:ss.SSS} %p %c{1}: %m%n%ex
"""


def spark_home() -> Path:
    """The installed pyspark package's directory: a ``SPARK_HOME`` with ``bin/`` and ``jars/``."""
    spec = importlib.util.find_spec("pyspark")
    if spec is None or not spec.submodule_search_locations:
        raise ServerStartError("pyspark is not installed (pip install 'replica-client[spark]')")
    return Path(next(iter(spec.submodule_search_locations)))


def python_env(root: Path, base: Mapping[str, str] | None = None) -> dict[str, str]:
    """The environment in which Spark's Python workers run this interpreter and import
    the project at ``root``: ``PYSPARK_PYTHON`` and ``PYSPARK_DRIVER_PYTHON`` are
    ``sys.executable``, and ``root`` leads ``PYTHONPATH`` (``base``'s, default
    ``os.environ``'s), so that Spark's lookup of ``pyspark_*`` modules finds the
    top-level registration module even under an editable install."""
    env = dict(os.environ if base is None else base)
    env["PYSPARK_PYTHON"] = sys.executable
    env["PYSPARK_DRIVER_PYTHON"] = sys.executable
    path = env.get("PYTHONPATH", "")
    if str(root) not in path.split(os.pathsep):
        env["PYTHONPATH"] = os.pathsep.join(p for p in (str(root), path) if p)
    return env


@dataclass(frozen=True, slots=True)
class TaskLaunch:
    """One task the driver sent to an executor, as ``TaskSetManager`` logged it."""

    stage: str
    task: str
    tid: int
    host: str
    executor: str
    partition: int
    locality: str
    #: The serialized task, in bytes: what goes over RPC to the executor.
    size: int


def parse_task_launches(text: str) -> list[TaskLaunch]:
    """Every ``Starting task ...`` line of a driver's log, in order."""
    return [
        TaskLaunch(
            stage=m["stage"],
            task=m["task"],
            tid=int(m["tid"]),
            host=m["host"],
            executor=m["executor"],
            partition=int(m["partition"]),
            locality=m["locality"],
            size=int(m["size"]),
        )
        for m in _LAUNCH.finditer(text)
    ]


@dataclass(frozen=True, slots=True)
class Tasks:
    """The tasks a driver launched over some span of its work."""

    launches: tuple[TaskLaunch, ...]

    def __len__(self) -> int:
        return len(self.launches)

    @property
    def sizes(self) -> list[int]:
        return [t.size for t in self.launches]

    @property
    def largest(self) -> int:
        """The largest serialized task in bytes; 0 without tasks."""
        return max(self.sizes, default=0)

    def per_executor(self) -> dict[str, int]:
        """How many tasks each executor was given, by executor id."""
        return dict(sorted(Counter(t.executor for t in self.launches).items()))

    def assert_tasks_under(self, limit_bytes: int) -> None:
        """AssertionError naming every task whose serialized size is ``limit_bytes`` or more."""
        over = [t for t in self.launches if t.size >= limit_bytes]
        if over:
            named = ", ".join(f"stage {t.stage} task {t.task}: {t.size}" for t in over[:20])
            raise AssertionError(
                f"{len(over)} of {len(self)} tasks of {limit_bytes} bytes or more: {named}"
            )

    def summary(self) -> str:
        """``N tasks, per executor {...}, bytes min/median/max``, for a test's output."""
        if not self.launches:
            return "no tasks"
        sizes = sorted(self.sizes)
        return (
            f"{len(sizes)} tasks, per executor {self.per_executor()}, "
            f"bytes min {sizes[0]} median {sizes[len(sizes) // 2]} max {sizes[-1]}"
        )


class TaskLog:
    """A driver's log of the tasks it launched: a log4j2 configuration that writes the
    INFO lines of ``TaskSetManager`` to :attr:`path` (warnings and errors of every
    logger go to the console), for a driver JVM started with :attr:`java_option`."""

    def __init__(self, directory: Path) -> None:
        directory.mkdir(parents=True, exist_ok=True)
        #: The file the task launches are written to.
        self.path = directory / "driver-tasks.log"
        #: The driver's log4j2 configuration.
        self.config = directory / "driver-log4j2.properties"
        self.config.write_text(
            _DAEMON_LOG4J
            + "rootLogger.appenderRef.console.level = warn\n"
            + "appender.tasks.type = File\n"
            + "appender.tasks.name = tasks\n"
            + f"appender.tasks.fileName = {self.path}\n"
            + "appender.tasks.immediateFlush = true\n"
            + "appender.tasks.layout.type = PatternLayout\n"
            + "appender.tasks.layout.pattern = %m%n\n"
            + f"logger.tasks.name = {TASK_LOGGER}\n"
            + "logger.tasks.level = info\n"
            + "logger.tasks.appenderRef.tasks.ref = tasks\n"
        )

    @property
    def java_option(self) -> str:
        """The JVM option that makes a driver use this configuration."""
        return f"-Dlog4j2.configurationFile={self.config.as_uri()}"

    def mark(self) -> int:
        """Where the log ends now: :meth:`since` that mark gives the tasks launched after it."""
        try:
            return self.path.stat().st_size
        except FileNotFoundError:
            return 0

    def since(self, mark: int = 0) -> Tasks:
        """The tasks launched since ``mark`` (the log4j2 appender flushes every line)."""
        try:
            with self.path.open("rb") as fh:
                fh.seek(mark)
                text = fh.read().decode("utf-8", "replace")
        except FileNotFoundError:
            text = ""
        return Tasks(tuple(parse_task_launches(text)))


class SparkCluster:
    """A Spark standalone master and workers on 127.0.0.1, from the installed pyspark.

    Use as a context manager (or :meth:`start` and :meth:`stop`); ``start`` returns
    once every worker is registered and alive. ``memory`` is each worker's memory
    for executors; executors get ``cores`` cores each, one executor per worker.
    """

    def __init__(
        self,
        *,
        workers: int = 2,
        cores: int = 1,
        memory: str = "1g",
        executor_memory: str = "512m",
        timeout: float = 120.0,
    ) -> None:
        self.workers = workers
        self.cores = cores
        self.memory = memory
        self.executor_memory = executor_memory
        self.timeout = timeout
        self.home = spark_home()
        self._dir: Path | None = None
        self._master = ServerProcess("spark master")
        self._workers: list[ServerProcess] = []
        self._port = 0
        self._web_port = 0
        self._task_log: TaskLog | None = None

    # -- what a driver needs ------------------------------------------------------------

    @property
    def master_url(self) -> str:
        return f"spark://{_LOOPBACK}:{self._port}"

    @property
    def web_url(self) -> str:
        """The master's web UI; its status as JSON is at ``/json/``."""
        return f"http://{_LOOPBACK}:{self._web_port}"

    @property
    def directory(self) -> Path:
        """The cluster's temporary directory (configuration, logs, work directories)."""
        if self._dir is None:
            raise RuntimeError("the cluster is not started")
        return self._dir

    @property
    def task_log(self) -> TaskLog:
        """The task log of the driver started with :meth:`driver_conf`."""
        if self._task_log is None:
            raise RuntimeError("the cluster is not started")
        return self._task_log

    def driver_conf(self, root: Path) -> dict[str, str]:
        """SparkSession configuration of a driver on this cluster (client mode).

        Executors run ``sys.executable`` with ``root`` (the project) leading their
        ``PYTHONPATH``; the SparkContext's start waits (up to ``timeout``) until every
        worker's executor has registered, so that the first job's tasks spread over
        all of them. The driver's process needs the environment :meth:`driver_env`
        gives too.
        """
        return {
            "spark.master": self.master_url,
            "spark.driver.host": _LOOPBACK,
            "spark.driver.bindAddress": _LOOPBACK,
            "spark.driver.extraJavaOptions": f"{self.task_log.java_option} {QUICK_JVM}",
            "spark.executor.extraJavaOptions": QUICK_JVM,
            "spark.executor.cores": str(self.cores),
            "spark.executor.memory": self.executor_memory,
            "spark.cores.max": str(self.cores * self.workers),
            "spark.scheduler.minRegisteredResourcesRatio": "1.0",
            "spark.scheduler.maxRegisteredResourcesWaitingTime": f"{int(self.timeout)}s",
            "spark.executorEnv.PYTHONPATH": python_env(root)["PYTHONPATH"],
            "spark.pyspark.python": sys.executable,
            "spark.ui.enabled": "false",
        }

    def driver_env(self, root: Path) -> dict[str, str]:
        """The environment of the driver's process (its JVM is started from it)."""
        return {**python_env(root), **self._spark_env()}

    def status(self) -> dict[str, Any]:
        """The master's status (``/json/``): its workers, their state, the applications."""
        with _DIRECT.open(f"{self.web_url}/json/", timeout=5) as response:
            status: dict[str, Any] = json.load(response)
        return status

    # -- lifecycle ------------------------------------------------------------------------

    def start(self, *, wait: bool = True) -> Self:
        """Start the master, wait for it, then start the workers.

        With ``wait`` (the default) return when every worker is alive; without,
        right after the workers are started: :meth:`wait_for_workers` waits, and a
        driver may start meanwhile (the first job waits for the executors anyway).
        """
        if self._dir is not None:
            raise RuntimeError("the cluster is already started")
        sweep_stale_dirs((TEMP_PREFIX,))  # of clusters whose owner was killed
        self._dir = owned_temp_dir(TEMP_PREFIX)
        try:
            (self._dir / "conf").mkdir()
            (self._dir / "conf" / "log4j2.properties").write_text(_DAEMON_LOG4J)
            self._task_log = TaskLog(self._dir / "driver")
            self._port, self._web_port = free_port(), free_port()
            self._launch(
                self._master,
                "master",
                "org.apache.spark.deploy.master.Master",
                ["--host", _LOOPBACK, "--port", str(self._port)],
                self._web_port,
            )
            self._wait("master", lambda status: True)
            for n in range(self.workers):
                worker = ServerProcess(f"spark worker {n}")
                self._workers.append(worker)
                work = self._dir / f"worker-{n}"
                work.mkdir()
                self._launch(
                    worker,
                    f"worker-{n}",
                    "org.apache.spark.deploy.worker.Worker",
                    ["--cores", str(self.cores), "--memory", self.memory, "--host", _LOOPBACK,
                     "--work-dir", str(work), self.master_url],
                    free_port(),
                )  # fmt: skip
            if wait:
                self.wait_for_workers()
        except BaseException:
            self.stop()
            raise
        return self

    def wait_for_workers(self) -> None:
        """Return when every worker is registered and alive; ServerStartError (and the
        cluster stopped) when one exits or they are not there in time."""
        try:
            self._wait("workers", self._all_workers_alive)
        except BaseException:
            self.stop()
            raise

    def stop(self) -> None:
        """Stop the workers (and their executors), then the master; remove the directory."""
        for process in (*self._workers, self._master):
            process.stop(timeout=10, group=True)
        self._workers.clear()
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

    # -- internals --------------------------------------------------------------------------

    def _spark_env(self) -> dict[str, str]:
        conf = self.directory / "conf"
        return {
            "SPARK_HOME": str(self.home),
            "SPARK_CONF_DIR": str(conf),
            "SPARK_LOCAL_IP": _LOOPBACK,  # web UIs bind here too, not on every address
            "SPARK_LOCAL_DIRS": str(self.directory / "local"),
            "SPARK_LOG_DIR": str(self.directory / "logs"),
            "SPARK_PID_DIR": str(self.directory),
            "SPARK_DAEMON_MEMORY": "256m",
            # a taken port fails the start instead of moving to the next one unseen;
            # no REST submission server (its fixed port 6066 would be shared by two
            # clusters at once); the daemons and spark-class's launcher start faster
            # on C1 and a serial GC
            "SPARK_DAEMON_JAVA_OPTS": (
                f"-Dspark.port.maxRetries=0 -Dspark.master.rest.enabled=false {QUICK_JVM}"
            ),
            "SPARK_LAUNCHER_OPTS": QUICK_JVM,
        }

    def _launch(
        self, process: ServerProcess, name: str, main: str, args: list[str], web_port: int
    ) -> None:
        cmd = [str(self.home / "bin" / "spark-class"), main, *args, "--webui-port", str(web_port)]
        process.launch(cmd, self.directory / f"{name}.log", {**os.environ, **self._spark_env()})

    def _all_workers_alive(self, status: dict[str, Any]) -> bool:
        alive = [w for w in status.get("workers", ()) if w.get("state") == "ALIVE"]
        return len(alive) >= self.workers

    def _wait(self, what: str, ready: Callable[[dict[str, Any]], bool]) -> None:
        """Until ``ready(status)``; ServerStartError with the logs when a process exits."""

        def probe() -> bool:
            for worker in self._workers:
                if not worker.running:
                    raise ServerStartError(f"{worker.name} exited:\n{self._logs()}")
            try:
                return ready(self.status())
            except (OSError, ValueError):  # not listening yet (URLError is an OSError)
                return False

        console = self.directory / "master.log"
        self._master.wait_ready(
            probe,
            timeout=self.timeout,
            context=f"({what}, {self.master_url})",
            error_log=console,
            log_offset=0,
            console=console,
        )

    def _logs(self) -> str:
        return "\n".join(
            f"-- {path.name}:\n{log_tail(path)}" for path in sorted(self.directory.glob("*.log"))
        )
