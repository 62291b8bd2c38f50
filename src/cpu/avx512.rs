//! AVX-512 lanes: 16 blobs per `__m512i`, with native rotates, and last
//! blocks read in place through byte-masked loads (AVX-512BW).
//!
//! [`Avx512`] is private to this module and only used inside [`hash`],
//! whose `#[target_feature]` and safety contract guarantee AVX-512F and BW;
//! that is why the intrinsic calls in the trait methods below are sound.

use core::arch::x86_64::*;

use super::avx512_pair::{compress_pair, compress_pair_hinting, compress_pair_to_digests};
use super::kernel::{GroupParams, Lanes, TailBlocks, Work, MAX_LANES};
use super::lookahead::STREAM_WINDOW_BYTES;
use crate::consts::BLOCK_LEN;

/// Transparent, so arrays of it can be handed to the assembly in
/// [`super::avx512_pair`] as arrays of `__m512i`.
#[derive(Clone, Copy)]
#[repr(transparent)]
struct Avx512(__m512i);

/// Whether this instance compresses two groups side by side
/// ([`Lanes::PAIRS`]), for [`super::Kernel::pairs_groups`].
pub(super) const PAIRS: bool = <Avx512 as Lanes>::PAIRS;

impl Lanes for Avx512 {
    const WIDTH: usize = 16;

    #[inline(always)]
    fn splat(value: u32) -> Self {
        // SAFETY: AVX-512F and BW are enabled wherever this type is used
        // (module docs).
        Avx512(unsafe { _mm512_set1_epi32(value as i32) })
    }

    #[inline(always)]
    fn load(values: &[u32; MAX_LANES]) -> Self {
        // SAFETY: AVX-512F as above; `values` is 16 readable u32s (64 bytes),
        // and the load is unaligned.
        Avx512(unsafe { _mm512_loadu_si512(values.as_ptr().cast()) })
    }

    #[inline(always)]
    fn add(self, rhs: Self) -> Self {
        // SAFETY: AVX-512F as above.
        Avx512(unsafe { _mm512_add_epi32(self.0, rhs.0) })
    }

    #[inline(always)]
    fn xor(self, rhs: Self) -> Self {
        // SAFETY: AVX-512F as above.
        Avx512(unsafe { _mm512_xor_si512(self.0, rhs.0) })
    }

    #[inline(always)]
    fn rotr16(self) -> Self {
        // SAFETY: AVX-512F as above.
        Avx512(unsafe { _mm512_ror_epi32::<16>(self.0) })
    }

    #[inline(always)]
    fn rotr12(self) -> Self {
        // SAFETY: AVX-512F as above.
        Avx512(unsafe { _mm512_ror_epi32::<12>(self.0) })
    }

    #[inline(always)]
    fn rotr8(self) -> Self {
        // SAFETY: AVX-512F as above.
        Avx512(unsafe { _mm512_ror_epi32::<8>(self.0) })
    }

    #[inline(always)]
    fn rotr7(self) -> Self {
        // SAFETY: AVX-512F as above.
        Avx512(unsafe { _mm512_ror_epi32::<7>(self.0) })
    }

    const PAIRS: bool = true;

    #[inline(always)]
    fn compress_pair(cv: &mut [[Self; 8]; 2], m: &[[Self; 16]; 2], row3: &[[Self; 4]; 2]) {
        let (cv, m, row3) = unwrap_pair(cv, m, row3);
        // SAFETY: AVX-512F as above.
        unsafe { compress_pair(cv, m, row3) };
    }

    #[inline(always)]
    fn compress_pair_hinting(
        cv: &mut [[Self; 8]; 2],
        m: &[[Self; 16]; 2],
        row3: &[[Self; 4]; 2],
        lines: &[u8; STREAM_WINDOW_BYTES],
    ) {
        let (cv, m, row3) = unwrap_pair(cv, m, row3);
        // SAFETY: AVX-512F as above.
        unsafe { compress_pair_hinting(cv, m, row3, lines) };
    }

