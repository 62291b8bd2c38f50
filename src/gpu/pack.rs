//! Packing a slab: the blobs of a share of the batch copied into mapped
//! staging memory, each starting on a whole load ([`LOAD_BYTES`]) and
//! zero-padded to one, on every thread the engine has: the packing is a
//! memory copy, and one core cannot feed a bus of 50 GB/s.
//!
//! Blobs of one length of at most one chunk laid back to back (records,
//! equal-length packed blobs) go without a table: the shader finds blob `i`
//! at `i` strides, and where the length is a whole number of loads the
//! slab's data is one copy of the input's bytes. Other packed blobs are
//! copied as they lie, in one copy (or none, from a pinned buffer), with a
//! table of where each starts; only blobs given one by one are copied one
//! by one, each padded to a load. Blobs over one chunk get the jobs of
//! their trees too (`tree.rs`).

use std::ops::Range;

use wgpu::WriteOnly;

use super::layout::{entry_bytes, padded_len, ENTRY_BYTES, LOAD_BYTES, MAX_ONE_INVOCATION, SKIP};
use super::pinned::InPlace;
use super::slab::SlabPlan;
use super::tree::{self, Level, LongBlob, Unit};
use crate::blobs::BlobSource;
use crate::cpu::batch::Threads;

/// How the shader finds a slab's blobs.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum SlabLayout {
    /// Through the table: one `(load offset, length)` entry per blob, each
    /// blob padded to a whole load.
    Table,
    /// Every blob `len` bytes, blob `i` at load `i * stride`.
    Records { len: u32, stride: u32 },
    /// As the blobs lay in the caller's packed memory: through the table,
    /// one `(byte offset, length)` entry per blob.
    Verbatim,
    /// Every blob `len` bytes, back to back as they lay in the caller's
    /// memory from byte `first_byte`.
    VerbatimRecords { len: u32, first_byte: u32 },
}

impl SlabLayout {
    /// Whether the shader finds the blobs through the table.
    pub(crate) fn has_table(self) -> bool {
        matches!(self, SlabLayout::Table | SlabLayout::Verbatim)
    }
}

/// What one packing step put into a slab.
#[derive(Clone, Debug)]
pub(crate) struct Packed {
    /// The blobs of the batch in this slab (some may be skipped).
    pub blobs: Range<usize>,
    /// Bytes of blob data, padding included.
    pub data_bytes: u64,
    /// Whether any blob in the range was left to the CPU (over
    /// `max_blob`).
    pub skipped: bool,
    /// The longest blob the slab took.
    pub max_blob: usize,
    pub layout: SlabLayout,
    /// The dispatches of the trees of blobs over one chunk (empty if none).
    pub tree: Vec<Level>,
    /// Bytes of those trees' jobs.
    pub job_bytes: u64,
    /// The addresses of the caller's bytes the slab's data is copied from
    /// where they lie, in a pinned buffer ([`records_in_place`], or
    /// verbatim); `None` where it was packed.
    pub in_place: Option<Range<usize>>,
}

impl Packed {
    pub(crate) fn count(&self) -> u64 {
        self.blobs.len() as u64
    }

    /// Whether the slab was packed through its staging buffer, which must
    /// then be made ready to pack again: every slab but records copied from
    /// where they lie ([`records_in_place`]), which never touch it.
    pub(crate) fn staged(&self) -> bool {
        self.in_place.is_none() || !matches!(self.layout, SlabLayout::Records { .. })
    }
}

/// Blobs a thread packs as one piece of a table slab: enough that the
/// hand-over is noise, few enough that every thread gets several.
const TABLE_PIECE_BLOBS: usize = 4096;

/// Bytes after which a piece of a table slab ends sooner: a slab of long
/// blobs holds fewer than [`TABLE_PIECE_BLOBS`] (2 080 of 64 KiB on an
/// H200), and one thread packing all of it held the card to 8 GB/s.
const TABLE_PIECE_BYTES: usize = 4 << 20;

/// Bytes a thread copies as one piece of a records slab.
const RECORDS_PIECE_BYTES: usize = 4 << 20;

/// Blobs a thread scans, and writes the table entries of, as one piece of
/// a verbatim slab.
const VERBATIM_PIECE_BLOBS: usize = 16 * 1024;

