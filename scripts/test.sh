#!/usr/bin/env bash
# The project's test command: installs what the tests need (Debian packages for a local
# redis-server and for Node.js, which runs the gRPC client test in another language; the
# project with its test extras, which compiles the optional core when there is a C
# compiler), then runs them all, and runs the algorithm property tests again on the
# pure-Python path (MTA_NO_EXTENSIONS=1). Both passes run in two worker processes
# (pytest-xdist: the machines this runs on have two cores; the tests share no state but
# their session's servers, which each worker starts for itself). Arguments go to pytest
# and run that one pass, in this process.
set -euo pipefail
cd "$(dirname "$0")/.."
SUDO=""; [ "$(id -u)" -ne 0 ] && SUDO="sudo"
need() {  # need COMMAND... -- PACKAGE...: install the Debian packages unless every command exists
    local commands=() missing=""
    while [ "$1" != "--" ]; do commands+=("$1"); shift; done; shift
    for c in "${commands[@]}"; do command -v "$c" >/dev/null || missing=1; done
    [ -z "$missing" ] && return 0
    echo "installing $* (Debian packages) for the tests" >&2
    $SUDO apt-get install -y -qq "$@" >/dev/null 2>&1 \
        || { $SUDO apt-get update -qq >/dev/null && $SUDO apt-get install -y -qq "$@" >/dev/null; }
}
need redis-server redis-cli -- redis-server
need node npm -- nodejs npm
python3 -m pip install --quiet --disable-pip-version-check --root-user-action=ignore -e '.[test]'
if [ $# -gt 0 ]; then
    exec python3 -m pytest -q -p no:cacheprovider "$@"
fi
python3 -m pytest -q -p no:cacheprovider -n 2
echo "the algorithm property tests again, on the pure-Python path (MTA_NO_EXTENSIONS=1)" >&2
# (the staleness check of compiled modules, and the stored typed core's levels, have nothing
# to check on this path: windows take the typed cores only compiled)
MTA_NO_EXTENSIONS=1 exec python3 -m pytest -q -p no:cacheprovider -n 2 \
    tests/test_typed_cores.py tests/test_typed_amta.py tests/test_typed_fiba.py tests/test_algorithms.py \
    tests/test_compiled_core.py tests/test_typed_mq.py tests/test_stream_typed.py tests/test_stream_final_typed.py tests/test_stream_edges.py \
    tests/test_stream_snapshot.py \
    tests/test_typed_ordered.py \
    tests/test_window.py tests/test_typed_record.py tests/test_typed_record_ooo.py tests/test_stored_compiled.py tests/test_stored_typed.py \
    tests/test_insert_many_columns.py --deselect tests/test_compiled_core.py::test_compiled_modules_are_not_older_than_their_sources \
    --deselect tests/test_stored_typed.py::test_checkpoint_and_levels_are_the_object_algorithms
