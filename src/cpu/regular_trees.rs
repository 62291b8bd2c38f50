//! Blobs of one length of a power-of-two number of whole chunks, laid back
//! to back (4 KiB pages, 8 KiB records): trees that are all the same shape.
//!
//! Every chunk of such a run is a full 1 KiB at a fixed stride, and every
//! tree level pairs neighbouring nodes with nothing carried up, so each
//! level is a run of 64-byte parent blocks back to back. The chunks are cut
//! out of the bytes a lane group at a time, and the parents go through the
//! pipelined single-block path that 64-byte blobs take; the general lane
//! tree ([`hash_trees`](super::tree::hash_trees)) instead sends every chunk
//! and parent through the binner as a job of its own.

use super::groups::{hash_back_to_back, prefetch_input, Binner, Job};
use super::kernel::{GroupParams, LaneGroup, MAX_LANES};
use super::Kernel;
use crate::consts::{BLOCK_LEN, CHUNK_END, CHUNK_LEN, CHUNK_START, PARENT, ROOT};

/// Input bytes whose chunks are hashed before their parents, so the
/// chaining values are still in cache for the levels above (the general
/// lane tree's batch size, `TREE_BATCH_BYTES`, for the same reason).
/// Whole slices of blobs up to 8 KiB hold a multiple of 16 blobs, so
/// every level of a slice fills whole lane groups.
const SLICE_BYTES: usize = 1024 * 1024;

/// Whether blobs of `len` bytes have regular trees: more than one chunk,
/// and a power-of-two number of whole chunks.
pub(crate) fn is_regular(len: usize) -> bool {
    len > CHUNK_LEN && len.is_multiple_of(CHUNK_LEN) && (len / CHUNK_LEN).is_power_of_two()
}

/// Hashes the `out.len()` blobs of `len` bytes (see [`is_regular`]) laid
/// back to back in `data` with key `key` and mode flags `flags`, one digest
/// per blob into `out`.
pub(crate) fn hash_regular_trees(
    kernel: Kernel,
    key: [u32; 8],
    flags: u32,
    data: &[u8],
    len: usize,
    out: &mut [[u8; 32]],
) {
    debug_assert!(is_regular(len) && data.len() == out.len() * len);
    let chunks_per_blob = len / CHUNK_LEN;
    let blobs_per_slice = (SLICE_BYTES / len).max(1);
    let chunk_params = GroupParams {
        key,
        flags,
        first_flags: CHUNK_START,
    };
    let parent_params = GroupParams {
        key,
        flags: flags | PARENT,
        first_flags: 0,
    };
    // One level's nodes and the next's, used in turn.
    let most = blobs_per_slice.min(out.len()) * chunks_per_blob;
    let mut nodes = vec![[0u8; 32]; most];
    let mut parents = vec![[0u8; 32]; most / 2];
    let slices = data.chunks(blobs_per_slice * len);
    for (bytes, digests) in slices.zip(out.chunks_mut(blobs_per_slice)) {
        let count = digests.len() * chunks_per_blob;
        hash_chunks(
            kernel,
            chunk_params,
            bytes,
            chunks_per_blob,
            &mut nodes[..count],
        );
        let mut level = count;
        let mut in_nodes = true;
        loop {
            let pairs = level / 2;
            let (children, next) = if in_nodes {
                (&nodes[..level], &mut parents[..pairs])
            } else {
                (&parents[..level], &mut nodes[..pairs])
            };
            if pairs == digests.len() {
                hash_pairs(kernel, parent_params, children, ROOT, digests);
                break;
            }
            hash_pairs(kernel, parent_params, children, 0, next);
            level = pairs;
            in_nodes = !in_nodes;
        }
    }
}

/// Hashes the chunks of blobs of `chunks_per_blob` chunks each, back to
/// back in `bytes`, into `nodes` (one chaining value per chunk, in order).
fn hash_chunks(
    kernel: Kernel,
    params: GroupParams,
    bytes: &[u8],
    chunks_per_blob: usize,
    nodes: &mut [[u8; 32]],
) {
    let width = kernel.widths()[0];
    let whole = nodes.len() / width * width;
    // A chunk's counter is its index in its blob; the count is a power of
    // two (`is_regular`), so a mask rather than a division per lane.
    debug_assert!(chunks_per_blob.is_power_of_two());
    let counter_mask = chunks_per_blob - 1;
    let mut binner = Binner::new(kernel, params);
    let mut group = LaneGroup {
        last_flags: [CHUNK_END; MAX_LANES],
        ..LaneGroup::default()
    };
    let groups = bytes[..whole * CHUNK_LEN].chunks_exact(width * CHUNK_LEN);
    for (index, (group_bytes, slots)) in groups.zip(nodes.chunks_exact_mut(width)).enumerate() {
        let first = index * width;
        let chunks = group_bytes.chunks_exact(CHUNK_LEN);
        for (lane, (input, chunk)) in group.inputs.iter_mut().zip(chunks).enumerate() {
            *input = chunk;
            group.counters[lane] = ((first + lane) & counter_mask) as u64;
        }
        // Start loading the next group while this one compresses.
        let next = &bytes[(index + 1) * width * CHUNK_LEN..];
        for chunk in next.chunks_exact(CHUNK_LEN).take(width) {
            prefetch_input(chunk);
        }
        binner.hash_in_place(&group, slots);
    }
    for (index, chunk) in bytes.chunks_exact(CHUNK_LEN).enumerate().skip(whole) {
        let job = Job {
            data: chunk,
            counter: (index & counter_mask) as u64,
            last_flags: CHUNK_END,
            dest: index,
        };
        binner.push(job, nodes);
    }
    binner.finish(nodes);
}

/// Hashes the parent of each neighbouring pair of `children` into
/// `parents` (half as many), with `last_flags` (`ROOT` for the top level).
fn hash_pairs(
    kernel: Kernel,
    params: GroupParams,
    children: &[[u8; 32]],
    last_flags: u32,
    parents: &mut [[u8; 32]],
) {
    debug_assert_eq!(children.len(), 2 * parents.len());
    let mut binner = Binner::new(kernel, params);
    let width = kernel.widths()[0];
    let blocks = children.as_flattened();
    hash_back_to_back(&mut binner, width, blocks, BLOCK_LEN, last_flags, parents);
    binner.finish(parents);
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn regular_lengths_are_powers_of_two_of_whole_chunks() {
        for len in [2048, 4096, 8192, 16384, 1 << 20] {
            assert!(is_regular(len), "{len}");
        }
        for len in [
            0, 1, 1023, 1024, 1025, 2047, 2049, 3072, 4095, 4097, 6144, 12288,
        ] {
            assert!(!is_regular(len), "{len}");
        }
    }

    /// Slices of every regular length a lane tree takes are whole lane
    /// groups at every level, so only a batch's last slice has a remainder.
    #[test]
    fn whole_slices_fill_whole_groups_at_every_level() {
        for len in [2048, 4096, 8192] {
            let blobs = SLICE_BYTES / len;
            assert!(blobs.is_multiple_of(MAX_LANES), "{len}");
        }
    }
}
