//! The CPU driver for one batch: on one thread a single work unit, on
//! several a unit per chunk that a thread takes ([`share`]), and within each
//! unit every blob routed to the path that suits its length.

use super::groups::{hash_back_to_back, prefetch_input, Binner, Job};
use super::kernel::{GroupParams, LaneGroup, MAX_LANES};
use super::prefetch::prefetch;
use super::regular_trees::hash_regular_trees;
use super::share::{share, share_checking, share_items};
use super::subtrees::hash_all_in_subtrees;
use super::tree::{hash_trees, TreeBlob, Trees};
use super::Kernel;
use crate::blobs::{BlobSource, Offset};
use crate::consts::{BLOCK_LEN, CHUNK_END, CHUNK_LEN, CHUNK_START, ROOT};
use crate::error::Error;
use crate::mode::{Mode, ModeWords};
use crate::offsets::SharedCheck;
use std::sync::{Mutex, PoisonError};

/// Input bytes of blobs bound for the lane tree that a unit collects before
/// it hashes them, while their chunks are still in cache. Each batch ends
/// every tree level with ragged, partly empty lane groups (most blobs' last
/// chunks among them), so fewer, larger batches waste fewer lanes: lengths
/// in 1025..=16384 ran 8 % faster at 1 MiB than at 256 KiB (AVX-512, one
/// thread; 4 MiB no better).
const TREE_BATCH_BYTES: usize = 1024 * 1024;

/// From this length a blob is hashed on all of the engine's threads when it
/// has more than one ([`hash_all_in_subtrees`]), after the rest of its batch.
const PARALLEL_BLOB_MIN: usize = 1 << 20;

/// How a batch may use threads.
#[derive(Clone, Copy)]
pub(crate) enum Threads<'p> {
    /// On the calling thread only.
    One,
    /// On this rayon pool.
    Pool(&'p rayon::ThreadPool),
    /// On rayon's global pool.
    Global,
    /// On `workers` threads, the calling thread among them, of this pool
    /// (or rayon's global one): the pool's other workers stay free for
    /// other work at the same time, as a split's CPU share leaves them to
    /// pack the GPU's share.
    Part {
        pool: Option<&'p rayon::ThreadPool>,
        workers: usize,
    },
}

impl<'p> Threads<'p> {
    /// At most `workers` of these threads, the calling thread among them
    /// (one: the calling thread alone).
    pub(crate) fn part(self, workers: usize) -> Threads<'p> {
        let pool = match self {
            Threads::One => return Threads::One,
            _ if workers <= 1 => return Threads::One,
            Threads::Pool(pool) => Some(pool),
            Threads::Global => None,
            Threads::Part { pool, .. } => pool,
        };
        Threads::Part { pool, workers }
    }

    /// `work` on every item, spread over these threads, the calling thread
    /// among them, the outputs in the items' order (tasks of extended
    /// output, files opened and read side by side; [`share_items`]).
    pub(crate) fn map<T: Send, O: Send>(
        self,
        items: Vec<T>,
        work: impl Fn(T) -> O + Sync,
    ) -> Vec<O> {
        share_items(self, items, work)
    }

    /// Runs `work` on every item, spread over these threads: copies too
    /// big for one core (the GPU's packing of a slab, outputs cut from
    /// digests or copied to a dictionary's rows).
    pub(crate) fn for_each<T: Send>(self, items: Vec<T>, work: impl Fn(T) + Sync) {
        // A `Vec<()>` allocates nothing.
        self.map(items, work);
    }
}

