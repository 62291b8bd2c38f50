//! The items of `hash_many` and `hash_iter`: bytes-like objects as the
//! byte slices the engine hashes without the GIL.
//!
//! The stable ABI of Python 3.9 has no buffer protocol, so a buffer other
//! than `bytes` is read through Python: copied where it is small (a copy
//! costs less than a view), and read in place where it is large, through a
//! NumPy view of it (`numpy.frombuffer`). That view holds the buffer's
//! export for as long as the hashing runs, so a `bytearray` cannot be
//! resized nor an `mmap` closed under it. A buffer of Python objects is
//! refused: its bytes are memory addresses.

use numpy::{PyArray1, PyArrayMethods, PyReadonlyArray1};
use pyo3::exceptions::{PyBufferError, PyTypeError};
use pyo3::intern;
use pyo3::prelude::*;
use pyo3::sync::PyOnceLock;
use pyo3::types::{PyByteArray, PyBytes, PyIterator, PyMemoryView, PyString};

use crate::options::type_name;

/// From this size on a buffer is read in place rather than copied: below
/// it, copying the bytes costs less than making a NumPy view of them
/// (about 1 µs an item, measured with `hash_many` over memoryviews).
pub const READ_IN_PLACE_FROM: usize = 4096;

/// One item's bytes.
pub enum Blob<'py> {
    /// A `bytes` object: the item, read in place, or a copy of a small or
    /// non-contiguous buffer.
    Bytes(Bound<'py, PyBytes>),
    /// A small `bytearray`'s bytes, copied (cheaper than through a
    /// memoryview).
    Copied(Vec<u8>),
    /// A large C-contiguous buffer, read in place through a NumPy view
    /// that holds its export.
    InPlace(PyReadonlyArray1<'py, u8>),
}

impl Blob<'_> {
    /// The item's bytes.
    pub fn as_bytes(&self) -> PyResult<&[u8]> {
        match self {
            Blob::Bytes(bytes) => Ok(bytes.as_bytes()),
            Blob::Copied(bytes) => Ok(bytes),
            // `numpy.frombuffer` views are one contiguous run of bytes.
            Blob::InPlace(view) => view
                .as_slice()
                .map_err(|_| PyBufferError::new_err("a buffer's NumPy view is not contiguous")),
        }
    }
}

/// An iterator over `items`, the blobs of a call that takes many (which
/// `takes` names), or a `TypeError` where `items` is not iterable or is
/// one `bytes`, `bytearray` or `str`: iterated, that would give bytes or
/// characters, not blobs.
pub fn blob_iterator<'py>(
    items: &Bound<'py, PyAny>,
    takes: &str,
) -> PyResult<Bound<'py, PyIterator>> {
    if items.is_instance_of::<PyBytes>()
        || items.is_instance_of::<PyByteArray>()
        || items.is_instance_of::<PyString>()
    {
        return Err(PyTypeError::new_err(format!(
            "{takes} of bytes-like objects, not one {}: wrap it in a list",
            type_name(items)
        )));
    }
    items.try_iter().map_err(|_| {
        PyTypeError::new_err(format!(
            "{takes} of bytes-like objects, not {}",
            type_name(items)
        ))
    })
}

/// The items of an iterator as blobs, or a `TypeError` that names the
/// first item that is not bytes-like (by its index, counted from `first`,
/// in the items of `call`). Items are taken until the iterator ends or
/// the blobs hold `max_bytes` (the item that reaches it among them), the
/// rest left in the iterator.
pub fn blob_items<'py>(
    items: impl Iterator<Item = PyResult<Bound<'py, PyAny>>>,
    capacity: usize,
    max_bytes: usize,
    call: &str,
    first: usize,
) -> PyResult<Vec<Blob<'py>>> {
    let mut blobs = Vec::with_capacity(capacity);
    let mut bytes = 0usize;
    for (index, item) in (first..).zip(items) {
        let item = item?;
        let blob = blob_of(&item, call, index)?.ok_or_else(|| {
            PyTypeError::new_err(format!(
                "{call}: item {index} is {}, not a bytes-like object{}",
                type_name(&item),
                if item.is_instance_of::<PyString>() {
                    " (encode strings first, e.g. s.encode())"
                } else {
                    ""
                }
            ))
        })?;
        bytes = bytes.saturating_add(blob.as_bytes()?.len());
        blobs.push(blob);
        if bytes >= max_bytes {
            break;
        }
    }
    Ok(blobs)
}

