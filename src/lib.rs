//! Hash huge numbers of small blobs with BLAKE3, all at once.
//!
//! `blake3::hash` on one small blob runs one compression at a time; this
//! crate hashes a whole batch side by side, each SIMD lane a different blob,
//! spread over every core, and returns one digest per blob, in input order,
//! bit-identical to `blake3::hash`, `blake3::keyed_hash` and
//! `blake3::derive_key`.
//!
//! ```
//! let blobs: Vec<Vec<u8>> = (0..1000u32).map(|i| i.to_le_bytes().repeat(i as usize % 300)).collect();
//! let digests = blake3_batch::hash_many(&blobs);
//! assert_eq!(digests[999], blake3::hash(&blobs[999]));
//! ```
//!
//! Three input layouts write into a caller's output slice without
//! allocating: a slice of blobs ([`hash_slices_into`]), packed bytes with
//! Arrow-style offsets ([`hash_packed_into`]) and fixed-size records
//! ([`hash_records_into`]). An [`Engine`] fixes the backend and threads and
//! is reused across batches; the free functions use a shared default engine.

#![warn(missing_docs)]

#[cfg(feature = "arrow")]
mod arrow;
mod blobs;
mod calibrate;
mod consts;
mod cpu;
mod engine;
mod error;
mod gpu;
mod mode;
mod offsets;
#[cfg(feature = "gpu")]
mod pending;
mod pinned;
mod profile;
mod scheduler;

#[cfg(feature = "arrow")]
pub use arrow::is_hashable_arrow_type;
/// The `arrow-array` whose arrays [`Engine::hash_arrow`] takes (feature
/// `arrow`).
#[cfg(feature = "arrow")]
pub use arrow_array;
pub use blake3::{Hash, OutputReader};
pub use blobs::Offset;
pub use cpu::{CpuBackend, CPU_BACKEND_ENV};
pub use engine::{
    max_threads, Backend, BlobDigest, BlobHasher, Engine, EngineBuilder, FileDigest, FileHasher,
    FileOutput, HasherOutput,
};
pub use error::{Error, ErrorKind};
pub use gpu::{gpu_adapters, GpuDeviceType, GpuInfo, GpuTimings, GpuUpload};
#[cfg(feature = "gpu")]
pub use gpu::{GpuBlobs, GpuOffsets};
/// Faults injected into the GPU path by tests (debug builds only).
#[cfg(debug_assertions)]
#[doc(hidden)]
pub use gpu::{GpuFault, GpuFaultStage};
pub use mode::Mode;
#[cfg(feature = "gpu")]
pub use pending::PendingGpuHash;
pub use pinned::PinnedBuffer;
pub use profile::{cpu_model, profile_path, PROFILE_ENV};
pub use scheduler::{BatchShape, Choice, CpuRates, GpuRates, Plan, Profile, SplitSlowdown};
/// The `wgpu` the GPU path is built on: its devices and buffers are what
/// [`EngineBuilder::wgpu_device`] and [`Engine::hash_gpu_blobs`] take.
#[cfg(feature = "gpu")]
pub use wgpu;

/// `blake3::hash` of every blob, in input order, on every core.
pub fn hash_many<B: AsRef<[u8]> + Sync>(blobs: &[B]) -> Vec<Hash> {
    infallible(Engine::shared().hash_many(blobs))
}

/// `blake3::keyed_hash(key, blob)` of every blob, in input order.
pub fn keyed_hash_many<B: AsRef<[u8]> + Sync>(key: &[u8; 32], blobs: &[B]) -> Vec<Hash> {
    infallible(Engine::shared().keyed_hash_many(key, blobs))
}

/// `blake3::derive_key(context, blob)` of every blob, in input order; the
/// context is hashed once per batch.
pub fn derive_key_many<B: AsRef<[u8]> + Sync>(context: &str, blobs: &[B]) -> Vec<[u8; 32]> {
    infallible(Engine::shared().derive_key_many(context, blobs))
}

/// The digest of every row of an Arrow array, on every core
/// (feature `arrow`). See [`Engine::hash_arrow`].
#[cfg(feature = "arrow")]
pub fn hash_arrow(
    mode: Mode,
    array: &dyn arrow_array::Array,
) -> Result<arrow_array::FixedSizeBinaryArray, Error> {
    Engine::shared().hash_arrow(mode, array)
}

