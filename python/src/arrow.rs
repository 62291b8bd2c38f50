//! Arrow arrays hashed in place by the library's `Engine::hash_arrow_*`
//! (binary and string values, numbers and lists of them, and dictionaries
//! of any hashable type), and NumPy records. Tested from
//! Python through the built extension (python/tests), against blake3-py on
//! every Arrow type, slice and null pattern.

use std::sync::Arc;

use arrow_array::{Array, ArrayRef};
use blake3_batch::{Engine, Error, ErrorKind, Mode};
use pyo3::exceptions::PyValueError;
use pyo3::prelude::*;
use pyo3::types::PyType;

/// `column` as the Arrow data to read: a pandas DataFrame, Series or Index
/// or a NumPy array as pyarrow data, without the DataFrame's index
/// (`blake3_batch._converted`); a Polars Series or DataFrame as it is, or
/// through pyarrow, or refused, where Polars' export departs from Arrow's
/// format (`blake3_batch._polars`); a DuckDB relation as it is unless its
/// export would lose a time's offset (`blake3_batch._duckdb`). Then, for a
/// pyarrow object, Ray's tensor columns as their values
/// (`blake3_batch._ray_columns`) and a copy of the columns that arrow-rs
/// would panic on importing
/// (`blake3_batch._unsliced`: structs in sliced structs,
/// apache/arrow-rs#9235), once pyarrow has found it sound
/// (`blake3_batch._validated`: arrow-rs would read past a buffer shorter
/// than the array's length implies); anything else as it is.
pub fn arrow_input<'py>(column: &Bound<'py, PyAny>) -> PyResult<Bound<'py, PyAny>> {
    let column = match module_of(column)? {
        module if module.starts_with("pandas") || module == "numpy" => {
            call_helper(column, "_converted", "as_arrow")?
        }
        module if module.starts_with("polars") => call_helper(column, "_polars", "as_arrow")?,
        module if module.starts_with("duckdb") || module.starts_with("_duckdb") => {
            call_helper(column, "_duckdb", "as_arrow")?
        }
        _ => column.clone(),
    };
    if !is_pyarrow(&column)? {
        return Ok(column);
    }
    let values = call_helper(&column, "_ray_columns", "ray_columns_as_values")?;
    let unsliced = call_helper(&values, "_unsliced", "unsliced")?;
    call_helper(&unsliced, "_validated", "validated")
}

/// The name of the module that defines `object`'s class.
fn module_of(object: &Bound<'_, PyAny>) -> PyResult<String> {
    Ok(object.get_type().module()?.to_cow()?.into_owned())
}

/// Whether `object` is a pyarrow object: of a pyarrow class or one derived
/// from it (Ray's tensor arrays are `pyarrow.ExtensionArray`s).
fn is_pyarrow(object: &Bound<'_, PyAny>) -> PyResult<bool> {
    for class in object.get_type().mro().iter() {
        let class = class.cast::<PyType>()?;
        if class.module()?.to_cow()?.starts_with("pyarrow") {
            return Ok(true);
        }
    }
    Ok(false)
}

/// `blake3_batch.<module>.<function>(object)`.
fn call_helper<'py>(
    object: &Bound<'py, PyAny>,
    module: &str,
    function: &str,
) -> PyResult<Bound<'py, PyAny>> {
    let helper = object
        .py()
        .import(format!("blake3_batch.{module}"))?
        .getattr(function)?;
    helper.call1((object,))
}

/// Runs `import`, an import of Arrow data through the C data interface,
/// and turns a panic inside arrow-rs into a `ValueError` that says what to
/// do: arrow-rs panics on structs in sliced structs from producers other
/// than pyarrow (whose slices [`unsliced`] copies first).
pub fn imported<T>(import: impl FnOnce() -> PyResult<T>) -> PyResult<T> {
    std::panic::catch_unwind(std::panic::AssertUnwindSafe(import)).unwrap_or_else(|_| {
        Err(PyValueError::new_err(
            "arrow-rs could not import this Arrow data (a slice of structs nested in structs \
             or fixed-size lists, apache/arrow-rs#9235): pass a copy that is not sliced, \
             e.g. with pyarrow.concat_arrays([column]) or DataFrame.rechunk()",
        ))
    })
}

/// The message for a column of another type.
pub fn unsupported(data_type: &str) -> String {
    format!(
        "cannot hash a column of type {data_type}: give binary, string or \
         fixed_size_binary values of any layout, fixed-width numbers, booleans, nulls, or \
         dictionaries, lists, list views, maps, structs (of one field or more), unions \
         (of one member or more) or run-end encoded columns of those, nested to any depth"
    )
}

/// Outputs of every row of `array`, `length` bytes each from byte `seek`
/// on, as a FixedSizeBinary array with the input's nulls (null rows hold
/// zeros).
pub fn hash_array(
    engine: &Engine,
    mode: Mode,
    (length, seek): (usize, u64),
    array: &dyn Array,
) -> Result<ArrayRef, Error> {
    let outputs = engine.hash_arrow_xof_at(mode, array, length, seek)?;
    Ok(Arc::new(outputs))
}

/// The first 8 bytes of every row's digest as a little-endian `u64`, with
/// the input's nulls (null rows hold 0).
pub fn hash_array_u64(engine: &Engine, mode: Mode, array: &dyn Array) -> Result<ArrayRef, Error> {
    Ok(Arc::new(engine.hash_arrow_u64(mode, array)?))
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
    // Zeroed by the allocator (fresh pages from the kernel for a large
    // output), not by a pass on this thread: the engine's threads that
    // write the outputs fault the pages in.
    bytemuck::allocation::try_zeroed_vec(bytes).map_err(|()| too_large(bytes).into())
}

/// `count` records of `size` bytes (possibly 0) back to back in `data`:
/// writes `length` bytes of each one's output from byte `seek` on into
/// `out` (`count * length` bytes). Where the engine fails, `out` is left
/// all zeros: no row holds a digest that could be taken for its own.
pub fn records_into(
    engine: &Engine,
    mode: Mode,
    (length, seek): (usize, u64),
    (data, size, count): (&[u8], usize, usize),
    out: &mut [u8],
) -> Result<(), Error> {
    let hashed = match size {
        // Records of 0 bytes are all the empty input; the engine wants a
        // record size of at least 1.
        0 => engine.hash_slices_xof_at_into(mode, &vec![&[][..]; count], length, seek, out),
        _ => engine.hash_records_xof_at_into(mode, &data[..count * size], size, length, seek, out),
    };
    if hashed.is_err() {
        out.fill(0);
    }
    hashed
}
