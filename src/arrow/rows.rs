//! The rows of a binary, string, number or list array as the engine reads
//! them, borrowed from the array's buffers: Arrow's offsets as packed
//! offsets, fixed-size values and numbers as records, views as slices.

use std::borrow::Cow;
use std::ops::Range;

use arrow_array::cast::AsArray;
use arrow_array::types::{BinaryViewType, ByteViewType, StringViewType};
use arrow_array::{Array, GenericByteViewArray};
use arrow_buffer::{Buffer, NullBuffer};
use arrow_schema::DataType;

use super::lists::{list_rows, value_bytes};
use crate::{Engine, Error, ErrorKind, Mode};

/// Whether each value of this type is one row of bytes: binary or string
/// (of any layout), or a fixed-width number (its little-endian bytes;
/// booleans, one bit each, are not).
pub(super) fn is_value_type(data_type: &DataType) -> bool {
    is_byte_type(data_type) || data_type.primitive_width().is_some()
}

/// Whether values of this type are bytes (binary or string, of any
/// layout).
fn is_byte_type(data_type: &DataType) -> bool {
    matches!(
        data_type,
        DataType::Binary
            | DataType::LargeBinary
            | DataType::Utf8
            | DataType::LargeUtf8
            | DataType::BinaryView
            | DataType::Utf8View
            | DataType::FixedSizeBinary(_)
    )
}

/// The rows of one array, borrowed from its buffers.
pub(super) enum Rows<'a> {
    /// Arrow offsets into one values buffer (Binary/String: i32 as u32).
    Packed32 { data: &'a [u8], offsets: &'a [u32] },
    /// LargeBinary/LargeString offsets (i64 as u64), or a list's offsets
    /// counted in bytes.
    Packed64 {
        data: &'a [u8],
        offsets: Cow<'a, [u64]>,
    },
    /// FixedSizeBinary values, fixed-size lists or numbers, back to back.
    Records {
        data: &'a [u8],
        size: usize,
        count: usize,
    },
    /// BinaryView/StringView values (inline or in data buffers); null rows
    /// are read as empty.
    Slices(Vec<&'a [u8]>),
    /// A list view's rows of numbers: each row's bytes, as a start and an
    /// end in one values buffer (in any order, overlapping).
    Spans {
        data: &'a [u8],
        spans: Vec<(u64, u64)>,
    },
}

impl<'a> Rows<'a> {
    /// The rows of a binary, string, number or list-of-numbers array;
    /// `None` for any other.
    pub(super) fn of(array: &'a dyn Array) -> Option<Rows<'a>> {
        Some(match array.data_type() {
            DataType::Binary => {
                let array = array.as_binary::<i32>();
                packed32(array.values(), array.value_offsets())
            }
            DataType::Utf8 => {
                let array = array.as_string::<i32>();
                packed32(array.values(), array.value_offsets())
            }
            DataType::LargeBinary => {
                let array = array.as_binary::<i64>();
                packed64(array.values(), array.value_offsets())
            }
            DataType::LargeUtf8 => {
                let array = array.as_string::<i64>();
                packed64(array.values(), array.value_offsets())
            }
            DataType::FixedSizeBinary(_) => {
                let array = array.as_fixed_size_binary();
                Rows::Records {
                    data: array.value_data(),
                    size: array.value_length() as usize,
                    count: array.len(),
                }
            }
            DataType::BinaryView => views(array.as_byte_view::<BinaryViewType>()),
            DataType::Utf8View => views(array.as_byte_view::<StringViewType>()),
            data_type => match data_type.primitive_width() {
                // A number is its bytes as Arrow lays them out
                // (little-endian), as one value of a list of numbers is.
                Some(size) => Rows::Records {
                    data: value_bytes(array)?,
                    size,
                    count: array.len(),
                },
                None => return list_rows(array),
            },
        })
    }

    pub(super) fn len(&self) -> usize {
        match self {
            Rows::Packed32 { offsets, .. } => offsets.len().saturating_sub(1),
            Rows::Packed64 { offsets, .. } => offsets.len().saturating_sub(1),
            Rows::Records { count, .. } => *count,
            Rows::Slices(slices) => slices.len(),
            Rows::Spans { spans, .. } => spans.len(),
        }
    }

    /// Row `row`'s bytes, or the error that says why the array's offsets
    /// or records do not hold it (as the engine would report them).
    pub(super) fn row(&self, row: usize) -> Result<&'a [u8], Error> {
        match self {
            Rows::Packed32 { data, offsets } => bytes_between(
                data,
                row,
                u64::from(offsets[row]),
                u64::from(offsets[row + 1]),
            ),
            Rows::Packed64 { data, offsets } => {
                bytes_between(data, row, offsets[row], offsets[row + 1])
            }
            Rows::Records { data, size, .. } => {
                bytes_between(data, row, (row * size) as u64, ((row + 1) * size) as u64)
            }
            Rows::Slices(slices) => Ok(slices[row]),
            Rows::Spans { data, spans } => {
                let (start, end) = spans[row];
                bytes_between(data, row, start, end)
            }
        }
    }

