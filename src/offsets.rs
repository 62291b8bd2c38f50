//! Checking packed offsets: in one pass, or in pieces that several threads
//! take while the batch waits to be hashed.
//!
//! The check is a reduction of ORs, so pieces can be checked in any order
//! and on any thread, and merge into one verdict: the same verdict, and the
//! same error, as one pass over every offset.

use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};

use crate::blobs::{Offset, Packed};
use crate::error::{Error, ErrorKind};

/// Offsets per piece of a shared check: about 5 us of work, so a thread
/// that runs out of pieces waits at most that long for the others.
const PIECE_OFFSETS: usize = 8 * 1024;

/// What a pass over some consecutive offsets found, before it is judged.
#[derive(Clone, Copy)]
pub(crate) struct Scan {
    /// Every offset and every difference ORed: bit 63 is set if one went
    /// down (the difference wraps) or lies past 2^63 (no buffer reaches it).
    suspect: u64,
    /// Every difference XOR the first one, ORed: 0 if all blobs have the
    /// first blob's length.
    unequal: u64,
}

impl Scan {
    /// Scans the pairs of consecutive `offsets`, against `step` (the first
    /// blob's length).
    ///
    /// One pass of ORs and subtractions, with no early exit and no unsigned
    /// compare (x86-64's baseline has no 64-bit one), so it vectorizes: 64 Ki
    /// offsets took 44 us with compares, a twentieth of hashing their
    /// 64-byte blobs.
    pub(crate) fn of<O: Offset>(offsets: &[O], step: u64) -> Scan {
        let (mut suspect, mut unequal) = (0u64, 0u64);
        for pair in offsets.windows(2) {
            let (previous, offset) = (pair[0].to_u64(), pair[1].to_u64());
            let difference = offset.wrapping_sub(previous);
            suspect |= offset | difference;
            unequal |= difference ^ step;
        }
        Scan { suspect, unequal }
    }

    /// Judges the scan of all of `offsets` (at least one) against `data`:
    /// the first decrease, or an offset past the end, is an error; otherwise
    /// the blobs' common length, if they have one.
    pub(crate) fn judge<O: Offset>(
        self,
        data: &[u8],
        offsets: &[O],
        step: u64,
    ) -> Result<Option<usize>, Error> {
        // A decrease wraps its difference past 2^63 unless the larger offset
        // is itself past 2^63, so a set top bit flags every decrease (and
        // offsets no buffer reaches); only then look again for which.
        let decrease = (self.suspect >> 63 == 1).then(|| {
            offsets
                .windows(2)
                .position(|pair| pair[1].to_u64() < pair[0].to_u64())
        });
        if let Some(pair) = decrease.flatten() {
            return Err(ErrorKind::OffsetsDecrease {
                index: pair + 1,
                previous: offsets[pair].to_u64(),
                offset: offsets[pair + 1].to_u64(),
            }
            .into());
        }
        // Non-decreasing, so checking the last bounds them all.
        let last = offsets[offsets.len() - 1].to_u64();
        if usize::try_from(last).map_or(true, |end| end > data.len()) {
            return Err(ErrorKind::OffsetOutOfBounds {
                index: offsets.len() - 1,
                offset: last,
                data_len: data.len(),
            }
            .into());
        }
        // Within `data`, so it fits in usize.
        Ok((self.unequal == 0).then_some(step as usize))
    }
}

/// The first blob's length as the scan compares it (0 with no blob).
pub(crate) fn first_step<O: Offset>(offsets: &[O]) -> u64 {
    match offsets {
        [first, second, ..] => second.to_u64().wrapping_sub(first.to_u64()),
        _ => 0,
    }
}

/// A check of packed offsets cut into pieces that any thread may take;
/// once every piece is done, each thread gets the same verdict.
pub(crate) struct SharedCheck<'a, O> {
    data: &'a [u8],
    offsets: &'a [O],
    /// The first blob's length, which every piece compares against.
    step: u64,
    pieces: usize,
    /// The next piece to hand out.
    next: AtomicUsize,
    /// Pieces whose scan is merged in.
    done: AtomicUsize,
    /// The merged [`Scan`] of the pieces done so far, field by field.
    suspect: AtomicU64,
    unequal: AtomicU64,
}

impl<'a, O: Offset> SharedCheck<'a, O> {
    /// A check of `offsets` (at least two) against `data`, nothing scanned yet.
    pub(crate) fn new(data: &'a [u8], offsets: &'a [O]) -> Self {
        debug_assert!(offsets.len() >= 2);
        SharedCheck {
            data,
            offsets,
            step: first_step(offsets),
            // Pieces of PIECE_OFFSETS pairs over `len - 1` pairs.
            pieces: (offsets.len() - 1).div_ceil(PIECE_OFFSETS),
            next: AtomicUsize::new(0),
            done: AtomicUsize::new(0),
            suspect: AtomicU64::new(0),
            unequal: AtomicU64::new(0),
        }
    }

    /// The number of blobs the offsets delimit.
    pub(crate) fn count(&self) -> usize {
        self.offsets.len() - 1
    }

    /// Scans every piece no thread has taken yet.
    pub(crate) fn scan_pieces(&self) {
        loop {
            let piece = self.next.fetch_add(1, Ordering::Relaxed);
            if piece >= self.pieces {
                return;
            }
            // Pairs `start..end`: offsets `start..=end`, so consecutive
            // pieces share an offset and no pair is missed.
            let start = piece * PIECE_OFFSETS;
            let end = (start + PIECE_OFFSETS).min(self.offsets.len() - 1);
            let scan = Scan::of(&self.offsets[start..=end], self.step);
            self.suspect.fetch_or(scan.suspect, Ordering::Relaxed);
            self.unequal.fetch_or(scan.unequal, Ordering::Relaxed);
            // Release: whoever counts this piece done sees its bits.
            self.done.fetch_add(1, Ordering::Release);
        }
    }

    /// The verdict once every piece is done (waiting for those other
    /// threads still scan): the checked blobs, or the error one pass over
    /// all offsets would give.
    pub(crate) fn verdict(&self) -> Result<Packed<'a, O>, Error> {
        let mut spins = 0u32;
        while self.done.load(Ordering::Acquire) < self.pieces {
            // A piece is a few microseconds; past that, the thread holding
            // it was likely preempted, so give up the CPU rather than spin.
            spins += 1;
            if spins < 1 << 12 {
                std::hint::spin_loop();
            } else {
                std::thread::yield_now();
            }
        }
        let scan = Scan {
            suspect: self.suspect.load(Ordering::Relaxed),
            unequal: self.unequal.load(Ordering::Relaxed),
        };
        let equal_len = scan.judge(self.data, self.offsets, self.step)?;
        Ok(Packed::checked(self.data, self.offsets, equal_len))
    }
}
