//! `blake3_batch.PinnedBuffer`: host memory an engine's GPU copies batches
//! from where they lie, which Python fills and hashes through NumPy views.

use blake3_batch::PinnedBuffer;
use pyo3::prelude::*;
use pyo3::types::PyDict;

use crate::engine::release_in;

/// Bytes in pinned host memory of an engine's GPU (ordinary memory where
/// the engine has none). `numpy.asarray(buffer)` is a writable `uint8`
/// view of them, which keeps the buffer alive: fill it (`file.readinto`,
/// `numpy.copyto`), then hash views of it (`hash_records`, or an Arrow
/// column over it), and the GPU copies the rows straight from it, with no
/// core packing them (only a table of where each starts, where they are
/// not all one length of up to 1 KiB). `hash_records(...,
/// out=view)` into it lets the GPU write digests there too.
#[pyclass(name = "PinnedBuffer", module = "blake3_batch", frozen)]
pub struct PyPinnedBuffer {
    /// Owned here, its bytes never borrowed again from Rust: Python reads
    /// and writes them through NumPy views of `address`. Always `Some`
    /// but while it is dropped.
    buffer: Option<PinnedBuffer>,
    /// Where the bytes start, taken from a mutable borrow so that the
    /// views may write.
    address: usize,
    /// Their length, kept so as not to borrow them to ask.
    len: usize,
    /// The process that made it ([`release_in`] says why).
    pid: u32,
}

impl PyPinnedBuffer {
    pub fn new(mut buffer: PinnedBuffer) -> PyPinnedBuffer {
        let len = buffer.len();
        let address = buffer.as_mut_ptr() as usize;
        PyPinnedBuffer {
            buffer: Some(buffer),
            address,
            len,
            pid: std::process::id(),
        }
    }
}

impl Drop for PyPinnedBuffer {
    fn drop(&mut self) {
        release_in(self.pid, self.buffer.take());
    }
}

#[pymethods]
impl PyPinnedBuffer {
    /// Whether the bytes are in pinned memory of a GPU (else, ordinary
    /// memory, hashed as any other).
    #[getter]
    fn pinned(&self) -> bool {
        self.buffer.as_ref().is_some_and(PinnedBuffer::is_pinned)
    }

    /// The buffer's size in bytes.
    #[getter]
    fn nbytes(&self) -> usize {
        self.len
    }

    fn __len__(&self) -> usize {
        self.len
    }

    /// NumPy's array interface: one dimension of `uint8`, writable. NumPy
    /// keeps this object as the base of every view, so the memory outlives
    /// them.
    #[getter]
    fn __array_interface__<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyDict>> {
        let interface = PyDict::new(py);
        interface.set_item("version", 3)?;
        interface.set_item("shape", (self.len,))?;
        interface.set_item("typestr", "|u1")?;
        interface.set_item("data", (self.address, false))?;
        Ok(interface)
    }

    fn __repr__(&self) -> String {
        format!(
            "PinnedBuffer(nbytes={}, pinned={})",
            self.len,
            if self.pinned() { "True" } else { "False" }
        )
    }
}
