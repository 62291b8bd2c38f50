//! NEON lanes (aarch64): 4 blobs per `uint32x4_t`. NEON is part of the
//! aarch64 baseline, so this backend is chosen at compile time.
//!
//! [`Neon`] is private to this module and only used inside [`hash`],
//! whose `#[target_feature]` and safety contract guarantee NEON.

use core::arch::aarch64::*;

use super::kernel::{GroupParams, Lanes, TailBlocks, Work, MAX_LANES};
use crate::consts::BLOCK_LEN;

#[derive(Clone, Copy)]
struct Neon(uint32x4_t);

impl Lanes for Neon {
    const WIDTH: usize = 4;

    #[inline(always)]
    fn splat(value: u32) -> Self {
        // SAFETY: NEON is enabled wherever this type is used (module docs).
        Neon(unsafe { vdupq_n_u32(value) })
    }

    #[inline(always)]
    fn load(values: &[u32; MAX_LANES]) -> Self {
        // SAFETY: as above; `values` has at least 4 readable u32s.
        Neon(unsafe { vld1q_u32(values.as_ptr()) })
    }

    #[inline(always)]
    fn add(self, rhs: Self) -> Self {
        // SAFETY: as above.
        Neon(unsafe { vaddq_u32(self.0, rhs.0) })
    }

    #[inline(always)]
    fn xor(self, rhs: Self) -> Self {
        // SAFETY: as above.
        Neon(unsafe { veorq_u32(self.0, rhs.0) })
    }

    #[inline(always)]
    fn rotr16(self) -> Self {
        // SAFETY: as above. Swapping the 16-bit halves of each word.
        Neon(unsafe { vreinterpretq_u32_u16(vrev32q_u16(vreinterpretq_u16_u32(self.0))) })
    }

    #[inline(always)]
    fn rotr12(self) -> Self {
        // SAFETY: as above. Shift left by 20, then insert the right shift by 12.
        Neon(unsafe { vsriq_n_u32::<12>(vshlq_n_u32::<20>(self.0), self.0) })
    }

    #[inline(always)]
    fn rotr8(self) -> Self {
        // SAFETY: as above.
        Neon(unsafe { vsriq_n_u32::<8>(vshlq_n_u32::<24>(self.0), self.0) })
    }

    #[inline(always)]
    fn rotr7(self) -> Self {
        // SAFETY: as above.
        Neon(unsafe { vsriq_n_u32::<7>(vshlq_n_u32::<25>(self.0), self.0) })
    }

    #[inline(always)]
    fn load_transposed(blocks: &[&[u8; BLOCK_LEN]; MAX_LANES]) -> [Self; 16] {
        let mut words = [Neon::splat(0); 16];
        for quarter in 0..4 {
            let mut rows = [Neon::splat(0).0; 4];
            for (row, block) in rows.iter_mut().zip(blocks) {
                // SAFETY: as above; bytes 16q..16q+16 of each 64-byte block are
                // readable (vld1q_u8 has no alignment requirement).
                *row = unsafe { vreinterpretq_u32_u8(vld1q_u8(block.as_ptr().add(16 * quarter))) };
            }
            // SAFETY: as above.
            let columns = unsafe { transpose4(rows) };
            for (k, column) in columns.into_iter().enumerate() {
                words[4 * quarter + k] = Neon(column);
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
            // SAFETY: as above; bytes 16h..16h+16 of `out[lane]` are writable.
            unsafe {
                for (lane, row) in transpose4(rows).into_iter().enumerate() {
                    vst1q_u8(
                        out[lane].as_mut_ptr().add(16 * half),
                        vreinterpretq_u8_u32(row),
                    );
                }
            }
        }
    }
}

/// Transposes a 4 × 4 matrix of u32 held as 4 row vectors.
#[inline(always)]
unsafe fn transpose4([a, b, c, d]: [uint32x4_t; 4]) -> [uint32x4_t; 4] {
    // [a0 b0 a2 b2], [a1 b1 a3 b3], [c0 d0 c2 d2], [c1 d1 c3 d3]
    let ab_even = vtrn1q_u32(a, b);
    let ab_odd = vtrn2q_u32(a, b);
    let cd_even = vtrn1q_u32(c, d);
    let cd_odd = vtrn2q_u32(c, d);
    let pair = |x: uint32x4_t| vreinterpretq_u64_u32(x);
    let back = |x: uint64x2_t| vreinterpretq_u32_u64(x);
    [
        back(vtrn1q_u64(pair(ab_even), pair(cd_even))), // a0 b0 c0 d0
        back(vtrn1q_u64(pair(ab_odd), pair(cd_odd))),   // a1 b1 c1 d1
        back(vtrn2q_u64(pair(ab_even), pair(cd_even))), // a2 b2 c2 d2
        back(vtrn2q_u64(pair(ab_odd), pair(cd_odd))),   // a3 b3 c3 d3
    ]
}

/// Hashes `work` 4 lanes at a time.
///
/// # Safety
/// The CPU must support NEON (every aarch64 CPU does).
#[target_feature(enable = "neon")]
pub(super) unsafe fn hash<W: Work>(
    params: &GroupParams,
    work: W,
    tails: &mut TailBlocks,
    out: &mut [[u8; 32]],
) {
    work.hash::<Neon>(params, tails, out);
}
