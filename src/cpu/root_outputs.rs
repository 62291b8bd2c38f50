//! BLAKE3's extended output of blobs of up to [`MAX_LANE_TREE`], in the
//! lanes.
//!
//! A blob's output block `t` is the compression of its root node's last
//! block from the chaining value before it, with counter `t` and the
//! `ROOT` flag, keeping all 16 words. A blob of at most a chunk is its own
//! root: each lane compresses its blob's blocks up to the last, as the
//! digest kernel does, and then the last block once per output block. A
//! longer blob's root is a parent node: its tree is hashed in the lanes up
//! to that node ([`root_nodes`]), whose one block the lanes then compress
//! once per output block, from the key. `blake3` does the same one blob at
//! a time; here 4 to 16 blobs go side by side.

use super::kernel::{
    full_block, splat_key, GroupParams, LaneGroup, Lanes, RaggedLanes, TailBlocks, Work, MAX_LANES,
    ZERO_BLOCK,
};
use super::tree::{root_nodes, TreeBlob, Trees};
use super::Kernel;
use crate::blobs::BlobSource;
use crate::consts::{
    blocks_in_chunk, BLOCKS_PER_CHUNK, BLOCK_LEN, CHUNK_END, CHUNK_LEN, CHUNK_START, PARENT, ROOT,
};
use crate::mode::ModeWords;

/// Output blocks made per blob in one kernel call, at most: outputs of up
/// to [`MAX_LANE_OUTPUT`] bytes come from the lanes, longer ones from
/// `blake3`, whose output reader fills many blocks of one blob side by side
/// in its own SIMD.
const MAX_OUTPUT_BLOCKS: usize = 16;
/// The longest output per blob made in the lanes, in bytes.
pub(crate) const MAX_LANE_OUTPUT: usize = MAX_OUTPUT_BLOCKS * BLOCK_LEN;
/// The longest blob whose output the lanes make: past 16 chunks a blob
/// fills `blake3`'s own SIMD lanes with its chunks, which is as fast.
const MAX_LANE_TREE: usize = 16 * CHUNK_LEN;

/// One group of root nodes (blobs of at most a chunk, or parent blocks),
/// and which 64-byte output blocks to make for every lane.
#[derive(Clone, Copy)]
pub(super) struct RootOutputs<'g, 'a> {
    /// The nodes' input; counters and last flags are not read.
    pub group: &'g LaneGroup<'a>,
    /// The flags of a node's last block besides the mode's, the first
    /// block's and `ROOT`: `CHUNK_END` for chunks, none for parents.
    pub end_flags: u32,
    /// The counter of the first output block: the output's byte offset
    /// (a seek) over 64.
    pub first_block: u64,
    /// Output blocks per lane, 1 to [`MAX_OUTPUT_BLOCKS`].
    pub blocks: usize,
}

/// Output block `first_block + t` of lane `l` is written as two slots:
/// `out[2 * t * WIDTH + l]` (its first 32 bytes) and
/// `out[(2 * t + 1) * WIDTH + l]` (its last 32).
impl Work for RootOutputs<'_, '_> {
    #[inline(always)]
    fn hash<V: Lanes>(self, params: &GroupParams, tails: &mut TailBlocks, out: &mut [[u8; 32]]) {
        root_outputs::<V>(params, self, tails, out);
    }
}

