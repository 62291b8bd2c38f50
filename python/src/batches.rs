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
use pyo3::types::PyIterator;
use pyo3_arrow::ffi::ArrayReader;
use pyo3_arrow::{PyArray, PyArrayReader};

use crate::arrow::{arrow_input, imported};
use crate::engine::{ArrowOutput, PyEngine};
use crate::options::type_name;
use crate::tables::{shape_of, Shape};

/// Where the batches come from.
enum Source {
    /// An Arrow C stream, read a batch at a time (with the GIL held: its
    /// producer may be Python code).
    Stream {
        reader: Box<dyn ArrayReader + Send>,
        field: FieldRef,
        /// A table's batches, or a column's chunks: the stream's own.
        shape: Shape,
    },
    /// A Python iterable whose items `hash_arrow` takes.
    Items(Py<PyIterator>),
}

/// How far the iteration has gone.
struct Progress {
    /// `None` once the source is used up or failed.
    source: Option<Source>,
    /// The batches read so far.
    batches: usize,
    /// The rows of those batches, or `None` once a batch's length could
    /// not be told (an item without `len()` that failed).
    rows: Option<usize>,
}

/// What `Engine.hash_arrow_batches` returns: an iterator of output arrays,
/// one per input batch, as `hash_arrow` (or `hash_arrow_u64`) gives them.
#[pyclass(name = "ArrowDigestBatches", module = "blake3_batch")]
pub struct ArrowDigestBatches {
    /// Looked up for each batch, so a closed engine stops the iteration.
    engine: Py<PyEngine>,
    /// Never locked (`__next__` has `&mut self`): the Mutex makes the
    /// stream reader, which is `Send` only, `Sync`, as a Python class must be.
    progress: Mutex<Progress>,
    /// What each row gets (options already checked).
    output: ArrowOutput,
    /// Whether each batch's rows are hashed over all its columns.
    rows: bool,
}

impl ArrowDigestBatches {
    /// The batches of `source` (an object with `__arrow_c_stream__` or
    /// `__arrow_c_array__`, or an iterable of such objects), each to be
    /// hashed by `engine` into `output`.
    pub fn new(
        engine: Py<PyEngine>,
        source: &Bound<'_, PyAny>,
        output: ArrowOutput,
        rows: bool,
    ) -> PyResult<Self> {
        let shape = shape_of(source)?;
        let source = &arrow_input(source)?;
        let source = if source.hasattr("__arrow_c_stream__")? {
            let stream: PyArrayReader = source.extract()?;
            let field = stream.field_ref()?;
            Source::Stream {
                reader: stream.into_reader()?,
                field,
                shape,
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
            progress: Mutex::new(Progress {
                source: Some(source),
                batches: 0,
                rows: Some(0),
            }),
            output,
            rows,
        })
    }

    /// The next batch as a Python object `hash_arrow` takes, with its
    /// shape, or `None` at the end.
    fn next_batch<'py>(
        py: Python<'py>,
        progress: &mut Progress,
    ) -> PyResult<Option<(Bound<'py, PyAny>, Shape)>> {
        let next = match progress.source.as_mut() {
            None => return Ok(None),
            Some(Source::Items(items)) => match items.bind(py).clone().next() {
                Some(item) => {
                    item.and_then(|item| shape_of(&item).map(|shape| Some((item, shape))))
                }
                None => Ok(None),
            },
            Some(Source::Stream {
                reader,
                field,
                shape,
            }) => match imported(|| Ok(reader.next())) {
                Ok(Some(Ok(array))) => PyArray::try_new(array, field.clone())
                    .map_err(|error| PyValueError::new_err(format!("an Arrow batch: {error}")))
                    .and_then(|array| array.into_pyobject(py))
                    .map(|array| Some((array.into_any(), *shape))),
                Ok(Some(Err(error))) => Err(PyValueError::new_err(format!(
                    "reading the Arrow stream: {error}"
                ))),
                Ok(None) => Ok(None),
                Err(error) => Err(error),
            },
        };
        if !matches!(next, Ok(Some(_))) {
            // Used up, or failed: release the stream (its producer's
            // resources) now, and end the iteration after the error.
            progress.source = None;
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
    /// the stream, or of a batch `hash_arrow` refuses, is raised then, its
    /// message naming the batch and rows counted from the stream's start.
    /// Takes `&mut self`, so that a second thread's `next()` while one
    /// reads or hashes a batch is refused (as a generator's is), neither
    /// waiting for the lock with the GIL held nor reading out of turn.
    fn __next__<'py>(&mut self, py: Python<'py>) -> PyResult<Option<Bound<'py, PyAny>>> {
        let progress = self
            .progress
            .get_mut()
            .map_err(|_| PyValueError::new_err("a batch failed while being read"))?;
        let Some((batch, shape)) = Self::next_batch(py, progress)? else {
            return Ok(None);
        };
        let index = progress.batches;
        let first_row = progress.rows;
        progress.batches += 1;
        let engine = self.engine.bind(py).get();
        let first = first_row.unwrap_or(0);
        let outputs = engine.hash_arrow_from(py, (&batch, shape), &self.output, self.rows, first);
        // One output row per input row; a batch that failed is counted
        // by its length where it has one.
        let rows = match &outputs {
            Ok(outputs) => outputs.len().ok(),
            Err(_) => batch.len().ok(),
        };
        progress.rows = first_row.zip(rows).map(|(first, rows)| first + rows);
        outputs
            .map(Some)
            .map_err(|error| in_batch(py, error, index, first_row.is_some()))
    }
}

/// `error`, raised by the hashing of batch `index`, as the same exception
/// with the batch named first (its cause the original). Only the
/// `ValueError`s and `TypeError`s of a batch's values are renamed; with
/// `rows_counted`, the rows the message names count from the stream's
/// start, and within the batch otherwise.
fn in_batch(py: Python<'_>, error: PyErr, index: usize, rows_counted: bool) -> PyErr {
    let is_values_error =
        error.is_instance_of::<PyValueError>(py) || error.is_instance_of::<PyTypeError>(py);
    if !is_values_error {
        return error;
    }
    let rows = match rows_counted {
        true => "",
        false => " (rows counted within the batch)",
    };
    let message = format!("batch {index} of the stream{rows}: {}", error.value(py));
    match error.get_type(py).call1((message,)) {
        Ok(renamed) => {
            let renamed = PyErr::from_value(renamed);
            renamed.set_cause(py, Some(error));
            renamed
        }
        Err(_) => error,
    }
}
