//! Blobs longer than a slab, on the GPU: each is cut into subtrees of a
//! power of two of chunks that one slab holds, which stream through the
//! slabs as a batch of their own. The slabs hash each as a blob of chunks
//! counted from where it starts, its top parent without `ROOT`
//! ([`LongBlob::subtree_at`](super::tree::LongBlob)), which gives its
//! chaining value; the host then joins each blob's subtrees into its digest
//! as `cpu/subtrees.rs` joins the CPU's.
//!
//! Every subtree but a blob's last holds the same power of two of chunks,
//! so each is a whole subtree of the blob's BLAKE3 tree and the last its
//! rightmost one. A last subtree of one chunk is hashed on the host: a
//! slab hashes a blob of one chunk as a root, and its one chunk costs the
//! CPU a microsecond.

use super::backend::Gpu;
use crate::blobs::BlobSource;
use crate::consts::CHUNK_LEN;
use crate::cpu::batch::Threads;
use crate::cpu::SubtreeHashing;
use crate::error::Error;
use crate::mode::{Mode, ModeWords};

/// Chunks in each subtree of blobs longer than `max_blob` (a slab's data):
/// the largest power of two that fits, `None` where that is one chunk
/// (slabs too small to hold a tree of two).
fn subtree_chunks(max_blob: usize) -> Option<usize> {
    let chunks = max_blob / CHUNK_LEN;
    (chunks >= 2).then(|| 1 << chunks.ilog2())
}

impl Gpu {
    /// The bytes of each subtree that slabs hash (a power of two of
    /// chunks): `None` where slabs hold less than two chunks.
    pub(crate) fn subtree_bytes(&self) -> Option<usize> {
        subtree_chunks(self.max_blob()).map(|chunks| chunks * CHUNK_LEN)
    }

    /// Whether [`hash_pieces`](Self::hash_pieces) takes pieces of an input
    /// that end `end` bytes into it: within 2^32 chunks, the chunk counter
    /// the slabs carry.
    pub(crate) fn takes_pieces_up_to(&self, end: u64) -> bool {
        end.div_ceil(CHUNK_LEN as u64) <= 1 << 32
    }

    /// The chaining values of `data`'s consecutive pieces of
    /// [`subtree_bytes`](Self::subtree_bytes) each (the last may be
    /// shorter), `data` starting `offset` bytes into its input on a
    /// multiple of that and ending where
    /// [`takes_pieces_up_to`](Self::takes_pieces_up_to) allows: one per
    /// piece into `out`, packed on `threads`. Each piece is a subtree of
    /// the input, hashed as a long blob's subtrees are; a last piece of one
    /// chunk is hashed on the host.
    pub(crate) fn hash_pieces(
        &self,
        (hashing, words): (&SubtreeHashing, ModeWords),
        offset: u64,
        data: &[u8],
        out: &mut [[u8; 32]],
        threads: Threads,
    ) -> Result<(), Error> {
        let len = self.subtree_bytes().expect("the stream checked the slabs");
        let count = data.len().div_ceil(len);
        debug_assert_eq!(out.len(), count);
        // A last piece of one chunk is not a tree a slab can hash.
        let lone_chunk =
            (count > 0 && data.len() - (count - 1) * len <= CHUNK_LEN).then(|| (count - 1) * len);
        let pieces = InputPieces {
            data,
            len,
            count: count - usize::from(lone_chunk.is_some()),
            first_chunk: offset / CHUNK_LEN as u64,
        };
        self.hash(words, &pieces, len, &mut out[..pieces.count], 0, threads)?;
        if let Some(start) = lone_chunk {
            out[count - 1] = hashing.chaining_value(offset + start as u64, &data[start..]);
        }
        Ok(())
    }

