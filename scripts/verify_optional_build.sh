#!/usr/bin/env bash
# Fresh-venv checks of the optional compiled core (issue 20): python -m build, the wheel, the
# sdist, CC=false (in a pty, so the one line shows at pip's default verbosity), pip install -e .
# Usage: bash scripts/verify_optional_build.sh [WORKDIR]   (clones the committed HEAD)
set -u
V="${1:-$(mktemp -d /tmp/mta-i20.XXXXXX)}"; REPO="$(cd "$(dirname "$0")/.." && pwd)"; mkdir -p "$V"; cd "$V"; rm -rf src dist A B C D venv-build
python3 -m venv venv-build && venv-build/bin/pip install -q build 2>&1 | grep -v Location
git clone -q "$REPO" src && git -C src checkout -q "$(git -C "$REPO" rev-parse HEAD)" && git -C src log --oneline -1
probe='import mta, mta.algorithms.typed as p; print("COMPILED", mta.COMPILED, p.__file__)'
echo "== python -m build"; /usr/bin/time -f "build: %e s" $V/venv-build/bin/python -m build --outdir $V/dist $V/src > build.log 2>&1; tail -1 build.log; ls -l dist
tar tzf dist/mta-0.1.0.tar.gz | grep -c '\.c$' | sed 's/^/.c files in sdist: /'
python3 -m zipfile -l dist/*.whl | grep -E 'typed'
echo "== A: fresh venv, the wheel"; python3 -m venv A && A/bin/pip install -q dist/*.whl pytest==9.0.3 2>&1 | grep -v Location; A/bin/python -c "$probe"
(cd $V && A/bin/python -m pytest -q -p no:cacheprovider --noconftest src/tests/test_compiled_core.py 2>&1 | tail -1)
echo "== B: fresh venv, the sdist"; python3 -m venv B && B/bin/pip install -q dist/*.tar.gz 2>&1 | grep -v Location; B/bin/python -c "$probe"
echo "== C: fresh venv, CC=false pip install . (in a pty, pip's default verbosity)"; python3 -m venv C
CC=false script -qec "$V/C/bin/pip install $V/src pytest==9.0.3" /dev/null > C.log; echo "rc=$?"; grep -a "mta:" C.log; grep -a "Successfully installed" C.log | cut -c1-60
C/bin/python -c "$probe"; (cd $V && C/bin/python -m pytest -q -p no:cacheprovider --noconftest src/tests/test_compiled_core.py 2>&1 | tail -1)
rm -rf src/build
echo "== D: fresh venv, pip install -e ."; python3 -m venv D && D/bin/pip install -q -e "$V/src" pytest==9.0.3 2>&1 | grep -v Location; D/bin/python -c "$probe"; MTA_NO_EXTENSIONS=1 D/bin/python -c "$probe"
(cd src && $V/D/bin/python -m pytest -q -p no:cacheprovider --noconftest tests/test_compiled_core.py 2>&1 | tail -1; MTA_NO_EXTENSIONS=1 $V/D/bin/python -m pytest -q -p no:cacheprovider --noconftest tests/test_compiled_core.py 2>&1 | tail -1)
