//! The one multi-lane BLAKE3 compression kernel.
//!
//! Each SIMD lane carries a different input's state: state word `i` of all
//! lanes lives in one vector. The kernel is written once, generic over
//! [`Lanes`]; every ISA (and the portable fallback) supplies only that small
//! trait, and instantiates [`hash_lanes`] from a thin entry point compiled
//! with its target features.

use super::groups::{prefetch_input_blocks, EQUAL_LENGTH_PREFETCH_BLOCKS, PREFETCH_BLOCKS};
use super::lookahead::{L2Lookahead, STREAM_WINDOW_BYTES};
use super::prefetch::{prefetch_lines_to_l2, prefetch_to_l2_unchecked, prefetch_unchecked};
use crate::consts::{blocks_in_chunk, BLOCK_LEN, CHUNK_LEN, IV, MSG_SCHEDULE};

/// The largest lane count of any backend; sizes the fixed scratch arrays.
pub(crate) const MAX_LANES: usize = 16;

/// A vector of `WIDTH` independent 32-bit lanes.
///
/// Implementations must be `#[inline(always)]` so the kernel, once
/// instantiated inside a `#[target_feature]` entry point, compiles to straight
/// vector code.
pub(crate) trait Lanes: Copy {
    /// Lanes per vector.
    const WIDTH: usize;
    /// Every lane set to `value`.
    fn splat(value: u32) -> Self;
    /// Lane `i` set to `values[i]` (entries past `WIDTH` are ignored).
    fn load(values: &[u32; MAX_LANES]) -> Self;
    /// Lane-wise wrapping addition.
    fn add(self, rhs: Self) -> Self;
    /// Lane-wise exclusive or.
    fn xor(self, rhs: Self) -> Self;
    /// Lane-wise rotate right by 16.
    fn rotr16(self) -> Self;
    /// Lane-wise rotate right by 12.
    fn rotr12(self) -> Self;
    /// Lane-wise rotate right by 8.
    fn rotr8(self) -> Self;
    /// Lane-wise rotate right by 7.
    fn rotr7(self) -> Self;
    /// Reads one 64-byte block per lane and returns its 16 little-endian
    /// message words: word `w` of block `l` in lane `l` of vector `w`
    /// (blocks past `WIDTH` are ignored).
    fn load_transposed(blocks: &[&[u8; BLOCK_LEN]; MAX_LANES]) -> [Self; 16];
    /// Writes the 8 state words of lane `l` as 32 little-endian bytes to
    /// `out[l]`, for every lane `l < WIDTH` (panics if `out` is shorter).
    fn store_transposed(words: &[Self; 8], out: &mut [[u8; 32]]);

    /// [`Lanes::load_transposed`] of each lane's last block: the bytes of
    /// `inputs[l]` from `start` on (at most a block, none only for an empty
    /// input), zero-padded.
    ///
    /// The default copies partial blocks into `tails` and reads them there;
    /// an ISA with masked loads reads them in place instead.
    #[inline(always)]
    fn load_last_blocks(
        inputs: &[&[u8]; MAX_LANES],
        start: usize,
        tails: &mut TailBlocks,
    ) -> [Self; 16] {
        for (lane, input) in inputs[..Self::WIDTH].iter().enumerate() {
            let tail = input.len() - start;
            if tail < BLOCK_LEN {
                tails.stage(lane, input, tail);
            }
        }
        let mut refs = [&ZERO_BLOCK; MAX_LANES];
        for (lane, (block, input)) in refs.iter_mut().zip(&inputs[..Self::WIDTH]).enumerate() {
            let tail = input.len() - start;
            *block = if tail == BLOCK_LEN {
                full_block(&input[start..])
            } else {
                tails.block(lane, tail)
            };
        }
        Self::load_transposed(&refs)
    }

    /// [`Lanes::compress_pair`], also hinting every line of `lines` into L2.
    /// An ISA that interleaves two groups in assembly spreads the hints
    /// among the compressions' instructions.
    #[inline(always)]
    fn compress_pair_hinting(
        cv: &mut [[Self; 8]; 2],
        m: &[[Self; 16]; 2],
        row3: &[[Self; 4]; 2],
        lines: &[u8; STREAM_WINDOW_BYTES],
    ) {
        prefetch_lines_to_l2(lines);
        Self::compress_pair(cv, m, row3);
    }

    /// Whether [`Lanes::compress_pair`] interleaves two groups; where it
    /// does not, callers take groups one at a time, which keeps each
    /// instance's code (and the build) smaller.
    const PAIRS: bool = false;

    /// Two compressions that both start from the chaining value `key`, as
    /// [`Lanes::compress_pair`] on `[*key, *key]`, each lane's output
    /// written as by [`Lanes::store_transposed`]: group 0's to
    /// `out[..WIDTH]`, group 1's to `out[WIDTH..2 * WIDTH]` (panics if `out`
    /// is shorter).
    ///
    /// A pair of single-block blobs; an ISA that pairs in assembly starts
    /// from `key` and transposes the outputs in its own registers.
    #[inline(always)]
    fn compress_pair_to_digests(
        key: &[Self; 8],
        m: &[[Self; 16]; 2],
        row3: &[[Self; 4]; 2],
        out: &mut [[u8; 32]],
    ) {
        let mut cv = [*key, *key];
        Self::compress_pair(&mut cv, m, row3);
        let (first, second) = out.split_at_mut(Self::WIDTH);
        Self::store_transposed(&cv[0], first);
        Self::store_transposed(&cv[1], second);
    }

    /// Two independent compressions, as [`compress`] on each of two groups:
    /// `cv[g]` in and out, message `m[g]`, and `row3[g]` the state's last
    /// row (counter low, counter high, block length, flags).
    ///
    /// An ISA whose registers hold both states at once overrides this to
    /// interleave the two, which keeps more of its vector pipes busy.
    #[inline(always)]
    fn compress_pair(cv: &mut [[Self; 8]; 2], m: &[[Self; 16]; 2], row3: &[[Self; 4]; 2]) {
        for ((cv, m), &row3) in cv.iter_mut().zip(m).zip(row3) {
            Self::compress(cv, m, row3);
        }
    }

    /// One compression per lane, as [`compress_rounds`]: the kernel's only
    /// way to compress one group.
    ///
    /// Vector ISAs inline the rounds wherever the kernel compresses. Lanes
    /// held in arrays override this with one out-of-line copy per width:
    /// every lane operation of theirs is a loop until LLVM unrolls it, and
    /// thousands of such loops inlined into one entry point sent the loop
    /// passes superlinear (over 30 minutes for one codegen unit).
    #[inline(always)]
    fn compress(cv: &mut [Self; 8], m: &[Self; 16], row3: [Self; 4]) {
        compress_rounds(cv, m, row3);
    }

