//! The bytes a row of any hashable Arrow type is hashed as, for the types
//! that are not one run of bytes in the array's buffers: booleans, structs
//! (a record batch's rows), lists of anything but fixed-width values, and
//! maps. A row's encoding:
//!
//! - binary or string: its bytes; a fixed-width number: its little-endian
//!   bytes; a boolean: one byte, `0x00` or `0x01`; a dictionary row or a
//!   run-end encoded one: its value's (of any of these types);
//! - a list of fixed-width numbers or of booleans, or of fixed-size lists
//!   of them (a tensor): its values' encodings back to back (a null value
//!   has none: such rows are refused);
//! - a struct: each field's value framed, in field order;
//! - a union: its type id as one byte, then its value's encoding (see
//!   `unions.rs`);
//! - any other list: each value framed, in order; a map is the list of
//!   its entries, each a struct of key and value; a list view is the list
//!   of the same values.
//!
//! Framed, a null value is the byte `0x00`; any other is `0x01`, its
//! encoding's length as a little-endian `u64`, then its encoding. So two
//! different values of one type never share an encoding: `["ab", "c"]`
//! and `["a", "bc"]` differ, and so do a null and an empty value.
//!
//! [`Encoding`] mirrors an array's type as a tree and encodes a row at a
//! time, recursively; `walk.rs` encodes many rows at once where it can.

use std::ops::Range;

use arrow_array::cast::AsArray;
use arrow_array::Array;
use arrow_buffer::{BooleanBuffer, NullBuffer};
use arrow_schema::DataType;

use super::rows::{is_value_type, Rows};
use super::runs::Runs;
use super::unions::Union;
use crate::{Error, ErrorKind};

/// Whether rows of this type can be hashed, as a column, a struct's field
/// or a list's value: binary, string, numbers, booleans, the null type,
/// and dictionaries, lists, list views, maps, structs (of one field or
/// more), unions (of one member or more) and run-end encoded arrays of
/// hashable types.
pub(super) fn is_hashable(data_type: &DataType) -> bool {
    match data_type {
        DataType::Null | DataType::Boolean => true,
        DataType::Dictionary(_, values) => is_hashable(values),
        DataType::List(child)
        | DataType::LargeList(child)
        | DataType::FixedSizeList(child, _)
        | DataType::ListView(child)
        | DataType::LargeListView(child) => is_hashable(child.data_type()),
        DataType::RunEndEncoded(ends, values) => {
            matches!(
                ends.data_type(),
                DataType::Int16 | DataType::Int32 | DataType::Int64
            ) && is_hashable(values.data_type())
        }
        DataType::Map(entries, _) => is_hashable(entries.data_type()),
        DataType::Struct(fields) => {
            !fields.is_empty() && fields.iter().all(|field| is_hashable(field.data_type()))
        }
        DataType::Union(members, _) => {
            let mut types = members.iter().map(|(_, member)| member.data_type());
            !members.is_empty() && types.all(is_hashable)
        }
        data_type => is_value_type(data_type),
    }
}

/// Whether a list of values of this type is their encodings back to back,
/// unframed: fixed-width numbers and booleans, whose length the type
/// fixes, and fixed-size lists of them, whose length it fixes too (a
/// tensor's rows: nested, they are its values in row-major order, as
/// NumPy's `tobytes()` gives them). Such a list cannot hold a null value.
pub(super) fn is_unframed_value(data_type: &DataType) -> bool {
    match data_type {
        DataType::FixedSizeList(child, _) => is_unframed_value(child.data_type()),
        data_type => data_type.primitive_width().is_some() || *data_type == DataType::Boolean,
    }
}

