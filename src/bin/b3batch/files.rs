//! Hashing many files in order: small files are read into one packed batch
//! and hashed together through the engine; large files (and stdin) are
//! streamed through `blake3` in pieces. Results come out in input order;
//! a file that cannot be read fully gets an error, never a digest.

use std::fs::{self, File};
use std::io::{self, Read};
use std::path::{Path, PathBuf};

use blake3_batch::Engine;
use indicatif::ProgressBar;

use crate::options::{CliError, HashMode};

/// Files up to this size are read whole into the batch.
const SMALL_FILE: u64 = 1 << 20;
/// A batch is hashed once it holds this many bytes...
const BATCH_BYTES: usize = 64 << 20;
/// ...or this many files.
const BATCH_FILES: usize = 16 * 1024;
/// Read size when streaming a large file.
const STREAM_PIECE: usize = 1 << 20;

/// What became of one input.
pub type Outcome = Result<[u8; 32], String>;

enum Slot<T> {
    /// Blob `n` of the pending batch.
    Batched(T, usize),
    /// Already known (streamed, or failed).
    Done(T, Outcome),
}

/// Collects inputs, hashes them in batches, and hands each outcome with
/// its caller's token to `emit`, in the order the inputs were pushed.
pub struct FileHasher<'a, T> {
    engine: &'a Engine,
    mode: &'a HashMode,
    data: Vec<u8>,
    offsets: Vec<u64>,
    slots: Vec<Slot<T>>,
    progress: &'a ProgressBar,
}

impl<'a, T> FileHasher<'a, T> {
    pub fn new(engine: &'a Engine, mode: &'a HashMode, progress: &'a ProgressBar) -> Self {
        FileHasher {
            engine,
            mode,
            data: Vec::new(),
            offsets: vec![0],
            slots: Vec::new(),
            progress,
        }
    }

    /// Adds the file at `path` (`-` is stdin).
    pub fn push(
        &mut self,
        path: &Path,
        token: T,
        emit: &mut impl FnMut(T, Outcome) -> Result<(), CliError>,
    ) -> Result<(), CliError> {
        if path == Path::new("-") {
            self.flush(emit)?;
            let outcome = self.stream(io::stdin().lock());
            return self.finish_one(token, outcome, emit);
        }
        let file = match open_regular(path) {
            Ok(file) => file,
            Err(message) => {
                self.slots.push(Slot::Done(token, Err(message)));
                return self.flush_if_full(emit);
            }
        };
        let (mut file, len) = file;
        if len > SMALL_FILE {
            self.flush(emit)?;
            let outcome = self.stream(file);
            return self.finish_one(token, outcome, emit);
        }
        let start = self.data.len();
        match file.read_to_end(&mut self.data) {
            Ok(_) => {
                self.offsets.push(self.data.len() as u64);
                self.slots
                    .push(Slot::Batched(token, self.offsets.len() - 2));
            }
            Err(error) => {
                // Nothing of a partly read file is hashed.
                self.data.truncate(start);
                self.slots.push(Slot::Done(token, Err(error.to_string())));
            }
        }
        self.flush_if_full(emit)
    }

    fn finish_one(
        &mut self,
        token: T,
        outcome: Outcome,
        emit: &mut impl FnMut(T, Outcome) -> Result<(), CliError>,
    ) -> Result<(), CliError> {
        self.progress.inc(1);
        emit(token, outcome)
    }

    fn flush_if_full(
        &mut self,
        emit: &mut impl FnMut(T, Outcome) -> Result<(), CliError>,
    ) -> Result<(), CliError> {
        if self.data.len() >= BATCH_BYTES || self.slots.len() >= BATCH_FILES {
            self.flush(emit)?;
        }
        Ok(())
    }

    /// Hashes the pending batch and emits every pending outcome in order.
    pub fn flush(
        &mut self,
        emit: &mut impl FnMut(T, Outcome) -> Result<(), CliError>,
    ) -> Result<(), CliError> {
        let mut digests = vec![[0u8; 32]; self.offsets.len() - 1];
        self.engine
            .hash_packed_into(self.mode.mode(), &self.data, &self.offsets, &mut digests)
            .map_err(|error| CliError::Message(error.to_string()))?;
        self.data.clear();
        self.offsets.truncate(1);
        for slot in self.slots.drain(..) {
            self.progress.inc(1);
            match slot {
                Slot::Batched(token, index) => emit(token, Ok(digests[index]))?,
                Slot::Done(token, outcome) => emit(token, outcome)?,
            }
        }
        Ok(())
    }

    /// Hashes a reader to its end in pieces.
    fn stream(&self, mut reader: impl Read) -> Outcome {
        let mut hasher = self.mode.hasher();
        let mut piece = vec![0u8; STREAM_PIECE];
        loop {
            match reader.read(&mut piece) {
                Ok(0) => return Ok(*hasher.finalize().as_bytes()),
                Ok(read) => {
                    hasher.update_rayon(&piece[..read]);
                }
                Err(error) if error.kind() == io::ErrorKind::Interrupted => {}
                Err(error) => return Err(error.to_string()),
            }
        }
    }
}

/// Opens a file that is not a directory, with its length.
fn open_regular(path: &Path) -> Result<(File, u64), String> {
    let file = File::open(path).map_err(|error| error.to_string())?;
    let metadata = file.metadata().map_err(|error| error.to_string())?;
    if metadata.is_dir() {
        return Err("Is a directory (use -r to hash the files in it)".to_owned());
    }
    Ok((file, metadata.len()))
}

/// The files under `dir`, depth first, each directory's entries sorted by
/// name. Symbolic links to directories are not followed (no cycles);
/// entries that cannot be listed are reported through `skipped`.
pub fn walk(dir: &Path, found: &mut Vec<PathBuf>, skipped: &mut Vec<(PathBuf, String)>) {
    let entries = match fs::read_dir(dir) {
        Ok(entries) => entries,
        Err(error) => {
            skipped.push((dir.to_owned(), error.to_string()));
            return;
        }
    };
    let mut paths: Vec<PathBuf> = Vec::new();
    for entry in entries {
        match entry {
            Ok(entry) => paths.push(entry.path()),
            Err(error) => skipped.push((dir.to_owned(), error.to_string())),
        }
    }
    paths.sort();
    for path in paths {
        let is_real_dir = fs::symlink_metadata(&path).is_ok_and(|meta| meta.is_dir());
        if is_real_dir {
            walk(&path, found, skipped);
        } else if fs::metadata(&path).is_ok_and(|meta| meta.is_dir()) {
            skipped.push((
                path,
                "symbolic link to a directory, not followed".to_owned(),
            ));
        } else {
            found.push(path);
        }
    }
}
