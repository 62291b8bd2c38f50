//! The work for blobs longer than one chunk: BLAKE3 hashes such a blob as a
//! binary tree whose leaves are its 1 KiB chunks, so the GPU hashes every
//! chunk of every long blob of a slab in one dispatch (`hash_chunks` in
//! `shaders/slabs.wgsl`), then joins them one level of parents per dispatch
//! (`hash_parents`), the root writing the blob's digest.
//!
//! BLAKE3's tree is built by pairing a level's nodes from the left and
//! carrying an odd last node up unchanged. Every node lives in the chaining
//! value slot of its leftmost chunk: a parent overwrites its left child,
//! which no other job of its level touches, and a carried node is already
//! where the level above looks for it, so carrying costs nothing.

use std::borrow::Cow;

use super::layout::{LOAD_BYTES, NOT_ROOT};
use crate::consts::{CHUNK_LEN, ROOT};

/// A blob of more than one chunk in a slab.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct LongBlob {
    /// Its digest slot in the slab.
    pub slot: u32,
    /// Where its bytes start in the slab's data, in units of the slab's
    /// layout: loads ([`LOAD_BYTES`]) where blobs are padded to them, bytes
    /// where they lie as they did in the caller's memory.
    pub first: u32,
    /// Its length in bytes (over [`CHUNK_LEN`]).
    pub len: u32,
    /// `None` for a whole blob. For a subtree of a blob longer than a slab
    /// (`subtrees.rs`), the counter of its first chunk: its "digest" is
    /// then the subtree's chaining value, with no `ROOT`.
    pub subtree_at: Option<u32>,
}

/// One dispatch: jobs `first..first + count`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Level {
    pub first: u32,
    pub count: u32,
}

/// The jobs of a slab's long blobs, four words each, and the dispatches
/// that run them: `levels[0]` the chunks, then each level of parents.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub(crate) struct TreeJobs {
    /// Chunk jobs: (first unit, length, chunk counter, chaining value
    /// slot).
    /// Parent jobs: (left slot, right slot, digest slot or
    /// [`NOT_ROOT`], the flag the top parent adds: `ROOT`, or 0 for a
    /// subtree).
    pub jobs: Vec<[u32; 4]>,
    pub levels: Vec<Level>,
}

impl TreeJobs {
    /// The jobs' bytes, little-endian as WGSL reads them: the jobs
    /// themselves on a little-endian host (a slab of 64 KiB blobs has
    /// megabytes of them; building a copy byte by byte cost more than
    /// packing the blobs).
    pub(crate) fn job_bytes(&self) -> Cow<'_, [u8]> {
        if cfg!(target_endian = "little") {
            Cow::Borrowed(bytemuck::cast_slice(&self.jobs))
        } else {
            let words = self.jobs.iter().flatten();
            Cow::Owned(words.flat_map(|word| word.to_le_bytes()).collect())
        }
    }
}

/// Chunks of a blob of `len` bytes.
pub(crate) fn chunks(len: usize) -> usize {
    len.div_ceil(CHUNK_LEN).max(1)
}

/// Where a slab's blobs start, as [`LongBlob::first`] counts.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Unit {
    Load,
    Byte,
}

impl Unit {
    fn bytes(self) -> usize {
        match self {
            Unit::Load => LOAD_BYTES,
            Unit::Byte => 1,
        }
    }
}