/// An item's bytes, or `None` where it is not bytes-like.
fn blob_of<'py>(item: &Bound<'py, PyAny>, call: &str, index: usize) -> PyResult<Option<Blob<'py>>> {
    if let Ok(bytes) = item.cast::<PyBytes>() {
        return Ok(Some(Blob::Bytes(bytes.clone())));
    }
    if let Ok(array) = item.cast::<PyByteArray>() {
        if array.len() < READ_IN_PLACE_FROM {
            return Ok(Some(Blob::Copied(array.to_vec())));
        }
    }
    let Some(view) = memoryview_of_bytes(item, || format!("{call}: item {index}"))? else {
        return Ok(None);
    };
    let py = item.py();
    let small = view.getattr(intern!(py, "nbytes"))?.extract::<usize>()? < READ_IN_PLACE_FROM;
    // Only a C-contiguous buffer is one run of bytes that can be read as it is.
    if small
        || !view
            .getattr(intern!(py, "c_contiguous"))?
            .extract::<bool>()?
    {
        let bytes = view
            .call_method0(intern!(py, "tobytes"))?
            .cast_into::<PyBytes>()?;
        return Ok(Some(Blob::Bytes(bytes)));
    }
    let in_place = frombuffer(py)?
        .call1((view, numpy::dtype::<u8>(py)))?
        .cast_into::<PyArray1<u8>>()?;
    let in_place = in_place.try_readonly().map_err(|_| {
        PyBufferError::new_err(format!(
            "{call}: item {index} is being written by another call (an out= array still \
             being filled): hash it once that call has returned"
        ))
    })?;
    Ok(Some(Blob::InPlace(in_place)))
}

/// A bytes-like object's bytes, copied unless it is a `bytes` object
/// (for a reader's chunks, which are copied where they go anyway); `None`
/// for an object that is not bytes-like.
pub fn bytes_like<'py>(object: &Bound<'py, PyAny>) -> PyResult<Option<Bound<'py, PyBytes>>> {
    if let Ok(bytes) = object.cast::<PyBytes>() {
        return Ok(Some(bytes.clone()));
    }
    match memoryview_of_bytes(object, || "the reader's read(n) result".to_owned())? {
        Some(view) => Ok(Some(
            view.call_method0(intern!(object.py(), "tobytes"))?
                .cast_into()?,
        )),
        None => Ok(None),
    }
}

/// A memoryview of `object`, `None` where it has no buffer, or a
/// `TypeError` (naming it as `what`) where its buffer holds Python
/// objects: their bytes are memory addresses, which would give a digest
/// that changes from run to run and says nothing of the values.
fn memoryview_of_bytes<'py>(
    object: &Bound<'py, PyAny>,
    what: impl FnOnce() -> String,
) -> PyResult<Option<Bound<'py, PyMemoryView>>> {
    let Ok(view) = PyMemoryView::from(object) else {
        return Ok(None);
    };
    let py = object.py();
    let format = view
        .getattr(intern!(py, "format"))?
        .cast_into::<PyString>()?;
    // Unsigned bytes, the format of most buffers, without decoding it
    // (CPython keeps one string of each single character).
    if format.is(intern!(py, "B")) {
        return Ok(Some(view));
    }
    let format = format.to_cow()?;
    if holds_python_objects(&format) {
        return Err(PyTypeError::new_err(format!(
            "{} is a buffer of Python objects (format {format:?}, as a NumPy array of \
             dtype object gives), whose bytes are memory addresses, not values: give their \
             bytes (for an array of bytes objects, its items: list(array))",
            what()
        )));
    }
    Ok(Some(view))
}

/// Whether a buffer's struct-module format holds a Python object (`O`),
/// outside the field names that sit between colons (`T{i:Obj:}`).
fn holds_python_objects(format: &str) -> bool {
    format
        .split(':')
        .step_by(2)
        .any(|codes| codes.contains('O'))
}

/// `numpy.frombuffer`, looked up once.
fn frombuffer(py: Python<'_>) -> PyResult<&Bound<'_, PyAny>> {
    static FROMBUFFER: PyOnceLock<Py<PyAny>> = PyOnceLock::new();
    FROMBUFFER
        .get_or_try_init(py, || {
            Ok::<_, PyErr>(py.import("numpy")?.getattr("frombuffer")?.unbind())
        })
        .map(|function| function.bind(py))
}
