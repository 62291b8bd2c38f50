// BLAKE3's compression for one invocation, shared by the slab shader
// (slabs.wgsl) and the shader over the caller's buffers (buffers.wgsl);
// src/gpu/layout.rs puts each module together as this file followed by one
// of those.
//
// The state lives in four rows of vec4<u32> and the message in four more,
// all passed by value: every index is a constant, so the whole compression
// stays in registers. (Function-scope arrays indexed through pointers, as an
// earlier version had, can be spilled to local memory by the driver.)

// Overridable when the pipeline is created (src/gpu/device.rs).
override workgroup_size: u32 = 64u;

const CHUNK_START: u32 = 1u;
const CHUNK_END: u32 = 2u;
const PARENT: u32 = 4u;
const ROOT: u32 = 8u;

const IV_LOW: vec4<u32> = vec4<u32>(0x6A09E667u, 0xBB67AE85u, 0x3C6EF372u, 0xA54FF53Au);

// The 16 state words as four rows: (v0..v3), (v4..v7), (v8..v11), (v12..v15).
struct State {
    a: vec4<u32>,
    b: vec4<u32>,
    c: vec4<u32>,
    d: vec4<u32>,
}

// The 16 message words of one block, four to a vec4.
struct Block {
    w0: vec4<u32>,
    w1: vec4<u32>,
    w2: vec4<u32>,
    w3: vec4<u32>,
}

// A chaining value: eight words.
struct Cv {
    low: vec4<u32>,
    high: vec4<u32>,
}

fn rotr(x: vec4<u32>, n: u32) -> vec4<u32> {
    return (x >> vec4<u32>(n)) | (x << vec4<u32>(32u - n));
}

// G on all four columns (or, after `diagonals`, all four diagonals) at once.
fn g(s: State, x: vec4<u32>, y: vec4<u32>) -> State {
    var t = s;
    t.a = t.a + t.b + x;
    t.d = rotr(t.d ^ t.a, 16u);
    t.c = t.c + t.d;
    t.b = rotr(t.b ^ t.c, 12u);
    t.a = t.a + t.b + y;
    t.d = rotr(t.d ^ t.a, 8u);
    t.c = t.c + t.d;
    t.b = rotr(t.b ^ t.c, 7u);
    return t;
}

// Moves the diagonals (v0 v5 v10 v15), (v1 v6 v11 v12), ... into columns.
fn diagonals(s: State) -> State {
    return State(s.a, s.b.yzwx, s.c.zwxy, s.d.wxyz);
}

fn columns(s: State) -> State {
    return State(s.a, s.b.wxyz, s.c.zwxy, s.d.yzwx);
}

fn round(s: State, m: Block) -> State {
    var t = g(s, vec4(m.w0.x, m.w0.z, m.w1.x, m.w1.z), vec4(m.w0.y, m.w0.w, m.w1.y, m.w1.w));
    t = diagonals(t);
    t = g(t, vec4(m.w2.x, m.w2.z, m.w3.x, m.w3.z), vec4(m.w2.y, m.w2.w, m.w3.y, m.w3.w));
    return columns(t);
}

// BLAKE3's message permutation (2 6 3 10 7 0 4 13 1 11 12 5 9 14 15 8),
// applied between rounds: only renames registers.
fn permute(m: Block) -> Block {
    return Block(
        vec4(m.w0.z, m.w1.z, m.w0.w, m.w2.z),
        vec4(m.w1.w, m.w0.x, m.w1.x, m.w3.y),
        vec4(m.w0.y, m.w2.w, m.w3.x, m.w1.y),
        vec4(m.w2.y, m.w3.z, m.w3.w, m.w2.x),
    );
}

// One compression of a block of chunk `counter` (0 for a blob of one chunk
// and for parents; the counter's high word is always 0 here), keeping the
// new chaining value.
fn compress(cv: Cv, m0: Block, counter: u32, block_len: u32, flags: u32) -> Cv {
    var s = State(cv.low, cv.high, IV_LOW, vec4(counter, 0u, block_len, flags));
    var m = m0;
    s = round(s, m);
    m = permute(m);
    s = round(s, m);
    m = permute(m);
    s = round(s, m);
    m = permute(m);
    s = round(s, m);
    m = permute(m);
    s = round(s, m);
    m = permute(m);
    s = round(s, m);
    m = permute(m);
    s = round(s, m);
    return Cv(s.a ^ s.c, s.b ^ s.d);
}
