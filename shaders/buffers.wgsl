// Blobs that already live in the caller's GPU buffers: packed bytes with
// Arrow-style offsets (u32 or u64), or fixed-size records, at any byte
// offset, read through unaligned.wgsl. Follows compress.wgsl and
// unaligned.wgsl in one module.
//
// `check_packed` runs first, in a pass of its own: it flags offsets that
// decrease or run past the data, and keeps the first such blob's index;
// the hashing entries then write nothing at all, so a bad batch leaves the
// caller's digest buffer untouched. It also lists the blobs over one
// chunk.
//
// A blob of at most 1024 bytes is one invocation of `hash_packed` or
// `hash_records`. Blobs of several block counts are hashed in order of
// their count within each workgroup of `hash_packed`. An invocation runs
// as many compressions as its blob has blocks, and the lanes that run
// together (a warp of 32 on a card, 8 on lavapipe) take as long as the
// longest blob among them: lengths uniform in 1..=1024 took 1.7 times as
// long a byte as the same blobs sorted by block count on lavapipe. Sorted
// within a workgroup of SORT_GROUP, each warp's blobs differ by a block or
// two, with no pass, buffer or wait added. `check_packed` notes which block
// counts occur, so that batches of one count skip the sort.
//
// Longer blobs are trees of chunks, hashed by an entry of their own,
// `hash_trees` (the tree code inside `hash_packed` made its short blobs
// three times slower on lavapipe): one of up to SHORT_TREE chunks by one
// invocation, chunk after chunk; one of up to PIECE chunks by a whole
// workgroup, whose lanes share its chunks. Its invocations hash LONG_GROUP
// chunks at a time and join them in workgroup memory; the roots of those
// whole subtrees are joined as BLAKE3's incremental hasher joins chunks.
// A longer blob is split in pieces of PIECE chunks, each a whole subtree of
// its tree, that workgroups hash side by side (one workgroup took a 16 MiB
// blob alone, on one of lavapipe's cores, at a third of the slab path's
// rate); `join_pieces` then joins each blob's pieces the same way, in a
// dispatch of its own, after all of them are done.
// (The host cannot plan per-chunk jobs, as it does for slabs, without
// reading the offsets back: a round trip on every call.)
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
// has bit `n` set where some blob is of class `n` (`class_of`).
const DECREASING: u32 = 1u;
const PAST_DATA: u32 = 2u;

// Storage rather than uniform (src/gpu/device.rs says why).
@group(0) @binding(0) var<storage, read> bp: BufferParams;
@group(0) @binding(1) var<storage, read> offsets: array<u32>;
@group(0) @binding(2) var<storage, read> bytes: array<u32>;
@group(0) @binding(3) var<storage, read_write> out: array<vec4<u32>>;
@group(0) @binding(4) var<storage, read_write> status: array<atomic<u32>, 4>;
// Packed blobs over one chunk, listed by `check_packed` in no set order:
// how many have up to SHORT_TREE chunks, how many more up to PIECE chunks,
// and a word for the longer ones (`list_tree_blob`); then the next piece
// for a workgroup of `hash_trees` to take (for records too); then the
// indices of the first from word LIST_START on and of the second from the
// back.
// The host sizes it for as many as the data can hold (the offsets of a
// good batch never decrease, so no two blobs overlap); only a batch with a
// problem, which hashes nothing, can find more.
@group(0) @binding(5) var<storage, read_write> trees: array<atomic<u32>>;
// Blobs over PIECE chunks: from the front, each packed one's index, start,
// length and first piece, listed by `check_packed` in the order of their
// pieces; from the back, two vec4s a piece, its chaining value, written by
// `hash_trees` for `join_pieces`. Sized by the host as `trees` is.
@group(0) @binding(6) var<storage, read_write> pieces: array<vec4<u32>>;

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
// Classes of blobs: 0 to 15 for blobs of 1 to 16 blocks, 16 for longer
// ones (`hash_trees`', not `hash_packed`'s: sorted last, out of the way).
const CLASSES: u32 = 17u;
const TREE: u32 = 16u;
// Chunks of the longest blob that one invocation of `hash_trees` hashes;
// a whole workgroup hashes each longer one.
const SHORT_TREE: u32 = 16u;
// Chunks of the longest blob that one workgroup hashes alone, and of the
// pieces a longer one is split in: a power of two, so that each piece is a
// whole subtree of the blob's tree. A 1 GiB blob makes 4096 pieces, about
// as many workgroups as a card keeps busy, and its join takes 64 rounds.
const PIECE: u32 = 256u;
// Where the lists of `trees` begin: after their three counts and the next
// piece.
const LIST_START: u32 = 4u;
const NEXT_PIECE: u32 = 3u;
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
// is one block), or TREE.
fn class_of(len: u32) -> u32 {
    return min((max(len, 1u) - 1u) / 64u, TREE);
}

