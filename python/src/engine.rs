//! `blake3_batch.Engine`: one engine (backend, threads) and the calls that
//! hash Arrow columns, bytes objects and NumPy records with it.

use std::collections::VecDeque;
use std::sync::{Arc, RwLock};

use arrow_array::ArrayRef;
use arrow_schema::{ArrowError, DataType, Field};
use blake3_batch::{Backend, CpuBackend, Engine, Error, ErrorKind};
use numpy::{PyArray1, PyArrayDescrMethods, PyArrayMethods, PyUntypedArray, PyUntypedArrayMethods};
use pyo3::exceptions::{PyRuntimeError, PyTypeError, PyValueError};
use pyo3::prelude::*;
use pyo3::types::{PyBytes, PyDict, PyIterator, PyList};
use pyo3_arrow::input::AnyArray;
use pyo3_arrow::{PyArray, PyArrayReader, PyChunkedArray};

use crate::arrow::{
    arrow_input, hash_array, hash_array_u64, imported, output_buffer, records_into, unsupported,
};
use crate::batches::ArrowDigestBatches;
use crate::blobs::{blob_items, blob_iterator, Blob};
use crate::errors::to_py;
use crate::hex::{hex_array, hex_string};
use crate::options::{type_name, Options, OwnedMode};
use crate::paths::{path_list, path_of};
use crate::pinned::PyPinnedBuffer;
use crate::reader::PyReader;
use crate::tables::{column_of, one_column, shape_of, table_rows, Shape};

/// A BLAKE3 batch engine: a backend (`"auto"`, `"cpu"` or `"gpu"`) and a
/// number of threads, reused across calls and shared between threads.
#[pyclass(name = "Engine", module = "blake3_batch", frozen)]
pub struct PyEngine {
    /// `None` once closed.
    engine: RwLock<Option<Engine>>,
    /// The process that built it: an engine's threads do not survive a
    /// fork, so a child must build its own.
    pid: u32,
    /// The arguments it was built with: what a pickle of it holds, for
    /// another process to build an engine of its own from.
    settings: Settings,
}

/// `Engine(backend, threads, cpu_backend)`'s arguments.
#[derive(Clone, Debug)]
struct Settings {
    backend: String,
    threads: Option<usize>,
    cpu_backend: Option<String>,
}

impl PyEngine {
    pub fn build(
        backend: &str,
        threads: Option<usize>,
        cpu_backend: Option<&str>,
    ) -> PyResult<Self> {
        let settings = Settings {
            backend: backend.to_owned(),
            threads,
            cpu_backend: cpu_backend.map(str::to_owned),
        };
        let backend = match backend {
            "auto" => Backend::Auto,
            "cpu" => Backend::Cpu,
            "gpu" => Backend::Gpu,
            other => {
                return Err(PyValueError::new_err(format!(
                    "backend={other:?} is not one of \"auto\", \"cpu\", \"gpu\""
                )))
            }
        };
        let mut builder = Engine::builder().backend(backend);
        if let Some(threads) = threads {
            builder = builder.threads(threads);
        }
        if let Some(name) = cpu_backend {
            let cpu = CpuBackend::ALL
                .iter()
                .copied()
                .find(|cpu| cpu.name() == name)
            .ok_or_else(|| {
                PyValueError::new_err(format!(
                    "cpu_backend={name:?} is not one of \"avx512\", \"avx2\", \"sse41\", \"neon\", \"portable\""
                ))
            })?;
            builder = builder.cpu_backend(cpu);
        }
        let engine = builder.build().map_err(to_py)?;
        Ok(PyEngine {
            engine: RwLock::new(Some(engine)),
            pid: std::process::id(),
            settings,
        })
    }

    /// The engine for one call (cheap to clone), or why there is none.
    pub fn engine(&self) -> PyResult<Engine> {
        if self.pid != std::process::id() {
            return Err(PyRuntimeError::new_err(
                "this Engine was created in another process (before a fork): its threads do \
                 not exist here; create a new Engine in this process",
            ));
        }
        self.engine
            .read()
            .map_err(|_| PyRuntimeError::new_err("the engine's lock is poisoned"))?
            .clone()
            .ok_or_else(|| PyValueError::new_err("this Engine is closed: create a new one"))
    }

    pub fn built_here(&self) -> bool {
        self.pid == std::process::id()
    }

