"""The card's own figures for the GPU issue, measured in the same run as
b3batch: a plain CUDA BLAKE3 kernel (one thread per blob, data already in GPU
memory, each blob's chunk in registers) on records of 64 B and 1 KiB, checked
against a pure-Python BLAKE3 on a few blobs, and pinned host-to-device copy
bandwidth. Prints JSON lines."""
import json, struct, sys, time
import cupy as cp
import numpy as np

IV = [0x6A09E667, 0xBB67AE85, 0x3C6EF372, 0xA54FF53A, 0x510E527F, 0x9B05688C, 0x1F83D9AB, 0x5BE0CD19]
PERM = [2, 6, 3, 10, 7, 0, 4, 13, 1, 11, 12, 5, 9, 14, 15, 8]
M32 = 0xFFFFFFFF

def py_compress(cv, block, block_len, flags):
    m = list(struct.unpack("<16I", block))
    v = cv[:] + IV[:4] + [0, 0, block_len, flags]
    def rotr(x, n): return ((x >> n) | (x << (32 - n))) & M32
    def g(a, b, c, d, x, y):
        v[a] = (v[a] + v[b] + x) & M32; v[d] = rotr(v[d] ^ v[a], 16)
        v[c] = (v[c] + v[d]) & M32; v[b] = rotr(v[b] ^ v[c], 12)
        v[a] = (v[a] + v[b] + y) & M32; v[d] = rotr(v[d] ^ v[a], 8)
        v[c] = (v[c] + v[d]) & M32; v[b] = rotr(v[b] ^ v[c], 7)
    for r in range(7):
        g(0, 4, 8, 12, m[0], m[1]); g(1, 5, 9, 13, m[2], m[3])
        g(2, 6, 10, 14, m[4], m[5]); g(3, 7, 11, 15, m[6], m[7])
        g(0, 5, 10, 15, m[8], m[9]); g(1, 6, 11, 12, m[10], m[11])
        g(2, 7, 8, 13, m[12], m[13]); g(3, 4, 9, 14, m[14], m[15])
        m = [m[p] for p in PERM]
    return [v[i] ^ v[i + 8] for i in range(8)]

def py_hash(blob):  # one chunk, len a multiple of 64 and > 0
    cv = IV[:]
    blocks = len(blob) // 64
    for b in range(blocks):
        flags = (1 if b == 0 else 0) | (10 if b == blocks - 1 else 0)
        cv = py_compress(cv, blob[64 * b:64 * b + 64], 64, flags)
    return struct.pack("<8I", *cv)

