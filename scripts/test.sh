#!/usr/bin/env bash
# The project's test command: installs what the tests need, then runs them all.
set -euo pipefail
cd "$(dirname "$0")/.."
python3 -m pip install --quiet --disable-pip-version-check --root-user-action=ignore -e '.[test]'
exec python3 -m pytest -q -p no:cacheprovider "$@"