    /// `hash_arrow` or `hash_arrow_u64` (as `output` says) of `column` (with
    /// `rows`, of a table's rows over all its columns), whose first row is
    /// row `first_row` of what the caller hashes (a stream's batch), so
    /// that errors name the caller's row.
    pub fn hash_arrow_from<'py>(
        &self,
        py: Python<'py>,
        (column, shape): (&Bound<'py, PyAny>, Shape),
        output: &ArrowOutput,
        rows: bool,
        first_row: usize,
    ) -> PyResult<Bound<'py, PyAny>> {
        let engine = self.engine()?;
        match output {
            ArrowOutput::Bytes { options, hex } => {
                let (length, hex) = (options.length, *hex);
                let output = move |rows: usize| match hex {
                    false => DataType::FixedSizeBinary(length as i32),
                    true if rows.saturating_mul(2 * length) <= i32::MAX as usize => DataType::Utf8,
                    true => DataType::LargeUtf8,
                };
                let hash = |array: &dyn arrow_array::Array, output: &DataType| {
                    let mode = options.mode.as_mode();
                    let outputs = hash_array(&engine, mode, (length, options.seek), array)?;
                    match output {
                        DataType::Utf8 => hex_array(&outputs, false, engine.threads()),
                        DataType::LargeUtf8 => hex_array(&outputs, true, engine.threads()),
                        _ => Ok(outputs),
                    }
                };
                hash_column(py, (column, shape), (rows, first_row), output, hash)
            }
            ArrowOutput::U64(mode) => {
                let hash = |array: &dyn arrow_array::Array, _: &DataType| {
                    hash_array_u64(&engine, mode.as_mode(), array)
                };
                hash_column(
                    py,
                    (column, shape),
                    (rows, first_row),
                    |_| DataType::UInt64,
                    hash,
                )
            }
        }
    }
}

/// What `hash_arrow` (`Bytes`) or `hash_arrow_u64` (`U64`) gives each row.
#[derive(Debug)]
pub enum ArrowOutput {
    /// `options.length` bytes of output from `options.seek` on, as binary
    /// or (`hex`) as lowercase hex.
    Bytes { options: Options, hex: bool },
    /// The digest's first 8 bytes as a little-endian `uint64`.
    U64(OwnedMode),
}

/// Lets go of `owned`, made in process `pid`: dropped there, left to the
/// process's exit in a child forked from it, where an engine's thread pool
/// and GPU device, and a pinned buffer's GPU memory, are the parent's. A
/// child shares the parent's GPU driver handles, so tearing them down there
/// could reach the parent's, and a lock some parent thread held at the fork
/// stays locked in the child for good (dropping a GPU engine in a child
/// hung it on lavapipe).
pub fn release_in<T>(pid: u32, owned: T) {
    if pid != std::process::id() {
        std::mem::forget(owned);
    }
}

impl Drop for PyEngine {
    fn drop(&mut self) {
        let engine = self
            .engine
            .get_mut()
            .unwrap_or_else(|poison| poison.into_inner())
            .take();
        release_in(self.pid, engine);
    }
}

#[pymethods]
impl PyEngine {
    #[new]
    #[pyo3(signature = (backend = "auto", threads = None, cpu_backend = None))]
    fn new(backend: &str, threads: Option<i128>, cpu_backend: Option<&str>) -> PyResult<Self> {
        // Zero and counts past the limit get the engine's own errors; a
        // count no usize holds (a negative one) is out of range here.
        let threads = threads
            .map(|threads| {
                usize::try_from(threads).map_err(|_| {
                    PyValueError::new_err(format!(
                        "threads={threads} is out of range: give 1 to {}, or leave threads \
                         unset to use every core",
                        blake3_batch::max_threads()
                    ))
                })
            })
            .transpose()?;
        PyEngine::build(backend, threads, cpu_backend)
    }

