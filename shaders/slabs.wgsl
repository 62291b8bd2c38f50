// Blobs packed by the CPU into a slab. A blob of at most 1024 bytes (one
// chunk) is one invocation, whose hash is its chunk's root compression.
// A longer blob is a tree: one invocation per chunk (`hash_chunks`), then
// one dispatch per level of parents (`hash_parents`), the last writing its
// digest. Packed input may instead be copied as it lies (`hash_verbatim`,
// `hash_verbatim_chunks`), its blobs read at any byte through
// unaligned.wgsl. Follows compress.wgsl and unaligned.wgsl in one module.
//
// The Rust mirrors of these bindings live in src/gpu/layout.rs, and the
// jobs of long blobs are planned in src/gpu/tree.rs; keep them in step
// (field order, sizes, the SKIP and NOT_ROOT markers, the entry points).

struct Params {
    // Starting chaining value: the IV, the key, or the derive-key context key.
    key: array<vec4<u32>, 2>,
    // KEYED_HASH or DERIVE_KEY_MATERIAL, or 0 for plain hashing.
    base_flags: u32,
    // Blobs in this dispatch.
    count: u32,
    // hash_records and hash_verbatim_records: every blob's length in bytes.
    record_len: u32,
    // hash_records only: how far apart blobs start, in vec4s (16 bytes).
    record_stride: u32,
    // hash_verbatim_records only: the byte the first blob starts at (the
    // rest follow back to back).
    first_byte: u32,
}

// The jobs of one dispatch of `hash_chunks` or `hash_parents`: a range of
// `jobs`. Bound at a dynamic offset, one per dispatch.
struct Level {
    first: u32,
    count: u32,
}

// hash_table: one entry per blob: where its bytes start in `data`, in vec4s
// (every blob starts on 16 bytes, its last vec4 zero-padded), and its length
// in bytes. hash_verbatim: where they start in bytes (as they lay in the
// caller's memory, unpadded), and the length. `hash_table` hashes the blobs of at most 1024 bytes; the chunk
// and parent jobs hash longer ones; a length of SKIP marks a blob hashed by
// the CPU (larger than a slab).
const SKIP: u32 = 0xffffffffu;

// A parent job's third word when the parent is not the root: its chaining
// value goes back into `cvs`.
const NOT_ROOT: u32 = 0xffffffffu;

@group(0) @binding(0) var<storage, read> params: Params;
@group(0) @binding(1) var<storage, read> table: array<vec2<u32>>;
@group(0) @binding(2) var<storage, read> data: array<vec4<u32>>;
@group(0) @binding(3) var<storage, read_write> digests: array<vec4<u32>>;
// Chunk jobs: (first vec4 in `data`, or first byte for
// `hash_verbatim_chunks`, length in bytes, chunk counter, cv slot).
// Parent jobs: (left cv slot, right cv slot, digest slot or NOT_ROOT, the
// flag the top parent adds: ROOT, or 0 where the "blob" is a subtree of a
// longer one, whose chaining value the host joins with its other subtrees).
@group(0) @binding(4) var<storage, read> jobs: array<vec4<u32>>;
// Chaining values of chunks and parents, two vec4s each. A parent takes
// its left child's slot, so a level never reads what it writes.
@group(0) @binding(5) var<storage, read_write> cvs: array<vec4<u32>>;
@group(0) @binding(6) var<storage, read> level: Level;

// Words `r..r + 4` of the eight words `a`, `b`, for `r` in 0..=3, without
// a branch (unaligned.wgsl says why).
fn words_from(a: vec4<u32>, b: vec4<u32>, r: u32) -> vec4<u32> {
    let one = vec4(a.y, a.z, a.w, b.x);
    let two = vec4(a.z, a.w, b.x, b.y);
    let three = vec4(a.w, b.x, b.y, b.z);
    return select(select(a, one, r == 1u), select(two, three, r == 3u), r >= 2u);
}

// The 64 bytes from byte `at` of a verbatim slab's data (unaligned.wgsl):
// the five vec4s that hold them, shifted by whole words, then funnelled by
// bytes. Five loads of 16 bytes rather than 17 of 4: on lavapipe, where
// every load gathers from eight lanes, words hashed mixed lengths at half
// the rate.
fn block_at(at: u32) -> Block {
    let q = at >> 4u;
    let r = (at >> 2u) & 3u;
    let s = (at & 3u) * 8u;
    let q0 = data[q];
    let q1 = data[q + 1u];
    let q2 = data[q + 2u];
    let q3 = data[q + 3u];
    let q4 = data[q + 4u];
    let w0 = words_from(q0, q1, r);
    let w1 = words_from(q1, q2, r);
    let w2 = words_from(q2, q3, r);
    let w3 = words_from(q3, q4, r);
    return Block(funnel4(w0, w1.x, s), funnel4(w1, w2.x, s), funnel4(w2, w3.x, s), funnel4(w3, q4[r], s));
}

fn load_block(at: u32) -> Block {
    return Block(data[at], data[at + 1u], data[at + 2u], data[at + 3u]);
}