/// A verbatim slab is not worth its upload where more than this share of
/// its bytes belong to blobs it leaves to the CPU: the table layout leaves
/// them out.
const VERBATIM_MOST_SKIPPED: f64 = 0.125;

/// Bytes a verbatim slab keeps free at each end of its data, for the bytes
/// before and after the blobs that a copy from a pinned buffer takes along
/// (the GPU copies whole words).
const COPY_SLACK: usize = 4;

/// The parts of a slab's mapped staging buffer.
pub(crate) struct SlabView<'a> {
    pub table: WriteOnly<'a, [u8]>,
    pub data: WriteOnly<'a, [u8]>,
    pub jobs: WriteOnly<'a, [u8]>,
}

/// Packs blobs from `start` on into a slab's staging buffer until the slab
/// or the batch is full, leaving blobs over `max_blob` bytes (at most the
/// slab's data) to the CPU. Packed blobs that lie in the pinned buffer
/// `in_place` are left there for the GPU to copy, their table packed.
pub(crate) fn pack<S: BlobSource>(
    source: &S,
    start: usize,
    plan: SlabPlan,
    max_blob: usize,
    view: SlabView<'_>,
    threads: Threads,
    in_place: Option<&InPlace>,
) -> Packed {
    let end = source.count().min(start + plan.entries as usize);
    if let Some((bytes, len)) = source.back_to_back(start, end) {
        if len <= MAX_ONE_INVOCATION.min(max_blob) {
            // Records a pinned buffer holds that the slab cannot copy as
            // records (`records_in_place`), and records that would need
            // padding, are taken as they lie.
            let pinned = in_place.is_some_and(|place| place.holds(bytes));
            let fits = verbatim_records_fit(bytes, len, plan);
            if fits > 0 && (pinned || !len.is_multiple_of(LOAD_BYTES)) {
                let bytes = &bytes[..fits * len];
                return verbatim_records(bytes, len, start, view.data, threads, in_place);
            }
            return pack_records(bytes, len, start, end, plan, view.data, threads);
        }
    }
    match verbatim_run(source, start..end, plan, max_blob, threads) {
        Some(run) => pack_verbatim(source, run, max_blob, view, threads, in_place),
        None => pack_table(source, start..end, plan, max_blob, view, threads),
    }
}

/// How many of the records of `len` bytes in `bytes` a slab takes as they
/// lie: as many as its data holds with room for the words around them (0
/// where a slab of at most 1 KiB has no room for one).
fn verbatim_records_fit(bytes: &[u8], len: usize, plan: SlabPlan) -> usize {
    let room = (plan.data_bytes as usize).saturating_sub(2 * COPY_SLACK);
    let records = |bytes: usize| bytes.checked_div(len).unwrap_or(0);
    records(bytes.len()).min(records(room))
}

/// The records of `len` (1..=1024) bytes from blob `start` on that make up
/// `bytes`, taken as they lie: copied into the slab's data on `threads` in
/// one piece per 4 MiB, or, where they lie in the pinned buffer `in_place`,
/// left for the GPU to copy from there (the whole words that hold them).
/// No table: the shader finds record `i` at `i` lengths from the first.
fn verbatim_records(
    bytes: &[u8],
    len: usize,
    start: usize,
    data: WriteOnly<'_, [u8]>,
    threads: Threads,
    in_place: Option<&InPlace>,
) -> Packed {
    let count = bytes.len() / len;
    let (lead, data_bytes, in_place) = take_as_they_lie(bytes, data, threads, in_place);
    Packed {
        blobs: start..start + count,
        data_bytes,
        skipped: false,
        max_blob: len,
        // Both fit in u32: the data is within one storage binding.
        layout: SlabLayout::VerbatimRecords {
            len: len as u32,
            first_byte: lead as u32,
        },
        tree: Vec::new(),
        job_bytes: 0,
        in_place,
    }
}