    /// Digests of an Arrow array or chunked array of binary or string
    /// values (or a dictionary of any type here), of fixed-width numbers
    /// (each as its bytes) or of lists of them (each row's values as
    /// bytes), read in place: a
    /// `pyarrow.FixedSizeBinaryArray` of `length` bytes a row (a
    /// `ChunkedArray` with one chunk per input chunk for a stream), nulls
    /// kept null; with `hex=True` a `pyarrow.string` array of
    /// lowercase hex (`large_string` past 2 GiB of digits in an array).
    /// With `rows=True`, of each row of a table (or struct column) over all
    /// its columns, each value framed by a flag byte and its length.
    #[pyo3(signature = (column, *, length = 32, seek = 0, hex = false, key = None, derive_key = None, rows = false))]
    // One Rust argument per Python keyword argument.
    #[allow(clippy::too_many_arguments)]
    fn hash_arrow<'py>(
        &self,
        py: Python<'py>,
        column: &Bound<'py, PyAny>,
        length: i128,
        seek: i128,
        hex: bool,
        key: Option<&Bound<'py, PyAny>>,
        derive_key: Option<&str>,
        rows: bool,
    ) -> PyResult<Bound<'py, PyAny>> {
        let options = Options::parse(key, derive_key, length, seek)?.for_arrow()?;
        let column = (column, shape_of(column)?);
        self.hash_arrow_from(py, column, &ArrowOutput::Bytes { options, hex }, rows, 0)
    }

    /// The outputs of an Arrow stream (a chunked array, a
    /// `RecordBatchReader`, a DuckDB query, a one-column table) or of an
    /// iterable of Arrow arrays and batches, as an iterator of one output
    /// array per input batch, as `hash_arrow` (or, with `as_u64=True`,
    /// `hash_arrow_u64`) gives it: each batch is read when the last one's
    /// output is taken, so a column of any size needs one batch's memory.
    #[pyo3(signature = (source, *, length = 32, seek = 0, hex = false, as_u64 = false, key = None, derive_key = None, rows = false))]
    // One Rust argument per Python keyword argument.
    #[allow(clippy::too_many_arguments)]
    fn hash_arrow_batches<'py>(
        slf: &Bound<'py, Self>,
        source: &Bound<'py, PyAny>,
        length: i128,
        seek: i128,
        hex: bool,
        as_u64: bool,
        key: Option<&Bound<'py, PyAny>>,
        derive_key: Option<&str>,
        rows: bool,
    ) -> PyResult<ArrowDigestBatches> {
        // Refused now, not at the first batch.
        let options = Options::parse(key, derive_key, length, seek)?.for_arrow()?;
        slf.get().engine()?;
        let output = match as_u64 {
            false => ArrowOutput::Bytes { options, hex },
            true if (length, seek, hex) == (32, 0, false) => ArrowOutput::U64(options.mode),
            true => {
                return Err(PyValueError::new_err(
                    "as_u64=True gives each digest's first 8 bytes as uint64: leave length=, seek= and hex= out",
                ))
            }
        };
        ArrowDigestBatches::new(slf.clone().unbind(), source, output, rows)
    }

    /// The first 8 bytes of each row's digest as a little-endian
    /// `pyarrow.uint64` array: compact keys for deduplication.
    #[pyo3(signature = (column, *, key = None, derive_key = None, rows = false))]
    fn hash_arrow_u64<'py>(
        &self,
        py: Python<'py>,
        column: &Bound<'py, PyAny>,
        key: Option<&Bound<'py, PyAny>>,
        derive_key: Option<&str>,
        rows: bool,
    ) -> PyResult<Bound<'py, PyAny>> {
        let mode = Options::parse(key, derive_key, 8, 0)?.mode;
        let column = (column, shape_of(column)?);
        self.hash_arrow_from(py, column, &ArrowOutput::U64(mode), rows, 0)
    }

    /// Digests of a sequence of bytes-like objects, as a list of `bytes`
    /// of `length` bytes each (with `hex=True`, of `str` in lowercase hex).
    /// `bytes` items are read in place, other bytes-like objects in place
    /// from 4 KiB on (smaller or non-contiguous ones copied once).
    #[pyo3(signature = (items, *, length = 32, seek = 0, hex = false, key = None, derive_key = None))]
    // One Rust argument per Python keyword argument.
    #[allow(clippy::too_many_arguments)]
    fn hash_many<'py>(
        &self,
        py: Python<'py>,
        items: &Bound<'py, PyAny>,
        length: i128,
        seek: i128,
        hex: bool,
        key: Option<&Bound<'py, PyAny>>,
        derive_key: Option<&str>,
    ) -> PyResult<Bound<'py, PyList>> {
        let options = Options::parse(key, derive_key, length, seek)?;
        let engine = self.engine()?;
        let iterator = blob_iterator(items, "hash_many takes a sequence")?;
        let count = items.len().unwrap_or(0);
        let blobs = blob_items(iterator, count, usize::MAX, "hash_many", 0)?;
        hash_blobs(py, &engine, &blobs, &options, hex)
    }

    /// Digests of an iterable of bytes-like objects (a generator, a
    /// database cursor, a stream too long for one list), as an iterator
    /// that yields them in order: items are taken `batch_size` at a time,
    /// or fewer where they reach 64 MiB, and each batch is hashed as by
    /// `hash_many`, so at most one batch is held.
    #[pyo3(signature = (items, *, batch_size = 65536, length = 32, seek = 0, hex = false, key = None, derive_key = None))]
    // One Rust argument per Python keyword argument.
    #[allow(clippy::too_many_arguments)]
    fn hash_iter<'py>(
        slf: &Bound<'py, Self>,
        items: &Bound<'py, PyAny>,
        batch_size: i128,
        length: i128,
        seek: i128,
        hex: bool,
        key: Option<&Bound<'py, PyAny>>,
        derive_key: Option<&str>,
    ) -> PyResult<DigestIterator> {
        let options = Options::parse(key, derive_key, length, seek)?;
        // Refused now, not at the first batch: a closed engine, a bad batch
        // size, one bytes object rather than many.
        slf.get().engine()?;
        if batch_size < 1 {
            return Err(PyValueError::new_err(format!(
                "batch_size={batch_size}: give the items hashed together, at least 1"
            )));
        }
        // More than any iterable can give is one batch of all of it.
        let batch_size = usize::try_from(batch_size).unwrap_or(usize::MAX);
        let iterator = blob_iterator(items, "hash_iter takes an iterable")?;
        Ok(DigestIterator {
            engine: slf.clone().unbind(),
            items: iterator.unbind(),
            options,
            hex,
            batch_size,
            taken: 0,
            ready: VecDeque::new(),
        })
    }

    /// Digests of the records of a C-contiguous NumPy array (any dtype
    /// without Python objects, one record a row along its first axis,
    /// hashed as `records[i].tobytes()`): a new `(n, length)` `uint8`
    /// array, or `out` (a writable C-contiguous `(n, length)` `uint8`
    /// array) filled and returned.
    #[pyo3(signature = (records, *, length = 32, seek = 0, key = None, derive_key = None, out = None))]
    // One Rust argument per Python keyword argument.
    #[allow(clippy::too_many_arguments)]
    fn hash_records<'py>(
        &self,
        py: Python<'py>,
        records: &Bound<'py, PyAny>,
        length: i128,
        seek: i128,
        key: Option<&Bound<'py, PyAny>>,
        derive_key: Option<&str>,
        out: Option<&Bound<'py, PyAny>>,
    ) -> PyResult<Bound<'py, PyAny>> {
        let options = Options::parse(key, derive_key, length, seek)?;
        let engine = self.engine()?;
        let typed = record_bytes(records)?;
        let readonly = typed.try_readonly().map_err(|error| {
            PyRuntimeError::new_err(format!("the records are being written elsewhere: {error}"))
        })?;
        let data = readonly
            .as_slice()
            .map_err(|_| not_c_contiguous("records"))?;
        let [rows, size] = [typed.shape()[0], typed.shape()[1]];
        // Straight into the output buffer, as for Arrow columns.
        let records = (data, size, rows);
        let mode = options.mode.as_mode();
        let output = (options.length, options.seek);
        let Some(out) = out else {
            let bytes = py
                .detach(|| {
                    let mut bytes = output_buffer(rows, options.length)?;
                    records_into(&engine, mode, output, records, &mut bytes).map(|()| bytes)
                })
                .map_err(to_py)?;
            return Ok(PyArray1::from_vec(py, bytes)
                .reshape([rows, options.length])?
                .into_any());
        };
        let target = uint8_matrix(out, "out")?;
        if target.shape() != [rows, options.length] {
            let [out_rows, out_columns] = [target.shape()[0], target.shape()[1]];
            return Err(PyValueError::new_err(format!(
                "out has shape ({out_rows}, {out_columns}) but {rows} records need \
                 ({rows}, {}), one row of length={} digest bytes each",
                options.length, options.length
            )));
        }
        let mut writable = target.try_readwrite().map_err(|error| {
            PyValueError::new_err(format!(
                "out cannot be written: {error} (a read-only array, or one over the records' memory)"
            ))
        })?;
        let slots = writable
            .as_slice_mut()
            .map_err(|_| not_c_contiguous("out"))?;
        if addresses_overlap(data, slots) {
            return Err(PyValueError::new_err(
                "out overlaps the records: give it memory of its own",
            ));
        }
        py.detach(|| records_into(&engine, mode, output, records, slots))
            .map_err(to_py)?;
        drop(writable);
        Ok(out.clone())
    }

    /// The digest of the file at `path` (a `str`, `bytes` or `os.PathLike`, as
    /// `open()` takes it), as
    /// `bytes` of `length` bytes (over 32, BLAKE3's extended output; a `str`
    /// of hex digits with `hex=True`), as
    /// `blake3` hashes its contents, with the
    /// GIL released: read whole (up to 64 MiB) or in windows, each hashed
    /// on the engine's backend while the next is read, so a file of any
    /// size takes a few windows of memory.
    #[pyo3(signature = (path, *, length = 32, seek = 0, hex = false, key = None, derive_key = None))]
    // One Rust argument per Python keyword argument.
    #[allow(clippy::too_many_arguments)]
    fn hash_file<'py>(
        &self,
        py: Python<'py>,
        path: &Bound<'py, PyAny>,
        length: i128,
        seek: i128,
        hex: bool,
        key: Option<&Bound<'py, PyAny>>,
        derive_key: Option<&str>,
    ) -> PyResult<Bound<'py, PyAny>> {
        let options = Options::parse(key, derive_key, length, seek)?;
        let path = path_of(path)?;
        let engine = self.engine()?;
        let outputs = py.detach(|| file_outputs(&engine, &options, [path]));
        match outputs.into_iter().next() {
            Some(output) => output.map_err(to_py)?.into_python(py, &options, hex),
            None => Err(PyRuntimeError::new_err(
                "internal error: no digest for the file; please report it",
            )),
        }
    }

    /// The digest of everything a binary file object gives (its `read(n)`,
    /// bytes or another bytes-like object, until it returns nothing), as
    /// `bytes` of `length` bytes (over 32, BLAKE3's extended output; a
    /// `str` of hex digits with `hex=True`), as `blake3` hashes it: read
    /// in windows,
    /// each hashed on the engine's backend while the next is read, with
    /// the GIL released but for each read. An exception a read raises is
    /// raised here.
    #[pyo3(signature = (reader, *, length = 32, seek = 0, hex = false, key = None, derive_key = None))]
    // One Rust argument per Python keyword argument.
    #[allow(clippy::too_many_arguments)]
    fn hash_reader<'py>(
        &self,
        py: Python<'py>,
        reader: &Bound<'py, PyAny>,
        length: i128,
        seek: i128,
        hex: bool,
        key: Option<&Bound<'py, PyAny>>,
        derive_key: Option<&str>,
    ) -> PyResult<Bound<'py, PyAny>> {
        let options = Options::parse(key, derive_key, length, seek)?;
        let engine = self.engine()?;
        let mut failure = None;
        let source = PyReader::new(reader, &mut failure)?;
        let mode = options.mode.as_mode();
        let output = py.detach(|| match options.in_digest() {
            Some(_) => engine.hash_reader(mode, source).map(Output::Digest),
            None => engine.hash_reader_xof(mode, source).map(Output::Extended),
        });
        if let Some(error) = failure {
            return Err(error);
        }
        output.map_err(to_py)?.into_python(py, &options, hex)
    }

    /// The digests of the files at `paths` (an iterable of `str`, `bytes` or
    /// `os.PathLike`, or an Arrow array of strings or binary names), as a list of `bytes`
    /// of `length` bytes in order (over 32, BLAKE3's extended output, small
    /// files then by `blake3` on every thread; `str` of hex digits with
    /// `hex=True`), `None` for a null path. Files of up to
    /// 64 MiB are read side by side on the engine's threads and hashed in
    /// batches, larger ones streamed, all with the GIL released. A file that cannot be read, is a directory or changes
    /// while it is read raises its `OSError` (`errors="raise"`, once every
    /// file is hashed) or gets `None` (`errors="none"`).
    #[pyo3(signature = (paths, *, length = 32, seek = 0, hex = false, key = None, derive_key = None, errors = "raise"))]
    // One Rust argument per Python keyword argument.
    #[allow(clippy::too_many_arguments)]
    fn hash_files<'py>(
        &self,
        py: Python<'py>,
        paths: &Bound<'py, PyAny>,
        length: i128,
        seek: i128,
        hex: bool,
        key: Option<&Bound<'py, PyAny>>,
        derive_key: Option<&str>,
        errors: &str,
    ) -> PyResult<Bound<'py, PyList>> {
        let options = Options::parse(key, derive_key, length, seek)?;
        let skip_failed = match errors {
            "raise" => false,
            "none" => true,
            other => {
                return Err(PyValueError::new_err(format!(
                    "errors={other:?}: give \"raise\" or \"none\""
                )))
            }
        };
        let paths = path_list(paths)?;
        let engine = self.engine()?;
        let named = paths.iter().flatten();
        let digests = py.detach(|| file_outputs(&engine, &options, named));
        let mut digests = digests.into_iter();
        let mut items: Vec<Option<Bound<'py, PyAny>>> = Vec::with_capacity(paths.len());
        for path in &paths {
            // A null path has no file, so no digest.
            let Some(digest) = path.as_ref().and_then(|_| digests.next()) else {
                items.push(None);
                continue;
            };
            match digest {
                Ok(output) => items.push(Some(output.into_python(py, &options, hex)?)),
                Err(error) if skip_failed && is_a_files_own(&error) => items.push(None),
                Err(error) => return Err(to_py(error)),
            }
        }
        PyList::new(py, items)
    }

    /// A zeroed buffer of `nbytes` bytes in pinned host memory of this
    /// engine's GPU, which copies batches that lie in it without packing
    /// them (ordinary memory where the engine has no GPU, or one that
    /// cannot pin memory: `.pinned` tells). Fill and hash it through
    /// `numpy.asarray(buffer)`.
    fn pinned_buffer(&self, py: Python<'_>, nbytes: i128) -> PyResult<PyPinnedBuffer> {
        let nbytes = usize::try_from(nbytes).map_err(|_| {
            PyValueError::new_err(format!(
                "nbytes={nbytes} is out of range: give 0 or more bytes, as many as memory holds"
            ))
        })?;
        let engine = self.engine()?;
        let buffer = py.detach(|| engine.pinned_buffer(nbytes)).map_err(to_py)?;
        Ok(PyPinnedBuffer::new(buffer))
    }

    /// The engine's backend, CPU instruction set, lanes, threads and GPU.
    fn info<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyDict>> {
        let engine = self.engine()?;
        let info = PyDict::new(py);
        info.set_item(
            "backend",
            match engine.backend() {
                Backend::Auto => "auto",
                Backend::Cpu => "cpu",
                Backend::Gpu => "gpu",
                _ => "other",
            },
        )?;
        info.set_item("cpu_backend", engine.cpu_backend().name())?;
        info.set_item("lanes", engine.lanes())?;
        info.set_item("threads", engine.threads())?;
        info.set_item("gpu", engine.gpu_info().map(|gpu| gpu.name.clone()))?;
        Ok(info)
    }

    /// Releases the engine's threads and GPU; later calls raise
    /// `ValueError`. A call already running on another thread finishes.
    fn close(&self) {
        if let Ok(mut engine) = self.engine.write() {
            release_in(self.pid, engine.take());
        }
    }

    /// Whether `close()` was called.
    #[getter]
    fn closed(&self) -> bool {
        self.engine
            .read()
            .map(|engine| engine.is_none())
            .unwrap_or(true)
    }

    fn __enter__(slf: Py<Self>) -> Py<Self> {
        slf
    }

    #[pyo3(signature = (*_args))]
    fn __exit__(&self, _args: &Bound<'_, pyo3::types::PyTuple>) -> bool {
        self.close();
        false
    }

    /// What pickling sends: the arguments the engine was built with, from
    /// which the process that loads it builds an engine of its own (its
    /// threads and GPU are this process's), open even if this one is
    /// closed; `threads=None` is all of that process's CPUs.
    fn __reduce__<'py>(
        slf: &Bound<'py, Self>,
    ) -> (
        Bound<'py, pyo3::types::PyType>,
        (String, Option<usize>, Option<String>),
    ) {
        let settings = slf.get().settings.clone();
        (
            slf.get_type(),
            (settings.backend, settings.threads, settings.cpu_backend),
        )
    }

    fn __repr__(&self) -> String {
        match self.engine() {
            Ok(engine) => format!(
                "Engine(backend={:?}, cpu_backend={:?}, threads={})",
                format!("{:?}", engine.backend()).to_lowercase(),
                engine.cpu_backend().name(),
                engine.threads()
            ),
            Err(_) => "Engine(closed)".to_owned(),
        }
    }
}

