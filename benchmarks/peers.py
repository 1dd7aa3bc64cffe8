"""replica_client against its peers, on the same binlog range, in the same run.

Usage (from the repository root)::

    python3 -m benchmarks.peers --quick      # 20,000 bulk rows, 2,000 small txns, 1 run
    python3 -m benchmarks.peers              # 200,000 bulk rows, 20,000 small txns, 5 runs

A private MariaDB primary is started (``replica_client.testing.server``, the
same one the integration tests use; semi-sync off so that commits never wait),
then for each workload (see ``workload.py``):

1. the workload is written between two ``FLUSH BINARY LOGS``;
2. every decoder reads that range to the end, each run in its own process,
   decoders interleaved run by run: ``replica_client`` over the network
   (``connect(..., blocking=False)``) and from the files (``open_binlog``),
   each with the compiled accelerator and forced onto the pure-Python path
   (``REPLICA_CLIENT_PURE_PYTHON=1``); python-mysql-replication (rows forced
   to decode); asyncmy's replication module; ``mariadb-binlog
   --read-from-remote-server --verbose`` (output to /dev/null); and a raw
   read that only frames packets (the transport ceiling);
3. per run: wall time of the read loop, CPU seconds of the process
   (``os.wait4``) and its peak RSS (``VmHWM``); the table shows medians.

Rates use the row and event counts of ``replica_client``'s file decode of
the range (peers count events differently: the raw read counts packets, the
incumbents skip event types they do not implement); each decoder's own counts
are kept in the JSON output. Peers are pip-installed into the running
environment when missing (the ``bench`` extra lists them).
"""

from __future__ import annotations

import argparse
import dataclasses
import datetime as dt
import importlib.util
import json
import os
import platform
import secrets
import shutil
import statistics
import subprocess
import sys
import threading
import time
from pathlib import Path
from typing import Any

import pymysql
from pymysql.constants import CLIENT

from replica_client.testing.server import MariaDBServer, ServerVariant

from . import workload
from .runners import peak_rss_kb
from .workload import BinlogRange

__all__ = ["DECODERS", "Measurement", "main"]

ROOT = Path(__file__).resolve().parent.parent

_PURE = {"REPLICA_CLIENT_PURE_PYTHON": "1"}

#: name -> (label, runner or "mariadb-binlog", extra environment)
DECODERS: dict[str, tuple[str, str, dict[str, str]]] = {
    "rc_changes": ("replica_client `changes()`, network (dicts)", "rc_changes", {}),
    "rc_changes_file": ("replica_client `iter_changes`, file (dicts)", "rc_changes_file", {}),
    "rc_changes_pure": ("replica_client `changes()`, network, pure Python", "rc_changes", _PURE),
    "rc_net": ("replica_client events, network (row tuples)", "rc_net", {}),
    "rc_file": ("replica_client events, file (row tuples)", "rc_file", {}),
    "rc_net_pure": ("replica_client events, network, pure Python", "rc_net", _PURE),
    "rc_file_pure": ("replica_client events, file, pure Python", "rc_file", _PURE),
    "pymysqlrepl": ("python-mysql-replication", "pymysqlrepl", {}),
    "asyncmy": ("asyncmy.replication", "asyncmy", {}),
    "mariadb_binlog": ("mariadb-binlog -R --verbose (C)", "mariadb-binlog", {}),
    "raw": ("raw framing only (ceiling)", "raw", {}),
}

_PEER_PACKAGES = {
    "pymysqlrepl": ("pymysqlreplication", "mysql-replication"),
    "asyncmy": ("asyncmy", "asyncmy"),
}


@dataclasses.dataclass
class Measurement:
    """One run of one decoder."""

    wall: float
    cpu: float
    max_rss_mb: float
    events: int | None
    rows: int | None
    #: CPU seconds of the read loop alone (None for mariadb-binlog).
    loop_cpu: float | None = None