/// Hashes a slice of blobs into `out`, which needs one slot per blob.
/// See [`Engine::hash_slices_into`].
pub fn hash_slices_into<B: AsRef<[u8]> + Sync>(
    mode: Mode,
    blobs: &[B],
    out: &mut [[u8; 32]],
) -> Result<(), Error> {
    Engine::shared().hash_slices_into(mode, blobs, out)
}

/// Hashes Arrow-style packed blobs (`n + 1` offsets into `data`) into `out`.
/// See [`Engine::hash_packed_into`].
pub fn hash_packed_into<O: Offset>(
    mode: Mode,
    data: &[u8],
    offsets: &[O],
    out: &mut [[u8; 32]],
) -> Result<(), Error> {
    Engine::shared().hash_packed_into(mode, data, offsets, out)
}

/// Hashes `data` cut into `record_size`-byte records into `out`.
/// See [`Engine::hash_records_into`].
pub fn hash_records_into(
    mode: Mode,
    data: &[u8],
    record_size: usize,
    out: &mut [[u8; 32]],
) -> Result<(), Error> {
    Engine::shared().hash_records_into(mode, data, record_size, out)
}

/// Writes `length` bytes of BLAKE3's extended output per blob into `out`
/// (`blobs.len() * length` bytes): a prefix of each digest up to 32.
/// See [`Engine::hash_slices_xof_into`].
pub fn hash_slices_xof_into<B: AsRef<[u8]> + Sync>(
    mode: Mode,
    blobs: &[B],
    length: usize,
    out: &mut [u8],
) -> Result<(), Error> {
    Engine::shared().hash_slices_xof_into(mode, blobs, length, out)
}

/// Writes `length` bytes of BLAKE3's extended output per packed blob into
/// `out`. See [`Engine::hash_packed_xof_into`].
pub fn hash_packed_xof_into<O: Offset>(
    mode: Mode,
    data: &[u8],
    offsets: &[O],
    length: usize,
    out: &mut [u8],
) -> Result<(), Error> {
    Engine::shared().hash_packed_xof_into(mode, data, offsets, length, out)
}

/// Writes `length` bytes of BLAKE3's extended output per fixed-size record
/// into `out`. See [`Engine::hash_records_xof_into`].
pub fn hash_records_xof_into(
    mode: Mode,
    data: &[u8],
    record_size: usize,
    length: usize,
    out: &mut [u8],
) -> Result<(), Error> {
    Engine::shared().hash_records_xof_into(mode, data, record_size, length, out)
}

/// Writes `length` bytes of BLAKE3's extended output per blob from byte
/// `seek` on into `out`. See [`Engine::hash_slices_xof_at_into`].
pub fn hash_slices_xof_at_into<B: AsRef<[u8]> + Sync>(
    mode: Mode,
    blobs: &[B],
    length: usize,
    seek: u64,
    out: &mut [u8],
) -> Result<(), Error> {
    Engine::shared().hash_slices_xof_at_into(mode, blobs, length, seek, out)
}

/// Writes `length` bytes of BLAKE3's extended output per packed blob from
/// byte `seek` on into `out`. See [`Engine::hash_packed_xof_at_into`].
pub fn hash_packed_xof_at_into<O: Offset>(
    mode: Mode,
    data: &[u8],
    offsets: &[O],
    length: usize,
    seek: u64,
    out: &mut [u8],
) -> Result<(), Error> {
    Engine::shared().hash_packed_xof_at_into(mode, data, offsets, length, seek, out)
}

/// Writes `length` bytes of BLAKE3's extended output per fixed-size record
/// from byte `seek` on into `out`. See [`Engine::hash_records_xof_at_into`].
pub fn hash_records_xof_at_into(
    mode: Mode,
    data: &[u8],
    record_size: usize,
    length: usize,
    seek: u64,
    out: &mut [u8],
) -> Result<(), Error> {
    Engine::shared().hash_records_xof_at_into(mode, data, record_size, length, seek, out)
}

/// The shared engine runs on the CPU, where a slice batch cannot fail.
fn infallible<T>(result: Result<T, Error>) -> T {
    match result {
        Ok(value) => value,
        Err(error) => unreachable!("the shared CPU engine failed on a slice batch: {error}"),
    }
}

/// Compiles and runs the README's example as a doc test.
#[cfg(doctest)]
#[doc = include_str!("../README.md")]
struct ReadmeExample;