/// Takes `bytes` as they lie: where the pinned buffer `in_place` holds them,
/// the addresses of the whole words that do, which the GPU copies, else
/// copied into `data` on `threads`. Where the bytes start in the data the
/// shader reads, how many bytes of it the GPU copies (whole words), and the
/// addresses copied in place.
fn take_as_they_lie(
    bytes: &[u8],
    data: WriteOnly<'_, [u8]>,
    threads: Threads,
    in_place: Option<&InPlace>,
) -> (usize, u64, Option<Range<usize>>) {
    let addresses = super::pinned::addresses(bytes);
    let words = match bytes.is_empty() {
        true => None,
        false => in_place.and_then(|place| place.words_holding(&addresses)),
    };
    match words {
        Some(words) => (
            addresses.start - words.start,
            words.len() as u64,
            Some(words),
        ),
        None => {
            copy_in_pieces(bytes, data.into_slice(..bytes.len()), threads);
            (0, bytes.len().next_multiple_of(4) as u64, None)
        }
    }
}

/// Blobs of packed input that a slab takes as they lie.
struct VerbatimRun<'a> {
    blobs: Range<usize>,
    /// Their bytes.
    bytes: &'a [u8],
    /// The blobs over one chunk (at most `max_blob`), starting where they
    /// do in `bytes`.
    long: Vec<LongBlob>,
    /// Whether any blob is over `max_blob`, left to the CPU.
    skipped: bool,
}

/// What one thread found in a piece of a verbatim run.
#[derive(Default)]
struct PieceScan {
    skipped_bytes: usize,
    long: Vec<LongBlob>,
}

/// The blobs `blobs.start..` of a packed source that a slab takes as they
/// lie, as many as its data holds: `None` where the source is not packed,
/// where the first blob alone is too long, or where too many of the bytes
/// belong to blobs over `max_blob` ([`VERBATIM_MOST_SKIPPED`]). The
/// lengths are scanned on `threads`.
fn verbatim_run<'s, S: BlobSource>(
    source: &'s S,
    blobs: Range<usize>,
    plan: SlabPlan,
    max_blob: usize,
    threads: Threads,
) -> Option<VerbatimRun<'s>> {
    if !S::CONTIGUOUS {
        return None;
    }
    let start = blobs.start;
    let room = (plan.data_bytes as usize).saturating_sub(2 * COPY_SLACK);
    // The most blobs whose bytes fit, by bisection: a packed source's
    // bytes are one subtraction away.
    let (mut fits, mut over) = (start, blobs.end + 1);
    while over - fits > 1 {
        let middle = fits + (over - fits) / 2;
        match source.bytes(start, middle) <= room {
            true => fits = middle,
            false => over = middle,
        }
    }
    let stop = fits;
    if stop == start {
        return None;
    }
    let bytes = source.contiguous_bytes(start, stop)?;
    let pieces: Vec<_> = (start..stop).step_by(VERBATIM_PIECE_BLOBS).collect();
    let mut scans: Vec<PieceScan> = pieces.iter().map(|_| PieceScan::default()).collect();
    let work: Vec<_> = pieces.into_iter().zip(&mut scans).collect();
    threads.for_each(work, |(first, scan)| {
        let mut at = source.bytes(start, first);
        for index in first..stop.min(first + VERBATIM_PIECE_BLOBS) {
            let len = source.len(index);
            if len > max_blob {
                scan.skipped_bytes += len;
            } else if len > MAX_ONE_INVOCATION {
                // All three fit in u32: within one storage binding.
                scan.long.push(LongBlob {
                    slot: (index - start) as u32,
                    first: at as u32,
                    len: len as u32,
                    subtree_at: source.subtree_at(index),
                });
            }
            at += len;
        }
    });
    let skipped_bytes: usize = scans.iter().map(|scan| scan.skipped_bytes).sum();
    if skipped_bytes as f64 > VERBATIM_MOST_SKIPPED * bytes.len() as f64 {
        return None;
    }
    Some(VerbatimRun {
        blobs: start..stop,
        bytes,
        long: scans.into_iter().flat_map(|scan| scan.long).collect(),
        skipped: skipped_bytes > 0,
    })
}