/// The records of a C-contiguous NumPy array of any dtype that holds no
/// Python objects, one a row along its first axis, as a 2-D `uint8` view
/// of their bytes (row `i` is `records[i].tobytes()`); or the error that
/// says what to pass instead.
fn record_bytes<'py>(records: &Bound<'py, PyAny>) -> PyResult<Bound<'py, numpy::PyArray2<u8>>> {
    let untyped = records.cast::<PyUntypedArray>().map_err(|_| {
        PyTypeError::new_err(format!(
            "records must be a numpy.ndarray, one record a row along its first axis, not {}",
            type_name(records)
        ))
    })?;
    let dtype = untyped.dtype();
    let one_byte_items = dtype.itemsize() == 1 && !dtype.has_fields();
    if untyped.ndim() == 0 || (untyped.ndim() == 1 && one_byte_items) {
        // A flat array of bytes is most likely many records not yet cut:
        // hashing each byte on its own would be a silent mistake.
        return Err(PyValueError::new_err(format!(
            "records must have a row per record, got {} dimension(s) of dtype {dtype}: \
             reshape the bytes to (records, record_size)",
            untyped.ndim()
        )));
    }
    if dtype.has_object() {
        return Err(PyTypeError::new_err(format!(
            "records of dtype {dtype} hold Python objects, not bytes: give numbers, \
             fixed-size strings or structs of them"
        )));
    }
    if !untyped.is_c_contiguous() {
        return Err(not_c_contiguous("records"));
    }
    if untyped.ndim() == 2 && dtype.is_equiv_to(&numpy::dtype::<u8>(records.py())) {
        return uint8_matrix(records, "records");
    }
    // Any other dtype or shape: the same memory seen as bytes, a row each
    // (a view of a C-contiguous array copies nothing).
    let rows = untyped.shape()[0];
    let row_bytes = untyped.shape()[1..].iter().product::<usize>() * dtype.itemsize();
    let bytes = records
        .call_method1("view", (numpy::dtype::<u8>(records.py()),))?
        .call_method1("reshape", ((rows, row_bytes),))?;
    uint8_matrix(&bytes, "records")
}

