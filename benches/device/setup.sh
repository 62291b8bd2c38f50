# Sourced by the scripts beside it on a lent NVIDIA machine: the Vulkan
# loader from the carried .gl/ debs, the carried .dev/ binaries on PATH,
# $OUT for what comes back, and `step` to mark each part of the log.
set -u
OUT=${OUT:-/tmp/out}
mkdir -p "$OUT"
for f in .gl/*.deb; do dpkg -x "$f" /; done
ldconfig
export XDG_RUNTIME_DIR=/tmp PATH="$PWD/.dev:$PATH"
step() { echo "=== $* ($(date +%T))"; }
