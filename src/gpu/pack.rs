//! Packing a slab: the blobs of a share of the batch copied into mapped
//! staging memory, each starting on a whole load ([`LOAD_BYTES`]) and
//! zero-padded to one, on every thread the engine has: the packing is a
//! memory copy, and one core cannot feed a bus of 50 GB/s.
//!
//! Blobs of one length of at most one chunk laid back to back (records,
//! equal-length packed blobs) go without a table: the shader finds blob `i`
//! at `i` strides, and where the length is a whole number of loads the
//! slab's data is one copy of the input's bytes. Blobs over one chunk get
//! the jobs of their trees too (`tree.rs`).

use std::ops::Range;

use wgpu::WriteOnly;

use super::layout::{entry_bytes, padded_len, ENTRY_BYTES, LOAD_BYTES, MAX_ONE_INVOCATION, SKIP};
use super::slab::SlabPlan;
use super::tree::{self, Level, LongBlob};
use crate::blobs::BlobSource;
use crate::cpu::batch::Threads;

/// How the shader finds a slab's blobs.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum SlabLayout {
    /// Through the table: one `(load offset, length)` entry per blob.
    Table,
    /// Every blob `len` bytes, blob `i` at load `i * stride`.
    Records { len: u32, stride: u32 },
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
    /// where they lie, in a pinned buffer ([`records_in_place`]); `None`
    /// where it was packed.
    pub in_place: Option<Range<usize>>,
}

impl Packed {
    pub(crate) fn count(&self) -> u64 {
        self.blobs.len() as u64
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

/// The parts of a slab's mapped staging buffer.
pub(crate) struct SlabView<'a> {
    pub table: WriteOnly<'a, [u8]>,
    pub data: WriteOnly<'a, [u8]>,
    pub jobs: WriteOnly<'a, [u8]>,
}

/// Packs blobs from `start` on into a slab's staging buffer until the slab
/// or the batch is full, leaving blobs over `max_blob` bytes (at most the
/// slab's data) to the CPU.
pub(crate) fn pack<S: BlobSource>(
    source: &S,
    start: usize,
    plan: SlabPlan,
    max_blob: usize,
    view: SlabView<'_>,
    threads: Threads,
) -> Packed {
    let end = source.count().min(start + plan.entries as usize);
    match source.back_to_back(start, end) {
        Some((bytes, len)) if len <= MAX_ONE_INVOCATION.min(max_blob) => {
            pack_records(bytes, len, start, end, plan, view.data, threads)
        }
        _ => pack_table(source, start..end, plan, max_blob, view, threads),
    }
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
pub(crate) fn fits_in_place(bytes: &[u8], len: usize, max_blob: usize) -> bool {
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
        mut jobs,
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
        if stop == start || stop - first == TABLE_PIECE_BLOBS || used - offset >= TABLE_PIECE_BYTES
        {
            piece = (stop, used);
            piece_starts.push(piece);
        }
        let len = source.len(stop);
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
                    first_load: (used / LOAD_BYTES) as u32,
                    len: len as u32,
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
    let (tree, job_bytes) = if long.is_empty() {
        (Vec::new(), 0)
    } else {
        let tree = tree::plan(&long);
        let bytes = tree.job_bytes();
        // Within the plan: a long blob's chunks hold over 512 of its bytes
        // each on average, and it has one parent fewer than chunks.
        debug_assert!(tree.levels[0].count as u64 <= plan.tree_slots);
        copy_in_pieces(&bytes, jobs.slice(..bytes.len()), threads);
        let job_bytes = bytes.len() as u64;
        drop(bytes);
        (tree.levels, job_bytes)
    };
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

/// A piece of a mapped staging buffer that one thread fills.
struct Piece<'a>(WriteOnly<'a, [u8]>);

// SAFETY: a `WriteOnly<[u8]>` is a unique, write-only borrow of mapped
// bytes, as `&mut [u8]` is, which may move to another thread; `wgpu` gives
// `WriteOnly<T>` `Send` only for sized `T`, which leaves slices out. The
// pieces are disjoint (cut with `split_at`) and all are dropped before the
// buffer is unmapped.
unsafe impl Send for Piece<'_> {}
