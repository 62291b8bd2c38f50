//! Run-end encoded arrays: a row's value is its run's, so a row's digest
//! is its value's, as if the array were decoded. At the top level each
//! run's value is hashed once and its output copied to the run's rows;
//! nested in a struct or list, each row reads its run's value where it
//! lies.

use std::ops::Range;

use arrow_array::cast::AsArray;
use arrow_array::types::{Int16Type, Int32Type, Int64Type};
use arrow_array::Array;
use arrow_schema::DataType;

use super::dictionary::copy_outputs_by_key;
use crate::{Engine, Error, ErrorKind, Mode};

/// A run-end encoded array's run ends as Arrow stores them: for each run,
/// the row after its last, counted from the unsliced array's first row.
enum RunEnds<'a> {
    I16(&'a [i16]),
    I32(&'a [i32]),
    I64(&'a [i64]),
}

impl RunEnds<'_> {
    fn len(&self) -> usize {
        match self {
            RunEnds::I16(ends) => ends.len(),
            RunEnds::I32(ends) => ends.len(),
            RunEnds::I64(ends) => ends.len(),
        }
    }

    fn end(&self, run: usize) -> i64 {
        match self {
            RunEnds::I16(ends) => i64::from(ends[run]),
            RunEnds::I32(ends) => i64::from(ends[run]),
            RunEnds::I64(ends) => ends[run],
        }
    }

    /// The first run whose end `is_past` holds for, or the count of runs
    /// (the ends increase: see [`Runs::check`]).
    fn first(&self, is_past: impl Fn(i64) -> bool) -> usize {
        match self {
            RunEnds::I16(ends) => ends.partition_point(|&end| !is_past(i64::from(end))),
            RunEnds::I32(ends) => ends.partition_point(|&end| !is_past(i64::from(end))),
            RunEnds::I64(ends) => ends.partition_point(|&end| !is_past(end)),
        }
    }
}

/// The runs of a run-end encoded array (or of a slice of one) and the
/// values they repeat.
pub(super) struct Runs<'a> {
    ends: RunEnds<'a>,
    /// The array's first row, as the run ends count rows (a slice's offset).
    offset: usize,
    /// The array's rows.
    len: usize,
    values: &'a dyn Array,
}

impl<'a> Runs<'a> {
    /// The runs of a run-end encoded array; `None` for any other array.
    pub(super) fn of(array: &'a dyn Array) -> Option<Runs<'a>> {
        let DataType::RunEndEncoded(ends, _) = array.data_type() else {
            return None;
        };
        let (ends, offset, values) = match ends.data_type() {
            DataType::Int16 => {
                let runs = array.as_run_opt::<Int16Type>()?;
                let ends = runs.run_ends();
                (RunEnds::I16(ends.values()), ends.offset(), runs.values())
            }
            DataType::Int32 => {
                let runs = array.as_run_opt::<Int32Type>()?;
                let ends = runs.run_ends();
                (RunEnds::I32(ends.values()), ends.offset(), runs.values())
            }
            DataType::Int64 => {
                let runs = array.as_run_opt::<Int64Type>()?;
                let ends = runs.run_ends();
                (RunEnds::I64(ends.values()), ends.offset(), runs.values())
            }
            _ => return None,
        };
        Some(Runs {
            ends,
            offset,
            len: array.len(),
            values: values.as_ref(),
        })
    }

    /// The values the runs repeat, one a run.
    pub(super) fn values(&self) -> &'a dyn Array {
        self.values
    }

    /// The error for run ends that do not describe the array's rows: ends
    /// that are not above 0 and increasing, that stop before its last row,
    /// or that need more values than it holds (arrays from the C data
    /// interface are not validated, and arrow-rs's own accessors would
    /// panic on them).
    pub(super) fn check(&self) -> Result<(), Error> {
        let malformed = |problem: String| Err(ErrorKind::ArrowRunEnds { problem }.into());
        let mut previous = 0;
        for run in 0..self.ends.len() {
            let end = self.ends.end(run);
            if end <= previous {
                return malformed(format!(
                    "run {run} ends at row {end}, not after the run before it, which ends at \
                     row {previous}"
                ));
            }
            previous = end;
        }
        let rows_end = self.offset as u64 + self.len as u64;
        if self.len > 0 && (previous as u64) < rows_end {
            return malformed(format!(
                "its runs end at row {previous}, before the end of its rows at row {rows_end}"
            ));
        }
        let runs = self.runs().end;
        if runs > self.values.len() {
            let values = self.values.len();
            return malformed(format!(
                "its rows lie in {runs} runs, but its values array has length {values}"
            ));
        }
        Ok(())
    }

    /// The runs the array's rows lie in, as indices into its values: from
    /// the first that ends past its first row to the first that ends at or
    /// past its last.
    fn runs(&self) -> Range<usize> {
        if self.len == 0 {
            return 0..0;
        }
        let (first_row, rows_end) = (self.offset as i64, (self.offset + self.len) as i64);
        let first = self.ends.first(|end| end > first_row);
        let last = self.ends.first(|end| end >= rows_end);
        first..(last + 1).min(self.ends.len()).max(first)
    }