/// `array` as a 2-D C-contiguous `uint8` NumPy array, or the error that
/// says what to pass instead (`what` names the argument).
fn uint8_matrix<'py>(
    array: &Bound<'py, PyAny>,
    what: &str,
) -> PyResult<Bound<'py, numpy::PyArray2<u8>>> {
    let untyped = array.cast::<PyUntypedArray>().map_err(|_| {
        PyTypeError::new_err(format!(
            "{what} must be a 2-D numpy.ndarray of uint8, not {}",
            type_name(array)
        ))
    })?;
    if untyped.ndim() != 2 {
        return Err(PyValueError::new_err(format!(
            "{what} must be a 2-D array (one record a row), got {} dimensions: \
             reshape it to (records, record_size)",
            untyped.ndim()
        )));
    }
    let typed = untyped.cast::<numpy::PyArray2<u8>>().map_err(|_| {
        PyTypeError::new_err(format!(
            "{what} must be uint8, got dtype {}: view the bytes with .view(numpy.uint8)",
            untyped.dtype()
        ))
    })?;
    // A Fortran-ordered array is contiguous too, but its rows are not its
    // records: only C order reads each row as one record.
    if !untyped.is_c_contiguous() {
        return Err(not_c_contiguous(what));
    }
    Ok(typed.clone())
}

