//! Hashing arrow-rs arrays where they lie (feature `arrow`): the engine
//! reads an array's own buffers — values and offsets, fixed-size values,
//! views, a dictionary's or run-end encoded array's values, a list's child
//! values — and writes the outputs into the buffer of the array it
//! returns.
//!
//! Which bytes a row is: a binary or string row its bytes; a number its
//! bytes as Arrow lays them out (little-endian), and a row of a list (or
//! list view) of fixed-width numbers (or of fixed-size lists of them: a
//! tensor) its values' bytes, back to back; a dictionary or run-end
//! encoded row its value's; a boolean one byte; a struct row (a record
//! batch's), a map row or a row of a list of other values its fields' or
//! values' encodings, each framed (see `encoding.rs`). Null rows get null
//! outputs (zeros under the validity bitmap, which is the input's).

mod dictionary;
mod encoding;
mod framing;
mod lists;
mod malformed;
mod problems;
mod rows;
mod runs;
mod unions;
mod walk;

use arrow_array::cast::AsArray;
use arrow_array::{Array, FixedSizeBinaryArray, UInt64Array};
use arrow_buffer::{Buffer, NullBuffer};
use arrow_schema::DataType;

use crate::{Engine, Error, ErrorKind, Mode};
use dictionary::dictionary_outputs_into;
use framing::encoded_outputs_into;
use rows::Rows;
use runs::Runs;

/// Whether [`Engine::hash_arrow`] hashes arrays of this type: binary and
/// string values of every layout (offsets, large offsets, views,
/// fixed-size), fixed-width numbers (integers, floats, decimals, dates,
/// timestamps, times, durations, intervals), booleans, the null type (all
/// rows null), and dictionaries, lists (`List`, `LargeList`,
/// `FixedSizeList`), list views (`ListView`, `LargeListView`), maps,
/// structs (of one field or more; a record batch's rows), unions (sparse
/// or dense, of one member or more) and run-end encoded arrays of any of
/// these, nested to any depth (see [`Engine::hash_arrow_xof_at`]).
pub fn is_hashable_arrow_type(data_type: &DataType) -> bool {
    encoding::is_hashable(data_type)
}

impl Engine {
    /// The digest of every row of an Arrow array, as a
    /// `FixedSizeBinaryArray` of 32 bytes a row with the input's nulls
    /// (see [`Engine::hash_arrow_xof_at`]).
    ///
    /// ```
    /// use blake3_batch::arrow_array::{Array, StringArray};
    /// use blake3_batch::{Engine, Mode};
    ///
    /// let names = StringArray::from(vec![Some("ada"), None, Some("grace")]);
    /// let digests = Engine::builder().build()?.hash_arrow(Mode::Hash, &names)?;
    /// assert_eq!(digests.value(0), blake3::hash(b"ada").as_bytes());
    /// assert!(digests.is_null(1));
    /// # Ok::<(), blake3_batch::Error>(())
    /// ```
    pub fn hash_arrow(&self, mode: Mode, array: &dyn Array) -> Result<FixedSizeBinaryArray, Error> {
        self.hash_arrow_xof_at(mode, array, 32, 0)
    }