/// The blobs from `start` on that the slab can take straight from the
/// caller's memory, as records whose stride is their length: blobs of one
/// length, a whole number of loads of at most 1 KiB (and `max_blob`), back
/// to back from a 4-byte boundary (the GPU's copies move whole words).
/// Their bytes, and the slab as [`pack`] would have packed it.
pub(crate) fn records_in_place<S: BlobSource>(
    source: &S,
    start: usize,
    plan: SlabPlan,
    max_blob: usize,
) -> Option<(&[u8], Packed)> {
    let end = source.count().min(start + plan.entries as usize);
    let (bytes, len) = source.back_to_back(start, end)?;
    if !fits_in_place(bytes, len, max_blob) {
        return None;
    }
    let count = (end - start).min(plan.data_bytes as usize / len);
    let bytes = &bytes[..count * len];
    let mut packed = records(start, count, len);
    packed.in_place = Some(super::pinned::addresses(bytes));
    Some((bytes, packed))
}

/// Whether blobs of `len` bytes back to back in `bytes` can be copied as
/// they lie: a whole number of loads, at most 1 KiB (and `max_blob`), from
/// a 4-byte boundary (the GPU's copies move whole words).
fn fits_in_place(bytes: &[u8], len: usize, max_blob: usize) -> bool {
    len > 0
        && len.is_multiple_of(LOAD_BYTES)
        && len <= MAX_ONE_INVOCATION.min(max_blob)
        && (bytes.as_ptr() as usize).is_multiple_of(4)
}

/// What a slab of `count` records of `len` bytes from blob `start` holds.
fn records(start: usize, count: usize, len: usize) -> Packed {
    let stride = padded_len(len);
    Packed {
        blobs: start..start + count,
        data_bytes: (count * stride) as u64,
        skipped: false,
        max_blob: len,
        layout: SlabLayout::Records {
            len: len as u32,
            stride: (stride / LOAD_BYTES) as u32,
        },
        tree: Vec::new(),
        job_bytes: 0,
        in_place: None,
    }
}

/// Copies `bytes` into `target` (of the same length) in pieces on
/// `threads`.
pub(crate) fn copy_in_pieces(bytes: &[u8], target: WriteOnly<'_, [u8]>, threads: Threads) {
    let mut pieces = Vec::new();
    let mut rest = target;
    for input in bytes.chunks(RECORDS_PIECE_BYTES) {
        let (piece, after) = rest.split_at(input.len());
        rest = after;
        pieces.push((input, Piece(piece)));
    }
    threads.for_each(pieces, |(input, Piece(mut piece))| {
        piece.copy_from_slice(input)
    });
}

/// Blobs `start..end` of `len` bytes each, back to back in `bytes`.
fn pack_records(
    bytes: &[u8],
    len: usize,
    start: usize,
    end: usize,
    plan: SlabPlan,
    mut data: WriteOnly<'_, [u8]>,
    threads: Threads,
) -> Packed {
    let stride = padded_len(len);
    let fits = (plan.data_bytes as usize)
        .checked_div(stride)
        .unwrap_or(usize::MAX);
    let count = (end - start).min(fits);
    let data_bytes = count * stride;
    let blobs_per_piece = (RECORDS_PIECE_BYTES / stride.max(1)).max(1);
    let mut pieces = Vec::new();
    let mut rest = data.slice(..data_bytes);
    for first in (0..count).step_by(blobs_per_piece) {
        let blobs = blobs_per_piece.min(count - first);
        let (piece, after) = rest.split_at(blobs * stride);
        rest = after;
        pieces.push((&bytes[first * len..(first + blobs) * len], Piece(piece)));
    }
    threads.for_each(pieces, |(input, Piece(mut piece))| {
        if stride == len {
            piece.copy_from_slice(input);
        } else {
            for (slot, blob) in input.chunks_exact(len).enumerate() {
                let at = slot * stride;
                piece.slice(at..at + len).copy_from_slice(blob);
                piece.slice(at + len..at + stride).fill(0);
            }
        }
    });
    records(start, count, len)
}

