//! Portable lanes: plain `[u32; N]` arrays that the compiler may vectorise
//! for whatever baseline the target has. The fallback on every CPU and the
//! reference the ISA backends are tested against.

use super::kernel::{
    compress_rounds, compress_xof_rounds, GroupParams, Lanes, TailBlocks, Work, MAX_LANES,
};
use crate::consts::BLOCK_LEN;

/// `N` lanes held in an array.
#[derive(Clone, Copy)]
pub(crate) struct Portable<const N: usize>([u32; N]);

impl<const N: usize> Portable<N> {
    // Plain indexed loops over fixed-size arrays: the shape LLVM's
    // vectoriser recognises best.
    #[inline(always)]
    fn map(mut self, f: impl Fn(u32) -> u32) -> Self {
        for lane in 0..N {
            self.0[lane] = f(self.0[lane]);
        }
        self
    }

    #[inline(always)]
    fn zip(mut self, rhs: Self, f: impl Fn(u32, u32) -> u32) -> Self {
        for lane in 0..N {
            self.0[lane] = f(self.0[lane], rhs.0[lane]);
        }
        self
    }
}

impl<const N: usize> Lanes for Portable<N> {
    const WIDTH: usize = N;

    #[inline(always)]
    fn splat(value: u32) -> Self {
        Portable([value; N])
    }

    #[inline(always)]
    fn load(values: &[u32; MAX_LANES]) -> Self {
        Portable(core::array::from_fn(|i| values[i]))
    }

    #[inline(always)]
    fn add(self, rhs: Self) -> Self {
        self.zip(rhs, u32::wrapping_add)
    }

    #[inline(always)]
    fn xor(self, rhs: Self) -> Self {
        self.zip(rhs, |a, b| a ^ b)
    }

    #[inline(always)]
    fn rotr16(self) -> Self {
        self.map(|x| x.rotate_right(16))
    }

    #[inline(always)]
    fn rotr12(self) -> Self {
        self.map(|x| x.rotate_right(12))
    }

    #[inline(always)]
    fn rotr8(self) -> Self {
        self.map(|x| x.rotate_right(8))
    }

    #[inline(always)]
    fn rotr7(self) -> Self {
        self.map(|x| x.rotate_right(7))
    }

    /// Out of line: see [`Lanes::compress`]. A call per compression costs
    /// these lanes nothing that shows; inlined, the rounds' 448 lane loops
    /// per compression, times every compression site of every kind of work,
    /// made the one codegen unit holding the portable instances take over
    /// 30 minutes at opt-level 3.
    #[inline]
    fn compress(cv: &mut [Self; 8], m: &[Self; 16], row3: [Self; 4]) {
        compress_out_of_line(cv, m, row3);
    }

    /// Out of line, as [`Lanes::compress`] is here.
    #[inline]
    fn compress_xof(cv: &[Self; 8], m: &[Self; 16], row3: [Self; 4]) -> [Self; 16] {
        compress_xof_out_of_line(cv, m, row3)
    }

    #[inline(always)]
    fn load_transposed(blocks: &[&[u8; BLOCK_LEN]; MAX_LANES]) -> [Self; 16] {
        core::array::from_fn(|word| {
            Portable(core::array::from_fn(|lane| {
                let b = &blocks[lane][4 * word..4 * word + 4];
                u32::from_le_bytes([b[0], b[1], b[2], b[3]])
            }))
        })
    }

    #[inline(always)]
    fn store_transposed(words: &[Self; 8], out: &mut [[u8; 32]]) {
        for (lane, digest) in out[..N].iter_mut().enumerate() {
            for (word, bytes) in digest.chunks_exact_mut(4).enumerate() {
                bytes.copy_from_slice(&words[word].0[lane].to_le_bytes());
            }
        }
    }
}

/// Hashes `work` `width` lanes at a time, for `width` in 16, 8, 4, 1.
pub(crate) fn hash<W: Work>(
    width: usize,
    params: &GroupParams,
    work: W,
    tails: &mut TailBlocks,
    out: &mut [[u8; 32]],
) {
    match width {
        16 => hash_with::<16, W>(params, work, tails, out),
        8 => hash_with::<8, W>(params, work, tails, out),
        4 => hash_with::<4, W>(params, work, tails, out),
        _ => {
            debug_assert_eq!(width, 1, "portable widths are 16, 8, 4, 1");
            hash_with::<1, W>(params, work, tails, out)
        }
    }
}

/// Hashes `work` with `N` lanes: one function per width, kept out of line.
/// With the four widths inlined into [`hash`], each kind of work made one
/// function of about 1.5 MB of scalar code, and optimising the codegen unit
/// that held them (loop passes over a huge control-flow graph) took LLVM
/// over 11 minutes at the test profile's opt-level 2. With this, the test
/// profile builds the library in 3.5 minutes instead of 13.
#[inline(never)]
fn hash_with<const N: usize, W: Work>(
    params: &GroupParams,
    work: W,
    tails: &mut TailBlocks,
    out: &mut [[u8; 32]],
) {
    work.hash::<Portable<N>>(params, tails, out);
}

/// [`compress_rounds`] for `N` array lanes, one copy per width.
#[inline(never)]
fn compress_out_of_line<const N: usize>(
    cv: &mut [Portable<N>; 8],
    m: &[Portable<N>; 16],
    row3: [Portable<N>; 4],
) {
    compress_rounds(cv, m, row3);
}

/// [`compress_xof_rounds`] for `N` array lanes, one copy per width.
#[inline(never)]
fn compress_xof_out_of_line<const N: usize>(
    cv: &[Portable<N>; 8],
    m: &[Portable<N>; 16],
    row3: [Portable<N>; 4],
) -> [Portable<N>; 16] {
    compress_xof_rounds(cv, m, row3)
}
