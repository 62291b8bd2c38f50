// Blobs of at most one chunk that start at any byte: the caller's packed
// blobs (buffers.wgsl) and slabs copied as they lay in packed input
// (slabs.wgsl, the chunks of longer blobs too). Follows compress.wgsl in one
// module; the module that includes it defines `block_at(at: u32) -> Block`,
// the 64 bytes from byte `at` of its data (whatever lies past the data's
// end: a read past a binding is clamped by the API, and the last block is
// masked here).
//
// No branch depends on where a blob starts or ends. Neighbouring
// invocations start at different byte offsets, and a branch on the offset
// runs every path it has in turn: on lavapipe, which runs invocations in
// SIMD lanes, an earlier version with paths for 16-, 4- and 1-byte starts
// hashed at a fifth (mixed lengths) to a half (1 KiB) of the rate of blobs
// padded to 16 bytes.

// Four words from `s` bits (0, 8, 16 or 24) into the words `w` and the
// word after them, `next`. Every shift is under 32: a shift by 32 is not
// portable (WGSL takes it modulo 32, SPIR-V leaves it undefined), so
// `high << (32 - s)` is two shifts, by `31 - s` and by 1, which for `s` = 0
// shift all of `high` out.
fn funnel4(w: vec4<u32>, next: u32, s: u32) -> vec4<u32> {
    let high = vec4(w.y, w.z, w.w, next);
    return (w >> vec4(s)) | ((high << vec4(31u - s)) << vec4(1u));
}

// Message words `first..first + 4` of a block with `left` bytes of the blob
// (under 64 in the last block), the bytes past its end zeroed.
fn keep(words: vec4<u32>, first: u32, left: u32) -> vec4<u32> {
    let starts = vec4(first, first + 1u, first + 2u, first + 3u) * 4u;
    let remaining = select(vec4(0u), vec4(left) - starts, vec4(left) > starts);
    // Shifts under 32 (see `funnel4`); the 3 stands for every count of 4
    // or more, which keeps the whole word.
    let partial = (vec4(1u) << (8u * min(remaining, vec4(3u)))) - vec4(1u);
    return words & select(vec4(0xffffffffu), partial, remaining < vec4(4u));
}

// The last block of a blob, `left` (0..=64) of its bytes from byte `at`,
// zero-padded.
fn last_block_at(at: u32, left: u32) -> Block {
    let m = block_at(at);
    return Block(keep(m.w0, 0u, left), keep(m.w1, 4u, left), keep(m.w2, 8u, left), keep(m.w3, 12u, left));
}

// The chaining value of a chunk of `len` (0..=1024) bytes from byte
// `start` as chunk `counter`, from chaining value `key` with the mode's
// `base_flags`, its last block compressed with `end_flags` on top.
fn chunk_cv_at(key: Cv, base_flags: u32, start: u32, len: u32, counter: u32, end_flags: u32) -> Cv {
    var cv = key;
    // An empty blob is one empty block.
    let blocks = max(1u, (len + 63u) / 64u);
    var flags = base_flags | CHUNK_START;
    for (var block = 0u; block + 1u < blocks; block++) {
        cv = compress(cv, block_at(start + 64u * block), counter, 64u, flags);
        flags = base_flags;
    }
    let last = blocks - 1u;
    let left = len - 64u * last;
    return compress(cv, last_block_at(start + 64u * last, left), counter, left, flags | end_flags);
}

// The digest of a blob of `len` (0..=1024) bytes from byte `start`: its one
// chunk's root compression.
fn blob_cv_at(key: Cv, base_flags: u32, start: u32, len: u32) -> Cv {
    return chunk_cv_at(key, base_flags, start, len, 0u, CHUNK_END | ROOT);
}
