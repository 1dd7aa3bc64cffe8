"""Process lifecycle for private servers: start, wait, stop, kill, and cleaning up after them.

Contract:

- :class:`ServerProcess` runs one server in its own process group. On Linux the
  server gets SIGTERM when the thread that started it (the main thread) dies,
  so a test process killed hard leaves no server behind.
  :meth:`ServerProcess.wait_ready` polls a probe until the server answers and
  raises :class:`ServerStartError` with the tail of the server's error log when
  it exits or does not answer in time (:class:`PortInUseError` when its port
  was taken); ``stop()`` is SIGTERM then SIGKILL after a timeout, ``kill()``
  SIGKILLs the whole process group. Both reap the process.
- :func:`owned_temp_dir` makes temporary directories that record their owner's
  pid; :func:`sweep_stale_dirs` removes those whose owner is gone (a harness
  process that was killed).
- :func:`run_checked` runs a one-shot tool (bootstrap, initialize) and raises
  :class:`ServerStartError` with its output when it fails.
- :func:`free_port` is a free loopback TCP port; :func:`log_tail` the last lines
  of a log from an offset.
"""

from __future__ import annotations

import contextlib
import ctypes
import os
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any

from .errors import PortInUseError, ServerStartError

__all__ = [
    "ServerProcess",
    "free_port",
    "log_tail",
    "owned_temp_dir",
    "pid_alive",
    "run_checked",
    "sweep_stale_dirs",
]

_LOG_TAIL_LINES = 40
_PORT_IN_USE = ("Address already in use", "Bind on TCP/IP port", "Do you already have another")
_OWNER_FILE = "owner.pid"


def free_port() -> int:
    """A TCP port on 127.0.0.1 that was free a moment ago."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def log_tail(path: Path, offset: int = 0, lines: int = _LOG_TAIL_LINES) -> str:
    """The last ``lines`` lines of ``path`` from byte ``offset`` on; ``""`` if unreadable."""
    try:
        with path.open("rb") as fh:
            fh.seek(offset)
            data = fh.read()
    except OSError:
        return ""
    return "\n".join(data.decode("utf-8", "replace").splitlines()[-lines:])


def run_checked(
    cmd: Sequence[str], what: str, *, stdin_text: str | None = None, timeout: float = 300
) -> None:
    """Run ``cmd`` to completion; ServerStartError with its output's tail if it fails."""
    try:
        proc = subprocess.run(
            list(cmd),
            input=stdin_text,
            stdin=None if stdin_text is not None else subprocess.DEVNULL,
            capture_output=True,
            text=True,
            check=False,
            timeout=timeout,
        )
    except (OSError, subprocess.TimeoutExpired) as exc:
        raise ServerStartError(f"{what} did not run: {' '.join(cmd)}: {exc}") from exc
    if proc.returncode != 0:
        output = "\n".join((proc.stdout + proc.stderr).splitlines()[-_LOG_TAIL_LINES:])
        raise ServerStartError(
            f"{what} failed with exit code {proc.returncode}: {' '.join(cmd)}\n{output}"
        )


# -- parent-death signal: the server goes away with the process that started it -------

_PR_SET_PDEATHSIG = 1


def _set_parent_death_signal() -> None:  # runs in the child between fork and exec
    libc = ctypes.CDLL(None, use_errno=True)
    libc.prctl(_PR_SET_PDEATHSIG, int(signal.SIGTERM), 0, 0, 0)


def _preexec() -> Any:
    # The signal fires when the *thread* that forked exits, so only tie the server
    # to the main thread, which lives as long as the process.
    if sys.platform.startswith("linux") and threading.current_thread() is threading.main_thread():
        return _set_parent_death_signal
    return None


