"""Provisioning server binaries from Debian packages into a private prefix.

Contract checked here: the cache lives where the environment says; a real
provisioning (MariaDB 11.8 from trixie, into a fresh cache) records its packages
and versions in the stamp and leaves binaries that run; two processes
provisioning at once download once (the lock); provisioning again is a no-op
that touches no apt tool; a corrupt or half-deleted prefix is detected and made
again; failures (no apt tools, an unreachable mirror, a missing package) raise
ProvisionError saying what to do and leave no partial prefix behind. Fake apt
tools on PATH stand in where a real download is not the point.
"""

from __future__ import annotations

import json
import os
import shutil
import socket
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from replica_client.testing import provision
from replica_client.testing.errors import ServerStartError

__all__: list[str] = []

FLAVOR, VERSION = "mariadb", "11.8"
NAME = f"{FLAVOR}-{VERSION}"


FAKE_APT_GET = """
args = sys.argv[1:]
lists = next(a.split("=", 1)[1] for a in args if a.startswith("-oDir::State::Lists="))
if "update" in args:
    index = pathlib.Path(lists) / "mirror_debian_dists_trixie_main_binary-amd64_Packages"
    index.write_text("")
    sys.exit(0)
sys.exit("E: this fake apt-get only updates")
"""

FAKE_APT_CACHE = """
args = sys.argv[1:]
missing = os.environ["FAKE_MISSING"]
names = [a for a in args if not a.startswith("-") and a not in ("depends", "show")]
for name in names:
    if name == missing:
        continue
    if "depends" in args:
        print(name)
        print("  Depends: libc6")
    else:
        print(f"Package: {name}\\nVersion: 1.0\\nArchitecture: amd64\\n")
if "depends" in args:
    print("libc6")
"""


def write_tool(directory: Path, name: str, body: str) -> None:
    """A fake command-line tool: a Python script ``name`` in ``directory``."""
    directory.mkdir(parents=True, exist_ok=True)
    path = directory / name
    path.write_text(f"#!{sys.executable}\nimport sys, os, pathlib\n{body}")
    path.chmod(0o755)


def put_first_on_path(monkeypatch: pytest.MonkeyPatch, directory: Path) -> None:
    monkeypatch.setenv("PATH", f"{directory}{os.pathsep}{os.environ['PATH']}")


def fake_apt(directory: Path, monkeypatch: pytest.MonkeyPatch, missing: str) -> None:
    """apt-get and apt-cache that know every package but ``missing``, first on PATH."""
    write_tool(directory, "apt-get", FAKE_APT_GET)
    write_tool(directory, "apt-cache", FAKE_APT_CACHE)
    put_first_on_path(monkeypatch, directory)
    monkeypatch.setenv("FAKE_MISSING", missing)


def leftovers(cache: Path) -> list[str]:
    """Temporary build or trash directories left in ``cache``."""
    return sorted(p.name for p in cache.glob(f".{NAME}.*"))


# -- where the cache is -------------------------------------------------------------------------


def test_cache_location_follows_the_environment(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv(provision.CACHE_ENV, str(tmp_path / "mine"))
    assert provision.cache_root() == tmp_path / "mine"
    assert provision.prefix_path("mysql", "9.7") == tmp_path / "mine" / "mysql-9.7"
    monkeypatch.delenv(provision.CACHE_ENV)
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "xdg"))
    assert provision.cache_root() == tmp_path / "xdg" / "replica-client" / "servers"
    assert provision.cache_root(tmp_path / "arg") == tmp_path / "arg"
    with pytest.raises(provision.ProvisionError, match=r"known: mariadb-11\.8, mysql-9\.7"):
        provision.prefix_path("mysql", "5.7")
    assert issubclass(provision.ProvisionError, ServerStartError)


# -- failures say what to do ----------------------------------------------------------------------