SRC = r'''
#define ROTR(x, n) (((x) >> (n)) | ((x) << (32 - (n))))
#define G(a, b, c, d, x, y) { a = a + b + (x); d = ROTR(d ^ a, 16); c = c + d; b = ROTR(b ^ c, 12); \
    a = a + b + (y); d = ROTR(d ^ a, 8); c = c + d; b = ROTR(b ^ c, 7); }
extern "C" __global__ void blake3_records(const uint4* __restrict__ data, unsigned int len,
                                          unsigned int count, uint4* __restrict__ out) {
    unsigned int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= count) return;
    const uint4* p = data + (size_t)i * (len / 16);
    unsigned int cv0 = 0x6A09E667u, cv1 = 0xBB67AE85u, cv2 = 0x3C6EF372u, cv3 = 0xA54FF53Au,
                 cv4 = 0x510E527Fu, cv5 = 0x9B05688Cu, cv6 = 0x1F83D9ABu, cv7 = 0x5BE0CD19u;
    unsigned int blocks = len / 64;
    for (unsigned int b = 0; b < blocks; b++) {
        uint4 q0 = p[4 * b], q1 = p[4 * b + 1], q2 = p[4 * b + 2], q3 = p[4 * b + 3];
        unsigned int m[16] = {q0.x, q0.y, q0.z, q0.w, q1.x, q1.y, q1.z, q1.w,
                              q2.x, q2.y, q2.z, q2.w, q3.x, q3.y, q3.z, q3.w};
        unsigned int flags = (b == 0 ? 1u : 0u) | (b + 1 == blocks ? 10u : 0u);
        unsigned int v0 = cv0, v1 = cv1, v2 = cv2, v3 = cv3, v4 = cv4, v5 = cv5, v6 = cv6, v7 = cv7;
        unsigned int v8 = 0x6A09E667u, v9 = 0xBB67AE85u, v10 = 0x3C6EF372u, v11 = 0xA54FF53Au;
        unsigned int v12 = 0, v13 = 0, v14 = 64, v15 = flags;
        #pragma unroll
        for (int r = 0; r < 7; r++) {
            G(v0, v4, v8, v12, m[0], m[1]); G(v1, v5, v9, v13, m[2], m[3]);
            G(v2, v6, v10, v14, m[4], m[5]); G(v3, v7, v11, v15, m[6], m[7]);
            G(v0, v5, v10, v15, m[8], m[9]); G(v1, v6, v11, v12, m[10], m[11]);
            G(v2, v7, v8, v13, m[12], m[13]); G(v3, v4, v9, v14, m[14], m[15]);
            unsigned int t[16] = {m[2], m[6], m[3], m[10], m[7], m[0], m[4], m[13],
                                  m[1], m[11], m[12], m[5], m[9], m[14], m[15], m[8]};
            #pragma unroll
            for (int k = 0; k < 16; k++) m[k] = t[k];
        }
        cv0 = v0 ^ v8; cv1 = v1 ^ v9; cv2 = v2 ^ v10; cv3 = v3 ^ v11;
        cv4 = v4 ^ v12; cv5 = v5 ^ v13; cv6 = v6 ^ v14; cv7 = v7 ^ v15;
    }
    out[2 * i] = make_uint4(cv0, cv1, cv2, cv3);
    out[2 * i + 1] = make_uint4(cv4, cv5, cv6, cv7);
}
'''

def main():
    kernel = cp.RawKernel(SRC, "blake3_records", options=("-arch=sm_90",))
    total = 1 << 30
    for length in (64, 1024):
        count = total // length
        data = cp.random.randint(0, 2**32, size=total // 4, dtype=cp.uint64).astype(cp.uint32)
        out = cp.zeros(count * 8, dtype=cp.uint32)
        for threads in (128, 256):
            grid = (count + threads - 1) // threads
            args = (data, np.uint32(length), np.uint32(count), out)
            # Half a second of work first: an idle card runs at a fraction
            # of its clock.
            began = time.perf_counter()
            while time.perf_counter() - began < 0.5:
                kernel((grid,), (threads,), args)
                cp.cuda.Device().synchronize()
            start, stop = cp.cuda.Event(), cp.cuda.Event()
            times = []
            for _ in range(5):
                start.record()
                kernel((grid,), (threads,), args)
                stop.record()
                stop.synchronize()
                times.append(cp.cuda.get_elapsed_time(start, stop) / 1e3)
            best = min(times)
            host = cp.asnumpy(data[: (3 * length) // 4]).tobytes()
            got = cp.asnumpy(out[:24]).tobytes()
            ok = all(py_hash(host[k * length:(k + 1) * length]) == got[32 * k:32 * k + 32] for k in range(3))
            print(json.dumps({"what": "cuda_kernel", "len": length, "threads": threads, "count": count,
                              "best_sec": best, "gb_per_sec": total / best / 1e9,
                              "g_compressions_per_sec": count * (length // 64) / best / 1e9,
                              "verified": ok}), flush=True)
    for size in (256 << 20, 1 << 30):
        pinned = cp.cuda.alloc_pinned_memory(size)
        dst = cp.empty(size, dtype=cp.uint8)
        stream = cp.cuda.Stream(non_blocking=True)
        start, stop = cp.cuda.Event(), cp.cuda.Event()
        times = []
        for _ in range(5):
            start.record(stream)
            cp.cuda.runtime.memcpyAsync(dst.data.ptr, pinned.ptr, size, 1, stream.ptr)
            stop.record(stream)
            stop.synchronize()
            times.append(cp.cuda.get_elapsed_time(start, stop) / 1e3)
        print(json.dumps({"what": "pinned_h2d", "bytes": size, "best_sec": min(times),
                          "gb_per_sec": size / min(times) / 1e9}), flush=True)

main()
