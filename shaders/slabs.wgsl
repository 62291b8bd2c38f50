// Blobs packed by the CPU into a slab. A blob of at most 1024 bytes (one
// chunk) is one invocation, whose hash is its chunk's root compression.
// A longer blob is a tree: one invocation per chunk (`hash_chunks`), then
// one dispatch per level of parents (`hash_parents`), the last writing its
// digest. Follows compress.wgsl in one module.
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
    // hash_records only: every blob's length in bytes, and how far apart
    // blobs start, in vec4s (16 bytes).
    record_len: u32,
    record_stride: u32,
}

// The jobs of one dispatch of `hash_chunks` or `hash_parents`: a range of
// `jobs`. Bound at a dynamic offset, one per dispatch.
struct Level {
    first: u32,
    count: u32,
}

// hash_table: one entry per blob: where its bytes start in `data`, in vec4s
// (every blob starts on 16 bytes, its last vec4 zero-padded), and its length
// in bytes. `hash_table` hashes the blobs of at most 1024 bytes; the chunk
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
// Chunk jobs: (first vec4 in `data`, length in bytes, chunk counter, cv slot).
// Parent jobs: (left cv slot, right cv slot, digest slot or NOT_ROOT, 0).
@group(0) @binding(4) var<storage, read> jobs: array<vec4<u32>>;
// Chaining values of chunks and parents, two vec4s each. A parent takes
// its left child's slot, so a level never reads what it writes.
@group(0) @binding(5) var<storage, read_write> cvs: array<vec4<u32>>;
@group(0) @binding(6) var<storage, read> level: Level;

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

// Every chunk of the long blobs: its chaining value into its slot.
@compute @workgroup_size(workgroup_size)
fn hash_chunks(@builtin(global_invocation_id) id: vec3<u32>) {
    if id.x >= level.count {
        return;
    }
    let job = jobs[level.first + id.x];
    let cv = chunk_cv(job.x, job.y, job.z, CHUNK_END);
    cvs[2u * job.w] = cv.low;
    cvs[2u * job.w + 1u] = cv.high;
}

// One level of parents: each joins two chaining values of the level below;
// the root's is the blob's digest.
@compute @workgroup_size(workgroup_size)
fn hash_parents(@builtin(global_invocation_id) id: vec3<u32>) {
    if id.x >= level.count {
        return;
    }
    let job = jobs[level.first + id.x];
    let m = Block(cvs[2u * job.x], cvs[2u * job.x + 1u], cvs[2u * job.y], cvs[2u * job.y + 1u]);
    let key = Cv(params.key[0], params.key[1]);
    if job.z == NOT_ROOT {
        let cv = compress(key, m, 0u, 64u, params.base_flags | PARENT);
        cvs[2u * job.x] = cv.low;
        cvs[2u * job.x + 1u] = cv.high;
    } else {
        write_digest(job.z, compress(key, m, 0u, 64u, params.base_flags | PARENT | ROOT));
    }
}