/// [`RootOutputs`] with lanes `V`: per lane, the chaining value before its
/// last block and that block, then one compression per output block.
#[inline(always)]
fn root_outputs<V: Lanes>(
    params: &GroupParams,
    work: RootOutputs,
    tails: &mut TailBlocks,
    out: &mut [[u8; 32]],
) {
    let RootOutputs {
        group,
        end_flags,
        first_block,
        blocks,
    } = work;
    let width = V::WIDTH;
    let RaggedLanes {
        last_block,
        tail_len,
        first_last,
        final_last,
    } = RaggedLanes::stage(width, group, tails);

    // The blocks before the last, every lane's until it reaches its own
    // last block; a lane's chaining value is saved there, and what the
    // later compressions do to it is ignored.
    let mut cv = splat_key::<V>(params);
    let mut saved = [[0u8; BLOCK_LEN]; MAX_LANES];
    let mut stored = [[0u8; 32]; MAX_LANES];
    for block in 0..final_last {
        if block >= first_last && last_block[..width].contains(&block) {
            V::store_transposed(&cv, &mut stored);
            for lane in 0..width {
                if last_block[lane] == block {
                    saved[lane][..32].copy_from_slice(&stored[lane]);
                }
            }
        }
        let flags = params.flags | if block == 0 { params.first_flags } else { 0 };
        let mut refs = [&ZERO_BLOCK; MAX_LANES];
        for lane in 0..width {
            if block < last_block[lane] {
                refs[lane] = full_block(&group.inputs[lane][block * BLOCK_LEN..]);
            }
        }
        let m = V::load_transposed(&refs);
        let row3 = [
            V::splat(0),
            V::splat(0),
            V::splat(BLOCK_LEN as u32),
            V::splat(flags),
        ];
        V::compress(&mut cv, &m, row3);
    }
    if first_last != final_last {
        // Lanes of different lengths: gather the saved chaining values
        // (the lanes that end last hold theirs in `cv` now).
        V::store_transposed(&cv, &mut stored);
        for lane in 0..width {
            if last_block[lane] == final_last {
                saved[lane][..32].copy_from_slice(&stored[lane]);
            }
        }
        let mut refs = [&ZERO_BLOCK; MAX_LANES];
        for (lane, block) in refs.iter_mut().zip(&saved).take(width) {
            *lane = block;
        }
        let words = V::load_transposed(&refs);
        cv.copy_from_slice(&words[..8]);
    }

    // The last blocks, once per output block.
    let mut lens = [0u32; MAX_LANES];
    let mut flags = [0u32; MAX_LANES];
    let mut refs = [&ZERO_BLOCK; MAX_LANES];
    for lane in 0..width {
        let (last, tail) = (last_block[lane], tail_len[lane]);
        let first = if last == 0 { params.first_flags } else { 0 };
        lens[lane] = tail as u32;
        flags[lane] = params.flags | first | end_flags | ROOT;
        refs[lane] = if tail == BLOCK_LEN {
            full_block(&group.inputs[lane][last * BLOCK_LEN..])
        } else {
            tails.block(lane, tail)
        };
    }
    let m = V::load_transposed(&refs);
    let (lens, flags) = (V::load(&lens), V::load(&flags));
    for block in 0..blocks {
        let counter = first_block + block as u64;
        let (low, high) = (counter as u32, (counter >> 32) as u32);
        let row3 = [V::splat(low), V::splat(high), lens, flags];
        let words = V::compress_xof(&cv, &m, row3);
        let (low, high) = words.split_at(8);
        let halves = "a compression's output is two halves of 8 words";
        let (first, rest) = out[2 * block * width..].split_at_mut(width);
        V::store_transposed(low.try_into().expect(halves), first);
        V::store_transposed(high.try_into().expect(halves), rest);
    }
}