/// Plans the chunk and parent jobs of `blobs`, whose starts count `unit`s
/// and whose chaining values take consecutive slots from 0 in order.
pub(crate) fn plan(blobs: &[LongBlob], unit: Unit) -> TreeJobs {
    let units_per_chunk = (CHUNK_LEN / unit.bytes()) as u32;
    let chunk_len = CHUNK_LEN as u32;
    let mut tree = TreeJobs::default();
    // Each blob's digest slot, first chaining value slot, chunk count and
    // top parent's flag.
    let mut spans = Vec::with_capacity(blobs.len());
    let mut next_slot = 0u32;
    for blob in blobs {
        debug_assert!(blob.len as usize > CHUNK_LEN);
        let count = chunks(blob.len as usize) as u32;
        let counter = blob.subtree_at.unwrap_or(0);
        for chunk in 0..count {
            let len = (blob.len - chunk * chunk_len).min(chunk_len);
            let first = blob.first + chunk * units_per_chunk;
            tree.jobs
                .push([first, len, counter + chunk, next_slot + chunk]);
        }
        let top_flag = match blob.subtree_at {
            None => ROOT,
            Some(_) => 0,
        };
        spans.push((blob.slot, next_slot, count, top_flag));
        next_slot += count;
    }
    push_level(&mut tree, 0);
    // Level `height` joins nodes that each cover 2^(height-1) chunks.
    for height in 1..u32::BITS {
        let first = tree.jobs.len();
        let below = 1u32 << (height - 1);
        for &(slot, base, count, top_flag) in &spans {
            if count <= below {
                continue; // this blob's root is done
            }
            let nodes = count.div_ceil(below);
            for pair in 0..nodes / 2 {
                let left = base + pair * 2 * below;
                let job = match nodes {
                    2 => [left, left + below, slot, top_flag],
                    _ => [left, left + below, NOT_ROOT, 0],
                };
                tree.jobs.push(job);
            }
        }
        if tree.jobs.len() == first {
            break;
        }
        push_level(&mut tree, first);
    }
    tree
}

fn push_level(tree: &mut TreeJobs, first: usize) {
    tree.levels.push(Level {
        first: first as u32,
        count: (tree.jobs.len() - first) as u32,
    });
}

#[cfg(test)]
mod tests {
    use blake3::hazmat::{self, ChainingValue, HasherExt};

    use super::*;

    /// Runs the jobs on the CPU with blake3's own subtree functions: the
    /// digests of `blobs` (packed at their `first` `unit`s in `data`).
    fn run(tree: &TreeJobs, data: &[u8], unit: Unit, slots: usize) -> Vec<Option<[u8; 32]>> {
        let mut cvs: Vec<ChainingValue> = vec![[0; 32]; tree.jobs.len()];
        let mut digests = vec![None; slots];
        for (height, level) in tree.levels.iter().enumerate() {
            let jobs = &tree.jobs[level.first as usize..][..level.count as usize];
            // The level's reads all happen before its writes, as on the GPU.
            let results: Vec<_> = jobs
                .iter()
                .map(|&[a, b, c, d]| {
                    if height == 0 {
                        let start = a as usize * unit.bytes();
                        let mut hasher = blake3::Hasher::new();
                        hasher.set_input_offset(u64::from(c) * CHUNK_LEN as u64);
                        hasher.update(&data[start..start + b as usize]);
                        (d, None, hasher.finalize_non_root())
                    } else {
                        let (left, right) = (&cvs[a as usize], &cvs[b as usize]);
                        let mode = hazmat::Mode::Hash;
                        match (c, d) {
                            (NOT_ROOT, _) => {
                                (a, None, hazmat::merge_subtrees_non_root(left, right, mode))
                            }
                            (_, ROOT) => {
                                let root = hazmat::merge_subtrees_root(left, right, mode);
                                (0, Some((c, *root.as_bytes())), [0; 32])
                            }
                            (_, 0) => {
                                let cv = hazmat::merge_subtrees_non_root(left, right, mode);
                                (0, Some((c, cv)), [0; 32])
                            }
                            _ => panic!("a parent job adds flag {d}"),
                        }
                    }
                })
                .collect();
            for (slot, digest, cv) in results {
                match digest {
                    Some((target, digest)) => {
                        assert!(digests[target as usize].replace(digest).is_none());
                    }
                    None => cvs[slot as usize] = cv,
                }
            }
        }
        digests
    }