// Chunks of a blob of `len` bytes (over 0).
fn chunks_of(len: u32) -> u32 {
    // No `+ 1023`: a length near 4 GiB would wrap.
    return (len - 1u) / 1024u + 1u;
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
        }
        if problem != 0u {
            atomicOr(&status[0], problem);
            atomicMin(&status[1], index * 8u + problem);
        } else {
            let kind = class_of(end.x - start.x);
            seen |= 1u << kind;
            if kind == TREE {
                list_tree_blob(index, start.x, end.x - start.x);
            }
        }
    }
    if (seen & ~atomicLoad(&status[3])) != 0u {
        atomicOr(&status[3], seen);
    }
}

// Lists blob `index` of over one chunk for `hash_trees`: among the blobs
// of up to SHORT_TREE chunks, of up to PIECE, or of more. For the last, one
// atomic add to word 2 of `trees` gives it both its place in their list
// (the count of such blobs is the word's high half) and its first piece
// (the count of their pieces, the low half), so that the list is in the
// order of their pieces (`piece_owner` searches it). Neither half can
// carry into the other: a good batch under 4 GiB has under 2^14 such
// blobs and 2^15 pieces.
fn list_tree_blob(index: u32, start: u32, len: u32) {
    let chunks = chunks_of(len);
    if chunks > PIECE {
        let before = atomicAdd(&trees[2], (1u << 16u) + pieces_of(chunks));
        let slot = before >> 16u;
        if slot < arrayLength(&pieces) {
            pieces[slot] = vec4(index, start, len, before & 0xffffu);
        }
        return;
    }
    let long = chunks > SHORT_TREE;
    let listed = atomicAdd(&trees[u32(long)], 1u);
    if listed + LIST_START < arrayLength(&trees) {
        let at = select(listed + LIST_START, arrayLength(&trees) - 1u - listed, long);
        atomicStore(&trees[at], index);
    }
}

