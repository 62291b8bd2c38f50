//! Turning a stream of chunk-sized jobs into lane groups.
//!
//! Jobs go into one bin per block count (1..=16), so every lane of a group
//! runs the same number of compressions; a bin is hashed as soon as it holds
//! a full group of the widest lane count, or two where the kernel compresses
//! two groups side by side, so that each pair shares one block count.
//! Hashing a blob shortly after it is seen keeps the input's cache lines
//! warm and needs no sorted copy of the batch. At the end, bins with a full
//! first group are hashed in pairs of those groups, and the rest of the
//! partial bins are merged in block-count order into groups whose lanes may
//! differ in length (the kernel takes each lane's output after its own last
//! block); the last partial group takes the narrowest lane width that holds
//! it.

use super::kernel::{
    AlignedPair, BackToBack, BlockInputs, EqualChunks, GroupParams, LaneGroup, TailBlocks,
    MAX_LANES,
};
use super::lookahead::L2Lookahead;
use super::prefetch::prefetch;
use super::Kernel;
use crate::consts::{blocks_in_chunk, BLOCKS_PER_CHUNK, BLOCK_LEN, CHUNK_LEN};

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

/// Blocks of each blob fetched when it is looked up; the kernel fetches the
/// rest, the same distance ahead of the block it compresses.
///
/// Short on purpose: every prefetch holds a miss buffer, and a burst of
/// them when a group is looked up stalls the core. On AVX2, batches read
/// from memory (64 Ki blobs), side by side against the earlier 4: 1 KiB
/// +7 %, lengths uniform in 1..=1024 +5 to 8 %, 1025..=16384 +5 %, 256 B
/// +1 %; 8 lost 15 % at 1 KiB, and 1 lost 10 %.
pub(crate) const PREFETCH_BLOCKS: usize = 2;

/// Blocks of each blob fetched a step ahead in a run of equal-length blobs
/// laid back to back ([`hash_back_to_back`]): the whole blob up to 256
/// bytes, where [`PREFETCH_BLOCKS`] left one line of four to the kernel's
/// hint, two blocks before it is read.
///
/// Measured on an AMD EPYC (Zen 4) from memory, one thread, side by side
/// against 2 (criterion, 64 Ki blobs, two interleaved rounds, GB/s):
/// AVX-512 256 B 3.85/3.98 → 4.73/5.24, 1 KiB 4.55/4.76 → 4.43/4.86
/// (level); the harness: AVX2 256 B +8 to 12 %, AVX-512 512 B +3 to 5 %,
/// 1 KiB in cache and 256 B on two threads level. On the AVX2-only Zen 3
/// host (e36a4a4), 4 against 2 for every hint, the kernel's included, had
/// cost 256 B 1 %.
/// With the L2 hints of these runs in place (`EQUAL_LENGTH_L2_STEPS_AHEAD`
/// in the kernel), 4 against 2 reads level on AVX-512 (harness, three
/// rounds: 256 B 5.77/5.52/5.62 and 5.81/5.47/5.08, 1 KiB
/// 4.92/4.91/4.50 and 4.94/4.87/4.94) but still +3 to 5 % on AVX2 at
/// 256 B (4.13/4.10 against 3.93/3.99), where a step is 8 blobs and the
/// L2 hints run only 4 KiB ahead.
pub(crate) const EQUAL_LENGTH_PREFETCH_BLOCKS: usize = 4;

/// Lanes waiting for a group, all of one block count: one group, or two
/// to be compressed side by side where the kernel pairs groups.
#[derive(Default)]
struct Bin<'a> {
    /// Lane `l` of the bin is lane `l % MAX_LANES` of group
    /// `l / MAX_LANES`; the second group is used only where the kernel
    /// pairs groups, whose widest width is `MAX_LANES`.
    groups: [LaneGroup<'a>; 2],
    dests: [[usize; MAX_LANES]; 2],
    len: usize,
}

