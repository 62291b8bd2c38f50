#!/bin/bash
# Where the GPU path's time goes on a lent NVIDIA machine: for each upload
# ($UPLOADS, host and copy by default) and two slab sizes, the end-to-end
# rate beside its stages (packing on the CPU, the copy into device memory
# timed on the GPU) and the rate from a pinned buffer, as rates of the
# batch's bytes. Needs .dev/b3batch and .gl/ as run.sh does; run as
#   bash benches/device/stages.sh 2>&1 | tee $OUT/stages.log
source "$(dirname "$0")/setup.sh"
for upload in ${UPLOADS:-host copy}; do
    for memory in 512 2048; do
        step 1 GiB of 1 KiB, $upload upload, --gpu-memory $memory
        B3BATCH_GPU_UPLOAD=$upload timeout 45 b3batch --quiet --gpu-memory $memory bench \
            --backend gpu --stages --sizes 1024 --bytes 1073741824 --reps 3 2>&1 | tail -n +3
    done
    step 64 B and mixed, 256 MiB, $upload upload
    B3BATCH_GPU_UPLOAD=$upload timeout 45 b3batch --quiet --gpu-memory 1024 bench --backend gpu \
        --stages --sizes 64,mixed --bytes 268435456 --reps 3 2>&1 | tail -n +3
done
step done
