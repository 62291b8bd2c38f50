//! Hints into L2 of the bytes of blobs laid back to back, a fixed distance
//! ahead of the blob being looked up: taken in windows by the kernel, which
//! spreads them among its compressions, and in bursts by the lookup where
//! the kernel has fallen behind. The lane tree keeps a stream of its own,
//! the same distance ahead of the chunk it bins.

use super::prefetch::prefetch_lines_to_l2;
use crate::consts::BLOCK_LEN;
use core::cell::Cell;

/// How far past the end of the newest blob looked up a unit of mixed
/// lengths laid back to back keeps its bytes hinted into L2 (every line,
/// once) at least: 64 KiB, about eight AVX-512 groups of lengths uniform in
/// 1..=1024. The lookup hints in a burst whatever the kernel's windows
/// ([`KERNEL_AHEAD_BYTES`]) have not reached by then, and all of it where
/// no kernel takes windows (AVX2 and narrower). It passes over groups that
/// hold a blob longer than a chunk ([`L2Lookahead::pass`]): such a group
/// spans up to hundreds of KiB, and hinted in one burst it held the core up
/// on its miss buffers, where the lane tree hinting a chunk at a time as it
/// bins them does not.
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

/// How far past the newest blob looked up the kernel's windows
/// ([`L2Lookahead::window`]) may run, a window per paired compression of a
/// full bin: past [`L2_AHEAD_BYTES`], so that where the kernel keeps pace
/// the lookup's bursts never start.
///
/// The bursts alone held the core up: each group's hints (about 128 lines
/// of AVX-512 blobs of 1..=1024 bytes) waited for miss buffers, with the
/// compressions behind them standing still; perf put `hash_unit` at 17 %
/// of the samples, two thirds of it on the hints, and in cache the stream
/// cost 6 % (lines already in L3). Hinted two to each half G inside the
/// pair's assembly, they cost next to nothing. Measured on an AMD EPYC
/// (Zen 4), packed lengths uniform in 1..=1024, AVX-512, side by side
/// against the bursts alone (harness, medians): one thread, 32 MiB
/// batches, three rounds, 78.3/77.4/78.1 → 83.6/79.7/79.9 M compressions/s
/// (4.73/4.67/4.71 → 5.05/4.84/4.83 GB/s); 8 MiB, in cache, 87.3/87.6/87.8
/// → 91.5/93.0/93.1 M/s; 256 MiB, two rounds, 4.81/4.79 → 5.28/5.25 GB/s;
/// two threads, 32 MiB, 9.30/9.58 → 10.42/10.33 GB/s. 128 KiB read level
/// with 96 (83.3–85.0 M/s against 82.5–83.3), and so did a floor of 16 or
/// 32 KiB under it. The final build against the one before it (three
/// rounds, a quieter host): 32 MiB 81.5/83.3/84.2 → 89.7/89.3/88.8 M/s;
/// 1 KiB blobs, AVX2 and lengths in 1025..=16384 (no windows) level.
const KERNEL_AHEAD_BYTES: usize = 96 * 1024;

/// Lines a window holds: what the kernel hints while it compresses one
/// pair of groups (32 lanes' blocks, about 30 lines of input).
const STREAM_WINDOW_LINES: usize = 56;

/// Bytes a window holds: [`STREAM_WINDOW_LINES`] lines.
pub(crate) const STREAM_WINDOW_BYTES: usize = STREAM_WINDOW_LINES * BLOCK_LEN;

/// The bytes of a unit's blobs, where they lie back to back, and how many
/// of them are hinted so far.
pub(crate) struct L2Lookahead<'a> {
    /// The unit's bytes; empty where its blobs do not lie back to back.
    bytes: &'a [u8],
    /// Bytes from the start of `bytes` hinted so far, a whole number of
    /// lines' worth.
    hinted: Cell<usize>,
    /// Bytes from the start of `bytes` up to which windows may be taken.
    /// Cells, so that the kernel can take windows through the shared
    /// reference its work item holds.
    target: Cell<usize>,
}

impl<'a> L2Lookahead<'a> {
    /// Hints for a unit whose blobs are `bytes` back to back, if they are.
    pub(crate) fn new(bytes: Option<&'a [u8]>) -> Self {
        L2Lookahead {
            bytes: bytes.unwrap_or_default(),
            hinted: Cell::new(0),
            target: Cell::new(0),
        }
    }

    /// Hints every line not yet hinted up to [`L2_AHEAD_BYTES`] past the
    /// end of `blob`, one of the unit's blobs, and lets the kernel's windows
    /// run to [`KERNEL_AHEAD_BYTES`] past it.
    #[inline(always)]
    pub(crate) fn reach(&self, blob: &[u8]) {
        if self.bytes.is_empty() {
            return;
        }
        let end = self.end_of(blob);
        let until = end.saturating_add(L2_AHEAD_BYTES).min(self.bytes.len());
        self.target.set(end.saturating_add(KERNEL_AHEAD_BYTES));
        let hinted = self.hinted.get();
        if let Some(fresh) = self.bytes.get(hinted..until) {
            prefetch_lines_to_l2(fresh);
            // Whole lines' worth, so the next hint starts on a line after
            // the last one hinted.
            self.hinted
                .set(hinted + fresh.len().next_multiple_of(BLOCK_LEN));
        }
    }