/// Collects jobs into per-block-count bins and hashes full groups.
pub(crate) struct Binner<'a> {
    hasher: GroupHasher,
    widest: usize,
    /// One per block count, indexed by it; each allocated at its first
    /// job, as units of equal-length blobs never use them (setting them up
    /// per unit was 2 % of the time on 64-byte blobs), and a batch of a
    /// few blobs uses one or two (setting up all 17, 20 KiB, took a third
    /// of a 10-blob batch's time).
    bins: [Option<Box<Bin<'a>>>; BLOCKS_PER_CHUNK + 1],
    /// Lanes a bin holds before it is hashed: two groups of the widest
    /// width where the kernel pairs groups, so that pairs share one block
    /// count and every compression is paired; else one group.
    bin_lanes: usize,
    run: SingleBlockRun<'a>,
    /// The unit's bytes hinted into L2 ahead of the lookup, where they lie
    /// back to back; full bins take windows of it into the kernel.
    stream: L2Lookahead<'a>,
}

/// Lanes a run of single-block groups holds: 4 groups of AVX-512, 8 of
/// AVX2. On AVX2, 64-byte blobs in cache: 58 M compressions/s at one group
/// per kernel call, 59 to 61 at 2, 4 and 16.
const RUN_LANES: usize = 4 * MAX_LANES;

/// Consecutive whole groups of blobs of one length of at most a block,
/// bound for consecutive slots, waiting to be hashed in one kernel call
/// ([`Kernel::hash_single_blocks`]).
struct SingleBlockRun<'a> {
    /// The inputs held, at most `RUN_LANES`; on the heap, allocated only by
    /// units that have such groups (on the stack, it slowed 256-byte and
    /// 1 KiB batches read from memory by 2 to 3 %).
    inputs: Vec<&'a [u8]>,
    /// Their common length.
    len: usize,
    /// Their common last-block flags.
    last_flags: u32,
    /// The slot of the first input.
    first: usize,
}

/// Runs lane groups through the kernel and puts each lane's output in its
/// slot, with buffers every group reuses, so that none clears fresh ones:
/// the kernel's padded last blocks, and the outputs of a group bound for
/// scattered slots.
struct GroupHasher {
    kernel: Kernel,
    params: GroupParams,
    tails: TailBlocks,
    outputs: [[u8; 32]; 2 * MAX_LANES],
}

impl<'a> Binner<'a> {
    /// An empty binner hashing with `kernel` and `params`.
    pub(crate) fn new(kernel: Kernel, params: GroupParams) -> Self {
        let widest = kernel.widths()[0];
        debug_assert!(!kernel.pairs_groups() || widest == MAX_LANES);
        Binner {
            hasher: GroupHasher {
                kernel,
                params,
                tails: TailBlocks::new(),
                outputs: [[0; 32]; 2 * MAX_LANES],
            },
            widest,
            bins: Default::default(),
            bin_lanes: if kernel.pairs_groups() {
                2 * widest
            } else {
                widest
            },
            run: SingleBlockRun {
                inputs: Vec::new(),
                len: 0,
                last_flags: 0,
                first: 0,
            },
            stream: L2Lookahead::new(None),
        }
    }

    /// Hashes a full group of the widest width straight into `slots`, one
    /// per lane in order (blobs that need no binning).
    ///
    /// Not held back to pair with the next group ([`Kernel::pairs_groups`]):
    /// held here, a copy per group, pairs ran no faster (1 KiB) or slower
    /// (256 B, 4 %) from memory (AVX-512, one thread, side by side). Blobs
    /// of one length laid back to back pair instead inside one kernel call
    /// ([`Binner::hash_back_to_back_chunks`]).
    #[inline]
    pub(crate) fn hash_in_place(&mut self, group: &LaneGroup, slots: &mut [[u8; 32]]) {
        debug_assert_eq!(slots.len(), self.widest);
        let hasher = &mut self.hasher;
        let (kernel, params) = (hasher.kernel, &hasher.params);
        kernel.hash_group(self.widest, params, group, &mut hasher.tails, slots);
    }

