"""Server binaries from Debian packages, unpacked into a private prefix.

MariaDB 11.8 (Debian 13 "trixie") and MySQL 9.7 (Debian unstable "sid") need
a newer C library than an older Debian machine has. Their packages are
downloaded with the machine's own ``apt-get`` (with private lists, never the
system's apt configuration or package database), unpacked with ``dpkg-deb -x``
into a prefix, and run through that prefix's own dynamic loader
(:meth:`Prefix.argv`). Nothing is installed system-wide.

Contract:

- :func:`provision` is idempotent: a prefix that is there and works is
  returned as it is, without network. A missing, half-made or corrupt prefix
  (no stamp, a stamp of another recipe, a binary missing or failing to run) is
  made again.
- The prefix lives in a cache outside any repository:
  ``$REPLICA_CLIENT_SERVER_CACHE`` or
  ``${XDG_CACHE_HOME:-~/.cache}/replica-client/servers``, one directory per
  ``<flavor>-<version>``. Its stamp file (:data:`STAMP`) records the packages
  and versions unpacked, the Debian suite and mirror, and the server's
  ``--version``; the downloaded packages stay under ``.apt/`` in the cache so
  that a prefix can be made again without downloading them twice.
- One process at a time provisions a prefix (an exclusive lock file beside it);
  the others wait, then find it done. Packages are unpacked into a temporary
  directory that is renamed into place only after its binaries ran, so no one
  ever sees a half-made prefix.
- Every failure raises :class:`ProvisionError` (a ``ServerStartError``) saying
  what failed and what to do: no ``apt-get`` on this machine, the mirror cannot
  be reached, a package is missing from the suite, a binary does not run.

``python -m replica_client.testing.provision [mariadb-11.8] [mysql-9.7]
[--cache DIR] [--force]`` does the same from the command line (both recipes
when none is named). Only the standard library is imported.
"""

from __future__ import annotations

import argparse
import contextlib
import datetime
import fcntl
import json
import logging
import os
import platform
import re
import secrets
import shutil
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from .errors import ServerStartError

__all__ = [
    "CACHE_ENV",
    "KEYRING_ENV",
    "MIRROR_ENV",
    "RECIPES",
    "STAMP",
    "Machine",
    "Prefix",
    "ProvisionError",
    "Recipe",
    "cache_root",
    "installed",
    "machine",
    "main",
    "prefix_path",
    "provision",
    "recipe",
]

CACHE_ENV = "REPLICA_CLIENT_SERVER_CACHE"
MIRROR_ENV = "REPLICA_CLIENT_DEBIAN_MIRROR"
KEYRING_ENV = "REPLICA_CLIENT_DEBIAN_KEYRING"
DEFAULT_MIRROR = "http://deb.debian.org/debian"
DEFAULT_KEYRING = "/usr/share/keyrings/debian-archive-keyring.gpg"
#: The stamp file at the top of a prefix, written last.
STAMP = "provisioned.json"
_STAMP_FORMAT = 1
_LOCK_TIMEOUT = 20 * 60.0
_APT_TIMEOUT = 15 * 60.0
_TAIL_LINES = 25
#: Packages a server never needs at run time, however its dependencies say.
_NOT_NEEDED = re.compile(r"perl|perl-base|perl-modules-.+|libperl.*|c?debconf(-2\.0)?|dpkg")
_VERSION = re.compile(r"\bVer\s+(\d+\.\d+\.\d+\S*)")

_log = logging.getLogger(__name__)


class ProvisionError(ServerStartError):
    """A prefix could not be provisioned; the message says what failed and what to do."""


@dataclass(frozen=True, slots=True)
class Recipe:
    """Which Debian packages make one server version, and which binaries must run."""

    flavor: str
    version: str
    suite: str
    #: Downloaded with their dependencies (less :data:`_NOT_NEEDED`).
    packages: tuple[str, ...]
    #: Downloaded alone: plugins and tools whose other dependencies are not wanted.
    without_dependencies: tuple[str, ...]
    server: str
    binlog_tool: str
    client_tool: str
    download_mb: int

    @property
    def name(self) -> str:
        """``<flavor>-<version>``: the prefix's directory name."""
        return f"{self.flavor}-{self.version}"


