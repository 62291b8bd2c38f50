//! Blobs longer than one chunk, hashed through the same lanes.
//!
//! All chunks of all such blobs in a work unit become lane jobs (chunk `i`
//! has counter `i`, no `ROOT`); then the parent levels are built level by
//! level, each a run of single-block compressions over every blob's pairs,
//! until each blob has one root. Pairing adjacent nodes left to right and
//! carrying an odd last node up unchanged gives exactly BLAKE3's tree, whose
//! left subtree always holds the largest power of two number of chunks that
//! leaves at least one on the right.

use super::groups::{prefetch_input, Binner, Job};
use super::kernel::{BlockInputs, GroupParams, LaneGroup, TailBlocks, MAX_LANES};
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

/// One blob's nodes at the current tree level: `count` side by side in the
/// level buffer, then the odd node carried up from a level below, if any.
///
/// Kept apart, the carried node does not split the level buffer, so the
/// parents of all blobs come out of the kernel in one run, in order.
#[derive(Clone, Copy)]
struct Level {
    dest: usize,
    /// First node of this blob in the level buffer.
    start: usize,
    /// Nodes of this blob in the level buffer (at least one).
    count: usize,
    /// 1 if `carry` is this blob's last node at this level, else 0.
    has_carry: usize,
    /// The carried node.
    carry: [u8; 32],
}

/// Where the roots of the trees go.
enum Roots<'o> {
    /// Each root's digest (its node compressed with `ROOT`) to `out[dest]`.
    Digests(&'o mut [[u8; 32]]),
    /// Each root node itself, its children's chaining values side by side,
    /// to `out[dest]`: for extended output, which compresses it once per
    /// output block.
    Nodes(&'o mut [[u8; 64]]),
}

/// Blobs bound for the lane tree and what they are hashed with.
#[derive(Clone, Copy)]
pub(crate) struct Trees<'b, 'a> {
    pub kernel: Kernel,
    pub key: [u32; 8],
    /// The mode's flags.
    pub flags: u32,
    /// Each longer than one chunk, in the order they lie in `bytes`.
    pub blobs: &'b [TreeBlob<'a>],
    /// Where the blobs lie back to back with others (packed offsets,
    /// records), the bytes that hold them all: the lane tree hints them
    /// into L2 a fixed distance ahead of the chunk it bins
    /// ([`L2Lookahead`](super::lookahead::L2Lookahead)).
    pub bytes: Option<&'a [u8]>,
}

/// Hashes every blob of `trees`, writing each digest to `out[blob.dest]`.
pub(crate) fn hash_trees(trees: Trees, out: &mut [[u8; 32]]) {
    hash_to_roots(trees, Roots::Digests(out));
}

/// [`hash_trees`] up to each blob's root node, written to
/// `out[blob.dest]`: the block whose compressions with `ROOT` are the
/// blob's extended output.
pub(crate) fn root_nodes(trees: Trees, out: &mut [[u8; 64]]) {
    hash_to_roots(trees, Roots::Nodes(out));
}

