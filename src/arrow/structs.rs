//! Struct arrays — a record batch's rows, a Polars `pl.struct`, a DuckDB
//! `STRUCT` — hashed a row at a time over all their fields, for
//! deduplication on several columns. A row's input is its fields' values
//! in field order, each framed so that no two different rows of one type
//! give the same bytes:
//!
//! - a null value: the byte `0x00`;
//! - any other: the byte `0x01`, its length in bytes as a little-endian
//!   `u64`, then its bytes (as [`super::rows`] reads a column's row).
//!
//! In Python: `blake3(b"".join(b"\0" if v is None else b"\1" +
//! len(v).to_bytes(8, "little") + v for v in row))`. The rows are copied
//! into framed pieces on the engine's threads, and each piece hashed as
//! packed blobs.

use std::ops::Range;

use arrow_array::cast::AsArray;
use arrow_array::{Array, StructArray};
use arrow_buffer::NullBuffer;
use arrow_schema::DataType;

use super::dictionary::{check_keys, is_hashable_dictionary};
use super::lists::{first_row_with_a_null_value, list_value_width};
use super::rows::{is_value_type, Rows};
use crate::cpu::batch::Threads;
use crate::{Engine, Error, ErrorKind, Mode};

/// Framed bytes per piece and thread, about (a piece's rows are counted
/// from the last piece's): each piece costs a few wake-ups of the engine's
/// threads, and its rows should still be in cache when they are hashed.
/// Rows of 40 to 1000 bytes on two threads (ad hoc, 2 vCPUs): 1 MiB ran
/// 0.43 to 0.49 of the same bytes as one column, 4 MiB 0.51 to 0.61,
/// 16 MiB 0.37 to 0.62.
const PIECE_BYTES: usize = 4 << 20;

/// The most framed bytes a piece holds on any number of threads (one row
/// larger than this is a piece of its own), so memory stays bounded.
const MAX_PIECE_BYTES: usize = 64 << 20;

/// Rows in the first piece, before the rows' size is known.
const FIRST_PIECE_ROWS: usize = 4096;

/// Whether a field of this type can be part of a hashed struct row: the
/// types a column can be, except structs (a nested struct has no framing
/// of its own).
pub(super) fn is_hashable_field(data_type: &DataType) -> bool {
    *data_type == DataType::Null
        || is_value_type(data_type)
        || list_value_width(data_type).is_some()
        || is_hashable_dictionary(data_type)
}

/// Whether a struct type's rows can be hashed: one field or more, each of
/// a type [`is_hashable_field`] accepts.
pub(super) fn is_hashable_struct(data_type: &DataType) -> bool {
    match data_type {
        DataType::Struct(fields) => {
            !fields.is_empty()
                && fields
                    .iter()
                    .all(|field| is_hashable_field(field.data_type()))
        }
        _ => false,
    }
}

/// The errors a struct's fields get before anything is hashed, as a
/// column of their type would: a null value inside a list row (the first
/// such row of any field), a dictionary key past its values. Rows the
/// struct itself holds null are checked too; their fields are never read.
pub(super) fn check_fields(array: &StructArray) -> Result<(), Error> {
    let columns = array.columns().iter();
    let holes = columns.filter_map(|field| first_row_with_a_null_value(field.as_ref()));
    if let Some(row) = holes.min() {
        return Err(ErrorKind::ArrowNullValue { row }.into());
    }
    array
        .columns()
        .iter()
        .try_for_each(|field| check_keys(field.as_ref()))
}

/// One field's values by row: `None` where the value is null.
enum FieldValues<'a> {
    /// The null type: every value is null.
    Null,
    /// Binary, string, number or list values.
    Rows {
        rows: Rows<'a>,
        nulls: Option<NullBuffer>,
    },
    /// A dictionary's values, by each row's key.
    Dictionary {
        keys: Vec<usize>,
        values: Rows<'a>,
        nulls: Option<NullBuffer>,
    },
}