    /// Whether [`hash_as_subtrees`](Self::hash_as_subtrees) takes a blob
    /// of `len` bytes: one longer than a slab, of at most 2^32 chunks
    /// (the chunk counter the slabs carry), where slabs hold two chunks.
    pub(crate) fn takes_as_subtrees(&self, len: usize) -> bool {
        let max_blob = self.max_blob();
        len > max_blob
            && subtree_chunks(max_blob).is_some()
            && (len.div_ceil(CHUNK_LEN) as u64) <= 1 << 32
    }

    /// Hashes blobs `indices` of `source` (each one that
    /// [`takes_as_subtrees`](Self::takes_as_subtrees)) in `mode` (whose
    /// words are `words`) into their slots of `out`, their subtrees packed
    /// on `threads`. The last batch's timings then cover this call and
    /// the one just before it, which hashed the batch's other blobs.
    pub(crate) fn hash_as_subtrees<S: BlobSource>(
        &self,
        (mode, words): (Mode, ModeWords),
        source: &S,
        indices: &[usize],
        out: &mut [[u8; 32]],
        threads: Threads,
    ) -> Result<(), Error> {
        let max_blob = self.max_blob();
        let chunks = subtree_chunks(max_blob).expect("takes_as_subtrees checked the slabs");
        let before = self.last_timings();
        let subtrees = Subtrees::of(source, indices, chunks * CHUNK_LEN);
        let mut chaining_values = vec![[0u8; 32]; subtrees.pieces.len()];
        self.hash(words, &subtrees, max_blob, &mut chaining_values, 0, threads)?;
        let hashing = SubtreeHashing::new(mode);
        let mut children = Vec::new();
        for blob in &subtrees.blobs {
            children.clear();
            children.extend_from_slice(&chaining_values[blob.pieces.clone()]);
            if let Some(offset) = blob.last_chunk {
                let data = source.blob(blob.index);
                children.push(hashing.chaining_value(offset as u64, &data[offset..]));
            }
            out[blob.index] = hashing.root(&children);
        }
        // One call's timings, counting the blobs, not their subtrees, as
        // the GPU's.
        let before = before.unwrap_or_default();
        let mut timings = before.clone().then(self.last_timings().unwrap_or_default());
        timings.cpu_blobs = before.cpu_blobs.saturating_sub(indices.len());
        timings.gpu_blobs = before.gpu_blobs + indices.len();
        self.set_last_timings(timings);
        Ok(())
    }
}

/// Blobs cut into subtrees: a batch whose blobs are the subtrees that the
/// slabs hash (not the one-chunk last ones).
struct Subtrees<'a, S> {
    source: &'a S,
    /// (blob, first byte, bytes) of each subtree.
    pieces: Vec<(usize, usize, usize)>,
    blobs: Vec<CutBlob>,
}

/// One blob's place among the subtrees.
struct CutBlob {
    index: usize,
    /// Its subtrees in [`Subtrees::pieces`].
    pieces: std::ops::Range<usize>,
    /// Where its last subtree starts, where that is a single chunk.
    last_chunk: Option<usize>,
}

impl<'a, S: BlobSource> Subtrees<'a, S> {
    /// Blobs `indices` of `source` in subtrees of `bytes` (a power of two
    /// of chunks) each.
    fn of(source: &'a S, indices: &[usize], bytes: usize) -> Subtrees<'a, S> {
        let mut pieces = Vec::new();
        let mut blobs = Vec::with_capacity(indices.len());
        for &index in indices {
            let len = source.len(index);
            let first = pieces.len();
            let mut last_chunk = None;
            for start in (0..len).step_by(bytes) {
                let piece = (len - start).min(bytes);
                match piece > CHUNK_LEN {
                    true => pieces.push((index, start, piece)),
                    false => last_chunk = Some(start),
                }
            }
            blobs.push(CutBlob {
                index,
                pieces: first..pieces.len(),
                last_chunk,
            });
        }
        Subtrees {
            source,
            pieces,
            blobs,
        }
    }
}

impl<S: BlobSource> BlobSource for Subtrees<'_, S> {
    fn count(&self) -> usize {
        self.pieces.len()
    }