/// Hashes every blob of `source` into `out` (same length, checked by the
/// caller) with the CPU `kernel`.
pub(crate) fn hash_source<S: BlobSource>(
    kernel: Kernel,
    threads: Threads,
    mode: Mode,
    source: &S,
    out: &mut [[u8; 32]],
) {
    debug_assert_eq!(source.count(), out.len());
    if too_few_for_lanes(mode, source) {
        for (index, slot) in out.iter_mut().enumerate() {
            *slot = hash_alone(threads, mode, source.blob(index));
        }
        return;
    }
    let unit = UnitParams::new(kernel, mode, threads);
    match threads {
        // The whole batch is one unit: a unit ends by hashing its partial
        // bins in ragged groups, which in 256 KiB units of lengths in
        // 1..=1024 took a seventh of the blobs. One unit: those lengths
        // +4 %, 1 KiB +2 %, 64 B +1.5 % (AVX2, side by side).
        Threads::One => hash_unit(&unit, source, 0, out),
        Threads::Pool(_) | Threads::Global | Threads::Part { .. } => {
            share(threads, source, out, |first, slots| {
                hash_unit(&unit, source, first, slots)
            });
            unit.hash_deferred(source, out);
        }
    }
}

/// Hashes the blobs of packed offsets not yet checked into `out` (one slot
/// per blob) on several threads, which check the offsets first
/// ([`share_checking`]); the check's error if they fail it, with nothing
/// written.
pub(crate) fn hash_checking<O: Offset>(
    kernel: Kernel,
    threads: Threads,
    mode: Mode,
    check: &SharedCheck<O>,
    out: &mut [[u8; 32]],
) -> Result<(), Error> {
    let unit = UnitParams::new(kernel, mode, threads);
    let blobs = share_checking(threads, check, out, |blobs, first, slots| {
        hash_unit(&unit, blobs, first, slots)
    })?;
    unit.hash_deferred(&blobs, out);
    Ok(())
}

/// What every work unit of a batch shares.
struct UnitParams<'m, 'p> {
    kernel: Kernel,
    mode: Mode<'m>,
    words: ModeWords,
    /// Where blobs of [`PARALLEL_BLOB_MIN`] or more are spread.
    threads: Threads<'p>,
    /// The indices of such blobs, met while the batch is shared out and
    /// hashed after it ([`UnitParams::hash_deferred`]), so that every
    /// thread works on each (inside a chunk, the thread that took it would
    /// hash it alone while the others run out of chunks).
    deferred: Mutex<Vec<usize>>,
}

impl<'m, 'p> UnitParams<'m, 'p> {
    /// The parameters of a batch in `mode` (its key words derived once).
    fn new(kernel: Kernel, mode: Mode<'m>, threads: Threads<'p>) -> Self {
        let words = mode.words(|context| hash_one(kernel, Mode::CONTEXT, context));
        UnitParams {
            kernel,
            mode,
            words,
            threads,
            deferred: Mutex::new(Vec::new()),
        }
    }

    /// Hashes the deferred blobs of `source` into their slots of `out`, all
    /// together on all threads.
    fn hash_deferred<S: BlobSource>(self, source: &S, out: &mut [[u8; 32]]) {
        let deferred = self
            .deferred
            .into_inner()
            .unwrap_or_else(PoisonError::into_inner);
        // Most batches have none: nothing to set up then (a derive-key
        // context would be hashed again).
        if deferred.is_empty() {
            return;
        }
        let blobs: Vec<&[u8]> = deferred.iter().map(|&index| source.blob(index)).collect();
        let digests = hash_all_in_subtrees(self.threads, self.mode, &blobs);
        for (index, digest) in deferred.into_iter().zip(digests) {
            out[index] = digest;
        }
    }
}

