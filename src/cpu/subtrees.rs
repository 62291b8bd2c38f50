//! Large blobs spread over the engine's threads: cut into subtrees (those
//! of all a batch's large blobs together) that the calling thread and the
//! pool's helpers take as they take chunks of a batch ([`share`]), each
//! hashed to its chaining value with `blake3`, then merged up to each
//! blob's root with `blake3::hazmat`.
//!
//! `blake3`'s own multi-threaded update runs only on rayon workers, so the
//! calling thread, which is one of the engine's threads and not a worker of
//! its pool (see [`share`]), would sleep through it.

use blake3::hazmat::{self, ChainingValue, HasherExt};

use super::batch::Threads;
use super::share::share;
use crate::blobs::BlobSource;
use crate::mode::{Mode, ModeWords};

/// Bytes per subtree: a power of two of whole chunks, so every subtree but
/// the last is a complete subtree of the blob's BLAKE3 tree, and the last,
/// starting on a multiple of it, is the tree's rightmost one. A quarter of
/// a MiB gives a 1 MiB blob four, and `blake3` hashes each at its
/// large-input rate.
const SUBTREE_LEN: usize = 256 * 1024;

/// The digests of `blobs` in `mode`, their subtrees all hashed in one
/// pass over `threads` ([`SubtreeHashing::roots_of_all`]).
pub(crate) fn hash_all_in_subtrees(threads: Threads, mode: Mode, blobs: &[&[u8]]) -> Vec<[u8; 32]> {
    let hashing = SubtreeHashing::new(mode);
    hashing.roots_of_all(
        threads,
        blobs,
        |blob| mode.hash_with_blake3(blob),
        |children| hashing.root(children),
    )
}

/// Subtrees of blobs in one mode: each subtree's chaining value, and a
/// blob's digest from those of its subtrees.
pub(crate) struct SubtreeHashing<'a> {
    mode: Mode<'a>,
    /// The derive-key context's key (zeros in the other modes).
    context_key: [u8; 32],
}

impl<'a> SubtreeHashing<'a> {
    /// The mode's key words and flags as the lanes take them, from the
    /// derive-key context's key already hashed here.
    pub(crate) fn words(&self) -> ModeWords {
        self.mode.words(|_| self.context_key)
    }

    pub(crate) fn new(mode: Mode<'a>) -> SubtreeHashing<'a> {
        let context_key = match mode {
            Mode::DeriveKey(context) => hazmat::hash_derive_key_context(context),
            Mode::Hash | Mode::KeyedHash(_) => [0; 32],
        };
        SubtreeHashing { mode, context_key }
    }

    /// A new `blake3::Hasher` in this mode. Made anew each time rather
    /// than cloned from one kept here: a clone moves the whole hasher, its
    /// chaining value stack included (1.8 KiB), which took a tenth of the
    /// time of a blob's 1 KiB of extended output.
    fn fresh(&self) -> blake3::Hasher {
        match self.mode {
            Mode::Hash => blake3::Hasher::new(),
            Mode::KeyedHash(key) => blake3::Hasher::new_keyed(key),
            Mode::DeriveKey(_) => blake3::Hasher::new_from_context_key(&self.context_key),
        }
    }

    fn merge_mode(&self) -> hazmat::Mode<'_> {
        match self.mode {
            Mode::Hash => hazmat::Mode::Hash,
            Mode::KeyedHash(key) => hazmat::Mode::KeyedHash(key),
            Mode::DeriveKey(_) => hazmat::Mode::DeriveKeyMaterial(&self.context_key),
        }
    }

    /// The chaining value of the subtree `data` that starts `offset` bytes
    /// into its blob: a whole subtree of its blob's tree (`offset` a
    /// multiple of a power of two of chunks that `data` does not exceed).
    pub(crate) fn chaining_value(&self, offset: u64, data: &[u8]) -> ChainingValue {
        let mut hasher = self.fresh();
        hasher.set_input_offset(offset);
        hasher.update(data);
        hasher.finalize_non_root()
    }