def test_without_apt_tools_the_error_says_what_to_do(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("PATH", str(tmp_path / "empty-bin"))
    with pytest.raises(provision.ProvisionError) as info:
        provision.provision(FLAVOR, VERSION, tmp_path / "cache")
    message = str(info.value)
    assert "apt-get" in message and "Debian" in message and provision.CACHE_ENV in message
    assert not (tmp_path / "cache" / NAME).exists()
    assert leftovers(tmp_path / "cache") == []


def test_an_unreachable_mirror_is_named(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    with socket.socket() as closed:  # bound, never listening: connections are refused
        closed.bind(("127.0.0.1", 0))
        mirror = f"http://127.0.0.1:{closed.getsockname()[1]}/debian"
        monkeypatch.setenv(provision.MIRROR_ENV, mirror)
        with pytest.raises(provision.ProvisionError) as info:
            provision.provision(FLAVOR, VERSION, tmp_path / "cache")
    message = str(info.value)
    assert mirror in message and "unreachable" in message and provision.MIRROR_ENV in message
    assert not (tmp_path / "cache" / NAME).exists()
    assert leftovers(tmp_path / "cache") == []


@pytest.mark.parametrize("missing", ["mariadb-client-core", "mariadb-server"])
def test_a_missing_package_is_named(
    missing: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    fake_apt(tmp_path / "fake-bin", monkeypatch, missing)
    with pytest.raises(provision.ProvisionError) as info:
        provision.provision(FLAVOR, VERSION, tmp_path / "cache")
    message = str(info.value)
    assert f"package {missing} is not in Debian trixie" in message
    assert provision.MIRROR_ENV in message
    assert not (tmp_path / "cache" / NAME).exists()
    assert leftovers(tmp_path / "cache") == []


def test_the_command_line_refuses_unknown_servers() -> None:
    result = subprocess.run(
        [sys.executable, "-m", "replica_client.testing.provision", "mysql-5.7"],
        capture_output=True,
        text=True,
        check=False,
        timeout=60,
    )
    assert result.returncode == 2
    assert "unknown server mysql-5.7" in result.stderr


# -- a real provisioning, by two processes at once ----------------------------------------------


@pytest.fixture(scope="module")
def provisioned(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[Path, Path]]:
    """(cache, apt-get log): MariaDB 11.8 provisioned by two concurrent processes."""
    root = tmp_path_factory.mktemp("provision")
    cache, log = root / "cache", root / "apt-get.log"
    real_apt_get = shutil.which("apt-get")
    assert real_apt_get is not None, "apt-get is needed for the real provisioning tests"
    recorder = root / "recorder"
    write_tool(
        recorder,
        "apt-get",
        f"with open({str(log)!r}, 'a') as fh:\n"
        '    fh.write(f\'{os.getppid()} {" ".join(a for a in sys.argv[1:] if a[0] != "-")}\\n\')\n'
        f"os.execv({real_apt_get!r}, [{real_apt_get!r}, *sys.argv[1:]])\n",
    )
    env = {**os.environ, "PATH": f"{recorder}{os.pathsep}{os.environ['PATH']}"}
    command = [
        sys.executable,
        "-m",
        "replica_client.testing.provision",
        NAME,
        "--cache",
        str(cache),
    ]
    runs = [
        subprocess.Popen(
            command, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True
        )
        for _ in range(2)
    ]
    outputs = [run.communicate(timeout=900) for run in runs]
    for run, (out, err) in zip(runs, outputs, strict=True):
        assert run.returncode == 0, out + err
        assert out.startswith(f"{NAME}: 11.8."), out
    yield cache, log
    shutil.rmtree(root, ignore_errors=True)


def stamp_of(cache: Path) -> dict[str, object]:
    data = json.loads((cache / NAME / provision.STAMP).read_text())
    assert isinstance(data, dict)
    return data


@pytest.mark.integration
def test_two_processes_provision_once(provisioned: tuple[Path, Path]) -> None:
    cache, log = provisioned
    downloaders = {line.split()[0] for line in log.read_text().splitlines() if " download " in line}
    assert len(downloaders) == 1, log.read_text()
    assert (cache / f"{NAME}.lock").exists()
    assert leftovers(cache) == []


@pytest.mark.integration
def test_the_stamp_records_packages_and_versions(provisioned: tuple[Path, Path]) -> None:
    cache, _log = provisioned
    stamp = stamp_of(cache)
    assert (stamp["flavor"], stamp["version"], stamp["suite"]) == (FLAVOR, VERSION, "trixie")
    assert str(stamp["server_version"]).startswith("11.8.")
    packages = stamp["packages"]
    assert isinstance(packages, dict)
    for name in ("mariadb-server-core", "mariadb-client-core", "mariadb-server", "mariadb-client"):
        assert str(packages[name]).startswith("1:11.8."), (name, packages[name])
    assert "libc6" in packages
    assert not [name for name in packages if name.startswith(("perl", "libperl", "debconf"))]
    debs = sorted(p.name for p in (cache / ".apt" / "trixie-amd64" / "debs").glob("*.deb"))
    assert len(debs) == len(packages)
    prefix = provision.installed(FLAVOR, VERSION, cache)
    assert prefix is not None and prefix.packages == packages
    assert prefix.server_version == stamp["server_version"]
    for plugin in ("auth_parsec.so", "auth_ed25519.so", "file_key_management.so"):
        assert (prefix.root / "usr/lib/mysql/plugin" / plugin).is_file()
    version = subprocess.run(
        [*prefix.argv("usr/bin/mariadb-binlog"), "--version"],
        capture_output=True,
        text=True,
        check=True,
        timeout=60,
    )
    assert "11.8." in version.stdout


@pytest.mark.integration
def test_provisioning_again_touches_no_apt_tool(
    provisioned: tuple[Path, Path], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    cache, _log = provisioned
    before = stamp_of(cache)
    marker = tmp_path / "apt-was-called"
    poisoned = tmp_path / "poisoned-bin"
    for tool in ("apt-get", "apt-cache", "dpkg-deb"):
        write_tool(poisoned, tool, f"pathlib.Path({str(marker)!r}).touch()\nsys.exit(1)\n")
    put_first_on_path(monkeypatch, poisoned)
    prefix = provision.provision(FLAVOR, VERSION, cache)
    assert prefix.root == cache / NAME
    assert stamp_of(cache) == before
    assert not marker.exists()


@pytest.mark.integration
def test_a_failed_redo_leaves_the_working_prefix_alone(
    provisioned: tuple[Path, Path], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    cache, _log = provisioned
    before = stamp_of(cache)
    fake_apt(tmp_path / "fake-bin", monkeypatch, "mariadb-server-core")
    with pytest.raises(provision.ProvisionError, match="mariadb-server-core"):
        provision.provision(FLAVOR, VERSION, cache, force=True)
    assert stamp_of(cache) == before
    assert provision.installed(FLAVOR, VERSION, cache) is not None
    assert leftovers(cache) == []


@pytest.mark.integration
@pytest.mark.parametrize(
    "damage",
    ["remove the server binary", "corrupt the stamp", "stamp of another suite"],
)
def test_a_broken_prefix_is_detected_and_made_again(
    damage: str, provisioned: tuple[Path, Path]
) -> None:
    cache, _log = provisioned
    root = cache / NAME
    before = stamp_of(cache)
    if damage == "remove the server binary":
        (root / "usr" / "sbin" / "mariadbd").unlink()
    elif damage == "corrupt the stamp":
        (root / provision.STAMP).write_text("{")
    else:
        (root / provision.STAMP).write_text(json.dumps({**before, "suite": "bookworm"}))
    assert provision.installed(FLAVOR, VERSION, cache) is None
    prefix = provision.provision(FLAVOR, VERSION, cache)
    after = stamp_of(cache)
    assert after["build"] != before["build"]
    assert after["packages"] == before["packages"]
    assert (root / "usr" / "sbin" / "mariadbd").is_file()
    assert provision.installed(FLAVOR, VERSION, cache) == prefix
    assert leftovers(cache) == []
