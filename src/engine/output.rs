//! What the hashers that take their inputs one at a time give for each
//! ([`FileHasher`](super::FileHasher), [`BlobHasher`](super::BlobHasher)):
//! a 32-byte digest, or an `OutputReader` of extended output.

use std::fs::File;

use super::Engine;
use crate::blobs::Packed;
use crate::error::Error;
use crate::mode::Mode;

/// What a [`FileHasher`](super::FileHasher) or
/// [`BlobHasher`](super::BlobHasher) gives for each input: its 32-byte
/// digest (`[u8; 32]`, from [`Engine::file_hasher`] and
/// [`Engine::blob_hasher`]), or its extended output, a
/// [`blake3::OutputReader`] to read any number of bytes from (their
/// `_xof` forms). Implemented by those two types only.
pub trait HasherOutput: Clone + Send + sealed::Sealed {
    /// Replaces `outputs` with those of the packed blobs `data` cut at
    /// `offsets` (checked by the caller, at least two); its capacity is
    /// kept from batch to batch.
    #[doc(hidden)]
    fn hash_batch_into(
        engine: &Engine,
        mode: Mode,
        data: &[u8],
        offsets: &[u64],
        outputs: &mut Vec<Self>,
    ) -> Result<(), Error>;
    /// The output of a file's contents, streamed.
    #[doc(hidden)]
    fn hash_file(engine: &Engine, mode: Mode, file: &File) -> Result<Self, Error>;
}

mod sealed {
    pub trait Sealed {}
    impl Sealed for [u8; 32] {}
    impl Sealed for blake3::OutputReader {}
}

impl HasherOutput for [u8; 32] {
    fn hash_batch_into(
        engine: &Engine,
        mode: Mode,
        data: &[u8],
        offsets: &[u64],
        outputs: &mut Vec<Self>,
    ) -> Result<(), Error> {
        outputs.clear();
        outputs.resize(offsets.len() - 1, [0; 32]);
        engine.hash_packed_into(mode, data, offsets, outputs)
    }

    fn hash_file(engine: &Engine, mode: Mode, file: &File) -> Result<Self, Error> {
        engine.hash_file(mode, file)
    }
}

impl HasherOutput for blake3::OutputReader {
    fn hash_batch_into(
        engine: &Engine,
        mode: Mode,
        data: &[u8],
        offsets: &[u64],
        outputs: &mut Vec<Self>,
    ) -> Result<(), Error> {
        let readers = engine.output_readers(mode, &Packed::new(data, offsets)?);
        outputs.clear();
        outputs.extend(readers);
        Ok(())
    }

    fn hash_file(engine: &Engine, mode: Mode, file: &File) -> Result<Self, Error> {
        engine.hash_file_xof(mode, file)
    }
}
