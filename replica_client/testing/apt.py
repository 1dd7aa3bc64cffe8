"""Debian's ``apt-get``/``apt-cache`` on private lists, for provisioning a prefix.

:class:`Apt` fetches the package lists of one Debian suite into a state
directory of the server cache, resolves a recipe's packages and their
dependencies, and downloads the exact candidate versions; nothing of the
system's apt configuration or package database is used. :func:`run_tool` runs
a tool (``apt-get``, ``dpkg-deb``) with plain-C messages and raises
:class:`~replica_client.testing.prefixes.ProvisionError` with its output when
it fails. Only the standard library is imported.
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from .prefixes import CACHE_ENV, Machine, ProvisionError

__all__ = [
    "DEFAULT_KEYRING",
    "DEFAULT_MIRROR",
    "KEYRING_ENV",
    "MIRROR_ENV",
    "Apt",
    "output_tail",
    "run_tool",
]

MIRROR_ENV = "REPLICA_CLIENT_DEBIAN_MIRROR"
KEYRING_ENV = "REPLICA_CLIENT_DEBIAN_KEYRING"
DEFAULT_MIRROR = "http://deb.debian.org/debian"
DEFAULT_KEYRING = "/usr/share/keyrings/debian-archive-keyring.gpg"
_APT_TIMEOUT = 15 * 60.0
_TAIL_LINES = 25
#: Packages a server never needs at run time, however its dependencies say.
_NOT_NEEDED = re.compile(r"perl|perl-base|perl-modules-.+|libperl.*|c?debconf(-2\.0)?|dpkg")


def output_tail(text: str, lines: int = _TAIL_LINES) -> str:
    """The last ``lines`` lines of a tool's output, for an error message."""
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


def run_tool(argv: list[str], what: str) -> subprocess.CompletedProcess[str]:
    """Run a tool; ProvisionError with its output when it fails."""
    proc = _exec(argv, what)
    if proc.returncode != 0:
        raise ProvisionError(
            f"{what} failed with exit code {proc.returncode}: {' '.join(argv[:2])} ...\n"
            f"{output_tail(proc.stdout + proc.stderr)}"
        )
    return proc


class Apt:
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
                f"to a reachable Debian mirror.\n{output_tail(output)}"
            )

    def dependencies(self, packages: Sequence[str]) -> list[str]:
        """``packages`` and everything they depend on, less :data:`_NOT_NEEDED`."""
        proc = run_tool(
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
        proc = run_tool(
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
                "replica_client/testing/prefixes.py"
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
                f"\n{output_tail(output)}"
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
