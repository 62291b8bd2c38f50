//! The paths `hash_file` and `hash_files` take: `str`, `bytes` or
//! `os.PathLike` objects as `open()` takes them, or an Arrow column of
//! strings or of binary file names.

use std::path::PathBuf;

use arrow_array::ArrayRef;
use pyo3::exceptions::PyTypeError;
use pyo3::prelude::*;
use pyo3::types::{PyBytes, PyString};
use pyo3_arrow::input::AnyArray;

use crate::arrow::arrow_input;
use crate::engine::stream_chunks;
use crate::options::type_name;
use crate::tables::{column_of, one_column};

/// One path from a `str`, `bytes` or `os.PathLike` (of either), as
/// `open()` reads it; a `TypeError` naming what to give otherwise.
pub fn path_of(path: &Bound<'_, PyAny>) -> PyResult<PathBuf> {
    if let Ok(path) = path.extract::<PathBuf>() {
        return Ok(path);
    }
    // Bytes, or a PathLike that gives bytes: `os.fsdecode` undoes the file
    // system's encoding as Python does (surrogateescape on POSIX), which
    // the extraction above encodes back, so the file named is the same.
    let decoded = path
        .py()
        .import("os")?
        .getattr("fsdecode")?
        .call1((path,))
        .map_err(|_| {
            PyTypeError::new_err(format!(
                "a path is {}: give str, bytes or os.PathLike",
                type_name(path)
            ))
        })?;
    decoded.extract::<PathBuf>()
}

/// The paths of an Arrow array or stream of strings or binary names
/// (pyarrow, Polars, …), or of an iterable of `str`, `bytes` or
/// `os.PathLike` (not one `str` or `bytes`, which would be its characters);
/// `None` for a null or a `None`.
pub fn path_list(paths: &Bound<'_, PyAny>) -> PyResult<Vec<Option<PathBuf>>> {
    let paths = &arrow_input(paths)?;
    if paths.hasattr("__arrow_c_array__")? || paths.hasattr("__arrow_c_stream__")? {
        return arrow_paths(paths);
    }
    if paths.is_instance_of::<PyString>() || paths.is_instance_of::<PyBytes>() {
        return Err(PyTypeError::new_err(
            "paths is one string: give a list of paths (or use hash_file for one)",
        ));
    }
    let items = paths.try_iter().map_err(|_| {
        PyTypeError::new_err(format!(
            "paths is {}: give an iterable of str, bytes or os.PathLike, or an Arrow array of strings",
            type_name(paths)
        ))
    })?;
    items
        .map(|item| {
            let item = item?;
            if item.is_none() {
                return Ok(None);
            }
            path_of(&item).map(Some)
        })
        .collect()
}

/// The values of an Arrow array or stream of `string`, `large_string` or
/// `string_view` values, or of `binary`, `large_binary` or `binary_view`
/// file names, as paths.
fn arrow_paths(paths: &Bound<'_, PyAny>) -> PyResult<Vec<Option<PathBuf>>> {
    use arrow_array::cast::AsArray;

    let paths = paths.extract::<AnyArray>()?;
    let is_table = one_column(paths.field()?.as_ref())?.is_some();
    let mut chunks: Vec<ArrayRef> = match paths {
        AnyArray::Array(array) => vec![array.into_inner().0],
        AnyArray::Stream(stream) => stream_chunks(stream)?,
    };
    if is_table {
        // A table of one column of paths (a query's result) is that column.
        chunks = chunks.iter().map(column_of).collect::<PyResult<_>>()?;
    }
    let mut found = Vec::new();
    for chunk in &chunks {
        let text = |value: Option<&str>| Ok(value.map(PathBuf::from));
        let name = |value: Option<&[u8]>| value.map(path_from_bytes).transpose();
        let paths: PyResult<Vec<_>> = if let Some(strings) = chunk.as_string_opt::<i32>() {
            strings.iter().map(text).collect()
        } else if let Some(strings) = chunk.as_string_opt::<i64>() {
            strings.iter().map(text).collect()
        } else if let Some(strings) = chunk.as_string_view_opt() {
            strings.iter().map(text).collect()
        } else if let Some(names) = chunk.as_binary_opt::<i32>() {
            names.iter().map(name).collect()
        } else if let Some(names) = chunk.as_binary_opt::<i64>() {
            names.iter().map(name).collect()
        } else if let Some(names) = chunk.as_binary_view_opt() {
            names.iter().map(name).collect()
        } else {
            return Err(PyTypeError::new_err(format!(
                "paths is an Arrow array of {}: give strings (string, large_string or \
                 string_view) or binary file names (binary, large_binary or binary_view)",
                chunk.data_type()
            )));
        };
        found.extend(paths?);
    }
    Ok(found)
}

/// A path from a binary file name: its bytes as they are where file names
/// are bytes (POSIX).
#[cfg(unix)]
fn path_from_bytes(name: &[u8]) -> PyResult<PathBuf> {
    use std::os::unix::ffi::OsStrExt;
    Ok(std::ffi::OsStr::from_bytes(name).into())
}

/// A path from a binary file name: UTF-8, as Python decodes bytes paths
/// where file names are Unicode (Windows).
#[cfg(not(unix))]
fn path_from_bytes(name: &[u8]) -> PyResult<PathBuf> {
    std::str::from_utf8(name).map(PathBuf::from).map_err(|_| {
        pyo3::exceptions::PyValueError::new_err(
            "a binary path is not UTF-8, which file names are on this system: decode it first",
        )
    })
}