// Pieces of a blob of `chunks` chunks (over 0).
fn pieces_of(chunks: u32) -> u32 {
    return (chunks - 1u) / PIECE + 1u;
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

fn write_digest(index: u32, cv: Cv) {
    out[2u * index] = cv.low;
    out[2u * index + 1u] = cv.high;
}

fn hash_bytes(index: u32, start: u32, len: u32) {
    write_digest(index, blob_cv_at(Cv(bp.key[0], bp.key[1]), bp.base_flags, start, len));
}

fn parent_cv(left: Cv, right: Cv, root: u32) -> Cv {
    let m = Block(left.low, left.high, right.low, right.high);
    return compress(Cv(bp.key[0], bp.key[1]), m, 0u, 64u, bp.base_flags | PARENT | root);
}

// The digest of a blob of 2 to SHORT_TREE chunks from byte `start`, by
// one invocation, chunk after chunk, joined as BLAKE3's incremental hasher
// joins them. A whole workgroup would leave most of its lanes waiting on a
// blob of a few chunks (4 KiB blobs took ten times as long a byte that way
// on lavapipe).
fn short_tree_at(start: u32, len: u32) -> Cv {
    let key = Cv(bp.key[0], bp.key[1]);
    let last = chunks_of(len) - 1u;
    // Subtrees waiting to be joined, in named variables rather than an
    // array that the compiler would keep in memory: the roots of 8, 4, 2
    // and 1 chunks, as many as the chunks so far have one bits.
    var eight: Cv;
    var four: Cv;
    var two: Cv;
    var one: Cv;
    for (var chunk = 0u; chunk < last; chunk++) {
        let cv = chunk_cv_at(key, bp.base_flags, start + 1024u * chunk, 1024u, chunk, CHUNK_END);
        let done = chunk + 1u;
        if done % 2u == 1u {
            one = cv;
        } else if done % 4u == 2u {
            two = parent_cv(one, cv, 0u);
        } else if done % 8u == 4u {
            four = parent_cv(two, parent_cv(one, cv, 0u), 0u);
        } else {
            eight = parent_cv(four, parent_cv(two, parent_cv(one, cv, 0u), 0u), 0u);
        }
    }
    // The last chunk, joined with the waiting subtrees from the smallest:
    // one for each one bit of `last` (the chunks before it).
    var cv = chunk_cv_at(key, bp.base_flags, start + 1024u * last, len - 1024u * last, last, CHUNK_END);
    var above = last;
    if above % 2u == 1u {
        above -= 1u;
        cv = parent_cv(one, cv, select(0u, ROOT, above == 0u));
    }
    if above % 4u == 2u {
        above -= 2u;
        cv = parent_cv(two, cv, select(0u, ROOT, above == 0u));
    }
    if above % 8u == 4u {
        above -= 4u;
        cv = parent_cv(four, cv, select(0u, ROOT, above == 0u));
    }
    if above == 8u {
        cv = parent_cv(eight, cv, ROOT);
    }
    return cv;
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
        var kind = 0u;
        var rank = 0u;
        if live {
            kind = class_of(blob.z);
            rank = atomicAdd(&class_blobs[kind], 1u);
        }
        workgroupBarrier();
        if live {
            for (var shorter = 0u; shorter < kind; shorter++) {
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
    // Longer blobs are `hash_trees`'.
    if live && blob.z <= 1024u {
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

// Tree blob `k`: the k-th record, or the k-th packed blob `check_packed`
// listed of up to SHORT_TREE chunks (or over, for `long`).
fn tree_blob_at(k: u32, long: bool) -> vec3<u32> {
    if bp.record_len != 0u {
        return vec3(k, bp.first_byte + k * bp.record_len, bp.record_len);
    }
    let at = select(k + LIST_START, arrayLength(&trees) - 1u - k, long);
    let index = atomicLoad(&trees[at]);
    let start = offset(index).x;
    return vec3(index, start, offset(index + 1u).x - start);
}

// How many tree blobs there are of up to SHORT_TREE chunks (or over, up to
// PIECE, for `long`): every record of that kind, or as many packed ones
// as `check_packed` listed (none where it found a problem).
fn tree_blobs(long: bool) -> u32 {
    if bp.record_len != 0u {
        let chunks = chunks_of(bp.record_len);
        let kind = (chunks > SHORT_TREE) == long && chunks <= PIECE;
        return select(0u, bp.count, kind);
    }
    if atomicLoad(&status[0]) != 0u {
        return 0u;
    }
    return min(atomicLoad(&trees[u32(long)]), arrayLength(&trees) - LIST_START);
}

// How many blobs are over PIECE chunks, and their pieces: every record or
// none, or as many packed ones as `check_packed` listed (none where it
// found a problem).
fn split_blobs() -> vec2<u32> {
    if bp.record_len != 0u {
        let chunks = chunks_of(bp.record_len);
        return select(vec2(0u), vec2(bp.count, bp.count * pieces_of(chunks)), chunks > PIECE);
    }
    if atomicLoad(&status[0]) != 0u {
        return vec2(0u);
    }
    let listed = atomicLoad(&trees[2]);
    return vec2(listed >> 16u, listed & 0xffffu);
}

// Blob `k` over PIECE chunks: index, start, length and first piece.
fn split_blob_at(k: u32) -> vec4<u32> {
    if bp.record_len != 0u {
        let first = k * pieces_of(chunks_of(bp.record_len));
        return vec4(k, bp.first_byte + k * bp.record_len, bp.record_len, first);
    }
    return pieces[k];
}

// Which of the `split` blobs over PIECE chunks piece `p` belongs to: the
// last whose first piece is at most `p` (the list is in their order).
fn piece_owner(p: u32, split: u32) -> u32 {
    if bp.record_len != 0u {
        return p / pieces_of(chunks_of(bp.record_len));
    }
    var low = 0u;
    var high = split;
    while high - low > 1u {
        let middle = (low + high) / 2u;
        if pieces[middle].w <= p {
            low = middle;
        } else {
            high = middle;
        }
    }
    return low;
}

// Where piece `p`'s chaining value lies in `pieces`: from the back.
fn piece_cv_at(p: u32) -> u32 {
    return arrayLength(&pieces) - 2u * (p + 1u);
}

// Chunks a workgroup hashes at once in a blob over SHORT_TREE chunks: a
// power of two, so that each round's chunks are a whole subtree of the
// blob's tree.
const LONG_GROUP: u32 = 64u;
// What the workgroup's first invocation reads for all: the counts of
// split blobs, of their pieces and of the other blobs over SHORT_TREE
// chunks, then the blob the workgroup is on (index, start, length and,
// for a split one, its first piece).
var<workgroup> tree_counts: vec3<u32>;
var<workgroup> tree_blob: vec4<u32>;
var<workgroup> taken_piece: u32;
// A round's chaining values, joined in place.
var<workgroup> nodes: array<Cv, LONG_GROUP>;
// The roots of a tree's whole rounds not yet joined, as in BLAKE3's
// incremental hasher: at most 8, for a blob under 4 GiB has under 2^14
// pieces, so under 2^8 rounds of them.
var<workgroup> subtrees: array<Cv, 16>;

// The blobs over one chunk, in one dispatch (each dispatch of workgroups
// with nothing to do cost about a tenth of a millisecond on lavapipe):
// each workgroup takes the next piece of the blobs over PIECE chunks until
// none is left (pieces by stride would leave one workgroup all of the
// blobs' full pieces and another all of their short last ones), then every
// so many of the blobs over SHORT_TREE chunks one at a time, then its
// invocations every so many of the others, one each. The host dispatches
// it whether or not a packed batch has such blobs: a workgroup with none
// to hash returns at once.
@compute @workgroup_size(LONG_GROUP)
fn hash_trees(
    @builtin(workgroup_id) group: vec3<u32>,
    @builtin(num_workgroups) groups: vec3<u32>,
    @builtin(local_invocation_index) local: u32,
) {
    if local == 0u {
        tree_counts = vec3(split_blobs(), tree_blobs(true));
    }
    let counts = workgroupUniformLoad(&tree_counts);
    while counts.y > 0u {
        if local == 0u {
            let next = atomicAdd(&trees[NEXT_PIECE], 1u);
            if next < counts.y {
                tree_blob = split_blob_at(piece_owner(next, counts.x));
            }
            taken_piece = next;
        }
        let p = workgroupUniformLoad(&taken_piece);
        if p >= counts.y {
            break;
        }
        let blob = workgroupUniformLoad(&tree_blob);
        let first = (p - blob.w) * PIECE;
        let leaves = min(PIECE, chunks_of(blob.z) - first);
        let cv = workgroup_tree(blob, first, leaves, false, false, local);
        if local == 0u {
            let at = piece_cv_at(p);
            pieces[at] = cv.low;
            pieces[at + 1u] = cv.high;
        }
    }
    for (var k = group.x; k < counts.z; k += groups.x) {
        if local == 0u {
            tree_blob = vec4(tree_blob_at(k, true), 0u);
        }
        let blob = workgroupUniformLoad(&tree_blob);
        let cv = workgroup_tree(blob, 0u, chunks_of(blob.z), false, true, local);
        if local == 0u {
            write_digest(blob.x, cv);
        }
    }
    let short = tree_blobs(false);
    let stride = groups.x * LONG_GROUP;
    for (var k = group.x * LONG_GROUP + local; k < short; k += stride) {
        let blob = tree_blob_at(k, false);
        write_digest(blob.x, short_tree_at(blob.y, blob.z));
    }
}

// The blobs over PIECE chunks, once `hash_trees` has hashed their pieces:
// each workgroup takes every so many, one at a time, and joins its pieces'
// chaining values into its root. The host dispatches it only where the
// data can hold such a blob.
@compute @workgroup_size(LONG_GROUP)
fn join_pieces(
    @builtin(workgroup_id) group: vec3<u32>,
    @builtin(num_workgroups) groups: vec3<u32>,
    @builtin(local_invocation_index) local: u32,
) {
    if local == 0u {
        tree_counts = vec3(split_blobs(), 0u);
    }
    let split = workgroupUniformLoad(&tree_counts).x;
    for (var k = group.x; k < split; k += groups.x) {
        if local == 0u {
            tree_blob = split_blob_at(k);
        }
        let blob = workgroupUniformLoad(&tree_blob);
        let cv = workgroup_tree(blob, blob.w, pieces_of(chunks_of(blob.z)), true, true, local);
        if local == 0u {
            write_digest(blob.x, cv);
        }
    }
}

// Leaf `leaf` of a tree over blob (index, start, length, first piece):
// where `joining`, the chaining value of piece `leaf`, else that of chunk
// `leaf` of the blob.
fn leaf_cv(blob: vec4<u32>, leaf: u32, joining: bool) -> Cv {
    if joining {
        let at = piece_cv_at(leaf);
        return Cv(pieces[at], pieces[at + 1u]);
    }
    let at = leaf * 1024u;
    let len = min(1024u, blob.z - at);
    return chunk_cv_at(Cv(bp.key[0], bp.key[1]), bp.base_flags, blob.y + at, len, leaf, CHUNK_END);
}

// The root of `leaves` leaves from leaf `first` (`leaf_cv`) — a whole
// blob's, flagged as such where `root`, else a piece's subtree — by the
// whole workgroup, returned to its first invocation: each round, each
// invocation takes a leaf, the round's leaves are paired from the left
// level by level (an odd last node carried up) into the root of their
// subtree, and the first invocation joins that root with the earlier
// rounds'. A root of one round ends with that round's last compression; of
// more, with the last join of the subtrees. `leaves` is over 1 where
// `root`: a blob of one leaf is no tree.
fn workgroup_tree(blob: vec4<u32>, first: u32, leaves: u32, joining: bool, root: bool, local: u32) -> Cv {
    let rounds = (leaves - 1u) / LONG_GROUP + 1u;
    // The first invocation's: subtrees waiting to be joined, and the root.
    var waiting = 0u;
    var cv: Cv;
    for (var round = 0u; round < rounds; round++) {
        let here = min(LONG_GROUP, leaves - round * LONG_GROUP);
        if local < here {
            nodes[local] = leaf_cv(blob, first + round * LONG_GROUP + local, joining);
        }
        workgroupBarrier();
        var nodes_left = here;
        while nodes_left > 1u {
            let pairs = nodes_left / 2u;
            var joined: Cv;
            if local < pairs {
                let flag = select(0u, ROOT, root && rounds == 1u && nodes_left == 2u);
                joined = parent_cv(nodes[2u * local], nodes[2u * local + 1u], flag);
            }
            workgroupBarrier();
            if local < pairs {
                nodes[local] = joined;
            } else if local == pairs && nodes_left % 2u == 1u {
                nodes[local] = nodes[nodes_left - 1u];
            }
            workgroupBarrier();
            nodes_left = pairs + nodes_left % 2u;
        }
        if local == 0u {
            cv = nodes[0];
            if round + 1u < rounds {
                // As many subtrees complete as `done` has trailing zeros.
                var done = round + 1u;
                while done % 2u == 0u {
                    waiting -= 1u;
                    cv = parent_cv(subtrees[waiting], cv, 0u);
                    done /= 2u;
                }
                subtrees[waiting] = cv;
                waiting += 1u;
            } else {
                while waiting > 0u {
                    waiting -= 1u;
                    let flag = select(0u, ROOT, root && waiting == 0u);
                    cv = parent_cv(subtrees[waiting], cv, flag);
                }
            }
        }
        // Before the next round's leaves overwrite `nodes`.
        workgroupBarrier();
    }
    return cv;
}