    #[inline(always)]
    fn compress_pair_to_digests(
        key: &[Self; 8],
        m: &[[Self; 16]; 2],
        row3: &[[Self; 4]; 2],
        out: &mut [[u8; 32]],
    ) {
        let out = out.first_chunk_mut::<32>().expect("a pair's 32 slots");
        let (m, row3) = unwrap_inputs(m, row3);
        // SAFETY: `Avx512` is a transparent wrapper of `__m512i`, so the
        // key has the layout of the array it is cast to, borrowed as before.
        let key = unsafe { &*(key as *const [Avx512; 8]).cast::<[__m512i; 8]>() };
        // SAFETY: AVX-512F as above.
        unsafe { compress_pair_to_digests(key, m, row3, out) };
    }

    #[inline(always)]
    fn load_transposed(blocks: &[&[u8; BLOCK_LEN]; MAX_LANES]) -> [Self; 16] {
        // SAFETY: AVX-512F as above; each block is a reference to 64
        // readable bytes, loaded unaligned.
        unsafe {
            let mut rows = [_mm512_setzero_si512(); 16];
            for (row, block) in rows.iter_mut().zip(blocks) {
                *row = _mm512_loadu_si512(block.as_ptr().cast());
            }
            let columns = transpose16(rows);
            let mut words = [Avx512(columns[0]); 16];
            for (word, column) in words.iter_mut().zip(columns) {
                *word = Avx512(column);
            }
            words
        }
    }

    #[inline(always)]
    fn load_last_blocks(
        inputs: &[&[u8]; MAX_LANES],
        start: usize,
        _tails: &mut TailBlocks,
    ) -> [Self; 16] {
        let mut rows = [Avx512::splat(0).0; 16];
        for (row, input) in rows.iter_mut().zip(inputs) {
            let block = &input[start..];
            debug_assert!(block.len() <= BLOCK_LEN);
            // One bit per byte of the block; none for an empty input.
            let present = u64::MAX
                .checked_shr(BLOCK_LEN.saturating_sub(block.len()) as u32)
                .unwrap_or(0);
            // SAFETY: AVX-512F and BW as above. The mask selects only the
            // block's own bytes, which `block` borrows; the bytes past it
            // are neither read nor able to fault, and load as zero.
            *row = unsafe { _mm512_maskz_loadu_epi8(present, block.as_ptr().cast()) };
        }
        // SAFETY: AVX-512F as above.
        let columns = unsafe { transpose16(rows) };
        // A loop, not `columns.map(Avx512)`: the closure inside `map` lacks
        // the target features, so it was an out-of-line call that copied
        // the 1 KiB message through memory on every group's last block (3 %
        // of the time on blobs of 1..=64 bytes).
        let mut words = [Avx512(columns[0]); 16];
        for (word, column) in words.iter_mut().zip(columns) {
            *word = Avx512(column);
        }
        words
    }

    #[inline(always)]
    fn store_transposed(words: &[Self; 8], out: &mut [[u8; 32]]) {
        let out: &mut [[u8; 32]; 16] = (&mut out[..16]).try_into().expect("16 slots");
        // SAFETY: AVX-512F as above; `out` is 16 × 32 = 512 contiguous
        // writable bytes, written as 8 unaligned 64-byte stores.
        unsafe {
            let mut columns = [_mm512_setzero_si512(); 8];
            for (column, word) in columns.iter_mut().zip(words) {
                *column = word.0;
            }
            let rows = transpose_out(columns);
            let base = out.as_mut_ptr().cast::<u8>();
            for (pair, row) in rows.iter().enumerate() {
                _mm512_storeu_si512(base.add(64 * pair).cast(), *row);
            }
        }
    }
}

