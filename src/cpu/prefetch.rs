//! A software prefetch hint, where the instruction set has a stable one.

use crate::consts::BLOCK_LEN;

/// Hints that the cache line holding `bytes[0]` will be read soon.
#[inline(always)]
pub(crate) fn prefetch(bytes: &[u8]) {
    if !bytes.is_empty() {
        prefetch_address(bytes.as_ptr());
    }
}

/// Hints that the cache line holding `bytes[offset]` will be read soon,
/// without checking that `offset` is inside `bytes`: in a loop over lanes a
/// check per lane is a compare and a branch beside every load, competing
/// with the vector work for the same execution ports. Past the end, the
/// hint only fetches a line that is not needed (a prefetch never faults).
#[inline(always)]
pub(crate) fn prefetch_unchecked(bytes: &[u8], offset: usize) {
    prefetch_address(bytes.as_ptr().wrapping_add(offset));
}

/// Hints into L2 every line of `bytes`, one hint each `BLOCK_LEN` bytes
/// from its start (a block is a cache line; see [`prefetch_address_to_l2`]).
#[inline(always)]
pub(crate) fn prefetch_lines_to_l2(bytes: &[u8]) {
    for line in bytes.chunks(BLOCK_LEN) {
        prefetch_address_to_l2(line.as_ptr());
    }
}

/// Hints into L2 the line holding `bytes[offset]`, without checking that
/// `offset` is inside `bytes` ([`prefetch_unchecked`] says why): used for
/// lines of blobs laid back to back some way past `bytes`.
#[inline(always)]
pub(crate) fn prefetch_to_l2_unchecked(bytes: &[u8], offset: usize) {
    prefetch_address_to_l2(bytes.as_ptr().wrapping_add(offset));
}

#[inline(always)]
fn prefetch_address(address: *const u8) {
    #[cfg(target_arch = "x86_64")]
    prefetch_address_to::<{ core::arch::x86_64::_MM_HINT_T0 }>(address);
    #[cfg(not(target_arch = "x86_64"))]
    let _ = address;
}

/// Hints that the line at `address` will be read later than soon: it is
/// brought into L2 but not L1, so lines hinted well ahead do not evict the
/// ones being read.
#[inline(always)]
fn prefetch_address_to_l2(address: *const u8) {
    #[cfg(target_arch = "x86_64")]
    prefetch_address_to::<{ core::arch::x86_64::_MM_HINT_T1 }>(address);
    #[cfg(not(target_arch = "x86_64"))]
    let _ = address;
}

/// `_mm_prefetch` with the cache level `HINT` (`_MM_HINT_T0`: every level;
/// `_MM_HINT_T1`: L2 and beyond).
#[cfg(target_arch = "x86_64")]
#[inline(always)]
fn prefetch_address_to<const HINT: i32>(address: *const u8) {
    // SAFETY: SSE is part of the x86-64 baseline, and a prefetch is a hint
    // that never faults or reads into the program, whatever the address.
    unsafe { core::arch::x86_64::_mm_prefetch::<HINT>(address.cast()) };
}