RECIPES: Mapping[tuple[str, str], Recipe] = {
    ("mariadb", "11.8"): Recipe(
        flavor="mariadb",
        version="11.8",
        suite="trixie",
        packages=("mariadb-server-core", "mariadb-client-core"),
        # mariadb-server: auth_parsec, auth_ed25519, file_key_management plugins;
        # mariadb-client: mariadb-binlog, mariadb-dump, mariadb-admin.
        without_dependencies=("mariadb-server", "mariadb-client"),
        server="usr/sbin/mariadbd",
        binlog_tool="usr/bin/mariadb-binlog",
        client_tool="usr/bin/mariadb",
        download_mb=20,
    ),
    ("mysql", "9.7"): Recipe(
        flavor="mysql",
        version="9.7",
        # sid carries a MariaDB 11.8 of another build too: never mix its lists with trixie's.
        suite="sid",
        packages=("mysql-server-core", "mysql-client-core"),
        without_dependencies=(),
        server="usr/sbin/mysqld",
        binlog_tool="usr/bin/mysqlbinlog",
        client_tool="usr/bin/mysql",
        download_mb=55,
    ),
}


@dataclass(frozen=True, slots=True)
class Machine:
    """The Debian architecture, multiarch triplet and dynamic loader of a machine."""

    arch: str
    triplet: str
    loader: str


_MACHINES = {
    "x86_64": Machine("amd64", "x86_64-linux-gnu", "ld-linux-x86-64.so.2"),
    "aarch64": Machine("arm64", "aarch64-linux-gnu", "ld-linux-aarch64.so.1"),
}
_MACHINE_ALIASES = {"amd64": "x86_64", "arm64": "aarch64"}


def machine(name: str | None = None) -> Machine:
    """The :class:`Machine` for ``name`` (default: this one); ProvisionError if unknown."""
    raw = name if name is not None else platform.machine()
    key = _MACHINE_ALIASES.get(raw.lower(), raw.lower())
    found = _MACHINES.get(key)
    if found is None or not sys.platform.startswith("linux"):
        raise ProvisionError(
            f"server binaries are provisioned from Debian packages for Linux on "
            f"{' and '.join(_MACHINES)} only; this machine is {sys.platform}/{raw}. "
            f"Install the server yourself, or run the tests on an x86_64 or aarch64 Linux machine"
        )
    return found


def recipe(flavor: str, version: str) -> Recipe:
    """The :class:`Recipe` for ``flavor`` and ``version``; ProvisionError if there is none."""
    found = RECIPES.get((flavor, version))
    if found is None:
        known = ", ".join(r.name for r in RECIPES.values())
        raise ProvisionError(f"no provisioning recipe for {flavor}-{version}; known: {known}")
    return found


@dataclass(frozen=True, slots=True)
class Prefix:
    """A provisioned prefix: its root, what made it, and how to run its binaries."""

    root: Path
    recipe: Recipe
    machine: Machine
    stamp: Mapping[str, Any] = field(compare=False, repr=False)

    @property
    def libdir(self) -> Path:
        return self.root / "usr" / "lib" / self.machine.triplet

    @property
    def loader(self) -> Path:
        return self.libdir / self.machine.loader

    @property
    def packages(self) -> dict[str, str]:
        """Package name -> Debian version, as unpacked."""
        return dict(self.stamp.get("packages", {}))

    @property
    def server_version(self) -> str:
        """The server's version from its ``--version``, e.g. ``11.8.9-MariaDB-0+deb13u1``."""
        return str(self.stamp.get("server_version", ""))

    def path(self, relative: str) -> Path:
        return self.root / relative

    def runner(self) -> list[str]:
        """The loader and its library path: put it before any binary of the prefix."""
        return [str(self.loader), "--library-path", str(self.libdir)]

    def argv(self, relative: str) -> list[str]:
        """The command that runs the prefix's binary ``relative`` (e.g. ``usr/sbin/mysqld``)."""
        return [*self.runner(), str(self.root / relative)]


# -- where things live ------------------------------------------------------------------------


def cache_root(cache: str | os.PathLike[str] | None = None) -> Path:
    """The directory holding every prefix: ``cache``, env, or the XDG cache directory."""
    if cache is not None:
        return Path(cache).expanduser().resolve()
    override = os.environ.get(CACHE_ENV)
    if override:
        return Path(override).expanduser().resolve()
    xdg = os.environ.get("XDG_CACHE_HOME")
    base = Path(xdg).expanduser() if xdg else Path.home() / ".cache"
    return (base / "replica-client" / "servers").resolve()