    /// One compression per lane keeping all 16 output words, as
    /// [`compress_xof_rounds`]: a root node's extended output block. Lanes
    /// held in arrays override it out of line, as [`Lanes::compress`].
    #[inline(always)]
    fn compress_xof(cv: &[Self; 8], m: &[Self; 16], row3: [Self; 4]) -> [Self; 16] {
        compress_xof_rounds(cv, m, row3)
    }
}

/// One lane group's inputs: each lane hashes one chunk-sized piece of input
/// (a whole small blob, one chunk of a large blob, or a parent node's two
/// child chaining values). Lanes may differ in block count; see [`hash_lanes`].
#[derive(Clone, Copy)]
pub(crate) struct LaneGroup<'a> {
    /// Per lane, at most 1024 bytes; all with the same block count.
    pub inputs: [&'a [u8]; MAX_LANES],
    /// Per lane, the chunk counter (0 for small blobs and parents).
    pub counters: [u64; MAX_LANES],
    /// Per lane, flags added to the last block only (`CHUNK_END`, `ROOT`).
    pub last_flags: [u32; MAX_LANES],
}

impl Default for LaneGroup<'_> {
    fn default() -> Self {
        LaneGroup {
            inputs: [&[]; MAX_LANES],
            counters: [0; MAX_LANES],
            last_flags: [0; MAX_LANES],
        }
    }
}

/// Flags and key shared by every lane of a group.
#[derive(Clone, Copy, Debug)]
pub(crate) struct GroupParams {
    /// The starting chaining value: the key words (or the IV).
    pub key: [u32; 8],
    /// Flags on every block (the mode flag, `PARENT` for parent nodes).
    pub flags: u32,
    /// Flags added to the first block only (`CHUNK_START` for chunks).
    pub first_flags: u32,
}

/// One round: G on the four columns, then on the four diagonals.
///
/// Written out in full, each step of the four independent G functions side
/// by side, so every index is a constant and the CPU can overlap the four
/// dependency chains; message words are picked through the round's schedule
/// rather than by permuting 16 vectors.
#[inline(always)]
fn round<V: Lanes>(v: &mut [V; 16], m: &[V; 16], r: usize) {
    let s = &MSG_SCHEDULE[r];
    // Columns.
    v[0] = v[0].add(v[4]).add(m[s[0]]);
    v[1] = v[1].add(v[5]).add(m[s[2]]);
    v[2] = v[2].add(v[6]).add(m[s[4]]);
    v[3] = v[3].add(v[7]).add(m[s[6]]);

    v[12] = v[12].xor(v[0]).rotr16();
    v[13] = v[13].xor(v[1]).rotr16();
    v[14] = v[14].xor(v[2]).rotr16();
    v[15] = v[15].xor(v[3]).rotr16();

    v[8] = v[8].add(v[12]);
    v[9] = v[9].add(v[13]);
    v[10] = v[10].add(v[14]);
    v[11] = v[11].add(v[15]);

    v[4] = v[4].xor(v[8]).rotr12();
    v[5] = v[5].xor(v[9]).rotr12();
    v[6] = v[6].xor(v[10]).rotr12();
    v[7] = v[7].xor(v[11]).rotr12();

    v[0] = v[0].add(v[4]).add(m[s[1]]);
    v[1] = v[1].add(v[5]).add(m[s[3]]);
    v[2] = v[2].add(v[6]).add(m[s[5]]);
    v[3] = v[3].add(v[7]).add(m[s[7]]);

    v[12] = v[12].xor(v[0]).rotr8();
    v[13] = v[13].xor(v[1]).rotr8();
    v[14] = v[14].xor(v[2]).rotr8();
    v[15] = v[15].xor(v[3]).rotr8();

    v[8] = v[8].add(v[12]);
    v[9] = v[9].add(v[13]);
    v[10] = v[10].add(v[14]);
    v[11] = v[11].add(v[15]);

    v[4] = v[4].xor(v[8]).rotr7();
    v[5] = v[5].xor(v[9]).rotr7();
    v[6] = v[6].xor(v[10]).rotr7();
    v[7] = v[7].xor(v[11]).rotr7();

    // Diagonals.
    v[0] = v[0].add(v[5]).add(m[s[8]]);
    v[1] = v[1].add(v[6]).add(m[s[10]]);
    v[2] = v[2].add(v[7]).add(m[s[12]]);
    v[3] = v[3].add(v[4]).add(m[s[14]]);

    v[15] = v[15].xor(v[0]).rotr16();
    v[12] = v[12].xor(v[1]).rotr16();
    v[13] = v[13].xor(v[2]).rotr16();
    v[14] = v[14].xor(v[3]).rotr16();

    v[10] = v[10].add(v[15]);
    v[11] = v[11].add(v[12]);
    v[8] = v[8].add(v[13]);
    v[9] = v[9].add(v[14]);

    v[5] = v[5].xor(v[10]).rotr12();
    v[6] = v[6].xor(v[11]).rotr12();
    v[7] = v[7].xor(v[8]).rotr12();
    v[4] = v[4].xor(v[9]).rotr12();

    v[0] = v[0].add(v[5]).add(m[s[9]]);
    v[1] = v[1].add(v[6]).add(m[s[11]]);
    v[2] = v[2].add(v[7]).add(m[s[13]]);
    v[3] = v[3].add(v[4]).add(m[s[15]]);

    v[15] = v[15].xor(v[0]).rotr8();
    v[12] = v[12].xor(v[1]).rotr8();
    v[13] = v[13].xor(v[2]).rotr8();
    v[14] = v[14].xor(v[3]).rotr8();

    v[10] = v[10].add(v[15]);
    v[11] = v[11].add(v[12]);
    v[8] = v[8].add(v[13]);
    v[9] = v[9].add(v[14]);

    v[5] = v[5].xor(v[10]).rotr7();
    v[6] = v[6].xor(v[11]).rotr7();
    v[7] = v[7].xor(v[8]).rotr7();
    v[4] = v[4].xor(v[9]).rotr7();
}

/// One BLAKE3 compression per lane, keeping only the chaining value
/// (first 8 output words), which is also the digest of a root compression.
/// `row3` is the state's last row: counter low and high, block length,
/// flags.
#[inline(always)]
pub(crate) fn compress_rounds<V: Lanes>(cv: &mut [V; 8], m: &[V; 16], row3: [V; 4]) {
    let v = mixed_state(cv, m, row3);
    for i in 0..8 {
        cv[i] = v[i].xor(v[i + 8]);
    }
}

/// One BLAKE3 compression per lane with all 16 output words: the first 8
/// as [`compress_rounds`] gives them, then the state's last 8 words xored
/// with the input chaining value, which BLAKE3's extended output takes
/// from each root compression.
#[inline(always)]
pub(crate) fn compress_xof_rounds<V: Lanes>(cv: &[V; 8], m: &[V; 16], row3: [V; 4]) -> [V; 16] {
    let mut v = mixed_state(cv, m, row3);
    // A loop, not `array::from_fn`: see `splat_key`.
    for i in 0..8 {
        v[i] = v[i].xor(v[i + 8]);
        v[i + 8] = v[i + 8].xor(cv[i]);
    }
    v
}

