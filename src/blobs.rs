//! Input layouts: a slice of blobs, packed bytes with offsets (Arrow style),
//! and fixed-size records. Each is validated once, up front, so the hashing
//! code never sees an out-of-range blob.

use crate::error::{Error, ErrorKind};

/// Read access to the blobs of a validated batch, by index.
pub(crate) trait BlobSource: Sync {
    /// Number of blobs.
    fn count(&self) -> usize;
    /// Blob `index` (`index < count()`).
    fn blob(&self, index: usize) -> &[u8];
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
}

impl<'a, O: Offset> Packed<'a, O> {
    /// Checks that `offsets` has at least one entry, never decreases and
    /// stays within `data`.
    pub(crate) fn new(data: &'a [u8], offsets: &'a [O]) -> Result<Self, Error> {
        let Some(first) = offsets.first() else {
            return Err(ErrorKind::OffsetsEmpty.into());
        };
        let mut previous = first.to_u64();
        for (index, offset) in offsets.iter().enumerate() {
            let offset = offset.to_u64();
            if offset < previous {
                return Err(ErrorKind::OffsetsDecrease {
                    index,
                    previous,
                    offset,
                }
                .into());
            }
            previous = offset;
        }
        // Non-decreasing, so checking the last bounds them all.
        if usize::try_from(previous).map_or(true, |end| end > data.len()) {
            return Err(ErrorKind::OffsetOutOfBounds {
                index: offsets.len() - 1,
                offset: previous,
                data_len: data.len(),
            }
            .into());
        }
        Ok(Packed { data, offsets })
    }
}

impl<O: Offset> BlobSource for Packed<'_, O> {
    #[inline]
    fn count(&self) -> usize {
        self.offsets.len() - 1
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
    #[inline]
    fn count(&self) -> usize {
        self.data.len() / self.size
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
    #[inline]
    fn count(&self) -> usize {
        self.len
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
