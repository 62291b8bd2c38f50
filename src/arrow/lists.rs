//! Arrow lists of fixed-width values — token ids, embeddings, tensors
//! stored as `list`, `large_list`, `fixed_size_list` or a list view of
//! numbers, or of fixed-size lists of numbers (a tensor of more
//! dimensions) — as rows of bytes: each row's values as they lie in the
//! child array (little-endian, Arrow's layout), read in place. A row's
//! digest is BLAKE3 of those bytes (in Python,
//! `blake3(numpy.asarray(row).tobytes())`).

use std::borrow::Cow;

use arrow_array::cast::AsArray;
use arrow_array::{downcast_primitive_array, Array, OffsetSizeTrait};
use arrow_schema::DataType;

use super::encoding::{list_parts, Offsets};
use super::rows::Rows;

/// The byte width of one value of a list type whose rows can be hashed
/// in place: a list of fixed-width numbers (integers, floats, decimals,
/// dates, times, durations) or of fixed-size lists of them (a tensor's
/// rows, whose values lie in one buffer in row-major order). `None` for
/// any other type: a list of strings or of variable-size lists has no
/// single byte layout, and booleans are bits.
pub(super) fn list_value_width(data_type: &DataType) -> Option<usize> {
    match data_type {
        DataType::List(child)
        | DataType::LargeList(child)
        | DataType::FixedSizeList(child, _)
        | DataType::ListView(child)
        | DataType::LargeListView(child) => fixed_width(child.data_type()),
        _ => None,
    }
}

/// The byte width of a number, or of a fixed-size list of numbers (at any
/// depth); `None` for any other type.
fn fixed_width(data_type: &DataType) -> Option<usize> {
    match data_type {
        DataType::FixedSizeList(child, size) => {
            fixed_width(child.data_type())?.checked_mul(usize::try_from(*size).ok()?)
        }
        data_type => data_type.primitive_width(),
    }
}

/// The rows of a list array whose values have a fixed width, borrowed
/// from its child array; `None` for any other array. Arrow offsets are
/// never negative, so they read the same unsigned; they count values and
/// the engine's count bytes, so one-byte values keep the array's own
/// offsets and wider ones get a scaled copy (8 bytes a row).
pub(super) fn list_rows(array: &dyn Array) -> Option<Rows<'_>> {
    let width = list_value_width(array.data_type())?;
    let (offsets, values) = list_parts(array)?;
    let data = fixed_width_bytes(values)?;
    Some(match offsets {
        Offsets::Small(offsets) if width == 1 => Rows::Packed32 {
            data,
            offsets: bytemuck::cast_slice(offsets),
        },
        Offsets::Large(offsets) if width == 1 => Rows::Packed64 {
            data,
            offsets: Cow::Borrowed(bytemuck::cast_slice(offsets)),
        },
        Offsets::Small(offsets) => scaled_rows(data, offsets, width),
        Offsets::Large(offsets) => scaled_rows(data, offsets, width),
        // Arrow slices a fixed-size list's values with the list, so row 0
        // starts at the first of them.
        Offsets::Fixed(size) => Rows::Records {
            data,
            size: size * width,
            count: array.len(),
        },
        // A list view's rows lie anywhere in its values, each a span.
        offsets => Rows::Spans {
            data,
            spans: (0..array.len())
                .map(|row| {
                    let values = offsets.values(row);
                    let in_bytes = |value: usize| (value as u64).saturating_mul(width as u64);
                    (in_bytes(values.start), in_bytes(values.end))
                })
                .collect(),
        },
    })
}

/// The values of a primitive array as bytes, from its first value to its
/// last (the array's own offset applied).
pub(super) fn value_bytes(values: &dyn Array) -> Option<&[u8]> {
    downcast_primitive_array!(
        values => Some(values.values().inner().as_slice()),
        _ => None,
    )
}

/// The values of a primitive array, or of the numbers under a fixed-size
/// list of them (which Arrow slices with the list, at every depth), as
/// bytes from the first value on.
fn fixed_width_bytes(values: &dyn Array) -> Option<&[u8]> {
    match values.data_type() {
        DataType::FixedSizeList(_, _) => {
            fixed_width_bytes(values.as_fixed_size_list().values().as_ref())
        }
        _ => value_bytes(values),
    }
}

/// Rows of `width`-byte values at a list's `offsets`, counted in bytes.
fn scaled_rows<'a, O: OffsetSizeTrait>(data: &'a [u8], offsets: &[O], width: usize) -> Rows<'a> {
    // An offset so large that it overflows is past the data either way:
    // the engine reports it.
    let in_bytes = |offset: &O| (offset.as_usize() as u64).saturating_mul(width as u64);
    Rows::Packed64 {
        data,
        offsets: Cow::Owned(offsets.iter().map(in_bytes).collect()),
    }
}