    /// The chaining values of `data`'s consecutive pieces of `piece_len`
    /// bytes (a power of two of chunks; the last piece may be shorter),
    /// `data` starting `offset` bytes into its blob on a multiple of
    /// `piece_len`: one per piece into `out`, on `threads`. Pieces over
    /// [`SUBTREE_LEN`] are hashed in parts of that length, merged up, so
    /// that a few long pieces still keep every thread busy.
    pub(crate) fn chaining_values(
        &self,
        threads: Threads,
        offset: u64,
        data: &[u8],
        piece_len: usize,
        out: &mut [ChainingValue],
    ) {
        debug_assert_eq!(out.len(), data.len().div_ceil(piece_len));
        let part_len = piece_len.min(SUBTREE_LEN);
        let parts = Pieces::new(data, part_len);
        let hash_parts = |out: &mut [ChainingValue]| {
            share(threads, &parts, out, |first, slots| {
                for (index, slot) in (first..).zip(slots) {
                    let at = offset + (index * part_len) as u64;
                    *slot = self.chaining_value(at, parts.blob(index));
                }
            })
        };
        if part_len == piece_len {
            return hash_parts(out);
        }
        let mut part_values = vec![[0u8; 32]; parts.count()];
        hash_parts(&mut part_values);
        let mode = self.merge_mode();
        for (slot, group) in out.iter_mut().zip(part_values.chunks(piece_len / part_len)) {
            *slot = merge(group, mode);
        }
    }

    /// A root of each of `blobs`: the subtrees of all of them hashed in
    /// one pass over `threads`, then each blob's chaining values given to
    /// `root` (or the blob to `whole`, where it is one subtree). One blob at
    /// a time, each of a batch of blobs of a few subtrees (1 to 4 MiB) would
    /// pay a hand-over between threads.
    pub(crate) fn roots_of_all<R>(
        &self,
        threads: Threads,
        blobs: &[&[u8]],
        whole: impl Fn(&[u8]) -> R,
        root: impl Fn(&[ChainingValue]) -> R,
    ) -> Vec<R> {
        let pieces = PiecesOfBlobs::new(blobs);
        let mut chaining_values = vec![[0u8; 32]; pieces.count()];
        share(threads, &pieces, &mut chaining_values, |first, slots| {
            for (index, slot) in (first..).zip(slots) {
                let (offset, piece) = pieces.piece(index);
                *slot = self.chaining_value(offset, piece);
            }
        });
        let roots = blobs.iter().zip(pieces.of_each(&chaining_values));
        roots
            .map(|(blob, children)| match children.is_empty() {
                true => whole(blob),
                false => root(children),
            })
            .collect()
    }

    /// The extended output of each of `blobs`, their subtrees all hashed in
    /// one pass over `threads` ([`roots_of_all`](Self::roots_of_all)).
    pub(crate) fn output_readers_of_all(
        &self,
        threads: Threads,
        blobs: &[&[u8]],
    ) -> Vec<blake3::OutputReader> {
        let whole = |blob: &[u8]| self.output_reader(Threads::One, blob);
        self.roots_of_all(threads, blobs, whole, |children| self.root_xof(children))
    }

    /// The digest of a blob from the chaining values of its consecutive
    /// subtrees (at least two), each but the last holding the same power
    /// of two of chunks and the last at most as many.
    pub(crate) fn root(&self, children: &[ChainingValue]) -> [u8; 32] {
        let (left, right) = self.root_children(children);
        *hazmat::merge_subtrees_root(&left, &right, self.merge_mode()).as_bytes()
    }

    /// [`root`](Self::root)'s extended output.
    fn root_xof(&self, children: &[ChainingValue]) -> blake3::OutputReader {
        let (left, right) = self.root_children(children);
        hazmat::merge_subtrees_root_xof(&left, &right, self.merge_mode())
    }

    /// The root's two children, from the blob's consecutive subtrees.
    fn root_children(&self, children: &[ChainingValue]) -> (ChainingValue, ChainingValue) {
        let mode = self.merge_mode();
        let (left, right) = children.split_at(left_count(children.len()));
        (merge(left, mode), merge(right, mode))
    }

