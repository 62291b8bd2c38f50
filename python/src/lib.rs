//! `blake3_batch._native`: the Python bindings of blake3-batch. The Python
//! package (`python/blake3_batch/`) re-exports these and adds the Ray Data
//! helpers.

mod arrow;
mod batches;
mod blobs;
mod engine;
mod errors;
mod hex;
mod options;
mod paths;
mod pinned;
mod reader;
mod tables;

use std::sync::Mutex;

use pyo3::prelude::*;

use engine::PyEngine;

/// The engine the module-level functions use: every core, `Auto`; built
/// on first use, and again in a process forked from one that built it.
static DEFAULT_ENGINE: Mutex<Option<Py<PyEngine>>> = Mutex::new(None);

/// The shared default engine (backend `"auto"`, every core).
#[pyfunction]
fn default_engine(py: Python<'_>) -> PyResult<Py<PyEngine>> {
    let current = DEFAULT_ENGINE
        .lock()
        .ok()
        .and_then(|engine| engine.as_ref().map(|engine| engine.clone_ref(py)));
    if let Some(engine) = current {
        if engine.get().built_here() {
            return Ok(engine);
        }
    }
    let engine = Py::new(py, PyEngine::build("auto", None, None)?)?;
    if let Ok(mut shared) = DEFAULT_ENGINE.lock() {
        match shared.as_ref() {
            Some(existing) if existing.get().built_here() => return Ok(existing.clone_ref(py)),
            _ => *shared = Some(engine.clone_ref(py)),
        }
    }
    Ok(engine)
}

/// Checks the keyword arguments an Arrow hashing call takes (`key`,
/// `derive_key`, `length`, `seek`), raising what the call would raise: for
/// helpers that hash later, elsewhere (Polars expressions, DuckDB
/// functions, the Ray actors).
#[pyfunction]
#[pyo3(signature = (*, length = 32, seek = 0, key = None, derive_key = None))]
fn check_options(
    length: i128,
    seek: i128,
    key: Option<&Bound<'_, PyAny>>,
    derive_key: Option<&str>,
) -> PyResult<()> {
    options::Options::parse(key, derive_key, length, seek)?.for_arrow()?;
    Ok(())
}

#[pymodule]
fn _native(module: &Bound<'_, PyModule>) -> PyResult<()> {
    module.add_class::<PyEngine>()?;
    module.add_class::<engine::DigestIterator>()?;
    module.add_class::<batches::ArrowDigestBatches>()?;
    module.add_class::<pinned::PyPinnedBuffer>()?;
    module.add_function(wrap_pyfunction!(default_engine, module)?)?;
    module.add_function(wrap_pyfunction!(check_options, module)?)?;
    module.add("__version__", env!("CARGO_PKG_VERSION"))?;
    Ok(())
}