/// The chunks and parent levels of every blob, up to its root, which goes
/// to `roots`.
fn hash_to_roots(trees: Trees, roots: Roots) {
    let Trees {
        kernel,
        key,
        flags,
        blobs,
        bytes,
    } = trees;
    let mut levels = Vec::with_capacity(blobs.len());
    let mut total = 0;
    for blob in blobs {
        debug_assert!(blob.data.len() > CHUNK_LEN);
        let count = blob.data.len().div_ceil(CHUNK_LEN);
        levels.push(Level {
            dest: blob.dest,
            start: total,
            count,
            has_carry: 0,
            carry: [0; 32],
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
    binner.stream_from(bytes.and_then(|bytes| from_first(bytes, blobs)));
    for (blob, level) in blobs.iter().zip(&levels) {
        for (index, chunk) in blob.data.chunks(CHUNK_LEN).enumerate() {
            prefetch_input(chunk);
            // A chunk's worth of lines at a time, evenly: the unit's lookup
            // of a lane group of such blobs, which hinted up to 64 KiB past
            // its last one in a burst, held the core up on its miss
            // buffers (a fifth of the time on an Intel Xeon).
            binner.reach(chunk);
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

    hash_parent_levels(kernel, key, flags, levels, nodes, roots);
}

/// `bytes` from the first of `blobs` on, if it lies in them: where the
/// tree's stream starts, rather than at bytes the unit hashed before.
fn from_first<'a>(bytes: &'a [u8], blobs: &[TreeBlob]) -> Option<&'a [u8]> {
    let first = blobs.first()?.data.as_ptr() as usize;
    bytes.get(first.wrapping_sub(bytes.as_ptr() as usize)..)
}

/// Pairs of one blob that the unrolled loop of [`hash_parent_levels`]
/// writes whatever the blob has: the most a blob of the lane tree has at its
/// first level (32 chunks, on AVX-512). Larger blobs take a loop as long as
/// their pairs.
const PAIRS_PER_BLOB: usize = 16;

/// Builds the parent levels of every blob in `levels` from its chunk
/// chaining values in `nodes`, level by level, writing each root (its
/// digest or its node) to `roots` at `level.dest`.
///
/// Each level is two runs of single-block compressions over pairs of
/// adjacent nodes: one for the blobs that go on, whose outputs become the
/// next level's buffer in order, and one with `ROOT` for the blobs whose
/// level holds exactly two nodes. Where a blob's last node in the buffer
/// pairs with its carried node, the two are copied side by side behind the
/// level's nodes.
///
/// The loop over blobs has no branch that depends on a blob's shape: it
/// writes every candidate and advances counts by 0 or 1. With a branch per
/// pair and per case, building the lists of 32 MiB of blobs of 2 to 16
/// whole chunks took 0.35 ms, more than their non-root compressions
/// (0.28 ms); lane jobs through a binner, before this, took 0.8 to 0.9 ms
/// for the whole parent phase, and this takes 0.57 (AVX-512, one thread).
fn hash_parent_levels(
    kernel: Kernel,
    key: [u32; 8],
    flags: u32,
    mut levels: Vec<Level>,
    mut nodes: Vec<[u8; 32]>,
    mut roots: Roots,
) {
    let params = GroupParams {
        key,
        flags: flags | PARENT,
        first_flags: 0,
    };
    let mut tails = TailBlocks::new();
    let mut firsts: Vec<u32> = Vec::new();
    let mut root_firsts: Vec<u32> = Vec::new();
    let mut root_dests: Vec<usize> = Vec::new();
    let mut root_digests: Vec<[u8; 32]> = Vec::new();
    let mut next: Vec<[u8; 32]> = Vec::new();
    while !levels.is_empty() {
        let staged_start = nodes.len();
        nodes.resize(staged_start + 2 * levels.len(), [0; 32]);
        // At most `count / 2 + 1` pairs per blob, and `nodes` held every
        // blob's `count`; the unrolled writes run at most `PAIRS_PER_BLOB`
        // past the pairs so far.
        firsts.clear();
        firsts.resize(staged_start / 2 + levels.len() + PAIRS_PER_BLOB, 0);
        root_firsts.clear();
        root_firsts.resize(levels.len(), 0);
        root_dests.clear();
        root_dests.resize(levels.len(), 0);

        let (mut pairs, mut rooted, mut staged, mut kept) = (0, 0, staged_start, 0);
        for index in 0..levels.len() {
            let level = levels[index];
            let (start, count) = (level.start, level.count);
            let last = nodes[start + count - 1];
            let odd = count % 2;
            // An odd node count plus a carried node: the last pair is the
            // last node and the carried one, staged side by side.
            let joined = odd & level.has_carry;
            nodes[staged] = last;
            nodes[staged + 1] = level.carry;
            for pair in 0..PAIRS_PER_BLOB.max(count / 2) {
                firsts[pairs + pair] = (start + 2 * pair) as u32;
            }
            let last_pair = [start + count - odd, staged][joined];
            firsts[pairs + count / 2] = last_pair as u32;
            staged += 2 * joined;

            let blob_pairs = count / 2 + joined;
            let is_root = usize::from(count + level.has_carry == 2);
            root_firsts[rooted] = firsts[pairs];
            root_dests[rooted] = level.dest;
            rooted += is_root;
            let goes_on = 1 - is_root;
            levels[kept] = Level {
                dest: level.dest,
                start: pairs,
                count: blob_pairs,
                has_carry: (count + level.has_carry) % 2,
                carry: [level.carry, last][odd],
            };
            kept += goes_on;
            pairs += blob_pairs * goes_on;
        }
        levels.truncate(kept);
        firsts.truncate(pairs);
        root_firsts.truncate(rooted);

        next.clear();
        next.resize(pairs, [0; 32]);
        let inputs = NodePairs {
            nodes: &nodes,
            firsts: &firsts,
        };
        hash_pairs(kernel, &params, inputs, 0, &mut tails, &mut next);
        match &mut roots {
            Roots::Digests(out) => {
                root_digests.clear();
                root_digests.resize(rooted, [0; 32]);
                let inputs = NodePairs {
                    nodes: &nodes,
                    firsts: &root_firsts,
                };
                hash_pairs(kernel, &params, inputs, ROOT, &mut tails, &mut root_digests);
                for (&dest, root) in root_dests.iter().zip(&root_digests) {
                    out[dest] = *root;
                }
            }
            Roots::Nodes(out) => {
                for (&dest, &first) in root_dests.iter().zip(&root_firsts) {
                    let first = first as usize;
                    let (left, right) = out[dest].split_at_mut(32);
                    left.copy_from_slice(&nodes[first]);
                    right.copy_from_slice(&nodes[first + 1]);
                }
            }
        }
        std::mem::swap(&mut nodes, &mut next);
    }
}

/// Parent blocks, each two adjacent chaining values of `nodes` from the
/// index in `firsts`.
#[derive(Clone, Copy)]
struct NodePairs<'a> {
    nodes: &'a [[u8; 32]],
    firsts: &'a [u32],
}

impl<'a> BlockInputs<'a> for NodePairs<'a> {
    #[inline(always)]
    fn count(self) -> usize {
        self.firsts.len()
    }

    #[inline(always)]
    fn input(self, index: usize) -> &'a [u8] {
        let first = self.firsts[index] as usize;
        self.nodes[first..first + 2].as_flattened()
    }
}