def _ensure_peer(name: str) -> bool:
    module, package = _PEER_PACKAGES[name]
    if importlib.util.find_spec(module) is not None:
        return True
    print(f"installing {package} (benchmark-only peer) ...", file=sys.stderr)
    done = subprocess.run(
        [sys.executable, "-m", "pip", "install", "-q", "--disable-pip-version-check", package],
        check=False,
    )
    importlib.invalidate_caches()
    return done.returncode == 0 and importlib.util.find_spec(module) is not None


def _mariadb_binlog() -> str | None:
    for name in ("mariadb-binlog", "mysqlbinlog"):
        found = shutil.which(name)
        if found:
            return found
    return None


def _watch_hwm(pid: int, out: list[int]) -> None:
    # CPU time comes from os.wait4, but its ru_maxrss of a forked child counts
    # the parent's RSS at fork time: read the child's own high-water mark.
    while True:
        kb = peak_rss_kb(pid)
        if not kb:
            return
        out[0] = max(out[0], kb)
        time.sleep(0.005)


class _Bench:
    def __init__(self, srv: MariaDBServer, password: str) -> None:
        self.srv = srv
        self.password = password
        self._server_id = 100

    def _next_server_id(self) -> int:
        self._server_id += 1
        return self._server_id

    def run_once(self, decoder: str, rng: BinlogRange) -> Measurement:
        _, runner, extra_env = DECODERS[decoder]
        env = dict(os.environ, **extra_env)
        env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(ROOT), env.get("PYTHONPATH")]))
        if runner == "mariadb-binlog":
            binary = _mariadb_binlog()
            assert binary is not None
            cmd = [
                binary,
                "--no-defaults",
                "--read-from-remote-server",
                "--verbose",
                "--to-last-log",
                f"--host={self.srv.host}",
                f"--port={self.srv.port}",
                f"--user={workload.BENCH_USER}",
                f"--password={self.password}",
                rng.first,
            ]
            stdout: Any = subprocess.DEVNULL
        else:
            args = {
                "host": self.srv.host,
                "port": self.srv.port,
                "user": workload.BENCH_USER,
                "password": self.password,
                "server_id": self._next_server_id(),
                "first": rng.first,
                "last": rng.files[-1],
                "paths": [str(p) for p in rng.paths()],
            }
            cmd = [sys.executable, "-m", "benchmarks.runners", runner, json.dumps(args)]
            stdout = subprocess.PIPE
        start = time.perf_counter()
        proc = subprocess.Popen(cmd, stdout=stdout, env=env, cwd=ROOT)
        hwm = [0]
        watcher = threading.Thread(target=_watch_hwm, args=(proc.pid, hwm), daemon=True)
        watcher.start()
        out = proc.stdout.read() if proc.stdout is not None else b""
        _, status, usage = os.wait4(proc.pid, 0)
        watcher.join()
        wall = time.perf_counter() - start
        proc.returncode = os.waitstatus_to_exitcode(status)
        if proc.returncode != 0:
            raise RuntimeError(f"{decoder} failed with exit code {proc.returncode}")
        cpu = usage.ru_utime + usage.ru_stime
        if runner == "mariadb-binlog":
            return Measurement(wall, cpu, hwm[0] / 1024, None, None)
        result = json.loads(out.decode().strip().splitlines()[-1])
        rss = max(hwm[0], result["hwm_kb"]) / 1024
        return Measurement(
            result["wall"], cpu, rss, result["events"], result["rows"], result["cpu"]
        )


def _row(label: str, rows_s: float, events_s: float, cpu: float, rss: float, ratio: str) -> str:
    return f"| {label} | {rows_s:,.0f} | {events_s:,.0f} | {cpu:.2f} | {rss:.0f} | {ratio} |"


def _table(title: str, summary: dict[str, dict[str, float]], key: str) -> str:
    lines = [
        f"**{title}**",
        "",
        "| decoder | rows/s | events/s | CPU s | peak RSS MB | ÷ python-mysql-replication |",
        "|---|---:|---:|---:|---:|---:|",
    ]
    base = summary.get("pymysqlrepl", {}).get(key)
    for name, s in summary.items():
        ratio = f"{s[key] / base:.1f}x" if base and s[key] else "-"
        lines.append(_row(DECODERS[name][0], s["rows_s"], s["events_s"], s["cpu"], s["rss"], ratio))
    return "\n".join(lines)


