//! Input layouts: a slice of blobs, packed bytes with offsets (Arrow style),
//! and fixed-size records. Each is validated once before any blob is hashed
//! (packed offsets on several threads by those threads, see
//! [`crate::offsets`]), so the hashing code never sees an out-of-range blob.

use crate::error::{Error, ErrorKind};
use crate::offsets::{first_step, Scan};

/// Read access to the blobs of a validated batch, by index.
pub(crate) trait BlobSource: Sync {
    /// Whether every blob starts where the one before it ends (packed
    /// offsets, records), which the hardware prefetcher follows as one
    /// stream. A range of such blobs spans from its first start to its last
    /// end, so a source that sets it gives [`bytes`](Self::bytes) as one
    /// subtraction, and a range of a given weight is found by bisection.
    const CONTIGUOUS: bool = false;
    /// Number of blobs.
    fn count(&self) -> usize;
    /// Blob `index` (`index < count()`).
    fn blob(&self, index: usize) -> &[u8];
    /// Blobs `first..first + blobs.len()` into `blobs` (all `< count()`).
    /// Packed offsets and records override it to check bounds once per
    /// group rather than once per blob: on 64-byte blobs the per-blob
    /// lookup was a tenth of the time (AVX-512).
    #[inline]
    fn blobs_into<'s>(&'s self, first: usize, blobs: &mut [&'s [u8]]) {
        for (index, blob) in (first..).zip(blobs) {
            *blob = self.blob(index);
        }
    }
    /// If blobs `start..end` all have one length and lie back to back
    /// (equal-length packed blobs, records): their bytes and that length,
    /// so a work unit can cut them out itself instead of looking up each.
    #[inline]
    fn back_to_back(&self, _start: usize, _end: usize) -> Option<(&[u8], usize)> {
        None
    }
    /// If blobs `start..end` lie back to back (packed offsets, records):
    /// their bytes, which a work unit hints into L2 ahead of its lookups.
    #[inline]
    fn contiguous_bytes(&self, _start: usize, _end: usize) -> Option<&[u8]> {
        None
    }
    /// The length of blob `index`; sources that know it without building
    /// the slice (offsets, fixed-size records) say so, which keeps passes
    /// over every length (work units, batch shape) cheap.
    #[inline]
    fn len(&self, index: usize) -> usize {
        self.blob(index).len()
    }
    /// The total length of blobs `start..end`; one subtraction for packed
    /// offsets and records.
    #[inline]
    fn bytes(&self, start: usize, end: usize) -> usize {
        (start..end).map(|index| self.len(index)).sum()
    }
    /// `None` for a blob to hash. Where blob `index` is instead a subtree
    /// of a longer blob (the GPU's pieces of blobs longer than a slab), the
    /// counter of its first chunk: its result is then that subtree's
    /// chaining value. Only the GPU's slabs honour it, for pieces of more
    /// than one chunk.
    #[inline]
    #[cfg_attr(not(feature = "gpu"), allow(dead_code))]
    fn subtree_at(&self, _index: usize) -> Option<u32> {
        None
    }
}

/// A slice of anything that views as bytes.
pub(crate) struct Slices<'a, B>(pub &'a [B]);

impl<B: AsRef<[u8]> + Sync> BlobSource for Slices<'_, B> {
    #[inline]
    fn count(&self) -> usize {
        self.0.len()
    }

    #[inline]
    fn blob(&self, index: usize) -> &[u8] {
        self.0[index].as_ref()
    }
}

/// An integer type usable as an offset into packed data (`u32` or `u64`, as
/// Arrow's `Binary` and `LargeBinary` arrays use).
pub trait Offset: Copy + Sync + sealed::Sealed {
    /// The offset as `u64`, for error messages.
    fn to_u64(self) -> u64;
}

impl Offset for u32 {
    #[inline]
    fn to_u64(self) -> u64 {
        u64::from(self)
    }
}

impl Offset for u64 {
    #[inline]
    fn to_u64(self) -> u64 {
        self
    }
}

mod sealed {
    pub trait Sealed {}
    impl Sealed for u32 {}
    impl Sealed for u64 {}
}

/// Blobs stored back to back in one buffer; blob `i` is
/// `data[offsets[i]..offsets[i + 1]]`.
pub(crate) struct Packed<'a, O> {
    data: &'a [u8],
    offsets: &'a [O],
    /// The length of every blob, if they all have one.
    equal_len: Option<usize>,
}

impl<'a, O: Offset> Packed<'a, O> {
    /// Checks that `offsets` has at least one entry, never decreases and
    /// stays within `data`.
    pub(crate) fn new(data: &'a [u8], offsets: &'a [O]) -> Result<Self, Error> {
        if offsets.is_empty() {
            return Err(ErrorKind::OffsetsEmpty.into());
        }
        let step = first_step(offsets);
        let equal_len = Scan::of(offsets, step).judge(data, offsets, step)?;
        Ok(Packed::checked(data, offsets, equal_len))
    }

    /// Blobs whose offsets a [`Scan`] judged sound, all `equal_len` long
    /// if that is `Some`.
    pub(crate) fn checked(data: &'a [u8], offsets: &'a [O], equal_len: Option<usize>) -> Self {
        Packed {
            data,
            offsets,
            equal_len,
        }
    }
}