/// Where each row of a list array finds its values in the child array.
pub(super) enum Offsets<'a> {
    Small(&'a [i32]),
    Large(&'a [i64]),
    Fixed(usize),
    /// A list view's offsets and sizes: rows' values may lie in any order
    /// and overlap.
    View {
        offsets: &'a [i32],
        sizes: &'a [i32],
    },
    LargeView {
        offsets: &'a [i64],
        sizes: &'a [i64],
    },
}

impl Offsets<'_> {
    /// The values of row `row`, as indices into the child array (which
    /// [`Offsets::check`] has found it holds).
    pub(super) fn values(&self, row: usize) -> Range<usize> {
        let (start, end) = self.bounds(row);
        start as usize..end as usize
    }

    /// Row `row`'s first value and the value after its last, as the array
    /// says (a malformed array's may be negative or out of order).
    fn bounds(&self, row: usize) -> (i64, i64) {
        match self {
            Offsets::Small(offsets) => (i64::from(offsets[row]), i64::from(offsets[row + 1])),
            Offsets::Large(offsets) => (offsets[row], offsets[row + 1]),
            Offsets::Fixed(size) => ((row * size) as i64, ((row + 1) * size) as i64),
            Offsets::View { offsets, sizes } => {
                let start = i64::from(offsets[row]);
                (start, start + i64::from(sizes[row]))
            }
            Offsets::LargeView { offsets, sizes } => {
                (offsets[row], offsets[row].saturating_add(sizes[row]))
            }
        }
    }

    /// Whether each row's values follow the row before's in the child
    /// array (lists and maps); a list view's may lie anywhere.
    pub(super) fn follow_one_another(&self) -> bool {
        !matches!(self, Offsets::View { .. } | Offsets::LargeView { .. })
    }

    /// Each row's values clamped to the child's `values`, for a check that
    /// must not fail on a malformed array.
    pub(super) fn clamped_values(&self, row: usize, values: usize) -> Range<usize> {
        if let Offsets::Fixed(size) = self {
            return (row * size).min(values)..((row + 1) * size).min(values);
        }
        let (start, end) = self.bounds(row);
        let clamp = |offset: i64| usize::try_from(offset).unwrap_or(0).min(values);
        clamp(start)..clamp(end).max(clamp(start))
    }

    /// The error for the first of `rows` rows whose values do not lie in
    /// order within the child's `values` (arrays from the C data interface
    /// are not validated).
    pub(super) fn check(&self, rows: usize, values: usize) -> Result<(), Error> {
        let bad = |row: usize, start: i64, end: i64| {
            let in_order = 0 <= start && start <= end && end <= values as i64;
            (!in_order).then_some(ErrorKind::ArrowListOffsets {
                row,
                start,
                end,
                values,
            })
        };
        let found = match self {
            Offsets::Small(offsets) => offsets
                .windows(2)
                .enumerate()
                .find_map(|(row, pair)| bad(row, i64::from(pair[0]), i64::from(pair[1]))),
            Offsets::Large(offsets) => {
                (offsets.windows(2).enumerate()).find_map(|(row, pair)| bad(row, pair[0], pair[1]))
            }
            Offsets::Fixed(size) => (rows.checked_mul(*size).is_none_or(|end| end > values))
                .then(|| {
                    (0..rows)
                        .find_map(|row| bad(row, (row * size) as i64, ((row + 1) * size) as i64))
                })
                .flatten(),
            Offsets::View { .. } | Offsets::LargeView { .. } => (0..rows).find_map(|row| {
                let (start, end) = self.bounds(row);
                bad(row, start, end)
            }),
        };
        found.map_or(Ok(()), |kind| Err(kind.into()))
    }
}

/// The offsets and child array of a list or map array; `None` for any
/// other array.
pub(super) fn list_parts(array: &dyn Array) -> Option<(Offsets<'_>, &dyn Array)> {
    Some(match array.data_type() {
        DataType::List(_) => {
            let list = array.as_list::<i32>();
            (Offsets::Small(list.value_offsets()), list.values().as_ref())
        }
        DataType::LargeList(_) => {
            let list = array.as_list::<i64>();
            (Offsets::Large(list.value_offsets()), list.values().as_ref())
        }
        DataType::FixedSizeList(_, size) => {
            // Arrow slices a fixed-size list's values with the list, so row
            // 0 starts at the first of them.
            let list = array.as_fixed_size_list();
            let size = usize::try_from(*size).unwrap_or(0);
            (Offsets::Fixed(size), list.values().as_ref())
        }
        DataType::ListView(_) => {
            let list = array.as_list_view::<i32>();
            let (offsets, sizes) = (list.value_offsets(), list.value_sizes());
            (Offsets::View { offsets, sizes }, list.values().as_ref())
        }
        DataType::LargeListView(_) => {
            let list = array.as_list_view::<i64>();
            let (offsets, sizes) = (list.value_offsets(), list.value_sizes());
            (
                Offsets::LargeView { offsets, sizes },
                list.values().as_ref(),
            )
        }
        DataType::Map(_, _) => {
            let map = array.as_map();
            (
                Offsets::Small(map.value_offsets()),
                map.entries() as &dyn Array,
            )
        }
        _ => return None,
    })
}