/// The state after the seven rounds of a compression of `m` from `cv`.
#[inline(always)]
fn mixed_state<V: Lanes>(cv: &[V; 8], m: &[V; 16], row3: [V; 4]) -> [V; 16] {
    let [counter_low, counter_high, block_len, flags] = row3;
    let mut v = [
        cv[0],
        cv[1],
        cv[2],
        cv[3],
        cv[4],
        cv[5],
        cv[6],
        cv[7],
        V::splat(IV[0]),
        V::splat(IV[1]),
        V::splat(IV[2]),
        V::splat(IV[3]),
        counter_low,
        counter_high,
        block_len,
        flags,
    ];
    round(&mut v, m, 0);
    round(&mut v, m, 1);
    round(&mut v, m, 2);
    round(&mut v, m, 3);
    round(&mut v, m, 4);
    round(&mut v, m, 5);
    round(&mut v, m, 6);
    v
}

/// Zero-padded copies of partial last blocks, one per lane, kept by the
/// caller across groups.
///
/// Each lane has two blocks of room whose second half is never written, so
/// it stays zero: a tail of `t` bytes is copied to end where that half
/// begins, and the padded block is read from `t` bytes before it. For
/// inputs of at least a block the copy is the input's last 64 bytes, one
/// fixed-size move whatever `t` is, and nothing is cleared per group.
pub(crate) struct TailBlocks {
    lanes: [[u8; 2 * BLOCK_LEN]; MAX_LANES],
}

impl TailBlocks {
    /// Scratch for every lane, zeroed once.
    pub(crate) fn new() -> Self {
        TailBlocks {
            lanes: [[0; 2 * BLOCK_LEN]; MAX_LANES],
        }
    }

    /// Copies `input`'s last `tail` bytes (`tail < BLOCK_LEN`, 0 only for an
    /// empty input) so that
    /// [`TailBlocks::block`] returns them zero-padded.
    #[inline(always)]
    fn stage(&mut self, lane: usize, input: &[u8], tail: usize) {
        let room = &mut self.lanes[lane];
        match input.len().checked_sub(BLOCK_LEN) {
            Some(window) => room[..BLOCK_LEN].copy_from_slice(&input[window..]),
            None => copy_short(input, &mut room[BLOCK_LEN - tail..BLOCK_LEN]),
        }
    }

    /// The zero-padded block staged for `lane` with a tail of `tail` bytes.
    #[inline(always)]
    pub(super) fn block(&self, lane: usize, tail: usize) -> &[u8; BLOCK_LEN] {
        full_block(&self.lanes[lane][BLOCK_LEN - tail..])
    }
}

/// What one call into a kernel hashes. Each ISA's entry point is generic
/// over it, so each kind of work gets its own instance, compiled with the
/// ISA's target features.
pub(crate) trait Work: Copy {
    /// Hashes this work with lanes `V`, writing outputs to `out`; partial
    /// blocks are copied into `tails` where `V` has no masked loads.
    fn hash<V: Lanes>(self, params: &GroupParams, tails: &mut TailBlocks, out: &mut [[u8; 32]]);
}

/// The first `V::WIDTH` lanes of one group of any shape, into
/// `out[..V::WIDTH]` ([`hash_lanes`]).
impl Work for &LaneGroup<'_> {
    #[inline(always)]
    fn hash<V: Lanes>(self, params: &GroupParams, tails: &mut TailBlocks, out: &mut [[u8; 32]]) {
        hash_lanes::<V>(params, self, tails, out);
    }
}

/// Two groups whose lanes each share one block count, to be compressed side
/// by side ([`hash_aligned_pair`]): the first `V::WIDTH` lanes of each, into
/// `out[..V::WIDTH]` and `out[V::WIDTH..2 * V::WIDTH]`.
#[derive(Clone, Copy)]
pub(crate) struct AlignedPair<'g, 'a> {
    groups: [&'g LaneGroup<'a>; 2],
    /// The block count of each group's lanes.
    blocks: [usize; 2],
    /// The unit's stream of L2 hints, whose windows the compressions hint.
    stream: Option<&'g L2Lookahead<'a>>,
}

impl<'g, 'a> AlignedPair<'g, 'a> {
    /// The pair, if the first `width` lanes of each group share a block
    /// count (as a full bin's do); `None` otherwise (only the tests pair
    /// groups they have not binned).
    #[cfg(test)]
    pub(crate) fn new(
        groups: [&'g LaneGroup<'a>; 2],
        width: usize,
        stream: Option<&'g L2Lookahead<'a>>,
    ) -> Option<Self> {
        let blocks = [
            aligned_blocks(groups[0], width)?,
            aligned_blocks(groups[1], width)?,
        ];
        Some(AlignedPair {
            groups,
            blocks,
            stream,
        })
    }

    /// The pair of two groups whose first `width` lanes the caller knows
    /// to have `blocks[g]` blocks each (the binner's bins, one block count
    /// apiece), without the check [`AlignedPair::new`] makes.
    #[inline]
    pub(crate) fn known(
        groups: [&'g LaneGroup<'a>; 2],
        blocks: [usize; 2],
        width: usize,
        stream: Option<&'g L2Lookahead<'a>>,
    ) -> Self {
        debug_assert!((0..2).all(|g| aligned_blocks(groups[g], width) == Some(blocks[g])));
        AlignedPair {
            groups,
            blocks,
            stream,
        }
    }

    /// The two groups.
    pub(crate) fn groups(self) -> [&'g LaneGroup<'a>; 2] {
        self.groups
    }
}

impl Work for AlignedPair<'_, '_> {
    #[inline(always)]
    fn hash<V: Lanes>(self, params: &GroupParams, tails: &mut TailBlocks, out: &mut [[u8; 32]]) {
        let (first, second) = out[..2 * V::WIDTH].split_at_mut(V::WIDTH);
        hash_aligned_pair::<V>(params, self, tails, first, second, 0);
    }
}

/// Whole groups of inputs of one length of at most a block, all with chunk
/// counter 0 and `last_flags`: small blobs in input order, one output slot
/// each ([`hash_single_blocks`]).
#[derive(Clone, Copy)]
pub(crate) struct SingleBlocks<I> {
    /// The inputs; their count is a multiple of `V::WIDTH`.
    pub inputs: I,
    /// Flags added to every lane's only block, besides `first_flags`.
    pub last_flags: u32,
}

impl<'a, I: BlockInputs<'a>> Work for SingleBlocks<I> {
    #[inline(always)]
    fn hash<V: Lanes>(self, params: &GroupParams, tails: &mut TailBlocks, out: &mut [[u8; 32]]) {
        hash_single_blocks::<V, I>(params, self.inputs, self.last_flags, tails, out);
    }
}

