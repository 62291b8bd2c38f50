//! [`PinnedBuffer`]: host memory the engine's GPU copies batches from where
//! they lie, for callers who can write their blobs there in the first place.

use std::fmt;
use std::ops::{Deref, DerefMut};

use crate::error::{Error, ErrorKind};

/// A byte buffer for batches, in pinned host memory of an engine's GPU
/// where it has one ([`Engine::pinned_buffer`](crate::Engine::pinned_buffer)).
///
/// Hashing records, or packed blobs of any lengths, that lie in it (any
/// slice of it) skips the copying of slabs, the step that holds batches in
/// ordinary memory to a fraction of the bus: the GPU copies each slab
/// straight from the buffer. Records (and packed blobs of one length) of up
/// to 1 KiB need nothing else; other packed blobs need a table of where
/// each starts (8 bytes a blob, written by the CPU). Blobs
/// given as slices are hashed as they would be from a `Vec`, and so are
/// packed blobs of which over an eighth of the bytes belong to blobs the
/// GPU leaves to the CPU (in a split). So are all batches where the engine
/// has no GPU, or one that cannot pin host memory (other than Vulkan, or
/// the direct upload): the buffer is then ordinary memory, which
/// [`is_pinned`](Self::is_pinned) tells.
///
/// It derefs to `[u8]`: fill it like a slice (reading files into it, say),
/// then pass it, or a slice of it, to the engine's hash calls. It is
/// zeroed when made.
///
/// It also takes digests: where a call's output slots lie in a pinned
/// buffer ([`as_digests_mut`](Self::as_digests_mut)), from a 4-byte
/// boundary, the GPU copies each slab's digests straight into them, and no
/// core copies them out of mapped memory (for 64-byte blobs, half as many
/// bytes as went in). So does
/// [`hash_gpu_blobs_into`](crate::Engine::hash_gpu_blobs_into) for
/// records; packed blobs there are read back as usual, as offsets the GPU
/// finds bad must leave the slots untouched.
pub struct PinnedBuffer {
    memory: Memory,
}

enum Memory {
    Heap(Vec<u8>),
    #[cfg(feature = "gpu")]
    Pinned(crate::gpu::PinnedMemory),
}

impl PinnedBuffer {
    /// `len` zeroed bytes of ordinary memory; an error rather than an
    /// abort where there is not that much.
    pub(crate) fn heap(len: usize) -> Result<PinnedBuffer, Error> {
        // Asked fallibly first, then taken zeroed from the allocator, whose
        // pages the kernel zeroes as they are first touched: zeroing a
        // reserved `Vec` instead touched them all at once, on one thread
        // (1 GiB: 0.41-0.53 s to allocate, then 0.11 s to fill, against
        // 0.1 ms and 0.42 s).
        Vec::<u8>::new()
            .try_reserve_exact(len)
            .map_err(|_| ErrorKind::OutOfMemory {
                what: "a buffer".to_owned(),
                bytes: len,
            })?;
        Ok(PinnedBuffer {
            memory: Memory::Heap(vec![0; len]),
        })
    }

    #[cfg(feature = "gpu")]
    pub(crate) fn pinned(memory: crate::gpu::PinnedMemory) -> PinnedBuffer {
        PinnedBuffer {
            memory: Memory::Pinned(memory),
        }
    }

    /// Whether the buffer is in pinned memory of a GPU (else, ordinary
    /// memory).
    pub fn is_pinned(&self) -> bool {
        !matches!(self.memory, Memory::Heap(_))
    }

    /// The buffer as 32-byte digest slots (the whole slots in it), to hash
    /// into.
    ///
    /// ```
    /// let engine = blake3_batch::Engine::builder().build()?;
    /// let mut digests = engine.pinned_buffer(32 * 2)?;
    /// let data = [7u8; 128];
    /// engine.hash_records_into(blake3_batch::Mode::Hash, &data, 64, digests.as_digests_mut())?;
    /// assert_eq!(digests.as_digests()[1], *blake3::hash(&[7; 64]).as_bytes());
    /// # Ok::<(), blake3_batch::Error>(())
    /// ```
    pub fn as_digests_mut(&mut self) -> &mut [[u8; 32]] {
        self.as_chunks_mut::<32>().0
    }

    /// The buffer as 32-byte digest slots (the whole slots in it).
    pub fn as_digests(&self) -> &[[u8; 32]] {
        self.as_chunks::<32>().0
    }
}

impl Deref for PinnedBuffer {
    type Target = [u8];

    fn deref(&self) -> &[u8] {
        match &self.memory {
            Memory::Heap(bytes) => bytes,
            #[cfg(feature = "gpu")]
            Memory::Pinned(memory) => memory.bytes(),
        }
    }
}

impl DerefMut for PinnedBuffer {
    fn deref_mut(&mut self) -> &mut [u8] {
        match &mut self.memory {
            Memory::Heap(bytes) => bytes,
            #[cfg(feature = "gpu")]
            Memory::Pinned(memory) => memory.bytes_mut(),
        }
    }
}

impl AsRef<[u8]> for PinnedBuffer {
    fn as_ref(&self) -> &[u8] {
        self
    }
}

impl AsMut<[u8]> for PinnedBuffer {
    fn as_mut(&mut self) -> &mut [u8] {
        self
    }
}

impl fmt::Debug for PinnedBuffer {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("PinnedBuffer")
            .field("len", &self.len())
            .field("pinned", &self.is_pinned())
            .finish()
    }
}
