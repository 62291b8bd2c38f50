//! Turning a list of chunk-sized jobs into lane groups.
//!
//! Jobs are sorted by block count (a counting sort over 1..=16, O(n)) so that
//! every lane of a group runs the same number of compressions; each block
//! count's bucket is then cut into groups of the widest lane count first,
//! falling through to narrower widths for its tail.

use super::kernel::{GroupParams, LaneGroup, MAX_LANES};
use super::prefetch::prefetch;
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
        run_sorted(kernel, params, jobs, dests);
        return;
    }
    let mut cursor = [0usize; BLOCKS_PER_CHUNK + 1];
    for blocks in 1..BLOCKS_PER_CHUNK {
        cursor[blocks + 1] = cursor[blocks] + counts[blocks];
    }
    sorted.clear();
    sorted.resize(jobs.len(), jobs[0]);
    for job in jobs {
        let blocks = blocks_in_chunk(job.data.len());
        sorted[cursor[blocks]] = *job;
        cursor[blocks] += 1;
    }
    run_sorted(kernel, params, sorted, dests);
}

/// Hashes jobs sorted by block count, in groups of the widest lane count.
///
/// A group that straddles two block counts runs for its longest lane (the
/// kernel takes each lane's output after its own last block), which costs
/// far less than cutting every block count's tail into narrow groups. The
/// last, partial group takes the narrowest width that holds it, with unused
/// lanes left empty.
fn run_sorted(kernel: Kernel, params: &GroupParams, jobs: &[Job], dests: &mut [[u8; 32]]) {
    let widths = kernel.widths();
    let widest = widths[0];
    let mut outputs = [[0u8; 32]; MAX_LANES];
    for (index, lanes) in jobs.chunks(widest).enumerate() {
        // Fetch a group ahead of use: far enough to hide DRAM latency
        // behind the compressions of short blobs too.
        let ahead = (index + PREFETCH_GROUPS) * widest;
        if let Some(next) = jobs.get(ahead..) {
            prefetch_inputs(&next[..widest.min(next.len())]);
        }
        let width = widths
            .iter()
            .copied()
            .filter(|&width| width >= lanes.len())
            .min()
            .unwrap_or(widest);
        let mut group = LaneGroup::default();
        for (lane, job) in lanes.iter().enumerate() {
            group.inputs[lane] = job.data;
            group.counters[lane] = job.counter;
            group.last_flags[lane] = job.last_flags;
        }
        // A full group bound for consecutive slots (equal-length blobs in
        // input order) is written straight into them.
        let first = lanes[0].dest;
        let consecutive = lanes.len() == MAX_LANES
            && lanes
                .iter()
                .enumerate()
                .all(|(lane, job)| job.dest == first + lane);
        if let Some(direct) = consecutive
            .then(|| dests.get_mut(first..first + MAX_LANES))
            .flatten()
            .and_then(|slots| <&mut [[u8; 32]; MAX_LANES]>::try_from(slots).ok())
        {
            kernel.hash_group(width, params, &group, direct);
            continue;
        }
        kernel.hash_group(width, params, &group, &mut outputs);
        for (job, output) in lanes.iter().zip(&outputs) {
            dests[job.dest] = *output;
        }
    }
}

/// Blocks of each blob fetched ahead of its group; the kernel fetches the
/// rest, the same distance ahead of the block it compresses.
pub(crate) const PREFETCH_BLOCKS: usize = 4;
/// How many groups ahead of the one being hashed its input is fetched.
const PREFETCH_GROUPS: usize = 1;

/// Asks the CPU to start loading the next group's input while the current
/// one compresses: lanes read from many places at once, which the hardware
/// prefetchers do not follow on their own.
#[inline(always)]
fn prefetch_inputs(jobs: &[Job]) {
    for job in jobs {
        for line in job.data.chunks(64).take(PREFETCH_BLOCKS) {
            prefetch(line);
        }
        // The kernel copies every lane's partial last block before it starts.
        // It may straddle two cache lines: fetch its first and last byte.
        if let Some(last) = job.data.len().checked_sub(1) {
            prefetch(&job.data[last & !63..]);
            prefetch(&job.data[last..]);
        }
    }
}