impl<'a> FieldValues<'a> {
    fn of(field: &'a dyn Array) -> Option<Self> {
        if *field.data_type() == DataType::Null {
            return Some(FieldValues::Null);
        }
        // Logical nulls: a dictionary row whose value is null is null.
        let nulls = field.logical_nulls();
        Some(match field.as_any_dictionary_opt() {
            Some(dictionary) => FieldValues::Dictionary {
                keys: dictionary.normalized_keys(),
                values: Rows::of(dictionary.values().as_ref())?,
                nulls,
            },
            None => FieldValues::Rows {
                rows: Rows::of(field)?,
                nulls,
            },
        })
    }

    /// Calls `f` with each row of `rows`, numbered from 0, and its bytes
    /// (`None` where it is null), or returns the error the engine would
    /// report for the first row the field's offsets do not hold.
    fn for_each_value(
        &self,
        rows: Range<usize>,
        mut f: impl FnMut(usize, Option<&'a [u8]>),
    ) -> Result<(), Error> {
        match self {
            FieldValues::Null => rows.enumerate().for_each(|(index, _)| f(index, None)),
            FieldValues::Rows {
                rows: values,
                nulls,
            } => values.for_each_row(rows, nulls.as_ref(), f)?,
            FieldValues::Dictionary {
                keys,
                values,
                nulls,
            } => {
                for (index, row) in rows.enumerate() {
                    let is_valid = nulls.as_ref().is_none_or(|nulls| nulls.is_valid(row));
                    let value = is_valid.then(|| values.row(keys[row]));
                    f(index, value.transpose()?);
                }
            }
        }
        Ok(())
    }
}

/// A piece of framed rows: packed bytes and their offsets.
#[derive(Default)]
struct Piece {
    data: Vec<u8>,
    offsets: Vec<u64>,
}

/// The rows framed into a piece and how: each field's values, the rows the
/// struct holds null, and the threads that frame them.
struct Framing<'f, 'a> {
    fields: &'f [FieldValues<'a>],
    struct_nulls: Option<&'f NullBuffer>,
    threads: Threads<'f>,
    parts: usize,
}

impl Framing<'_, '_> {
    fn is_valid(&self, row: usize) -> bool {
        self.struct_nulls.is_none_or(|nulls| nulls.is_valid(row))
    }

    /// Frames `rows` into `piece`, a part of the rows on each thread and a
    /// field at a time: first every row's length (0 for a row the struct
    /// holds null), then, from their sum, each row's bytes at its offset.
    fn frame(&self, rows: Range<usize>, piece: &mut Piece) -> Result<(), Error> {
        let part_rows = rows.len().div_ceil(self.parts).max(1);
        piece.offsets.clear();
        piece.offsets.resize(rows.len() + 1, 0);
        let parts = piece.offsets[1..]
            .chunks_mut(part_rows)
            .zip(rows.clone().step_by(part_rows))
            .collect();
        let measured = self
            .threads
            .map_here(parts, |(lengths, first)| self.measure(first, lengths));
        measured.into_iter().collect::<Result<(), Error>>()?;
        let mut total = 0;
        for offset in &mut piece.offsets[1..] {
            total += *offset;
            *offset = total;
        }
        // Every byte is written below, so the buffer is only zeroed where
        // it grows.
        piece.data.resize(total as usize, 0);
        let offsets = &piece.offsets;
        let mut parts = Vec::with_capacity(self.parts);
        let mut rest = &mut piece.data[..];
        for (part, first) in rows.clone().step_by(part_rows).enumerate() {
            let bounds = &offsets[part * part_rows..=((part + 1) * part_rows).min(rows.len())];
            let (out, after) = rest.split_at_mut((bounds[bounds.len() - 1] - bounds[0]) as usize);
            parts.push((first, bounds, out));
            rest = after;
        }
        let written = self
            .threads
            .map_here(parts, |(first, bounds, out)| self.write(first, bounds, out));
        written.into_iter().collect()
    }

