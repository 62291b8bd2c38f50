//! The keyword arguments every hashing call takes: which BLAKE3 mode, and
//! which bytes of each output to keep.

use blake3_batch::Mode;
use pyo3::exceptions::{PyTypeError, PyValueError};
use pyo3::prelude::*;
use pyo3::types::{PyByteArray, PyBytes};

/// The mode of a call, owning its key or context so that it can cross into
/// code that runs without the GIL.
#[derive(Clone, Debug)]
pub enum OwnedMode {
    Hash,
    Keyed([u8; 32]),
    DeriveKey(String),
}

impl OwnedMode {
    pub fn as_mode(&self) -> Mode<'_> {
        match self {
            OwnedMode::Hash => Mode::Hash,
            OwnedMode::Keyed(key) => Mode::KeyedHash(key),
            OwnedMode::DeriveKey(context) => Mode::DeriveKey(context),
        }
    }
}

/// Mode and digest length of one call, checked.
#[derive(Clone, Debug)]
pub struct Options {
    pub mode: OwnedMode,
    /// Output bytes per input, 1..=`MAX_LENGTH`: BLAKE3's output is an
    /// extendable output function, whose first 32 bytes are the digest, so
    /// a shorter output is a prefix of it and a longer one extends it.
    pub length: usize,
    /// The output's first byte, as blake3-py's `digest(seek=…)`: bytes
    /// `seek..seek + length` of the extended output.
    pub seek: u64,
}

/// The longest output per input: the widest Arrow `FixedSizeBinary`.
const MAX_LENGTH: usize = i32::MAX as usize;

/// The longest output per row of an Arrow array: pyarrow counts the bits of
/// a `fixed_size_binary` row in 32 bits when it imports one, so an array of
/// rows of 2**28 bytes or more would come back with a wrong buffer size.
const MAX_ARROW_LENGTH: usize = (1 << 28) - 1;

impl Options {
    pub fn parse(
        key: Option<&Bound<'_, PyAny>>,
        derive_key: Option<&str>,
        length: i128,
        seek: i128,
    ) -> PyResult<Options> {
        let length = usize::try_from(length)
            .ok()
            .filter(|length| (1..=MAX_LENGTH).contains(length))
            .ok_or_else(|| {
                PyValueError::new_err(format!(
                    "length={length} is out of range: give 1 to {MAX_LENGTH} bytes \
                     (32 is the digest, fewer its prefix, more BLAKE3's extended output)"
                ))
            })?;
        let seek = u64::try_from(seek).map_err(|_| {
            PyValueError::new_err(format!(
                "seek={seek} is out of range: give 0 to 2**64 - 1, the output byte to start from"
            ))
        })?;
        let mode = match (key, derive_key) {
            (Some(_), Some(_)) => {
                return Err(PyValueError::new_err(
                    "give key= (keyed hashing) or derive_key= (key derivation), not both",
                ))
            }
            (Some(key), None) => OwnedMode::Keyed(key_bytes(key)?),
            (None, Some(context)) => OwnedMode::DeriveKey(context.to_owned()),
            (None, None) => OwnedMode::Hash,
        };
        Ok(Options { mode, length, seek })
    }

    /// These options for outputs returned as Arrow arrays, which pyarrow
    /// must read back: a `ValueError` for rows it would misread.
    pub fn for_arrow(self) -> PyResult<Options> {
        if self.length > MAX_ARROW_LENGTH {
            return Err(PyValueError::new_err(format!(
                "length={} is out of range for an Arrow output: give 1 to {MAX_ARROW_LENGTH} \
                 bytes (pyarrow misreads rows of 2**28 bytes or more), or hash_many for \
                 longer outputs",
                self.length
            )));
        }
        Ok(self)
    }

    /// Whether the output lies within the digest's 32 bytes (`None` when
    /// it reaches past them, into the extended output).
    pub fn in_digest(&self) -> Option<std::ops::Range<usize>> {
        let start = usize::try_from(self.seek).ok()?;
        let end = start.checked_add(self.length).filter(|&end| end <= 32)?;
        Some(start..end)
    }
}

/// A 32-byte key from `bytes` or `bytearray`.
fn key_bytes(key: &Bound<'_, PyAny>) -> PyResult<[u8; 32]> {
    let bytes: Vec<u8> = if let Ok(bytes) = key.cast::<PyBytes>() {
        bytes.as_bytes().to_vec()
    } else if let Ok(array) = key.cast::<PyByteArray>() {
        array.to_vec()
    } else {
        return Err(PyTypeError::new_err(format!(
            "key must be 32 bytes (bytes or bytearray), not {}",
            type_name(key)
        )));
    };
    <[u8; 32]>::try_from(bytes.as_slice()).map_err(|_| {
        PyValueError::new_err(format!(
            "key must be exactly 32 bytes, got {}: derive one with derive_key= if yours has another length",
            bytes.len()
        ))
    })
}

/// The Python type name of an object, for messages.
pub fn type_name(object: &Bound<'_, PyAny>) -> String {
    object
        .get_type()
        .name()
        .map(|name| name.to_string())
        .unwrap_or_else(|_| "object".to_owned())
}
