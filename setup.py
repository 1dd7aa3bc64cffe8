"""Build hook: the optional compiled accelerator (metadata lives in pyproject.toml).

``replica_client._speedups`` decodes row images in C. It is optional: where no
compiler is available the build goes on without it and the package runs on
its pure-Python path (``REPLICA_CLIENT_PURE_PYTHON=1`` selects that path too).
"""

from __future__ import annotations

from setuptools import Extension, setup

setup(
    ext_modules=[
        Extension(
            "replica_client._speedups",
            sources=[
                "replica_client/_speedups.c",
                "replica_client/csrc/rows.c",
                "replica_client/csrc/rowplan.c",
                "replica_client/csrc/changes.c",
                "replica_client/csrc/jsontext.c",
                "replica_client/csrc/framing.c",
                "replica_client/csrc/header.c",
                "replica_client/csrc/maker.c",
            ],
            depends=["replica_client/csrc/speedups.h", "replica_client/csrc/rowplan.h"],
            optional=True,
        )
    ]
)
