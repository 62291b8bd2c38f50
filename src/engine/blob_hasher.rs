//! Blobs pushed one at a time ([`BlobHasher`]): records from a database
//! cursor, an iterator or a network stream, where the caller never holds a
//! whole batch. Each blob is copied into a packed batch, hashed once the
//! batch is full; the digests come back in the order pushed. Extended
//! output ([`Engine::blob_hasher_xof`]) takes the same path, an
//! `OutputReader` per blob.

use super::files::batch_bytes;
use super::output::HasherOutput;
use super::Engine;
use crate::error::Error;
use crate::mode::Mode;

/// Blobs of at least this many bytes are not copied: the batch before one
/// is hashed, then the blob alone, on every thread where it is long enough
/// (the lane kernel gains nothing from a single long blob, and `blake3`
/// hashes it in place as fast).
const DIRECT_BLOB: usize = 1 << 20;
/// A batch is also hashed once it holds this many blobs: 4 MiB of 64-byte
/// blobs, already enough to share among threads.
const BATCH_BLOBS: usize = 64 * 1024;

/// One blob's digest, or the engine's error where hashing its batch failed
/// (a GPU that failed, with [`Backend::Gpu`](crate::Backend::Gpu)).
pub type BlobDigest = Result<[u8; 32], Error>;

/// Hashes blobs pushed one at a time, in batches, and hands each blob's
/// digest (or, from [`Engine::blob_hasher_xof`], its extended output)
/// with its token to an `emit` callback, in the order pushed
/// ([`Engine::blob_hasher`]). It holds at most one batch (16 MiB, or
/// 64 MiB where a GPU may take it, and 64 Ki blobs): each blob is copied
/// into it, so the caller's buffer can be reused as soon as `push` returns.
///
/// `emit` may fail (a write that failed, say): then `push` or `finish`
/// stops and returns that error, and the digests of that batch not yet
/// emitted are dropped.
///
/// ```
/// use blake3_batch::{Engine, Mode};
///
/// let engine = Engine::builder().build()?;
/// let mut hasher = engine.blob_hasher(Mode::Hash);
/// let mut rows = Vec::new();
/// let mut emit = |id: u64, digest: blake3_batch::BlobDigest| {
///     rows.push((id, digest?));
///     Ok::<(), blake3_batch::Error>(())
/// };
/// let mut record = Vec::new();
/// for id in 0..1000u64 {
///     record.clear();
///     record.extend_from_slice(format!("row {id}").as_bytes()); // a cursor's buffer
///     hasher.push(&record, id, &mut emit)?;
/// }
/// hasher.finish(&mut emit)?;
/// assert_eq!(rows[7], (7, *blake3::hash(b"row 7").as_bytes()));
/// # Ok::<(), blake3_batch::Error>(())
/// ```
pub struct BlobHasher<'e, T, D: HasherOutput = [u8; 32]> {
    engine: &'e Engine,
    mode: Mode<'e>,
    /// A batch is hashed once it holds this many bytes.
    batch_bytes: usize,
    /// The batch: the blobs pushed since the last, packed (its capacity
    /// kept from batch to batch).
    data: Vec<u8>,
    /// Where each blob of the batch starts, and where the last ends.
    offsets: Vec<u64>,
    /// Each blob's token, in order.
    tokens: Vec<T>,
    /// Where a batch's outputs go, kept between batches.
    outputs: Vec<D>,
}

impl Engine {
    /// A [`BlobHasher`] in `mode`: push blobs one at a time, each with a
    /// token of the caller's, and get each blob's digest with its token,
    /// in the order pushed, as its batch is hashed. Digests are
    /// bit-identical to [`hash_packed_into`](Self::hash_packed_into)'s of
    /// the same blobs, on the backend this engine runs.
    pub fn blob_hasher<'e, T>(&'e self, mode: Mode<'e>) -> BlobHasher<'e, T> {
        self.new_blob_hasher(mode)
    }