    /// The extended output of the blob `data`: hashed whole by `blake3`
    /// up to [`SUBTREE_LEN`], beyond that in subtrees on `threads`.
    pub(crate) fn output_reader(&self, threads: Threads, data: &[u8]) -> blake3::OutputReader {
        if data.len() <= SUBTREE_LEN {
            let mut hasher = self.fresh();
            hasher.update(data);
            return hasher.finalize_xof();
        }
        let mut chaining_values = vec![[0u8; 32]; data.len().div_ceil(SUBTREE_LEN)];
        self.chaining_values(threads, 0, data, SUBTREE_LEN, &mut chaining_values);
        self.root_xof(&chaining_values)
    }
}

/// The chaining value of the non-root subtree whose subtrees' chaining
/// values are `children` (at least one), split as BLAKE3 splits.
fn merge(children: &[ChainingValue], mode: hazmat::Mode) -> ChainingValue {
    if let [only] = children {
        return *only;
    }
    let (left, right) = children.split_at(left_count(children.len()));
    hazmat::merge_subtrees_non_root(&merge(left, mode), &merge(right, mode), mode)
}

/// How many of `count` (at least two) consecutive subtrees form the left
/// child of their parent: the largest power of two below `count`. Every
/// subtree but the last holds the same power of two of chunks, so this is
/// BLAKE3's rule (the left child holds the largest power of two of chunks
/// that leaves the right one non-empty) counted in subtrees.
fn left_count(count: usize) -> usize {
    debug_assert!(count >= 2);
    1 << (usize::BITS - 1 - (count - 1).leading_zeros())
}

/// The chaining values of an input's consecutive subtrees, each but the
/// last of one power of two of chunks, merged as they come, as `blake3`'s
/// own hasher merges its chunks': it holds one per complete subtree of a
/// power of two of them, so an input of any length takes a few dozen.
#[derive(Clone)]
pub(crate) struct SubtreeStack {
    stack: Vec<ChainingValue>,
    pushed: u64,
}

impl SubtreeStack {
    pub(crate) fn new() -> SubtreeStack {
        SubtreeStack {
            stack: Vec::new(),
            pushed: 0,
        }
    }

    /// Adds the next subtree's chaining value. The subtrees before it that
    /// now make complete pairs are merged first: never the last one, whose
    /// parent may be the root.
    pub(crate) fn push(&mut self, hashing: &SubtreeHashing, value: ChainingValue) {
        let mode = hashing.merge_mode();
        while self.stack.len() > self.pushed.count_ones() as usize {
            let right = self.stack.pop().expect("the stack holds a pair");
            let left = self.stack.pop().expect("the stack holds a pair");
            self.stack
                .push(hazmat::merge_subtrees_non_root(&left, &right, mode));
        }
        self.stack.push(value);
        self.pushed += 1;
    }

    /// The input's digest, from at least two subtrees.
    pub(crate) fn root(self, hashing: &SubtreeHashing) -> [u8; 32] {
        let (left, right) = self.root_children(hashing);
        *hazmat::merge_subtrees_root(&left, &right, hashing.merge_mode()).as_bytes()
    }

    /// The input's extended output, from at least two subtrees.
    pub(crate) fn root_xof(self, hashing: &SubtreeHashing) -> blake3::OutputReader {
        let (left, right) = self.root_children(hashing);
        hazmat::merge_subtrees_root_xof(&left, &right, hashing.merge_mode())
    }

    /// The root's two children: the stack merged from its right end.
    fn root_children(mut self, hashing: &SubtreeHashing) -> (ChainingValue, ChainingValue) {
        let mode = hashing.merge_mode();
        let mut right = self.stack.pop().expect("a root has two subtrees");
        loop {
            let left = self.stack.pop().expect("a root has two subtrees");
            if self.stack.is_empty() {
                return (left, right);
            }
            right = hazmat::merge_subtrees_non_root(&left, &right, mode);
        }
    }
}