    #[test]
    fn jobs_rebuild_blake3s_tree_at_every_chunk_count() {
        // Every chunk count up to 70, chunk-boundary lengths, and a blob of
        // 1 MiB + 1, side by side in one slab: padded to loads, and as they
        // lie, from an odd byte.
        let mut lengths: Vec<usize> = (2..=70).map(|chunks| chunks * CHUNK_LEN).collect();
        lengths.extend([1025, 2049, 3072, 4097, 5000, 16385, (1 << 20) + 1]);
        for (unit, lead) in [(Unit::Load, 0), (Unit::Byte, 3)] {
            let mut data = vec![0xEE; lead];
            let mut blobs = Vec::new();
            for (slot, &len) in lengths.iter().enumerate() {
                let first = (data.len() / unit.bytes()) as u32;
                data.extend((0..len).map(|i| (i * 7 + slot) as u8));
                data.resize(data.len().next_multiple_of(unit.bytes()), 0);
                blobs.push(LongBlob {
                    slot: slot as u32,
                    first,
                    len: len as u32,
                    subtree_at: None,
                });
            }
            let tree = plan(&blobs, unit);
            let chunk_total: usize = lengths.iter().map(|&len| chunks(len)).sum();
            assert_eq!(tree.levels[0].count as usize, chunk_total);
            // One parent fewer than chunks per blob.
            assert_eq!(tree.jobs.len(), 2 * chunk_total - lengths.len());
            let digests = run(&tree, &data, unit, lengths.len());
            for (blob, digest) in blobs.iter().zip(digests) {
                let start = blob.first as usize * unit.bytes();
                let expected = blake3::hash(&data[start..start + blob.len as usize]);
                let what = format!("{} bytes in {unit:?}s", blob.len);
                assert_eq!(digest, Some(*expected.as_bytes()), "{what}");
            }
        }
    }

    /// Subtrees of a longer blob: their chunks count from where each
    /// starts in it, and their tops give chaining values, not digests.
    #[test]
    fn subtrees_of_longer_blobs_give_their_chaining_values() {
        let long: Vec<u8> = (0..(1 << 20) + 3000).map(|i| (i % 251) as u8).collect();
        // (first chunk, chunks): whole subtrees of 2 to 256 chunks where a
        // longer blob's tree has them, and the last one's shorter tail.
        let pieces = [(0, 2), (2, 2), (4, 4), (256, 256), (512, 128), (1024, 3)];
        let mut data = Vec::new();
        let mut blobs = Vec::new();
        for (slot, &(first_chunk, count)) in pieces.iter().enumerate() {
            let start = first_chunk * CHUNK_LEN;
            let piece = &long[start..(start + count * CHUNK_LEN).min(long.len())];
            blobs.push(LongBlob {
                slot: slot as u32,
                first: (data.len() / LOAD_BYTES) as u32,
                len: piece.len() as u32,
                subtree_at: Some(first_chunk as u32),
            });
            data.extend_from_slice(piece);
            data.resize(data.len().next_multiple_of(LOAD_BYTES), 0);
        }
        let tree = plan(&blobs, Unit::Load);
        let cvs = run(&tree, &data, Unit::Load, pieces.len());
        for (&(first_chunk, _), (blob, cv)) in pieces.iter().zip(blobs.iter().zip(cvs)) {
            let start = first_chunk * CHUNK_LEN;
            let mut hasher = blake3::Hasher::new();
            hasher.set_input_offset(start as u64);
            hasher.update(&long[start..start + blob.len as usize]);
            let expected = hasher.finalize_non_root();
            assert_eq!(cv, Some(expected), "chunk {first_chunk} on");
        }
    }

    #[test]
    fn no_long_blobs_plan_an_empty_chunk_level_only() {
        let tree = plan(&[], Unit::Load);
        assert!(tree.jobs.is_empty());
        assert_eq!(tree.levels, [Level { first: 0, count: 0 }]);
    }
}
