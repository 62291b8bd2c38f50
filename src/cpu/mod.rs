//! The CPU path: which instruction set runs the lane kernel (the one
//! selection point), and the driver that feeds it.

#[cfg(target_arch = "x86_64")]
mod avx2;
#[cfg(target_arch = "x86_64")]
mod avx512;
#[cfg(target_arch = "x86_64")]
mod avx512_pair;
pub(crate) mod batch;
#[cfg(target_arch = "x86_64")]
mod byte_rotation;
mod groups;
mod kernel;
mod lookahead;
#[cfg(target_arch = "aarch64")]
mod neon;
mod portable;
mod prefetch;
mod regular_trees;
mod root_outputs;
mod share;
#[cfg(target_arch = "x86_64")]
mod sse41;
mod subtrees;
mod tree;

use std::fmt;
use std::str::FromStr;
use std::sync::OnceLock;

use crate::consts::CHUNK_LEN;
use crate::error::{Error, ErrorKind};
use kernel::{
    AlignedPair, BlockInputs, EqualChunks, GroupParams, LaneGroup, SingleBlocks, TailBlocks, Work,
};
pub(crate) use root_outputs::MAX_LANE_OUTPUT;
pub(crate) use subtrees::{SubtreeHashing, SubtreeStack};

/// The longest blobs of regular trees the lanes take even where `blake3`
/// would run at full width ([`Kernel::uses_regular_trees`]).
const REGULAR_TREE_MAX_LEN: usize = 32 * CHUNK_LEN;

/// The environment variable that forces a CPU backend by name.
pub const CPU_BACKEND_ENV: &str = "B3BATCH_CPU";

/// A CPU instruction set the lane kernel is instantiated for.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum CpuBackend {
    /// AVX-512F and BW, 16 lanes (x86-64).
    Avx512,
    /// AVX2, 8 lanes (x86-64).
    Avx2,
    /// SSE4.1, 4 lanes (x86-64).
    Sse41,
    /// NEON, 4 lanes (aarch64).
    Neon,
    /// Plain Rust arrays, 16 lanes; runs everywhere.
    Portable,
}

impl CpuBackend {
    /// Every backend, best first.
    pub const ALL: &'static [CpuBackend] = &[
        CpuBackend::Avx512,
        CpuBackend::Avx2,
        CpuBackend::Sse41,
        CpuBackend::Neon,
        CpuBackend::Portable,
    ];

    /// The best backend this CPU supports (detected once, then cached).
    pub fn detect() -> CpuBackend {
        static DETECTED: OnceLock<CpuBackend> = OnceLock::new();
        *DETECTED.get_or_init(|| {
            CpuBackend::ALL
                .iter()
                .copied()
                .find(|backend| backend.is_supported())
                .unwrap_or(CpuBackend::Portable)
        })
    }

    /// Whether this CPU can run the backend.
    pub fn is_supported(self) -> bool {
        match self {
            #[cfg(target_arch = "x86_64")]
            CpuBackend::Avx512 => {
                std::arch::is_x86_feature_detected!("avx512f")
                    && std::arch::is_x86_feature_detected!("avx512bw")
                    && CpuBackend::Avx2.is_supported()
            }
            #[cfg(target_arch = "x86_64")]
            CpuBackend::Avx2 => {
                std::arch::is_x86_feature_detected!("avx2") && CpuBackend::Sse41.is_supported()
            }
            #[cfg(target_arch = "x86_64")]
            CpuBackend::Sse41 => {
                std::arch::is_x86_feature_detected!("sse4.1")
                    && std::arch::is_x86_feature_detected!("ssse3")
            }
            #[cfg(target_arch = "aarch64")]
            CpuBackend::Neon => cfg!(target_feature = "neon"),
            CpuBackend::Portable => true,
            #[allow(unreachable_patterns)] // which arms remain depends on the target
            _ => false,
        }
    }

    /// Every backend this CPU can run, best first (always ends with
    /// `Portable`). Tests use it to cover all of them.
    pub fn supported() -> Vec<CpuBackend> {
        CpuBackend::ALL
            .iter()
            .copied()
            .filter(|backend| backend.is_supported())
            .collect()
    }

    /// The backend's name as `B3BATCH_CPU` spells it.
    pub fn name(self) -> &'static str {
        match self {
            CpuBackend::Avx512 => "avx512",
            CpuBackend::Avx2 => "avx2",
            CpuBackend::Sse41 => "sse41",
            CpuBackend::Neon => "neon",
            CpuBackend::Portable => "portable",
        }
    }

    /// Blobs hashed side by side in the widest lane group.
    pub fn lanes(self) -> usize {
        self.widths()[0]
    }

    /// Lane counts of the kernel instances this backend runs, widest first,
    /// ending with 1: a bucket's tail falls through them.
    fn widths(self) -> &'static [usize] {
        match self {
            CpuBackend::Avx512 | CpuBackend::Portable => &[16, 8, 4, 1],
            CpuBackend::Avx2 => &[8, 4, 1],
            CpuBackend::Sse41 | CpuBackend::Neon => &[4, 1],
        }
    }

    /// The backend named by `B3BATCH_CPU`, if set: an error if it names no
    /// backend or one this CPU lacks.
    pub fn from_env() -> Option<Result<CpuBackend, Error>> {
        let name = std::env::var(CPU_BACKEND_ENV).ok()?;
        Some(name.parse::<CpuBackend>().and_then(|backend| {
            Kernel::new(backend).map(|_| backend).map_err(|mut error| {
                if let ErrorKind::BackendUnavailable { reason, .. } = &mut error.kind {
                    reason.push_str(&format!(" (asked for by {CPU_BACKEND_ENV}={name})"));
                }
                error
            })
        }))
    }
}

