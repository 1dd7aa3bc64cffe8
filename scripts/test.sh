#!/usr/bin/env bash
# Full check: install with the test extra, lint, type-check, run the tests.
# Extra arguments go to pytest, e.g. scripts/test.sh -k harness -x
# Integration tests start private servers: MariaDB from the machine's install,
# MariaDB 11.8 and MySQL 9.7 from the server cache (.ci/run provisions them; a
# missing one is provisioned on first use), or use
# REPLICA_CLIENT_TEST_DSN=mariadb://user:pass@host:port.
set -euo pipefail

cd "$(dirname "${BASH_SOURCE[0]}")/.."

python3 -m pip install -q --disable-pip-version-check -e '.[test,spark]'

echo "== ruff check"
python3 -m ruff check .

echo "== mypy"
# The paths come from [tool.mypy] files in pyproject.toml; mypy refuses a listed
# directory that holds no Python file yet, so those are left out until they do.
mapfile -t mypy_paths < <(python3 - <<'PY'
import pathlib
import tomllib

config = tomllib.loads(pathlib.Path("pyproject.toml").read_text())
for entry in config["tool"]["mypy"]["files"]:
    path = pathlib.Path(entry)
    if path.is_file() or any(path.rglob("*.py")):
        print(entry)
PY
)
python3 -m mypy "${mypy_paths[@]}"

echo "== pytest"
python3 -m pytest -q -p no:cacheprovider "$@"

# The decoder, the packet framer and the session run on the compiled accelerator
# when it is built; run their suites again on the pure-Python path: results must
# be identical.
if [ "$#" -eq 0 ]; then
    echo "== pytest (pure-Python decoder, framing and session)"
    REPLICA_CLIENT_PURE_PYTHON=1 python3 -m pytest -q -p no:cacheprovider \
        --ignore=tests/binlog/test_speedups.py \
        tests/binlog tests/fixtures_walk tests/integration/test_oracle_files.py \
        tests/integration/test_generated_oracle.py tests/wire \
        tests/aio tests/test_session.py

    # The streaming suites again on uvloop's event loop (a common production
    # choice): its transports are not asyncio's classes, and reading, pausing
    # and closing follow libuv's timing.
    echo "== pytest (the streaming suites on uvloop)"
    REPLICA_CLIENT_TEST_LOOP=uvloop python3 -m pytest -q -p no:cacheprovider \
        tests/aio tests/integration tests/faults tests/test_snapshot.py
fi