def prefix_path(flavor: str, version: str, cache: str | os.PathLike[str] | None = None) -> Path:
    """Where the prefix of ``flavor``-``version`` lives (whether or not it exists)."""
    return cache_root(cache) / recipe(flavor, version).name


# -- checking a prefix ---------------------------------------------------------------------------


def _run_version(argv: Sequence[str]) -> str:
    """The ``--version`` line of a binary; ProvisionError when it does not run."""
    try:
        proc = subprocess.run(
            [*argv, "--version"],
            stdin=subprocess.DEVNULL,
            capture_output=True,
            text=True,
            check=False,
            timeout=60,
        )
    except (OSError, subprocess.TimeoutExpired) as exc:
        raise ProvisionError(f"{argv[-1]} --version did not run: {exc}") from exc
    if proc.returncode != 0:
        raise ProvisionError(
            f"{argv[-1]} --version failed with exit code {proc.returncode}: "
            f"{_tail(proc.stdout + proc.stderr)}"
        )
    return proc.stdout.strip()


def _check(root: Path, wanted: Recipe, arch: Machine) -> Prefix:
    """The prefix at ``root`` if its stamp matches and its binaries run; else ProvisionError."""
    try:
        stamp = json.loads((root / STAMP).read_text())
    except (OSError, ValueError) as exc:
        raise ProvisionError(f"{root} has no readable stamp ({STAMP}): {exc}") from exc
    expected = {
        "format": _STAMP_FORMAT,
        "flavor": wanted.flavor,
        "version": wanted.version,
        "suite": wanted.suite,
        "arch": arch.arch,
    }
    if not isinstance(stamp, dict) or any(stamp.get(k) != v for k, v in expected.items()):
        raise ProvisionError(f"the stamp of {root} is not for {expected}")
    prefix = Prefix(root, wanted, arch, stamp)
    if not prefix.loader.is_file():
        raise ProvisionError(f"{root} has no dynamic loader {prefix.loader}")
    for relative in (wanted.server, wanted.binlog_tool, wanted.client_tool):
        if not prefix.path(relative).is_file():
            raise ProvisionError(f"{root} has no {relative}")
        line = _run_version(prefix.argv(relative))
        match = _VERSION.search(line)
        if relative == wanted.server and not (
            match and match.group(1).startswith(wanted.version + ".")
        ):
            raise ProvisionError(
                f"{relative} in {root} is not version {wanted.version}: {line!r}; "
                f"Debian {wanted.suite} may have moved on to another version"
            )
    return prefix


def installed(
    flavor: str, version: str, cache: str | os.PathLike[str] | None = None
) -> Prefix | None:
    """The working prefix of ``flavor``-``version``, or None if it is missing or broken."""
    wanted = recipe(flavor, version)
    root = prefix_path(flavor, version, cache)
    if not root.exists():
        return None
    try:
        return _check(root, wanted, machine())
    except ProvisionError as exc:
        _log.info("prefix %s is not usable: %s", root, exc)
        return None


# -- provisioning ----------------------------------------------------------------------------------


def provision(
    flavor: str,
    version: str,
    cache: str | os.PathLike[str] | None = None,
    *,
    force: bool = False,
    mirror: str | None = None,
) -> Prefix:
    """The working prefix of ``flavor``-``version``, downloaded and unpacked if needed.

    ``force`` makes it again even when it works. Raises :class:`ProvisionError`.
    """
    wanted = recipe(flavor, version)
    arch = machine()
    root_dir = cache_root(cache)
    try:
        root_dir.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise ProvisionError(
            f"cannot create the server cache {root_dir}: {exc}; set {CACHE_ENV} to a "
            "writable directory"
        ) from exc
    target = root_dir / wanted.name
    with _locked(root_dir / f"{wanted.name}.lock", wanted.name):
        if not force and target.exists():
            try:
                return _check(target, wanted, arch)
            except ProvisionError as exc:
                _log.warning("prefix %s is broken (%s): making it again", target, exc)
        for stale in root_dir.glob(f".{wanted.name}.*"):
            shutil.rmtree(stale, ignore_errors=True)
        return _build(wanted, arch, root_dir, target, mirror or os.environ.get(MIRROR_ENV))