    fn blob(&self, index: usize) -> &[u8] {
        let (blob, start, len) = self.pieces[index];
        &self.source.blob(blob)[start..start + len]
    }

    fn len(&self, index: usize) -> usize {
        self.pieces[index].2
    }

    fn subtree_at(&self, index: usize) -> Option<u32> {
        let (_, start, _) = self.pieces[index];
        // Within u32: `takes_as_subtrees` caps a blob at 2^32 chunks.
        Some((start / CHUNK_LEN) as u32)
    }
}

/// Consecutive pieces of one input, back to back: a window of it that
/// starts `first_chunk` chunks in, each piece `len` bytes (the last may be
/// shorter) and hashed as a subtree.
struct InputPieces<'a> {
    data: &'a [u8],
    len: usize,
    /// The pieces the slabs hash: all, or all but a last one of one chunk.
    count: usize,
    first_chunk: u64,
}

impl InputPieces<'_> {
    fn end(&self, index: usize) -> usize {
        ((index + 1) * self.len).min(self.data.len())
    }
}

impl BlobSource for InputPieces<'_> {
    const CONTIGUOUS: bool = true;

    fn count(&self) -> usize {
        self.count
    }

    fn blob(&self, index: usize) -> &[u8] {
        &self.data[index * self.len..self.end(index)]
    }

    fn len(&self, index: usize) -> usize {
        self.end(index) - index * self.len
    }

    fn bytes(&self, start: usize, end: usize) -> usize {
        match end > start {
            true => self.end(end - 1) - start * self.len,
            false => 0,
        }
    }

    fn contiguous_bytes(&self, start: usize, end: usize) -> Option<&[u8]> {
        let stop = if end > start {
            self.end(end - 1)
        } else {
            start * self.len
        };
        Some(&self.data[start * self.len..stop])
    }

    fn subtree_at(&self, index: usize) -> Option<u32> {
        // Within u32: `takes_pieces_up_to` caps the input at 2^32 chunks.
        let chunk = self.first_chunk + (index * (self.len / CHUNK_LEN)) as u64;
        Some(chunk as u32)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::blobs::Slices;

    #[test]
    fn subtrees_are_the_largest_power_of_two_of_chunks_a_slab_holds() {
        assert_eq!(subtree_chunks(1024), None);
        assert_eq!(subtree_chunks(2047), None);
        assert_eq!(subtree_chunks(2048), Some(2));
        assert_eq!(subtree_chunks(17 << 20), Some(16 << 10));
        assert_eq!(subtree_chunks(16 << 20), Some(16 << 10));
    }

    #[test]
    fn blobs_are_cut_at_every_subtree_and_a_lone_last_chunk_is_kept_apart() {
        let lengths = [8192, 8193, 9216, 9217, 10 * 1024 + 5, 4097];
        let blobs: Vec<Vec<u8>> = lengths.iter().map(|&len| vec![0; len]).collect();
        let source = Slices(&blobs);
        let subtrees = Subtrees::of(&source, &[0, 1, 2, 3, 4, 5], 4096);
        let cut: Vec<_> = subtrees
            .blobs
            .iter()
            .map(|blob| {
                let pieces = &subtrees.pieces[blob.pieces.clone()];
                let lens: Vec<usize> = pieces.iter().map(|piece| piece.2).collect();
                (lens, blob.last_chunk)
            })
            .collect();
        assert_eq!(
            cut,
            [
                (vec![4096, 4096], None),
                (vec![4096, 4096], Some(8192)),
                (vec![4096, 4096], Some(8192)),
                (vec![4096, 4096, 1025], None),
                (vec![4096, 4096, 2053], None),
                (vec![4096], Some(4096)),
            ]
        );
        for index in 0..subtrees.count() {
            let (_, start, _) = subtrees.pieces[index];
            assert_eq!(subtrees.subtree_at(index), Some((start / 1024) as u32));
            assert_eq!(subtrees.blob(index).len(), subtrees.len(index));
        }
    }
}