/// How each row of one array is encoded, with the rows that are null.
pub(super) enum Encoding<'a> {
    /// The null type: every row is null.
    Null,
    /// Binary, string or number rows, or lists of numbers, read in place.
    Bytes {
        rows: Rows<'a>,
        nulls: Option<NullBuffer>,
    },
    /// A dictionary's or run-end encoded array's values read in place
    /// (binary, strings, numbers, lists of numbers), by each row's key.
    Dictionary {
        keys: Vec<usize>,
        values: Rows<'a>,
        nulls: Option<NullBuffer>,
    },
    /// A dictionary's or run-end encoded array's values of any other type
    /// (booleans, structs, other lists), by each row's key or run.
    Keyed {
        keys: Vec<usize>,
        values: Box<Encoding<'a>>,
        nulls: Option<NullBuffer>,
    },
    /// One byte a row.
    Booleans {
        values: BooleanBuffer,
        nulls: Option<NullBuffer>,
    },
    /// Each field's value framed.
    Struct {
        fields: Vec<Encoding<'a>>,
        nulls: Option<NullBuffer>,
    },
    /// Each of the row's values, framed unless their type fixes their
    /// length.
    List {
        offsets: Offsets<'a>,
        values: Box<Encoding<'a>>,
        framed: bool,
        nulls: Option<NullBuffer>,
    },
    /// The row's type id, then its value in the member that id names.
    Union {
        rows: Union<'a>,
        /// Each member's encoding, at its type id.
        members: Vec<Option<Encoding<'a>>>,
        nulls: Option<NullBuffer>,
    },
}

impl<'a> Encoding<'a> {
    /// The encoding of an array's rows, or the error for a type that
    /// cannot be hashed or a list whose offsets are malformed. Its null
    /// values, if any, must be where rows are never read (see
    /// `problems.rs`).
    pub(super) fn of(array: &'a dyn Array) -> Result<Self, Error> {
        let unhashable = || ErrorKind::ArrowType {
            data_type: array.data_type().to_string(),
        };
        if !is_hashable(array.data_type()) {
            return Err(unhashable().into());
        }
        // Logical nulls: a dictionary or run-end encoded row whose value is
        // null is null.
        let nulls = array.logical_nulls();
        if *array.data_type() == DataType::Null {
            return Ok(Encoding::Null);
        } else if let Some(dictionary) = array.as_any_dictionary_opt() {
            let keys = dictionary.normalized_keys();
            return Encoding::keyed(keys, dictionary.values().as_ref(), nulls);
        } else if let Some(runs) = Runs::of(array) {
            return Encoding::keyed(runs.keys(), runs.values(), nulls);
        } else if let Some(booleans) = array.as_boolean_opt() {
            let values = booleans.values().clone();
            return Ok(Encoding::Booleans { values, nulls });
        } else if let Some(rows) = Rows::of(array) {
            return Ok(Encoding::Bytes { rows, nulls });
        } else if let Some(array) = array.as_struct_opt() {
            let fields = array
                .columns()
                .iter()
                .map(|field| Encoding::of(field.as_ref()));
            let fields = fields.collect::<Result<_, _>>()?;
            return Ok(Encoding::Struct { fields, nulls });
        } else if let Some(rows) = Union::of(array) {
            let members = rows.members().iter().map(|member| match member {
                Some(member) => Encoding::of(*member).map(Some),
                None => Ok(None),
            });
            let members = members.collect::<Result<_, _>>()?;
            return Ok(Encoding::Union {
                rows,
                members,
                nulls,
            });
        }
        let (offsets, values) = list_parts(array).ok_or_else(unhashable)?;
        offsets.check(array.len(), values.len())?;
        Ok(Encoding::List {
            offsets,
            framed: !is_unframed_value(values.data_type()),
            values: Box::new(Encoding::of(values)?),
            nulls,
        })
    }

    /// The encoding of rows that are each `values`' row at their key: a
    /// dictionary's (keys in range, see `problems.rs`) or a run-end
    /// encoded array's (its runs). Values that lie in their buffers are
    /// read there.
    fn keyed(
        keys: Vec<usize>,
        values: &'a dyn Array,
        nulls: Option<NullBuffer>,
    ) -> Result<Self, Error> {
        Ok(match Rows::of(values) {
            Some(values) => Encoding::Dictionary {
                keys,
                values,
                nulls,
            },
            None => Encoding::Keyed {
                keys,
                values: Box::new(Encoding::of(values)?),
                nulls,
            },
        })
    }