    /// Calls `f` with each row of `rows`, numbered from 0, and its bytes
    /// (`None` where `nulls` holds it null), or returns the error
    /// [`Rows::row`] gives for the first valid row the array does not
    /// hold. One loop per layout, for callers that visit every row.
    pub(super) fn for_each_row(
        &self,
        rows: Range<usize>,
        nulls: Option<&NullBuffer>,
        mut f: impl FnMut(usize, Option<&'a [u8]>),
    ) -> Result<(), Error> {
        let is_valid = |row: usize| nulls.is_none_or(|nulls| nulls.is_valid(row));
        match self {
            Rows::Packed32 { data, offsets } => {
                for (index, row) in rows.enumerate() {
                    let (start, end) = (u64::from(offsets[row]), u64::from(offsets[row + 1]));
                    let value = is_valid(row).then(|| bytes_between(data, row, start, end));
                    f(index, value.transpose()?);
                }
            }
            Rows::Packed64 { data, offsets } => {
                for (index, row) in rows.enumerate() {
                    let (start, end) = (offsets[row], offsets[row + 1]);
                    let value = is_valid(row).then(|| bytes_between(data, row, start, end));
                    f(index, value.transpose()?);
                }
            }
            Rows::Records { data, size, .. } => {
                // Every record of `rows` lies in `data` where the last does.
                let end = (rows.end * size) as u64;
                bytes_between(data, rows.end.saturating_sub(1), 0, end)?;
                for (index, row) in rows.enumerate() {
                    f(
                        index,
                        is_valid(row).then(|| &data[row * size..(row + 1) * size]),
                    );
                }
            }
            Rows::Slices(slices) => {
                for (index, row) in rows.enumerate() {
                    f(index, is_valid(row).then(|| slices[row]));
                }
            }
            Rows::Spans { .. } => {
                for (index, row) in rows.enumerate() {
                    let value = is_valid(row).then(|| self.row(row));
                    f(index, value.transpose()?);
                }
            }
        }
        Ok(())
    }

    /// Writes `length` bytes of output from byte `seek` on of every row
    /// into `out`, back to back (`len() * length` bytes): a piece of the
    /// digest within its 32 bytes, BLAKE3's extended output beyond.
    pub(super) fn hash_into(
        &self,
        engine: &Engine,
        mode: Mode,
        (length, seek): (usize, u64),
        out: &mut [u8],
    ) -> Result<(), Error> {
        if self.len() == 0 {
            // An empty slice of an array may keep an offset past its values
            // (as pyarrow makes them): there is nothing to check or hash.
            return Ok(());
        }
        match self {
            Rows::Packed32 { data, offsets } => {
                engine.hash_packed_xof_at_into(mode, data, offsets, length, seek, out)
            }
            Rows::Packed64 { data, offsets } => {
                engine.hash_packed_xof_at_into(mode, data, &offsets[..], length, seek, out)
            }
            // Records of 0 bytes are all the empty input; the engine wants a
            // record size of at least 1.
            Rows::Records { size: 0, count, .. } => {
                let empty: Vec<&[u8]> = vec![&[]; *count];
                engine.hash_slices_xof_at_into(mode, &empty, length, seek, out)
            }
            Rows::Records { data, size, count } => {
                let records = count.checked_mul(*size).and_then(|bytes| data.get(..bytes));
                let records = records.ok_or(ErrorKind::RecordSizeMismatch {
                    data_len: data.len(),
                    record_size: *size,
                })?;
                engine.hash_records_xof_at_into(mode, records, *size, length, seek, out)
            }
            Rows::Slices(slices) => engine.hash_slices_xof_at_into(mode, slices, length, seek, out),
            Rows::Spans { .. } => {
                let slices = (0..self.len()).map(|row| self.row(row));
                let slices = slices.collect::<Result<Vec<_>, _>>()?;
                engine.hash_slices_xof_at_into(mode, &slices, length, seek, out)
            }
        }
    }
}

/// `data[start..end]`, row `row`'s bytes, or the error the engine gives
/// for offsets that decrease or run past the data.
fn bytes_between(data: &[u8], row: usize, start: u64, end: u64) -> Result<&[u8], Error> {
    let index = row + 1;
    if end < start {
        Err(ErrorKind::OffsetsDecrease {
            index,
            previous: start,
            offset: end,
        }
        .into())
    } else if end > data.len() as u64 {
        Err(ErrorKind::OffsetOutOfBounds {
            index,
            offset: end,
            data_len: data.len(),
        }
        .into())
    } else {
        Ok(&data[start as usize..end as usize])
    }
}

fn packed32<'a>(values: &'a Buffer, offsets: &'a [i32]) -> Rows<'a> {
    Rows::Packed32 {
        data: values.as_slice(),
        // Arrow offsets are never negative, so i32 and u32 read the same.
        offsets: bytemuck::cast_slice(offsets),
    }
}

fn packed64<'a>(values: &'a Buffer, offsets: &'a [i64]) -> Rows<'a> {
    Rows::Packed64 {
        data: values.as_slice(),
        offsets: Cow::Borrowed(bytemuck::cast_slice(offsets)),
    }
}

fn views<T: ByteViewType + ?Sized>(array: &GenericByteViewArray<T>) -> Rows<'_> {
    Rows::Slices(
        (0..array.len())
            .map(|row| {
                if array.is_null(row) {
                    &[][..]
                } else {
                    array.value(row).as_ref()
                }
            })
            .collect(),
    )
}