/// Whole groups of inputs of one length of more than a block and at most a
/// chunk, back to back, with `last_flags`: packed blobs or records of one
/// length, each its own chunk 0, or the whole chunks of blobs of a
/// power-of-two number of chunks (`chunks_per_blob`), each with its index
/// in its blob as counter; one output slot each in order
/// ([`hash_equal_chunks`]).
#[derive(Clone, Copy)]
pub(crate) struct EqualChunks<'a> {
    /// The inputs; their count is a multiple of `V::WIDTH`.
    pub inputs: BackToBack<'a>,
    /// Flags added to every lane's last block.
    pub last_flags: u32,
    /// How many inputs make up one blob, a power of two: 1 for blobs of at
    /// most a chunk, more for the chunks of regular trees.
    pub chunks_per_blob: usize,
}

impl Work for EqualChunks<'_> {
    #[inline(always)]
    fn hash<V: Lanes>(self, params: &GroupParams, tails: &mut TailBlocks, out: &mut [[u8; 32]]) {
        hash_equal_chunks::<V>(params, self, tails, out);
    }
}

/// How far ahead of the step it compresses [`hash_single_blocks`] starts
/// loading inputs laid back to back ([`BlockInputs::prefetch`]), in bytes.
///
/// The hardware prefetcher alone did not keep up from memory: 64-byte
/// packed blobs in 64 MiB batches ran 7.1 GB/s without these hints and
/// 10.5 to 10.8 with them (AVX-512, one thread, side by side on a Zen 5);
/// records, in an experimental build of the same hints, 7.6 to 7.7 and
/// 10.9 to 11.1. In 4 MiB batches held in cache the comparisons ranged
/// from -3 % to +9 %. 2 KiB ahead was slightly short of 4; 6 and 8 KiB were
/// no better; hinting only the first lines of each page, or every second
/// or fourth line, recovered half of the gain or less.
const SINGLE_BLOCK_PREFETCH_BYTES: usize = 4096;

/// Where the inputs of a run of single-block groups come from, by index.
pub(crate) trait BlockInputs<'a>: Copy {
    /// How many there are.
    fn count(self) -> usize;
    /// Input `index` (`index < count()`).
    fn input(self, index: usize) -> &'a [u8];
    /// Starts loading inputs `first..first + count`, where the caller did
    /// not already; indices past the last input are allowed and hint
    /// nothing. Inputs looked up one by one were hinted at lookup, so by
    /// default nothing.
    #[inline(always)]
    fn prefetch(self, first: usize, count: usize) {
        let _ = (first, count);
    }
}

/// Inputs gathered one by one.
impl<'a> BlockInputs<'a> for &[&'a [u8]] {
    #[inline(always)]
    fn count(self) -> usize {
        self.len()
    }

    #[inline(always)]
    fn input(self, index: usize) -> &'a [u8] {
        self[index]
    }
}

/// `count` inputs of `len` bytes each, back to back in `data` (packed blobs
/// of one length, fixed-size records): nothing to look up per input.
#[derive(Clone, Copy)]
pub(crate) struct BackToBack<'a> {
    /// The inputs' bytes, `count * len` of them.
    pub data: &'a [u8],
    /// The length of each input.
    pub len: usize,
    /// How many inputs.
    pub count: usize,
}

impl<'a> BlockInputs<'a> for BackToBack<'a> {
    #[inline(always)]
    fn count(self) -> usize {
        self.count
    }

    #[inline(always)]
    fn input(self, index: usize) -> &'a [u8] {
        &self.data[index * self.len..][..self.len]
    }

    /// Every cache line the inputs cover: they are one run of bytes.
    #[inline(always)]
    fn prefetch(self, first: usize, count: usize) {
        let end = ((first + count) * self.len).min(self.data.len());
        let mut offset = first * self.len;
        while offset < end {
            prefetch_unchecked(self.data, offset);
            offset += BLOCK_LEN;
        }
    }
}

/// Hashes the first `V::WIDTH` lanes of `group` and writes each lane's output
/// chaining value to `out[lane]` (`out` holds at least `V::WIDTH` slots).
///
/// Lanes run in step, one block of every lane per compression. Full blocks
/// are read in place; a partial last block is read as
/// [`Lanes::load_last_blocks`] does (a masked load, or a copy in `tails`).
#[inline(always)]
fn hash_lanes<V: Lanes>(
    params: &GroupParams,
    group: &LaneGroup,
    tails: &mut TailBlocks,
    out: &mut [[u8; 32]],
) {
    match aligned_blocks(group, V::WIDTH) {
        Some(blocks) => hash_aligned_lanes::<V>(params, group, blocks, tails, out, 0),
        None => hash_ragged_lanes::<V>(params, group, tails, out),
    }
}

/// The block count of the first `width` lanes of `group`, if they all have
/// the same one.
///
/// Every lane is checked without an early exit: the differences are OR-ed
/// together, which compiles to straight-line code where `all` took a
/// compare and a branch per lane.
#[inline(always)]
fn aligned_blocks(group: &LaneGroup, width: usize) -> Option<usize> {
    let inputs = &group.inputs[..width];
    let blocks = blocks_in_chunk(inputs[0].len());
    let differ = inputs.iter().fold(0, |differ, input| {
        differ | (blocks_in_chunk(input.len()) ^ blocks)
    });
    (differ == 0).then_some(blocks)
}

/// [`hash_lanes`] for lanes of one block count (equal-length batches, the
/// binner's full groups, chunks, parent nodes): every lane ends at the same
/// compression; only the last block's lengths and flags differ per lane.
///
/// The last block is handled after the loop over the full ones rather than
/// by a branch inside it: with the branch, 256-byte blobs ran 8 % slower
/// (AVX-512, one thread, side by side).
///
/// `l2_ahead`, where not 0, is how far past each lane's blob the next blobs
/// of its run are hinted into L2 as its blocks are read
/// ([`load_full_blocks`]).
#[inline(always)]
fn hash_aligned_lanes<V: Lanes>(
    params: &GroupParams,
    group: &LaneGroup,
    blocks: usize,
    tails: &mut TailBlocks,
    out: &mut [[u8; 32]],
    l2_ahead: usize,
) {
    let counters = load_counters::<V>(group);
    let mut cv = splat_key::<V>(params);
    let full = full_blocks::<V>(group, blocks - 1);
    for block in 0..blocks - 1 {
        let m = load_full_blocks::<V>(group, &full, block, l2_ahead);
        V::compress(&mut cv, &m, full_block_row::<V>(params, block, counters));
    }
    let (m, row3) = last_blocks::<V>(params, group, blocks - 1, counters, tails);
    V::compress(&mut cv, &m, row3);
    V::store_transposed(&cv, out);
}