    /// Like [`Binner::hash_in_place`] into `dests[first..]`, for a group
    /// whose lanes all have one length of at most a block, counter 0 and
    /// `group.last_flags[0]`: held back and hashed with the groups that
    /// follow on from it, a run per kernel call ([`Binner::finish`] hashes
    /// what is left).
    #[inline]
    pub(crate) fn hash_single_blocks_in_place(
        &mut self,
        group: &LaneGroup<'a>,
        first: usize,
        dests: &mut [[u8; 32]],
    ) {
        let widest = self.widest;
        let inputs = &group.inputs[..widest];
        let (len, last_flags) = (inputs[0].len(), group.last_flags[0]);
        debug_assert!(len <= BLOCK_LEN && inputs.iter().all(|input| input.len() == len));
        let run = &self.run;
        let follows = first == run.first + run.inputs.len() && len == run.len;
        let extends = follows && last_flags == run.last_flags;
        if !run.inputs.is_empty() && !extends {
            self.hash_run(dests);
        }
        let run = &mut self.run;
        if run.inputs.is_empty() {
            (run.first, run.len, run.last_flags) = (first, len, last_flags);
            run.inputs.reserve(RUN_LANES);
        }
        debug_assert!(widest.is_multiple_of(4), "SIMD widths are 4, 8, 16");
        // Four lanes at a time: a copy of the run-time width was a `memmove`
        // call, 2 % of the time on 64-byte blobs.
        for four in inputs.chunks_exact(4) {
            run.inputs
                .extend_from_slice(<&[&[u8]; 4]>::try_from(four).expect("four"));
        }
        if run.inputs.len() + widest > RUN_LANES {
            self.hash_run(dests);
        }
    }