    /// Each run the array's rows lie in, with those rows (from 0, the
    /// array's first). The runs must have passed [`Runs::check`].
    fn rows_of_runs(&self) -> impl Iterator<Item = (usize, Range<usize>)> + '_ {
        let to_row = |end: i64| (end.max(0) as usize).clamp(self.offset, self.offset + self.len);
        self.runs().map(move |run| {
            let start = match run {
                0 => self.offset,
                run => to_row(self.ends.end(run - 1)),
            };
            let end = to_row(self.ends.end(run));
            (run, start.max(self.offset) - self.offset..end - self.offset)
        })
    }

    /// Row `row`'s run, as an index into the values. The runs must have
    /// passed [`Runs::check`].
    pub(super) fn run_of(&self, row: usize) -> usize {
        let row = (self.offset + row) as i64;
        self.ends.first(|end| end > row)
    }

    /// Each row's run, as an index into the values (as a dictionary's
    /// keys). The runs must have passed [`Runs::check`].
    pub(super) fn keys(&self) -> Vec<usize> {
        let mut keys = Vec::with_capacity(self.len);
        for (run, rows) in self.rows_of_runs() {
            keys.resize(keys.len() + rows.len(), run);
        }
        keys
    }

    /// Writes `length` bytes of output from byte `seek` on of every row
    /// into `out`, back to back: each run's value hashed once (the values
    /// of the runs the rows lie in, as an array of their own) and its
    /// output copied to each of its rows. Null rows get whatever their
    /// value's output is (the caller zeroes them). The runs must have
    /// passed [`Runs::check`], and the values `problems::check`.
    pub(super) fn outputs_into(
        &self,
        engine: &Engine,
        mode: Mode,
        (length, seek): (usize, u64),
        out: &mut [u8],
    ) -> Result<(), Error> {
        let runs = self.runs();
        let values = self.values.slice(runs.start, runs.len());
        let value_outputs = super::outputs(engine, mode, (length, seek), values.as_ref())?;
        // Each row's run among the values hashed.
        let mut keys = self.keys();
        keys.iter_mut().for_each(|run| *run -= runs.start);
        copy_outputs_by_key(engine, (&value_outputs, length), &keys, out);
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use arrow_array::StringArray;

    use super::*;

    fn runs<'a>(ends: &'a [i32], offset: usize, len: usize, values: &'a StringArray) -> Runs<'a> {
        Runs {
            ends: RunEnds::I32(ends),
            offset,
            len,
            values,
        }
    }

    fn problem(runs: &Runs) -> String {
        match runs.check().map_err(|error| error.kind().clone()) {
            Err(ErrorKind::ArrowRunEnds { problem }) => problem,
            other => panic!("{other:?}"),
        }
    }

    /// Each row's run, for arrays and slices that start and end in and
    /// between runs.
    #[test]
    fn each_row_lies_in_its_run() {
        let values = StringArray::from(vec!["a", "b", "c"]);
        let cases: [(usize, usize, &[usize]); 6] = [
            (0, 6, &[0, 0, 1, 1, 1, 2]),
            (1, 4, &[0, 1, 1, 1]),
            (2, 3, &[1, 1, 1]),
            (3, 1, &[1]),
            (5, 1, &[2]),
            (4, 0, &[]),
        ];
        for (offset, len, keys) in cases {
            let runs = runs(&[2, 5, 6], offset, len, &values);
            assert!(runs.check().is_ok(), "{offset} {len}");
            assert_eq!(runs.keys(), keys, "{offset} {len}");
        }
        // Runs past the array's last row need no value.
        let two = StringArray::from(vec!["a", "b"]);
        assert_eq!(runs(&[2, 5, 6], 0, 5, &two).keys(), [0, 0, 1, 1, 1]);
        assert!(runs(&[2, 5, 6], 0, 5, &two).check().is_ok());
    }

    /// Run ends that do not describe the rows, which only an unvalidated
    /// array holds (pyarrow and arrow-rs refuse to build most of them).
    #[test]
    fn malformed_run_ends_say_what_is_wrong() {
        let values = StringArray::from(vec!["a", "b", "c"]);
        assert_eq!(
            problem(&runs(&[2, 2, 6], 0, 6, &values)),
            "run 1 ends at row 2, not after the run before it, which ends at row 2"
        );
        assert_eq!(
            problem(&runs(&[0, 2], 0, 2, &values)),
            "run 0 ends at row 0, not after the run before it, which ends at row 0"
        );
        assert_eq!(
            problem(&runs(&[-3, 2], 0, 2, &values)),
            "run 0 ends at row -3, not after the run before it, which ends at row 0"
        );
        assert_eq!(
            problem(&runs(&[2, 4], 1, 4, &values)),
            "its runs end at row 4, before the end of its rows at row 5"
        );
        assert_eq!(
            problem(&runs(&[], 0, 1, &values)),
            "its runs end at row 0, before the end of its rows at row 1"
        );
        let one = StringArray::from(vec!["a"]);
        assert_eq!(
            problem(&runs(&[2, 4, 6], 1, 3, &one)),
            "its rows lie in 2 runs, but its values array has length 1"
        );
    }
}