    fn nulls(&self) -> Option<&NullBuffer> {
        match self {
            Encoding::Null => None,
            Encoding::Bytes { nulls, .. }
            | Encoding::Dictionary { nulls, .. }
            | Encoding::Keyed { nulls, .. }
            | Encoding::Booleans { nulls, .. }
            | Encoding::Struct { nulls, .. }
            | Encoding::List { nulls, .. }
            | Encoding::Union { nulls, .. } => nulls.as_ref(),
        }
    }

    pub(super) fn is_valid(&self, row: usize) -> bool {
        !matches!(self, Encoding::Null) && self.nulls().is_none_or(|nulls| nulls.is_valid(row))
    }

    /// The length of a valid row's encoding.
    pub(super) fn len(&self, row: usize) -> Result<u64, Error> {
        Ok(match self {
            Encoding::Null => 0,
            Encoding::Bytes { rows, .. } => rows.row(row)?.len() as u64,
            Encoding::Dictionary { keys, values, .. } => values.row(keys[row])?.len() as u64,
            Encoding::Keyed { keys, values, .. } => values.len(keys[row])?,
            Encoding::Booleans { .. } => 1,
            Encoding::Struct { fields, .. } => {
                let lengths = fields.iter().map(|field| field.framed_len(row));
                lengths.sum::<Result<u64, Error>>()?
            }
            Encoding::List {
                offsets,
                values,
                framed,
                ..
            } => {
                let lengths = offsets.values(row).map(|value| match framed {
                    true => values.framed_len(value),
                    false => values.len(value),
                });
                lengths.sum::<Result<u64, Error>>()?
            }
            Encoding::Union { rows, members, .. } => {
                let (type_id, value) = rows.value_of(row);
                1 + member(members, type_id).len(value)?
            }
        })
    }

    /// The length of a row's encoding framed.
    pub(super) fn framed_len(&self, row: usize) -> Result<u64, Error> {
        match self.is_valid(row) {
            true => Ok(9 + self.len(row)?),
            false => Ok(1),
        }
    }

    /// Writes a valid row's encoding at the start of `out`, which holds at
    /// least its length, and returns that length.
    pub(super) fn write(&self, row: usize, out: &mut [u8]) -> Result<usize, Error> {
        let copy = |bytes: &[u8], out: &mut [u8]| {
            out[..bytes.len()].copy_from_slice(bytes);
            bytes.len()
        };
        Ok(match self {
            Encoding::Null => 0,
            Encoding::Bytes { rows, .. } => copy(rows.row(row)?, out),
            Encoding::Dictionary { keys, values, .. } => copy(values.row(keys[row])?, out),
            Encoding::Keyed { keys, values, .. } => values.write(keys[row], out)?,
            Encoding::Booleans { values, .. } => {
                out[0] = u8::from(values.value(row));
                1
            }
            Encoding::Struct { fields, .. } => {
                let mut at = 0;
                for field in fields {
                    at += field.write_framed(row, &mut out[at..])?;
                }
                at
            }
            Encoding::List {
                offsets,
                values,
                framed,
                ..
            } => {
                let mut at = 0;
                for value in offsets.values(row) {
                    at += match framed {
                        true => values.write_framed(value, &mut out[at..])?,
                        false => values.write(value, &mut out[at..])?,
                    };
                }
                at
            }
            Encoding::Union { rows, members, .. } => {
                let (type_id, value) = rows.value_of(row);
                out[0] = type_id;
                1 + member(members, type_id).write(value, &mut out[1..])?
            }
        })
    }

    /// Writes a row's encoding framed at the start of `out`, which holds
    /// at least its framed length, and returns that length.
    pub(super) fn write_framed(&self, row: usize, out: &mut [u8]) -> Result<usize, Error> {
        if !self.is_valid(row) {
            out[0] = 0;
            return Ok(1);
        }
        // The value first, then the frame that says its length.
        let written = self.write(row, &mut out[9..])?;
        out[0] = 1;
        out[1..9].copy_from_slice(&(written as u64).to_le_bytes());
        Ok(9 + written)
    }
}

/// The encoding of the union member `type_id` names (a union
/// [`Union::check`] has found well formed names only its members).
fn member<'e, 'a>(members: &'e [Option<Encoding<'a>>], type_id: u8) -> &'e Encoding<'a> {
    (members[usize::from(type_id)].as_ref()).expect("a checked union's type ids name members")
}
