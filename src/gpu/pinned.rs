//! Pinned host memory the caller fills and the GPU copies from where it
//! lies ([`crate::PinnedBuffer`]): a slab whose blobs are already laid out
//! there as the shader reads them is one DMA copy, with no core packing it.
//!
//! On an H200 the packing of slabs, not the bus, held batches from host
//! memory to about 26 GB/s; having the driver pin the caller's own pages
//! for each batch instead (`VK_EXT_external_memory_host`) was slower still,
//! 5.6 GB/s, as pinning and unpinning ran at about 13 GB/s. Memory pinned
//! once and reused is what CUDA programs use for the same reason.

use std::ops::Range;
use std::sync::{Arc, Mutex};

use super::host_memory::HostBuffer;

/// The pinned buffers of one GPU, by address, so that a batch whose bytes
/// lie in one is found from the bytes alone.
#[derive(Default)]
pub(crate) struct Registry {
    buffers: Mutex<Vec<Registered>>,
}

struct Registered {
    addresses: Range<usize>,
    buffer: wgpu::Buffer,
}

impl Registry {
    /// The pinned buffer that holds all of `bytes`, if any.
    pub(crate) fn find(&self, bytes: &[u8]) -> Option<InPlace> {
        let wanted = addresses(bytes);
        let buffers = self.buffers.lock().unwrap_or_else(|p| p.into_inner());
        buffers
            .iter()
            .find(|entry| {
                entry.addresses.start <= wanted.start && wanted.end <= entry.addresses.end
            })
            .map(|entry| InPlace {
                addresses: entry.addresses.clone(),
                buffer: entry.buffer.clone(),
            })
    }
}

/// Pinned host memory of one GPU, registered while it lives.
pub(crate) struct PinnedMemory {
    /// A whole number of words, so that the GPU, which copies whole words,
    /// can copy the last of the `len` bytes asked for.
    memory: HostBuffer,
    len: usize,
    registry: Arc<Registry>,
}

impl PinnedMemory {
    /// `len` bytes (at least one), zeroed on `threads`, registered in
    /// `registry`; `Err` says why there are none.
    pub(crate) fn new(
        device: &wgpu::Device,
        registry: Arc<Registry>,
        len: usize,
        zero: impl FnOnce(&mut [u8]),
    ) -> Result<PinnedMemory, String> {
        let words = len.next_multiple_of(4);
        let mut memory = HostBuffer::new(device, "pinned buffer", words as u64)?;
        // SAFETY: the buffer is new; no command has used it.
        let bytes = unsafe { memory.bytes_mut() };
        // Mapped memory starts with whatever the driver left there, which
        // Rust may not read before it is written.
        zero(bytes);
        let entry = Registered {
            addresses: addresses(bytes),
            buffer: memory.buffer().clone(),
        };
        registry
            .buffers
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .push(entry);
        Ok(PinnedMemory {
            memory,
            len,
            registry,
        })
    }

    pub(crate) fn bytes(&self) -> &[u8] {
        // SAFETY: zeroed when made.
        unsafe { &self.memory.bytes()[..self.len] }
    }

    /// The bytes, to fill.
    pub(crate) fn bytes_mut(&mut self) -> &mut [u8] {
        // SAFETY: the GPU only reads this buffer within a call that borrows
        // the bytes it reads, and writes it (digests) within a call that
        // borrows mutably the bytes it writes; both wait for every copy they
        // submitted before they return, and `&mut self` rules either out.
        unsafe { &mut self.memory.bytes_mut()[..self.len] }
    }
}

impl Drop for PinnedMemory {
    /// Unregisters the buffer before `wgpu` frees it.
    fn drop(&mut self) {
        let start = self.bytes().as_ptr() as usize;
        self.registry
            .buffers
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .retain(|entry| entry.addresses.start != start);
    }
}

/// Bytes of a batch in a pinned buffer: slabs of its records copy from the
/// buffer where they lie, and digests are copied into it where their slots
/// lie.
pub(crate) struct InPlace {
    addresses: Range<usize>,
    buffer: wgpu::Buffer,
}

impl InPlace {
    /// Whether `part` lies within the buffer.
    pub(crate) fn holds(&self, part: &[u8]) -> bool {
        let part = addresses(part);
        self.addresses.start <= part.start && part.end <= self.addresses.end
    }

    /// The addresses of the whole words of the buffer that hold `part`
    /// (the GPU copies whole words), if the buffer holds them.
    pub(crate) fn words_holding(&self, part: &Range<usize>) -> Option<Range<usize>> {
        // The buffer starts on a page: its words are those of the address
        // space.
        let words = part.start / 4 * 4..part.end.next_multiple_of(4);
        let holds = self.addresses.start <= words.start && words.end <= self.addresses.end;
        holds.then_some(words)
    }

    /// The buffer and the offset in it of the addresses `part` (within it).
    pub(crate) fn place(&self, part: &Range<usize>) -> (&wgpu::Buffer, u64) {
        (&self.buffer, (part.start - self.addresses.start) as u64)
    }
}

/// The addresses of `bytes`.
pub(crate) fn addresses(bytes: &[u8]) -> Range<usize> {
    let range = bytes.as_ptr_range();
    range.start as usize..range.end as usize
}