@contextlib.contextmanager
def _locked(path: Path, name: str) -> Iterator[None]:
    with path.open("a") as handle:
        deadline = time.monotonic() + _LOCK_TIMEOUT
        waiting = False
        while True:
            try:
                fcntl.flock(handle.fileno(), fcntl.LOCK_EX | fcntl.LOCK_NB)
                break
            except BlockingIOError:
                if not waiting:
                    _log.info("waiting for another process that provisions %s (%s)", name, path)
                    waiting = True
                if time.monotonic() > deadline:
                    raise ProvisionError(
                        f"another process has been provisioning {name} for "
                        f"{_LOCK_TIMEOUT / 60:.0f} minutes (lock {path}); stop it or remove "
                        "the lock file once no provisioning runs"
                    ) from None
                time.sleep(0.5)
        try:
            yield
        finally:
            fcntl.flock(handle.fileno(), fcntl.LOCK_UN)


def _build(
    wanted: Recipe, arch: Machine, root_dir: Path, target: Path, mirror: str | None
) -> Prefix:
    began = time.monotonic()
    apt = _Apt(root_dir / ".apt" / f"{wanted.suite}-{arch.arch}", wanted.suite, arch, mirror)
    _log.info(
        "provisioning %s from Debian %s (%s, about %d MB) into %s",
        wanted.name,
        wanted.suite,
        apt.mirror,
        wanted.download_mb,
        target,
    )
    apt.update()
    names = apt.dependencies(wanted.packages) + list(wanted.without_dependencies)
    versions = apt.versions(names)
    debs = apt.download(versions)
    work = Path(tempfile.mkdtemp(prefix=f".{wanted.name}.tmp-", dir=root_dir))
    try:
        work.chmod(0o755)
        for deb in debs:
            _tool_run(["dpkg-deb", "-x", str(deb), str(work)], f"unpacking {deb.name}")
        stamp = {
            "format": _STAMP_FORMAT,
            "flavor": wanted.flavor,
            "version": wanted.version,
            "suite": wanted.suite,
            "mirror": apt.mirror,
            "arch": arch.arch,
            "triplet": arch.triplet,
            "packages": {name: version for name, (version, _arch) in sorted(versions.items())},
            "created": datetime.datetime.now(datetime.UTC).isoformat(timespec="seconds"),
            "build": secrets.token_hex(8),
        }
        probe = Prefix(work, wanted, arch, stamp)
        if not probe.loader.is_file():
            raise ProvisionError(
                f"the packages of {wanted.name} hold no dynamic loader {probe.loader.name} "
                f"in usr/lib/{arch.triplet}"
            )
        line = _run_version(probe.argv(wanted.server))
        match = _VERSION.search(line)
        stamp["server_version"] = match.group(1) if match else line
        (work / STAMP).write_text(json.dumps(stamp, indent=2) + "\n")
        _check(work, wanted, arch)  # every binary runs from the new tree
        if target.exists():
            trash = Path(tempfile.mkdtemp(prefix=f".{wanted.name}.old-", dir=root_dir))
            target.rename(trash / "prefix")
            shutil.rmtree(trash, ignore_errors=True)
        work.rename(target)
    except BaseException:
        shutil.rmtree(work, ignore_errors=True)
        raise
    apt.keep_only(debs)
    _log.info(
        "provisioned %s (%s, %d packages) in %.1f s",
        wanted.name,
        stamp["server_version"],
        len(debs),
        time.monotonic() - began,
    )
    return Prefix(target, wanted, arch, stamp)  # checked above, before the rename


def _tail(text: str, lines: int = _TAIL_LINES) -> str:
    return "\n".join(text.strip().splitlines()[-lines:])


def _exec(argv: list[str], what: str, cwd: Path | None = None) -> subprocess.CompletedProcess[str]:
    """Run a tool with plain-C messages; ProvisionError only if it cannot run at all."""
    try:
        return subprocess.run(
            argv,
            cwd=cwd,
            stdin=subprocess.DEVNULL,
            capture_output=True,
            text=True,
            check=False,
            timeout=_APT_TIMEOUT,
            env={**os.environ, "LC_ALL": "C", "DEBIAN_FRONTEND": "noninteractive"},
        )
    except (OSError, subprocess.TimeoutExpired) as exc:
        raise ProvisionError(f"{what} failed: {' '.join(argv[:2])}: {exc}") from exc


