//! The CPU driver for one batch: cut into work units of similar byte size,
//! spread over threads, and within each unit route every blob to the path
//! that suits its length.

use rayon::prelude::*;

use super::groups::{run_jobs, Job};
use super::kernel::{GroupParams, MAX_LANES};
use super::tree::{hash_trees, TreeBlob};
use super::Kernel;
use crate::blobs::BlobSource;
use crate::consts::{CHUNK_END, CHUNK_LEN, CHUNK_START, ROOT};
use crate::mode::{Mode, ModeWords};

/// Input bytes (plus a per-blob allowance) per work unit: small enough for
/// dozens of units per thread on a 64 Ki-blob batch so threads finish
/// together, large enough that splitting costs nothing measurable.
const UNIT_BYTES: usize = 256 * 1024;
/// Per-blob weight in a unit's size, for the fixed cost of a blob (sorting,
/// scratch copy of its last block, output scatter).
const BLOB_WEIGHT: usize = 128;

/// From this length a blob is hashed with `blake3`'s multi-threaded update
/// when the engine has more than one thread.
const PARALLEL_BLOB_MIN: usize = 1 << 20;

/// How a batch may use threads.
#[derive(Clone, Copy)]
pub(crate) enum Threads<'p> {
    /// On the calling thread only.
    One,
    /// On this rayon pool.
    Pool(&'p rayon::ThreadPool),
    /// On rayon's global pool.
    Global,
}

/// Hashes every blob of `source` into `out` (same length, checked by the
/// caller) with the CPU `kernel`.
pub(crate) fn hash_source<S: BlobSource>(
    kernel: Kernel,
    threads: Threads,
    mode: Mode,
    source: &S,
    out: &mut [[u8; 32]],
) {
    debug_assert_eq!(source.count(), out.len());
    match out {
        [] => return,
        // One blob: nothing to put side by side, so the plain call is cheapest.
        [only] => {
            *only = mode.hash_with_blake3(source.blob(0), false);
            return;
        }
        _ => {}
    }
    let words = mode.words(|context| hash_one(kernel, Mode::CONTEXT, context));
    let unit = UnitParams {
        kernel,
        mode,
        words,
        parallel: !matches!(threads, Threads::One),
    };
    match threads {
        Threads::One => hash_span(&unit, source, 0, out, false),
        Threads::Pool(pool) => pool.install(|| hash_spans(&unit, source, out)),
        Threads::Global => hash_spans(&unit, source, out),
    }
}

/// Blobs per span below which a batch is not split by count first.
const MIN_SPAN: usize = 256;

/// Hashes a batch on the current rayon pool.
///
/// Cutting into work units by weight needs a pass over every length; done
/// for the whole batch on one thread it capped two threads at 1.3x one on
/// 64-byte blobs. So the batch is first cut by count alone into a few spans
/// per thread, and each span, in parallel, cuts itself into units.
fn hash_spans<S: BlobSource>(unit: &UnitParams, source: &S, out: &mut [[u8; 32]]) {
    let spans = 4 * rayon::current_num_threads();
    let span_len = out
        .len()
        .div_ceil(spans)
        .max(MIN_SPAN)
        .next_multiple_of(MAX_LANES);
    out.par_chunks_mut(span_len)
        .enumerate()
        .for_each(|(index, piece)| hash_span(unit, source, index * span_len, piece, true));
}

/// Hashes blobs `start..start + out.len()`, cut into work units of similar
/// weight, which run in parallel when `parallel`.
fn hash_span<S: BlobSource>(
    unit: &UnitParams,
    source: &S,
    start: usize,
    out: &mut [[u8; 32]],
    parallel: bool,
) {
    let bounds = unit_bounds(source, start, out.len());
    if !parallel || bounds.len() <= 2 {
        for range in bounds.windows(2) {
            hash_unit(unit, source, start + range[0], &mut out[range[0]..range[1]]);
        }
        return;
    }
    let mut pieces = Vec::with_capacity(bounds.len() - 1);
    let mut rest = out;
    for range in bounds.windows(2) {
        let (piece, tail) = rest.split_at_mut(range[1] - range[0]);
        pieces.push((start + range[0], piece));
        rest = tail;
    }
    pieces
        .into_par_iter()
        .for_each(|(first, piece)| hash_unit(unit, source, first, piece));
}

/// Cuts blobs `start..start + count` into ranges of similar weight, as
/// offsets from `start`: `bounds[k]..bounds[k + 1]`.
fn unit_bounds<S: BlobSource>(source: &S, start: usize, count: usize) -> Vec<usize> {
    let mut bounds = vec![0];
    let mut weight = 0;
    for index in 0..count {
        weight += source.blob(start + index).len() + BLOB_WEIGHT;
        // Cut only after a whole number of the widest lane groups, so a
        // unit of equal-length blobs has no partial group.
        if weight >= UNIT_BYTES && (index + 1) % MAX_LANES == 0 {
            bounds.push(index + 1);
            weight = 0;
        }
    }
    if *bounds.last().unwrap_or(&0) != count {
        bounds.push(count);
    }
    bounds
}

/// What every work unit of a batch shares.
struct UnitParams<'m> {
    kernel: Kernel,
    mode: Mode<'m>,
    words: ModeWords,
    parallel: bool,
}

/// Hashes blobs `start..start + out.len()`.
fn hash_unit<S: BlobSource>(unit: &UnitParams, source: &S, start: usize, out: &mut [[u8; 32]]) {
    let mut jobs = Vec::with_capacity(out.len());
    let mut trees = Vec::new();
    for (dest, slot) in out.iter_mut().enumerate() {
        let data = source.blob(start + dest);
        if data.len() <= CHUNK_LEN {
            jobs.push(Job {
                data,
                counter: 0,
                last_flags: CHUNK_END | ROOT,
                dest,
            });
        } else if data.len() <= unit.kernel.lane_tree_max() {
            trees.push(TreeBlob { data, dest });
        } else {
            let parallel = unit.parallel && data.len() >= PARALLEL_BLOB_MIN;
            *slot = unit.mode.hash_with_blake3(data, parallel);
        }
    }
    let params = GroupParams {
        key: unit.words.key,
        flags: unit.words.flags,
        first_flags: CHUNK_START,
    };
    run_jobs(unit.kernel, &params, &jobs, &mut Vec::new(), out);
    hash_trees(unit.kernel, unit.words.key, unit.words.flags, &trees, out);
}

/// Hashes one input of any length with the given key words and flags, all on
/// the lanes (used for derive-key context strings, which `blake3` cannot
/// hash with a custom flag).
pub(crate) fn hash_one(kernel: Kernel, words: ModeWords, data: &[u8]) -> [u8; 32] {
    let mut out = [[0u8; 32]];
    if data.len() <= CHUNK_LEN {
        let params = GroupParams {
            key: words.key,
            flags: words.flags,
            first_flags: CHUNK_START,
        };
        let job = Job {
            data,
            counter: 0,
            last_flags: CHUNK_END | ROOT,
            dest: 0,
        };
        run_jobs(kernel, &params, &[job], &mut Vec::new(), &mut out);
    } else {
        let blob = TreeBlob { data, dest: 0 };
        hash_trees(kernel, words.key, words.flags, &[blob], &mut out);
    }
    out[0]
}