/// Transposes the 4 × 4 matrix of u32 inside each 128-bit block of four
/// rows: block `j` of output `k` holds word 4j+k of rows a, b, c, d.
#[inline(always)]
unsafe fn transpose4x4_blocks([a, b, c, d]: [__m512i; 4]) -> [__m512i; 4] {
    let ab_lo = _mm512_unpacklo_epi32(a, b);
    let ab_hi = _mm512_unpackhi_epi32(a, b);
    let cd_lo = _mm512_unpacklo_epi32(c, d);
    let cd_hi = _mm512_unpackhi_epi32(c, d);
    [
        _mm512_unpacklo_epi64(ab_lo, cd_lo),
        _mm512_unpackhi_epi64(ab_lo, cd_lo),
        _mm512_unpacklo_epi64(ab_hi, cd_hi),
        _mm512_unpackhi_epi64(ab_hi, cd_hi),
    ]
}

/// Transposes a 16 × 16 matrix of u32: row `r` word `w` → vector `w` lane `r`.
///
/// 64 shuffles, about 7 % of the vector instructions a group of 64-byte
/// blobs takes (some 880: 792 for the compression), all in registers. Moving part of the transpose into
/// copies through a staging buffer, filled a step ahead of the compression
/// that reads it, was measured slower (AMD EPYC Zen 4, 64-byte blobs in
/// 4 MiB batches, one thread, side by side in one build, GB/s): 8-byte
/// copies by general registers leaving 16 `vpermt2d`, 6.20/6.20/6.23 →
/// 5.38/5.33/5.37; 16-byte copies leaving 32 unpacks, 6.14/6.19 →
/// 5.81/5.80. Staged in the same step as the loads, the wide loads waited
/// on the narrow stores (no store forwarding) and ran 3.4–4.4.
#[inline(always)]
unsafe fn transpose16(r: [__m512i; 16]) -> [__m512i; 16] {
    // Interleave words, then word pairs, within 128-bit blocks: afterwards
    // `quad[g][k]`'s 128-bit block `j` holds word 4j+k of rows 4g..4g+4.
    let mut quad = [[_mm512_setzero_si512(); 4]; 4];
    for (g, quad) in quad.iter_mut().enumerate() {
        *quad = transpose4x4_blocks([r[4 * g], r[4 * g + 1], r[4 * g + 2], r[4 * g + 3]]);
    }
    // Gather 128-bit block j of the four row groups into output word 4j+k.
    let mut out = [_mm512_setzero_si512(); 16];
    for k in 0..4 {
        let g01_lo = _mm512_shuffle_i32x4::<0b01_00_01_00>(quad[0][k], quad[1][k]);
        let g01_hi = _mm512_shuffle_i32x4::<0b11_10_11_10>(quad[0][k], quad[1][k]);
        let g23_lo = _mm512_shuffle_i32x4::<0b01_00_01_00>(quad[2][k], quad[3][k]);
        let g23_hi = _mm512_shuffle_i32x4::<0b11_10_11_10>(quad[2][k], quad[3][k]);
        out[k] = _mm512_shuffle_i32x4::<0b10_00_10_00>(g01_lo, g23_lo);
        out[4 + k] = _mm512_shuffle_i32x4::<0b11_01_11_01>(g01_lo, g23_lo);
        out[8 + k] = _mm512_shuffle_i32x4::<0b10_00_10_00>(g01_hi, g23_hi);
        out[12 + k] = _mm512_shuffle_i32x4::<0b11_01_11_01>(g01_hi, g23_hi);
    }
    out
}

