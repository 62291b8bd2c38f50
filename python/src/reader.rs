//! A Python binary file object (anything whose `read(n)` returns `bytes`
//! or another bytes-like object: an open file, `io.BytesIO`,
//! `sys.stdin.buffer`, a socket's file, an fsspec file, a reader that
//! hands out `memoryview`s of its buffer) as a Rust `Read`, for
//! `Engine.hash_reader`. The engine runs with the GIL released; each read
//! takes it back for the Python call and copies the bytes it returns.

use std::io::{self, Read};

use pyo3::exceptions::{PyTypeError, PyValueError};
use pyo3::prelude::*;
use pyo3::types::{PyBytesMethods, PyString};

use crate::blobs::bytes_like;
use crate::options::type_name;

/// Reads from a Python object; the first Python exception a read raises
/// is kept in `failure` (and the read fails), for the caller to raise in
/// place of the engine's read error.
pub struct PyReader<'f> {
    reader: Py<PyAny>,
    failure: &'f mut Option<PyErr>,
}

impl<'f> PyReader<'f> {
    /// Fails with a `TypeError` for an object without a `read` method.
    pub fn new(reader: &Bound<'_, PyAny>, failure: &'f mut Option<PyErr>) -> PyResult<Self> {
        if !reader.hasattr("read")? {
            return Err(PyTypeError::new_err(format!(
                "hash_reader takes a binary file object with read(n), got {}",
                type_name(reader)
            )));
        }
        Ok(PyReader {
            reader: reader.clone().unbind(),
            failure,
        })
    }

    /// Calls `read(len)` and copies what it returns into `buffer`.
    fn read_into(&self, py: Python<'_>, buffer: &mut [u8]) -> PyResult<usize> {
        let chunk = self.reader.bind(py).call_method1("read", (buffer.len(),))?;
        let copy = |bytes: &[u8], buffer: &mut [u8]| {
            if bytes.len() > buffer.len() {
                return Err(PyValueError::new_err(format!(
                    "read({}) returned {} bytes, more than it was asked for",
                    buffer.len(),
                    bytes.len()
                )));
            }
            buffer[..bytes.len()].copy_from_slice(bytes);
            Ok(bytes.len())
        };
        if let Some(bytes) = bytes_like(&chunk)? {
            return copy(bytes.as_bytes(), buffer);
        }
        let hint = match chunk.is_instance_of::<PyString>() {
            true => ": open the file in binary mode ('rb')",
            false if chunk.is_none() => ": a non-blocking stream had no data; give a blocking one",
            false => "",
        };
        Err(PyTypeError::new_err(format!(
            "the reader's read(n) returned {}, not a bytes-like object{hint}",
            type_name(&chunk)
        )))
    }
}

impl Read for PyReader<'_> {
    fn read(&mut self, buffer: &mut [u8]) -> io::Result<usize> {
        if buffer.is_empty() {
            return Ok(0);
        }
        match Python::attach(|py| self.read_into(py, buffer)) {
            Ok(read) => Ok(read),
            Err(error) => {
                let message = error.to_string();
                *self.failure = Some(error);
                Err(io::Error::other(message))
            }
        }
    }
}