    /// Hashes `inputs`, a whole number of groups of the widest width of one
    /// length of at most a block (laid back to back, or gathered in order
    /// from slices), into `dests`, one slot each in order, with
    /// `last_flags` on every lane.
    pub(crate) fn hash_single_block_inputs<'b>(
        &mut self,
        inputs: impl BlockInputs<'b>,
        last_flags: u32,
        dests: &mut [[u8; 32]],
    ) {
        self.hasher.hash_single_blocks(inputs, last_flags, dests);
    }

    /// Hashes `work`, a whole number of groups of the widest width of
    /// inputs of one length of more than a block and at most a chunk laid
    /// back to back, into `dests`, one slot each in order.
    pub(crate) fn hash_back_to_back_chunks(&mut self, work: EqualChunks, dests: &mut [[u8; 32]]) {
        let hasher = &mut self.hasher;
        let (kernel, params) = (hasher.kernel, &hasher.params);
        kernel.hash_equal_chunks(params, work, &mut hasher.tails, dests);
    }

    /// Hashes the run of single-block groups held back, if any.
    fn hash_run(&mut self, dests: &mut [[u8; 32]]) {
        let run = &mut self.run;
        if run.inputs.is_empty() {
            return;
        }
        let slots = &mut dests[run.first..run.first + run.inputs.len()];
        self.hasher
            .hash_single_blocks(run.inputs.as_slice(), run.last_flags, slots);
        run.inputs.clear();
    }

    /// Hints the unit's `bytes` into L2 ahead of the lookup, if its blobs lie
    /// back to back ([`L2Lookahead`]).
    pub(crate) fn stream_from(&mut self, bytes: Option<&'a [u8]>) {
        self.stream = L2Lookahead::new(bytes);
    }

    /// Keeps the stream ahead of `blob`, the newest blob looked up.
    #[inline(always)]
    pub(crate) fn reach(&self, blob: &[u8]) {
        self.stream.reach(blob);
    }

    /// Moves the stream past `blob` without hinting it ([`L2Lookahead::pass`]).
    #[inline(always)]
    pub(crate) fn pass(&self, blob: &[u8]) {
        self.stream.pass(blob);
    }

    /// Adds a job; hashes its bin into `dests` if that fills a group.
    ///
    /// The caller starts loading the job's input ([`prefetch_input`]) when
    /// it first sees it, which is then some jobs ahead of its compression.
    ///
    /// Inlined into every caller, a job is a few stores; hashing a full bin,
    /// once per group, stays a call.
    #[inline(always)]
    pub(crate) fn push(&mut self, job: Job<'a>, dests: &mut [[u8; 32]]) {
        let blocks = blocks_in_chunk(job.data.len());
        let bin = match &mut self.bins[blocks] {
            Some(bin) => bin,
            empty => Self::allocate_bin(empty),
        };
        let (group, lane) = (bin.len / MAX_LANES, bin.len % MAX_LANES);
        bin.groups[group].inputs[lane] = job.data;
        bin.groups[group].counters[lane] = job.counter;
        bin.groups[group].last_flags[lane] = job.last_flags;
        bin.dests[group][lane] = job.dest;
        bin.len += 1;
        if bin.len == self.bin_lanes {
            self.hash_full_bin(blocks, dests);
        }
    }

    /// Sets up a bin, at its first job (see the `bins` field).
    #[cold]
    #[inline(never)]
    fn allocate_bin<'b>(empty: &'b mut Option<Box<Bin<'a>>>) -> &'b mut Bin<'a> {
        empty.insert(Box::default())
    }

    /// Hashes the full bin of `blocks`-block jobs and empties it.
    #[inline(never)]
    fn hash_full_bin(&mut self, blocks: usize, dests: &mut [[u8; 32]]) {
        let bin = (self.bins[blocks].as_deref_mut()).expect("a bin is set up by its first job");
        bin.len = 0;
        let [first, second] = &bin.groups;
        if self.bin_lanes == self.widest {
            let widest = self.widest;
            self.hasher
                .hash(widest, first, &bin.dests[0], widest, dests);
        } else {
            let [first_dests, second_dests] = &bin.dests;
            let lane_dests = [first_dests, second_dests];
            let stream = Some(&self.stream);
            self.hasher
                .hash_pair([first, second], [blocks, blocks], lane_dests, dests, stream);
        }
    }

    /// Hashes every job still in a bin and the held-back run.
    ///
    /// Bins whose first group is full (only where the kernel pairs groups)
    /// are hashed in pairs of those groups, now of different block counts;
    /// the remaining lanes are merged into groups in block-count order.
    pub(crate) fn finish(mut self, dests: &mut [[u8; 32]]) {
        self.hash_run(dests);
        let (widest, hasher) = (self.widest, &mut self.hasher);
        let mut unpaired: Option<(usize, &Bin)> = None;
        for (blocks, bin) in held_bins(&self.bins) {
            if bin.len < widest {
                continue;
            }
            match unpaired.take() {
                Some((other, first)) => {
                    let groups = [&first.groups[0], &bin.groups[0]];
                    let lane_dests = [&first.dests[0], &bin.dests[0]];
                    hasher.hash_pair(groups, [other, blocks], lane_dests, dests, None);
                }
                None => unpaired = Some((blocks, bin)),
            }
        }
        if let Some((_, bin)) = unpaired {
            hasher.hash(widest, &bin.groups[0], &bin.dests[0], widest, dests);
        }
        // The lanes not hashed yet: past the first group of a bin that
        // filled one, else all of them.
        let left = |bin: &Bin| match bin.len >= widest {
            true => widest..bin.len,
            false => 0..bin.len,
        };
        let mut partial = held_bins(&self.bins).filter(|(_, bin)| !left(bin).is_empty());
        match (partial.next(), partial.next()) {
            (None, _) => return,
            // One bin's lanes from its first (a batch of a few blobs of one
            // length, or the end of a batch of one): hashed where they are.
            // Lanes past `bin.len` hold earlier inputs (or none); their
            // outputs are computed and dropped.
            (Some((_, bin)), None) if bin.len < widest => {
                let width = hasher.kernel.narrowest_width_for(bin.len);
                hasher.hash(width, &bin.groups[0], &bin.dests[0], bin.len, dests);
                return;
            }
            _ => {}
        }
        let mut merged = Bin::default();
        for (_, bin) in held_bins(&self.bins) {
            for lane in left(bin) {
                let (group, lane_dests) =
                    (&bin.groups[lane / MAX_LANES], &bin.dests[lane / MAX_LANES]);
                let lane = lane % MAX_LANES;
                let into = &mut merged.groups[0];
                into.inputs[merged.len] = group.inputs[lane];
                into.counters[merged.len] = group.counters[lane];
                into.last_flags[merged.len] = group.last_flags[lane];
                merged.dests[0][merged.len] = lane_dests[lane];
                merged.len += 1;
                if merged.len == widest {
                    hasher.hash(widest, &merged.groups[0], &merged.dests[0], widest, dests);
                    merged.len = 0;
                }
            }
        }
        if merged.len > 0 {
            let width = hasher.kernel.narrowest_width_for(merged.len);
            // As above, lanes past `merged.len` are computed and dropped.
            let (group, lane_dests) = (&merged.groups[0], &merged.dests[0]);
            hasher.hash(width, group, lane_dests, merged.len, dests);
        }
    }
}

