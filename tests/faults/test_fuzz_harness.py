"""The coverage-guided harnesses in fuzz/ run in CI for a few seconds each (the
long run is ``python fuzz/fuzz_decoder.py -runs=1000000``, see fuzz/targets.py),
and their seeds go through the targets in-process first."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

import pytest

from fuzz import targets

__all__: list[str] = []

ROOT = Path(__file__).resolve().parents[2]


def test_seeds_pass_the_targets() -> None:
    seeds = targets.decoder_seeds()
    assert len(seeds) > 100  # windows of the real fixture binlogs, not only the synthetic log
    for seed in seeds:
        targets.decoder_one_input(seed)
    for seed in targets.session_seeds():
        targets.session_one_input(seed)


def test_regressions() -> None:
    """Inputs the fuzzer once crashed on (fuzz/regressions/<target>-<what>)."""
    found = sorted((ROOT / "fuzz" / "regressions").iterdir())
    assert found
    run = {
        "decoder": targets.decoder_one_input,
        "session": targets.session_one_input,
        "framer": targets.framer_one_input,
    }
    for path in found:
        run[path.name.split("-")[0]](path.read_bytes())


@pytest.mark.parametrize("name", ["decoder", "session", "framer"])
def test_short_fuzz_run(name: str) -> None:
    proc = subprocess.run(
        [
            sys.executable,
            str(ROOT / "fuzz" / f"fuzz_{name}.py"),
            "-max_total_time=5",
            "-rss_limit_mb=2048",
            "-timeout=10",
            "-print_final_stats=1",
        ],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    out = proc.stdout + proc.stderr
    assert proc.returncode == 0, out[-4000:]
    done = re.search(r"Done (\d+) runs", out)
    assert done is not None, out[-4000:]
    assert int(done.group(1)) > 1000
