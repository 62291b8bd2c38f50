#!/bin/bash
# Files through `b3batch hash`. First one large file, which it streams through
# Engine::hash_reader in windows: on the CPU's threads, on the GPU (64 MiB
# windows at the default memory budget, 512 MiB at --gpu-memory 2048) and
# under Auto with the profile in $B3BATCH_PROFILE (auto.sh calibrates it),
# and for extended output (`--length 33`) on the CPU and the GPU.
# A rate is the file's bytes over the time of five passes less one, which
# takes the command's start (opening the GPU) out. Then 128 files of 1 to
# 16 MiB, batched up to 64 MiB (Engine::hash_files) on the CPU, the GPU and
# under Auto, which may split a batch, rated the same way. Then 100 000
# files of 4000 bytes (`hash -r`), opened and read on one thread and on all
# (and on all for extended output). Needs
# .dev/b3batch and .gl/ as run.sh does; run as
#   bash benches/device/files.sh 2>&1 | tee $OUT/files.log
source "$(dirname "$0")/setup.sh"
export B3BATCH_PROFILE="${B3BATCH_PROFILE:-$OUT/profile.json}"
file=/dev/shm/b3batch-stream.bin
gib=${STREAM_GIB:-4}

step streams: a $gib GiB file
head -c $((gib << 30)) /dev/zero > "$file"
seconds() { # seconds of one b3batch command
    local start end
    start=$(date +%s.%N)
    timeout 120 b3batch "$@" > /dev/null || echo "failed: b3batch $*" >&2
    end=$(date +%s.%N)
    python3 -c "print($end - $start)"
}
# backend; global options; hash options. `--length 33` asks for extended
# output (Engine::hash_file_xof): the same windows, only the root differs.
for run in "cpu;;" "cpu;;--length 33" "gpu;;" "gpu;;--length 33" "auto;;" "gpu;--gpu-memory 2048;"; do
    IFS=';' read -r backend global options <<< "$run"
    # shellcheck disable=SC2206 # the options are words
    args=(--threads "$(nproc)" $global hash --backend "$backend" $options)
    one=$(seconds "${args[@]}" "$file")
    five=$(seconds "${args[@]}" "$file" "$file" "$file" "$file" "$file")
    printf '%-36s one pass %.2f s, five %.2f s: %.1f GB/s\n' "$backend $global $options" \
        "$one" "$five" "$(python3 -c "print(4 * $gib * 1.073741824 / ($five - $one))")"
done
b3batch hash --backend cpu "$file" | cut -c1-16
b3batch hash --backend gpu "$file" | cut -c1-16
rm -f "$file"

step mid-size files: 128 of 1 to 16 MiB
mid=/dev/shm/b3batch-mid
rm -rf "$mid" && mkdir -p "$mid"
python3 - "$mid" <<'PY'
import os, random, sys
random.seed(1)
for index in range(128):
    with open(os.path.join(sys.argv[1], f"m{index:03}"), "wb") as file:
        file.write(random.randbytes(random.randint(1 << 20, 16 << 20)))
PY
mid_gb=$(du -sb "$mid" | python3 -c "import sys; print(int(sys.stdin.read().split()[0]) / 1e9)")
for backend in cpu gpu auto; do
    args=(--threads "$(nproc)" hash -r --backend "$backend")
    one=$(seconds "${args[@]}" "$mid")
    five=$(seconds "${args[@]}" "$mid" "$mid" "$mid" "$mid" "$mid")
    printf '%-6s one pass %.2f s, five %.2f s: %.1f GB/s\n' "$backend" "$one" "$five" \
        "$(python3 -c "print(4 * $mid_gb / ($five - $one))")"
done
for backend in cpu gpu auto; do
    b3batch hash -r --backend "$backend" "$mid" | b3batch hash - | cut -c1-16
done
rm -rf "$mid"

step many small files: 100 000 of 4000 bytes
many=/dev/shm/b3batch-many
rm -rf "$many" && mkdir -p "$many"
head -c 400000000 /dev/urandom | split -b 4000 -a 5 - "$many/f"
for threads in 1 "$(nproc)"; do
    for backend in cpu auto; do
        took=$(seconds --threads "$threads" hash -r --backend "$backend" "$many")
        printf '%-6s %2s threads: %.2f s, %.0f files/s\n' "$backend" "$threads" "$took" \
            "$(python3 -c "print(100000 / $took)")"
    done
done
took=$(seconds --threads "$(nproc)" hash -r --backend cpu --length 33 "$many")
printf 'cpu --length 33 %2s threads: %.2f s, %.0f files/s\n' "$(nproc)" "$took" \
    "$(python3 -c "print(100000 / $took)")"
b3batch hash -r "$many" | b3batch hash - | cut -c1-16
b3batch --threads 1 hash -r "$many" | b3batch hash - | cut -c1-16
rm -rf "$many"
step done
