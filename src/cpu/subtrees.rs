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
    let context_key = match mode {
        Mode::DeriveKey(context) => hazmat::hash_derive_key_context(context),
        Mode::Hash | Mode::KeyedHash(_) => [0; 32],
    };
    let (merge_mode, fresh) = match mode {
        Mode::Hash => (hazmat::Mode::Hash, blake3::Hasher::new()),
        Mode::KeyedHash(key) => (hazmat::Mode::KeyedHash(key), blake3::Hasher::new_keyed(key)),
        Mode::DeriveKey(_) => (
            hazmat::Mode::DeriveKeyMaterial(&context_key),
            blake3::Hasher::new_from_context_key(&context_key),
        ),
    };
    let mut chaining_values = vec![[0u8; 32]; count];
    share(threads, &subtrees, &mut chaining_values, |first, slots| {
        for (index, slot) in (first..).zip(slots) {
            let mut hasher = fresh.clone();
            hasher.set_input_offset((index * SUBTREE_LEN) as u64);
            hasher.update(subtrees.blob(index));
            *slot = hasher.finalize_non_root();
        }
    });
    let (left, right) = chaining_values.split_at(left_count(count));
    let (left, right) = (merge(left, merge_mode), merge(right, merge_mode));
    *hazmat::merge_subtrees_root(&left, &right, merge_mode).as_bytes()
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