/// [`hash_aligned_lanes`] for the two groups of `pair` at once (each of one
/// block count, `blocks[g]` for group `g`), into `first` and `second`: the
/// blocks both groups have go through [`Lanes::compress_pair`] (hinting
/// the pair's stream, if it has one), and the longer group's extra blocks
/// through [`compress`] alone. `l2_ahead` as for [`hash_aligned_lanes`],
/// on the blocks both groups have.
#[inline(always)]
fn hash_aligned_pair<V: Lanes>(
    params: &GroupParams,
    pair: AlignedPair,
    tails: &mut TailBlocks,
    first: &mut [[u8; 32]],
    second: &mut [[u8; 32]],
    l2_ahead: usize,
) {
    let AlignedPair {
        groups,
        blocks,
        stream,
    } = pair;
    let counters = [load_counters::<V>(groups[0]), load_counters::<V>(groups[1])];
    let key = splat_key::<V>(params);
    let mut cv = [key, key];
    let full = [
        full_blocks::<V>(groups[0], blocks[0] - 1),
        full_blocks::<V>(groups[1], blocks[1] - 1),
    ];
    let both_full = blocks[0].min(blocks[1]) - 1;
    // Both messages are loaded into the array the pair reads, not built as
    // values and then gathered into it: that gather copied 2 KiB through
    // spilled vectors every block (AVX-512, one thread, AMD EPYC Zen 4,
    // side by side, GB/s: 1 KiB blobs in 4 MiB batches 6.45/6.47/6.47 →
    // 6.83/6.79/6.84, from 64 MiB 5.44/5.56 → 6.12/6.13; 256 B
    // 5.81/5.85/5.87 → 6.00/6.00/5.96).
    let mut m = [[V::splat(0); 16]; 2];
    for block in 0..both_full {
        m[0] = load_full_blocks::<V>(groups[0], &full[0], block, l2_ahead);
        m[1] = load_full_blocks::<V>(groups[1], &full[1], block, l2_ahead);
        let row0 = full_block_row::<V>(params, block, counters[0]);
        let row1 = full_block_row::<V>(params, block, counters[1]);
        compress_pair_streaming::<V>(&mut cv, &m, &[row0, row1], stream);
    }
    if blocks[0] == blocks[1] {
        // The first group's message is in `m` before the second's is staged
        // over the same tails; both go straight into the array the pair
        // reads, as in the loop above.
        let (row0, row1);
        (m[0], row0) = last_blocks::<V>(params, groups[0], both_full, counters[0], tails);
        (m[1], row1) = last_blocks::<V>(params, groups[1], both_full, counters[1], tails);
        compress_pair_streaming::<V>(&mut cv, &m, &[row0, row1], stream);
    } else {
        for (g, cv) in cv.iter_mut().enumerate() {
            for block in both_full..blocks[g] - 1 {
                let m = load_full_blocks::<V>(groups[g], &full[g], block, 0);
                V::compress(cv, &m, full_block_row::<V>(params, block, counters[g]));
            }
            let (m, row3) = last_blocks::<V>(params, groups[g], blocks[g] - 1, counters[g], tails);
            V::compress(cv, &m, row3);
        }
    }
    V::store_transposed(&cv[0], first);
    V::store_transposed(&cv[1], second);
}

/// [`Lanes::compress_pair`], hinting the next window of `stream` into L2
/// among the compressions' instructions where it has one
/// ([`L2Lookahead::window`]).
#[inline(always)]
fn compress_pair_streaming<V: Lanes>(
    cv: &mut [[V; 8]; 2],
    m: &[[V; 16]; 2],
    row3: &[[V; 4]; 2],
    stream: Option<&L2Lookahead>,
) {
    match stream.and_then(L2Lookahead::window) {
        Some(lines) => V::compress_pair_hinting(cv, m, row3, lines),
        None => V::compress_pair(cv, m, row3),
    }
}

/// The state's last row for full block `block` of every lane, not any
/// lane's last: counter low and high, block length, flags.
#[inline(always)]
fn full_block_row<V: Lanes>(
    params: &GroupParams,
    block: usize,
    (counter_low, counter_high): (V, V),
) -> [V; 4] {
    let first = if block == 0 { params.first_flags } else { 0 };
    [
        counter_low,
        counter_high,
        V::splat(BLOCK_LEN as u32),
        V::splat(params.flags | first),
    ]
}

/// The last block (`block`) of every lane of an aligned group: its message
/// words ([`Lanes::load_last_blocks`]) and the state's last row with each
/// lane's length and flags.
#[inline(always)]
fn last_blocks<V: Lanes>(
    params: &GroupParams,
    group: &LaneGroup,
    block: usize,
    (counter_low, counter_high): (V, V),
    tails: &mut TailBlocks,
) -> ([V; 16], [V; 4]) {
    let width = V::WIDTH;
    let start = block * BLOCK_LEN;
    let first = if block == 0 { params.first_flags } else { 0 };
    let mut lens = [0u32; MAX_LANES];
    let mut flags = [0u32; MAX_LANES];
    for lane in 0..width {
        lens[lane] = (group.inputs[lane].len() - start) as u32;
        flags[lane] = params.flags | first | group.last_flags[lane];
    }
    let m = V::load_last_blocks(&group.inputs, start, tails);
    (
        m,
        [counter_low, counter_high, V::load(&lens), V::load(&flags)],
    )
}

/// [`hash_lanes`] for lanes of different block counts (the binner's last,
/// merged groups): the group runs for its longest lane, a lane's output is
/// taken after its own last block, and a finished lane compresses a zero
/// block whose result is ignored. Merging in block-count order wastes few
/// such compressions.
#[inline(always)]
fn hash_ragged_lanes<V: Lanes>(
    params: &GroupParams,
    group: &LaneGroup,
    tails: &mut TailBlocks,
    out: &mut [[u8; 32]],
) {
    let width = V::WIDTH;
    let RaggedLanes {
        last_block,
        tail_len,
        first_last,
        final_last,
    } = RaggedLanes::stage(width, group, tails);

    let mut cv = splat_key::<V>(params);
    let counters = load_counters::<V>(group);
    let (counter_low, counter_high) = counters;
    let mut finished = [[0u8; 32]; MAX_LANES];

    // Blocks before any lane's last: full blocks everywhere, same flags.
    let full = full_blocks::<V>(group, first_last);
    for block in 0..first_last {
        let m = load_full_blocks::<V>(group, &full, block, 0);
        V::compress(&mut cv, &m, full_block_row::<V>(params, block, counters));
    }

    // From the first lane's last block on: per-lane lengths and flags.
    for block in first_last..=final_last {
        let mut lens = [0u32; MAX_LANES];
        let mut flags = [0u32; MAX_LANES];
        let first = if block == 0 { params.first_flags } else { 0 };
        let mut refs = [&ZERO_BLOCK; MAX_LANES];
        for lane in 0..width {
            if block < last_block[lane] {
                lens[lane] = BLOCK_LEN as u32;
                flags[lane] = params.flags | first;
                refs[lane] = full_block(&group.inputs[lane][block * BLOCK_LEN..]);
            } else if block == last_block[lane] {
                let tail = tail_len[lane];
                lens[lane] = tail as u32;
                flags[lane] = params.flags | first | group.last_flags[lane];
                refs[lane] = if tail == BLOCK_LEN {
                    full_block(&group.inputs[lane][block * BLOCK_LEN..])
                } else {
                    tails.block(lane, tail)
                };
            }
        }
        let m = V::load_transposed(&refs);
        let row3 = [counter_low, counter_high, V::load(&lens), V::load(&flags)];
        V::compress(&mut cv, &m, row3);
        if last_block[..width].contains(&block) {
            V::store_transposed(&cv, &mut finished);
            for lane in 0..width {
                if last_block[lane] == block {
                    out[lane] = finished[lane];
                }
            }
        }
    }
}

