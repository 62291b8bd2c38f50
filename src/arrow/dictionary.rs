//! Dictionary-encoded arrays (pandas and Polars categoricals, Parquet's
//! dictionary pages): a row's digest is its value's, as if the array were
//! decoded, whatever the values' type. Each value is hashed once and its
//! output copied to every row that uses it; where the dictionary holds
//! more values than the array has rows (a slice of a large shared
//! dictionary), each row's value is hashed instead: read where it lies, or
//! encoded.

use arrow_array::cast::AsArray;
use arrow_array::{downcast_dictionary_array, Array};
use arrow_buffer::ArrowNativeType;

use super::framing::encoded_outputs_into;
use super::rows::Rows;
use crate::{Engine, Error, ErrorKind, Mode};

/// The rows of a dictionary array whose key is valid but names no value:
/// a producer's mistake (arrays from the C data interface are not
/// validated) that would otherwise be a digest of some other row's value.
/// `None` for an array that is not a dictionary, or whose keys are all in
/// range.
pub(super) fn rows_with_bad_keys(array: &dyn Array) -> Option<Vec<bool>> {
    let dictionary = array.as_any_dictionary_opt()?;
    let values = dictionary.values().len();
    downcast_dictionary_array!(
        array => {
            let keys = array.keys();
            let is_bad = |row: usize| {
                let in_range = (0..values as i128).contains(&key_of(keys.values()[row]));
                keys.is_valid(row) && !in_range
            };
            // Only an array with a bad key pays for the list of them.
            (0..keys.len()).any(is_bad).then(|| (0..keys.len()).map(is_bad).collect())
        }
        _ => None,
    )
}

/// Row `row`'s key into the values of a dictionary array, or the error
/// for a key past them, one of [`rows_with_bad_keys`], reported as row
/// `shown_row`.
pub(super) fn key_of_row(
    array: &dyn Array,
    row: usize,
    shown_row: usize,
) -> Result<usize, ErrorKind> {
    let values = array.as_any_dictionary().values().len();
    let key = downcast_dictionary_array!(
        array => key_of(array.keys().values()[row]),
        _ => unreachable!("a dictionary array"),
    );
    match usize::try_from(key) {
        Ok(key) if key < values => Ok(key),
        _ => Err(ErrorKind::ArrowDictionaryKey {
            row: shown_row,
            key,
            values,
        }),
    }
}

/// A key as a signed number: `as_usize` would wrap a negative key; as
/// i128 it stays below 0.
fn key_of(key: impl ArrowNativeType) -> i128 {
    key.to_i64().map_or(-1, i128::from)
}

/// Writes `length` bytes of output from byte `seek` on of every row of a
/// dictionary array into `out`, back to back (null rows get their
/// value's, or nothing when there are no values; the caller zeroes them).
/// Its keys must be in range and its values sound (`problems.rs`).
pub(super) fn dictionary_outputs_into(
    engine: &Engine,
    mode: Mode,
    (length, seek): (usize, u64),
    array: &dyn Array,
    out: &mut [u8],
) -> Result<(), Error> {
    let dictionary = array.as_any_dictionary();
    let values = dictionary.values();
    if values.is_empty() {
        // Every key is null (any other would be out of range).
        return Ok(());
    }
    let keys = dictionary.normalized_keys();
    if values.len() > keys.len() {
        // Hashing every value would cost more than hashing each row's.
        return match Rows::of(values.as_ref()) {
            Some(value_rows) => {
                let slices = keys.iter().map(|&key| value_rows.row(key));
                let slices = slices.collect::<Result<Vec<_>, _>>()?;
                Rows::Slices(slices).hash_into(engine, mode, (length, seek), out)
            }
            None => encoded_outputs_into(engine, mode, (length, seek), array, out),
        };
    }
    let value_outputs = super::outputs(engine, mode, (length, seek), values.as_ref())?;
    copy_outputs_by_key(engine, (&value_outputs, length), &keys, out);
    Ok(())
}

/// Rows a thread copies their values' outputs to at a time.
const ROWS_PER_TASK: usize = 16 * 1024;

/// Copies output `keys[row]` of `outputs` (`length` bytes each) into each
/// row's place in `out`, on the engine's threads: a dictionary's or a
/// run-end encoded array's rows (keys from `Runs::keys`) given their
/// values' outputs.
pub(super) fn copy_outputs_by_key(
    engine: &Engine,
    (outputs, length): (&[u8], usize),
    keys: &[usize],
    out: &mut [u8],
) {
    let tasks = out
        .chunks_mut(ROWS_PER_TASK * length)
        .zip(keys.chunks(ROWS_PER_TASK))
        .collect();
    engine
        .cpu_threads()
        .for_each(tasks, |(slots, keys)| match length {
            32 => copy_fixed::<32>(outputs, keys, slots),
            8 => copy_fixed::<8>(outputs, keys, slots),
            _ => {
                for (slot, &key) in slots.chunks_exact_mut(length).zip(keys) {
                    slot.copy_from_slice(&outputs[key * length..][..length]);
                }
            }
        });
}

/// [`copy_outputs_by_key`] for outputs of `N` bytes: digests and `u64`
/// keys are a copy of a fixed size each, a few instructions where a copy
/// of any length calls `memcpy` (`hash_arrow_u64` of 500 000 rows of 100
/// values took 1.8 ms with a call each, 1.3 without, on one thread).
fn copy_fixed<const N: usize>(outputs: &[u8], keys: &[usize], slots: &mut [u8]) {
    let (outputs, _) = outputs.as_chunks::<N>();
    let (slots, _) = slots.as_chunks_mut::<N>();
    for (slot, &key) in slots.iter_mut().zip(keys) {
        *slot = outputs[key];
    }
}