fn not_c_contiguous(what: &str) -> PyErr {
    PyValueError::new_err(format!(
        "{what} is not C-contiguous: pass numpy.ascontiguousarray({what})"
    ))
}

/// Whether two byte ranges share an address.
fn addresses_overlap(a: &[u8], b: &[u8]) -> bool {
    let (a, b) = (a.as_ptr_range(), b.as_ptr_range());
    !a.is_empty() && !b.is_empty() && a.start < b.end && b.start < a.end
}

/// The outputs of `blobs` as a list of `bytes` (of `str` with `hex`),
/// hashed with the GIL released.
fn hash_blobs<'py>(
    py: Python<'py>,
    engine: &Engine,
    blobs: &[Blob<'py>],
    options: &Options,
    hex: bool,
) -> PyResult<Bound<'py, PyList>> {
    let slices = blobs
        .iter()
        .map(Blob::as_bytes)
        .collect::<PyResult<Vec<&[u8]>>>()?;
    let (length, seek) = (options.length, options.seek);
    let mut outputs = output_buffer(slices.len(), length).map_err(to_py)?;
    let mode = options.mode.as_mode();
    py.detach(|| engine.hash_slices_xof_at_into(mode, &slices, length, seek, &mut outputs))
        .map_err(to_py)?;
    let outputs = outputs.chunks_exact(length);
    match hex {
        false => PyList::new(py, outputs.map(|output| PyBytes::new(py, output))),
        true => PyList::new(py, outputs.map(hex_string)),
    }
}