/// The bins set up so far, with their block counts, fewest blocks first.
fn held_bins<'b, 'a>(
    bins: &'b [Option<Box<Bin<'a>>>],
) -> impl Iterator<Item = (usize, &'b Bin<'a>)> {
    let held = bins.iter().enumerate();
    held.filter_map(|(blocks, bin)| Some((blocks, bin.as_deref()?)))
}

impl GroupHasher {
    /// Hashes `inputs` (whole groups of the widest width, one length of at
    /// most a block) into `dests` in order, with `last_flags` on every lane.
    #[inline]
    fn hash_single_blocks<'a>(
        &mut self,
        inputs: impl BlockInputs<'a>,
        last_flags: u32,
        dests: &mut [[u8; 32]],
    ) {
        let (kernel, params) = (self.kernel, &self.params);
        kernel.hash_single_blocks(params, inputs, last_flags, &mut self.tails, dests);
    }

    /// Hashes two full groups of the widest width, the lanes of group `g`
    /// all of `blocks[g]` blocks (two bins), writing lane `l` of group `g`
    /// to `dests[lane_dests[g][l]]`.
    #[inline]
    fn hash_pair<'a>(
        &mut self,
        groups: [&LaneGroup<'a>; 2],
        blocks: [usize; 2],
        lane_dests: [&[usize; MAX_LANES]; 2],
        dests: &mut [[u8; 32]],
        stream: Option<&L2Lookahead<'a>>,
    ) {
        let (kernel, params, tails) = (self.kernel, &self.params, &mut self.tails);
        let width = kernel.widths()[0];
        let pair = AlignedPair::known(groups, blocks, width, stream);
        if let Some(slots) = consecutive_slots(&lane_dests, width, dests) {
            kernel.hash_aligned_pair(params, pair, tails, slots);
            return;
        }
        kernel.hash_aligned_pair(params, pair, tails, &mut self.outputs);
        scatter(&lane_dests, width, &self.outputs, dests);
    }

    /// Hashes the first `width` lanes of `group` and writes the first `used`
    /// outputs to `dests[lane_dests[lane]]`.
    #[inline]
    fn hash(
        &mut self,
        width: usize,
        group: &LaneGroup,
        lane_dests: &[usize; MAX_LANES],
        used: usize,
        dests: &mut [[u8; 32]],
    ) {
        let (kernel, params, tails) = (self.kernel, &self.params, &mut self.tails);
        if width == used {
            if let Some(slots) = consecutive_slots(&[lane_dests], used, dests) {
                kernel.hash_group(width, params, group, tails, slots);
                return;
            }
        }
        kernel.hash_group(width, params, group, tails, &mut self.outputs);
        scatter(&[lane_dests], used, &self.outputs, dests);
    }
}

