//! Walks over many rows of an [`Encoding`] at once, for the rows of a
//! table and the values of lists of strings: each field, or each list's
//! values, a run at a time (one loop per layout: first every row's length,
//! then each row's bytes at its cursor), falling back to a row at a time
//! for nested values.

use std::ops::Range;

use arrow_buffer::NullBuffer;

use super::encoding::{Encoding, Offsets};
use crate::Error;

impl<'a> Encoding<'a> {
    /// Whether this array's values are runs of bytes read where they lie
    /// ([`Encoding::for_each_value`]).
    fn is_flat(&self) -> bool {
        matches!(
            self,
            Encoding::Null | Encoding::Bytes { .. } | Encoding::Dictionary { .. }
        )
    }

    /// Calls `f` with each row of `rows`, numbered from 0, and its bytes
    /// (`None` where it is null), for an array [`Encoding::is_flat`]
    /// holds; or returns the error the engine would report for the first
    /// row the array's offsets do not hold. One loop per layout.
    fn for_each_value(
        &self,
        rows: Range<usize>,
        mut f: impl FnMut(usize, Option<&'a [u8]>),
    ) -> Result<(), Error> {
        match self {
            Encoding::Bytes {
                rows: values,
                nulls,
            } => values.for_each_row(rows, nulls.as_ref(), f),
            Encoding::Dictionary {
                keys,
                values,
                nulls,
            } => {
                for (index, row) in rows.enumerate() {
                    let is_valid = nulls.as_ref().is_none_or(|nulls| nulls.is_valid(row));
                    let value = is_valid.then(|| values.row(keys[row]));
                    f(index, value.transpose()?);
                }
                Ok(())
            }
            _ => {
                rows.enumerate().for_each(|(index, _)| f(index, None));
                Ok(())
            }
        }
    }

    /// A struct's fields and the rows of a walk to encode — those `keep`
    /// and the struct both hold — for a struct whose rows are encoded
    /// unframed a field at a time; `None` for any other.
    fn fields_to_walk<'s>(
        &'s self,
        keep: Keep<'s>,
        framed: bool,
    ) -> Option<(&'s [Encoding<'a>], Keep<'s>)> {
        match (self, keep) {
            // A struct nested in a struct or list is framed, so only the
            // rows of a table are walked this way, with nothing else to keep.
            (Encoding::Struct { fields, nulls }, Keep::All) if !framed => {
                Some((fields, nulls.as_ref().map_or(Keep::All, Keep::Valid)))
            }
            (
                Encoding::Struct {
                    fields,
                    nulls: None,
                },
                keep,
            ) if !framed => Some((fields, keep)),
            _ => None,
        }
    }

    /// A list whose values are runs of bytes ([`Encoding::is_flat`]: lists
    /// of strings, tags), whose rows are encoded a list of values at a
    /// time; `None` for any other (a list view's rows may share values,
    /// which the walk writes once each).
    fn list_to_walk(&self) -> Option<FlatList<'_, 'a>> {
        match self {
            Encoding::List {
                offsets,
                values,
                framed,
                ..
            } if values.is_flat() && offsets.follow_one_another() => Some(FlatList {
                offsets,
                values,
                framed: *framed,
            }),
            _ => None,
        }
    }

    /// Adds the length of each row of `rows` that `keep` keeps, framed or
    /// not (a null row unframed has none), to `lengths`, one a row; other
    /// rows' are left as they are.
    pub(super) fn add_lengths(
        &self,
        rows: Range<usize>,
        keep: Keep<'_>,
        framed: bool,
        lengths: &mut [u64],
    ) -> Result<(), Error> {
        let first = rows.start;
        if let Some((fields, keep)) = self.fields_to_walk(keep, framed) {
            return (fields.iter())
                .try_for_each(|field| field.add_lengths(rows.clone(), keep, true, lengths));
        } else if self.is_flat() {
            let header = if framed { 9 } else { 0 };
            return self.for_each_value(rows, |index, value| {
                if keep.keeps(first + index) {
                    lengths[index] +=
                        value.map_or(u64::from(framed), |value| header + value.len() as u64);
                }
            });
        } else if let Some(list) = self.list_to_walk() {
            let (values, value_lengths) = list.value_lengths(rows.clone())?;
            for (index, row) in rows.enumerate() {
                lengths[index] += match (keep.keeps(row), self.is_valid(row)) {
                    (false, _) => 0,
                    (true, false) => u64::from(framed),
                    (true, true) => {
                        let lengths = &value_lengths[list.row_values(row, &values)];
                        lengths.iter().sum::<u64>() + if framed { 9 } else { 0 }
                    }
                };
            }
            return Ok(());
        }
        for (index, row) in rows.enumerate() {
            lengths[index] += match (keep.keeps(row), framed, self.is_valid(row)) {
                (false, _, _) | (true, false, false) => 0,
                (true, true, _) => self.framed_len(row)?,
                (true, false, true) => self.len(row)?,
            };
        }
        Ok(())
    }

    /// Writes each row of `rows` that `keep` keeps, framed or not, into
    /// `out` at its cursor, and moves the cursor past it.
    pub(super) fn write_rows(
        &self,
        rows: Range<usize>,
        keep: Keep<'_>,
        framed: bool,
        cursors: &mut [usize],
        out: &mut [u8],
    ) -> Result<(), Error> {
        let first = rows.start;
        if let Some((fields, keep)) = self.fields_to_walk(keep, framed) {
            return (fields.iter())
                .try_for_each(|field| field.write_rows(rows.clone(), keep, true, cursors, out));
        } else if self.is_flat() {
            return self.for_each_value(rows, |index, value| {
                if !keep.keeps(first + index) {
                    return;
                }
                let at = cursors[index];
                cursors[index] += match (value, framed) {
                    (None, true) => {
                        out[at] = 0;
                        1
                    }
                    (None, false) => 0,
                    (Some(value), true) => {
                        let length = value.len();
                        out[at] = 1;
                        out[at + 1..at + 9].copy_from_slice(&(length as u64).to_le_bytes());
                        out[at + 9..at + 9 + length].copy_from_slice(value);
                        9 + length
                    }
                    (Some(value), false) => {
                        out[at..at + value.len()].copy_from_slice(value);
                        value.len()
                    }
                };
            });
        } else if let Some(list) = self.list_to_walk() {
            return list.write_rows(self, rows, keep, framed, cursors, out);
        }
        for (index, row) in rows.enumerate() {
            let at = cursors[index];
            cursors[index] += match (keep.keeps(row), framed, self.is_valid(row)) {
                (false, _, _) | (true, false, false) => 0,
                (true, true, _) => self.write_framed(row, &mut out[at..])?,
                (true, false, true) => self.write(row, &mut out[at..])?,
            };
        }
        Ok(())
    }
}