/// Turns 8 word vectors of 16 lanes into 8 vectors each holding two lanes'
/// 8 words back to back (lanes 2m and 2m+1 in output `m`).
#[inline(always)]
unsafe fn transpose_out(v: [__m512i; 8]) -> [__m512i; 8] {
    // After interleaving, `words[h][l]`'s 128-bit block `j` holds words
    // 4h..4h+4 of lane l + 4j.
    let mut words = [[_mm512_setzero_si512(); 4]; 2];
    for (h, words) in words.iter_mut().enumerate() {
        *words = transpose4x4_blocks([v[4 * h], v[4 * h + 1], v[4 * h + 2], v[4 * h + 3]]);
    }
    // Per lane residue l, put each lane's low and high word halves side by
    // side: `lo[l]` = [l, l+4] as (low, high) pairs, `hi[l]` = [l+8, l+12].
    let mut lo = [_mm512_setzero_si512(); 4];
    let mut hi = [_mm512_setzero_si512(); 4];
    for l in 0..4 {
        lo[l] = _mm512_shuffle_i32x4::<0b01_00_01_00>(words[0][l], words[1][l]);
        hi[l] = _mm512_shuffle_i32x4::<0b11_10_11_10>(words[0][l], words[1][l]);
    }
    [
        _mm512_shuffle_i32x4::<0b10_00_10_00>(lo[0], lo[1]), // lanes 0, 1
        _mm512_shuffle_i32x4::<0b10_00_10_00>(lo[2], lo[3]), // lanes 2, 3
        _mm512_shuffle_i32x4::<0b11_01_11_01>(lo[0], lo[1]), // lanes 4, 5
        _mm512_shuffle_i32x4::<0b11_01_11_01>(lo[2], lo[3]), // lanes 6, 7
        _mm512_shuffle_i32x4::<0b10_00_10_00>(hi[0], hi[1]), // lanes 8, 9
        _mm512_shuffle_i32x4::<0b10_00_10_00>(hi[2], hi[3]), // lanes 10, 11
        _mm512_shuffle_i32x4::<0b11_01_11_01>(hi[0], hi[1]), // lanes 12, 13
        _mm512_shuffle_i32x4::<0b11_01_11_01>(hi[2], hi[3]), // lanes 14, 15
    ]
}

/// Hashes all 16 lanes of `group`.
///
/// # Safety
/// The CPU must support AVX-512F and AVX-512BW.
#[target_feature(enable = "avx512f,avx512bw")]
pub(super) unsafe fn hash<W: Work>(
    params: &GroupParams,
    work: W,
    tails: &mut TailBlocks,
    out: &mut [[u8; 32]],
) {
    work.hash::<Avx512>(params, tails, out);
}

/// A pair's chaining values, messages and last rows as the `__m512i`
/// arrays the assembly takes.
type PairArrays<'s> = (
    &'s mut [[__m512i; 8]; 2],
    &'s [[__m512i; 16]; 2],
    &'s [[__m512i; 4]; 2],
);

/// [`Lanes::compress_pair`]'s arguments as [`PairArrays`].
#[inline(always)]
fn unwrap_pair<'s>(
    cv: &'s mut [[Avx512; 8]; 2],
    m: &'s [[Avx512; 16]; 2],
    row3: &'s [[Avx512; 4]; 2],
) -> PairArrays<'s> {
    let (m, row3) = unwrap_inputs(m, row3);
    // SAFETY: `Avx512` is a transparent wrapper of `__m512i`, so the array
    // has the same layout as the array of `__m512i` it is cast to, and the
    // borrow carries over unchanged.
    let cv = unsafe { &mut *(cv as *mut [[Avx512; 8]; 2]).cast() };
    (cv, m, row3)
}

/// A pair's messages and last rows as the `__m512i` arrays the assembly
/// takes.
#[inline(always)]
fn unwrap_inputs<'s>(
    m: &'s [[Avx512; 16]; 2],
    row3: &'s [[Avx512; 4]; 2],
) -> (&'s [[__m512i; 16]; 2], &'s [[__m512i; 4]; 2]) {
    // SAFETY: as in `unwrap_pair`, for both arrays.
    unsafe {
        (
            &*(m as *const [[Avx512; 16]; 2]).cast(),
            &*(row3 as *const [[Avx512; 4]; 2]).cast(),
        )
    }
}
