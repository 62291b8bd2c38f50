//! The one multi-lane BLAKE3 compression kernel.
//!
//! Each SIMD lane carries a different input's state: state word `i` of all
//! lanes lives in one vector. The kernel is written once, generic over
//! [`Lanes`]; every ISA (and the portable fallback) supplies only that small
//! trait, and instantiates [`hash_lanes`] from a thin entry point compiled
//! with its target features.

use super::groups::PREFETCH_BLOCKS;
use super::prefetch::prefetch;
use crate::consts::{blocks_in_chunk, BLOCK_LEN, IV, MSG_SCHEDULE};

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
    /// `out[l]`, for every lane `l < WIDTH`.
    fn store_transposed(words: &[Self; 8], out: &mut [[u8; 32]; MAX_LANES]);
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
#[inline(always)]
pub(crate) fn compress<V: Lanes>(
    cv: &mut [V; 8],
    m: &[V; 16],
    counter_low: V,
    counter_high: V,
    block_len: V,
    flags: V,
) {
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
    for i in 0..8 {
        cv[i] = v[i].xor(v[i + 8]);
    }
}

/// Hashes the first `V::WIDTH` lanes of `group` and writes each lane's output
/// chaining value to `out[lane]`.
///
/// Lanes run in step, one block of every lane per compression. Lanes may
/// hold different block counts (lengths at most 1024): the group runs for
/// its longest lane, a lane's output is taken after its own last block, and
/// a finished lane compresses a zero block whose result is ignored. Groups
/// merged in block-count order waste few such compressions. Full
/// blocks are read in place; only a partial last block is copied into
/// zero-padded scratch.
#[inline(always)]
pub(crate) fn hash_lanes<V: Lanes>(
    params: &GroupParams,
    group: &LaneGroup,
    out: &mut [[u8; 32]; MAX_LANES],
) {
    let width = V::WIDTH;
    let len = group.inputs[0].len();
    let last_flags = group.last_flags[0];
    if group.inputs[..width].iter().all(|input| input.len() == len)
        && group.last_flags[..width]
            .iter()
            .all(|&flags| flags == last_flags)
    {
        hash_equal_lanes::<V>(params, group, len, last_flags, out);
        return;
    }
    let mut last_block = [0usize; MAX_LANES];
    let mut scratch = [[0u8; BLOCK_LEN]; MAX_LANES];
    let mut tail_len = [0u32; MAX_LANES];
    for lane in 0..width {
        let input = group.inputs[lane];
        debug_assert!(input.len() <= 1024);
        let last = blocks_in_chunk(input.len()) - 1;
        let tail = &input[last * BLOCK_LEN..];
        last_block[lane] = last;
        tail_len[lane] = tail.len() as u32;
        if tail.len() < BLOCK_LEN {
            copy_short(tail, &mut scratch[lane]);
        }
    }
    let first_last = last_block[..width].iter().copied().min().unwrap_or(0);
    let final_last = last_block[..width].iter().copied().max().unwrap_or(0);

    let mut cv = splat_key::<V>(params);
    let (counter_low, counter_high) = load_counters::<V>(group);
    let mut finished = [[0u8; 32]; MAX_LANES];

    // Blocks before any lane's last: full blocks everywhere, same flags.
    for block in 0..first_last {
        compress_full_blocks(&mut cv, params, group, block, counter_low, counter_high);
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
                lens[lane] = tail_len[lane];
                flags[lane] = params.flags | first | group.last_flags[lane];
                refs[lane] = if tail_len[lane] as usize == BLOCK_LEN {
                    full_block(&group.inputs[lane][block * BLOCK_LEN..])
                } else {
                    &scratch[lane]
                };
            }
        }
        let m = V::load_transposed(&refs);
        compress(
            &mut cv,
            &m,
            counter_low,
            counter_high,
            V::load(&lens),
            V::load(&flags),
        );
        if first_last == final_last {
            // Every lane ends here (the common, equal-length case).
            V::store_transposed(&cv, out);
            return;
        }
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