/// The slots `lane_dests` name, the first `lanes` of each group in turn, if
/// they are consecutive in `dests` (equal-length blobs in input order, a
/// blob's chunks): the kernel then writes straight into them.
#[inline]
fn consecutive_slots<'d>(
    lane_dests: &[&[usize; MAX_LANES]],
    lanes: usize,
    dests: &'d mut [[u8; 32]],
) -> Option<&'d mut [[u8; 32]]> {
    let first = lane_dests[0][0];
    let consecutive = lane_dests.iter().enumerate().all(|(g, group)| {
        group[..lanes]
            .iter()
            .enumerate()
            .all(|(lane, &dest)| dest == first + g * lanes + lane)
    });
    if consecutive {
        dests.get_mut(first..first + lane_dests.len() * lanes)
    } else {
        None
    }
}

/// Writes the first `lanes` outputs of each group (`outputs`, `lanes` per
/// group in turn) to `dests[lane_dests[g][lane]]`.
#[inline]
fn scatter(
    lane_dests: &[&[usize; MAX_LANES]],
    lanes: usize,
    outputs: &[[u8; 32]],
    dests: &mut [[u8; 32]],
) {
    for (group, outputs) in lane_dests.iter().zip(outputs.chunks_exact(lanes)) {
        for (&dest, output) in group[..lanes].iter().zip(outputs) {
            dests[dest] = *output;
        }
    }
}

/// Hashes `out.len()` inputs of `len` bytes (at most a chunk) laid back to
/// back in `data` with `last_flags` on each, whole groups straight into
/// their slots, the rest through `binner` (the caller finishes it). Each
/// input is chunk `index % chunks_per_blob` of its blob (a power of two;
/// only whole chunks make up more than one). Single-chunk blobs take it,
/// and so do the chunks and parent blocks of regular trees.
///
/// Each blob is cut out of `data` rather than looked up by index: on
/// 64-byte packed blobs (AVX-512) the lookups, the check that a group's
/// lengths agree and the copy into a run were a seventh of the time.
pub(crate) fn hash_back_to_back<'a>(
    binner: &mut Binner<'a>,
    width: usize,
    data: &'a [u8],
    len: usize,
    last_flags: u32,
    chunks_per_blob: usize,
    out: &mut [[u8; 32]],
) {
    debug_assert!(chunks_per_blob == 1 || len == CHUNK_LEN);
    let whole = out.len() / width * width;
    // One kernel call for every whole group; the kernel hints the bytes of
    // blobs of at most a block some way ahead, as one run.
    let inputs = BackToBack {
        data,
        len,
        count: whole,
    };
    if len <= BLOCK_LEN {
        binner.hash_single_block_inputs(inputs, last_flags, &mut out[..whole]);
    } else {
        let work = EqualChunks {
            inputs,
            last_flags,
            chunks_per_blob,
        };
        binner.hash_back_to_back_chunks(work, &mut out[..whole]);
    }
    let counter_mask = chunks_per_blob - 1;
    for dest in whole..out.len() {
        let job = Job {
            data: &data[dest * len..][..len],
            counter: (dest & counter_mask) as u64,
            last_flags,
            dest,
        };
        binner.push(job, out);
    }
}

/// Starts loading an input's first blocks and its last byte; the kernel
/// fetches the blocks after the first ones itself, up to the start of the
/// last block (in a merged group of mixed block counts, only up to the
/// shortest lane's: such groups end a unit and are few).
///
/// The last byte's line is the one the kernel's hints miss when the last
/// block straddles two lines. Hinting the last block's first byte here as
/// well only repeated the kernel's hint (or this one, for 64-aligned
/// blobs): without it, side by side on AVX-512, one thread, lengths
/// uniform in 1..=1024 +2 %, 1025..=16384 +2 %, 1 KiB from memory +3.6 %.
#[inline(always)]
pub(crate) fn prefetch_input(data: &[u8]) {
    prefetch_input_blocks(data, PREFETCH_BLOCKS);
}

/// [`prefetch_input`] with `blocks` first blocks hinted instead of
/// [`PREFETCH_BLOCKS`].
#[inline(always)]
pub(crate) fn prefetch_input_blocks(data: &[u8], blocks: usize) {
    for line in data.chunks(BLOCK_LEN).take(blocks) {
        prefetch(line);
    }
    if let Some(last) = data.len().checked_sub(1) {
        prefetch(&data[last..]);
    }
}