    /// A [`BlobHasher`] that gives each blob's extended output, an
    /// [`OutputReader`](blake3::OutputReader) to read any number of bytes
    /// from, whose first 32 are its digest. Blobs are batched as
    /// [`blob_hasher`](Self::blob_hasher) batches them, then hashed by
    /// `blake3` on the CPU's threads (not in SIMD lanes) whatever the
    /// backend, as [`hash_files_xof`](Self::hash_files_xof) hashes files.
    ///
    /// ```
    /// use blake3_batch::{Engine, Mode};
    ///
    /// let engine = Engine::builder().build()?;
    /// let mut hasher = engine.blob_hasher_xof(Mode::Hash);
    /// let mut keys = Vec::new();
    /// let mut emit = |id: u64, output: Result<blake3::OutputReader, blake3_batch::Error>| {
    ///     let mut key = [0u8; 64];
    ///     output?.fill(&mut key);
    ///     keys.push((id, key));
    ///     Ok::<(), blake3_batch::Error>(())
    /// };
    /// for id in 0..100u64 {
    ///     hasher.push(format!("row {id}").as_bytes(), id, &mut emit)?;
    /// }
    /// hasher.finish(&mut emit)?;
    /// let mut want = [0u8; 64];
    /// blake3::Hasher::new().update(b"row 7").finalize_xof().fill(&mut want);
    /// assert_eq!(keys[7], (7, want));
    /// # Ok::<(), blake3_batch::Error>(())
    /// ```
    pub fn blob_hasher_xof<'e, T>(
        &'e self,
        mode: Mode<'e>,
    ) -> BlobHasher<'e, T, blake3::OutputReader> {
        self.new_blob_hasher(mode)
    }

    fn new_blob_hasher<'e, T, D: HasherOutput>(&'e self, mode: Mode<'e>) -> BlobHasher<'e, T, D> {
        BlobHasher {
            engine: self,
            mode,
            batch_bytes: batch_bytes(self),
            data: Vec::new(),
            offsets: vec![0],
            tokens: Vec::new(),
            outputs: Vec::new(),
        }
    }
}

impl<T, D: HasherOutput> BlobHasher<'_, T, D> {
    /// Adds a copy of `blob`. Its digest, and those of the blobs before
    /// it, come through `emit` once its batch is hashed: in this call if
    /// it fills the batch, else in a later one or in
    /// [`finish`](Self::finish).
    pub fn push<E>(
        &mut self,
        blob: &[u8],
        token: T,
        emit: &mut impl FnMut(T, Result<D, Error>) -> Result<(), E>,
    ) -> Result<(), E> {
        if blob.len() >= DIRECT_BLOB {
            // In its turn: the batch before it first.
            self.finish(emit)?;
            let offsets = [0, blob.len() as u64];
            let hashed =
                D::hash_batch_into(self.engine, self.mode, blob, &offsets, &mut self.outputs);
            return emit(token, hashed.map(|()| self.outputs[0].clone()));
        }
        if self.data.len() + blob.len() > self.batch_bytes {
            self.finish(emit)?;
        }
        self.data.extend_from_slice(blob);
        self.offsets.push(self.data.len() as u64);
        self.tokens.push(token);
        if self.tokens.len() >= BATCH_BLOBS || self.data.len() >= self.batch_bytes {
            self.finish(emit)?;
        }
        Ok(())
    }

    /// Hashes the blobs pushed so far and emits their digests. The hasher
    /// can then take more blobs.
    pub fn finish<E>(
        &mut self,
        emit: &mut impl FnMut(T, Result<D, Error>) -> Result<(), E>,
    ) -> Result<(), E> {
        if self.tokens.is_empty() {
            return Ok(());
        }
        let hashed = D::hash_batch_into(
            self.engine,
            self.mode,
            &self.data,
            &self.offsets,
            &mut self.outputs,
        );
        self.data.clear();
        self.offsets.truncate(1);
        // Every token gets its output or the error, whatever `outputs`
        // holds after a failure.
        match hashed {
            Ok(()) => {
                for (token, output) in self.tokens.drain(..).zip(self.outputs.drain(..)) {
                    emit(token, Ok(output))?;
                }
            }
            Err(error) => {
                for token in self.tokens.drain(..) {
                    emit(token, Err(error.clone()))?;
                }
            }
        }
        Ok(())
    }

    /// Blobs pushed whose digests have not been emitted yet.
    pub fn pending(&self) -> usize {
        self.tokens.len()
    }
}
