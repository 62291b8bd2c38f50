//! Blobs longer than one chunk, hashed through the same lanes.
//!
//! All chunks of all such blobs in a work unit become lane jobs (chunk `i`
//! has counter `i`, no `ROOT`); then the parent levels are built level by
//! level, again as lane jobs, until each blob has one root. Pairing adjacent
//! nodes left to right and carrying an odd last node up unchanged gives
//! exactly BLAKE3's tree, whose left subtree always holds the largest power
//! of two number of chunks that leaves at least one on the right.

use super::groups::{prefetch_input, Binner, Job};
use super::kernel::GroupParams;
use super::Kernel;
use crate::consts::{CHUNK_END, CHUNK_LEN, CHUNK_START, PARENT, ROOT};

/// A blob of more than one chunk and where its digest goes.
#[derive(Clone, Copy)]
pub(crate) struct TreeBlob<'a> {
    /// The input, longer than 1024 bytes.
    pub data: &'a [u8],
    /// Index of its digest in the output slice.
    pub dest: usize,
}

/// One blob's nodes at the current tree level.
#[derive(Clone, Copy)]
struct Level {
    dest: usize,
    /// First node of this blob in the level buffer.
    start: usize,
    /// Nodes of this blob at this level.
    count: usize,
}

/// Hashes every blob in `blobs` (each longer than one chunk) with key `key`
/// and mode flags `flags`, writing each digest to `out[blob.dest]`.
pub(crate) fn hash_trees(
    kernel: Kernel,
    key: [u32; 8],
    flags: u32,
    blobs: &[TreeBlob],
    out: &mut [[u8; 32]],
) {
    let mut levels = Vec::with_capacity(blobs.len());
    let mut total = 0;
    for blob in blobs {
        debug_assert!(blob.data.len() > CHUNK_LEN);
        let count = blob.data.len().div_ceil(CHUNK_LEN);
        levels.push(Level {
            dest: blob.dest,
            start: total,
            count,
        });
        total += count;
    }

    // Chunks go straight into the binner, which hashes each lane group as
    // it fills: no list of jobs is built first.
    let mut nodes = vec![[0u8; 32]; total];
    let chunk_params = GroupParams {
        key,
        flags,
        first_flags: CHUNK_START,
    };
    let mut binner = Binner::new(kernel, chunk_params);
    for (blob, level) in blobs.iter().zip(&levels) {
        for (index, chunk) in blob.data.chunks(CHUNK_LEN).enumerate() {
            prefetch_input(chunk);
            let job = Job {
                data: chunk,
                counter: index as u64,
                last_flags: CHUNK_END,
                dest: level.start + index,
            };
            binner.push(job, &mut nodes);
        }
    }
    binner.finish(&mut nodes);

    let parent_params = GroupParams {
        key,
        flags: flags | PARENT,
        first_flags: 0,
    };
    let mut next = Vec::new();
    while !levels.is_empty() {
        // Every node of this level keeps its place in `nodes` until the
        // level is done, so its parents read the pairs in place.
        let next_total = levels.iter().map(|level| level.count.div_ceil(2)).sum();
        next.clear();
        next.resize(next_total, [0u8; 32]);
        let mut binner = Binner::new(kernel, parent_params);
        let mut next_start = 0;
        for level in &mut levels {
            let pairs = level.count / 2;
            let children = &nodes[level.start..level.start + level.count];
            for (pair, two) in children.as_chunks::<2>().0.iter().enumerate() {
                let job = Job {
                    data: two.as_flattened(),
                    counter: 0,
                    // A level of exactly two nodes yields the root.
                    last_flags: if level.count == 2 { ROOT } else { 0 },
                    dest: next_start + pair,
                };
                binner.push(job, &mut next);
            }
            if level.count % 2 == 1 {
                // An odd last node is carried up unchanged.
                next[next_start + pairs] = children[level.count - 1];
            }
            level.start = next_start;
            level.count = level.count.div_ceil(2);
            next_start += level.count;
        }
        binner.finish(&mut next);
        std::mem::swap(&mut nodes, &mut next);
        levels.retain(|level| {
            if level.count == 1 {
                out[level.dest] = nodes[level.start];
                false
            } else {
                true
            }
        });
    }
}
