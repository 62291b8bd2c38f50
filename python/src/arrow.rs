//! Hashing one Arrow array of binary or string values in place: the
//! engine reads the array's own buffers (values and offsets, records, or
//! views) and writes the digests straight into the output array's buffer.
//! Lists of numbers go through `lists.rs`. Tested from Python through the
//! built extension (python/tests), against blake3-py on every Arrow type,
//! slice and null pattern.

use std::borrow::Cow;
use std::sync::Arc;

use arrow_array::cast::AsArray;
use arrow_array::types::{BinaryViewType, ByteViewType, StringViewType};
use arrow_array::{
    Array, ArrayRef, FixedSizeBinaryArray, GenericByteViewArray, GenericStringArray,
    OffsetSizeTrait, UInt64Array,
};
use arrow_buffer::{Buffer, NullBuffer, OffsetBuffer, ScalarBuffer};
use arrow_schema::DataType;
use blake3_batch::{Engine, Error, ErrorKind, Mode};

use crate::dictionary::{dictionary_outputs_into, is_hashable_dictionary};
use crate::lists::{list_rows, list_value_width};

/// Whether the engine can hash values of this Arrow type (the null type,
/// whose rows are all null, included: its digests are all null).
pub fn is_hashable(data_type: &DataType) -> bool {
    *data_type == DataType::Null
        || is_byte_type(data_type)
        || list_value_width(data_type).is_some()
        || is_hashable_dictionary(data_type)
}

/// Whether values of this type are bytes (binary or string, of any
/// layout).
pub fn is_byte_type(data_type: &DataType) -> bool {
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

/// The message for a column of another type.
pub fn unsupported(data_type: &str) -> String {
    format!(
        "cannot hash a column of type {data_type}: give binary, large_binary, string, \
         large_string, binary_view, string_view or fixed_size_binary values (or a \
         dictionary of them), or a list, large_list or fixed_size_list of fixed-width \
         numbers (cast other columns first, e.g. with pyarrow.compute.cast)"
    )
}

/// The values of one array as the engine reads them, borrowed from the
/// array's buffers.
pub enum Rows<'a> {
    /// Arrow offsets into one values buffer (Binary/String: i32 as u32).
    Packed32 { data: &'a [u8], offsets: &'a [u32] },
    /// LargeBinary/LargeString offsets (i64 as u64), or a list's offsets
    /// counted in bytes.
    Packed64 {
        data: &'a [u8],
        offsets: Cow<'a, [u64]>,
    },
    /// FixedSizeBinary values, back to back.
    Records {
        data: &'a [u8],
        size: usize,
        count: usize,
    },
    /// BinaryView/StringView values (inline or in data buffers); null rows
    /// are read as empty.
    Slices(Vec<&'a [u8]>),
}

impl<'a> Rows<'a> {
    pub fn of(array: &'a dyn Array) -> Option<Rows<'a>> {
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
            _ => return list_rows(array),
        })
    }

    /// `count` records of `size` bytes (possibly 0) back to back.
    pub fn records(data: &'a [u8], size: usize, count: usize) -> Rows<'a> {
        Rows::Records { data, size, count }
    }

    /// Row `row`'s bytes, or the error that says why the array's offsets
    /// or records do not hold it (as the engine would report them).
    pub fn row(&self, row: usize) -> Result<&'a [u8], Error> {
        let (data, start, end) = match self {
            Rows::Packed32 { data, offsets } => {
                (data, offsets[row] as u64, offsets[row + 1] as u64)
            }
            Rows::Packed64 { data, offsets } => (data, offsets[row], offsets[row + 1]),
            Rows::Records { data, size, .. } => {
                (data, (row * size) as u64, ((row + 1) * size) as u64)
            }
            Rows::Slices(slices) => return Ok(slices[row]),
        };
        if end < start {
            let index = row + 1;
            Err(ErrorKind::OffsetsDecrease {
                index,
                previous: start,
                offset: end,
            }
            .into())
        } else if end > data.len() as u64 {
            let (index, data_len) = (row + 1, data.len());
            Err(ErrorKind::OffsetOutOfBounds {
                index,
                offset: end,
                data_len,
            }
            .into())
        } else {
            Ok(&data[start as usize..end as usize])
        }
    }

    fn len(&self) -> usize {
        match self {
            Rows::Packed32 { offsets, .. } => offsets.len() - 1,
            Rows::Packed64 { offsets, .. } => offsets.len() - 1,
            Rows::Records { count, .. } => *count,
            Rows::Slices(slices) => slices.len(),
        }
    }

    /// Writes `length` bytes of output from byte `seek` on of every row
    /// into `out`, back to back (`len() * length` bytes): a piece of the
    /// digest within its 32 bytes, BLAKE3's extended output beyond.
    pub fn hash_into(
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
                let data = &data[..count * size];
                engine.hash_records_xof_at_into(mode, data, *size, length, seek, out)
            }
            Rows::Slices(slices) => engine.hash_slices_xof_at_into(mode, slices, length, seek, out),
        }
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

