//! The crate's one error type.

use std::fmt;

/// Why a call failed; [`Error::kind`] tells which case.
///
/// Every message names the argument at fault and what to change.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Error {
    pub(crate) kind: ErrorKind,
}

impl Error {
    /// The case this error is.
    pub fn kind(&self) -> &ErrorKind {
        &self.kind
    }
}

impl From<ErrorKind> for Error {
    fn from(kind: ErrorKind) -> Self {
        Error { kind }
    }
}

impl fmt::Display for Error {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        fmt::Display::fmt(&self.kind, f)
    }
}

impl std::error::Error for Error {}

/// The cases of [`Error`]. More may be added in later versions.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum ErrorKind {
    /// The output slice does not have one slot per blob.
    #[error("output slice has {actual} digest slots but the batch has {expected} blobs: pass an output slice of exactly {expected} entries")]
    OutputLength {
        /// Number of blobs in the batch.
        expected: usize,
        /// Length of the output slice given.
        actual: usize,
    },
    /// An output length of 0 bytes per blob was asked for
    /// ([`Engine::hash_slices_xof_into`](crate::Engine::hash_slices_xof_into)).
    #[error("an output length of 0 asks for no output: give at least 1 byte per blob (32 for the digest)")]
    XofLength,
    /// The output buffer of
    /// [`Engine::hash_slices_xof_into`](crate::Engine::hash_slices_xof_into)
    /// is not `blobs × length` bytes long.
    #[error("output buffer has {actual} bytes but {blobs} blobs of {length} output bytes each need {}: pass a buffer of exactly that length", blobs.saturating_mul(*length))]
    XofOutputLength {
        /// Number of blobs in the batch.
        blobs: usize,
        /// Output bytes asked for per blob.
        length: usize,
        /// Length of the output buffer given.
        actual: usize,
    },
    /// Packed offsets were empty; even an empty batch has one offset.
    #[error("offsets is empty: packed offsets need n + 1 entries for n blobs (use [0] for an empty batch)")]
    OffsetsEmpty,
    /// Packed offsets went down.
    #[error("offsets[{index}] = {offset} is less than the offset before it ({previous}): offsets must never decrease")]
    OffsetsDecrease {
        /// Position of the offending offset.
        index: usize,
        /// The offset before it.
        previous: u64,
        /// The offending offset.
        offset: u64,
    },
    /// A packed offset points past the end of the data.
    #[error("offsets[{index}] = {offset} points past the end of the data ({data_len} bytes): every offset must be at most the data length")]
    OffsetOutOfBounds {
        /// Position of the offending offset.
        index: usize,
        /// The offending offset.
        offset: u64,
        /// Length of the packed data.
        data_len: usize,
    },
    /// Fixed-size records of size 0 were asked for.
    #[error("record size is 0: give the size in bytes of one record (at least 1)")]
    RecordSizeZero,
    /// The data is not a whole number of records.
    #[error("data of {data_len} bytes is not a whole number of {record_size}-byte records ({} bytes left over): pass data whose length is a multiple of the record size", data_len % record_size)]
    RecordSizeMismatch {
        /// Length of the data.
        data_len: usize,
        /// The record size asked for.
        record_size: usize,
    },
    /// `threads(0)` was asked for.
    #[error("threads(0) asks for no threads: ask for at least 1, or leave threads unset to use every core")]
    ZeroThreads,
    /// More threads were asked for than an engine starts on this machine.
    #[error("threads({threads}) is more than an engine starts here ({} per CPU and at least {}; {cpus} CPUs here): ask for at most {most}, or leave threads unset for one per CPU", crate::engine::THREADS_PER_CPU, crate::engine::THREADS_FLOOR)]
    TooManyThreads {
        /// Threads asked for.
        threads: usize,
        /// The CPUs this process may run on.
        cpus: usize,
        /// The most threads an engine starts here.
        most: usize,
    },
    /// The worker thread pool could not be started.
    #[error("could not start {threads} worker threads ({reason}): ask for fewer threads")]
    ThreadPool {
        /// Threads asked for.
        threads: usize,
        /// What the operating system said.
        reason: String,
    },
    /// The requested backend cannot run on this machine or build.
    #[error("the {backend} backend is unavailable: {reason}")]
    BackendUnavailable {
        /// The backend asked for.
        backend: String,
        /// Why, and what to do instead.
        reason: String,
    },
    /// A GPU operation failed after the device was opened: a lost device,
    /// a failed buffer map, a `wgpu` validation error or a timeout.
    #[error("the GPU failed while {operation}: {reason}")]
    Gpu {
        /// What the engine was doing.
        operation: String,
        /// What went wrong, and what to do about it.
        reason: String,
    },
    /// The GPU memory budget cannot hold even one slab.
    #[error("a GPU memory budget of {budget} bytes is too small: give at least {minimum} bytes")]
    GpuMemoryBudget {
        /// The budget asked for.
        budget: u64,
        /// The smallest budget that works.
        minimum: u64,
    },
    /// A GPU buffer handed to the engine cannot be used as given (missing
    /// usage flags, too small, misaligned, over the device's limits), or
    /// the blobs it describes are not valid (offsets that decrease or run
    /// past the data, a blob over 1 KiB).
    #[error("GPU buffer {buffer}: {reason}")]
    GpuBuffer {
        /// Which buffer (`data`, `offsets`, `digests`).
        buffer: String,
        /// What is wrong, and what to change.
        reason: String,
    },
    /// [`EngineBuilder::gpu_share`](crate::EngineBuilder::gpu_share) was
    /// given a value that is not a share, or with a backend other than
    /// [`Backend::Auto`](crate::Backend::Auto).
    #[error("gpu_share({share}): {reason}")]
    GpuShare {
        /// The share asked for.
        share: String,
        /// What is wrong, and what to change.
        reason: String,
    },
    /// Host memory for a buffer the caller asked for could not be
    /// allocated.
    #[error(
        "{what} of {bytes} bytes cannot be allocated: ask for less, or for several smaller ones"
    )]
    OutOfMemory {
        /// What was being allocated.
        what: String,
        /// Its size.
        bytes: usize,
    },
    /// Reading the input of [`Engine::hash_reader`](crate::Engine::hash_reader)
    /// failed: nothing was hashed.
    #[error("reading the input failed after {bytes} bytes ({reason}): no digest was made; hash it again once it can be read")]
    Read {
        /// The bytes read before the failure.
        bytes: u64,
        /// What the reader said.
        reason: String,
    },
    /// A file named by its path could not be opened or read, or is a
    /// directory ([`Engine::hash_files`](crate::Engine::hash_files)): it
    /// has no digest.
    #[error("{}: {reason}", path.display())]
    File {
        /// The file.
        path: std::path::PathBuf,
        /// The operating system's kind of failure (`NotFound`,
        /// `PermissionDenied`, `IsADirectory`, …).
        io_kind: std::io::ErrorKind,
        /// What went wrong, and what to do.
        reason: String,
    },
    /// A file changed length or modification time while it was read
    /// ([`Engine::hash_files`](crate::Engine::hash_files)): its bytes may
    /// mix two versions, so it has no digest.
    #[error("{}: the file changed while it was read: hash it again once it is complete", path.display())]
    FileChanged {
        /// The file.
        path: std::path::PathBuf,
    },
    /// A profile file could not be read, parsed or written.
    #[error("profile {}: {reason}", path.display())]
    Profile {
        /// The file.
        path: std::path::PathBuf,
        /// What was wrong with it.
        reason: String,
    },
    /// An Arrow array of a type whose rows have no bytes to hash (feature
    /// `arrow`).
    #[error("cannot hash an Arrow array of type {data_type}: give binary, string or fixed-size binary values of any layout, fixed-width numbers, booleans, the null type, or dictionaries, lists, list views, maps, structs (of one field or more), unions (of one member or more) or run-end encoded arrays of those types")]
    ArrowType {
        /// The array's type, as Arrow writes it.
        data_type: String,
    },
    /// A row of an Arrow array that is not null holds a list of numbers or
    /// booleans with a null value in it (directly, or in a field or list
    /// value of its own), whose bytes are undefined (feature `arrow`).
    #[error("row {row} of the Arrow array holds a list of numbers or booleans with a null value in it, whose bytes are undefined: fill the nulls inside its lists (or drop those rows) before hashing")]
    ArrowNullValue {
        /// The row (of the array, from 0).
        row: usize,
    },
    /// A valid key of an Arrow dictionary array names no value: the array
    /// is malformed (feature `arrow`).
    #[error("row {row} of the Arrow dictionary array has key {key}, but the dictionary holds {values} values: the array is malformed")]
    ArrowDictionaryKey {
        /// The row (of the array, from 0).
        row: usize,
        /// Its key.
        key: i128,
        /// How many values the dictionary holds.
        values: usize,
    },
    /// A row of an Arrow list or map array whose values do not lie in
    /// order within the array's child: the array is malformed (feature
    /// `arrow`).
    #[error("row {row} of an Arrow list array runs from value {start} to {end}, which is not in order within its {values} values: the array is malformed")]
    ArrowListOffsets {
        /// The row (of the list array, from 0).
        row: usize,
        /// Its first value's offset.
        start: i64,
        /// Its end's offset.
        end: i64,
        /// How many values the child array holds.
        values: usize,
    },
    /// An Arrow run-end encoded array whose run ends do not describe its
    /// rows: ends that do not increase, that stop before its last row, or
    /// runs with no value (feature `arrow`).
    #[error("the Arrow run-end encoded array is malformed: {problem}")]
    ArrowRunEnds {
        /// What is wrong with its run ends.
        problem: String,
    },
    /// An Arrow union array with a row whose type id names no member, or
    /// whose value lies past its member's (feature `arrow`).
    #[error("the Arrow union array is malformed: {problem}")]
    ArrowUnion {
        /// What is wrong with its rows.
        problem: String,
    },
}