/// Hashes blobs `start..start + out.len()`.
///
/// The unit is read a lane group at a time, the next group's blobs looked up
/// (and their loads started) while the current one compresses. A group
/// whose blobs all have one length of at most a chunk is hashed straight
/// into its output slots in input order; other blobs go one by one to the
/// path that suits their length: the binner for single chunks, the lane
/// tree for blobs of a few chunks, `blake3` for big ones. A unit of blobs
/// of one length of at most a chunk laid back to back (packed or records)
/// is cut out of its bytes instead ([`hash_back_to_back`]); a unit of
/// slices that opens with whole groups of one length of at most a block
/// hashes those first, many groups per kernel call
/// ([`hash_single_block_prefix`]).
fn hash_unit<S: BlobSource>(unit: &UnitParams, source: &S, start: usize, out: &mut [[u8; 32]]) {
    let params = GroupParams {
        key: unit.words.key,
        flags: unit.words.flags,
        first_flags: CHUNK_START,
    };
    let width = unit.kernel.widths()[0];
    let mut binner = Binner::new(unit.kernel, params);
    if let Some((data, len)) = source.back_to_back(start, start + out.len()) {
        if len <= CHUNK_LEN {
            hash_back_to_back(&mut binner, width, data, len, CHUNK_END | ROOT, 1, out);
            binner.finish(out);
            return;
        }
        if unit.kernel.uses_regular_trees(len) {
            let words = unit.words;
            hash_regular_trees(unit.kernel, words.key, words.flags, data, len, out);
            return;
        }
    }
    let done = hash_single_block_prefix(&mut binner, width, source, start, out);
    let (start, out) = (start + done, &mut out[done..]);
    let bytes = source.contiguous_bytes(start, start + out.len());
    let mut trees = PendingTrees {
        bytes,
        ..PendingTrees::default()
    };
    let group = LaneGroup {
        last_flags: [CHUNK_END | ROOT; MAX_LANES],
        ..LaneGroup::default()
    };
    // Two groups used in turn: one compresses while the next is looked up,
    // with no copy of either.
    let mut pair = [group, group];
    let groups = out.len() / width;
    let mut previous_end = core::ptr::null();
    // Blobs laid back to back are hinted into L2 well ahead of the lookup,
    // which hints only the first blocks of each into L1: by the binner's
    // paired compressions where they keep pace, else by the lookup.
    binner.stream_from(bytes);
    if groups > 0 {
        lookup(
            source,
            start,
            &mut pair[0].inputs[..width],
            &mut previous_end,
        );
    }
    for index in 0..groups {
        let [even, odd] = &mut pair;
        let (current, next) = if index % 2 == 0 {
            (&*even, odd)
        } else {
            (&*odd, even)
        };
        if index + 1 < groups {
            lookup(
                source,
                start + (index + 1) * width,
                &mut next.inputs[..width],
                &mut previous_end,
            );
            let next_inputs = &next.inputs[..width];
            // A group with a blob longer than a chunk is passed over: the
            // lane tree hints its blobs evenly as it bins their chunks, and
            // `blake3` reads its own in order. Hinted in one burst (such a
            // group spans up to 256 KiB) they held the core up on its miss
            // buffers: side by side on an Intel Xeon (Sapphire Rapids,
            // packed, 64 Ki blobs, GiB/s), one thread, AVX-512 lengths in
            // 1025..=16384 4.12 → 5.05, AVX2 2.73 → 3.04, 16 KiB blobs
            // (`blake3`'s) 4.60 → 5.15; two threads 8.12 → 10.25; lengths
            // in 1..=1024 level (6.08 → 5.99, AVX2 3.43 → 3.41).
            match next_inputs.iter().all(|input| input.len() <= CHUNK_LEN) {
                true => binner.reach(next_inputs[width - 1]),
                false => binner.pass(next_inputs[width - 1]),
            }
        }
        let first = index * width;
        let inputs = &current.inputs[..width];
        let len = inputs[0].len();
        if len <= CHUNK_LEN && inputs.iter().all(|input| input.len() == len) {
            if len <= BLOCK_LEN {
                binner.hash_single_blocks_in_place(current, first, out);
            } else {
                binner.hash_in_place(current, &mut out[first..first + width]);
            }
        } else {
            prefetch_slots(&out[first..first + width]);
            for (lane, data) in inputs.iter().enumerate() {
                route(
                    unit,
                    &mut binner,
                    &mut trees,
                    start,
                    first + lane,
                    data,
                    out,
                );
            }
        }
    }
    for dest in groups * width..out.len() {
        let data = source.blob(start + dest);
        route(unit, &mut binner, &mut trees, start, dest, data, out);
    }
    binner.finish(out);
    trees.hash(unit, out);
}

/// Blobs a single-block prefix ([`hash_single_block_prefix`]) gathers per
/// kernel call: 8 groups of AVX-512, 8 KiB of 64-byte blobs, so that the
/// blobs hinted for the next call and those of the current one fit in L1
/// together (set by that reckoning, not tuned).
const PREFIX_CHUNK: usize = 8 * MAX_LANES;