impl Kernel {
    /// Writes `length` bytes of extended output from byte `seek` on of
    /// each blob `first..first + out.len() / length` of `source` of at most
    /// [`MAX_LANE_TREE`] and of more than `left_blocks` blocks into its
    /// place in `out`, and returns the places of the others, left as they
    /// are for the caller. The output blocks spanned, `seek % 64 + length`
    /// bytes, are at most [`MAX_LANE_OUTPUT`].
    ///
    /// Blobs of up to a chunk are taken in order of block count, so the
    /// lanes of a group mostly end together; longer ones are hashed as
    /// trees up to their root nodes, all together.
    pub(crate) fn root_outputs<S: BlobSource>(
        self,
        words: ModeWords,
        source: &S,
        first: usize,
        (length, seek): (usize, u64),
        left_blocks: usize,
        out: &mut [u8],
    ) -> Vec<usize> {
        let count = out.len() / length;
        let (order, trees, left) = by_block_count(source, first, count, left_blocks);
        let chunks = GroupParams {
            key: words.key,
            flags: words.flags,
            first_flags: CHUNK_START,
        };
        let blob = |index: usize| source.blob(first + order[index]);
        let places = (&order[..], CHUNK_END);
        self.lane_outputs(&chunks, places, blob, (length, seek), out);
        if !trees.is_empty() {
            let blobs: Vec<TreeBlob> = (trees.iter().enumerate())
                .map(|(dest, &place)| TreeBlob {
                    data: source.blob(first + place),
                    dest,
                })
                .collect();
            let mut nodes = vec![[0u8; 64]; trees.len()];
            let lane_trees = Trees {
                kernel: self,
                key: words.key,
                flags: words.flags,
                blobs: &blobs,
                bytes: source.contiguous_bytes(first, first + out.len() / length),
            };
            root_nodes(lane_trees, &mut nodes);
            let parents = GroupParams {
                key: words.key,
                flags: words.flags | PARENT,
                first_flags: 0,
            };
            let node = |index: usize| &nodes[index][..];
            self.lane_outputs(&parents, (&trees[..], 0), node, (length, seek), out);
        }
        left
    }

    /// Writes the output (`length` bytes from byte `seek` on) of the root
    /// node `input(i)`, whose last block takes `end_flags`, to place
    /// `places[i]` of `out`, for every `i`: in groups of the widest lanes,
    /// the rest in the narrowest that holds it.
    fn lane_outputs<'a>(
        self,
        params: &GroupParams,
        (places, end_flags): (&[usize], u32),
        input: impl Fn(usize) -> &'a [u8],
        (length, seek): (usize, u64),
        out: &mut [u8],
    ) {
        // Where the output starts within its first block.
        let skip = (seek % BLOCK_LEN as u64) as usize;
        debug_assert!(length >= 1 && skip + length <= MAX_LANE_OUTPUT);
        let blocks = (skip + length).div_ceil(BLOCK_LEN);
        let widest = self.widths()[0];
        let mut tails = TailBlocks::new();
        let mut slots = vec![[0u8; 32]; 2 * blocks * widest];
        for (start, lanes) in (0..).step_by(widest).zip(places.chunks(widest)) {
            let width = self.narrowest_width_for(lanes.len());
            let mut group = LaneGroup::default();
            for (lane, slot) in group.inputs.iter_mut().take(lanes.len()).enumerate() {
                *slot = input(start + lane);
            }
            let work = RootOutputs {
                group: &group,
                end_flags,
                first_block: seek / BLOCK_LEN as u64,
                blocks,
            };
            self.hash(width, params, work, &mut tails, &mut slots);
            for (lane, &place) in lanes.iter().enumerate() {
                // Half `h` of the blocks made (32 bytes) is in slot
                // `h * width + lane`; the output starts in half `skip / 32`.
                let halves = (skip / 32..).map(|half| &slots[half * width + lane]);
                copy_from(halves, skip % 32, &mut out[place * length..][..length]);
            }
        }
    }
}

/// Fills `output` with the bytes of `halves`, 32 each, from byte `from`
/// (< 32) of the first on. Whole halves are copied as arrays, inline,
/// rather than through `memmove` calls of a length known only here.
#[inline(always)]
fn copy_from<'s>(
    mut halves: impl Iterator<Item = &'s [u8; 32]>,
    mut from: usize,
    mut output: &mut [u8],
) {
    // A half is taken only while output is left: `halves` need not end.
    while !output.is_empty() {
        let Some(half) = halves.next() else { break };
        let len = (32 - from).min(output.len());
        let (piece, rest) = std::mem::take(&mut output).split_at_mut(len);
        match <&mut [u8; 32]>::try_from(&mut *piece) {
            Ok(whole) => *whole = *half,
            Err(_) => piece.copy_from_slice(&half[from..from + len]),
        }
        (output, from) = (rest, 0);
    }
}

