"""Servers in Docker containers (``testcontainers``), for machines that have Docker.

Contract: :class:`ContainerServer` runs the official image of a variant's
flavour and version (``mariadb:10.11`` for the machine-install variant,
``mariadb:11.8``, ``mysql:9.7``) with the flavour's binlog flags, behind the
:class:`~replica_client.testing.server.ExternalServer` attributes. Variants
that need files on the server (``encrypt``, ``tls``) are refused with
:class:`ServerStateError`; so is ``binlog_files()``, the files live inside the
container. Docker is never required: :meth:`ContainerServer.docker_available`
says whether it can be used.
"""

from __future__ import annotations

import importlib
import secrets
import time
from pathlib import Path
from typing import Any

from ..dsn import format_dsn
from .errors import ServerStartError, ServerStateError
from .server import ExternalServer
from .server_kinds import kind_of
from .variant import ServerVariant

__all__ = ["IMAGES", "ContainerServer"]

#: (flavor, version) -> the image that runs it.
IMAGES = {
    ("mariadb", None): "mariadb:10.11",
    ("mariadb", "11.8"): "mariadb:11.8",
    ("mysql", "9.7"): "mysql:9.7",
}


class ContainerServer(ExternalServer):
    """A server in a Docker container; see the module docstring for the contract."""

    def __init__(self, variant: ServerVariant | None = None, image: str | None = None) -> None:
        variant = variant if variant is not None else ServerVariant()
        if variant.encrypt or variant.tls:
            raise ServerStateError(f"variant {variant.label} is not supported in a container")
        super().__init__(format_dsn("root", secrets.token_urlsafe(18), "127.0.0.1", 3306), variant)
        self.image = image if image is not None else IMAGES[(variant.flavor, variant.version)]
        self._container: Any = None

    def start(self) -> None:
        from testcontainers.core.container import DockerContainer

        env = "MYSQL" if self.flavor == "mysql" else "MARIADB"
        args = kind_of(self.variant.flavor).binlog_args(self.variant)
        container = (
            DockerContainer(self.image)
            .with_env(f"{env}_ROOT_PASSWORD", self.password)
            .with_env(f"{env}_DATABASE", "test")
            .with_exposed_ports(3306)
            .with_command(" ".join([*args, *self.variant.extra_args]))
        )
        container.start()
        self._container = container
        self.host = str(container.get_container_host_ip())
        self._port = int(container.get_exposed_port(3306))
        deadline = time.monotonic() + self.startup_timeout
        while True:
            try:
                super().start()
                return
            except ServerStartError:
                if time.monotonic() > deadline:
                    self.stop()
                    raise
                time.sleep(0.5)

    def stop(self, timeout: float = 60.0) -> None:
        super().stop(timeout)
        container, self._container = self._container, None
        if container is not None:
            container.stop()

    def binlog_files(self) -> list[Path]:
        raise ServerStateError(f"{self!r}: binlog files live inside the container")

    @staticmethod
    def docker_available() -> bool:
        """True when ``testcontainers`` is importable and a Docker engine answers."""
        try:
            docker = importlib.import_module("docker")
            importlib.import_module("testcontainers.core.container")
        except ImportError:
            return False
        try:
            client = docker.from_env()
            try:
                return bool(client.ping())
            finally:
                client.close()
        except Exception:
            return False
