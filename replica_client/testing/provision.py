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

The recipes, the prefix and the cache's location are in
:mod:`~replica_client.testing.prefixes`, the private ``apt-get`` in
:mod:`~replica_client.testing.apt`; their public names used here are
re-exported.
"""

from __future__ import annotations

import argparse
import contextlib
import datetime
import fcntl
import json
import logging
import os
import re
import secrets
import shutil
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator, Sequence
from pathlib import Path

from .apt import KEYRING_ENV, MIRROR_ENV, Apt, output_tail, run_tool
from .prefixes import (
    CACHE_ENV,
    RECIPES,
    Machine,
    Prefix,
    ProvisionError,
    Recipe,
    cache_root,
    machine,
    prefix_path,
    recipe,
)

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

#: The stamp file at the top of a prefix, written last.
STAMP = "provisioned.json"
_STAMP_FORMAT = 1
_LOCK_TIMEOUT = 20 * 60.0
_VERSION = re.compile(r"\bVer\s+(\d+\.\d+\.\d+\S*)")

_log = logging.getLogger(__name__)


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
            f"{output_tail(proc.stdout + proc.stderr)}"
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
    apt = Apt(root_dir / ".apt" / f"{wanted.suite}-{arch.arch}", wanted.suite, arch, mirror)
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
            run_tool(["dpkg-deb", "-x", str(deb), str(work)], f"unpacking {deb.name}")
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
