// Blobs that already live in the caller's GPU buffers: packed bytes with
// Arrow-style offsets (u32 or u64), or fixed-size records, at any byte
// offset. One invocation per blob of at most 1024 bytes, read through
// unaligned.wgsl. Follows compress.wgsl and unaligned.wgsl in one module.
//
// `check_packed` runs first, in a pass of its own: it flags offsets that
// decrease, run past the data or give a blob over 1024 bytes, and keeps the
// first such blob's index; the hashing entries then write nothing at all,
// so a bad batch leaves the caller's digest buffer untouched.
//
// The Rust mirrors of these bindings live in src/gpu/layout.rs.

struct BufferParams {
    key: array<vec4<u32>, 2>,
    base_flags: u32,
    // Blobs in this batch.
    count: u32,
    // Records: where record 0 starts, and every record's length, in bytes.
    first_byte: u32,
    record_len: u32,
    // Packed: 2 when the offsets are u64 (low word, high word), else 1.
    offset_words: u32,
    // Bytes of the data buffer that may be read.
    data_bytes: u32,
    // Invocations along x of the dispatch (workgroups × workgroup size):
    // blob index = x + y × row.
    row: u32,
    // Invocations in `check_packed`'s dispatch (one dimension): each checks
    // every blob this far apart.
    check_stride: u32,
}

// Problems `check_packed` finds, as bits. status[0] holds every problem
// found, status[1] the first blob's: its index times 8 plus its bits (the
// host keeps batches under 2^29 blobs).
const DECREASING: u32 = 1u;
const PAST_DATA: u32 = 2u;
const TOO_LONG: u32 = 4u;

// Storage rather than uniform (src/gpu/device.rs says why).
@group(0) @binding(0) var<storage, read> bp: BufferParams;
@group(0) @binding(1) var<storage, read> offsets: array<u32>;
@group(0) @binding(2) var<storage, read> bytes: array<u32>;
@group(0) @binding(3) var<storage, read_write> out: array<vec4<u32>>;
@group(0) @binding(4) var<storage, read_write> status: array<atomic<u32>, 2>;

// What `check_packed` found, read once per workgroup rather than by every
// invocation.
var<workgroup> problems: u32;

fn blob_index(id: vec3<u32>) -> u32 {
    return id.x + id.y * bp.row;
}

// Offset `i` of the packed blobs (its low word for u64 offsets), and
// whether it fits 32 bits.
fn offset(i: u32) -> vec2<u32> {
    if bp.offset_words == 2u {
        return vec2(offsets[2u * i], offsets[2u * i + 1u]);
    }
    return vec2(offsets[i], 0u);
}

// A few blobs per invocation, `check_stride` apart so that each round's
// loads are contiguous across invocations: one blob each, the pass was
// bound by how fast the card starts short invocations (16 M blobs took a
// quarter of their hash's time on an H200).
@compute @workgroup_size(workgroup_size)
fn check_packed(@builtin(global_invocation_id) id: vec3<u32>) {
    for (var index = id.x; index < bp.count; index += bp.check_stride) {
        let start = offset(index);
        let end = offset(index + 1u);
        var problem = 0u;
        if end.y != 0u || start.y != 0u || end.x > bp.data_bytes {
            problem |= PAST_DATA;
        }
        if end.y < start.y || (end.y == start.y && end.x < start.x) {
            problem |= DECREASING;
        } else if end.x - start.x > 1024u {
            problem |= TOO_LONG;
        }
        if problem != 0u {
            atomicOr(&status[0], problem);
            atomicMin(&status[1], index * 8u + problem);
        }
    }
}

// The 64 bytes from byte `at`: the 17 words that hold them, funnelled
// (unaligned.wgsl). Words, not vec4s: the caller's buffer need not hold a
// whole number of them.
fn block_at(at: u32) -> Block {
    let w = at >> 2u;
    let s = (at & 3u) * 8u;
    let a = vec4(bytes[w], bytes[w + 1u], bytes[w + 2u], bytes[w + 3u]);
    let b = vec4(bytes[w + 4u], bytes[w + 5u], bytes[w + 6u], bytes[w + 7u]);
    let c = vec4(bytes[w + 8u], bytes[w + 9u], bytes[w + 10u], bytes[w + 11u]);
    let d = vec4(bytes[w + 12u], bytes[w + 13u], bytes[w + 14u], bytes[w + 15u]);
    let e = bytes[w + 16u];
    return Block(funnel4(a, b.x, s), funnel4(b, c.x, s), funnel4(c, d.x, s), funnel4(d, e, s));
}

fn hash_bytes(index: u32, start: u32, len: u32) {
    let cv = blob_cv_at(Cv(bp.key[0], bp.key[1]), bp.base_flags, start, len);
    out[2u * index] = cv.low;
    out[2u * index + 1u] = cv.high;
}

@compute @workgroup_size(workgroup_size)
fn hash_packed(
    @builtin(global_invocation_id) id: vec3<u32>,
    @builtin(local_invocation_index) local: u32,
) {
    if local == 0u {
        problems = atomicLoad(&status[0]);
    }
    let found = workgroupUniformLoad(&problems);
    let index = blob_index(id);
    if index >= bp.count || found != 0u {
        return;
    }
    let start = offset(index).x;
    hash_bytes(index, start, offset(index + 1u).x - start);
}

@compute @workgroup_size(workgroup_size)
fn hash_records(@builtin(global_invocation_id) id: vec3<u32>) {
    let index = blob_index(id);
    if index >= bp.count {
        return;
    }
    hash_bytes(index, bp.first_byte + index * bp.record_len, bp.record_len);
}