/// Data cut into pieces of `len` bytes, the last one shorter or equal.
pub(super) struct Pieces<'a> {
    data: &'a [u8],
    len: usize,
}

impl<'a> Pieces<'a> {
    pub(super) fn new(data: &'a [u8], len: usize) -> Self {
        Pieces { data, len }
    }
}

impl BlobSource for Pieces<'_> {
    fn count(&self) -> usize {
        self.data.len().div_ceil(self.len)
    }

    fn blob(&self, index: usize) -> &[u8] {
        let start = index * self.len;
        &self.data[start..(start + self.len).min(self.data.len())]
    }
}

/// The subtrees of several blobs, one after another, as the blobs of one
/// batch: blob `i`'s subtrees are pieces `first[i]..first[i + 1]`, none
/// for a blob of one subtree or less.
struct PiecesOfBlobs<'a> {
    blobs: &'a [&'a [u8]],
    first: Vec<usize>,
}

impl<'a> PiecesOfBlobs<'a> {
    fn new(blobs: &'a [&'a [u8]]) -> Self {
        let mut first = Vec::with_capacity(blobs.len() + 1);
        first.push(0);
        for blob in blobs {
            // A blob of one subtree is its own root: no pieces.
            let pieces = match blob.len() > SUBTREE_LEN {
                true => blob.len().div_ceil(SUBTREE_LEN),
                false => 0,
            };
            first.push(first[first.len() - 1] + pieces);
        }
        PiecesOfBlobs { blobs, first }
    }

    /// Piece `index`: its offset in its blob, and its bytes.
    fn piece(&self, index: usize) -> (u64, &'a [u8]) {
        let blob = self.first.partition_point(|&first| first <= index) - 1;
        let start = (index - self.first[blob]) * SUBTREE_LEN;
        let data = self.blobs[blob];
        (
            start as u64,
            &data[start..(start + SUBTREE_LEN).min(data.len())],
        )
    }

    /// Each blob's run of `values`, one value a piece.
    fn of_each<'v, T>(&'v self, values: &'v [T]) -> impl Iterator<Item = &'v [T]> + 'v {
        self.first
            .windows(2)
            .map(move |range| &values[range[0]..range[1]])
    }
}