/// The places `0..count` of the blobs `first..first + count` of `source`:
/// those of at most a chunk and more than `left_blocks` blocks ordered by
/// block count (a counting sort), those of up to [`MAX_LANE_TREE`], and
/// the others (longer, or of `left_blocks` blocks or fewer).
fn by_block_count<S: BlobSource>(
    source: &S,
    first: usize,
    count: usize,
    left_blocks: usize,
) -> (Vec<usize>, Vec<usize>, Vec<usize>) {
    // Block counts 1 to 16; 0 marks a tree, `LEFT` a blob left out.
    const LEFT: u8 = u8::MAX;
    let blocks: Vec<u8> = (first..first + count)
        .map(|index| match source.blob(index).len() {
            len @ 0..=CHUNK_LEN if blocks_in_chunk(len) <= left_blocks => LEFT,
            len @ 0..=CHUNK_LEN => blocks_in_chunk(len) as u8,
            ..=MAX_LANE_TREE => 0,
            _ => LEFT,
        })
        .collect();
    let mut starts = [0usize; BLOCKS_PER_CHUNK + 1];
    for &count in blocks.iter().filter(|&&count| count != LEFT) {
        starts[count as usize] += 1;
    }
    let mut total = 0;
    for start in &mut starts[1..] {
        (*start, total) = (total, total + *start);
    }
    let mut order = vec![0; total];
    let (mut trees, mut left) = (Vec::new(), Vec::new());
    for (place, &count) in blocks.iter().enumerate() {
        match count {
            0 => trees.push(place),
            LEFT => left.push(place),
            _ => {
                order[starts[count as usize]] = place;
                starts[count as usize] += 1;
            }
        }
    }
    (order, trees, left)
}

#[cfg(test)]
mod tests {
    use super::super::CpuBackend;
    use super::*;
    use crate::blobs::Slices;
    use crate::cpu::batch::hash_one;
    use crate::mode::Mode;

    /// `length` bytes of `blob`'s extended output from byte `seek` on.
    fn reference(mode: Mode, blob: &[u8], length: usize, seek: u64) -> Vec<u8> {
        let mut hasher = match mode {
            Mode::Hash => blake3::Hasher::new(),
            Mode::KeyedHash(key) => blake3::Hasher::new_keyed(key),
            Mode::DeriveKey(context) => blake3::Hasher::new_derive_key(context),
        };
        let mut output = vec![0u8; length];
        let mut reader = hasher.update(blob).finalize_xof();
        reader.set_position(seek);
        reader.fill(&mut output);
        output
    }

    /// Output lengths and seeks: from the start, then from within a half,
    /// from a half's start, to a block's end, across a block, over 2^32
    /// blocks (the counter's high word) and at the last block there is.
    const OUTPUTS: [(usize, u64); 14] = [
        (1, 0),
        (32, 0),
        (33, 0),
        (64, 0),
        (65, 0),
        (200, 0),
        (MAX_LANE_OUTPUT, 0),
        (1, 31),
        (40, 1),
        (64, 32),
        (33, 991),
        (MAX_LANE_OUTPUT - 63, 127),
        (80, (1 << 38) - 40),
        (64, u64::MAX - 63),
    ];