/// Takes `run` as it lies: its bytes copied into the slab's data on
/// `threads`, or, where they lie in the pinned buffer `in_place`, left for
/// the GPU to copy from there (the whole words that hold them); then the
/// table of where each blob starts, and the jobs of long blobs' trees.
fn pack_verbatim<S: BlobSource>(
    source: &S,
    run: VerbatimRun<'_>,
    max_blob: usize,
    view: SlabView<'_>,
    threads: Threads,
    in_place: Option<&InPlace>,
) -> Packed {
    let SlabView { table, data, jobs } = view;
    let VerbatimRun {
        blobs,
        bytes,
        long,
        skipped,
    } = run;
    let (lead, data_bytes, pinned_words) = take_as_they_lie(bytes, data, threads, in_place);
    let start = blobs.start;
    let mut pieces = Vec::new();
    let mut rest = table.into_slice(..blobs.len() * ENTRY_BYTES as usize);
    for first in blobs.clone().step_by(VERBATIM_PIECE_BLOBS) {
        let last = blobs.end.min(first + VERBATIM_PIECE_BLOBS);
        let (entries, after) = rest.split_at((last - first) * ENTRY_BYTES as usize);
        rest = after;
        pieces.push((first..last, Piece(entries)));
    }
    threads.for_each(pieces, |(piece, Piece(mut entries))| {
        // Both fit in u32: the data is within one storage binding.
        let mut at = lead + source.bytes(start, piece.start);
        for (slot, index) in piece.enumerate() {
            let len = source.len(index);
            let entry = match len > max_blob {
                true => entry_bytes(0, SKIP),
                false => entry_bytes(at as u32, len as u32),
            };
            at += len;
            let slot = slot * ENTRY_BYTES as usize;
            entries
                .slice(slot..slot + ENTRY_BYTES as usize)
                .copy_from_slice(&entry);
        }
    });
    let long: Vec<LongBlob> = long
        .into_iter()
        .map(|blob| LongBlob {
            first: blob.first + lead as u32,
            ..blob
        })
        .collect();
    let (tree, job_bytes) = tree_jobs(&long, Unit::Byte, jobs, threads);
    Packed {
        blobs,
        data_bytes,
        skipped,
        max_blob,
        layout: SlabLayout::Verbatim,
        tree,
        job_bytes,
        in_place: pinned_words,
    }
}

/// The dispatches of the trees of `long` blobs (none: no dispatches), their
/// jobs copied into `jobs` on `threads`, and the jobs' bytes.
fn tree_jobs(
    long: &[LongBlob],
    unit: Unit,
    mut jobs: WriteOnly<'_, [u8]>,
    threads: Threads,
) -> (Vec<Level>, u64) {
    if long.is_empty() {
        return (Vec::new(), 0);
    }
    let tree = tree::plan(long, unit);
    let bytes = tree.job_bytes();
    copy_in_pieces(&bytes, jobs.slice(..bytes.len()), threads);
    let job_bytes = bytes.len() as u64;
    drop(bytes);
    (tree.levels, job_bytes)
}

