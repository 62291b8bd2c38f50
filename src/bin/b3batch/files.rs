//! Hashing many files in order, through the engine's [`FileHasher`]:
//! small files are read side by side into batches, large files (and
//! stdin) streamed through the engine, which hashes them on the GPU or the
//! CPU as its backend says. Results come out in input order; a file that
//! cannot be read fully, or that changes while it is read, gets an error,
//! never a digest. Output past the first 32 bytes (`--length`, `--seek`)
//! is BLAKE3's extended output, which the engine gives as an
//! `OutputReader` per file (small files then hashed by `blake3` on its
//! threads, not in SIMD lanes).

use std::fs;
use std::io::{self, Read, Write};
use std::path::{Path, PathBuf};

use blake3_batch::{Engine, Error, ErrorKind};
use indicatif::ProgressBar;

use crate::names::write_hex;
use crate::options::{CliError, HashMode};

/// What a file that changed while it was read gets.
const CHANGED: &str = "the file changed while it was read; hash it again once it is complete";

/// What became of one input.
pub type Outcome = Result<Digest, String>;

/// A file's digest: the 32-byte hash, or an extended output of any length.
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

impl From<[u8; 32]> for Digest {
    fn from(hash: [u8; 32]) -> Digest {
        Digest::Hash(hash)
    }
}

impl From<blake3::OutputReader> for Digest {
    fn from(output: blake3::OutputReader) -> Digest {
        Digest::Extended(output)
    }
}

impl Digest {
    /// The 32 bytes of output from byte `seek` on (from 0: the hash), or
    /// `None` past the first byte of a batched hash, which holds only those
    /// 32.
    pub fn output_at(&self, seek: u64) -> Option<[u8; 32]> {
        match self {
            Digest::Hash(hash) => (seek == 0).then_some(*hash),
            Digest::Extended(output) => {
                let mut output = output.clone();
                output.set_position(seek);
                let mut bytes = [0u8; 32];
                output.fill(&mut bytes);
                Some(bytes)
            }
        }
    }

