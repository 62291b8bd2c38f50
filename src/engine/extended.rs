//! Outputs of any length per blob ([`Engine::hash_slices_xof_into`]):
//! BLAKE3's extended output, whose first 32 bytes are the digest. Up to
//! 32 bytes are a prefix of the digest and take the engine's own path on
//! its backend; longer outputs need the root node's compression repeated
//! with a counter, which the lane kernels do not keep, so every blob is
//! hashed by `blake3` whole, blobs spread over the engine's threads.

use super::Engine;
use crate::error::{Error, ErrorKind};
use crate::mode::Mode;

/// Blobs handed to one thread at a time for outputs over 32 bytes: enough
/// that a task's overhead is small beside `blake3`'s own per-blob cost,
/// few enough that threads share a batch of mixed lengths evenly.
const BLOBS_PER_TASK: usize = 256;
/// Blobs hashed into one temporary buffer of digests at a time for
/// outputs of up to 32 bytes.
const BLOBS_PER_PIECE: usize = 1 << 16;

impl Engine {
    /// Writes `length` bytes of output for every blob into `out`, back to
    /// back (`blobs.len() * length` bytes): BLAKE3's extended output
    /// (`blake3::Hasher::finalize_xof`) in `mode`, whose first 32 bytes
    /// are the digest that [`hash_slices_into`](Self::hash_slices_into)
    /// gives.
    ///
    /// Outputs of up to 32 bytes are a prefix of each digest and run on
    /// the engine's backend, as fast as full digests. Longer ones hash every
    /// blob with `blake3` on the CPU, blobs side by side on the engine's
    /// threads but not in SIMD lanes, whatever the backend: about the rate
    /// of a `blake3::hash` loop per thread.
    ///
    /// Fails with [`ErrorKind::XofLength`] for a `length` of 0 and with
    /// [`ErrorKind::XofOutputLength`] when `out` is not `blobs.len() *
    /// length` bytes long; on any error nothing is written to `out`.
    ///
    /// ```
    /// use blake3_batch::{Engine, Mode};
    ///
    /// let engine = Engine::builder().build()?;
    /// let blobs = ["ada", "grace"];
    /// let mut out = [0u8; 2 * 64];
    /// engine.hash_slices_xof_into(Mode::Hash, &blobs, 64, &mut out)?;
    /// let mut want = [0u8; 64];
    /// blake3::Hasher::new().update(b"grace").finalize_xof().fill(&mut want);
    /// assert_eq!(out[64..], want);
    /// # Ok::<(), blake3_batch::Error>(())
    /// ```
    pub fn hash_slices_xof_into<B: AsRef<[u8]> + Sync>(
        &self,
        mode: Mode,
        blobs: &[B],
        length: usize,
        out: &mut [u8],
    ) -> Result<(), Error> {
        if length == 0 {
            return Err(ErrorKind::XofLength.into());
        }
        let expected = blobs.len().checked_mul(length);
        if expected != Some(out.len()) {
            return Err(ErrorKind::XofOutputLength {
                blobs: blobs.len(),
                length,
                actual: out.len(),
            }
            .into());
        }
        if length <= 32 {
            self.digest_prefixes(mode, blobs, length, out)
        } else {
            self.extended_outputs(mode, blobs, length, out);
            Ok(())
        }
    }

    /// The first `length` (≤ 32) bytes of every digest, hashed on the
    /// backend in pieces; `out` is written only once every piece is hashed.
    fn digest_prefixes<B: AsRef<[u8]> + Sync>(
        &self,
        mode: Mode,
        blobs: &[B],
        length: usize,
        out: &mut [u8],
    ) -> Result<(), Error> {
        if length == 32 {
            // `out` is a whole number of digests: checked by the caller.
            let (slots, _) = out.as_chunks_mut::<32>();
            return self.hash_slices_into(mode, blobs, slots);
        }
        let mut prefixes = vec![0u8; out.len()];
        let mut digests = vec![[0u8; 32]; blobs.len().min(BLOBS_PER_PIECE)];
        for (piece, prefixes) in blobs
            .chunks(BLOBS_PER_PIECE)
            .zip(prefixes.chunks_mut(BLOBS_PER_PIECE * length))
        {
            let digests = &mut digests[..piece.len()];
            self.hash_slices_into(mode, piece, digests)?;
            for (prefix, digest) in prefixes.chunks_exact_mut(length).zip(digests.iter()) {
                prefix.copy_from_slice(&digest[..length]);
            }
        }
        out.copy_from_slice(&prefixes);
        Ok(())
    }

    /// `length` (> 32) bytes of extended output of every blob, by `blake3`
    /// on the engine's threads.
    fn extended_outputs<B: AsRef<[u8]> + Sync>(
        &self,
        mode: Mode,
        blobs: &[B],
        length: usize,
        out: &mut [u8],
    ) {
        // The derive-key context is hashed once, not once per blob.
        let hasher = match mode {
            Mode::Hash => blake3::Hasher::new(),
            Mode::KeyedHash(key) => blake3::Hasher::new_keyed(key),
            Mode::DeriveKey(context) => blake3::Hasher::new_derive_key(context),
        };
        let tasks: Vec<_> = blobs
            .chunks(BLOBS_PER_TASK)
            .zip(out.chunks_mut(BLOBS_PER_TASK * length))
            .collect();
        self.cpu_threads().for_each(tasks, |(blobs, out)| {
            for (blob, output) in blobs.iter().zip(out.chunks_exact_mut(length)) {
                let mut hasher = hasher.clone();
                hasher.update(blob.as_ref());
                hasher.finalize_xof().fill(output);
            }
        });
    }
}
