// Blobs packed by the CPU into a slab: one invocation per blob of at most
// 1024 bytes (one chunk), so every blob's hash is its single chunk's root
// compression. Follows compress.wgsl in one module.
//
// The Rust mirrors of these bindings live in src/gpu/layout.rs; keep the two
// in step (field order, sizes, the SKIP marker, the entry points).

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

// hash_table: one entry per blob: where its bytes start in `data`, in vec4s
// (every blob starts on 16 bytes, its last vec4 zero-padded), and its length
// in bytes. A length of SKIP marks a blob hashed elsewhere (over 1024 bytes).
const SKIP: u32 = 0xffffffffu;

@group(0) @binding(0) var<storage, read> params: Params;
@group(0) @binding(1) var<storage, read> table: array<vec2<u32>>;
@group(0) @binding(2) var<storage, read> data: array<vec4<u32>>;
@group(0) @binding(3) var<storage, read_write> digests: array<vec4<u32>>;

fn load_block(at: u32) -> Block {
    return Block(data[at], data[at + 1u], data[at + 2u], data[at + 3u]);
}

// The blob of `len` bytes whose first vec4 is data[first], into digest slot
// `index`.
fn hash_blob(index: u32, first: u32, len: u32) {
    var cv = Cv(params.key[0], params.key[1]);
    // An empty blob is one empty block.
    let blocks = max(1u, (len + 63u) / 64u);
    var flags = params.base_flags | CHUNK_START;
    for (var block = 0u; block + 1u < blocks; block++) {
        cv = compress(cv, load_block(first + 4u * block), 64u, flags);
        flags = params.base_flags;
    }
    // The last block: the vec4s that hold the blob's bytes (the packer
    // zero-filled past its end within the last one), zeros after them.
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
    cv = compress(cv, m, len - 64u * last, flags | CHUNK_END | ROOT);
    digests[2u * index] = cv.low;
    digests[2u * index + 1u] = cv.high;
}

// Blobs of any lengths, found through `table`.
@compute @workgroup_size(workgroup_size)
fn hash_table(@builtin(global_invocation_id) id: vec3<u32>) {
    let index = id.x;
    if index >= params.count {
        return;
    }
    let entry = table[index];
    if entry.y == SKIP {
        return;
    }
    hash_blob(index, entry.x, entry.y);
}

// Blobs of one length, `record_stride` vec4s apart: no table to read.
@compute @workgroup_size(workgroup_size)
fn hash_records(@builtin(global_invocation_id) id: vec3<u32>) {
    let index = id.x;
    if index >= params.count {
        return;
    }
    hash_blob(index, index * params.record_stride, params.record_len);
}