/// Hashes the unit's leading whole groups of blobs that all have one length
/// of at most a block, if it starts with a group of them, straight into
/// their slots; returns how many it hashed (the caller routes the rest).
///
/// Slices of one short length are a common batch for the slice API (keys,
/// digests, fixed-size records kept apart). Gathered a chunk at a time,
/// each blob is looked up and checked once and its digest comes out of the
/// kernel in place, where the group-by-group lookup, with its checks per
/// group and its copy into the binner's run, took a sixth of the time on
/// 64-byte slices. Side by side on Zen 4 (AVX-512, one thread, 64 Ki
/// slices, three rounds, GB/s): cut from one buffer, 64 B 4.79/4.71/4.73
/// → 5.61/5.55/5.59 and 32 B 2.23/2.18/2.16 → 2.51/2.50/2.49; owned apart
/// (`Vec<Vec<u8>>`), 64 B 4.78/4.63/4.47 → 5.09/4.82/5.06. Packed blobs
/// and records skip it: a unit of them all of one length is cut out of its
/// bytes ([`hash_back_to_back`]), with nothing to look up at all.
fn hash_single_block_prefix<'s, S: BlobSource>(
    binner: &mut Binner<'s>,
    width: usize,
    source: &'s S,
    start: usize,
    out: &mut [[u8; 32]],
) -> usize {
    let whole = out.len() / width * width;
    if S::CONTIGUOUS || whole == 0 {
        return 0;
    }
    let len = source.len(start);
    if len > BLOCK_LEN || (1..width).any(|index| source.len(start + index) != len) {
        return 0;
    }
    let chunk = PREFIX_CHUNK.min(whole);
    let (mut even, mut odd) = ([&[][..]; PREFIX_CHUNK], [&[][..]; PREFIX_CHUNK]);
    let mut previous_end = core::ptr::null();
    let end = start + whole;
    let mut done = 0;
    let (mut current, mut next) = (&mut even, &mut odd);
    let mut gathered = gather_equal(source, start, len, &mut current[..chunk], &mut previous_end);
    loop {
        let taken = gathered / width * width;
        let first = start + done + taken;
        // The next chunk is gathered (and its blobs hinted) before this one
        // compresses.
        let more = gathered == chunk && first < end;
        let mut upcoming = 0;
        if more {
            let count = chunk.min(end - first);
            upcoming = gather_equal(source, first, len, &mut next[..count], &mut previous_end);
        }
        let slots = &mut out[done..done + taken];
        binner.hash_single_block_inputs(&current[..taken], CHUNK_END | ROOT, slots);
        done += taken;
        if !more {
            return done;
        }
        core::mem::swap(&mut current, &mut next);
        gathered = upcoming;
    }
}

/// Fills `inputs` with blobs `first..` of `source` while they have length
/// `len`, starting to load them as [`lookup`] does; returns how many it
/// filled.
#[inline]
fn gather_equal<'s, S: BlobSource>(
    source: &'s S,
    first: usize,
    len: usize,
    inputs: &mut [&'s [u8]],
    previous_end: &mut *const u8,
) -> usize {
    for (filled, (slot, index)) in inputs.iter_mut().zip(first..).enumerate() {
        let input = source.blob(index);
        if input.len() != len {
            return filled;
        }
        start_loading::<S>(input, previous_end);
        *slot = input;
    }
    inputs.len()
}

/// Blobs bound for the lane tree, collected so that their chunks and parent
/// nodes fill lane groups together.
#[derive(Default)]
struct PendingTrees<'a> {
    blobs: Vec<TreeBlob<'a>>,
    /// Their bytes in all.
    len: usize,
    /// The unit's bytes, where its blobs lie back to back.
    bytes: Option<&'a [u8]>,
}

impl<'a> PendingTrees<'a> {
    /// Adds a blob; hashes all collected once they reach
    /// [`TREE_BATCH_BYTES`].
    fn push(&mut self, unit: &UnitParams, blob: TreeBlob<'a>, out: &mut [[u8; 32]]) {
        self.len += blob.data.len();
        self.blobs.push(blob);
        if self.len >= TREE_BATCH_BYTES {
            self.hash(unit, out);
        }
    }

