#!/usr/bin/env bash
# The Python package's tests: builds and installs python/ with its test
# dependencies into a virtual environment (python/.venv, or $B3BATCH_VENV),
# then runs pytest on python/tests. Arguments go to pytest.
set -euo pipefail
cd "$(dirname "$0")/.."

venv=${B3BATCH_VENV:-python/.venv}
if [ ! -x "$venv/bin/python" ]; then
    "${PYTHON:-python3}" -m venv "$venv" || {
        echo "cannot create a virtual environment: install Python 3.9+ with venv (apt-get install python3-venv)" >&2
        exit 1
    }
fi
"$venv/bin/python" -m pip install --quiet --disable-pip-version-check "./python[test]"
# From the repository root through pytest's own script (not `python -m`,
# which would put the current directory first on sys.path), so that the
# sources in python/blake3_batch, without the compiled module, never shadow
# the installed package.
"$venv/bin/pytest" -q -p no:cacheprovider python/tests "$@"