/// Blobs `start..end` of any lengths, through the table, with the jobs of
/// the trees of those over one chunk; those over `max_blob` are marked
/// [`SKIP`] for the CPU.
fn pack_table<S: BlobSource>(
    source: &S,
    blobs: Range<usize>,
    plan: SlabPlan,
    max_blob: usize,
    view: SlabView<'_>,
    threads: Threads,
) -> Packed {
    let SlabView {
        mut table,
        mut data,
        jobs,
    } = view;
    let (start, end) = (blobs.start, blobs.end);
    // One pass over the lengths finds where the data runs out, where each
    // piece's data starts and where the long blobs lie; the copies then run
    // in parallel.
    let capacity = plan.data_bytes as usize;
    debug_assert!(max_blob <= capacity);
    let mut used = 0usize;
    let mut skipped = false;
    let mut piece_starts = Vec::new();
    let mut long = Vec::new();
    let mut stop = start;
    let mut piece = (start, 0);
    while stop < end {
        let (first, offset) = piece;
        let len = source.len(stop);
        if stop == start
            || stop - first == TABLE_PIECE_BLOBS
            || used - offset >= TABLE_PIECE_BYTES
            || copied_in_parts(len, max_blob)
        {
            piece = (stop, used);
            piece_starts.push(piece);
        }
        if len > max_blob {
            skipped = true;
        } else {
            let padded = padded_len(len);
            if used + padded > capacity {
                break;
            }
            if len > MAX_ONE_INVOCATION {
                // All three fit in u32: the data is within one storage
                // binding (SlabPlan::new).
                long.push(LongBlob {
                    slot: (stop - start) as u32,
                    first: (used / LOAD_BYTES) as u32,
                    len: len as u32,
                    subtree_at: source.subtree_at(stop),
                });
            }
            used += padded;
        }
        stop += 1;
    }
    if piece_starts.last().is_some_and(|&(first, _)| first == stop) {
        piece_starts.pop();
    }
    let mut pieces = Vec::with_capacity(piece_starts.len());
    let mut table_rest = table.slice(..(stop - start) * ENTRY_BYTES as usize);
    let mut data_rest = data.slice(..used);
    for (piece, &(first, offset)) in piece_starts.iter().enumerate() {
        let (next, next_offset) = piece_starts.get(piece + 1).copied().unwrap_or((stop, used));
        let (entries, after) = table_rest.split_at((next - first) * ENTRY_BYTES as usize);
        table_rest = after;
        let (bytes, after) = data_rest.split_at(next_offset - offset);
        data_rest = after;
        let blob = source.blob(first);
        if copied_in_parts(blob.len(), max_blob) {
            // Its entry and padding here, its bytes in parts on every
            // thread.
            let mut entries = entries;
            // Both fit in u32: the data is within one storage binding.
            entries.copy_from_slice(&entry_bytes(
                (offset / LOAD_BYTES) as u32,
                blob.len() as u32,
            ));
            let (copy, mut padding) = bytes.split_at(blob.len());
            padding.fill(0);
            copy_in_pieces(blob, copy, threads);
            continue;
        }
        pieces.push((first..next, offset, Piece(entries), Piece(bytes)));
    }
    threads.for_each(
        pieces,
        |(blobs, offset, Piece(mut entries), Piece(mut bytes))| {
            let mut at = 0;
            for (slot, index) in blobs.enumerate() {
                let blob = source.blob(index);
                let entry = if blob.len() > max_blob {
                    entry_bytes(0, SKIP)
                } else {
                    let padded = padded_len(blob.len());
                    bytes.slice(at..at + blob.len()).copy_from_slice(blob);
                    bytes.slice(at + blob.len()..at + padded).fill(0);
                    // Both fit in u32: the data is within one storage binding
                    // (SlabPlan::new), and so is the blob.
                    let entry = entry_bytes(((offset + at) / LOAD_BYTES) as u32, blob.len() as u32);
                    at += padded;
                    entry
                };
                let slot = slot * ENTRY_BYTES as usize;
                entries
                    .slice(slot..slot + ENTRY_BYTES as usize)
                    .copy_from_slice(&entry);
            }
        },
    );
    // Within the plan: a long blob's chunks hold over 512 of its bytes each
    // on average, and it has one parent fewer than chunks.
    let (tree, job_bytes) = tree_jobs(&long, Unit::Load, jobs, threads);
    debug_assert!(tree
        .first()
        .is_none_or(|chunks| u64::from(chunks.count) <= plan.tree_slots));
    Packed {
        blobs: start..stop,
        data_bytes: used as u64,
        skipped,
        max_blob,
        layout: SlabLayout::Table,
        tree,
        job_bytes,
        in_place: None,
    }
}

/// Whether a blob of `len` bytes is a piece of a table slab of its own,
/// which every thread copies a part of: one over a piece's bytes (a slab
/// of one 16 MiB subtree, on one thread, would feed a card at a core's
/// copy rate). The piece after it starts anew, past a piece's bytes.
fn copied_in_parts(len: usize, max_blob: usize) -> bool {
    len > TABLE_PIECE_BYTES && len <= max_blob
}

/// A piece of a mapped staging buffer that one thread fills.
struct Piece<'a>(WriteOnly<'a, [u8]>);

// SAFETY: a `WriteOnly<[u8]>` is a unique, write-only borrow of mapped
// bytes, as `&mut [u8]` is, which may move to another thread; `wgpu` gives
// `WriteOnly<T>` `Send` only for sized `T`, which leaves slices out. The
// pieces are disjoint (cut with `split_at`) and all are dropped before the
// buffer is unmapped.
unsafe impl Send for Piece<'_> {}