/// [`hash_lanes`] for lanes of one length and one set of last-block flags
/// (equal-length batches, full chunks, parent nodes): lengths and flags are
/// the same in every lane, so no per-lane bookkeeping.
#[inline(always)]
fn hash_equal_lanes<V: Lanes>(
    params: &GroupParams,
    group: &LaneGroup,
    len: usize,
    last_flags: u32,
    out: &mut [[u8; 32]; MAX_LANES],
) {
    let width = V::WIDTH;
    let blocks = blocks_in_chunk(len);
    let (counter_low, counter_high) = load_counters::<V>(group);
    let mut cv = splat_key::<V>(params);
    for block in 0..blocks - 1 {
        compress_full_blocks(&mut cv, params, group, block, counter_low, counter_high);
    }

    let last = blocks - 1;
    let start = last * BLOCK_LEN;
    let tail_len = len - start;
    let first = if last == 0 { params.first_flags } else { 0 };
    let block_len = V::splat(tail_len as u32);
    let flags = V::splat(params.flags | first | last_flags);
    let mut refs = [&ZERO_BLOCK; MAX_LANES];
    let m = if tail_len == BLOCK_LEN {
        // Full last blocks are read in place, with no scratch to clear.
        for (block, input) in refs.iter_mut().zip(&group.inputs[..width]) {
            *block = full_block(&input[start..]);
        }
        V::load_transposed(&refs)
    } else {
        let mut scratch = [[0u8; BLOCK_LEN]; MAX_LANES];
        for (input, block) in group.inputs[..width].iter().zip(&mut scratch) {
            copy_short(&input[start..], block);
        }
        for (block, scratch) in refs.iter_mut().zip(&scratch[..width]) {
            *block = scratch;
        }
        V::load_transposed(&refs)
    };
    compress(&mut cv, &m, counter_low, counter_high, block_len, flags);
    V::store_transposed(&cv, out);
}

/// The starting chaining value in every lane.
///
/// Built with a loop rather than `core::array::from_fn`: a closure does not
/// inherit the ISA entry point's target features, so the vector intrinsics
/// inside it would be called out of line (with the same pattern in the
/// transposes, the AVX-512 lanes ran 3.6× slower on 1 KiB blobs).
#[inline(always)]
fn splat_key<V: Lanes>(params: &GroupParams) -> [V; 8] {
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

/// Compresses block `block` of every lane, where it is a full block and not
/// any lane's last, read in place; starts loading blocks further ahead.
#[inline(always)]
fn compress_full_blocks<V: Lanes>(
    cv: &mut [V; 8],
    params: &GroupParams,
    group: &LaneGroup,
    block: usize,
    counter_low: V,
    counter_high: V,
) {
    let width = V::WIDTH;
    let start = block * BLOCK_LEN;
    let mut refs = [&ZERO_BLOCK; MAX_LANES];
    for (block, input) in refs.iter_mut().zip(&group.inputs[..width]) {
        *block = full_block(&input[start..]);
    }
    let m = V::load_transposed(&refs);
    let ahead = start + PREFETCH_BLOCKS * BLOCK_LEN;
    for input in &group.inputs[..width] {
        prefetch(input.get(ahead..).unwrap_or_default());
    }
    let first = if block == 0 { params.first_flags } else { 0 };
    compress(
        cv,
        &m,
        counter_low,
        counter_high,
        V::splat(BLOCK_LEN as u32),
        V::splat(params.flags | first),
    );
}

static ZERO_BLOCK: [u8; BLOCK_LEN] = [0; BLOCK_LEN];

/// Copies `tail` (shorter than a block) to the front of `block`.
///
/// A plain `copy_from_slice` of a variable length becomes a `memcpy` call,
/// which showed up as a fifth of the time on mixed lengths. Two fixed-size
/// copies that overlap in the middle cover every length in `[n, 2n)` and
/// inline to a couple of moves.
#[inline(always)]
fn copy_short(tail: &[u8], block: &mut [u8; BLOCK_LEN]) {
    #[inline(always)]
    fn overlapping<const N: usize>(tail: &[u8], block: &mut [u8; BLOCK_LEN]) {
        let len = tail.len();
        let head: [u8; N] = tail[..N].try_into().expect("len >= N");
        let end: [u8; N] = tail[len - N..].try_into().expect("len >= N");
        block[..N].copy_from_slice(&head);
        block[len - N..len].copy_from_slice(&end);
    }
    match tail.len() {
        32..=63 => overlapping::<32>(tail, block),
        16..=31 => overlapping::<16>(tail, block),
        8..=15 => overlapping::<8>(tail, block),
        4..=7 => overlapping::<4>(tail, block),
        len => block[..len].copy_from_slice(tail),
    }
}

#[inline(always)]
fn full_block(bytes: &[u8]) -> &[u8; BLOCK_LEN] {
    bytes[..BLOCK_LEN]
        .try_into()
        .expect("a full block has 64 bytes")
}
