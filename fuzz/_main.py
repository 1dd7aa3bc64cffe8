"""Shared ``main`` of the atheris entry points: seeds a corpus, then fuzzes."""

from __future__ import annotations

import sys
import tempfile
from collections.abc import Callable
from pathlib import Path

import atheris

__all__ = ["main"]


def main(target: Callable[[bytes], None], seeds: Callable[[], list[bytes]]) -> None:
    """Run libFuzzer over ``target``; without a corpus directory argument, a
    temporary one is seeded from ``seeds()``. Other arguments go to libFuzzer
    (``-runs=1000000``, ``-max_total_time=60``, ``-rss_limit_mb=2048`` ...)."""
    argv = list(sys.argv)
    if not any(Path(a).is_dir() for a in argv[1:] if not a.startswith("-")):
        corpus = Path(tempfile.mkdtemp(prefix="rc-fuzz-corpus-"))
        for i, seed in enumerate(seeds()):
            (corpus / f"seed-{i:05d}").write_bytes(seed)
        argv.append(str(corpus))
    atheris.Setup(argv, target)
    atheris.Fuzz()