    /// `length` bytes of output of every row of an Arrow array from byte
    /// `seek` of BLAKE3's extended output on (a prefix of the digest up to
    /// 32), as a `FixedSizeBinaryArray` of `length` bytes a row whose
    /// validity is the input's (null rows hold zeros).
    ///
    /// Binary, string and number rows, and lists and list views of
    /// numbers, are read where they lie (a list's offsets scaled to bytes
    /// first, 8 bytes a row); the rows of other types are encoded first
    /// (below). A dictionary or run-end encoded row is its value, hashed
    /// once for all the rows that share it (see `dictionary.rs`,
    /// `runs.rs`); a list view row the list of the same values. Its type
    /// must pass [`is_hashable_arrow_type`] (else
    /// [`ErrorKind::ArrowType`]); a null value inside a list row that is
    /// not null is [`ErrorKind::ArrowNullValue`], a dictionary key past its values
    /// [`ErrorKind::ArrowDictionaryKey`], run ends that do not describe the
    /// rows [`ErrorKind::ArrowRunEnds`], a union row whose type id names no
    /// member or whose value lies past its member's
    /// [`ErrorKind::ArrowUnion`], a list view row outside its values
    /// [`ErrorKind::ArrowListOffsets`], and offsets that decrease or run
    /// past the values the errors [`Engine::hash_packed_into`] gives.
    ///
    /// A `StructArray` (a `RecordBatch` through `StructArray::from`) is
    /// hashed a row at a time over all its fields, for deduplication on
    /// several columns: a row's input is each field's value in field
    /// order, a null one as the byte `0x00`, any other as `0x01`, its
    /// length in bytes as a little-endian `u64`, then its bytes (as the
    /// field's own column would be hashed). Framing makes rows that differ
    /// give different inputs, so `("ab", "c")` and `("a", "bc")` differ,
    /// and so do a null and an empty value. A row of a list of fixed-size
    /// lists of numbers (a tensor of several dimensions, a list of vectors)
    /// is its numbers back to back in row-major order, as a flat list of
    /// them would be, and a null inner list is refused as a null number
    /// is. A row of a list of anything
    /// but numbers or booleans (strings, lists, structs, ...) is its values
    /// framed the same way, in order, and a map row the list of its (key,
    /// value) entries, each a struct; a boolean is one byte, `0x00` or
    /// `0x01`; a union row (sparse or dense) its type id as one byte, then
    /// its member's value's encoding, and null where that value is null;
    /// nesting goes to any depth. These rows are copied, a few MiB
    /// a thread at a time, as they are encoded. A list row whose values
    /// are malformed offsets is [`ErrorKind::ArrowListOffsets`], and a
    /// null value inside a list of numbers or booleans, at any depth of a
    /// row that is not null, [`ErrorKind::ArrowNullValue`].
    ///
    /// ```
    /// use std::sync::Arc;
    /// use blake3_batch::arrow_array::{ArrayRef, Int64Array, RecordBatch, StringArray, StructArray};
    /// use blake3_batch::{Engine, Mode};
    ///
    /// let batch = RecordBatch::try_from_iter([
    ///     ("id", Arc::new(Int64Array::from(vec![7])) as ArrayRef),
    ///     ("name", Arc::new(StringArray::from(vec![None::<&str>]))),
    /// ])?;
    /// let digests = Engine::builder().build()?.hash_arrow(Mode::Hash, &StructArray::from(batch))?;
    /// let mut row = vec![1];
    /// row.extend(8u64.to_le_bytes());
    /// row.extend(7i64.to_le_bytes());
    /// row.push(0);
    /// assert_eq!(digests.value(0), blake3::hash(&row).as_bytes());
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn hash_arrow_xof_at(
        &self,
        mode: Mode,
        array: &dyn Array,
        length: usize,
        seek: u64,
    ) -> Result<FixedSizeBinaryArray, Error> {
        check(array)?;
        let width = i32::try_from(length).map_err(|_| ErrorKind::OutOfMemory {
            what: format!("Arrow fixed-size binary rows of {length} bytes (at most 2^31 - 1)"),
            bytes: length,
        })?;
        if length == 0 {
            return Err(ErrorKind::XofLength.into());
        }
        let mut bytes = output_buffer(array.len(), length)?;
        outputs_into(self, mode, (length, seek), array, &mut bytes)?;
        let nulls = array.logical_nulls();
        for row in null_rows(nulls.as_ref()) {
            bytes[row * length..(row + 1) * length].fill(0);
        }
        Ok(FixedSizeBinaryArray::new(
            width,
            Buffer::from_vec(bytes),
            nulls,
        ))
    }