/// Which rows of a walk to encode; the others are left as they are.
#[derive(Clone, Copy)]
pub(super) enum Keep<'k> {
    /// Every row.
    All,
    /// The rows a validity bitmap holds valid.
    Valid(&'k NullBuffer),
    /// The rows from `first` on whose flag is set.
    Listed { first: usize, rows: &'k [bool] },
}

impl Keep<'_> {
    fn keeps(self, row: usize) -> bool {
        match self {
            Keep::All => true,
            Keep::Valid(nulls) => nulls.is_valid(row),
            Keep::Listed { first, rows } => rows[row - first],
        }
    }
}

/// A list whose values are runs of bytes, walked a list of values at a
/// time: the values of a walk's rows are measured, then written, as a
/// table's fields are.
struct FlatList<'e, 'a> {
    offsets: &'e Offsets<'a>,
    values: &'e Encoding<'a>,
    framed: bool,
}

impl FlatList<'_, '_> {
    /// The values of `rows` (as indices into the child array), and each
    /// one's length as the list encodes it.
    fn value_lengths(&self, rows: Range<usize>) -> Result<(Range<usize>, Vec<u64>), Error> {
        if rows.is_empty() {
            return Ok((0..0, Vec::new()));
        }
        let values = self.offsets.values(rows.start).start..self.offsets.values(rows.end - 1).end;
        let mut lengths = vec![0; values.len()];
        (self.values).add_lengths(values.clone(), Keep::All, self.framed, &mut lengths)?;
        Ok((values, lengths))
    }

    /// Row `row`'s values as indices into `values`, the values of the
    /// rows walked ([`FlatList::value_lengths`]).
    fn row_values(&self, row: usize, values: &Range<usize>) -> Range<usize> {
        let row_values = self.offsets.values(row);
        row_values.start - values.start..row_values.end - values.start
    }

    /// [`Encoding::write_rows`] for `list`, this list: each row's frame,
    /// then the values of the rows written, each at its place.
    fn write_rows(
        &self,
        list: &Encoding<'_>,
        rows: Range<usize>,
        keep: Keep<'_>,
        framed: bool,
        cursors: &mut [usize],
        out: &mut [u8],
    ) -> Result<(), Error> {
        let (values, value_lengths) = self.value_lengths(rows.clone())?;
        let mut value_cursors = vec![0; values.len()];
        let mut kept_values = vec![false; values.len()];
        for (index, row) in rows.enumerate() {
            if !keep.keeps(row) {
                continue;
            }
            let at = cursors[index];
            if !list.is_valid(row) {
                if framed {
                    out[at] = 0;
                    cursors[index] += 1;
                }
                continue;
            }
            let row_values = self.row_values(row, &values);
            let mut cursor = at;
            if framed {
                let length: u64 = value_lengths[row_values.clone()].iter().sum();
                out[at] = 1;
                out[at + 1..at + 9].copy_from_slice(&length.to_le_bytes());
                cursor += 9;
            }
            for value in row_values {
                value_cursors[value] = cursor;
                kept_values[value] = true;
                cursor += value_lengths[value] as usize;
            }
            cursors[index] = cursor;
        }
        let keep_values = Keep::Listed {
            first: values.start,
            rows: &kept_values,
        };
        (self.values).write_rows(values, keep_values, self.framed, &mut value_cursors, out)
    }
}