    /// Hashes every blob collected into its slot of `out`.
    fn hash(&mut self, unit: &UnitParams, out: &mut [[u8; 32]]) {
        // Most units have none; `hash_trees` would still set up a binner.
        if self.blobs.is_empty() {
            return;
        }
        let trees = Trees {
            kernel: unit.kernel,
            key: unit.words.key,
            flags: unit.words.flags,
            blobs: &self.blobs,
            bytes: self.bytes,
        };
        hash_trees(trees, out);
        self.blobs.clear();
        self.len = 0;
    }
}

/// Sends one blob that is not hashed with a whole lane group to the path
/// that suits its length; `dest` is its slot in `out`, which starts at
/// blob `start` of the batch.
///
/// Inlined, so a blob of at most a chunk is a few stores into its bin; as a
/// call it saved six registers and set up a 2 KiB frame (for the longer
/// blobs' paths) per blob: lengths uniform in 1..=1024 +2 to 4 % (AVX-512,
/// one thread, side by side).
#[inline(always)]
fn route<'a>(
    unit: &UnitParams,
    binner: &mut Binner<'a>,
    trees: &mut PendingTrees<'a>,
    start: usize,
    dest: usize,
    data: &'a [u8],
    out: &mut [[u8; 32]],
) {
    if data.len() <= CHUNK_LEN {
        let job = Job {
            data,
            counter: 0,
            last_flags: CHUNK_END | ROOT,
            dest,
        };
        binner.push(job, out);
    } else {
        route_long(unit, trees, start, dest, data, out);
    }
}

/// [`route`] for a blob longer than a chunk: the lane tree, `blake3`, or
/// the list of blobs hashed on all threads after the batch.
#[inline(never)]
fn route_long<'a>(
    unit: &UnitParams,
    trees: &mut PendingTrees<'a>,
    start: usize,
    dest: usize,
    data: &'a [u8],
    out: &mut [[u8; 32]],
) {
    if unit.kernel.uses_lane_tree(data.len()) {
        trees.push(unit, TreeBlob { data, dest }, out);
    } else if spreads(unit.threads, data.len()) {
        let mut deferred = unit.deferred.lock().unwrap_or_else(PoisonError::into_inner);
        deferred.push(start + dest);
    } else {
        out[dest] = unit.mode.hash_with_blake3(data);
    }
}

/// Whether a batch is better hashed a blob at a time ([`hash_alone`]):
/// setting up its lanes and compressing a group of them takes about a
/// quarter of a microsecond, about what `blake3` takes for five blobs of
/// a block. One thread, AVX-512 (SSE4.1 for groups of up to 4), lanes
/// against a `blake3::hash` loop on the same blobs: two blobs of 32 B to
/// 4 KiB ran 0.38 to 1.0 times the loop's speed; three to five of 32 or
/// 64 B, 0.53 to 0.93 times; three of 1 KiB 1.25 times, eight of 64 B 1.4
/// times. Derived keys hash their context once in the lanes but once a
/// blob in `blake3`, so they take lanes from three blobs. Two longer
/// blobs stay a batch, which threads share (one apiece).
fn too_few_for_lanes<S: BlobSource>(mode: Mode, source: &S) -> bool {
    let count = source.count();
    let all_within = |len| (0..count).all(|index| source.blob(index).len() <= len);
    match mode {
        _ if count <= 1 => true,
        _ if count == 2 && all_within(FEW_BLOBS_MAX_LEN) => true,
        Mode::DeriveKey(_) => false,
        _ => count <= 5 && all_within(BLOCK_LEN),
    }
}

/// The longest blobs of a two-blob batch hashed one at a time
/// ([`too_few_for_lanes`]): two of 4 KiB ran 0.68 times the loop's speed
/// in lanes.
const FEW_BLOBS_MAX_LEN: usize = 8 * CHUNK_LEN;