// The chaining value of a chunk of `len` (0..=1024) bytes whose first vec4
// is data[first], as chunk `counter`, its last block compressed with
// `end_flags` on top of the mode's.
fn chunk_cv(first: u32, len: u32, counter: u32, end_flags: u32) -> Cv {
    var cv = Cv(params.key[0], params.key[1]);
    // An empty blob is one empty block.
    let blocks = max(1u, (len + 63u) / 64u);
    var flags = params.base_flags | CHUNK_START;
    for (var block = 0u; block + 1u < blocks; block++) {
        cv = compress(cv, load_block(first + 4u * block), counter, 64u, flags);
        flags = params.base_flags;
    }
    // The last block: the vec4s that hold the chunk's bytes (the packer
    // zero-filled past the blob's end within the last one), zeros after
    // them.
    let last = blocks - 1u;
    let at = first + 4u * last;
    let present = (len - 64u * last + 15u) / 16u;
    var m = Block(vec4(0u), vec4(0u), vec4(0u), vec4(0u));
    if present > 0u {
        m.w0 = data[at];
    }
    if present > 1u {
        m.w1 = data[at + 1u];
    }
    if present > 2u {
        m.w2 = data[at + 2u];
    }
    if present > 3u {
        m.w3 = data[at + 3u];
    }
    return compress(cv, m, counter, len - 64u * last, flags | end_flags);
}

fn write_digest(index: u32, cv: Cv) {
    digests[2u * index] = cv.low;
    digests[2u * index + 1u] = cv.high;
}

// Blobs of any lengths, found through `table`; those over one chunk are
// left to the chunk and parent jobs (or the CPU).
@compute @workgroup_size(workgroup_size)
fn hash_table(@builtin(global_invocation_id) id: vec3<u32>) {
    let index = id.x;
    if index >= params.count {
        return;
    }
    let entry = table[index];
    if entry.y > 1024u {
        return;
    }
    write_digest(index, chunk_cv(entry.x, entry.y, 0u, CHUNK_END | ROOT));
}

// Blobs of one length of at most 1024 bytes, `record_stride` vec4s apart:
// no table to read.
@compute @workgroup_size(workgroup_size)
fn hash_records(@builtin(global_invocation_id) id: vec3<u32>) {
    let index = id.x;
    if index >= params.count {
        return;
    }
    write_digest(index, chunk_cv(index * params.record_stride, params.record_len, 0u, CHUNK_END | ROOT));
}

// Blobs of one length of at most 1024 bytes back to back as they lay in
// the caller's memory, from `first_byte`: records whose length is not a
// whole number of vec4s, or that lie in a pinned buffer off a 4-byte
// boundary.
@compute @workgroup_size(workgroup_size)
fn hash_verbatim_records(@builtin(global_invocation_id) id: vec3<u32>) {
    let index = id.x;
    if index >= params.count {
        return;
    }
    let start = params.first_byte + index * params.record_len;
    write_digest(index, blob_cv_at(Cv(params.key[0], params.key[1]), params.base_flags, start, params.record_len));
}

// Blobs of any lengths as they lay in the caller's memory, found through
// `table` in bytes; as `hash_table`, those over one chunk are left to the
// chunk and parent jobs (or the CPU).
@compute @workgroup_size(workgroup_size)
fn hash_verbatim(@builtin(global_invocation_id) id: vec3<u32>) {
    let index = id.x;
    if index >= params.count {
        return;
    }
    let entry = table[index];
    if entry.y > 1024u {
        return;
    }
    write_digest(index, blob_cv_at(Cv(params.key[0], params.key[1]), params.base_flags, entry.x, entry.y));
}

fn write_cv(slot: u32, cv: Cv) {
    cvs[2u * slot] = cv.low;
    cvs[2u * slot + 1u] = cv.high;
}

// Every chunk of the long blobs: its chaining value into its slot.
@compute @workgroup_size(workgroup_size)
fn hash_chunks(@builtin(global_invocation_id) id: vec3<u32>) {
    if id.x >= level.count {
        return;
    }
    let job = jobs[level.first + id.x];
    write_cv(job.w, chunk_cv(job.x, job.y, job.z, CHUNK_END));
}

// The same, for chunks whose jobs give their first byte, not vec4.
@compute @workgroup_size(workgroup_size)
fn hash_verbatim_chunks(@builtin(global_invocation_id) id: vec3<u32>) {
    if id.x >= level.count {
        return;
    }
    let job = jobs[level.first + id.x];
    let key = Cv(params.key[0], params.key[1]);
    write_cv(job.w, chunk_cv_at(key, params.base_flags, job.x, job.y, job.z, CHUNK_END));
}

// One level of parents: each joins two chaining values of the level below;
// the top one's is the blob's digest (or its subtree's chaining value).
@compute @workgroup_size(workgroup_size)
fn hash_parents(@builtin(global_invocation_id) id: vec3<u32>) {
    if id.x >= level.count {
        return;
    }
    let job = jobs[level.first + id.x];
    let m = Block(cvs[2u * job.x], cvs[2u * job.x + 1u], cvs[2u * job.y], cvs[2u * job.y + 1u]);
    let key = Cv(params.key[0], params.key[1]);
    if job.z == NOT_ROOT {
        write_cv(job.x, compress(key, m, 0u, 64u, params.base_flags | PARENT));
    } else {
        write_digest(job.z, compress(key, m, 0u, 64u, params.base_flags | PARENT | job.w));
    }
}
