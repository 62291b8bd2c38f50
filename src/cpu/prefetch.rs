//! A software prefetch hint, where the instruction set has a stable one.

/// Hints that the cache line holding `bytes[0]` will be read soon.
#[inline(always)]
pub(crate) fn prefetch(bytes: &[u8]) {
    #[cfg(target_arch = "x86_64")]
    if !bytes.is_empty() {
        use core::arch::x86_64::{_mm_prefetch, _MM_HINT_T0};
        // SAFETY: SSE is part of the x86-64 baseline, and a prefetch of a
        // readable address (the start of a non-empty slice) has no effect
        // beyond the cache.
        unsafe { _mm_prefetch::<_MM_HINT_T0>(bytes.as_ptr().cast()) };
    }
    #[cfg(not(target_arch = "x86_64"))]
    let _ = bytes;
}