/// Where each lane of a group of blobs of up to a chunk ends: its last
/// block's index and the bytes in it, and the first and last of those
/// indices over the lanes.
pub(super) struct RaggedLanes {
    pub last_block: [usize; MAX_LANES],
    pub tail_len: [usize; MAX_LANES],
    pub first_last: usize,
    pub final_last: usize,
}

impl RaggedLanes {
    /// The ends of the first `width` lanes of `group`, each partial last
    /// block staged in `tails`.
    #[inline(always)]
    pub(super) fn stage(width: usize, group: &LaneGroup, tails: &mut TailBlocks) -> RaggedLanes {
        let mut last_block = [0usize; MAX_LANES];
        let mut tail_len = [0usize; MAX_LANES];
        for lane in 0..width {
            let input = group.inputs[lane];
            debug_assert!(input.len() <= CHUNK_LEN);
            let last = blocks_in_chunk(input.len()) - 1;
            let tail = input.len() - last * BLOCK_LEN;
            last_block[lane] = last;
            tail_len[lane] = tail;
            if tail < BLOCK_LEN {
                tails.stage(lane, input, tail);
            }
        }
        RaggedLanes {
            last_block,
            tail_len,
            first_last: last_block[..width].iter().copied().min().unwrap_or(0),
            final_last: last_block[..width].iter().copied().max().unwrap_or(0),
        }
    }
}

/// Hashes `inputs` (each at most a block, all of one length, a whole number
/// of groups) `V::WIDTH` at a time into `out`, one slot per input, each a
/// single compression with counter 0 and `last_flags`.
///
/// A group of one block per lane is one compression, so what surrounds it
/// (the call, setting up lengths and flags, loading and transposing the
/// message) weighs as much as around a whole chunk's sixteen. Here that is
/// done once per run, and each group's message (each pair's, where the
/// lanes pair groups, [`Lanes::PAIRS`]) is loaded before the one ahead of
/// it compresses, so the loads overlap that compression:
/// 64-byte blobs ran 52 M compressions/s through [`hash_lanes`] one group
/// per call and 58 to 61 this way (AVX2, in cache).
#[inline(always)]
fn hash_single_blocks<'a, V: Lanes, I: BlockInputs<'a>>(
    params: &GroupParams,
    inputs: I,
    last_flags: u32,
    tails: &mut TailBlocks,
    out: &mut [[u8; 32]],
) {
    let count = inputs.count();
    if count == 0 {
        return;
    }
    let len = inputs.input(0).len();
    debug_assert!(len <= BLOCK_LEN && count.is_multiple_of(V::WIDTH));
    debug_assert_eq!(count, out.len());
    debug_assert!((0..count).all(|index| inputs.input(index).len() == len));
    let zero = V::splat(0);
    let row3 = [
        zero,
        zero,
        V::splat(len as u32),
        V::splat(params.flags | params.first_flags | last_flags),
    ];
    let groups = count / V::WIDTH;
    let step = if V::PAIRS { 2 } else { 1 };
    // Two buffers of message words, taken in turn: the step's own and the
    // next step's, loaded while this one compresses; once a step has
    // compressed, its buffer takes the step after next, loaded in place
    // (`load_single_block_pair_into`). Moving the next step's words into
    // one buffer instead copied 2 KiB of spilled vectors through the stack
    // every step (AVX-512; its stores held a tenth of the samples on
    // 64-byte blobs). Both are loaded before the first step, so neither is
    // zero-filled first: that was a 2 KiB `memset` per call, 2 % of the
    // time on 64-byte slices when their runs were four groups long.
    let mut buffers = [
        load_single_block_pair::<V, I>(inputs, 0, groups, len, tails),
        if step < groups {
            load_single_block_pair::<V, I>(inputs, step, groups, len, tails)
        } else {
            [[zero; 16]; 2]
        },
    ];
    // Inputs this far ahead of the step's (none for empty inputs).
    let inputs_ahead = SINGLE_BLOCK_PREFETCH_BYTES.checked_div(len);
    let row3_pair = [row3, row3];
    let key = splat_key::<V>(params);
    for (index, slots) in out.chunks_mut(step * V::WIDTH).enumerate() {
        if let Some(ahead) = inputs_ahead {
            inputs.prefetch(index * step * V::WIDTH + ahead, step * V::WIDTH);
        }
        let messages = &mut buffers[index % 2];
        if V::PAIRS && slots.len() == 2 * V::WIDTH {
            V::compress_pair_to_digests(&key, messages, &row3_pair, slots);
        } else {
            let mut cv = key;
            V::compress(&mut cv, &messages[0], row3);
            V::store_transposed(&cv, slots);
        }
        let after_next = step * (index + 2);
        if after_next < groups {
            load_single_block_pair_into::<V, I>(inputs, after_next, groups, len, tails, messages);
        }
    }
}

/// Steps (one or two groups) of equal-length blobs ahead of the one being
/// compressed whose every line [`hash_equal_chunks`] hints into L2, on top
/// of the first blocks of the next step's blobs hinted into L1
/// ([`EQUAL_LENGTH_PREFETCH_BLOCKS`]) and the kernel's hints two blocks
/// ahead: the lanes read 16 or 32 streams a blob apart, which the hardware
/// prefetchers followed poorly, while one core can read 30 GB/s from
/// memory in order.
///
/// Measured on an AMD EPYC (Zen 4), 64 Ki blobs read from memory, one
/// thread, side by side against no L2 hints (two interleaved rounds, GB/s):
/// AVX-512 256 B 3.63/4.65/3.92/4.13 → 5.68/5.63/5.22/5.11, 512 B
/// 4.23/4.27 → 5.07/4.85, 1 KiB 4.45/4.47 → 4.98/4.98, 1 KiB on two
/// threads 8.61/8.96 → 9.11/9.68; AVX2 1 KiB 3.50/3.71 → 4.12/4.07, 256 B
/// 4.25/4.29 → 4.12/4.12. One step ahead read 1 KiB 4.80/4.98 and 256 B
/// 5.13/5.20; four 4.66–5.39; eight 4.54–5.00.
///
/// The cost is in cache, where the hints find their lines present: 1 KiB
/// in 4 MiB batches 6.70/6.71/6.69 → 6.37/6.38/6.34 (−5 %), 256 B
/// 6.33/6.32/6.33 → 5.98/5.99/6.00. Hinting every second line (L2 fetches
/// lines in pairs) cost less there (6.56–6.59) but gained less from memory
/// (1 KiB 4.70–4.81 against 5.03–5.08): batches of millions of blobs come
/// from memory.
const EQUAL_LENGTH_L2_STEPS_AHEAD: usize = 2;