    /// The first 8 bytes of every row's digest, read little-endian, as a
    /// `UInt64Array` with the input's nulls (null rows hold 0): compact
    /// keys for deduplication and joins. Errors as
    /// [`Engine::hash_arrow_xof_at`].
    pub fn hash_arrow_u64(&self, mode: Mode, array: &dyn Array) -> Result<UInt64Array, Error> {
        // Each key is a digest's first 8 bytes (null rows' are zeros).
        let prefixes = self.hash_arrow_xof_at(mode, array, 8, 0)?;
        let keys = prefixes
            .value_data()
            .chunks_exact(8)
            .map(|prefix| u64::from_le_bytes(prefix.try_into().expect("chunks of 8 bytes")));
        Ok(UInt64Array::new(keys.collect(), prefixes.nulls().cloned()))
    }
}

/// The errors an array gets before anything is hashed: a type with no
/// bytes to hash, malformed run ends or list views (see `malformed.rs`), a
/// null value inside a list of numbers, a dictionary key past its values
/// (see `problems.rs`).
fn check(array: &dyn Array) -> Result<(), Error> {
    if !is_hashable_arrow_type(array.data_type()) {
        let data_type = array.data_type().to_string();
        return Err(ErrorKind::ArrowType { data_type }.into());
    }
    malformed::check(array)?;
    problems::check(array)
}

/// Writes `length` bytes of every row's output from byte `seek` on into
/// `out`, back to back, whatever the array's layout; where that fails,
/// `out` is left all zeros. The array's type is one
/// [`is_hashable_arrow_type`] accepts.
fn outputs_into(
    engine: &Engine,
    mode: Mode,
    output: (usize, u64),
    array: &dyn Array,
    out: &mut [u8],
) -> Result<(), Error> {
    let hashed = if array.as_any_dictionary_opt().is_some() {
        dictionary_outputs_into(engine, mode, output, array, out)
    } else if *array.data_type() == DataType::Null {
        // Every row is null: nothing to hash, `out` stays zeros.
        Ok(())
    } else if let Some(runs) = Runs::of(array) {
        runs.outputs_into(engine, mode, output, out)
    } else {
        // Rows that lie in the array's buffers are hashed there; the
        // others are encoded first.
        match Rows::of(array) {
            Some(rows) => rows.hash_into(engine, mode, output, out),
            None => encoded_outputs_into(engine, mode, output, array, out),
        }
    };
    if hashed.is_err() {
        out.fill(0);
    }
    hashed
}

/// `length` bytes of every row's output from byte `seek` on, back to back
/// in a buffer of their own (null rows' are whatever their bytes give): a
/// dictionary's or run-end encoded array's values, each hashed once.
fn outputs(
    engine: &Engine,
    mode: Mode,
    (length, seek): (usize, u64),
    array: &dyn Array,
) -> Result<Vec<u8>, Error> {
    let mut outputs = output_buffer(array.len(), length)?;
    outputs_into(engine, mode, (length, seek), array, &mut outputs)?;
    Ok(outputs)
}

/// A zeroed buffer for `count` outputs of `length` bytes, or the error
/// that says it is too large (extended outputs can ask for anything).
fn output_buffer(count: usize, length: usize) -> Result<Vec<u8>, Error> {
    let too_large = |bytes| ErrorKind::OutOfMemory {
        what: format!("the output ({count} × {length} bytes)"),
        bytes,
    };
    let bytes = count
        .checked_mul(length)
        .ok_or_else(|| too_large(usize::MAX))?;
    // Zeroed by the allocator (fresh pages from the kernel for a large
    // output), not by a pass on this thread: the engine's threads that
    // write the outputs fault the pages in.
    bytemuck::allocation::try_zeroed_vec(bytes).map_err(|()| too_large(bytes).into())
}

/// The rows that are null.
fn null_rows(nulls: Option<&NullBuffer>) -> impl Iterator<Item = usize> + '_ {
    nulls
        .into_iter()
        .flat_map(|nulls| nulls.iter().enumerate())
        .filter(|(_, valid)| !valid)
        .map(|(row, _)| row)
}
