#!/bin/bash
# The scheduler on a lent NVIDIA machine, alone (a short run): calibrate,
# then Auto beside the forced GPU and CPU choices and a forced split from
# 1 MiB to 1 GiB a case (blobs of 64 B, 1 KiB, mixed, and 64 KiB, which Auto
# sends to the GPU too by the profile's rate for them), the GPU, Auto and
# the split on as many threads as the widest CPU column, with the GPU's
# stages (a resident call's check, host work and wait among them). Needs
# .dev/b3batch
# and .gl/ as run.sh does; run as
#   bash benches/device/auto.sh 2>&1 | grep -v XDG_RUNTIME > $OUT/auto.log
source "$(dirname "$0")/setup.sh"
export B3BATCH_PROFILE="$OUT/profile.json"

step card
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader
timeout 60 b3batch --gpu-memory 2048 calibrate 2>&1
# The profile in one line: the rates and the splits' measured slowdowns.
timeout 30 b3batch info 2>&1 | grep profile
# More timed runs where a batch takes microseconds: with 3, the median of
# a 1 MiB or 16 MiB cell moved by a third between runs, more than the 5 %
# that Auto is judged by.
for case in 1048576:101:20 16777216:31:5 268435456:5:1 1073741824:3:1; do
    IFS=: read -r bytes reps warmup <<< "$case"
    step auto, $bytes bytes a case
    timeout 100 b3batch --quiet --gpu-memory 2048 --threads "$(nproc)" bench --sizes 64,1024,mixed,65536 \
        --bytes $bytes --reps $reps --warmup $warmup --stages --json "$OUT/auto-$bytes.json" 2>&1
done
step done