/// The most blocks a blob of an equal-length run may have for its step's
/// L2 hints ([`EQUAL_LENGTH_L2_STEPS_AHEAD`]) to go out in one burst before
/// the step compresses; longer blobs have each lane hint its own blob that
/// far ahead a line per block instead, among the loads of its blocks
/// ([`load_full_blocks`]).
///
/// A burst of 512 hints (a step of 1 KiB blobs) fills the core's miss
/// buffers while the lines come from memory, and the compressions queued
/// behind it wait: a fifth of the kernel's samples sat on the hint loop.
/// Spread out, on an AMD EPYC (Zen 4), from memory, one thread, AVX-512,
/// side by side (harness, medians, GB/s): 1 KiB in 64 MiB batches
/// 4.19/4.82/5.00 → 5.65/5.65/5.63, 512 B 4.29/4.14 → 5.41/5.47, 300 B
/// 4.72/3.93/4.83 → 5.14/5.13/4.78. A first version, which left the far
/// blob's last block unhinted, read in cache (1 KiB in 4 MiB) 6.35/6.29 →
/// 6.55/6.55, the burst's cost there gone; AVX2 1 KiB 4.09/4.03 →
/// 4.28/4.43; two threads 1 KiB 10.00 → 11.04 (the other round, disturbed,
/// 6.13 → 6.82). Blobs of four blocks or
/// fewer keep the burst: spread, 256 B read 4.1–4.9 against 5.0–5.3
/// (five rounds) and 192 B 5.13/5.18 against 5.40/5.50.
const BURST_L2_MAX_BLOCKS: usize = 4;

/// Hashes `work.inputs` (whole groups, all of one length in `BLOCK_LEN +
/// 1..=CHUNK_LEN`) into `out`, one slot per input in order, with
/// `work.last_flags` on every lane and each input's index modulo
/// `work.chunks_per_blob` as its counter: two groups at a time where `V`
/// pairs groups, the next step's inputs fetched while the current one
/// compresses.
///
/// One call for the whole run, and no check of each group's block counts:
/// hashed a group per call, 256-byte and 1 KiB blobs ran 2 to 12 % slower
/// (AVX-512, one thread, side by side).
#[inline(always)]
fn hash_equal_chunks<V: Lanes>(
    params: &GroupParams,
    work: EqualChunks,
    tails: &mut TailBlocks,
    out: &mut [[u8; 32]],
) {
    let EqualChunks {
        inputs: BackToBack { data, len, count },
        last_flags,
        chunks_per_blob,
    } = work;
    debug_assert!(chunks_per_blob.is_power_of_two());
    let counter_mask = chunks_per_blob - 1;
    debug_assert!(len > BLOCK_LEN && len <= CHUNK_LEN);
    debug_assert!(count.is_multiple_of(V::WIDTH) && count == out.len());
    let blocks = blocks_in_chunk(len);
    let step = if V::PAIRS { 2 * V::WIDTH } else { V::WIDTH };
    let group = LaneGroup {
        last_flags: [last_flags; MAX_LANES],
        ..LaneGroup::default()
    };
    let mut groups = [group, group];
    let run = &data[..count * len];
    let step_bytes = step * len;
    let l2_ahead = EQUAL_LENGTH_L2_STEPS_AHEAD * step_bytes;
    // Past `BURST_L2_MAX_BLOCKS`, each lane hints its own blob `l2_ahead`
    // bytes on, a line a block; else the step's L2 hints go out at once.
    let lane_ahead = if blocks > BURST_L2_MAX_BLOCKS {
        l2_ahead
    } else {
        0
    };
    for (index, (bytes, slots)) in run.chunks(step_bytes).zip(out.chunks_mut(step)).enumerate() {
        for (group, bytes) in groups.iter_mut().zip(bytes.chunks_exact(V::WIDTH * len)) {
            for (input, blob) in group.inputs.iter_mut().zip(bytes.chunks_exact(len)) {
                *input = blob;
            }
        }
        if counter_mask != 0 {
            let first = index * step;
            for (lane, counter) in groups
                .iter_mut()
                .flat_map(|g| &mut g.counters[..V::WIDTH])
                .enumerate()
            {
                *counter = ((first + lane) & counter_mask) as u64;
            }
        }
        let next = run.get((index + 1) * step_bytes..).unwrap_or(&[]);
        for blob in next.chunks_exact(len).take(step) {
            prefetch_input_blocks(blob, EQUAL_LENGTH_PREFETCH_BLOCKS);
        }
        if lane_ahead == 0 {
            let far = run.get(l2_ahead + index * step_bytes..).unwrap_or(&[]);
            prefetch_lines_to_l2(&far[..step_bytes.min(far.len())]);
        }
        if V::PAIRS && slots.len() == 2 * V::WIDTH {
            let (first, second) = slots.split_at_mut(V::WIDTH);
            let pair = AlignedPair {
                groups: [&groups[0], &groups[1]],
                blocks: [blocks, blocks],
                stream: None,
            };
            hash_aligned_pair::<V>(params, pair, tails, first, second, lane_ahead);
        } else {
            hash_aligned_lanes::<V>(params, &groups[0], blocks, tails, slots, lane_ahead);
        }
    }
}

/// Loads the message words of groups `first` and, if `V` pairs groups,
/// `first + 1` of single-block inputs ([`load_single_blocks`]) into
/// `messages`, each group's straight into its place; the second is left as
/// it was when not loaded.
///
/// In place rather than by value ([`load_single_block_pair`]): the pair's
/// 2 KiB returned as a value was built in vectors spilled to the stack and
/// then copied into the buffer, where in place each transposed word is
/// stored once, straight from the shuffle that made it. The copy had cost
/// 64-byte blobs about 5 %: in 4 MiB batches (AVX-512, one thread, AMD EPYC
/// Zen 4, interleaved rounds, GB/s) 6.23/6.20/6.24/6.22 →
/// 6.54/6.54/6.53/6.57/6.48, together with building the pair's `row3` once
/// per run instead of once per step (worth under 1 % of that alone).
#[inline(always)]
fn load_single_block_pair_into<'a, V: Lanes, I: BlockInputs<'a>>(
    inputs: I,
    first: usize,
    groups: usize,
    len: usize,
    tails: &mut TailBlocks,
    messages: &mut [[V; 16]; 2],
) {
    messages[0] = load_single_blocks::<V, I>(inputs, first * V::WIDTH, len, tails);
    if V::PAIRS && first + 1 < groups {
        messages[1] = load_single_blocks::<V, I>(inputs, (first + 1) * V::WIDTH, len, tails);
    }
}