/// A CPU backend checked to run on this machine: the only way to reach the
/// ISA entry points, so their safety contract holds wherever one exists.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Kernel {
    backend: CpuBackend,
}

impl Kernel {
    /// The kernel for `backend`, or an error naming the ones this CPU has.
    pub(crate) fn new(backend: CpuBackend) -> Result<Kernel, Error> {
        if backend.is_supported() {
            Ok(Kernel { backend })
        } else {
            Err(ErrorKind::BackendUnavailable {
                backend: backend.name().to_owned(),
                reason: format!(
                    "this CPU lacks its instructions; choose one of {}",
                    names(&CpuBackend::supported())
                ),
            }
            .into())
        }
    }

    /// The best kernel for this CPU.
    pub(crate) fn detect() -> Kernel {
        Kernel {
            backend: CpuBackend::detect(),
        }
    }

    /// The backend behind this kernel.
    pub(crate) fn backend(self) -> CpuBackend {
        self.backend
    }

    /// Lane counts of the instances, widest first, ending with 1.
    pub(crate) fn widths(self) -> &'static [usize] {
        self.backend.widths()
    }

    /// The narrowest instance that holds `lanes` lanes (the widest if none
    /// does): where a partial last group goes, its spare lanes ignored.
    pub(crate) fn narrowest_width_for(self, lanes: usize) -> usize {
        let widths = self.widths();
        widths
            .iter()
            .copied()
            .filter(|&width| width >= lanes)
            .min()
            .unwrap_or(widths[0])
    }

    /// Whether a blob longer than one chunk goes through the lanes as chunks
    /// and parent nodes; if not, `blake3`, whose own SIMD hashes one big
    /// input's chunks side by side, hashes it (the figures behind each
    /// choice are in the comments below).
    pub(crate) fn uses_lane_tree(self, len: usize) -> bool {
        let full_width = self.backend.lanes() * CHUNK_LEN;
        match self.backend {
            // Its lanes are slower than `blake3`'s own SIMD at any size.
            CpuBackend::Portable => false,
            // `blake3` compresses up to `lanes` chunks of one blob side by
            // side, so it only catches up on blobs of many chunks, and then
            // mostly at power-of-two chunk counts. Measured on AVX-512, one
            // thread, lanes vs a `blake3::hash` loop in GB/s: 2 KiB 6.8 vs
            // 1.3, 8 KiB 6.3 vs 3.6, 16 KiB 6.0 vs 6.5, 64 KiB 6.2 vs 6.6,
            // and lengths uniform in 1025..=16384: 5.3 all on lanes vs 2.9
            // when blobs over 12 KiB went to `blake3`. Cut over at two
            // chunks per lane (32 KiB for AVX-512).
            //
            // A whole multiple of `lanes` chunks is the one shape where
            // `blake3` runs at full width throughout: on AVX2 (8 lanes, best
            // of three runs), lanes vs loop: 4 KiB 2.65 vs 2.34, 7 KiB 2.72
            // vs 1.63, 8 KiB 2.77 vs 3.25, 16 KiB 2.70 vs 3.32.
            _ => len <= 2 * full_width && !len.is_multiple_of(full_width),
        }
    }

    /// Whether a run of blobs of `len` bytes laid back to back with regular
    /// trees ([`regular_trees::is_regular`]) goes through the lanes as a
    /// run of chunks and levels of parents; if not, each blob goes where
    /// [`Kernel::uses_lane_tree`] sends it. On every SIMD backend up to
    /// 32 KiB (every regular length the lane tree takes, and more), even
    /// where that is a whole multiple of the lanes, `blake3`'s best shape:
    /// the chunks of such a run, a fixed stride apart, take the paired and
    /// hinted path of 1 KiB blobs. Measured on an Intel Xeon (AVX-512), one
    /// thread, 64 Ki blobs, lanes vs a `blake3::hash` loop on the same
    /// instruction set in the same run (GB/s): AVX-512 16 KiB 5.78 vs 4.96,
    /// 32 KiB 5.67 vs 5.16; AVX2 8 KiB 3.98 vs 3.15, 16 KiB 3.96 vs 3.27,
    /// 32 KiB 3.89 vs 3.35; SSE4.1 4 KiB 1.97 vs 1.57, 32 KiB 1.89 vs 1.62.
    /// Longer blobs were not measured.
    pub(crate) fn uses_regular_trees(self, len: usize) -> bool {
        self.backend != CpuBackend::Portable
            && regular_trees::is_regular(len)
            && len <= REGULAR_TREE_MAX_LEN
    }

    /// Hashes the first `width` lanes of `group` (`width` one of `widths()`)
    /// into `out[..width]`, copying partial last blocks into `tails`.
    pub(crate) fn hash_group(
        self,
        width: usize,
        params: &GroupParams,
        group: &LaneGroup,
        tails: &mut TailBlocks,
        out: &mut [[u8; 32]],
    ) {
        self.hash(width, params, group, tails, out);
    }

    /// Whether the widest instance compresses two groups side by side
    /// ([`Kernel::hash_group_pair`]), so that callers do well to hand it
    /// full groups two at a time.
    pub(crate) fn pairs_groups(self) -> bool {
        match self.backend {
            #[cfg(target_arch = "x86_64")]
            CpuBackend::Avx512 => avx512::PAIRS,
            _ => false,
        }
    }

    /// Hashes two full groups of the widest width into `out[..width]` and
    /// `out[width..2 * width]`: side by side where [`Kernel::pairs_groups`]
    /// and each group's lanes share a block count, else one after the other.
    /// The binner, whose bins know their block counts, calls
    /// [`Kernel::hash_aligned_pair`] instead; this one, which checks, is
    /// kept for the tests of pairs that are not aligned. An aligned pair
    /// takes the windows of `stream`, if any, as the binner's full bins do.
    #[cfg(test)]
    pub(crate) fn hash_group_pair<'a>(
        self,
        params: &GroupParams,
        groups: [&LaneGroup<'a>; 2],
        stream: Option<&lookahead::L2Lookahead<'a>>,
        tails: &mut TailBlocks,
        out: &mut [[u8; 32]],
    ) {
        match AlignedPair::new(groups, self.widths()[0], stream) {
            Some(pair) => self.hash_aligned_pair(params, pair, tails, out),
            None => self.hash_groups_apart(params, groups, tails, out),
        }
    }

    /// Hashes an aligned pair of full groups of the widest width into
    /// `out[..width]` and `out[width..2 * width]`: side by side where
    /// [`Kernel::pairs_groups`], else one after the other.
    ///
    /// Only the instance that pairs gets a pair instance: in the others it
    /// would be two copies of the whole one-group kernel in one function,
    /// which only lengthens the build. The caller builds the pair from
    /// block counts it knows ([`AlignedPair::known`]): checking every
    /// lane's count again, as the binner's pairs once were, cost (side by
    /// side, AVX-512, one thread, three rounds) lengths in 1..=64 4 to 6 %,
    /// 1..=1024 -1 to +3 %, 1025..=16384 -3 to +6 %.
    #[inline]
    pub(crate) fn hash_aligned_pair(
        self,
        params: &GroupParams,
        pair: AlignedPair,
        tails: &mut TailBlocks,
        out: &mut [[u8; 32]],
    ) {
        match self.backend {
            // SAFETY: a `Kernel` exists only for a supported backend.
            #[cfg(target_arch = "x86_64")]
            CpuBackend::Avx512 if avx512::PAIRS => unsafe {
                avx512::hash(params, pair, tails, out)
            },
            _ => self.hash_groups_apart(params, pair.groups(), tails, out),
        }
    }

    /// Hashes two full groups of the widest width one after the other.
    fn hash_groups_apart(
        self,
        params: &GroupParams,
        groups: [&LaneGroup; 2],
        tails: &mut TailBlocks,
        out: &mut [[u8; 32]],
    ) {
        let width = self.widths()[0];
        let (first, second) = out[..2 * width].split_at_mut(width);
        self.hash(width, params, groups[0], tails, first);
        self.hash(width, params, groups[1], tails, second);
    }

    /// Hashes `inputs` (a whole number of the widest groups, each input at
    /// most a block, all of one length) into `out`, one slot per input, with
    /// counter 0 and `last_flags` on every lane.
    pub(crate) fn hash_single_blocks<'a>(
        self,
        params: &GroupParams,
        inputs: impl BlockInputs<'a>,
        last_flags: u32,
        tails: &mut TailBlocks,
        out: &mut [[u8; 32]],
    ) {
        let work = SingleBlocks { inputs, last_flags };
        self.hash(self.widths()[0], params, work, tails, out);
    }

    /// Hashes `work` (a whole number of the widest groups of inputs, all of
    /// one length of more than a block and at most a chunk, back to back)
    /// into `out`, one slot per input.
    pub(crate) fn hash_equal_chunks(
        self,
        params: &GroupParams,
        work: EqualChunks,
        tails: &mut TailBlocks,
        out: &mut [[u8; 32]],
    ) {
        self.hash(self.widths()[0], params, work, tails, out);
    }

    /// Hashes `work` with the instance of `width` lanes.
    fn hash<W: Work>(
        self,
        width: usize,
        params: &GroupParams,
        work: W,
        tails: &mut TailBlocks,
        out: &mut [[u8; 32]],
    ) {
        match (self.backend, width) {
            // SAFETY (all three): a `Kernel` exists only for a supported
            // backend, and AVX-512 support includes AVX2 and SSE4.1 (see
            // `is_supported`), AVX2 support includes SSE4.1.
            #[cfg(target_arch = "x86_64")]
            (CpuBackend::Avx512, 16) => unsafe { avx512::hash(params, work, tails, out) },
            #[cfg(target_arch = "x86_64")]
            (CpuBackend::Avx512 | CpuBackend::Avx2, 8) => unsafe {
                avx2::hash(params, work, tails, out)
            },
            #[cfg(target_arch = "x86_64")]
            (CpuBackend::Avx512 | CpuBackend::Avx2 | CpuBackend::Sse41, 4) => unsafe {
                sse41::hash(params, work, tails, out)
            },
            // SAFETY: a `Kernel` exists only for a supported backend.
            #[cfg(target_arch = "aarch64")]
            (CpuBackend::Neon, 4) => unsafe { neon::hash(params, work, tails, out) },
            // Single lanes, and the portable backend's own widths.
            _ => portable::hash(width, params, work, tails, out),
        }
    }
}