impl<O: Offset> BlobSource for Packed<'_, O> {
    const CONTIGUOUS: bool = true;

    #[inline]
    fn count(&self) -> usize {
        self.offsets.len() - 1
    }

    #[inline]
    fn back_to_back(&self, start: usize, end: usize) -> Option<(&[u8], usize)> {
        let len = self.equal_len?;
        Some((self.contiguous_bytes(start, end)?, len))
    }

    #[inline]
    fn contiguous_bytes(&self, start: usize, end: usize) -> Option<&[u8]> {
        // Validated in `new`: in bounds and fits in usize.
        let bytes = self.offsets[start].to_u64() as usize..self.offsets[end].to_u64() as usize;
        Some(&self.data[bytes])
    }

    #[inline]
    fn blobs_into<'s>(&'s self, first: usize, blobs: &mut [&'s [u8]]) {
        // Validated in `new`: in bounds and fits in usize.
        let offsets = &self.offsets[first..=first + blobs.len()];
        let mut start = offsets[0].to_u64() as usize;
        for (blob, end) in blobs.iter_mut().zip(&offsets[1..]) {
            let end = end.to_u64() as usize;
            *blob = &self.data[start..end];
            start = end;
        }
    }

    #[inline]
    fn blob(&self, index: usize) -> &[u8] {
        // Validated in `new`: in bounds and fits in usize.
        let start = self.offsets[index].to_u64() as usize;
        let end = self.offsets[index + 1].to_u64() as usize;
        &self.data[start..end]
    }

    #[inline]
    fn len(&self, index: usize) -> usize {
        // Validated in `new`: offsets never decrease.
        (self.offsets[index + 1].to_u64() - self.offsets[index].to_u64()) as usize
    }

    #[inline]
    fn bytes(&self, start: usize, end: usize) -> usize {
        (self.offsets[end].to_u64() - self.offsets[start].to_u64()) as usize
    }
}

/// One buffer cut into records of equal size.
pub(crate) struct Records<'a> {
    data: &'a [u8],
    size: usize,
}

impl<'a> Records<'a> {
    /// Checks that `size` is positive and divides `data.len()`.
    pub(crate) fn new(data: &'a [u8], size: usize) -> Result<Self, Error> {
        if size == 0 {
            return Err(ErrorKind::RecordSizeZero.into());
        }
        if !data.len().is_multiple_of(size) {
            return Err(ErrorKind::RecordSizeMismatch {
                data_len: data.len(),
                record_size: size,
            }
            .into());
        }
        Ok(Records { data, size })
    }
}

impl BlobSource for Records<'_> {
    const CONTIGUOUS: bool = true;

    #[inline]
    fn count(&self) -> usize {
        self.data.len() / self.size
    }

    #[inline]
    fn back_to_back(&self, start: usize, end: usize) -> Option<(&[u8], usize)> {
        Some((self.contiguous_bytes(start, end)?, self.size))
    }

    #[inline]
    fn contiguous_bytes(&self, start: usize, end: usize) -> Option<&[u8]> {
        Some(&self.data[start * self.size..end * self.size])
    }

    #[inline]
    fn blobs_into<'s>(&'s self, first: usize, blobs: &mut [&'s [u8]]) {
        let size = self.size;
        let records = &self.data[first * size..(first + blobs.len()) * size];
        for (blob, record) in blobs.iter_mut().zip(records.chunks_exact(size)) {
            *blob = record;
        }
    }

    #[inline]
    fn blob(&self, index: usize) -> &[u8] {
        &self.data[index * self.size..(index + 1) * self.size]
    }

    #[inline]
    fn len(&self, _index: usize) -> usize {
        self.size
    }

    #[inline]
    fn bytes(&self, start: usize, end: usize) -> usize {
        (end - start) * self.size
    }
}

/// Checks that the caller's output slice has one slot per blob.
pub(crate) fn check_output(blobs: usize, out: &[[u8; 32]]) -> Result<(), Error> {
    if out.len() == blobs {
        Ok(())
    } else {
        Err(ErrorKind::OutputLength {
            expected: blobs,
            actual: out.len(),
        }
        .into())
    }
}

/// Some blobs of another source, by index (the large blobs of a GPU batch,
/// hashed on the CPU meanwhile).
pub(crate) struct Subset<'a, S> {
    pub source: &'a S,
    pub indices: &'a [usize],
}

impl<S: BlobSource> BlobSource for Subset<'_, S> {
    #[inline]
    fn count(&self) -> usize {
        self.indices.len()
    }

    #[inline]
    fn blob(&self, index: usize) -> &[u8] {
        self.source.blob(self.indices[index])
    }

    #[inline]
    fn len(&self, index: usize) -> usize {
        self.source.len(self.indices[index])
    }
}

/// A contiguous run of another source's blobs (one side of a split batch).
pub(crate) struct Span<'a, S> {
    pub source: &'a S,
    pub start: usize,
    pub len: usize,
}

impl<S: BlobSource> BlobSource for Span<'_, S> {
    const CONTIGUOUS: bool = S::CONTIGUOUS;

    #[inline]
    fn count(&self) -> usize {
        self.len
    }

    #[inline]
    fn blobs_into<'s>(&'s self, first: usize, blobs: &mut [&'s [u8]]) {
        self.source.blobs_into(self.start + first, blobs);
    }

    #[inline]
    fn back_to_back(&self, start: usize, end: usize) -> Option<(&[u8], usize)> {
        self.source
            .back_to_back(self.start + start, self.start + end)
    }

    #[inline]
    fn contiguous_bytes(&self, start: usize, end: usize) -> Option<&[u8]> {
        self.source
            .contiguous_bytes(self.start + start, self.start + end)
    }

    #[inline]
    fn blob(&self, index: usize) -> &[u8] {
        self.source.blob(self.start + index)
    }

    #[inline]
    fn len(&self, index: usize) -> usize {
        self.source.len(self.start + index)
    }

    #[inline]
    fn bytes(&self, start: usize, end: usize) -> usize {
        self.source.bytes(self.start + start, self.start + end)
    }
}