/// The message words of groups `first` and, if `V` pairs groups,
/// `first + 1` of single-block inputs ([`load_single_blocks`]); the second
/// is zero when not loaded.
#[inline(always)]
fn load_single_block_pair<'a, V: Lanes, I: BlockInputs<'a>>(
    inputs: I,
    first: usize,
    groups: usize,
    len: usize,
    tails: &mut TailBlocks,
) -> [[V; 16]; 2] {
    let mut messages = [[V::splat(0); 16]; 2];
    load_single_block_pair_into::<V, I>(inputs, first, groups, len, tails, &mut messages);
    messages
}

/// The message words of the group of single-block inputs of length `len`
/// that starts at input `first`, read in place when they are full blocks,
/// else zero-padded in `tails`.
#[inline(always)]
fn load_single_blocks<'a, V: Lanes, I: BlockInputs<'a>>(
    inputs: I,
    first: usize,
    len: usize,
    tails: &mut TailBlocks,
) -> [V; 16] {
    let mut refs = [&ZERO_BLOCK; MAX_LANES];
    if len == BLOCK_LEN {
        for (lane, block) in refs.iter_mut().enumerate().take(V::WIDTH) {
            *block = full_block(inputs.input(first + lane));
        }
    } else {
        for lane in 0..V::WIDTH {
            tails.stage(lane, inputs.input(first + lane), len);
        }
        for (lane, block) in refs.iter_mut().enumerate().take(V::WIDTH) {
            *block = tails.block(lane, len);
        }
    }
    V::load_transposed(&refs)
}

/// The starting chaining value in every lane.
///
/// Built with a loop rather than `core::array::from_fn`: a closure does not
/// inherit the ISA entry point's target features, so the vector intrinsics
/// inside it would be called out of line (with the same pattern in the
/// transposes, the AVX-512 lanes ran 3.6× slower on 1 KiB blobs).
#[inline(always)]
pub(super) fn splat_key<V: Lanes>(params: &GroupParams) -> [V; 8] {
    let mut cv = [V::splat(0); 8];
    for (word, &key) in cv.iter_mut().zip(&params.key) {
        *word = V::splat(key);
    }
    cv
}

/// Each lane's chunk counter, split into low and high words.
#[inline(always)]
fn load_counters<V: Lanes>(group: &LaneGroup) -> (V, V) {
    let mut low = [0u32; MAX_LANES];
    let mut high = [0u32; MAX_LANES];
    for lane in 0..V::WIDTH {
        low[lane] = group.counters[lane] as u32;
        high[lane] = (group.counters[lane] >> 32) as u32;
    }
    (V::load(&low), V::load(&high))
}

/// Each lane's first `count` blocks, all full, as arrays: one length check
/// per lane here instead of one per lane and block in the loop.
#[inline(always)]
fn full_blocks<'a, V: Lanes>(
    group: &LaneGroup<'a>,
    count: usize,
) -> [&'a [[u8; BLOCK_LEN]]; MAX_LANES] {
    let mut blocks: [&[[u8; BLOCK_LEN]]; MAX_LANES] = [&[]; MAX_LANES];
    for (lane, input) in blocks.iter_mut().zip(&group.inputs[..V::WIDTH]) {
        *lane = &input.as_chunks::<BLOCK_LEN>().0[..count];
    }
    blocks
}

/// The message words of block `block` of every lane, a full block and not
/// any lane's last, read in place from `blocks` (from [`full_blocks`]);
/// starts loading the inputs further ahead, and, unless `l2_ahead` is 0,
/// hints into L2 the same block of the blob `l2_ahead` bytes past each
/// lane's ([`BURST_L2_MAX_BLOCKS`]; only for blobs laid back to back).
#[inline(always)]
fn load_full_blocks<V: Lanes>(
    group: &LaneGroup,
    blocks: &[&[[u8; BLOCK_LEN]]; MAX_LANES],
    block: usize,
    l2_ahead: usize,
) -> [V; 16] {
    let width = V::WIDTH;
    let mut refs = [&ZERO_BLOCK; MAX_LANES];
    for (lane, blocks) in refs.iter_mut().zip(&blocks[..width]) {
        *lane = &blocks[block];
    }
    let m = V::load_transposed(&refs);
    // Every lane holds more than `blocks[0].len()` blocks' bytes, so one
    // check covers all lanes (a check per lane was a compare and a branch
    // beside each load). Not checking at all, hinting past the lanes' ends
    // on the last blocks, ran 1 KiB blobs read from memory 20 % slower.
    if block + PREFETCH_BLOCKS <= blocks[0].len() {
        let ahead = (block + PREFETCH_BLOCKS) * BLOCK_LEN;
        for input in &group.inputs[..width] {
            prefetch_unchecked(input, ahead);
        }
    }
    if l2_ahead != 0 {
        // The same line of the blob `l2_ahead` bytes on; at the last full
        // block, the lines of that blob's last block too.
        for input in &group.inputs[..width] {
            prefetch_to_l2_unchecked(input, l2_ahead + block * BLOCK_LEN);
        }
        if block + 1 == blocks[0].len() {
            for input in &group.inputs[..width] {
                prefetch_to_l2_unchecked(input, l2_ahead + (block + 1) * BLOCK_LEN);
                prefetch_to_l2_unchecked(input, l2_ahead + input.len() - 1);
            }
        }
    }
    m
}

pub(super) static ZERO_BLOCK: [u8; BLOCK_LEN] = [0; BLOCK_LEN];

/// Copies `tail` (shorter than a block) to `dest` (of the same length).
///
/// A plain `copy_from_slice` of a variable length becomes a `memcpy` call,
/// which showed up as a fifth of the time on mixed lengths. Two fixed-size
/// copies that overlap in the middle cover every length in `[n, 2n)` and
/// inline to a couple of moves.
#[inline(always)]
fn copy_short(tail: &[u8], dest: &mut [u8]) {
    #[inline(always)]
    fn overlapping<const N: usize>(tail: &[u8], dest: &mut [u8]) {
        let len = tail.len();
        let head: [u8; N] = tail[..N].try_into().expect("len >= N");
        let end: [u8; N] = tail[len - N..].try_into().expect("len >= N");
        dest[..N].copy_from_slice(&head);
        dest[len - N..].copy_from_slice(&end);
    }
    match tail.len() {
        32..=63 => overlapping::<32>(tail, dest),
        16..=31 => overlapping::<16>(tail, dest),
        8..=15 => overlapping::<8>(tail, dest),
        4..=7 => overlapping::<4>(tail, dest),
        _ => {
            for (byte, &value) in dest.iter_mut().zip(tail) {
                *byte = value;
            }
        }
    }
}

#[inline(always)]
pub(super) fn full_block(bytes: &[u8]) -> &[u8; BLOCK_LEN] {
    bytes[..BLOCK_LEN]
        .try_into()
        .expect("a full block has 64 bytes")
}