    /// Every backend and width, lanes of one length and of many, blobs of
    /// up to a chunk and trees of up to 16 chunks, at output lengths around
    /// a block and up to the most the lanes make, from the start and from
    /// seeks within and across blocks, the counter's high word included;
    /// blobs over 16 chunks keep whatever their places held.
    #[test]
    fn outputs_match_blake3_on_every_backend_and_width() {
        let mut state = 0x2545_f491_4f6c_dd1du64;
        let mut next = move || {
            state ^= state << 13;
            state ^= state >> 7;
            state ^= state << 17;
            state
        };
        let ragged: Vec<Vec<u8>> = (0..45)
            .map(|index| {
                let len = match index {
                    0 => 0,
                    7 => CHUNK_LEN + 1,
                    8 => MAX_LANE_TREE + 1,
                    9 => 5 * CHUNK_LEN + 17,
                    10 => MAX_LANE_TREE,
                    11 => 2 * CHUNK_LEN,
                    _ => (next() % (CHUNK_LEN as u64 + 1)) as usize,
                };
                (0..len).map(|_| next() as u8).collect()
            })
            .collect();
        let even: Vec<Vec<u8>> = (0..21).map(|i| vec![i as u8; 200]).collect();
        let trees: Vec<Vec<u8>> = (0..21)
            .map(|i| vec![i as u8; CHUNK_LEN + 1 + i * 97 % (MAX_LANE_TREE - CHUNK_LEN)])
            .collect();
        let key = [9u8; 32];
        let modes = [
            Mode::Hash,
            Mode::KeyedHash(&key),
            Mode::DeriveKey("blake3-batch root output tests"),
        ];
        for backend in CpuBackend::supported() {
            let kernel = Kernel::new(backend).unwrap();
            for mode in modes {
                let words = mode.words(|context| hash_one(kernel, Mode::CONTEXT, context));
                // 45 blobs, 40 of up to a chunk: groups of 16, 16 and 8, and
                // 4 trees; 21 trees of 2 to 16 chunks: 16 and 5; then of 1,
                // 3 and 5 lanes, the narrowest widths.
                let batches = [
                    &ragged[..],
                    &trees[..],
                    &even[..],
                    &ragged[..1],
                    &ragged[3..6],
                    &even[..5],
                ];
                for blobs in batches {
                    for (length, seek) in OUTPUTS {
                        let mut out = vec![0xa5u8; blobs.len() * length];
                        let source = &Slices(blobs);
                        let longer =
                            kernel.root_outputs(words, source, 0, (length, seek), 0, &mut out);
                        let want_longer: Vec<usize> = (0..blobs.len())
                            .filter(|&i| blobs[i].len() > MAX_LANE_TREE)
                            .collect();
                        assert_eq!(longer, want_longer);
                        for (index, (blob, output)) in
                            blobs.iter().zip(out.chunks_exact(length)).enumerate()
                        {
                            let want = match blob.len() {
                                0..=MAX_LANE_TREE => reference(mode, blob, length, seek),
                                _ => vec![0xa5; length],
                            };
                            assert_eq!(
                                output,
                                want,
                                "{backend} {mode:?} blob {index} ({} bytes) of {}, \
                                 output {length} from {seek}",
                                blob.len(),
                                blobs.len()
                            );
                        }
                    }
                }
            }
        }
    }

    /// Outputs land at `first`'s offset: blob `first + i` into place `i`.
    #[test]
    fn a_range_of_the_source_lands_from_the_start_of_out() {
        let blobs: Vec<Vec<u8>> = (0..40).map(|i| vec![i as u8; 3 * i]).collect();
        let kernel = Kernel::new(CpuBackend::Portable).unwrap();
        let words = Mode::Hash.words(|_| unreachable!("no context in Mode::Hash"));
        let mut out = vec![0u8; 30 * 40];
        let longer = kernel.root_outputs(words, &Slices(&blobs[..]), 10, (40, 0), 0, &mut out);
        assert!(longer.is_empty());
        for (index, output) in (10..).zip(out.chunks_exact(40)) {
            assert_eq!(
                output,
                reference(Mode::Hash, &blobs[index], 40, 0),
                "blob {index}"
            );
        }
    }
}
