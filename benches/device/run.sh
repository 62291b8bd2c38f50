#!/bin/bash
# The GPU checks on a lent NVIDIA machine (see ../shared/device/README.md):
# build here, carry the binaries in .dev/ and the Vulkan loader's debs in
# .gl/, then run this from the project root there. Writes everything under
# $OUT (run it as `bash benches/device/run.sh 2>&1 | tee $OUT/run.log`). Steps,
# each under its own timeout, the ones the open issue needs first (device
# time is short):
#   1. the card, the loader, b3batch info;
#   2. the vectors and the GPU tests on the card, through the host upload;
#   3. b3batch bench, GPU columns, 256 MiB a case: the copy and the host
#      upload side by side, then 1 GiB of 1 KiB blobs through the host
#      upload, and blobs of 4 KiB to 1 MiB and one of 256 MiB (trees; the
#      last in two subtrees of 128 MiB, longer than a slab) through
#      both, with the packing and copy stages;
#   4. auto.sh: calibrate, then Auto, the forced choices and a forced split
#      from 1 MiB to 1 GiB;
#   5. files.sh: a 4 GiB file hashed whole (`b3batch hash`) on the CPU,
#      the GPU and under Auto with the profile just calibrated, and 100 000
#      small files on one thread and on all;
#   6. the GPU-buffer tests, the other workgroup size, the card's own
#      figures (a plain CUDA kernel and pinned copies, with CuPy).
# Build here first:
#   cargo build --release --bin b3batch
#   cargo test --release --no-run --test vectors --test gpu --test gpu_buffers
#   mkdir -p .dev && cp target/release/b3batch .dev/ && for t in vectors gpu gpu_buffers; do
#     cp "$(ls -t target/release/deps/$t-* | grep -v '\.d$' | head -1)" .dev/test-$t; done
source "$(dirname "$0")/setup.sh"
export B3BATCH_REQUIRE_GPU=1 B3BATCH_PROFILE="$OUT/profile.json"
big=268435456

step card
nvidia-smi --query-gpu=name,driver_version,clocks.max.sm,pcie.link.gen.current,pcie.link.width.current --format=csv
lscpu | grep -E "Model name|^CPU\(s\)"
timeout 30 b3batch info 2>&1

step tests on the card, host upload
for t in vectors gpu; do
    B3BATCH_GPU_UPLOAD=host timeout 90 ".dev/test-$t" --test-threads 8 2>&1 |
        grep -E "test result|panicked|FAILED|error"
done

for upload in copy host; do
    step bench, $upload upload
    B3BATCH_GPU_UPLOAD=$upload timeout 60 b3batch --quiet --gpu-memory 2048 bench --backend gpu \
        --sizes 64,1024,mixed --bytes $big --reps 5 --json "$OUT/bench-$upload.json" 2>&1
done
export B3BATCH_GPU_UPLOAD=host
step bench 1 GiB of 1 KiB, host upload
timeout 60 b3batch --quiet --gpu-memory 4096 bench --backend gpu --sizes 1024 \
    --bytes 1073741824 --reps 3 2>&1
for upload in copy host; do
    step bench blobs over 1 KiB as trees, $upload upload
    B3BATCH_GPU_UPLOAD=$upload timeout 45 b3batch --quiet --gpu-memory 2048 bench --backend gpu \
        --stages --sizes 4096,65536,1048576,$big --bytes $big --reps 3 2>&1
done

step calibrate, then Auto and the split, host upload
bash "$(dirname "$0")/auto.sh" 2>&1 | grep -v "^=== done"

bash "$(dirname "$0")/files.sh" 2>&1 | grep -v "^=== done"

step GPU-buffer tests
B3BATCH_GPU_UPLOAD=host timeout 60 .dev/test-gpu_buffers --test-threads 8 2>&1 |
    grep -E "test result|panicked|FAILED|error"
step bench workgroup 256, host upload
B3BATCH_GPU_WORKGROUP=256 timeout 40 b3batch --quiet --gpu-memory 2048 bench --backend gpu \
    --sizes 64,1024 --bytes $big --reps 5 2>&1
step card reference
timeout 90 python3 benches/device/cuda_reference.py 2>&1
step done
