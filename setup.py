"""Build hook: the compiled accelerator (metadata lives in pyproject.toml).

``replica_client._speedups`` decodes row images in C. The package also runs
without it, on its pure-Python path, but only when asked: a build that cannot
compile the extension (no C compiler, no ``Python.h``) stops with a message
that says what to install, instead of installing a package that is silently
slower and fails the test suite later. ``REPLICA_CLIENT_PURE_PYTHON=1`` in the
environment of the install skips the extension on purpose (at run time the
same variable selects the pure-Python path with the accelerator built).
"""

from __future__ import annotations

import os
import shutil
import sysconfig
from pathlib import Path

from setuptools import Extension, setup
from setuptools.command.build_ext import build_ext
from setuptools.errors import CCompilerError, ExecError, PlatformError

PURE_PYTHON_ENV = "REPLICA_CLIENT_PURE_PYTHON"
PURE_PYTHON = os.environ.get(PURE_PYTHON_ENV, "") not in ("", "0")

SPEEDUPS = Extension(
    "replica_client._speedups",
    sources=[
        "replica_client/_speedups.c",
        "replica_client/csrc/rows.c",
        "replica_client/csrc/rowplan.c",
        "replica_client/csrc/textrows.c",
        "replica_client/csrc/changes.c",
        "replica_client/csrc/jsontext.c",
        "replica_client/csrc/framing.c",
        "replica_client/csrc/header.c",
        "replica_client/csrc/maker.c",
    ],
    depends=["replica_client/csrc/speedups.h", "replica_client/csrc/rowplan.h"],
)


class AcceleratorBuildError(CCompilerError):
    """The accelerator could not be built; the message says what to install."""


def _missing() -> str:
    """What the machine lacks for the build, as far as can be told."""
    compiler = os.environ.get("CC") or str(sysconfig.get_config_var("CC") or "cc")
    program = compiler.split()[0] if compiler.split() else "cc"
    lacking = []
    if shutil.which(program) is None:
        lacking.append(f"a C compiler ({program!r} is not on PATH)")
    if not (Path(sysconfig.get_paths()["include"]) / "Python.h").is_file():
        lacking.append(f"the Python headers (no Python.h in {sysconfig.get_paths()['include']})")
    return " and ".join(lacking) or "nothing obvious: see the compiler's output above"


class BuildAccelerator(build_ext):
    """build_ext that fails with what to install when the accelerator cannot be built."""

    def run(self) -> None:
        try:
            super().run()
        except (CCompilerError, ExecError, PlatformError, OSError) as exc:
            raise AcceleratorBuildError(
                f"cannot build the C accelerator replica_client._speedups ({exc}); "
                f"missing: {_missing()}. On Debian/Ubuntu: sudo apt-get install gcc "
                "python3-dev, then run the same pip install again. To install without "
                f"the accelerator (pure Python, slower), set {PURE_PYTHON_ENV}=1 for the "
                "install."
            ) from exc


setup(
    ext_modules=[] if PURE_PYTHON else [SPEEDUPS],
    cmdclass={"build_ext": BuildAccelerator},
)