def _tool_run(argv: list[str], what: str) -> subprocess.CompletedProcess[str]:
    """Run a tool; ProvisionError with its output when it fails."""
    proc = _exec(argv, what)
    if proc.returncode != 0:
        raise ProvisionError(
            f"{what} failed with exit code {proc.returncode}: {' '.join(argv[:2])} ...\n"
            f"{_tail(proc.stdout + proc.stderr)}"
        )
    return proc


class _Apt:
    """``apt-get``/``apt-cache`` on private lists for one Debian suite; nothing of the system's."""

    def __init__(self, state: Path, suite: str, arch: Machine, mirror: str | None) -> None:
        missing = [t for t in ("apt-get", "apt-cache", "dpkg-deb") if shutil.which(t) is None]
        if missing:
            raise ProvisionError(
                f"provisioning a server needs Debian's apt tools, and {', '.join(missing)} "
                "is not on PATH: run on a Debian or Ubuntu machine (apt and dpkg), or provision "
                f"there and point {CACHE_ENV} at a copy of its server cache"
            )
        keyring = os.environ.get(KEYRING_ENV) or DEFAULT_KEYRING
        if not Path(keyring).is_file():
            raise ProvisionError(
                f"the Debian archive keyring {keyring} is missing: install the "
                f"debian-archive-keyring package, or set {KEYRING_ENV} to a keyring file"
            )
        self.suite = suite
        self.arch = arch
        self.mirror = (mirror or DEFAULT_MIRROR).rstrip("/")
        self.state = state
        self.debs = state / "debs"
        for sub in ("lists/partial", "archives/partial", "debs"):
            (state / sub).mkdir(parents=True, exist_ok=True)
        sources = state / "sources.list"
        sources.write_text(f"deb [signed-by={keyring}] {self.mirror} {suite} main\n")
        self.options = [
            f"-oDir::Etc::sourcelist={sources}",
            "-oDir::Etc::sourceparts=/dev/null",
            "-oDir::Etc::preferences=/dev/null",
            "-oDir::Etc::preferencesparts=/dev/null",
            f"-oDir::State::Lists={state / 'lists'}",
            "-oDir::State::status=/dev/null",
            f"-oDir::Cache::archives={state / 'archives'}",
            "-oDir::Cache::pkgcache=",
            "-oDir::Cache::srcpkgcache=",
            f"-oAPT::Architecture={arch.arch}",
            f"-oAPT::Architectures={arch.arch}",
            "-oAcquire::Languages=none",
            "-oAcquire::Retries=2",
            "-oAcquire::http::Timeout=30",
        ]

    def update(self) -> None:
        proc = _exec(["apt-get", *self.options, "-q", "update"], "apt-get update")
        output = proc.stdout + proc.stderr
        failed = proc.returncode != 0 or any(
            marker in output for marker in ("Err:", "Failed to fetch", "failed to download")
        )
        have_index = any((self.state / "lists").glob(f"*_dists_{self.suite}_*Packages*"))
        if failed or not have_index:
            raise ProvisionError(
                f"cannot fetch the package lists of Debian {self.suite} from {self.mirror} "
                f"(apt-get update, exit code {proc.returncode}): the mirror is unreachable or "
                f"does not carry {self.suite}. Check the network or proxy, or set {MIRROR_ENV} "
                f"to a reachable Debian mirror.\n{_tail(output)}"
            )

    def dependencies(self, packages: Sequence[str]) -> list[str]:
        """``packages`` and everything they depend on, less :data:`_NOT_NEEDED`."""
        proc = _tool_run(
            [
                "apt-cache",
                *self.options,
                "depends",
                "--recurse",
                "--no-recommends",
                "--no-suggests",
                "--no-conflicts",
                "--no-breaks",
                "--no-replaces",
                "--no-enhances",
                *packages,
            ],
            f"resolving the dependencies of {' '.join(packages)}",
        )
        found = [
            line.strip()
            for line in proc.stdout.splitlines()
            if line.strip() and not line.startswith((" ", "<"))
        ]
        self._require(packages, found)
        return sorted({name for name in found if not _NOT_NEEDED.fullmatch(name)})

    def versions(self, packages: Sequence[str]) -> dict[str, tuple[str, str]]:
        """Package -> (candidate version, architecture) in this suite."""
        proc = _tool_run(
            ["apt-cache", *self.options, "show", "--no-all-versions", *packages],
            "reading package versions",
        )
        out: dict[str, tuple[str, str]] = {}
        for block in proc.stdout.split("\n\n"):
            fields = {
                key: value
                for key, sep, value in (line.partition(": ") for line in block.splitlines())
                if sep and not key.startswith(" ")
            }
            if "Package" in fields and "Version" in fields:
                out[fields["Package"]] = (fields["Version"], fields.get("Architecture", ""))
        self._require(packages, out)
        return out

    def _require(self, wanted: Sequence[str], found: Sequence[str] | Mapping[str, Any]) -> None:
        missing = [name for name in wanted if name not in found]
        if missing:
            raise ProvisionError(
                f"package {', '.join(missing)} is not in Debian {self.suite} ({self.mirror}, "
                f"{self.arch.arch}): the suite no longer carries it or the mirror is incomplete; "
                f"set {MIRROR_ENV} to a full Debian mirror, or update the recipe in "
                "replica_client/testing/provision.py"
            )

    def download(self, versions: Mapping[str, tuple[str, str]]) -> list[Path]:
        """Download the exact candidate versions into the kept ``debs`` directory."""
        pinned = [f"{name}={version}" for name, (version, _arch) in sorted(versions.items())]
        proc = _exec(
            ["apt-get", *self.options, "-q", "download", *pinned], "apt-get download", self.debs
        )
        output = proc.stdout + proc.stderr
        missing = re.findall(
            r"Unable to locate package (\S+)|Version '[^']*' for '([^']+)'", output
        )
        if missing:
            self._require([a or b for a, b in missing], [])
        if proc.returncode != 0:
            raise ProvisionError(
                f"downloading {len(pinned)} packages from {self.mirror} failed (apt-get "
                f"download, exit code {proc.returncode}); check the network or set {MIRROR_ENV}."
                f"\n{_tail(output)}"
            )
        debs = [
            self.debs / f"{name}_{version.replace(':', '%3a')}_{deb_arch}.deb"
            for name, (version, deb_arch) in sorted(versions.items())
        ]
        absent = [deb.name for deb in debs if not deb.is_file()]
        if absent:
            raise ProvisionError(
                f"apt-get download reported success but did not write {', '.join(absent)} "
                f"into {self.debs}"
            )
        return debs

    def keep_only(self, debs: Sequence[Path]) -> None:
        """Remove downloaded packages that the last provisioning did not use."""
        keep = {deb.name for deb in debs}
        for path in self.debs.glob("*.deb"):
            if path.name not in keep:
                path.unlink(missing_ok=True)


