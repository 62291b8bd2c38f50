//! Hints into L2 of the bytes of blobs laid back to back, a fixed distance
//! ahead of the blob being looked up.

use super::prefetch::prefetch_lines_to_l2;
use crate::consts::BLOCK_LEN;

/// How far past the end of the newest blob looked up a unit of mixed
/// lengths laid back to back keeps its bytes hinted into L2 (every line,
/// once): 64 KiB, about eight AVX-512 groups of lengths uniform in
/// 1..=1024.
///
/// The binner compresses a blob only when its bin fills, some hundreds of
/// blobs after it was looked up, and the lanes of a group read blobs
/// scattered over that distance; the lookup's hints of each blob's first
/// blocks then waited on memory, with their miss buffers full (a tenth of
/// all samples, on the hint instructions). Measured on an AMD EPYC (Zen 4),
/// packed lengths uniform in 1..=1024, one thread, side by side against no
/// L2 hints (harness, medians, GB/s): AVX-512 in 32 MiB batches
/// 4.65/4.29/4.34/4.64 → 4.94/5.01/4.67/4.97, in 256 MiB 4.30/4.04/4.13 →
/// 4.62/4.67/4.75; AVX2 in 32 MiB 3.14/3.06/3.22 → 3.58/3.60/3.46; two
/// threads 8.48/8.17/8.49 → 8.50/9.73/8.70; lengths uniform in
/// 1025..=16384 (256 MiB) 3.80/4.04/4.17 → 4.28/4.28/4.36. In 2 MiB
/// batches, in cache, level (5.60/5.56/5.64 against 5.61/5.54/5.58).
/// 16 KiB and 32 KiB ahead gained less (4.41–4.89 in 32 MiB), 128 KiB
/// read level with 64.
const L2_AHEAD_BYTES: usize = 64 * 1024;

/// The bytes of a unit's blobs, where they lie back to back, and how many
/// of them are hinted so far.
pub(crate) struct L2Lookahead<'a> {
    /// The unit's bytes; empty where its blobs do not lie back to back.
    bytes: &'a [u8],
    /// Bytes from the start of `bytes` hinted so far, a whole number of
    /// lines' worth.
    hinted: usize,
}

impl<'a> L2Lookahead<'a> {
    /// Hints for a unit whose blobs are `bytes` back to back, if they are.
    pub(crate) fn new(bytes: Option<&'a [u8]>) -> Self {
        L2Lookahead {
            bytes: bytes.unwrap_or_default(),
            hinted: 0,
        }
    }

    /// Hints every line not yet hinted up to [`L2_AHEAD_BYTES`] past the
    /// end of `blob`, one of the unit's blobs.
    #[inline(always)]
    pub(crate) fn reach(&mut self, blob: &[u8]) {
        if self.bytes.is_empty() {
            return;
        }
        // An address difference: `blob` lies inside `bytes`.
        let end = (blob.as_ptr_range().end as usize).wrapping_sub(self.bytes.as_ptr() as usize);
        let until = end.saturating_add(L2_AHEAD_BYTES).min(self.bytes.len());
        if let Some(fresh) = self.bytes.get(self.hinted..until) {
            prefetch_lines_to_l2(fresh);
            // Whole lines' worth, so the next hint starts on a line after
            // the last one hinted.
            self.hinted += fresh.len().next_multiple_of(BLOCK_LEN);
        }
    }
}