/// Hashes a one-blob batch: on all of `threads` if [`spreads`], else with
/// one `blake3` call.
fn hash_alone(threads: Threads, mode: Mode, data: &[u8]) -> [u8; 32] {
    if spreads(threads, data.len()) {
        hash_all_in_subtrees(threads, mode, &[data])[0]
    } else {
        mode.hash_with_blake3(data)
    }
}

/// Whether a blob of `len` bytes is hashed on all of `threads`
/// ([`hash_all_in_subtrees`]): from [`PARALLEL_BLOB_MIN`], on more than one.
fn spreads(threads: Threads, len: usize) -> bool {
    len >= PARALLEL_BLOB_MIN && !matches!(threads, Threads::One)
}

/// Looks up blobs `first..first + inputs.len()` and starts loading them.
///
/// A blob of at most one block that starts where the one before it ended
/// is left to the hardware prefetcher, which follows such a run as one
/// stream: there the two prefetches per blob cost 64-byte batches 5 to 9 %
/// (AVX2, in cache) and gained nothing. (Runs of one such length cut out
/// of packed data or records skip this lookup; the kernel hints them a
/// line at a time, which reading from memory needs on AVX-512.) Small
/// blobs anywhere else keep them (64-byte slices scattered over 512 MiB
/// ran at half the speed without), and so do larger blobs even when packed
/// (256 B and 1 KiB batches ran 10 % slower without). Sources laid out back
/// to back ([`BlobSource::CONTIGUOUS`]) skip the address check.
#[inline]
fn lookup<'s, S: BlobSource>(
    source: &'s S,
    first: usize,
    inputs: &mut [&'s [u8]],
    previous_end: &mut *const u8,
) {
    source.blobs_into(first, inputs);
    for input in inputs.iter() {
        start_loading::<S>(input, previous_end);
    }
}

/// Starts loading `input`, the blob after the one that ended at
/// `previous_end`, unless the hardware prefetcher is following it
/// ([`lookup`] says when); moves `previous_end` to its end.
#[inline(always)]
fn start_loading<S: BlobSource>(input: &[u8], previous_end: &mut *const u8) {
    let streamed = input.len() <= BLOCK_LEN && (S::CONTIGUOUS || input.as_ptr() == *previous_end);
    if !streamed {
        prefetch_input(input);
    }
    if !S::CONTIGUOUS {
        *previous_end = input.as_ptr_range().end;
    }
}

/// Starts loading the cache lines of output `slots` (two digests to a line)
/// that the binner will write out of order.
///
/// A binned blob's digest is written when its bin fills, a few hundred
/// slots behind the newest; a line's first write then missed the cache, and
/// the kernel's first vector load of its group's counters, which overlaps
/// the binner's latest scalar stores, waited for those writes to drain.
/// With the lines loaded as the group is routed, lengths uniform in
/// 1..=1024 ran 4–6 % faster in 32 MiB batches and 6–12 % in 256 MiB
/// (AVX-512, one thread, side by side on an AMD Zen 5).
#[inline(always)]
fn prefetch_slots(slots: &[[u8; 32]]) {
    for slot in slots.iter().step_by(2) {
        prefetch(slot);
    }
}

/// Hashes one input of any length with the given key words and flags, all on
/// the lanes (used for derive-key context strings, which `blake3` cannot
/// hash with a custom flag).
pub(crate) fn hash_one(kernel: Kernel, words: ModeWords, data: &[u8]) -> [u8; 32] {
    let mut out = [[0u8; 32]];
    if data.len() <= CHUNK_LEN {
        let params = GroupParams {
            key: words.key,
            flags: words.flags,
            first_flags: CHUNK_START,
        };
        let job = Job {
            data,
            counter: 0,
            last_flags: CHUNK_END | ROOT,
            dest: 0,
        };
        let mut binner = Binner::new(kernel, params);
        binner.push(job, &mut out);
        binner.finish(&mut out);
    } else {
        let trees = Trees {
            kernel,
            key: words.key,
            flags: words.flags,
            blobs: &[TreeBlob { data, dest: 0 }],
            bytes: None,
        };
        hash_trees(trees, &mut out);
    }
    out[0]
}