class ServerProcess:
    """One server process, in its own process group, tied to the life of its starter."""

    def __init__(self, name: str) -> None:
        #: The daemon's name in messages (``mariadbd``, ``mysqld``).
        self.name = name
        self._proc: subprocess.Popen[bytes] | None = None

    @property
    def running(self) -> bool:
        return self._proc is not None and self._proc.poll() is None

    @property
    def pid(self) -> int | None:
        return self._proc.pid if self._proc is not None and self.running else None

    def launch(
        self, cmd: Sequence[str], console: Path, env: Mapping[str, str] | None = None
    ) -> None:
        """Start ``cmd`` with stdout and stderr appended to ``console`` (in ``env``, default
        this process's environment)."""
        with console.open("ab") as out:
            self._proc = subprocess.Popen(
                list(cmd),
                env=env,
                stdin=subprocess.DEVNULL,
                stdout=out,
                stderr=subprocess.STDOUT,
                start_new_session=True,
                preexec_fn=_preexec(),  # noqa: PLW1509 - only prctl(PR_SET_PDEATHSIG)
            )

    def wait_ready(
        self,
        probe: Callable[[], bool],
        *,
        timeout: float,
        context: str,
        error_log: Path,
        log_offset: int,
        console: Path,
    ) -> None:
        """Poll ``probe`` until it returns True; on failure kill and raise ServerStartError.

        ``probe`` may itself raise ServerStartError (e.g. the server refuses the
        password): the process is killed and the error goes on.
        """
        proc = self._proc
        if proc is None:
            raise ServerStartError(f"{self.name} was not launched")
        deadline = time.monotonic() + timeout
        delay = 0.01
        while True:
            code = proc.poll()
            if code is not None:
                self._proc = None
                log = log_tail(error_log, log_offset) or log_tail(console)
                error = PortInUseError if any(s in log for s in _PORT_IN_USE) else ServerStartError
                raise error(
                    f"{self.name} exited with code {code} during startup {context}.\n"
                    f"error log ({error_log}):\n{log}"
                )
            try:
                if probe():
                    return
            except ServerStartError:
                self.kill()
                raise
            if time.monotonic() > deadline:
                self.kill()
                raise ServerStartError(
                    f"{self.name} did not accept connections within {timeout:.0f} s "
                    f"{context}.\nerror log ({error_log}):\n{log_tail(error_log, log_offset)}"
                )
            time.sleep(delay)
            delay = min(delay * 1.5, 0.1)

    def stop(self, timeout: float = 60.0, *, group: bool = False) -> None:
        """SIGTERM and wait; SIGKILL the process group after ``timeout`` seconds.

        With ``group``, SIGTERM goes to the whole process group, and whatever is
        left of the group once the process exited is SIGKILLed (children it started,
        e.g. a Spark worker's executors).
        """
        proc = self._proc
        if proc is None:
            return
        if proc.poll() is None:
            with contextlib.suppress(ProcessLookupError, PermissionError):
                if group:
                    os.killpg(proc.pid, signal.SIGTERM)
                else:
                    proc.send_signal(signal.SIGTERM)
            try:
                proc.wait(timeout)
            except subprocess.TimeoutExpired:
                _kill_group(proc)
        if group:
            with contextlib.suppress(ProcessLookupError, PermissionError):
                os.killpg(proc.pid, signal.SIGKILL)
        self._proc = None

    def kill(self) -> None:
        """SIGKILL the whole process group (a crash) and reap the process."""
        proc = self._proc
        if proc is None:
            return
        if proc.poll() is None:
            _kill_group(proc)
        self._proc = None


def _kill_group(proc: subprocess.Popen[bytes]) -> None:
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(proc.pid, signal.SIGKILL)
    with contextlib.suppress(ProcessLookupError):
        proc.kill()
    proc.wait()


# -- temporary directories owned by a process ------------------------------------------


def owned_temp_dir(prefix: str) -> Path:
    """A new temporary directory that records the pid of the process owning it."""
    path = Path(tempfile.mkdtemp(prefix=prefix))
    (path / _OWNER_FILE).write_text(str(os.getpid()))
    return path


def pid_alive(pid: int) -> bool:
    """True when a process ``pid`` exists (ours or not)."""
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


def sweep_stale_dirs(prefixes: Sequence[str]) -> None:
    """Remove owned temporary directories whose owner process is gone."""
    root = Path(tempfile.gettempdir())
    for prefix in prefixes:
        for path in root.glob(prefix + "*"):
            try:
                pid = int((path / _OWNER_FILE).read_text())
            except (OSError, ValueError):
                continue
            if pid != os.getpid() and not pid_alive(pid):
                shutil.rmtree(path, ignore_errors=True)