    /// Writes `len` bytes of output from byte `seek` on, a block at a time
    /// (so any length streams). Only extended output goes past the first
    /// 32 bytes.
    pub fn write(
        self,
        len: u64,
        seek: u64,
        encoding: Encoding,
        out: &mut impl Write,
    ) -> io::Result<()> {
        let mut output = match self {
            Digest::Hash(hash) => {
                return match seek.checked_add(len).filter(|&end| end <= 32) {
                    Some(end) => put(&hash[seek as usize..end as usize], encoding, out),
                    None => Err(io::Error::other(
                        "internal error: a batched digest asked for more than its 32 bytes",
                    )),
                }
            }
            Digest::Extended(mut output) => {
                output.set_position(seek);
                output
            }
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

/// Writes `bytes` raw or as hex.
pub fn put(bytes: &[u8], encoding: Encoding, out: &mut impl Write) -> io::Result<()> {
    match encoding {
        Encoding::Raw => out.write_all(bytes),
        Encoding::Hex => write_hex(bytes, out),
    }
}

/// Hands each input's outcome with its caller's token to `emit`, in the
/// order the inputs were pushed: files through the engine's
/// [`FileHasher`](blake3_batch::FileHasher), stdin streamed in its turn.
pub struct FileHasher<'a, T> {
    engine: &'a Engine,
    mode: &'a HashMode,
    files: Files<'a, T>,
    progress: &'a ProgressBar,
    /// What a path that names a directory gets.
    directory: &'static str,
}

/// The engine's file hasher, for digests or for extended output.
enum Files<'a, T> {
    Digests(blake3_batch::FileHasher<'a, T>),
    Extended(blake3_batch::FileHasher<'a, T, blake3::OutputReader>),
}

impl<'a, T> FileHasher<'a, T> {
    pub fn new(engine: &'a Engine, mode: &'a HashMode, progress: &'a ProgressBar) -> Self {
        FileHasher {
            engine,
            mode,
            files: Files::Digests(engine.file_hasher(mode.mode())),
            progress,
            directory: "Is a directory",
        }
    }

    /// Says `reason` of a path that names a directory, rather than b3sum's
    /// "Is a directory".
    pub fn directory_reason(mut self, reason: &'static str) -> Self {
        self.directory = reason;
        self
    }

    /// Gives every input's extended output, whose length has no bound,
    /// rather than its 32-byte digest.
    pub fn extended(mut self, extended: bool) -> Self {
        if extended {
            self.files = Files::Extended(self.engine.file_hasher_xof(self.mode.mode()));
        }
        self
    }

    /// Adds the file at `path` (`-` is stdin).
    pub fn push(
        &mut self,
        path: &Path,
        token: T,
        emit: &mut impl FnMut(T, Outcome) -> Result<(), CliError>,
    ) -> Result<(), CliError> {
        if path == Path::new("-") {
            // Everything before it first, in order.
            self.flush(emit)?;
            self.progress.inc(1);
            return emit(token, self.stream(io::stdin().lock()));
        }
        let (progress, directory) = (self.progress, self.directory);
        match &mut self.files {
            Files::Digests(files) => {
                files.push(path, token, &mut forward(progress, directory, emit))
            }
            Files::Extended(files) => {
                files.push(path, token, &mut forward(progress, directory, emit))
            }
        }
    }

    /// Takes every input pushed so far, and emits every outcome in order.
    pub fn flush(
        &mut self,
        emit: &mut impl FnMut(T, Outcome) -> Result<(), CliError>,
    ) -> Result<(), CliError> {
        let (progress, directory) = (self.progress, self.directory);
        match &mut self.files {
            Files::Digests(files) => files.finish(&mut forward(progress, directory, emit)),
            Files::Extended(files) => files.finish(&mut forward(progress, directory, emit)),
        }
    }

    /// Hashes a reader (stdin) to its end through the engine.
    fn stream(&self, reader: impl Read) -> Outcome {
        let mode = self.mode.mode();
        let streamed = match self.files {
            Files::Digests(_) => self.engine.hash_reader(mode, reader).map(Digest::Hash),
            Files::Extended(_) => (self.engine.hash_reader_xof(mode, reader)).map(Digest::Extended),
        };
        streamed.map_err(|error| match error.kind() {
            ErrorKind::Read { reason, .. } => reason.clone(),
            _ => error.to_string(),
        })
    }
}

/// The engine's `emit` for `emit`: each file counted on the progress bar,
/// its result turned into an outcome (`directory`: a directory's reason).
fn forward<'a, T, D: Into<Digest>>(
    progress: &'a ProgressBar,
    directory: &'static str,
    emit: &'a mut impl FnMut(T, Outcome) -> Result<(), CliError>,
) -> impl FnMut(T, Result<D, Error>) -> Result<(), CliError> + 'a {
    move |token, result| {
        progress.inc(1);
        emit(token, outcome(result.map(Into::into), directory)?)
    }
}

/// A file's outcome in the words of `b3sum`'s messages, which name the
/// file beside them, with `directory` for a directory. An engine that
/// failed ends the run.
fn outcome(digest: Result<Digest, Error>, directory: &str) -> Result<Outcome, CliError> {
    let error = match digest {
        Ok(digest) => return Ok(Ok(digest)),
        Err(error) => error,
    };
    match error.kind() {
        // The engine's reason speaks to a caller of the library.
        ErrorKind::File { io_kind, .. } if *io_kind == io::ErrorKind::IsADirectory => {
            Ok(Err(directory.to_owned()))
        }
        ErrorKind::File { reason, .. } => Ok(Err(reason.clone())),
        ErrorKind::FileChanged { .. } => Ok(Err(CHANGED.to_owned())),
        _ => Err(CliError::Message(error.to_string())),
    }
}

/// The files under `dir`, depth first, each directory's entries sorted by
/// name. Symbolic links to directories are not followed (no cycles), nor
/// are named pipes, sockets and devices read (a pipe would wait for a
/// writer forever, `/dev/zero` never ends): they, and entries that cannot
/// be listed, are reported through `skipped`. An entry whose metadata
/// cannot be read is found, so that reading it reports why.
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
            continue;
        }
        match fs::metadata(&path) {
            Ok(meta) if meta.is_dir() => skipped.push((
                path,
                "symbolic link to a directory, not followed".to_owned(),
            )),
            Ok(meta) if !meta.is_file() => {
                let reason = format!(
                    "{}, not read under -r (name it to hash what it gives)",
                    special_file_kind(&meta.file_type())
                );
                skipped.push((path, reason));
            }
            _ => found.push(path),
        }
    }
}

/// What a file that is neither a regular file nor a directory is, in words.
fn special_file_kind(file_type: &fs::FileType) -> &'static str {
    #[cfg(unix)]
    {
        use std::os::unix::fs::FileTypeExt;
        if file_type.is_fifo() {
            return "named pipe";
        } else if file_type.is_socket() {
            return "socket";
        } else if file_type.is_char_device() || file_type.is_block_device() {
            return "device";
        }
    }
    let _ = file_type;
    "not a regular file"
}