/// Hashes every parent block of `inputs` with `last_flags` into `out`, one
/// slot each: whole groups of the widest width in one kernel call, the rest
/// as one group of the narrowest width that holds it.
fn hash_pairs(
    kernel: Kernel,
    params: &GroupParams,
    inputs: NodePairs,
    last_flags: u32,
    tails: &mut TailBlocks,
    out: &mut [[u8; 32]],
) {
    let widest = kernel.widths()[0];
    let count = inputs.count();
    let whole = count / widest * widest;
    let head = NodePairs {
        nodes: inputs.nodes,
        firsts: &inputs.firsts[..whole],
    };
    kernel.hash_single_blocks(params, head, last_flags, tails, &mut out[..whole]);
    if whole == count {
        return;
    }
    let rest = count - whole;
    let width = kernel.narrowest_width_for(rest);
    let mut group = LaneGroup::default();
    for lane in 0..width {
        // Lanes past the rest repeat its first input; their outputs are
        // dropped.
        group.inputs[lane] = inputs.input(whole + if lane < rest { lane } else { 0 });
        group.last_flags[lane] = last_flags;
    }
    let mut outputs = [[0; 32]; MAX_LANES];
    kernel.hash_group(width, params, &group, tails, &mut outputs);
    out[whole..].copy_from_slice(&outputs[..rest]);
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::cpu::CpuBackend;
    use crate::mode::Mode;

    /// Blobs of every chunk count from 2 to 40 (past the most pairs the
    /// unrolled loop writes), each with a whole and a partial last chunk,
    /// mixed in one call: every level holds blobs that go on, carry a node,
    /// join a carried node to their last or end in a root, and its runs end
    /// in partial groups. Every backend, against `blake3`: the blobs cut
    /// from one place (not back to back), and laid back to back in their
    /// order after a few bytes the tree does not hash, with those bytes to
    /// hint ahead of its chunks.
    #[test]
    fn mixed_tree_shapes_in_one_call_match_blake3() {
        let data: Vec<u8> = (0..40 * CHUNK_LEN).map(|i| (i * 7 % 251) as u8).collect();
        let mut lengths = Vec::new();
        for chunks in 2..=40 {
            lengths.push(chunks * CHUNK_LEN);
            lengths.push((chunks - 1) * CHUNK_LEN + 1 + chunks * 37 % 1000);
        }
        // Interleave short and long blobs rather than sorting them.
        let count = lengths.len();
        let length = |dest: usize| lengths[dest * 31 % count];
        let apart: Vec<TreeBlob> = (0..count)
            .map(|dest| TreeBlob {
                data: &data[..length(dest)],
                dest,
            })
            .collect();
        let skipped = 100;
        let mut packed = data[..skipped].to_vec();
        for dest in 0..count {
            packed.extend_from_slice(&data[..length(dest)]);
        }
        let mut start = skipped;
        let back_to_back: Vec<TreeBlob> = (0..count)
            .map(|dest| {
                start += length(dest);
                TreeBlob {
                    data: &packed[start - length(dest)..start],
                    dest,
                }
            })
            .collect();
        let words = Mode::Hash.words(|_| unreachable!());
        let layouts = [(&apart, None), (&back_to_back, Some(&packed[..]))];
        for backend in CpuBackend::supported() {
            for (layout, (blobs, bytes)) in layouts.iter().enumerate() {
                let kernel = Kernel::new(backend).unwrap();
                let trees = Trees {
                    kernel,
                    key: words.key,
                    flags: words.flags,
                    blobs,
                    bytes: *bytes,
                };
                let mut out = vec![[0; 32]; count];
                hash_trees(trees, &mut out);
                for (blob, digest) in blobs.iter().zip(&out) {
                    let len = blob.data.len();
                    assert_eq!(
                        *digest,
                        *blake3::hash(blob.data).as_bytes(),
                        "{backend} layout {layout} len {len}"
                    );
                }
            }
        }
    }
}
