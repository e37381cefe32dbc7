#!/usr/bin/env bash
# The project's test command: installs what the tests need (Python packages, a local
# redis-server and Node.js for the gRPC client test in another language), then runs them all.
set -euo pipefail
cd "$(dirname "$0")/.."
if ! command -v redis-server >/dev/null || ! command -v redis-cli >/dev/null; then
    echo "installing redis-server (Debian package) for the integration tests" >&2
    SUDO=""; [ "$(id -u)" -ne 0 ] && SUDO="sudo"
    $SUDO apt-get install -y -qq redis-server >/dev/null 2>&1 \
        || { $SUDO apt-get update -qq >/dev/null && $SUDO apt-get install -y -qq redis-server >/dev/null; }
fi
if ! command -v node >/dev/null || ! command -v npm >/dev/null; then
    echo "installing nodejs and npm (Debian packages) for the Node.js client test" >&2
    SUDO=""; [ "$(id -u)" -ne 0 ] && SUDO="sudo"
    $SUDO apt-get install -y -qq nodejs npm >/dev/null 2>&1 \
        || { $SUDO apt-get update -qq >/dev/null && $SUDO apt-get install -y -qq nodejs npm >/dev/null; }
fi
python3 -m pip install --quiet --disable-pip-version-check --root-user-action=ignore -e '.[test]'
exec python3 -m pytest -q -p no:cacheprovider "$@"
