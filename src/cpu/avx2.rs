//! AVX2 lanes: 8 blobs per `__m256i`; rotations by 16 and 8 are byte
//! shuffles, by 12 and 7 shift pairs.
//!
//! [`Avx2`] is private to this module and only used inside [`hash`],
//! whose `#[target_feature]` and safety contract guarantee AVX2; that is why
//! the intrinsic calls in the trait methods below are sound.

use core::arch::x86_64::*;

use super::byte_rotation::{ShuffleMask, ROTR16, ROTR8};
use super::kernel::{GroupParams, Lanes, TailBlocks, Work, MAX_LANES};
use crate::consts::BLOCK_LEN;

#[derive(Clone, Copy)]
struct Avx2(__m256i);

impl Avx2 {
    /// One `vpshufb` with `mask` read from memory, opaque to LLVM (see
    /// [`byte_rotation`](super::byte_rotation) for why).
    ///
    /// `#[inline]` rather than `#[inline(always)]`, which the target
    /// feature (needed for the `ymm_reg` operand) rules out; it still
    /// inlines into [`hash`], which has the same feature.
    #[inline]
    #[target_feature(enable = "avx2")]
    fn shuffle_bytes(self, mask: &'static ShuffleMask) -> Self {
        let mut value = self.0;
        // SAFETY: `mask` is 32 readable, 32-byte-aligned bytes; the
        // instruction only reads them and writes `value`'s register.
        unsafe {
            core::arch::asm!(
                "vpshufb {value}, {value}, ymmword ptr [{mask}]",
                value = inout(ymm_reg) value,
                mask = in(reg) mask.0.as_ptr(),
                options(pure, readonly, nostack, preserves_flags),
            );
        }
        Avx2(value)
    }
}

impl Lanes for Avx2 {
    const WIDTH: usize = 8;

    #[inline(always)]
    fn splat(value: u32) -> Self {
        // SAFETY: AVX2 as above.
        Avx2(unsafe { _mm256_set1_epi32(value as i32) })
    }

    #[inline(always)]
    fn load(values: &[u32; MAX_LANES]) -> Self {
        // SAFETY: AVX2 as above; `values` has at least 8 readable u32s, and
        // the load is unaligned.
        Avx2(unsafe { _mm256_loadu_si256(values.as_ptr().cast()) })
    }

    #[inline(always)]
    fn add(self, rhs: Self) -> Self {
        // SAFETY: AVX2 as above.
        Avx2(unsafe { _mm256_add_epi32(self.0, rhs.0) })
    }

    #[inline(always)]
    fn xor(self, rhs: Self) -> Self {
        // SAFETY: AVX2 as above.
        Avx2(unsafe { _mm256_xor_si256(self.0, rhs.0) })
    }

    #[inline(always)]
    fn rotr16(self) -> Self {
        // SAFETY: AVX2 as above.
        unsafe { self.shuffle_bytes(&ROTR16) }
    }

    #[inline(always)]
    fn rotr12(self) -> Self {
        // SAFETY: AVX2 as above.
        Avx2(unsafe {
            _mm256_or_si256(
                _mm256_srli_epi32::<12>(self.0),
                _mm256_slli_epi32::<20>(self.0),
            )
        })
    }

    #[inline(always)]
    fn rotr8(self) -> Self {
        // SAFETY: AVX2 as above.
        unsafe { self.shuffle_bytes(&ROTR8) }
    }

    #[inline(always)]
    fn rotr7(self) -> Self {
        // SAFETY: AVX2 as above.
        Avx2(unsafe {
            _mm256_or_si256(
                _mm256_srli_epi32::<7>(self.0),
                _mm256_slli_epi32::<25>(self.0),
            )
        })
    }