    /// Writes `length` bytes of output from byte `seek` on of each of the
    /// `count` rows into `out`, a piece at a time: each piece's rows are
    /// about [`PIECE_BYTES`] a thread framed, as the last piece's averaged.
    fn hash_rows(
        &self,
        engine: &Engine,
        mode: Mode,
        (length, seek): (usize, u64),
        count: usize,
        out: &mut [u8],
    ) -> Result<(), Error> {
        let piece_bytes = (PIECE_BYTES * self.parts).min(MAX_PIECE_BYTES) as u64;
        let mut piece = Piece::default();
        let (mut first, mut piece_rows) = (0, FIRST_PIECE_ROWS);
        while first < count {
            let rows = first..(first + piece_rows).min(count);
            self.frame(rows.clone(), &mut piece)?;
            let (data, offsets) = (&piece.data, &piece.offsets);
            let outputs = &mut out[rows.start * length..rows.end * length];
            engine.hash_packed_xof_at_into(mode, data, offsets, length, seek, outputs)?;
            let row_bytes = (data.len() as u64 / rows.len() as u64).max(1);
            piece_rows = (piece_bytes / row_bytes).clamp(1, 1 << 24) as usize;
            first = rows.end;
        }
        Ok(())
    }

    /// Adds each row's framed length from row `first` on into `lengths`.
    fn measure(&self, first: usize, lengths: &mut [u64]) -> Result<(), Error> {
        let rows = first..first + lengths.len();
        for field in self.fields {
            field.for_each_value(rows.clone(), |index, value| {
                lengths[index] += value.map_or(1, |value| 9 + value.len() as u64);
            })?;
        }
        for (row, length) in rows.zip(lengths.iter_mut()) {
            if !self.is_valid(row) {
                *length = 0;
            }
        }
        Ok(())
    }

    /// Writes the framed rows from row `first` on into `out`, which starts
    /// at the first's offset; `bounds` holds their offsets and the end's.
    fn write(&self, first: usize, bounds: &[u64], out: &mut [u8]) -> Result<(), Error> {
        let rows = first..first + bounds.len() - 1;
        let mut cursors: Vec<usize> = bounds[..rows.len()]
            .iter()
            .map(|&offset| (offset - bounds[0]) as usize)
            .collect();
        for field in self.fields {
            field.for_each_value(rows.clone(), |index, value| {
                if !self.is_valid(first + index) {
                    return;
                }
                let at = cursors[index];
                match value {
                    None => {
                        out[at] = 0;
                        cursors[index] += 1;
                    }
                    Some(value) => {
                        let length = value.len();
                        out[at] = 1;
                        out[at + 1..at + 9].copy_from_slice(&(length as u64).to_le_bytes());
                        out[at + 9..at + 9 + length].copy_from_slice(value);
                        cursors[index] += 9 + length;
                    }
                }
            })?;
        }
        Ok(())
    }
}

/// Writes `length` bytes of output from byte `seek` on of every row of a
/// struct array into `out`, back to back (the struct's null rows get the
/// empty row's; the caller zeroes them). `None` for fields that cannot be
/// hashed. The fields must have passed [`check_fields`].
pub(super) fn struct_outputs_into(
    engine: &Engine,
    mode: Mode,
    (length, seek): (usize, u64),
    array: &StructArray,
    out: &mut [u8],
) -> Option<Result<(), Error>> {
    let fields: Vec<FieldValues> = array
        .columns()
        .iter()
        .map(|field| FieldValues::of(field.as_ref()))
        .collect::<Option<_>>()?;
    let framing = Framing {
        fields: &fields,
        struct_nulls: array.nulls(),
        threads: engine.cpu_threads(),
        parts: engine.threads(),
    };
    Some(framing.hash_rows(engine, mode, (length, seek), array.len(), out))
}
