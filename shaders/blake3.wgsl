// BLAKE3 of many small blobs: one invocation per blob of at most 1024 bytes
// (one chunk), so every blob's hash is its single chunk's root compression.
//
// The Rust mirrors of these bindings live in src/gpu/layout.rs; keep the two
// in step (field order, sizes, the SKIP marker, WORKGROUP_SIZE).

struct Params {
    // Starting chaining value: the IV, the key, or the derive-key context key.
    key: array<vec4<u32>, 2>,
    // KEYED_HASH or DERIVE_KEY_MATERIAL, or 0 for plain hashing.
    base_flags: u32,
    // Entries of `table` in this dispatch.
    count: u32,
    pad0: u32,
    pad1: u32,
}

// One entry per blob: where its bytes start in `data` (in 32-bit words; every
// blob starts on a word boundary, zero-padded to a whole word) and its length
// in bytes. A length of SKIP marks a blob hashed elsewhere (over 1024 bytes).
struct Entry {
    word_offset: u32,
    len: u32,
}

const SKIP: u32 = 0xffffffffu;
const WORKGROUP_SIZE: u32 = 64u;

const CHUNK_START: u32 = 1u;
const CHUNK_END: u32 = 2u;
const ROOT: u32 = 8u;

const IV0: u32 = 0x6A09E667u;
const IV1: u32 = 0xBB67AE85u;
const IV2: u32 = 0x3C6EF372u;
const IV3: u32 = 0xA54FF53Au;

@group(0) @binding(0) var<uniform> params: Params;
@group(0) @binding(1) var<storage, read> table: array<Entry>;
@group(0) @binding(2) var<storage, read> data: array<u32>;
@group(0) @binding(3) var<storage, read_write> digests: array<u32>;

fn rotr(x: u32, n: u32) -> u32 {
    return (x >> n) | (x << (32u - n));
}

// The quarter-round on state words a, b, c, d with message words x, y.
fn g(v: ptr<function, array<u32, 16>>, a: u32, b: u32, c: u32, d: u32, x: u32, y: u32) {
    (*v)[a] = (*v)[a] + (*v)[b] + x;
    (*v)[d] = rotr((*v)[d] ^ (*v)[a], 16u);
    (*v)[c] = (*v)[c] + (*v)[d];
    (*v)[b] = rotr((*v)[b] ^ (*v)[c], 12u);
    (*v)[a] = (*v)[a] + (*v)[b] + y;
    (*v)[d] = rotr((*v)[d] ^ (*v)[a], 8u);
    (*v)[c] = (*v)[c] + (*v)[d];
    (*v)[b] = rotr((*v)[b] ^ (*v)[c], 7u);
}

fn round(v: ptr<function, array<u32, 16>>, m: ptr<function, array<u32, 16>>) {
    // Columns, then diagonals.
    g(v, 0u, 4u, 8u, 12u, (*m)[0], (*m)[1]);
    g(v, 1u, 5u, 9u, 13u, (*m)[2], (*m)[3]);
    g(v, 2u, 6u, 10u, 14u, (*m)[4], (*m)[5]);
    g(v, 3u, 7u, 11u, 15u, (*m)[6], (*m)[7]);
    g(v, 0u, 5u, 10u, 15u, (*m)[8], (*m)[9]);
    g(v, 1u, 6u, 11u, 12u, (*m)[10], (*m)[11]);
    g(v, 2u, 7u, 8u, 13u, (*m)[12], (*m)[13]);
    g(v, 3u, 4u, 9u, 14u, (*m)[14], (*m)[15]);
}

// BLAKE3's message permutation, applied between rounds.
fn permute(m: ptr<function, array<u32, 16>>) {
    let o = *m;
    *m = array<u32, 16>(
        o[2], o[6], o[3], o[10], o[7], o[0], o[4], o[13],
        o[1], o[11], o[12], o[5], o[9], o[14], o[15], o[8],
    );
}

// One compression with counter 0 (every blob is chunk 0 of its own input);
// updates the chaining value `cv` in place.
fn compress(cv: ptr<function, array<u32, 8>>, m: ptr<function, array<u32, 16>>, block_len: u32, flags: u32) {
    var v = array<u32, 16>(
        (*cv)[0], (*cv)[1], (*cv)[2], (*cv)[3], (*cv)[4], (*cv)[5], (*cv)[6], (*cv)[7],
        IV0, IV1, IV2, IV3, 0u, 0u, block_len, flags,
    );
    round(&v, m);
    for (var r = 0u; r < 6u; r++) {
        permute(m);
        round(&v, m);
    }
    for (var i = 0u; i < 8u; i++) {
        (*cv)[i] = v[i] ^ v[i + 8u];
    }
}

@compute @workgroup_size(WORKGROUP_SIZE)
fn main(@builtin(global_invocation_id) id: vec3<u32>) {
    let index = id.x;
    if index >= params.count {
        return;
    }
    let entry = table[index];
    let len = entry.len;
    if len == SKIP {
        return;
    }
    var cv = array<u32, 8>(
        params.key[0].x, params.key[0].y, params.key[0].z, params.key[0].w,
        params.key[1].x, params.key[1].y, params.key[1].z, params.key[1].w,
    );
    // An empty blob is one empty block.
    let blocks = max(1u, (len + 63u) / 64u);
    let words = (len + 3u) / 4u;
    var m: array<u32, 16>;
    for (var block = 0u; block < blocks; block++) {
        let first_word = block * 16u;
        for (var i = 0u; i < 16u; i++) {
            let word = first_word + i;
            // Past the blob's last word the message is zero; within its last
            // word the packer already zero-filled the tail bytes.
            m[i] = select(0u, data[entry.word_offset + word], word < words);
        }
        var flags = params.base_flags;
        if block == 0u {
            flags |= CHUNK_START;
        }
        var block_len = 64u;
        if block + 1u == blocks {
            flags |= CHUNK_END | ROOT;
            block_len = len - block * 64u;
        }
        compress(&cv, &m, block_len, flags);
    }
    for (var i = 0u; i < 8u; i++) {
        digests[index * 8u + i] = cv[i];
    }
}
