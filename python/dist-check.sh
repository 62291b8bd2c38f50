#!/usr/bin/env bash
# The Python package as a user gets it, not as python/test.sh builds it in
# place: the sdist is built, a wheel is built from the unpacked sdist alone
# (so a file the sdist lacks fails here), the wheel is checked for
# manylinux 2.17 (glibc 2.17: any Linux of the last ten years), and it is
# installed into a clean environment, away from the checkout, where the
# Python tests run against it with the oldest dependency versions
# pyproject.toml accepts (python/tests/oldest-versions.txt, which have
# wheels for CPython 3.9 to 3.11; on other versions, with the newest), and
# mypy's stubtest checks that the type stubs (_native.pyi) say what the
# compiled module has. The newest versions are python/test.sh's: the same
# sources, built in place, run the same tests there, so they are not run a
# second time here.
#
# The manylinux build links with zig (PyPI's `ziglang`) for glibc 2.17;
# where zig cannot be had, the wheel is built for this machine's glibc
# with a notice. Arguments go to pytest. Work files: $B3BATCH_DIST_DIR, or
# a temporary directory removed at the end.
set -euo pipefail
cd "$(dirname "$0")/.."
root=$PWD

work=${B3BATCH_DIST_DIR:-}
if [ -z "$work" ]; then
    work=$(mktemp -d)
    trap 'rm -rf "$work"' EXIT
fi
mkdir -p "$work"

# maturin (and zig) in an environment of their own.
"${PYTHON:-python3}" -m venv "$work/tools"
"$work/tools/bin/python" -m pip install --quiet --disable-pip-version-check "maturin>=1.9,<2"
compatibility=(--compatibility manylinux2014 --zig)
if ! "$work/tools/bin/python" -m pip install --quiet --disable-pip-version-check ziglang \
    || ! "$work/tools/bin/python" -m ziglang version >/dev/null 2>&1; then
    echo "notice: zig is not available: the wheel is built for this machine's glibc, not checked for manylinux 2.17" >&2
    compatibility=(--compatibility linux)
fi
export PATH="$work/tools/bin:$PATH"

echo "== sdist"
rm -rf "$work/dist" "$work/sdist"
maturin sdist --manifest-path python/Cargo.toml --out "$work/dist"
sdists=("$work"/dist/blake3_batch-*.tar.gz)
[ "${#sdists[@]}" = 1 ] || { echo "expected one sdist, found: ${sdists[*]}" >&2; exit 1; }
mkdir "$work/sdist"
# With the time of extraction, not the archive's (-m): a target directory
# kept from an earlier run (a reused B3BATCH_DIST_DIR) would otherwise take
# the sources for those it built from and pack its old module.
tar -xmzf "${sdists[0]}" -C "$work/sdist"
unpacked=("$work"/sdist/blake3_batch-*)

echo "== wheel, from the unpacked sdist alone"
# Its own target directory: nothing built from the checkout is reused.
(cd "${unpacked[0]}" && CARGO_TARGET_DIR="$work/target" \
    maturin build --strip "${compatibility[@]}" --out "$work/dist")
wheels=("$work"/dist/blake3_batch-*.whl)
[ "${#wheels[@]}" = 1 ] || { echo "expected one wheel, found: ${wheels[*]}" >&2; exit 1; }
wheel=${wheels[0]}
echo "$(basename "$wheel"): $(($(wc -c < "$wheel") / 1024)) KiB"
# What users import, and nothing of the build beside it.
"$work/tools/bin/python" - "$wheel" <<'EOF'
import sys, zipfile

names = set(zipfile.ZipFile(sys.argv[1]).namelist())
package = {n for n in names if not n.startswith("blake3_batch-")}
expected = {f"blake3_batch/{n}" for n in ["__init__.py", "_native.pyi", "_converted.py", "_duckdb.py", "_polars.py", "_ray_columns.py", "_unsliced.py", "_validated.py", "duckdb.py", "polars.py", "py.typed", "ray.py"]}
native = {n for n in package if n.startswith("blake3_batch/_native.") and n.endswith((".so", ".pyd"))}
if len(native) != 1 or package != expected | native:
    sys.exit(f"the wheel holds {sorted(package)}: expected {sorted(expected)} and one native module")
EOF
if [ "${compatibility[1]}" = manylinux2014 ]; then
    case $wheel in
        *manylinux_2_17_*) ;;
        *) echo "the wheel $wheel is not tagged manylinux_2_17" >&2; exit 1 ;;
    esac
fi

echo "== tests against the installed wheel"
rm -rf "$work/venv"
"${PYTHON:-python3}" -m venv "$work/venv"
if "$work/venv/bin/python" -c 'import sys; sys.exit(not (3, 9) <= sys.version_info[:2] <= (3, 11))'; then
    echo "with the oldest dependency versions pyproject.toml accepts"
    "$work/venv/bin/python" -m pip install --quiet --disable-pip-version-check \
        -r python/tests/oldest-versions.txt pytest hypothesis
    "$work/venv/bin/python" -m pip install --quiet --disable-pip-version-check --no-deps "$wheel"
    # The wheel went in without its dependencies, so the pins are what
    # runs; pip check fails if pyproject.toml's floors rose above them.
    "$work/venv/bin/python" -m pip check
else
    echo "notice: the oldest versions have wheels for CPython 3.9 to 3.11 only: tested with the newest"
    "$work/venv/bin/python" -m pip install --quiet --disable-pip-version-check "${wheel}[test]"
fi
# From the repository root through pytest's own script, so that the sources
# in python/blake3_batch never shadow the installed package; the imported
# package must be the wheel's.
"$work/venv/bin/python" -c '
import sys, blake3_batch
if "site-packages" not in blake3_batch.__file__:
    sys.exit(f"imported {blake3_batch.__file__}, not the installed wheel")'
(cd "$root" && "$work/venv/bin/pytest" -q -p no:cacheprovider python/tests "$@")

echo "== type stubs against the compiled module"
"$work/venv/bin/python" -m pip install --quiet --disable-pip-version-check mypy
# pyarrow and Ray ship no type information: only this package's is checked.
printf '[mypy]\nignore_missing_imports = True\n' > "$work/mypy.ini"
(cd "$work" && "$work/venv/bin/python" -m mypy.stubtest --mypy-config-file "$work/mypy.ini" blake3_batch)