# -- command line ---------------------------------------------------------------------------------


def main(argv: Sequence[str] | None = None) -> int:
    """``python -m replica_client.testing.provision``: provision prefixes, print where."""
    parser = argparse.ArgumentParser(
        prog="python -m replica_client.testing.provision",
        description="Download and unpack server binaries from Debian packages into the "
        "server cache (idempotent).",
    )
    parser.add_argument(
        "servers",
        nargs="*",
        metavar="FLAVOR-VERSION",
        help=f"what to provision: {', '.join(r.name for r in RECIPES.values())} (default: all)",
    )
    parser.add_argument(
        "--cache",
        default=None,
        help=f"cache directory (default: ${CACHE_ENV} "
        "or ${XDG_CACHE_HOME:-~/.cache}/replica-client/servers)",
    )
    parser.add_argument("--force", action="store_true", help="make the prefixes again")
    parser.add_argument("-q", "--quiet", action="store_true", help="print errors only")
    ns = parser.parse_args(argv)
    logging.basicConfig(
        level=logging.WARNING if ns.quiet else logging.INFO,
        format="provision: %(message)s",
        stream=sys.stderr,
    )
    by_name = {r.name: r for r in RECIPES.values()}
    unknown = [name for name in ns.servers if name not in by_name]
    if unknown:
        parser.error(f"unknown server {', '.join(unknown)}; choose from {', '.join(by_name)}")
    status = 0
    for name in ns.servers or list(by_name):
        wanted = by_name[name]
        began = time.monotonic()
        try:
            prefix = provision(wanted.flavor, wanted.version, ns.cache, force=ns.force)
        except ProvisionError as exc:
            sys.stderr.write(f"provision: error: {name}: {exc}\n")
            status = 1
            continue
        print(
            f"{name}: {prefix.server_version} in {prefix.root} "
            f"({len(prefix.packages)} packages, {time.monotonic() - began:.1f} s)",
            flush=True,
        )
    return status


if __name__ == "__main__":
    sys.exit(main())