#: (this, that, label, slow-down): a speed-up is that's wall time ÷ this's,
#: a slow-down this's ÷ that's.
_VERSUS = (
    ("rc_changes", "rc_net", "changes() time ÷ row tuples time", True),
    ("rc_changes", "pymysqlrepl", "changes() ÷ python-mysql-replication", False),
    ("rc_changes", "asyncmy", "changes() ÷ asyncmy", False),
    ("rc_changes_pure", "rc_net_pure", "pure: changes() time ÷ row tuples time", True),
    ("rc_changes_pure", "pymysqlrepl", "pure: changes() ÷ python-mysql-replication", False),
    ("rc_changes_file", "rc_file", "files: iter_changes() time ÷ row tuples time", True),
)


def _ratios(runs: dict[str, list[Measurement]]) -> list[tuple[str, float, float, float]]:
    """(label, median, worst, best) of the per-run ratios in ``_VERSUS``.

    Run by run (a run interleaves every decoder), so that a noisy moment
    weighs on both sides. "Worst" is the least favourable run. Slow-downs are
    also given on the read loops' CPU seconds: on a shared machine a run's
    wall time also counts the time the process waited for a CPU.
    """
    out: list[tuple[str, float, float, float]] = []
    for this, that, label, slowdown in _VERSUS:
        mine, theirs = runs.get(this), runs.get(that)
        if not mine or not theirs:
            continue
        pairs = list(zip(mine, theirs, strict=False))
        if slowdown:
            rs = [a.wall / b.wall for a, b in pairs]
            out.append((label, statistics.median(rs), max(rs), min(rs)))
            cpus = [a.loop_cpu / b.loop_cpu for a, b in pairs if a.loop_cpu and b.loop_cpu]
            if cpus:
                out.append((label + ", CPU", statistics.median(cpus), max(cpus), min(cpus)))
        else:
            rs = [b.wall / a.wall for a, b in pairs]
            out.append((label, statistics.median(rs), min(rs), max(rs)))
    return out


def _ratio_table(ratios: list[tuple[str, float, float, float]]) -> str:
    lines = ["| ratio | median | worst run | best run |", "|---|---:|---:|---:|"]
    for label, med, worst, best in ratios:
        lines.append(f"| {label} | {med:.2f}x | {worst:.2f}x | {best:.2f}x |")
    return "\n".join(lines)


def _summarize(
    runs: dict[str, list[Measurement]], events: int, rows: int
) -> dict[str, dict[str, float]]:
    out: dict[str, dict[str, float]] = {}
    for name, ms in runs.items():
        out[name] = {
            "wall": statistics.median(m.wall for m in ms),
            "rows_s": statistics.median(rows / m.wall for m in ms),
            "events_s": statistics.median(events / m.wall for m in ms),
            "cpu": statistics.median(m.cpu for m in ms),
            "rss": statistics.median(m.max_rss_mb for m in ms),
        }
    return out


