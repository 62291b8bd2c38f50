//! One large blob spread over the engine's threads: cut into subtrees that
//! the calling thread and the pool's helpers take as they take chunks of a
//! batch ([`share`]), each hashed to its chaining value with `blake3`, then
//! merged up to the root with `blake3::hazmat`.
//!
//! `blake3`'s own multi-threaded update runs only on rayon workers, so the
//! calling thread, which is one of the engine's threads and not a worker of
//! its pool (see [`share`]), would sleep through it.

use blake3::hazmat::{self, ChainingValue, HasherExt};

use super::batch::Threads;
use super::share::share;
use crate::blobs::BlobSource;
use crate::mode::Mode;

/// Bytes per subtree: a power of two of whole chunks, so every subtree but
/// the last is a complete subtree of the blob's BLAKE3 tree, and the last,
/// starting on a multiple of it, is the tree's rightmost one. A quarter of
/// a MiB gives a 1 MiB blob four, and `blake3` hashes each at its
/// large-input rate.
const SUBTREE_LEN: usize = 256 * 1024;

/// The digest of `data` in `mode`, its subtrees hashed on `threads`.
pub(crate) fn hash_in_subtrees(threads: Threads, mode: Mode, data: &[u8]) -> [u8; 32] {
    let subtrees = Subtrees { data };
    let count = subtrees.count();
    if count < 2 {
        return mode.hash_with_blake3(data);
    }
    let hashing = SubtreeHashing::new(mode);
    let mut chaining_values = vec![[0u8; 32]; count];
    share(threads, &subtrees, &mut chaining_values, |first, slots| {
        for (index, slot) in (first..).zip(slots) {
            let offset = (index * SUBTREE_LEN) as u64;
            *slot = hashing.chaining_value(offset, subtrees.blob(index));
        }
    });
    hashing.root(&chaining_values)
}

/// Subtrees of blobs in one mode: each subtree's chaining value, and a
/// blob's digest from those of its subtrees.
pub(crate) struct SubtreeHashing<'a> {
    mode: Mode<'a>,
    /// The derive-key context's key (zeros in the other modes).
    context_key: [u8; 32],
    fresh: blake3::Hasher,
}

impl<'a> SubtreeHashing<'a> {
    pub(crate) fn new(mode: Mode<'a>) -> SubtreeHashing<'a> {
        let context_key = match mode {
            Mode::DeriveKey(context) => hazmat::hash_derive_key_context(context),
            Mode::Hash | Mode::KeyedHash(_) => [0; 32],
        };
        let fresh = match mode {
            Mode::Hash => blake3::Hasher::new(),
            Mode::KeyedHash(key) => blake3::Hasher::new_keyed(key),
            Mode::DeriveKey(_) => blake3::Hasher::new_from_context_key(&context_key),
        };
        SubtreeHashing {
            mode,
            context_key,
            fresh,
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
        let mut hasher = self.fresh.clone();
        hasher.set_input_offset(offset);
        hasher.update(data);
        hasher.finalize_non_root()
    }

    /// The digest of a blob from the chaining values of its consecutive
    /// subtrees (at least two), each but the last holding the same power
    /// of two of chunks and the last at most as many.
    pub(crate) fn root(&self, children: &[ChainingValue]) -> [u8; 32] {
        let mode = self.merge_mode();
        let (left, right) = children.split_at(left_count(children.len()));
        let (left, right) = (merge(left, mode), merge(right, mode));
        *hazmat::merge_subtrees_root(&left, &right, mode).as_bytes()
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

/// A blob cut into [`SUBTREE_LEN`] pieces, the last one shorter or equal.
struct Subtrees<'a> {
    data: &'a [u8],
}

impl BlobSource for Subtrees<'_> {
    fn count(&self) -> usize {
        self.data.len().div_ceil(SUBTREE_LEN)
    }

    fn blob(&self, index: usize) -> &[u8] {
        let start = index * SUBTREE_LEN;
        &self.data[start..(start + SUBTREE_LEN).min(self.data.len())]
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn left_count_is_the_largest_power_of_two_below() {
        for count in 2..300usize {
            let left = left_count(count);
            assert!(left.is_power_of_two() && left < count && 2 * left >= count);
        }
    }
}
