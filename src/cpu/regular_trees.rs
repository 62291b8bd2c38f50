//! Blobs of one length of a power-of-two number of whole chunks, laid back
//! to back (4 KiB pages, 8 KiB records): trees that are all the same shape.
//!
//! Every chunk of such a run is a full 1 KiB at a fixed stride, and every
//! tree level pairs neighbouring nodes with nothing carried up, so each
//! level is a run of 64-byte parent blocks back to back. The chunks take
//! the path of 1 KiB blobs laid back to back (with a counter per lane), and
//! the parents the pipelined single-block path of 64-byte blobs; the
//! general lane tree ([`hash_trees`](super::tree::hash_trees)) instead
//! sends every chunk and parent through the binner as a job of its own.

use super::groups::{hash_back_to_back, Binner};
use super::kernel::GroupParams;
use super::Kernel;
use crate::consts::{BLOCK_LEN, CHUNK_END, CHUNK_LEN, CHUNK_START, PARENT, ROOT};

/// Input bytes whose chunks are hashed before their parents, so the
/// chaining values are still in cache for the levels above (the general
/// lane tree's batch size, `TREE_BATCH_BYTES`, for the same reason).
/// Whole slices of blobs up to 32 KiB hold a multiple of 16 blobs, so
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
        let chunks = &mut nodes[..count];
        hash_level(
            kernel,
            chunk_params,
            bytes,
            CHUNK_LEN,
            CHUNK_END,
            chunks_per_blob,
            chunks,
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
            let blocks = children.as_flattened();
            if pairs == digests.len() {
                hash_level(kernel, parent_params, blocks, BLOCK_LEN, ROOT, 1, digests);
                break;
            }
            hash_level(kernel, parent_params, blocks, BLOCK_LEN, 0, 1, next);
            level = pairs;
            in_nodes = !in_nodes;
        }
    }
}

/// Hashes one level of a slice's trees: the `out.len()` nodes of `len`
/// bytes back to back in `bytes` (whole chunks, `chunks_per_blob` of them
/// a blob, each with its index in its blob as counter; or parent blocks,
/// `chunks_per_blob` 1) into `out`, one chaining value each in order, with
/// `last_flags` on each. Both are runs at a fixed stride, so whole groups
/// take the kernel path of equal-length blobs (paired groups, hints
/// ahead): the chunks hashed a group per call instead, unpaired, ran
/// 4 KiB blobs a fifth slower on an Intel Xeon (AVX-512, one thread).
fn hash_level(
    kernel: Kernel,
    params: GroupParams,
    bytes: &[u8],
    len: usize,
    last_flags: u32,
    chunks_per_blob: usize,
    out: &mut [[u8; 32]],
) {
    let width = kernel.widths()[0];
    let mut binner = Binner::new(kernel, params);
    hash_back_to_back(
        &mut binner,
        width,
        bytes,
        len,
        last_flags,
        chunks_per_blob,
        out,
    );
    binner.finish(out);
}

#[cfg(test)]
mod tests {
    use super::super::kernel::MAX_LANES;
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

    /// Slices of every regular length the lanes take are whole lane
    /// groups at every level, so only a batch's last slice has a remainder.
    #[test]
    fn whole_slices_fill_whole_groups_at_every_level() {
        for len in [2048, 4096, 8192, 16384, 32768] {
            let blobs = SLICE_BYTES / len;
            assert!(blobs.is_multiple_of(MAX_LANES), "{len}");
        }
    }
}
