#!/usr/bin/env bash
# Builds the fuzz targets (cargo-fuzz, libFuzzer, AddressSanitizer, nightly)
# and runs each for SECONDS (default 30) from the committed seeds plus a
# local corpus (fuzz/corpus, not committed). Prints libFuzzer's final stats;
# fails on any finding (the input is left in fuzz/artifacts/).
#   fuzz/run.sh [SECONDS] [TARGET...]
set -euo pipefail
cd "$(dirname "$0")"
seconds=${1:-30}
shift || true
targets=("$@")
[ ${#targets[@]} -gt 0 ] || targets=(packed records_and_slices extended invalid_input profile check_lines arrow)

if ! cargo +nightly --version >/dev/null 2>&1; then
    echo "fuzz: skipped, no nightly toolchain (rustup toolchain install nightly)"
    exit 0
fi
if ! cargo +nightly fuzz --version >/dev/null 2>&1; then
    cargo install cargo-fuzz --locked
fi
cargo +nightly fuzz build -O
for target in "${targets[@]}"; do
    mkdir -p "corpus/$target"
    echo "=== fuzz $target for ${seconds} s"
    cargo +nightly fuzz run -O "$target" "corpus/$target" "seeds/$target" -- \
        -max_total_time="$seconds" -rss_limit_mb=4096 -print_final_stats=1 2>&1 \
        | grep -E "^stat::number_of_executed_units|^stat::peak_rss|ERROR|SUMMARY|panicked|Done" || true
    # The profile target's scratch file, one per fuzzing process.
    rm -f /dev/shm/b3batch-fuzz-profile-*.json
    # libFuzzer leaves a crash-*/leak-*/oom-* file for every finding.
    if compgen -G "artifacts/$target/*" >/dev/null; then
        echo "fuzz $target: findings in fuzz/artifacts/$target" >&2
        exit 1
    fi
done