/// Outputs of every row of `array`, `length` bytes each from byte `seek`
/// on, as a FixedSizeBinary array with the input's nulls (null rows hold
/// zeros). `None` when the array's type cannot be hashed.
pub fn hash_array(
    engine: &Engine,
    mode: Mode,
    (length, seek): (usize, u64),
    array: &dyn Array,
) -> Option<Result<ArrayRef, Error>> {
    let mut bytes = match output_buffer(array.len(), length) {
        Ok(bytes) => bytes,
        Err(error) => return Some(Err(error)),
    };
    let hashed = outputs_into(engine, mode, (length, seek), array, &mut bytes)?;
    Some(hashed.map(|()| {
        let nulls = array.logical_nulls();
        for row in null_rows(nulls.as_ref()) {
            bytes[row * length..(row + 1) * length].fill(0);
        }
        Arc::new(FixedSizeBinaryArray::new(
            length as i32,
            Buffer::from_vec(bytes),
            nulls,
        )) as ArrayRef
    }))
}

/// Every byte's two lowercase hex digits.
const HEX_PAIRS: [[u8; 2]; 256] = {
    let digits = b"0123456789abcdef";
    let mut pairs = [[0u8; 2]; 256];
    let mut byte = 0;
    while byte < 256 {
        pairs[byte] = [digits[byte >> 4], digits[byte & 15]];
        byte += 1;
    }
    pairs
};

/// `bytes` in lowercase hex, two digits a byte, as blake3-py's `hexdigest`.
pub fn hex_string(bytes: &[u8]) -> String {
    let mut digits = Vec::with_capacity(2 * bytes.len());
    push_hex(bytes, &mut digits);
    String::from_utf8(digits).expect("hex digits are ASCII")
}

/// Appends `bytes` in lowercase hex to `digits`: a pair of digits a byte,
/// looked up and stored together.
fn push_hex(bytes: &[u8], digits: &mut Vec<u8>) {
    let start = digits.len();
    digits.resize(start + 2 * bytes.len(), 0);
    let (pairs, _) = digits[start..].as_chunks_mut::<2>();
    for (pair, &byte) in pairs.iter_mut().zip(bytes) {
        *pair = HEX_PAIRS[usize::from(byte)];
    }
}

/// The rows of `outputs` (a FixedSizeBinary array from [`hash_array`]) as
/// hex strings of twice their width, nulls kept: a `string` array, or a
/// `large_string` one where `large` (more than 2 GiB of digits).
pub fn hex_array(outputs: &ArrayRef, large: bool) -> Result<ArrayRef, Error> {
    match large {
        false => hex_strings::<i32>(outputs),
        true => hex_strings::<i64>(outputs),
    }
}

fn hex_strings<O: OffsetSizeTrait>(outputs: &ArrayRef) -> Result<ArrayRef, Error> {
    let outputs = outputs.as_fixed_size_binary();
    let width = 2 * outputs.value_length() as usize;
    let too_large = || ErrorKind::OutOfMemory {
        what: format!("the hex strings ({} × {width} characters)", outputs.len()),
        bytes: outputs.len().saturating_mul(width),
    };
    let ends = (0..=outputs.len()).map(|row| O::from_usize(row * width).ok_or_else(too_large));
    let offsets = ends.collect::<Result<Vec<O>, _>>()?;
    let mut digits = Vec::new();
    digits
        .try_reserve_exact(outputs.len() * width)
        .map_err(|_| too_large())?;
    push_hex(outputs.value_data(), &mut digits);
    let strings = GenericStringArray::<O>::try_new(
        OffsetBuffer::new(ScalarBuffer::from(offsets)),
        Buffer::from_vec(digits),
        outputs.nulls().cloned(),
    );
    Ok(Arc::new(strings.expect("hex digits are UTF-8 at every offset")) as ArrayRef)
}

