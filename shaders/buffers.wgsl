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
// Blobs of several block counts are hashed in order of their count within
// each workgroup of `hash_packed`. An invocation runs as many compressions
// as its blob has blocks, and the lanes that run together (a warp of 32 on
// a card, 8 on lavapipe) take as long as the longest blob among them:
// lengths uniform in 1..=1024 took 1.7 times as long a byte as the same
// blobs sorted by block count on lavapipe. Sorted within a workgroup of
// SORT_GROUP, each warp's blobs differ by a block or two, with no pass,
// buffer or wait added. `check_packed` notes which block counts occur, so
// that batches of one count skip the sort.
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
// host keeps batches under 2^29 blobs). status[2] is the host's. status[3]
// has bit `n` set where some blob has `n + 1` blocks.
const DECREASING: u32 = 1u;
const PAST_DATA: u32 = 2u;
const TOO_LONG: u32 = 4u;

// Storage rather than uniform (src/gpu/device.rs says why).
@group(0) @binding(0) var<storage, read> bp: BufferParams;
@group(0) @binding(1) var<storage, read> offsets: array<u32>;
@group(0) @binding(2) var<storage, read> bytes: array<u32>;
@group(0) @binding(3) var<storage, read_write> out: array<vec4<u32>>;
@group(0) @binding(4) var<storage, read_write> status: array<atomic<u32>, 4>;

// What `check_packed` found, read once per workgroup rather than by every
// invocation: whether a blob has a problem, else whether to sort.
var<workgroup> course: u32;
const STOP: u32 = 0u;
const AS_THEY_LIE: u32 = 1u;
const SORT: u32 = 2u;

// Invocations in a workgroup of `hash_packed`, the blobs it sorts: enough
// warps of 32 that each takes blobs of one or two block counts (with 64, a
// card's two warps would take the shorter and the longer half).
const SORT_GROUP: u32 = 256u;
// Block counts a blob of at most 1024 bytes may have.
const CLASSES: u32 = 16u;
// `hash_packed`'s blobs of each block count less one.
var<workgroup> class_blobs: array<atomic<u32>, CLASSES>;
// The workgroup's blobs sorted by block count: index, start and length.
var<workgroup> sorted: array<vec3<u32>, SORT_GROUP>;

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

// A blob's block count less one (0..=15), from its length (an empty blob
// is one block).
fn class_of(len: u32) -> u32 {
    return min((max(len, 1u) - 1u) / 64u, CLASSES - 1u);
}

// A few blobs per invocation, `check_stride` apart so that each round's
// loads are contiguous across invocations: one blob each, the pass was
// bound by how fast the card starts short invocations (16 M blobs took a
// quarter of their hash's time on an H200). An invocation adds the block
// counts it saw to `status` only where some are not there yet: after the
// first few, none does, and no workgroup waits on a barrier.
@compute @workgroup_size(workgroup_size)
fn check_packed(@builtin(global_invocation_id) id: vec3<u32>) {
    var seen = 0u;
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
        } else {
            seen |= 1u << class_of(end.x - start.x);
        }
    }
    if (seen & ~atomicLoad(&status[3])) != 0u {
        atomicOr(&status[3], seen);
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

// Where blobs have several block counts, each invocation ranks its blob
// among the workgroup's of the same count and puts it at its place in
// their order by count (a counting sort), then hashes the blob at its own
// place. Otherwise each hashes its own.
@compute @workgroup_size(SORT_GROUP)
fn hash_packed(
    @builtin(global_invocation_id) id: vec3<u32>,
    @builtin(local_invocation_index) local: u32,
) {
    if local < CLASSES {
        atomicStore(&class_blobs[local], 0u);
    }
    if local == 0u {
        var chosen = STOP;
        if atomicLoad(&status[0]) == 0u {
            chosen = select(AS_THEY_LIE, SORT, countOneBits(atomicLoad(&status[3])) > 1u);
        }
        course = chosen;
    }
    // Also the barrier after which the counters are zero.
    let way = workgroupUniformLoad(&course);
    let index = blob_index(id);
    let live = index < bp.count;
    if way == STOP {
        return;
    }
    var blob = vec3(index, 0u, 0u);
    if live {
        blob.y = offset(index).x;
        blob.z = offset(index + 1u).x - blob.y;
    }
    if way == SORT {
        var blocks = 0u;
        var rank = 0u;
        if live {
            blocks = class_of(blob.z);
            rank = atomicAdd(&class_blobs[blocks], 1u);
        }
        workgroupBarrier();
        if live {
            for (var shorter = 0u; shorter < blocks; shorter++) {
                rank += atomicLoad(&class_blobs[shorter]);
            }
            sorted[rank] = blob;
        }
        workgroupBarrier();
        // The workgroup's live blobs are its first ones, as many as places
        // were taken.
        if live {
            blob = sorted[local];
        }
    }
    if live {
        hash_bytes(blob.x, blob.y, blob.z);
    }
}

@compute @workgroup_size(workgroup_size)
fn hash_records(@builtin(global_invocation_id) id: vec3<u32>) {
    let index = blob_index(id);
    if index >= bp.count {
        return;
    }
    hash_bytes(index, bp.first_byte + index * bp.record_len, bp.record_len);
}
