//! A software prefetch hint, where the instruction set has a stable one.

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

#[inline(always)]
fn prefetch_address(address: *const u8) {
    #[cfg(target_arch = "x86_64")]
    {
        use core::arch::x86_64::{_mm_prefetch, _MM_HINT_T0};
        // SAFETY: SSE is part of the x86-64 baseline, and a prefetch is a
        // hint that never faults or reads into the program, whatever the
        // address.
        unsafe { _mm_prefetch::<_MM_HINT_T0>(address.cast()) };
    }
    #[cfg(not(target_arch = "x86_64"))]
    let _ = address;
}