def _measure(
    bench: _Bench, rng: BinlogRange, decoders: list[str], n_runs: int
) -> tuple[dict[str, list[Measurement]], int, int]:
    runs: dict[str, list[Measurement]] = {d: [] for d in decoders}
    for i in range(n_runs):
        for d in decoders:
            m = bench.run_once(d, rng)
            runs[d].append(m)
            print(f"  run {i + 1}/{n_runs} {d}: {m.wall:.2f} s, {m.cpu:.2f} s CPU", file=sys.stderr)
    ref = runs.get("rc_file") or runs.get("rc_file_pure")
    assert ref is not None and ref[0].events is not None and ref[0].rows is not None
    events, rows = ref[0].events, ref[0].rows
    for d, ms in runs.items():
        if d.startswith("rc_") and ms[0].rows != rows:
            raise RuntimeError(f"{d} decoded {ms[0].rows} rows, rc_file {rows}")
    return runs, events, rows


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--quick", action="store_true", help="small workloads, one run")
    parser.add_argument("--runs", type=int, help="runs per decoder (median); default 5, quick 1")
    parser.add_argument("--bulk-rows", type=int, help="default 200000, quick 20000")
    parser.add_argument("--small-txns", type=int, help="default 20000, quick 2000")
    parser.add_argument("--only", help="comma-separated decoders: " + ",".join(DECODERS))
    parser.add_argument("--json", type=Path, help="results file (default benchmarks/results/)")
    opts = parser.parse_args(argv)
    runs = opts.runs or (1 if opts.quick else 5)
    bulk_rows = opts.bulk_rows or (20_000 if opts.quick else 200_000)
    small_txns = opts.small_txns or (2_000 if opts.quick else 20_000)
    decoders = opts.only.split(",") if opts.only else list(DECODERS)
    if "rc_file" not in decoders and "rc_file_pure" not in decoders:
        decoders.insert(0, "rc_file")
    for name in list(decoders):
        if name not in DECODERS:
            parser.error(f"unknown decoder {name!r}")
        if name in _PEER_PACKAGES and not _ensure_peer(name):
            print(f"skipping {name}: cannot install it", file=sys.stderr)
            decoders.remove(name)
        if name == "mariadb_binlog" and _mariadb_binlog() is None:
            print("skipping mariadb_binlog: not installed", file=sys.stderr)
            decoders.remove(name)

    from replica_client.binlog import row_plans

    accelerated = row_plans.ACCELERATED

    srv = MariaDBServer(ServerVariant(extra_args=("--rpl-semi-sync-master-enabled=OFF",)))
    srv.start()
    results: dict[str, Any] = {
        "when": dt.datetime.now(dt.UTC).isoformat(timespec="seconds"),
        "python": platform.python_version(),
        "machine": f"{platform.machine()}, {os.cpu_count()} CPUs",
        "server": srv.sql("SELECT VERSION()")[0][0],
        "accelerator": accelerated,
        "runs": runs,
        "workloads": {},
    }
    tables: list[str] = []
    try:
        password = secrets.token_hex(8)
        conn = pymysql.connect(
            host=srv.host,
            port=srv.port,
            user=srv.user,
            password=srv.password,
            autocommit=True,
            client_flag=CLIENT.MULTI_STATEMENTS,
        )
        workload.create_bench_user(conn, password)
        bench = _Bench(srv, password)
        for name, write, size in (
            ("bulk", workload.write_bulk, bulk_rows),
            ("small", workload.write_small, small_txns),
        ):
            print(f"writing {name} ({size}) ...", file=sys.stderr)
            rng = write(conn, size)
            measured, events, rows = _measure(bench, rng, decoders, runs)
            summary = _summarize(measured, events, rows)
            key = "rows_s" if name == "bulk" else "events_s"
            title = (
                f"{name}: {rows:,} rows, {events:,} events, "
                f"{sum(p.stat().st_size for p in rng.paths()) / 1e6:.0f} MB of binlog "
                f"(ratio on {key.replace('_s', '/s')}; medians of {runs})"
            )
            ratios = _ratios(measured)
            tables.append(_table(title, summary, key))
            if ratios:
                tables.append(_ratio_table(ratios))
            results["workloads"][name] = {
                "ratios": {label: [med, worst, best] for label, med, worst, best in ratios},
                "events": events,
                "rows": rows,
                "summary": summary,
                "runs": {d: [dataclasses.asdict(m) for m in ms] for d, ms in measured.items()},
            }
        conn.close()
    finally:
        srv.close()
    header = (
        f"Python {results['python']}, {results['server']}, {results['machine']}, "
        f"accelerator {'on' if accelerated else 'off'}"
    )
    print("\n" + header + "\n\n" + "\n\n".join(tables))
    out = opts.json or ROOT / "benchmarks" / "results" / "latest.json"
    out.parent.mkdir(parents=True, exist_ok=True)
    results["tables"] = tables
    out.write_text(json.dumps(results, indent=2))
    print(f"\nresults: {out}", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
