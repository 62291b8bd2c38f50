//! SSE4.1 lanes: 4 blobs per `__m128i`; rotations by 16 and 8 are SSSE3
//! byte shuffles, by 12 and 7 shift pairs.
//!
//! [`Sse41`] is private to this module and only used inside [`hash`],
//! whose `#[target_feature]` and safety contract guarantee SSE4.1 (and the
//! SSSE3 it implies); that is why the intrinsic calls below are sound.

use core::arch::x86_64::*;

use super::byte_rotation::{ShuffleMask, ROTR16, ROTR8};
use super::kernel::{GroupParams, Lanes, TailBlocks, Work, MAX_LANES};
use crate::consts::BLOCK_LEN;

#[derive(Clone, Copy)]
struct Sse41(__m128i);

impl Sse41 {
    /// One `pshufb` with `mask`'s first 16 bytes read from memory, opaque
    /// to LLVM (see [`byte_rotation`](super::byte_rotation) for why).
    #[inline(always)]
    fn shuffle_bytes(self, mask: &'static ShuffleMask) -> Self {
        let mut value = self.0;
        // SAFETY: SSSE3 is enabled wherever this type is used (module
        // docs); `mask` is 32 readable, 32-byte-aligned bytes; the
        // instruction only reads them and writes `value`'s register.
        unsafe {
            core::arch::asm!(
                "pshufb {value}, xmmword ptr [{mask}]",
                value = inout(xmm_reg) value,
                mask = in(reg) mask.0.as_ptr(),
                options(pure, readonly, nostack, preserves_flags),
            );
        }
        Sse41(value)
    }
}

impl Lanes for Sse41 {
    const WIDTH: usize = 4;

    #[inline(always)]
    fn splat(value: u32) -> Self {
        // SAFETY: SSE2 at least, as above.
        Sse41(unsafe { _mm_set1_epi32(value as i32) })
    }

    #[inline(always)]
    fn load(values: &[u32; MAX_LANES]) -> Self {
        // SAFETY: as above; `values` has at least 4 readable u32s, and the
        // load is unaligned.
        Sse41(unsafe { _mm_loadu_si128(values.as_ptr().cast()) })
    }

    #[inline(always)]
    fn add(self, rhs: Self) -> Self {
        // SAFETY: as above.
        Sse41(unsafe { _mm_add_epi32(self.0, rhs.0) })
    }

    #[inline(always)]
    fn xor(self, rhs: Self) -> Self {
        // SAFETY: as above.
        Sse41(unsafe { _mm_xor_si128(self.0, rhs.0) })
    }

    #[inline(always)]
    fn rotr16(self) -> Self {
        self.shuffle_bytes(&ROTR16)
    }

    #[inline(always)]
    fn rotr12(self) -> Self {
        // SAFETY: as above.
        Sse41(unsafe { _mm_or_si128(_mm_srli_epi32::<12>(self.0), _mm_slli_epi32::<20>(self.0)) })
    }

    #[inline(always)]
    fn rotr8(self) -> Self {
        self.shuffle_bytes(&ROTR8)
    }

    #[inline(always)]
    fn rotr7(self) -> Self {
        // SAFETY: as above.
        Sse41(unsafe { _mm_or_si128(_mm_srli_epi32::<7>(self.0), _mm_slli_epi32::<25>(self.0)) })
    }

    #[inline(always)]
    fn load_transposed(blocks: &[&[u8; BLOCK_LEN]; MAX_LANES]) -> [Self; 16] {
        let mut words = [Sse41(zero()); 16];
        for quarter in 0..4 {
            let mut rows = [zero(); 4];
            for (row, block) in rows.iter_mut().zip(blocks) {
                // SAFETY: as above; bytes 16q..16q+16 of each 64-byte block are
                // readable, loaded unaligned.
                *row = unsafe { _mm_loadu_si128(block.as_ptr().add(16 * quarter).cast()) };
            }
            // SAFETY: as above.
            let columns = unsafe { transpose4(rows) };
            for (k, column) in columns.into_iter().enumerate() {
                words[4 * quarter + k] = Sse41(column);
            }
        }
        words
    }

    #[inline(always)]
    fn store_transposed(words: &[Self; 8], out: &mut [[u8; 32]]) {
        let out: &mut [[u8; 32]; 4] = (&mut out[..4]).try_into().expect("4 slots");
        for half in 0..2 {
            let rows = [
                words[4 * half].0,
                words[4 * half + 1].0,
                words[4 * half + 2].0,
                words[4 * half + 3].0,
            ];
            // SAFETY: as above; bytes 16h..16h+16 of `out[lane]` are
            // writable, stored unaligned.
            unsafe {
                for (lane, row) in transpose4(rows).into_iter().enumerate() {
                    _mm_storeu_si128(out[lane].as_mut_ptr().add(16 * half).cast(), row);
                }
            }
        }
    }
}

#[inline(always)]
fn zero() -> __m128i {
    // SAFETY: SSE2 is part of the x86-64 baseline.
    unsafe { _mm_setzero_si128() }
}

/// Transposes a 4 × 4 matrix of u32 held as 4 row vectors.
#[inline(always)]
unsafe fn transpose4([a, b, c, d]: [__m128i; 4]) -> [__m128i; 4] {
    let ab_lo = _mm_unpacklo_epi32(a, b);
    let ab_hi = _mm_unpackhi_epi32(a, b);
    let cd_lo = _mm_unpacklo_epi32(c, d);
    let cd_hi = _mm_unpackhi_epi32(c, d);
    [
        _mm_unpacklo_epi64(ab_lo, cd_lo),
        _mm_unpackhi_epi64(ab_lo, cd_lo),
        _mm_unpacklo_epi64(ab_hi, cd_hi),
        _mm_unpackhi_epi64(ab_hi, cd_hi),
    ]
}

/// Hashes `work` 4 lanes at a time.
///
/// # Safety
/// The CPU must support SSE4.1 and SSSE3.
#[target_feature(enable = "sse4.1,ssse3")]
pub(super) unsafe fn hash<W: Work>(
    params: &GroupParams,
    work: W,
    tails: &mut TailBlocks,
    out: &mut [[u8; 32]],
) {
    work.hash::<Sse41>(params, tails, out);
}
