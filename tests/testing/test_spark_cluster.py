"""The Spark cluster helper's parts that need no Java: reading a driver's task log,
the checks on the tasks, the executors' Python environment, SPARK_HOME.

(The cluster itself runs in tests/spark/test_cluster.py.)
"""

from __future__ import annotations

import os
import sys
from pathlib import Path

import pytest

from replica_client.testing.spark_cluster import (
    TASK_LOGGER,
    TaskLog,
    Tasks,
    parse_task_launches,
    python_env,
    spark_home,
)

# Spark 4.3 writes no space after the host; earlier versions did.
LOG = """\
Adding task set 1.0 with 3 tasks resource profile 0
Starting task 0.0 in stage 1.0 (TID 1) (127.0.0.1, executor 0, partition 0, PROCESS_LOCAL, 9134 bytes)
Starting task 1.0 in stage 1.0 (TID 2) (127.0.0.1,executor 1, partition 1, PROCESS_LOCAL, 1048576 bytes) 
Finished task 0.0 in stage 1.0 (TID 1) in 120 ms on 127.0.0.1 (executor 0) (1/3)
Starting task 2.1 in stage 3.2 (TID 17) (10.0.0.5,executor driver, partition 2, NODE_LOCAL, 52 bytes)
"""  # noqa: E501, W291


def test_every_task_launch_is_read_with_its_executor_and_size() -> None:
    launches = parse_task_launches(LOG)
    assert [(t.stage, t.task, t.tid, t.host, t.executor, t.partition, t.locality, t.size)
            for t in launches] == [
        ("1.0", "0.0", 1, "127.0.0.1", "0", 0, "PROCESS_LOCAL", 9134),
        ("1.0", "1.0", 2, "127.0.0.1", "1", 1, "PROCESS_LOCAL", 1 << 20),
        ("3.2", "2.1", 17, "10.0.0.5", "driver", 2, "NODE_LOCAL", 52),
    ]  # fmt: skip
    tasks = Tasks(tuple(launches))
    assert tasks.per_executor() == {"0": 1, "1": 1, "driver": 1}
    assert tasks.largest == 1 << 20
    assert tasks.summary() == (
        "3 tasks, per executor {'0': 1, '1': 1, 'driver': 1}, bytes min 52 median 9134 "
        "max 1048576"
    )


def test_assert_tasks_under_names_each_task_at_or_over_the_limit() -> None:
    tasks = Tasks(tuple(parse_task_launches(LOG)))
    tasks.assert_tasks_under((1 << 20) + 1)
    with pytest.raises(AssertionError, match=r"^1 of 3 tasks .*stage 1\.0 task 1\.0: 1048576$"):
        tasks.assert_tasks_under(1 << 20)
    with pytest.raises(AssertionError, match="2 of 3 tasks"):
        tasks.assert_tasks_under(9134)
    assert Tasks(()).summary() == "no tasks"


def test_task_log_reads_the_launches_after_a_mark(tmp_path: Path) -> None:
    log = TaskLog(tmp_path / "driver")
    config = log.config.read_text()
    assert f"logger.tasks.name = {TASK_LOGGER}" in config
    assert f"appender.tasks.fileName = {log.path}" in config
    assert log.java_option == f"-Dlog4j2.configurationFile={log.config.as_uri()}"
    assert log.mark() == 0 and len(log.since(0)) == 0  # no file until the driver writes
    first, second = LOG.splitlines(keepends=True)[1:3]
    log.path.write_text(first)
    mark = log.mark()
    with log.path.open("a") as fh:
        fh.write(second)
    assert [t.tid for t in log.since(0).launches] == [1, 2]
    assert [t.tid for t in log.since(mark).launches] == [2]


def test_executors_run_this_interpreter_with_the_project_first() -> None:
    env = python_env(Path("/project"), {"PYTHONPATH": "/elsewhere", "HOME": "/h"})
    assert env["PYSPARK_PYTHON"] == env["PYSPARK_DRIVER_PYTHON"] == sys.executable
    assert env["PYTHONPATH"] == os.pathsep.join(("/project", "/elsewhere"))
    assert env["HOME"] == "/h"
    assert python_env(Path("/project"), env)["PYTHONPATH"] == env["PYTHONPATH"]
    assert python_env(Path("/project"), {})["PYTHONPATH"] == "/project"


def test_spark_home_is_the_pyspark_package_with_spark_class() -> None:
    home = spark_home()
    assert (home / "__init__.py").is_file()
    assert (home / "bin" / "spark-class").is_file()
    assert (home / "jars").is_dir()