fn names(backends: &[CpuBackend]) -> String {
    backends
        .iter()
        .map(|backend| backend.name())
        .collect::<Vec<_>>()
        .join(", ")
}

impl fmt::Display for CpuBackend {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

impl FromStr for CpuBackend {
    type Err = Error;

    /// Parses a name as [`CpuBackend::name`] spells it.
    fn from_str(name: &str) -> Result<Self, Error> {
        CpuBackend::ALL
            .iter()
            .copied()
            .find(|backend| backend.name().eq_ignore_ascii_case(name.trim()))
            .ok_or_else(|| {
                ErrorKind::BackendUnavailable {
                    backend: name.to_owned(),
                    reason: format!(
                        "no CPU backend has that name; choose one of {}",
                        names(CpuBackend::ALL)
                    ),
                }
                .into()
            })
    }
}

#[cfg(test)]
mod tests {
    use super::batch::hash_one;
    use super::kernel::MAX_LANES;
    use super::*;
    use crate::consts::{CHUNK_END, CHUNK_START, IV, ROOT};
    use crate::mode::Mode;

    /// Pairs of groups against `blake3`, lane by lane, on every backend:
    /// pairs that compress side by side (each group of one block count,
    /// equal or not) and pairs that cannot (a group whose lanes differ in
    /// block count), which go one group at a time. Each pair is hashed
    /// plain and again taking windows of a stream of L2 hints
    /// ([`lookahead::L2Lookahead`]), which the kernel that pairs hints
    /// from a second instance of its assembly.
    #[test]
    fn group_pairs_match_blake3_side_by_side_or_not() {
        type Lengths = fn(usize) -> usize;
        let cases: [(&str, Lengths, Lengths); 4] = [
            (
                "one block count, the same",
                |lane| 65 + lane,
                |lane| 100 + lane,
            ),
            (
                "one block count each, different",
                |lane| 1 + lane,
                |lane| 1000 + lane,
            ),
            (
                "first group ragged",
                |lane| 1 + 64 * lane,
                |lane| 300 + lane,
            ),
            ("second group ragged", |lane| 1024 - lane, |lane| 40 * lane),
        ];
        let data: Vec<u8> = (0..256 * 1024).map(|i| (i * 7 % 253) as u8).collect();
        // Inputs start at odd addresses, one after another.
        let group = |start: usize, lengths: Lengths| {
            let mut group = LaneGroup::default();
            let mut offset = start;
            for lane in 0..MAX_LANES {
                group.inputs[lane] = &data[offset..offset + lengths(lane)];
                group.last_flags[lane] = CHUNK_END | ROOT;
                offset += lengths(lane) + 1;
            }
            group
        };
        let params = GroupParams {
            key: IV,
            flags: 0,
            first_flags: CHUNK_START,
        };
        for backend in CpuBackend::supported() {
            let kernel = Kernel::new(backend).unwrap();
            let width = kernel.widths()[0];
            for ((case, first, second), streaming) in cases
                .into_iter()
                .flat_map(|case| [(case, false), (case, true)])
            {
                let groups = [group(1, first), group(20 * 1024 + 1, second)];
                let mut out = vec![[0u8; 32]; 2 * width];
                let mut tails = TailBlocks::new();
                // The stream's windows lie in the data past the groups',
                // a fresh one's all ready for the kernel.
                let far = &data[40 * 1024..];
                let reached = || {
                    let stream = lookahead::L2Lookahead::new(Some(far));
                    stream.reach(&far[..1]);
                    stream
                };
                let windows_left = |stream: &lookahead::L2Lookahead| {
                    std::iter::from_fn(|| stream.window()).count()
                };
                let (stream, fresh) = (reached(), windows_left(&reached()));
                assert!(fresh > 0);
                let pair = [&groups[0], &groups[1]];
                let taken = streaming.then_some(&stream);
                kernel.hash_group_pair(&params, pair, taken, &mut tails, &mut out);
                for (g, group) in groups.iter().enumerate() {
                    for (lane, input) in group.inputs[..width].iter().enumerate() {
                        assert_eq!(
                            out[g * width + lane],
                            *blake3::hash(input).as_bytes(),
                            "{backend}, {case}, streaming {streaming}: group {g} lane {lane} ({} bytes)",
                            input.len()
                        );
                    }
                }
                // Only the first case compresses its groups' blocks side by
                // side (the second's 1-block group leaves none to pair).
                let side_by_side = case == "one block count, the same";
                if streaming && side_by_side && kernel.pairs_groups() {
                    assert!(
                        windows_left(&stream) < fresh,
                        "{backend}, {case}: no window"
                    );
                }
            }
        }
    }

    /// The lane tree against `blake3` at the lengths where its shape changes,
    /// including ones above the cut-over where batches use `blake3` instead.
    #[test]
    fn lane_tree_matches_blake3_at_every_tree_shape() {
        let data: Vec<u8> = (0..200 * 1024).map(|i| (i % 251) as u8).collect();
        let lengths = [
            0,
            1,
            64,
            1023,
            1024,
            1025,
            2048,
            2049,
            3072,
            3073,
            4096,
            4097,
            5120,
            7168,
            8193,
            16384,
            31745,
            65536,
            65537,
            102400,
            200 * 1024,
        ];
        for backend in CpuBackend::supported() {
            let kernel = Kernel::new(backend).unwrap();
            for len in lengths {
                let words = Mode::Hash.words(|_| unreachable!());
                let got = hash_one(kernel, words, &data[..len]);
                assert_eq!(
                    got,
                    *blake3::hash(&data[..len]).as_bytes(),
                    "{backend} len {len}"
                );
            }
        }
    }
}
