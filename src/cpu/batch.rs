//! The CPU driver for one batch: cut into work units of similar byte size,
//! spread over threads, and within each unit route every blob to the path
//! that suits its length.

use rayon::prelude::*;

use super::groups::{hash_group_into, prefetch_input, run_jobs, Binner, Job};
use super::kernel::{GroupParams, LaneGroup, MAX_LANES};
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
    let units = cut_units(source, start, out.len());
    if !parallel || units.len() <= 1 {
        let mut first = 0;
        for cut in units {
            hash_unit(
                unit,
                source,
                start + first,
                &mut out[first..cut.end],
                cut.equal_len,
            );
            first = cut.end;
        }
        return;
    }
    let mut pieces = Vec::with_capacity(units.len());
    let mut rest = out;
    let mut first = 0;
    for cut in units {
        let (piece, tail) = rest.split_at_mut(cut.end - first);
        pieces.push((start + first, piece, cut.equal_len));
        rest = tail;
        first = cut.end;
    }
    pieces
        .into_par_iter()
        .for_each(|(first, piece, equal_len)| hash_unit(unit, source, first, piece, equal_len));
}

/// One work unit: where it ends, and the length of its blobs if they are
/// all equal.
struct UnitCut {
    /// Index one past its last blob, counted from the span's start.
    end: usize,
    equal_len: Option<usize>,
}

/// Cuts blobs `start..start + count` into units of similar weight.
fn cut_units<S: BlobSource>(source: &S, start: usize, count: usize) -> Vec<UnitCut> {
    let mut units = Vec::new();
    let mut weight = 0;
    let mut unit_len = None;
    let mut equal = true;
    for index in 0..count {
        let len = source.blob(start + index).len();
        equal &= *unit_len.get_or_insert(len) == len;
        weight += len + BLOB_WEIGHT;
        // Cut only after a whole number of the widest lane groups, so a
        // unit of equal-length blobs has no partial group.
        if (weight >= UNIT_BYTES && (index + 1) % MAX_LANES == 0) || index + 1 == count {
            units.push(UnitCut {
                end: index + 1,
                equal_len: unit_len.filter(|_| equal),
            });
            weight = 0;
            unit_len = None;
            equal = true;
        }
    }
    units
}

/// What every work unit of a batch shares.
struct UnitParams<'m> {
    kernel: Kernel,
    mode: Mode<'m>,
    words: ModeWords,
    parallel: bool,
}

/// Hashes blobs `start..start + out.len()`; `equal_len` is their common
/// length, if they have one.
fn hash_unit<S: BlobSource>(
    unit: &UnitParams,
    source: &S,
    start: usize,
    out: &mut [[u8; 32]],
    equal_len: Option<usize>,
) {
    let params = GroupParams {
        key: unit.words.key,
        flags: unit.words.flags,
        first_flags: CHUNK_START,
    };
    let mut binner = Binner::new(unit.kernel, params);
    let mut rest = 0;
    if equal_len.is_some_and(|len| len <= CHUNK_LEN) {
        rest = hash_equal_groups(unit.kernel, &params, source, start, out);
    }
    let mut trees = Vec::new();
    for dest in rest..out.len() {
        let data = source.blob(start + dest);
        if data.len() <= CHUNK_LEN {
            let job = Job {
                data,
                counter: 0,
                last_flags: CHUNK_END | ROOT,
                dest,
            };
            binner.push(job, out);
        } else if data.len() <= unit.kernel.lane_tree_max() {
            trees.push(TreeBlob { data, dest });
        } else {
            let parallel = unit.parallel && data.len() >= PARALLEL_BLOB_MIN;
            out[dest] = unit.mode.hash_with_blake3(data, parallel);
        }
    }
    binner.finish(out);
    hash_trees(unit.kernel, unit.words.key, unit.words.flags, &trees, out);
}

/// Hashes whole lane groups of equal-length single-chunk blobs straight from
/// the source in input order (no binning); returns how many blobs it did.
fn hash_equal_groups<S: BlobSource>(
    kernel: Kernel,
    params: &GroupParams,
    source: &S,
    start: usize,
    out: &mut [[u8; 32]],
) -> usize {
    let width = kernel.widths()[0];
    let mut group = LaneGroup {
        last_flags: [CHUNK_END | ROOT; MAX_LANES],
        ..LaneGroup::default()
    };
    // The next group's inputs are looked up (and their loads started) while
    // the current group compresses.
    fn lookup<'s, S: BlobSource>(source: &'s S, first: usize, inputs: &mut [&'s [u8]]) {
        for (lane, input) in inputs.iter_mut().enumerate() {
            *input = source.blob(first + lane);
            prefetch_input(input);
        }
    }
    let groups = out.len() / width;
    if groups > 0 {
        lookup(source, start, &mut group.inputs[..width]);
    }
    for index in 0..groups {
        let current = group;
        if index + 1 < groups {
            lookup(
                source,
                start + (index + 1) * width,
                &mut group.inputs[..width],
            );
        }
        hash_group_into(
            kernel,
            params,
            width,
            &current,
            &mut out[index * width..(index + 1) * width],
        );
    }
    groups * width
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
        run_jobs(kernel, &params, &[job], &mut out);
    } else {
        let blob = TreeBlob { data, dest: 0 };
        hash_trees(kernel, words.key, words.flags, &[blob], &mut out);
    }
    out[0]
}
