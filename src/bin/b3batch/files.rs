//! Hashing many files in order: small files are read into one packed batch
//! and hashed together through the engine; large files (and stdin) are
//! streamed through the engine ([`Engine::hash_reader`]), which hashes
//! each window on the GPU or the CPU as its backend says. With
//! `--backend gpu`, files up to a batch's size count as small, so that the
//! GPU hashes them together. Results come out in input order; a file that
//! cannot be read fully, or that changes while it is read, gets an error,
//! never a digest. Output longer than 32 bytes (`--length`) needs BLAKE3's
//! extended output, which the engine does not give: then every file is
//! streamed through `blake3`.

use std::fs::{self, File, Metadata};
use std::io::{self, Read, Write};
use std::path::{Path, PathBuf};

use blake3_batch::{Backend, Engine, ErrorKind};
use indicatif::ProgressBar;

use crate::names::write_hex;
use crate::options::{CliError, HashMode};
use crate::reading::{self, read_small, unchanged, Opened, Readers};

/// Files up to this size are read whole into the batch...
const SMALL_FILE: u64 = 1 << 20;
/// ...or up to a batch's size where the engine hashes on the GPU, which
/// `--backend gpu` asks for.
const SMALL_FILE_ON_GPU: u64 = BATCH_BYTES as u64;
/// Inputs opened side by side at a time (and as many descriptors open).
const OPEN_GROUP: usize = 256;
/// A batch is hashed once it holds this many bytes...
const BATCH_BYTES: usize = 64 << 20;
/// ...or this many files.
const BATCH_FILES: usize = 16 * 1024;
/// Read size when streaming an input through `blake3` (extended output).
const STREAM_PIECE: usize = 1 << 20;

/// What became of one input.
pub type Outcome = Result<Digest, String>;

/// A file's digest: the 32-byte hash from the engine, or the output of
/// `blake3`'s incremental hasher, of any length.
pub enum Digest {
    Hash([u8; 32]),
    Extended(blake3::OutputReader),
}

/// How [`Digest::write`] writes bytes.
#[derive(Clone, Copy, PartialEq, Eq)]
pub enum Encoding {
    Hex,
    Raw,
}

impl Digest {
    /// The first 32 bytes of output: the hash.
    pub fn hash(&self) -> [u8; 32] {
        match self {
            Digest::Hash(hash) => *hash,
            Digest::Extended(output) => {
                let mut hash = [0u8; 32];
                output.clone().fill(&mut hash);
                hash
            }
        }
    }

    /// Writes the first `len` bytes of output, a block at a time (so any
    /// length streams). Only extended output goes past 32 bytes.
    pub fn write(self, len: u64, encoding: Encoding, out: &mut impl Write) -> io::Result<()> {
        let mut output = match self {
            Digest::Hash(hash) if len <= 32 => return put(&hash[..len as usize], encoding, out),
            Digest::Hash(_) => {
                return Err(io::Error::other(
                    "internal error: a batched digest asked for more than 32 bytes",
                ))
            }
            Digest::Extended(output) => output,
        };
        let mut block = [0u8; 64];
        let mut left = len;
        while left > 0 {
            let take = left.min(block.len() as u64) as usize;
            output.fill(&mut block[..take]);
            put(&block[..take], encoding, out)?;
            left -= take as u64;
        }
        Ok(())
    }
}

fn put(bytes: &[u8], encoding: Encoding, out: &mut impl Write) -> io::Result<()> {
    match encoding {
        Encoding::Raw => out.write_all(bytes),
        Encoding::Hex => write_hex(bytes, out),
    }
}

enum Slot<T> {
    /// Blob `n` of the pending batch.
    Batched(T, usize),
    /// Already known (streamed, or failed).
    Done(T, Outcome),
}

