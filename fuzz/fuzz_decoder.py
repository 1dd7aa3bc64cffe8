"""atheris entry point: the decoder (see targets.py for the invariant).

python fuzz/fuzz_decoder.py -runs=1000000 -rss_limit_mb=2048 -timeout=10 [corpus_dir]
"""

from __future__ import annotations

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import atheris

with atheris.instrument_imports(include=["replica_client"]):
    from fuzz.targets import decoder_one_input, decoder_seeds

from fuzz._main import main

if __name__ == "__main__":
    main(decoder_one_input, decoder_seeds)
