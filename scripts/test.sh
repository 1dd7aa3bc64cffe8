#!/usr/bin/env bash
# Full check: install with the test extra, lint, type-check, run the tests.
# Extra arguments go to pytest, e.g. scripts/test.sh -k harness -x
# Integration tests start private MariaDB servers (mariadbd from the machine's
# install), or use REPLICA_CLIENT_TEST_DSN=mariadb://user:pass@host:port.
set -euo pipefail

cd "$(dirname "${BASH_SOURCE[0]}")/.."

python3 -m pip install -q --disable-pip-version-check -e '.[test]'

echo "== ruff check"
python3 -m ruff check .

echo "== mypy"
python3 -m mypy

echo "== pytest"
python3 -m pytest -q -p no:cacheprovider "$@"
