//! `Engine.hash_arrow_batches`: the digests of an Arrow stream (a DuckDB
//! query, a `RecordBatchReader` over Parquet, a chunked array) or of an
//! iterable of Arrow arrays and batches, one output array per input batch,
//! each batch read only when the last one's output is taken. So a column
//! larger than memory is hashed in the memory of one batch, which
//! `hash_arrow` (which returns every chunk's digests at once) cannot do.

use std::sync::Mutex;

use arrow_schema::FieldRef;
use pyo3::exceptions::{PyTypeError, PyValueError};
use pyo3::prelude::*;
use pyo3::types::{PyDict, PyIterator};
use pyo3_arrow::ffi::ArrayReader;
use pyo3_arrow::{PyArray, PyArrayReader};

use crate::engine::PyEngine;
use crate::options::type_name;

/// Where the batches come from.
enum Source {
    /// An Arrow C stream, read a batch at a time (with the GIL held: its
    /// producer may be Python code).
    Stream {
        reader: Box<dyn ArrayReader + Send>,
        field: FieldRef,
    },
    /// A Python iterable whose items `hash_arrow` takes.
    Items(Py<PyIterator>),
}

/// What `Engine.hash_arrow_batches` returns: an iterator of output arrays,
/// one per input batch, as `hash_arrow` (or `hash_arrow_u64`) gives them.
#[pyclass(name = "ArrowDigestBatches", module = "blake3_batch")]
pub struct ArrowDigestBatches {
    /// Looked up for each batch, so a closed engine stops the iteration.
    engine: Py<PyEngine>,
    /// `None` once the source is used up or failed.
    source: Mutex<Option<Source>>,
    /// `"hash_arrow"` or `"hash_arrow_u64"`, and the keyword arguments the
    /// call was given (already checked).
    method: &'static str,
    options: Py<PyDict>,
}

impl ArrowDigestBatches {
    /// The batches of `source` (an object with `__arrow_c_stream__` or
    /// `__arrow_c_array__`, or an iterable of such objects), each to be
    /// hashed by `engine.method(batch, **options)`.
    pub fn new(
        engine: Py<PyEngine>,
        source: &Bound<'_, PyAny>,
        method: &'static str,
        options: Bound<'_, PyDict>,
    ) -> PyResult<Self> {
        let source = if source.hasattr("__arrow_c_stream__")? {
            let stream: PyArrayReader = source.extract()?;
            let field = stream.field_ref()?;
            Source::Stream {
                reader: stream.into_reader()?,
                field,
            }
        } else if source.hasattr("__arrow_c_array__")? {
            // One array is one batch.
            let one = pyo3::types::PyList::new(source.py(), [source])?;
            Source::Items(one.try_iter()?.unbind())
        } else {
            let items = source.try_iter().map_err(|_| {
                PyTypeError::new_err(format!(
                    "expected an Arrow stream (an object with __arrow_c_stream__: a chunked \
                     array, a RecordBatchReader, a DuckDB query, ...) or an iterable of Arrow \
                     arrays or record batches, not {}",
                    type_name(source)
                ))
            })?;
            Source::Items(items.unbind())
        };
        Ok(ArrowDigestBatches {
            engine,
            source: Mutex::new(Some(source)),
            method,
            options: options.unbind(),
        })
    }

    /// The next batch as a Python object `hash_arrow` takes, or `None` at
    /// the end.
    fn next_batch<'py>(&self, py: Python<'py>) -> PyResult<Option<Bound<'py, PyAny>>> {
        let mut source = self
            .source
            .lock()
            .map_err(|_| PyValueError::new_err("a batch failed while being read"))?;
        let next = match source.as_mut() {
            None => return Ok(None),
            Some(Source::Items(items)) => match items.bind(py).clone().next() {
                Some(item) => item.map(Some),
                None => Ok(None),
            },
            Some(Source::Stream { reader, field }) => match reader.next() {
                Some(Ok(array)) => PyArray::try_new(array, field.clone())
                    .map_err(|error| PyValueError::new_err(format!("an Arrow batch: {error}")))
                    .and_then(|array| array.into_pyobject(py).map(|array| Some(array.into_any()))),
                Some(Err(error)) => Err(PyValueError::new_err(format!(
                    "reading the Arrow stream: {error}"
                ))),
                None => Ok(None),
            },
        };
        if !matches!(next, Ok(Some(_))) {
            // Used up, or failed: release the stream (its producer's
            // resources) now, and end the iteration after the error.
            *source = None;
        }
        next
    }
}

#[pymethods]
impl ArrowDigestBatches {
    fn __iter__(slf: PyRef<'_, Self>) -> PyRef<'_, Self> {
        slf
    }

    /// The next batch's outputs, as `hash_arrow` returns them; an error of
    /// the stream, or of a batch `hash_arrow` refuses, is raised then.
    fn __next__<'py>(&self, py: Python<'py>) -> PyResult<Option<Bound<'py, PyAny>>> {
        let Some(batch) = self.next_batch(py)? else {
            return Ok(None);
        };
        let engine = self.engine.bind(py);
        engine
            .call_method(self.method, (batch,), Some(self.options.bind(py)))
            .map(Some)
    }
}