impl BlobSource for PiecesOfBlobs<'_> {
    fn count(&self) -> usize {
        self.first[self.first.len() - 1]
    }

    fn blob(&self, index: usize) -> &[u8] {
        self.piece(index).1
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Inputs cut into subtrees of every size, each hashed as pieces (in
    /// parts merged up where longer than [`SUBTREE_LEN`]) and merged on
    /// the stack, give `blake3`'s digest in every mode.
    #[test]
    fn pieces_merged_on_the_stack_give_blake3s_digest() {
        let data: Vec<u8> = (0..(5 << 18) + 5).map(|i| (i % 251) as u8).collect();
        let key = [9u8; 32];
        let modes = [
            Mode::Hash,
            Mode::KeyedHash(&key),
            Mode::DeriveKey("stack test"),
        ];
        let lengths = [
            2048,
            3072,
            8 * 1024 + 1,
            (1 << 18) + 1,
            (1 << 20) + 1,
            data.len(),
        ];
        for mode in modes {
            let hashing = SubtreeHashing::new(mode);
            for len in lengths {
                for piece_len in [1024, 4096, SUBTREE_LEN, 2 * SUBTREE_LEN] {
                    let input = &data[..len];
                    if len <= piece_len {
                        continue;
                    }
                    let mut values = vec![[0u8; 32]; len.div_ceil(piece_len)];
                    hashing.chaining_values(Threads::One, 0, input, piece_len, &mut values);
                    let mut stack = SubtreeStack::new();
                    for value in values {
                        stack.push(&hashing, value);
                    }
                    let expected = mode.hash_with_blake3(input);
                    let output = read(stack.clone().root_xof(&hashing));
                    assert_eq!(stack.root(&hashing), expected, "{mode:?} {len} {piece_len}");
                    assert_eq!(output, xof(mode, input), "{mode:?} {len} {piece_len}");
                }
            }
        }
    }

    /// 131 bytes of `output` (past two output blocks).
    fn read(mut output: blake3::OutputReader) -> [u8; 131] {
        let mut bytes = [0u8; 131];
        output.fill(&mut bytes);
        bytes
    }

    /// `blake3`'s 131 bytes of extended output of `data` in `mode`.
    fn xof(mode: Mode, data: &[u8]) -> [u8; 131] {
        let mut hasher = match mode {
            Mode::Hash => blake3::Hasher::new(),
            Mode::KeyedHash(key) => blake3::Hasher::new_keyed(key),
            Mode::DeriveKey(context) => blake3::Hasher::new_derive_key(context),
        };
        read(hasher.update(data).finalize_xof())
    }

    /// A whole blob's extended output, hashed whole or in subtrees on one
    /// thread or two, is `blake3`'s.
    #[test]
    fn output_reader_gives_blake3s_extended_output() {
        let data: Vec<u8> = (0..(3 << 18) + 7).map(|i| (i % 253) as u8).collect();
        let pool = rayon::ThreadPoolBuilder::new()
            .num_threads(1)
            .build()
            .unwrap();
        for mode in [Mode::Hash, Mode::DeriveKey("reader test")] {
            let hashing = SubtreeHashing::new(mode);
            for len in [0, 1, 1024, 1025, SUBTREE_LEN, SUBTREE_LEN + 1, data.len()] {
                let input = &data[..len];
                for threads in [Threads::One, Threads::Pool(&pool)] {
                    let output = read(hashing.output_reader(threads, input));
                    assert_eq!(output, xof(mode, input), "{mode:?} {len}");
                }
            }
        }
    }

    /// Blobs of every subtree count hashed together, on one thread or
    /// three, each get `blake3`'s digest and extended output in every mode.
    #[test]
    fn blobs_hashed_together_in_subtrees_get_blake3s_digests() {
        let data: Vec<u8> = (0..(9 << 18) + 7).map(|i| (i % 247) as u8).collect();
        let lengths = [
            SUBTREE_LEN + 1,
            0,
            1,
            SUBTREE_LEN,
            data.len(),
            4 * SUBTREE_LEN,
            (3 << 18) + 7,
        ];
        let blobs: Vec<&[u8]> = lengths
            .iter()
            .enumerate()
            .map(|(index, &len)| &data[index..index + len.min(data.len() - index)])
            .collect();
        let pool = rayon::ThreadPoolBuilder::new()
            .num_threads(2)
            .build()
            .unwrap();
        let key = [3u8; 32];
        for mode in [
            Mode::Hash,
            Mode::KeyedHash(&key),
            Mode::DeriveKey("together"),
        ] {
            let hashing = SubtreeHashing::new(mode);
            // `blake3`'s digests, computed by the `blake3` crate.
            let expected: Vec<[u8; 32]> = blobs
                .iter()
                .map(|blob| mode.hash_with_blake3(blob))
                .collect();
            for threads in [Threads::One, Threads::Pool(&pool)] {
                for count in [1, 2, blobs.len()] {
                    let out = hash_all_in_subtrees(threads, mode, &blobs[..count]);
                    assert_eq!(out, expected[..count], "{mode:?}, {count} blobs");
                    let readers = hashing.output_readers_of_all(threads, &blobs[..count]);
                    let outputs: Vec<[u8; 131]> = readers.into_iter().map(read).collect();
                    let expected: Vec<[u8; 131]> =
                        blobs[..count].iter().map(|blob| xof(mode, blob)).collect();
                    assert_eq!(outputs, expected, "{mode:?}, {count} readers");
                }
            }
        }
    }

    #[test]
    fn left_count_is_the_largest_power_of_two_below() {
        for count in 2..300usize {
            let left = left_count(count);
            assert!(left.is_power_of_two() && left < count && 2 * left >= count);
        }
    }
}