    /// Counts the bytes up to the end of `blob`, one of the unit's blobs,
    /// as hinted without hinting them: blobs longer than a chunk, which the
    /// lane tree's own stream hints as it bins their chunks, or `blake3`
    /// reads in order.
    #[inline(always)]
    pub(crate) fn pass(&self, blob: &[u8]) {
        if self.bytes.is_empty() {
            return;
        }
        self.hinted.set(self.hinted.get().max(self.end_of(blob)));
    }

    /// Where `blob`, one of the unit's blobs, ends in its bytes: an address
    /// difference, as `blob` lies inside them.
    #[inline(always)]
    fn end_of(&self, blob: &[u8]) -> usize {
        (blob.as_ptr_range().end as usize).wrapping_sub(self.bytes.as_ptr() as usize)
    }

    /// The next [`STREAM_WINDOW_BYTES`] not yet hinted, if they lie within
    /// the unit and the kernel's reach, counted as hinted: the kernel hints
    /// them while it compresses a pair ([`Lanes::compress_pair_hinting`]).
    ///
    /// [`Lanes::compress_pair_hinting`]: super::kernel::Lanes::compress_pair_hinting
    #[inline(always)]
    pub(crate) fn window(&self) -> Option<&'a [u8; STREAM_WINDOW_BYTES]> {
        let hinted = self.hinted.get();
        let end = hinted + STREAM_WINDOW_BYTES;
        if end > self.target.get() {
            return None;
        }
        let window = self.bytes.get(hinted..)?.first_chunk()?;
        self.hinted.set(end);
        Some(window)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Where `window` starts in `bytes`.
    fn offset(bytes: &[u8], window: &[u8; STREAM_WINDOW_BYTES]) -> usize {
        window.as_ptr() as usize - bytes.as_ptr() as usize
    }

    #[test]
    fn windows_follow_the_bursts_and_stop_at_the_kernels_reach() {
        let bytes = vec![0u8; 1 << 20];
        let stream = L2Lookahead::new(Some(&bytes));
        // No blob looked up yet: nothing for the kernel.
        assert!(stream.window().is_none());
        // A blob ending 1000 bytes in: the burst reaches a whole line past
        // `L2_AHEAD_BYTES` beyond it, and windows go on from there.
        stream.reach(&bytes[..1000]);
        let burst_end = (1000 + L2_AHEAD_BYTES).next_multiple_of(BLOCK_LEN);
        let mut expected = burst_end;
        while let Some(window) = stream.window() {
            assert_eq!(offset(&bytes, window), expected);
            expected += STREAM_WINDOW_BYTES;
        }
        assert!(expected <= 1000 + KERNEL_AHEAD_BYTES);
        assert!(expected + STREAM_WINDOW_BYTES > 1000 + KERNEL_AHEAD_BYTES);
        // The lookup moves on 16 KiB: the windows are still past its
        // floor, so its burst hints nothing twice, and they carry on from
        // where they stopped.
        let moved = 1000 + 16 * 1024;
        assert!(moved + L2_AHEAD_BYTES <= expected);
        stream.reach(&bytes[..moved]);
        assert_eq!(stream.window().map(|w| offset(&bytes, w)), Some(expected));
    }

    /// Bytes passed over (a long blob's) are neither hinted by the next
    /// burst nor taken as windows: the stream goes on from past them.
    #[test]
    fn passed_bytes_are_skipped() {
        let bytes = vec![0u8; 1 << 20];
        let stream = L2Lookahead::new(Some(&bytes));
        stream.reach(&bytes[..1000]);
        let passed = 300_000;
        stream.pass(&bytes[..passed]);
        // The kernel's reach is still where the last burst left it.
        assert!(stream.window().is_none());
        stream.reach(&bytes[..passed + 100]);
        let burst_end = passed + (100 + L2_AHEAD_BYTES).next_multiple_of(BLOCK_LEN);
        assert_eq!(stream.window().map(|w| offset(&bytes, w)), Some(burst_end));
        // Passing bytes already hinted changes nothing.
        stream.pass(&bytes[..passed]);
        let next = burst_end + STREAM_WINDOW_BYTES;
        assert_eq!(stream.window().map(|w| offset(&bytes, w)), Some(next));
    }

    #[test]
    fn windows_never_leave_the_units_bytes() {
        let bytes = vec![0u8; 100_000];
        let stream = L2Lookahead::new(Some(&bytes));
        stream.reach(&bytes[..bytes.len() - 10]);
        // The burst took every line; no window is left past them.
        assert!(stream.window().is_none());

        let empty = L2Lookahead::new(None);
        empty.reach(&bytes[..10]);
        assert!(empty.window().is_none());
    }
}