/// The first 8 bytes of every row's digest as a little-endian `u64`, with
/// the input's nulls (null rows hold 0). `None` for a type that cannot be
/// hashed.
pub fn hash_array_u64(
    engine: &Engine,
    mode: Mode,
    array: &dyn Array,
) -> Option<Result<ArrayRef, Error>> {
    let mut keys = vec![0u64; array.len()];
    // Each key's 8 bytes are the digest's first 8, read little-endian.
    let hashed = outputs_into(
        engine,
        mode,
        (8, 0),
        array,
        bytemuck::cast_slice_mut(&mut keys),
    )?;
    for key in &mut keys {
        *key = u64::from_le(*key);
    }
    Some(hashed.map(|()| {
        let nulls = array.logical_nulls();
        for row in null_rows(nulls.as_ref()) {
            keys[row] = 0;
        }
        Arc::new(UInt64Array::new(ScalarBuffer::from(keys), nulls)) as ArrayRef
    }))
}

/// Writes `length` bytes of every row's output from byte `seek` on into
/// `out`, back to back, whatever the array's layout; where that fails,
/// `out` is left all zeros. `None` when its type cannot be hashed.
fn outputs_into(
    engine: &Engine,
    mode: Mode,
    output: (usize, u64),
    array: &dyn Array,
    out: &mut [u8],
) -> Option<Result<(), Error>> {
    let hashed = match array.as_any_dictionary_opt() {
        Some(dictionary) => dictionary_outputs_into(engine, mode, output, dictionary, out)?,
        // Every row is null: nothing to hash, `out` stays zeros.
        None if *array.data_type() == DataType::Null => Ok(()),
        None => Rows::of(array)?.hash_into(engine, mode, output, out),
    };
    if hashed.is_err() {
        out.fill(0);
    }
    Some(hashed)
}

/// `length` bytes of every row's output from byte `seek` on, back to back.
pub fn digest_bytes(
    engine: &Engine,
    mode: Mode,
    (length, seek): (usize, u64),
    rows: &Rows,
) -> Result<Vec<u8>, Error> {
    let mut bytes = output_buffer(rows.len(), length)?;
    digest_into(engine, mode, (length, seek), rows, &mut bytes)?;
    Ok(bytes)
}

/// A zeroed buffer for `count` outputs of `length` bytes, or the error
/// that says it is too large (extended outputs can ask for anything).
pub fn output_buffer(count: usize, length: usize) -> Result<Vec<u8>, Error> {
    let too_large = |bytes| ErrorKind::OutOfMemory {
        what: format!("the output ({count} × {length} bytes)"),
        bytes,
    };
    let bytes = count
        .checked_mul(length)
        .ok_or_else(|| too_large(usize::MAX))?;
    let mut buffer = Vec::new();
    buffer
        .try_reserve_exact(bytes)
        .map_err(|_| too_large(bytes))?;
    buffer.resize(bytes, 0);
    Ok(buffer)
}

/// Writes `length` bytes of every row's output from byte `seek` on, back
/// to back, into `out` (`rows.len() * length` bytes). Where the engine
/// fails, `out` is left all zeros: no row holds a digest that could be
/// taken for its own.
pub fn digest_into(
    engine: &Engine,
    mode: Mode,
    (length, seek): (usize, u64),
    rows: &Rows,
    out: &mut [u8],
) -> Result<(), Error> {
    debug_assert_eq!(out.len(), rows.len() * length);
    // The engine writes full digests straight into `out` (where the GPU may
    // copy them itself, in pinned memory).
    let hashed = rows.hash_into(engine, mode, (length, seek), out);
    if hashed.is_err() {
        out.fill(0);
    }
    hashed
}

/// The rows that are null.
fn null_rows(nulls: Option<&NullBuffer>) -> impl Iterator<Item = usize> + '_ {
    nulls
        .into_iter()
        .flat_map(|nulls| nulls.iter().enumerate())
        .filter(|(_, valid)| !valid)
        .map(|(row, _)| row)
}