    #[inline(always)]
    fn load_transposed(blocks: &[&[u8; BLOCK_LEN]; MAX_LANES]) -> [Self; 16] {
        // Each 16-byte quarter of lane `j`'s block and the same quarter of
        // lane `j + 4`'s are loaded into one register's two halves, so
        // only the in-half 4 × 4 transposes remain: no lane-crossing
        // permutes, which compete with the rotations for the shuffle unit.
        // SAFETY: AVX2 as above; each block is a reference to 64 readable
        // bytes, read as four unaligned 16-byte loads.
        unsafe {
            let mut words = [Avx2(_mm256_setzero_si256()); 16];
            for quarter in 0..4 {
                let mut rows = [_mm256_setzero_si256(); 4];
                for (lane, row) in rows.iter_mut().enumerate() {
                    let low = blocks[lane].as_ptr().add(16 * quarter);
                    let high = blocks[lane + 4].as_ptr().add(16 * quarter);
                    *row = _mm256_loadu2_m128i(high.cast(), low.cast());
                }
                let columns = transpose4_in_halves(rows);
                for (k, column) in columns.into_iter().enumerate() {
                    words[4 * quarter + k] = Avx2(column);
                }
            }
            words
        }
    }

    #[inline(always)]
    fn store_transposed(words: &[Self; 8], out: &mut [[u8; 32]]) {
        let out: &mut [[u8; 32]; 8] = (&mut out[..8]).try_into().expect("8 slots");
        // SAFETY: AVX2 as above; `out[lane]` is 32 writable bytes for each
        // of the 8 lanes, written unaligned.
        unsafe {
            let mut columns = [_mm256_setzero_si256(); 8];
            for (column, word) in columns.iter_mut().zip(words) {
                *column = word.0;
            }
            let rows = transpose8(columns);
            for (digest, row) in out.iter_mut().zip(rows) {
                _mm256_storeu_si256(digest.as_mut_ptr().cast(), row);
            }
        }
    }
}

/// Transposes the 4 × 4 matrix of u32 in each 128-bit half of `r`:
/// word `k` of every row ends up in `out[k]`, low and high halves apart.
#[inline(always)]
unsafe fn transpose4_in_halves(r: [__m256i; 4]) -> [__m256i; 4] {
    let [a, b, c, d] = r;
    let ab_lo = _mm256_unpacklo_epi32(a, b);
    let ab_hi = _mm256_unpackhi_epi32(a, b);
    let cd_lo = _mm256_unpacklo_epi32(c, d);
    let cd_hi = _mm256_unpackhi_epi32(c, d);
    [
        _mm256_unpacklo_epi64(ab_lo, cd_lo),
        _mm256_unpackhi_epi64(ab_lo, cd_lo),
        _mm256_unpacklo_epi64(ab_hi, cd_hi),
        _mm256_unpackhi_epi64(ab_hi, cd_hi),
    ]
}

/// Transposes an 8 × 8 matrix of u32 held as 8 row vectors.
#[inline(always)]
unsafe fn transpose8(r: [__m256i; 8]) -> [__m256i; 8] {
    // Within each 128-bit half: `quad[g][k]` holds word k (low half) and
    // word 4+k (high half) of rows 4g..4g+4.
    let quad = [
        transpose4_in_halves([r[0], r[1], r[2], r[3]]),
        transpose4_in_halves([r[4], r[5], r[6], r[7]]),
    ];
    let mut out = [_mm256_setzero_si256(); 8];
    for k in 0..4 {
        out[k] = _mm256_permute2x128_si256::<0x20>(quad[0][k], quad[1][k]);
        out[4 + k] = _mm256_permute2x128_si256::<0x31>(quad[0][k], quad[1][k]);
    }
    out
}

/// Hashes `work` 8 lanes at a time.
///
/// # Safety
/// The CPU must support AVX2.
#[target_feature(enable = "avx2")]
pub(super) unsafe fn hash<W: Work>(
    params: &GroupParams,
    work: W,
    tails: &mut TailBlocks,
    out: &mut [[u8; 32]],
) {
    work.hash::<Avx2>(params, tails, out);
}
