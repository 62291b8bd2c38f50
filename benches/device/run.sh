#!/bin/bash
# The GPU checks on a lent NVIDIA machine (see ../shared/device/README.md):
# build here, carry the binaries in .dev/ and the Vulkan loader's debs in
# .gl/, then run this from the project root there. Writes everything under
# $OUT (run it as `bash benches/device/run.sh 2>&1 | tee $OUT/run.log`). Steps,
# each under its own timeout:
#   1. the card, the loader, b3batch info;
#   2. the vectors, the GPU tests and the GPU-buffer tests on the card;
#   3. the card's own figures: a plain CUDA kernel and pinned copies (CuPy);
#   4. b3batch bench, GPU columns, 256 MiB per case: two workgroup sizes,
#      both uploads, 1 GiB of 1 KiB blobs, and blobs of 4 KiB to 1 MiB (trees);
#   5. calibrate, then Auto against the forced choices from 1 MiB to 1 GiB
#      (auto.sh).
# Build here first:
#   cargo build --release --bin b3batch
#   cargo test --release --no-run --test vectors --test gpu --test gpu_buffers
#   mkdir -p .dev && cp target/release/b3batch .dev/ && for t in vectors gpu gpu_buffers; do
#     cp "$(ls -t target/release/deps/$t-* | grep -v '\.d$' | head -1)" .dev/test-$t; done
set -u
OUT=${OUT:-/tmp/out}
mkdir -p "$OUT"
for f in .gl/*.deb; do dpkg -x "$f" /; done
ldconfig
export XDG_RUNTIME_DIR=/tmp PATH="$PWD/.dev:$PATH" B3BATCH_REQUIRE_GPU=1
export B3BATCH_PROFILE="$OUT/profile.json"
step() { echo "=== $* ($(date +%T))"; }

step card
nvidia-smi --query-gpu=name,driver_version,clocks.max.sm,pcie.link.gen.current,pcie.link.width.current --format=csv
lscpu | grep -E "Model name|^CPU\(s\)"
timeout 60 b3batch info 2>&1

step tests on the card
for t in vectors gpu gpu_buffers; do
    timeout 120 ".dev/test-$t" --test-threads 8 2>&1 | grep -E "test result|panicked|FAILED|error"
done

step card reference
timeout 120 python3 benches/device/cuda_reference.py 2>&1

big=268435456
for wg in 64 256; do
    step bench workgroup $wg, copy upload
    B3BATCH_GPU_WORKGROUP=$wg timeout 100 b3batch --quiet --gpu-memory 2048 bench --backend gpu \
        --sizes 64,1024,mixed --bytes $big --reps 5 --json "$OUT/bench-wg$wg.json" 2>&1
done
step bench direct upload
B3BATCH_GPU_UPLOAD=direct timeout 60 b3batch --quiet --gpu-memory 2048 bench --backend gpu \
    --sizes 1024,mixed --bytes $big --reps 5 2>&1
step bench 1 GiB of 1 KiB
timeout 90 b3batch --quiet --gpu-memory 4096 bench --backend gpu --sizes 1024 \
    --bytes 1073741824 --reps 3 2>&1

step bench blobs over 1 KiB, as trees on the card
timeout 60 b3batch --quiet --gpu-memory 2048 bench --backend gpu --sizes 4096,65536,1048576 \
    --bytes $big --reps 3 2>&1

step calibrate and auto
OUT="$OUT" bash "$(dirname "$0")/auto.sh" 2>&1 | grep -v "^=== done"
step done
