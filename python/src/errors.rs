//! The engine's errors as the Python exceptions that fit them.

use std::io;

use blake3_batch::{Error, ErrorKind};
use pyo3::exceptions::{PyMemoryError, PyOSError, PyRuntimeError, PyTypeError, PyValueError};
use pyo3::PyErr;

/// Input the caller can fix (offsets, sizes, thread counts) is a
/// `ValueError`; memory that cannot be had, a `MemoryError`; input that
/// cannot be read, an `OSError`; a backend that is missing or failed, a
/// `RuntimeError`.
/// The message is the engine's, which says what to change.
pub fn to_py(error: Error) -> PyErr {
    match error.kind() {
        ErrorKind::OutputLength { .. }
        | ErrorKind::XofLength
        | ErrorKind::XofOutputLength { .. }
        | ErrorKind::OffsetsEmpty
        | ErrorKind::OffsetsDecrease { .. }
        | ErrorKind::OffsetOutOfBounds { .. }
        | ErrorKind::RecordSizeZero
        | ErrorKind::RecordSizeMismatch { .. }
        | ErrorKind::ZeroThreads
        | ErrorKind::TooManyThreads { .. }
        | ErrorKind::GpuMemoryBudget { .. }
        | ErrorKind::ArrowNullValue { .. }
        | ErrorKind::ArrowDictionaryKey { .. }
        | ErrorKind::ArrowListOffsets { .. }
        | ErrorKind::ArrowRunEnds { .. }
        | ErrorKind::ArrowUnion { .. } => PyValueError::new_err(error.to_string()),
        ErrorKind::ArrowType { .. } => PyTypeError::new_err(error.to_string()),
        ErrorKind::OutOfMemory { .. } => PyMemoryError::new_err(error.to_string()),
        ErrorKind::Read { .. } | ErrorKind::FileChanged { .. } => {
            PyOSError::new_err(error.to_string())
        }
        // `FileNotFoundError`, `PermissionError`, `IsADirectoryError`, …
        ErrorKind::File { io_kind, .. } => io::Error::new(*io_kind, error.to_string()).into(),
        _ => PyRuntimeError::new_err(error.to_string()),
    }
}