/// The most items a `DigestIterator` makes room for before it takes a
/// batch: a stream may end well short of a large `batch_size`.
const BATCH_CAPACITY: usize = 65536;
/// A `DigestIterator`'s batch ends at the item that brings it to this
/// many bytes, short of `batch_size` items: a batch of 65 536 items of
/// 1 MiB would hold 64 GiB. 64 MiB keeps every thread of a large machine
/// busy, as one `hash_many` call of it does.
const BATCH_BYTES: usize = 64 << 20;

/// What `Engine.hash_iter` returns: an iterator over the outputs of an
/// iterable's items, hashed a batch at a time as they are needed.
#[pyclass(name = "DigestIterator", module = "blake3_batch")]
pub struct DigestIterator {
    /// Looked up for each batch, so a closed engine stops the iteration.
    engine: Py<PyEngine>,
    items: Py<PyIterator>,
    options: Options,
    hex: bool,
    batch_size: usize,
    /// Items taken so far: where the next batch starts, for messages.
    taken: usize,
    /// The current batch's outputs not yet yielded.
    ready: VecDeque<Py<PyAny>>,
}

#[pymethods]
impl DigestIterator {
    fn __iter__(slf: PyRef<'_, Self>) -> PyRef<'_, Self> {
        slf
    }

    /// The next output: the next batch is taken and hashed when the last
    /// one's outputs are all yielded. An item that is not bytes-like, or an
    /// error of the iterable's own, is raised then; the batch's other
    /// outputs are dropped.
    fn __next__(&mut self, py: Python<'_>) -> PyResult<Option<Py<PyAny>>> {
        if self.ready.is_empty() {
            // Each item converted as it is taken, not gathered first.
            let items = self.items.bind(py).clone().take(self.batch_size);
            let capacity = self.batch_size.min(BATCH_CAPACITY);
            let blobs = blob_items(items, capacity, BATCH_BYTES, "hash_iter", self.taken)?;
            if blobs.is_empty() {
                return Ok(None);
            }
            self.taken += blobs.len();
            let engine = self.engine.get().engine()?;
            let outputs = hash_blobs(py, &engine, &blobs, &self.options, self.hex)?;
            self.ready.extend(outputs.iter().map(Bound::unbind));
        }
        Ok(self.ready.pop_front())
    }
}

/// Hashes every array of an Arrow column (an array, or a stream such as a
/// chunked array) with `hash` on the engine's threads, without the GIL.
/// `output` gives the type of the output arrays from the most rows an
/// input array has; `hash` hashes one array into one of that type.
/// With `rows`, the column is a table's (a struct) whose rows are hashed
/// over all its columns; without, a `Table` of one column is that column.
/// `first_row` is the column's first row in what the caller hashes (a
/// stream's batch), for messages.
fn hash_column<'py, F>(
    py: Python<'py>,
    (column, shape): (&Bound<'py, PyAny>, Shape),
    (rows, first_row): (bool, usize),
    output: impl Fn(usize) -> DataType,
    hash: F,
) -> PyResult<Bound<'py, PyAny>>
where
    F: Fn(&dyn arrow_array::Array, &DataType) -> Result<ArrayRef, Error> + Send + Sync,
{
    // pandas' objects as pyarrow data first: pandas 2's Series has no
    // Arrow export.
    let column = &arrow_input(column)?;
    let is_arrow = column.hasattr("__arrow_c_array__")? || column.hasattr("__arrow_c_stream__")?;
    if !is_arrow {
        // A lazy query (Polars' LazyFrame) has its data only once run.
        let hint = match column.hasattr("collect")? {
            true => "; run a lazy query first (.collect())",
            false => "; for a list of bytes use hash_many",
        };
        return Err(PyTypeError::new_err(format!(
            "expected an Arrow array or chunked array (an object with __arrow_c_array__ or \
             __arrow_c_stream__: pyarrow, Polars, pandas, DuckDB, nanoarrow, arro3) or a \
             NumPy array, not {}{hint}",
            type_name(column)
        )));
    }
    // The caller's own name for the type where it has one (pyarrow's
    // "double", not Arrow's "Float64").
    let python_type = column.getattr("type").ok();
    let column: AnyArray = imported(|| column.extract())?;
    let field = column.field()?;
    if rows {
        table_rows(&field)?;
    }
    // A table of one column is read as that column (unless its rows are
    // asked for); a struct column is hashed as its values.
    let table_column = match (rows, shape) {
        (false, Shape::Table) => one_column(&field)?,
        _ => None,
    };
    let is_table = table_column.is_some();
    let field = table_column.unwrap_or(field);
    let shown_type = match rows {
        true => "table".to_owned(),
        false => python_type
            .filter(|_| !is_table)
            .and_then(|t| t.str().ok())
            .map(|t| t.to_string())
            .unwrap_or_else(|| field.data_type().to_string()),
    };
    let column_of_table = |array: ArrayRef| match is_table {
        true => column_of(&array),
        false => Ok(array),
    };
    if !blake3_batch::is_hashable_arrow_type(field.data_type()) {
        return Err(PyTypeError::new_err(unsupported(&shown_type)));
    }
    let name = field.name().clone();
    // `first_row`: the array's first row in the caller's rows.
    let hash_one = |array: &ArrayRef, first_row: usize, output: &DataType| -> PyResult<ArrayRef> {
        hash(array.as_ref(), output).map_err(|error| match error.kind() {
            // The library's rows count within this array; the caller's
            // within the column, and the type by the caller's name.
            ErrorKind::ArrowNullValue { row } if rows => PyValueError::new_err(format!(
                "row {} of the table holds a list of numbers or booleans with a null value in \
                 it, whose bytes are undefined: fill the nulls inside its lists (or drop those \
                 rows) before hashing",
                first_row + row
            )),
            ErrorKind::ArrowNullValue { row } => PyValueError::new_err(format!(
                "row {} of the {shown_type} column holds a list of numbers or booleans with a \
                 null value in it, whose bytes are undefined: fill the nulls inside its lists \
                 (or drop those rows) before hashing",
                first_row + row
            )),
            ErrorKind::ArrowDictionaryKey { row, key, values } => PyValueError::new_err(format!(
                "row {} of the {shown_type} column has dictionary key {key}, but the \
                 dictionary holds {values} values: the array is malformed",
                first_row + row
            )),
            ErrorKind::ArrowType { .. } => PyTypeError::new_err(unsupported(&shown_type)),
            _ => to_py(error),
        })
    };
    match column {
        AnyArray::Array(array) => {
            let array = column_of_table(array.into_inner().0)?;
            let data_type = output(array.len());
            let digests = py.detach(|| hash_one(&array, first_row, &data_type))?;
            let output = Arc::new(Field::new(name, data_type, true));
            let digests = PyArray::new(digests, output).into_pyobject(py)?;
            py.import("pyarrow")?.getattr("array")?.call1((digests,))
        }
        AnyArray::Stream(stream) => {
            // The stream is read with the GIL held (its producer may be
            // Python code); only the hashing runs without it.
            let chunks = imported(|| stream_chunks(stream))?
                .into_iter()
                .map(column_of_table)
                .collect::<PyResult<Vec<_>>>()?;
            let data_type = output(chunks.iter().map(|chunk| chunk.len()).max().unwrap_or(0));
            let digests = py.detach(|| {
                let first_rows = chunks.iter().scan(first_row, |next, chunk| {
                    let first = *next;
                    *next += chunk.len();
                    Some(first)
                });
                let hash_chunk = |(chunk, first_row)| hash_one(chunk, first_row, &data_type);
                chunks
                    .iter()
                    .zip(first_rows)
                    .map(hash_chunk)
                    .collect::<PyResult<Vec<_>>>()
            })?;
            let output = Arc::new(Field::new(name, data_type, true));
            PyChunkedArray::try_new(digests, output)?.into_pyarrow(py)
        }
    }
}

/// Every array of an Arrow stream, read with the GIL held.
pub fn stream_chunks(stream: PyArrayReader) -> PyResult<Vec<ArrayRef>> {
    stream
        .into_reader()?
        .collect::<Result<Vec<ArrayRef>, ArrowError>>()
        .map_err(|error| PyValueError::new_err(format!("reading the Arrow stream: {error}")))
}

/// One input's output (a file's, a reader's): its digest, or its extended
/// output for bytes past the digest's 32.
enum Output {
    Digest([u8; 32]),
    Extended(blake3_batch::OutputReader),
}

impl Output {
    /// The `options.length` bytes of output from byte `options.seek` on, as
    /// `bytes`, or as a `str` of hex digits where `hex`.
    fn into_python<'py>(
        self,
        py: Python<'py>,
        options: &Options,
        hex: bool,
    ) -> PyResult<Bound<'py, PyAny>> {
        let bytes = match (self, options.in_digest()) {
            (Output::Digest(digest), Some(bytes)) => PyBytes::new(py, &digest[bytes]),
            (Output::Digest(_), None) => {
                return Err(PyRuntimeError::new_err(
                    "internal error: a digest asked for bytes past its 32; please report it",
                ))
            }
            (Output::Extended(mut output), _) => {
                output.set_position(options.seek);
                PyBytes::new_with(py, options.length, |bytes| {
                    output.fill(bytes);
                    Ok(())
                })?
            }
        };
        Ok(match hex {
            false => bytes.into_any(),
            true => hex_string(bytes.as_bytes()).into_pyobject(py)?.into_any(),
        })
    }
}

/// Every file's output at `paths`, in order: digests where the output lies
/// within their 32 bytes, the engine's extended outputs beyond.
fn file_outputs<P: AsRef<std::path::Path>>(
    engine: &Engine,
    options: &Options,
    paths: impl IntoIterator<Item = P>,
) -> Vec<Result<Output, Error>> {
    let mode = options.mode.as_mode();
    if options.in_digest().is_some() {
        let digests = engine.hash_files(mode, paths).into_iter();
        digests.map(|digest| digest.map(Output::Digest)).collect()
    } else {
        let outputs = engine.hash_files_xof(mode, paths).into_iter();
        outputs.map(|output| output.map(Output::Extended)).collect()
    }
}

/// Whether `error` is one file's own (it cannot be read, or changed), not
/// the engine's.
fn is_a_files_own(error: &Error) -> bool {
    matches!(
        error.kind(),
        ErrorKind::File { .. } | ErrorKind::FileChanged { .. }
    )
}