/// Collects inputs, hashes them in batches, and hands each outcome with
/// its caller's token to `emit`, in the order the inputs were pushed.
/// Inputs are opened in groups, and runs of small files read, on the
/// engine's thread count side by side (`reading.rs`).
pub struct FileHasher<'a, T> {
    engine: &'a Engine,
    mode: &'a HashMode,
    data: Vec<u8>,
    offsets: Vec<u64>,
    slots: Vec<Slot<T>>,
    progress: &'a ProgressBar,
    /// Inputs pushed but not opened yet, in order.
    pending: Vec<(PathBuf, T)>,
    readers: Readers,
    /// The longest file read whole into a batch; longer ones are streamed.
    small_file: u64,
    /// Every file streamed, for output past 32 bytes.
    extended: bool,
    /// The read buffer of streamed inputs, allocated once (with
    /// `--length` over 32, every small file is streamed too).
    piece: Vec<u8>,
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
            pending: Vec::new(),
            readers: Readers::new(engine.threads()),
            small_file: small_file(engine.backend()),
            extended: false,
            piece: Vec::new(),
        }
    }

    /// Streams every file through `blake3`, whose output has any length,
    /// rather than batching small ones through the engine.
    pub fn extended(mut self, extended: bool) -> Self {
        self.extended = extended;
        self
    }

    /// Adds the file at `path` (`-` is stdin).
    pub fn push(
        &mut self,
        path: &Path,
        token: T,
        emit: &mut impl FnMut(T, Outcome) -> Result<(), CliError>,
    ) -> Result<(), CliError> {
        self.pending.push((path.to_owned(), token));
        if self.pending.len() >= OPEN_GROUP {
            self.open_pending(emit)?;
        }
        Ok(())
    }

    /// Opens the pending inputs side by side, then takes them in order:
    /// runs of small files read side by side into the batch, as many as
    /// its bytes allow; the others streamed or failed in their turn.
    fn open_pending(
        &mut self,
        emit: &mut impl FnMut(T, Outcome) -> Result<(), CliError>,
    ) -> Result<(), CliError> {
        let pending = std::mem::take(&mut self.pending);
        let (paths, tokens): (Vec<PathBuf>, Vec<T>) = pending.into_iter().unzip();
        let (small_file, extended) = (self.small_file, self.extended);
        let opened = self
            .readers
            .each(paths, |path| reading::open(&path, small_file, extended));
        let mut inputs = tokens.into_iter().zip(opened).peekable();
        while let Some((token, opened)) = inputs.next() {
            let (file, before) = match opened {
                Opened::Small(file, before) => (file, before),
                Opened::Stdin => {
                    self.flush_batch(emit)?;
                    let outcome = self.stream(io::stdin().lock());
                    self.finish_one(token, outcome, emit)?;
                    continue;
                }
                Opened::Stream(mut file, before) => {
                    self.flush_batch(emit)?;
                    let outcome = self
                        .stream_file(&mut file)
                        .and_then(|digest| unchanged(&file, &before).map(|()| digest));
                    self.finish_one(token, outcome, emit)?;
                    continue;
                }
                Opened::Failed(message) => {
                    self.slots.push(Slot::Done(token, Err(message)));
                    self.flush_if_full(emit)?;
                    continue;
                }
            };
            // A run of small files whose bytes the batch still holds.
            let mut bytes = before.len();
            let mut run = vec![(token, (file, before))];
            while let Some((_, Opened::Small(_, next))) = inputs.peek() {
                if self.data.len() as u64 + bytes + next.len() > BATCH_BYTES as u64 {
                    break;
                }
                bytes += next.len();
                let Some((token, Opened::Small(file, before))) = inputs.next() else {
                    unreachable!("peeked a small file");
                };
                run.push((token, (file, before)));
            }
            let (tokens, files): (Vec<T>, Vec<(File, Metadata)>) = run.into_iter().unzip();
            let reads = (self.readers).each(files, |(file, before)| read_small(file, &before));
            for (token, read) in tokens.into_iter().zip(reads) {
                match read {
                    Ok(bytes) => {
                        self.data.extend_from_slice(&bytes);
                        self.offsets.push(self.data.len() as u64);
                        self.slots
                            .push(Slot::Batched(token, self.offsets.len() - 2));
                    }
                    // Nothing of a partly read or changed file is hashed.
                    Err(message) => self.slots.push(Slot::Done(token, Err(message))),
                }
                self.flush_if_full(emit)?;
            }
        }
        Ok(())
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
            self.flush_batch(emit)?;
        }
        Ok(())
    }

    /// Takes every input pushed so far, and emits every outcome in order.
    pub fn flush(
        &mut self,
        emit: &mut impl FnMut(T, Outcome) -> Result<(), CliError>,
    ) -> Result<(), CliError> {
        self.open_pending(emit)?;
        self.flush_batch(emit)
    }

    /// Hashes the batch and emits every outcome before it in order.
    fn flush_batch(
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
                Slot::Batched(token, index) => emit(token, Ok(Digest::Hash(digests[index])))?,
                Slot::Done(token, outcome) => emit(token, outcome)?,
            }
        }
        Ok(())
    }

    /// Hashes a file as [`stream`](Self::stream) does a reader; a regular
    /// file's windows are read on the engine's threads.
    fn stream_file(&mut self, file: &mut File) -> Outcome {
        match self.extended {
            false => outcome(self.engine.hash_file(self.mode.mode(), file)),
            true => self.stream(file),
        }
    }

    /// Hashes a reader to its end: through the engine, or through
    /// `blake3` in pieces where every output is extended.
    fn stream(&mut self, mut reader: impl Read) -> Outcome {
        if !self.extended {
            return outcome(self.engine.hash_reader(self.mode.mode(), reader));
        }
        let mut hasher = self.mode.hasher();
        if self.piece.is_empty() {
            self.piece = vec![0u8; STREAM_PIECE];
        }
        let piece = &mut self.piece;
        loop {
            match reader.read(piece) {
                Ok(0) => return Ok(Digest::Extended(hasher.finalize_xof())),
                Ok(read) => {
                    hasher.update_rayon(&piece[..read]);
                }
                Err(error) if error.kind() == io::ErrorKind::Interrupted => {}
                Err(error) => return Err(error.to_string()),
            }
        }
    }
}

/// A streamed input's outcome: a read that failed in the reader's own
/// words, as for a small file.
fn outcome(hashed: Result<[u8; 32], blake3_batch::Error>) -> Outcome {
    match hashed {
        Ok(hash) => Ok(Digest::Hash(hash)),
        Err(error) => match error.kind() {
            ErrorKind::Read { reason, .. } => Err(reason.clone()),
            _ => Err(error.to_string()),
        },
    }
}

/// The longest file read whole into a batch for an engine on `backend`.
fn small_file(backend: Backend) -> u64 {
    match backend {
        Backend::Gpu => SMALL_FILE_ON_GPU,
        _ => SMALL_FILE,
    }
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_the_gpu_backend_reads_files_up_to_a_batch_whole() {
        assert_eq!(small_file(Backend::Gpu), BATCH_BYTES as u64);
        for backend in [Backend::Auto, Backend::Cpu] {
            assert_eq!(small_file(backend), SMALL_FILE, "{backend:?}");
        }
    }
}
