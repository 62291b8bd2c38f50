//! Turning a list of chunk-sized jobs into lane groups.
//!
//! Jobs are sorted by block count (a counting sort over 1..=16, O(n)) so that
//! every lane of a group runs the same number of compressions; each block
//! count's bucket is then cut into groups of the widest lane count first,
//! falling through to narrower widths for its tail.

use super::kernel::{GroupParams, LaneGroup, MAX_LANES};
use super::Kernel;
use crate::consts::{blocks_in_chunk, BLOCKS_PER_CHUNK};

/// One piece of at most 1024 bytes to compress into one chaining value:
/// a small blob, one chunk of a large blob, or a parent node.
#[derive(Clone, Copy)]
pub(crate) struct Job<'a> {
    /// The bytes, at most one chunk.
    pub data: &'a [u8],
    /// The chunk counter.
    pub counter: u64,
    /// Flags added to the last block.
    pub last_flags: u32,
    /// Index of the slot in the destination slice that receives the output.
    pub dest: usize,
}

/// Hashes every job and writes its output to `dests[job.dest]`.
///
/// `sorted` is scratch space reused across calls to avoid an allocation per
/// work unit.
pub(crate) fn run_jobs<'a>(
    kernel: Kernel,
    params: &GroupParams,
    jobs: &[Job<'a>],
    sorted: &mut Vec<Job<'a>>,
    dests: &mut [[u8; 32]],
) {
    if jobs.is_empty() {
        return;
    }
    let mut counts = [0usize; BLOCKS_PER_CHUNK + 1];
    for job in jobs {
        counts[blocks_in_chunk(job.data.len())] += 1;
    }
    // Equal-length batches (the common case) need no reordering at all.
    if counts.contains(&jobs.len()) {
        run_bucket(kernel, params, jobs, dests);
        return;
    }
    let mut starts = [0usize; BLOCKS_PER_CHUNK + 2];
    for blocks in 1..=BLOCKS_PER_CHUNK {
        starts[blocks + 1] = starts[blocks] + counts[blocks];
    }
    let mut cursor = starts;
    sorted.clear();
    sorted.resize(jobs.len(), jobs[0]);
    for job in jobs {
        let blocks = blocks_in_chunk(job.data.len());
        sorted[cursor[blocks]] = *job;
        cursor[blocks] += 1;
    }
    for blocks in 1..=BLOCKS_PER_CHUNK {
        let bucket = &sorted[starts[blocks]..starts[blocks + 1]];
        run_bucket(kernel, params, bucket, dests);
    }
}

/// Hashes jobs that all have the same block count.
fn run_bucket(kernel: Kernel, params: &GroupParams, jobs: &[Job], dests: &mut [[u8; 32]]) {
    let mut rest = jobs;
    let mut outputs = [[0u8; 32]; MAX_LANES];
    for &width in kernel.widths() {
        while rest.len() >= width {
            let (lanes, tail) = rest.split_at(width);
            let mut group = LaneGroup::default();
            for (lane, job) in lanes.iter().enumerate() {
                group.inputs[lane] = job.data;
                group.counters[lane] = job.counter;
                group.last_flags[lane] = job.last_flags;
            }
            kernel.hash_group(width, params, &group, &mut outputs);
            for (job, output) in lanes.iter().zip(&outputs) {
                dests[job.dest] = *output;
            }
            rest = tail;
        }
    }
    debug_assert!(rest.is_empty(), "every backend has a one-lane width");
}
