//! Many files named by their paths ([`Engine::hash_files`],
//! [`FileHasher`]): files of up to 64 MiB are read whole into packed
//! batches and hashed together; larger ones are streamed through
//! [`Engine::hash_file`] in their turn. Over many small files the system
//! calls (open, stat, read, close) take most of the time, not the hashing,
//! so files are opened, and runs of small files read, side by side on the
//! engine's threads. A file that cannot be read, or that changes while it
//! is read, gets an error, never a digest. Extended output
//! ([`Engine::hash_files_xof`]) takes the same path, an `OutputReader`
//! per file.

use std::fs::{File, Metadata};
use std::io::{self, Read};
use std::path::{Path, PathBuf};

use super::input::same_version;
use super::output::HasherOutput;
#[cfg(any(unix, windows))]
use super::positional;
use super::{Backend, Engine};
use crate::error::{Error, ErrorKind};
use crate::mode::Mode;

/// Files up to this size are read whole into a batch, so that the
/// backend (or Auto's split between the GPU and the CPU) takes them
/// together; larger ones stream. On the CPU too a file of tens of MiB
/// went faster as a batch than as a stream (1.8× on two cores), which sets
/// up its windows for every input.
const SMALL_FILE: u64 = 64 << 20;
/// Bytes one thread reads of a small file over this size.
const READ_PIECE: usize = 1 << 20;
/// Files opened side by side at a time (and as many descriptors open).
const OPEN_GROUP: usize = 256;
/// A batch is hashed once it holds this many bytes where a GPU may take
/// it, so that the card's fixed costs per batch stay small...
const GPU_BATCH_BYTES: usize = 64 << 20;
/// ...and this many on the CPU alone, where a batch read and then hashed
/// while still in the cache ran 10% faster over files of a few MiB. (A
/// small file larger than that is a batch of its own.)
const CPU_BATCH_BYTES: usize = 16 << 20;
/// ...or this many files.
const BATCH_FILES: usize = 16 * 1024;

/// One file's digest, or why it has none: [`ErrorKind::File`] (it cannot
/// be opened or read, or is a directory), [`ErrorKind::FileChanged`], or
/// the engine's own error where hashing failed.
pub type FileDigest = Result<[u8; 32], Error>;

impl Engine {
    /// The digests of the files at `paths` in `mode`, one result per path
    /// in order, each bit-identical to hashing the file's bytes with
    /// `blake3`. Files of up to 64 MiB are read side by side on the
    /// engine's threads and hashed together in batches; larger ones stream
    /// through
    /// [`hash_file`](Self::hash_file). A file that cannot be opened or
    /// read, is a directory, or changes while it is read gets its error
    /// and no digest; the others are hashed all the same.
    ///
    /// For results as they come rather than all at the end, use
    /// [`file_hasher`](Self::file_hasher).
    ///
    /// ```
    /// use blake3_batch::{Engine, ErrorKind, Mode};
    ///
    /// let dir = std::env::temp_dir().join(format!("b3b-doc-{}", std::process::id()));
    /// std::fs::create_dir_all(&dir).unwrap();
    /// std::fs::write(dir.join("a"), b"alpha").unwrap();
    /// let engine = Engine::builder().build()?;
    /// let digests = engine.hash_files(Mode::Hash, [dir.join("a"), dir.join("missing")]);
    /// assert_eq!(digests[0], Ok(*blake3::hash(b"alpha").as_bytes()));
    /// let error = digests[1].as_ref().unwrap_err();
    /// assert!(matches!(error.kind(), ErrorKind::File { io_kind, .. } if *io_kind == std::io::ErrorKind::NotFound));
    /// # std::fs::remove_dir_all(&dir).unwrap();
    /// # Ok::<(), blake3_batch::Error>(())
    /// ```
    pub fn hash_files<P: AsRef<Path>>(
        &self,
        mode: Mode,
        paths: impl IntoIterator<Item = P>,
    ) -> Vec<FileDigest> {
        self.collect_files(self.file_hasher(mode), paths)
    }

    /// [`hash_files`](Self::hash_files) with each file's extended output:
    /// an [`OutputReader`](blake3::OutputReader) to read any number of
    /// bytes from, whose first 32 are its digest. Small files are read as
    /// `hash_files` reads them, then hashed by `blake3` on the CPU's
    /// threads (not in SIMD lanes) whatever the backend; large ones stream
    /// through [`hash_file_xof`](Self::hash_file_xof).
    pub fn hash_files_xof<P: AsRef<Path>>(
        &self,
        mode: Mode,
        paths: impl IntoIterator<Item = P>,
    ) -> Vec<Result<blake3::OutputReader, Error>> {
        self.collect_files(self.file_hasher_xof(mode), paths)
    }

    fn collect_files<D: HasherOutput, P: AsRef<Path>>(
        &self,
        mut files: FileHasher<'_, (), D>,
        paths: impl IntoIterator<Item = P>,
    ) -> Vec<Result<D, Error>> {
        let mut outputs = Vec::new();
        let mut collect = |(), output| {
            outputs.push(output);
            Ok::<(), std::convert::Infallible>(())
        };
        for path in paths {
            let Ok(()) = files.push(path, (), &mut collect);
        }
        let Ok(()) = files.finish(&mut collect);
        outputs
    }

    /// A [`FileHasher`] for files in `mode`: push paths one at a time,
    /// each with a token of the caller's, and get each file's digest with
    /// its token, in the order pushed, as soon as its batch is hashed.
    pub fn file_hasher<'e, T>(&'e self, mode: Mode<'e>) -> FileHasher<'e, T> {
        self.new_file_hasher(mode)
    }

    /// A [`FileHasher`] that gives each file's extended output, as
    /// [`hash_files_xof`](Self::hash_files_xof) makes it.
    pub fn file_hasher_xof<'e, T>(
        &'e self,
        mode: Mode<'e>,
    ) -> FileHasher<'e, T, blake3::OutputReader> {
        self.new_file_hasher(mode)
    }

    fn new_file_hasher<'e, T, D: HasherOutput>(&'e self, mode: Mode<'e>) -> FileHasher<'e, T, D> {
        FileHasher {
            engine: self,
            mode,
            batch_bytes: batch_bytes(self),
            pending: Vec::new(),
            data: Vec::new(),
            filled: 0,
            offsets: vec![0],
            slots: Vec::new(),
            outputs: Vec::new(),
        }
    }
}

/// The bytes a batch of `engine`'s holds before it is hashed, where its
/// blobs arrive one at a time (files, [`BlobHasher`](super::BlobHasher)).
pub(super) fn batch_bytes(engine: &Engine) -> usize {
    match (engine.backend(), engine.gpu_info()) {
        (Backend::Cpu, _) | (_, None) => CPU_BATCH_BYTES,
        _ => GPU_BATCH_BYTES,
    }
}

/// Hashes files pushed one at a time, in batches, and hands each file's
/// digest with its token to an `emit` callback, in the order the files
/// were pushed ([`Engine::file_hasher`]). It holds at most a batch of
/// 64 MiB, and a few hundred files open.
///
/// `emit` may fail (a write that failed, say): then `push` or `finish`
/// stops and returns that error, and the digests not yet emitted are
/// dropped.
///
/// ```
/// use blake3_batch::{Engine, Mode};
///
/// let dir = std::env::temp_dir().join(format!("b3b-doc-hasher-{}", std::process::id()));
/// std::fs::create_dir_all(&dir).unwrap();
/// let engine = Engine::builder().build()?;
/// let mut files = engine.file_hasher(Mode::Hash);
/// let mut lines = Vec::new();
/// let mut emit = |name: String, digest: blake3_batch::FileDigest| {
///     lines.push(format!("{} {name}", blake3::Hash::from(digest?).to_hex()));
///     Ok::<(), blake3_batch::Error>(())
/// };
/// for name in ["one", "two"] {
///     std::fs::write(dir.join(name), name).unwrap();
///     files.push(dir.join(name), name.to_owned(), &mut emit)?;
/// }
/// files.finish(&mut emit)?;
/// assert_eq!(lines[1], format!("{} two", blake3::hash(b"two").to_hex()));
/// # std::fs::remove_dir_all(&dir).unwrap();
/// # Ok::<(), blake3_batch::Error>(())
/// ```
pub struct FileHasher<'e, T, D: HasherOutput = [u8; 32]> {
    engine: &'e Engine,
    mode: Mode<'e>,
    /// A batch is hashed once it holds this many bytes.
    batch_bytes: usize,
    /// Files pushed but not opened yet, in order.
    pending: Vec<(PathBuf, T)>,
    /// The batch: the small files read so far, packed, in the first
    /// `filled` bytes. The bytes past them are kept from earlier batches,
    /// so that each batch's files are read into memory zeroed only once.
    data: Vec<u8>,
    filled: usize,
    offsets: Vec<u64>,
    /// Every file taken since the last batch, in order.
    slots: Vec<Slot<T, D>>,
    /// Where a batch's outputs go, kept between batches.
    outputs: Vec<D>,
}

enum Slot<T, D> {
    /// Blob `n` of the batch.
    Batched(T, usize),
    /// Failed before the batch.
    Done(T, Result<D, Error>),
}

/// A file, opened.
enum Opening {
    /// A regular file of at most `small_file` bytes: read into the batch.
    Small(Opened),
    /// A larger file, or one with no length to trust (a FIFO, a device).
    Stream(Opened),
    Failed(Error),
}

impl<T, D: HasherOutput> FileHasher<'_, T, D> {
    /// Adds the file at `path`. Files are opened in groups, so its digest,
    /// and those of the files before it, may come in a later call.
    pub fn push<E>(
        &mut self,
        path: impl AsRef<Path>,
        token: T,
        emit: &mut impl FnMut(T, Result<D, Error>) -> Result<(), E>,
    ) -> Result<(), E> {
        self.pending.push((path.as_ref().to_owned(), token));
        if self.pending.len() >= OPEN_GROUP {
            self.open_pending(emit)?;
        }
        Ok(())
    }

    /// Hashes every file pushed so far and emits the digests not yet
    /// emitted. The hasher can then take more files.
    pub fn finish<E>(
        &mut self,
        emit: &mut impl FnMut(T, Result<D, Error>) -> Result<(), E>,
    ) -> Result<(), E> {
        self.open_pending(emit)?;
        self.flush_batch(emit)
    }

    /// Opens the pending files side by side, then takes them in order:
    /// runs of small files read side by side into the batch, as many as
    /// it holds; the others streamed, or failed, in their turn.
    fn open_pending<E>(
        &mut self,
        emit: &mut impl FnMut(T, Result<D, Error>) -> Result<(), E>,
    ) -> Result<(), E> {
        let (paths, tokens): (Vec<PathBuf>, Vec<T>) =
            std::mem::take(&mut self.pending).into_iter().unzip();
        let threads = self.engine.cpu_threads();
        let openings = threads.map(paths, |path| open(path, SMALL_FILE));
        let mut files = tokens.into_iter().zip(openings).peekable();
        while let Some((token, opening)) = files.next() {
            match opening {
                Opening::Failed(error) => self.slots.push(Slot::Done(token, Err(error))),
                Opening::Stream(opened) => {
                    self.flush_batch(emit)?;
                    emit(token, self.stream(&opened))?;
                }
                Opening::Small(opened) => {
                    if (self.filled as u64 + opened.len()) > self.batch_bytes as u64 {
                        self.flush_batch(emit)?;
                    }
                    let mut bytes = self.filled as u64 + opened.len();
                    let mut run = vec![(token, opened)];
                    while let Some((_, Opening::Small(next))) = files.peek() {
                        let full = self.slots.len() + run.len() >= BATCH_FILES;
                        if full || bytes + next.len() > self.batch_bytes as u64 {
                            break;
                        }
                        bytes += next.len();
                        let Some((token, Opening::Small(opened))) = files.next() else {
                            unreachable!("peeked a small file");
                        };
                        run.push((token, opened));
                    }
                    self.read_run(run);
                }
            }
            if self.filled >= self.batch_bytes || self.slots.len() >= BATCH_FILES {
                self.flush_batch(emit)?;
            }
        }
        Ok(())
    }

    /// Reads a run of small files side by side, each straight into its
    /// place in the batch; those over a piece in pieces side by side.
    fn read_run(&mut self, run: Vec<(T, Opened)>) {
        let start = self.filled;
        let bytes: u64 = run.iter().map(|(_, opened)| opened.len()).sum();
        self.filled += bytes as usize;
        if self.data.len() < self.filled {
            self.data.resize(self.filled, 0);
        }
        let (tokens, files): (Vec<T>, Vec<Opened>) = run.into_iter().unzip();
        let mut parts = Vec::new();
        let mut rest = &mut self.data[start..self.filled];
        for (index, opened) in files.iter().enumerate() {
            let (place, after) =
                std::mem::take(&mut rest).split_at_mut(opened.before.len() as usize);
            rest = after;
            Part::cut(index, place, &mut parts);
        }
        let threads = self.engine.cpu_threads();
        let read = threads.map(parts, |part| part.read(&files));
        let mut outcomes: Vec<Result<(), Error>> = files.iter().map(|_| Ok(())).collect();
        for (index, result) in read {
            if outcomes[index].is_ok() {
                outcomes[index] = result;
            }
        }
        let mut end = start as u64;
        for ((token, mut outcome), opened) in tokens.into_iter().zip(outcomes).zip(&files) {
            // A file read in pieces has its end checked once all are read.
            if in_pieces(opened.len() as usize) && outcome.is_ok() {
                outcome = opened.ends_unchanged();
            }
            // A file that failed keeps its place, hashed for nothing, so
            // that the places after it stay where they were read.
            end += opened.len();
            self.offsets.push(end);
            let blob = self.offsets.len() - 2;
            self.slots.push(match outcome {
                Ok(()) => Slot::Batched(token, blob),
                // A file whose length is no guide (`/proc`, `/sys`): the
                // stream reads it to its end.
                Err(error) if length_is_no_guide(&error, opened) => {
                    Slot::Done(token, self.stream(opened))
                }
                Err(error) => Slot::Done(token, Err(error)),
            });
        }
    }

    /// Hashes the batch, and emits every digest before it in order.
    fn flush_batch<E>(
        &mut self,
        emit: &mut impl FnMut(T, Result<D, Error>) -> Result<(), E>,
    ) -> Result<(), E> {
        let hashed = match self.offsets.len() {
            1 => Ok(()),
            _ => {
                let data = &self.data[..self.filled];
                D::hash_batch_into(
                    self.engine,
                    self.mode,
                    data,
                    &self.offsets,
                    &mut self.outputs,
                )
            }
        };
        self.filled = 0;
        self.offsets.truncate(1);
        for slot in self.slots.drain(..) {
            match slot {
                Slot::Batched(token, blob) => {
                    let output = hashed.as_ref().map(|()| self.outputs[blob].clone());
                    emit(token, output.map_err(Error::clone))?
                }
                Slot::Done(token, digest) => emit(token, digest)?,
            }
        }
        Ok(())
    }

    /// A larger file, or one that is not regular, through the engine's
    /// stream.
    fn stream(&self, opened: &Opened) -> Result<D, Error> {
        match D::hash_file(self.engine, self.mode, &opened.file) {
            Ok(digest) => opened.unchanged().map(|()| digest),
            Err(error) => match error.kind() {
                // A length that changed shows as a failed read: say so.
                ErrorKind::Read { reason, .. } => {
                    opened.unchanged()?;
                    Err(file_error(
                        &opened.path,
                        io::ErrorKind::Other,
                        reason.clone(),
                    ))
                }
                _ => Err(error),
            },
        }
    }
}

/// A file, open, with its path and its metadata when opened.
struct Opened {
    path: PathBuf,
    file: File,
    before: Metadata,
}

impl Opened {
    /// Its length when opened.
    fn len(&self) -> u64 {
        self.before.len()
    }

    /// Fails if it changed since it was opened ([`unchanged`]).
    fn unchanged(&self) -> Result<(), Error> {
        unchanged(&self.path, &self.file, &self.before)
    }

    /// After its pieces were read: fails if the file now holds more bytes
    /// than when opened, or changed length or time.
    fn ends_unchanged(&self) -> Result<(), Error> {
        #[cfg(any(unix, windows))]
        {
            let mut byte = [0u8];
            loop {
                match positional::read_at(&self.file, &mut byte, self.before.len()) {
                    Ok(0) => break,
                    Ok(_) => return Err(changed(&self.path)),
                    Err(error) if error.kind() == io::ErrorKind::Interrupted => {}
                    Err(error) => return Err(io_error(&self.path, &error)),
                }
            }
        }
        self.unchanged()
    }
}

/// What one thread reads of a run of small files: a file whole, or (on
/// Unix and Windows, where a file is read at positions) a piece of a file
/// over one piece, as one thread copying from the page cache is slower
/// than the hashing it feeds.
enum Part<'a> {
    Whole {
        file: usize,
        place: &'a mut [u8],
    },
    #[cfg(any(unix, windows))]
    Piece {
        file: usize,
        at: u64,
        place: &'a mut [u8],
    },
}

impl<'a> Part<'a> {
    /// The parts of file `file` of a run, read into `place`.
    fn cut(file: usize, place: &'a mut [u8], parts: &mut Vec<Part<'a>>) {
        #[cfg(any(unix, windows))]
        if in_pieces(place.len()) {
            let pieces = place.chunks_mut(READ_PIECE).enumerate();
            parts.extend(pieces.map(|(index, place)| Part::Piece {
                file,
                at: (index * READ_PIECE) as u64,
                place,
            }));
            return;
        }
        parts.push(Part::Whole { file, place });
    }

    /// Reads this part of `files`: its file, and how the read went.
    fn read(self, files: &[Opened]) -> (usize, Result<(), Error>) {
        match self {
            Part::Whole { file, place } => (file, read_small(&files[file], place)),
            #[cfg(any(unix, windows))]
            Part::Piece { file, at, place } => {
                let opened = &files[file];
                let read = match positional::read_exact_at(&opened.file, place, at) {
                    Ok(()) => Ok(()),
                    Err(error) if error.kind() == io::ErrorKind::UnexpectedEof => {
                        Err(changed(&opened.path))
                    }
                    Err(error) => Err(io_error(&opened.path, &error)),
                };
                (file, read)
            }
        }
    }
}

/// Opens `path` and says how to read it.
fn open(path: PathBuf, small_file: u64) -> Opening {
    let opened = File::open(&path).and_then(|file| {
        let metadata = file.metadata()?;
        Ok((file, metadata))
    });
    let (file, before) = match opened {
        // Windows refuses to open a directory as a file ("access denied"):
        // say what it is, as on Unix, where it opens and is seen below.
        Err(error) if error.kind() == io::ErrorKind::PermissionDenied && path.is_dir() => {
            return Opening::Failed(is_a_directory(&path));
        }
        Err(error) => return Opening::Failed(io_error(&path, &error)),
        Ok(opened) => opened,
    };
    if before.is_dir() {
        return Opening::Failed(is_a_directory(&path));
    }
    // FIFOs, character devices and sockets have no length to trust: they
    // are streamed, like large files, never read whole.
    let small = before.is_file() && before.len() <= small_file;
    let opened = Opened { path, file, before };
    match small {
        true => Opening::Small(opened),
        false => Opening::Stream(opened),
    }
}

/// The error for a directory given as a file.
fn is_a_directory(path: &Path) -> Error {
    file_error(
        path,
        io::ErrorKind::IsADirectory,
        "is a directory: give the paths of the files in it".to_owned(),
    )
}

/// Whether a batched file of `len` bytes is read in pieces side by side
/// (where files are read at positions) rather than by one thread.
fn in_pieces(len: usize) -> bool {
    cfg!(any(unix, windows)) && len > READ_PIECE
}

/// Reads a small regular file into `place` (its length when opened), and
/// fails if it changed meanwhile.
fn read_small(opened: &Opened, place: &mut [u8]) -> Result<(), Error> {
    let (path, mut file) = (&opened.path, &opened.file);
    // Each read asks for one byte more than the file had: getting it means
    // the file grew, and a read that comes short of it means the file
    // ended there, so a file of any size takes one read, not two.
    let mut past_the_end = [0u8];
    let mut filled = 0;
    loop {
        let mut buffers = [
            io::IoSliceMut::new(&mut place[filled..]),
            io::IoSliceMut::new(&mut past_the_end),
        ];
        match file.read_vectored(&mut buffers) {
            Ok(0) if filled < place.len() => return Err(changed(path)),
            Ok(read) if filled + read > place.len() => return Err(changed(path)),
            Ok(read) => filled += read,
            Err(error) if error.kind() == io::ErrorKind::Interrupted => continue,
            Err(error) => return Err(io_error(path, &error)),
        }
        if filled == place.len() {
            break;
        }
    }
    opened.unchanged()
}

/// Fails if a regular file no longer has the length and modification time
/// it had when opened (other kinds of files have no versions to mix).
fn unchanged(path: &Path, file: &File, before: &Metadata) -> Result<(), Error> {
    if !before.is_file() {
        return Ok(());
    }
    let after = file.metadata().map_err(|error| io_error(path, &error))?;
    match same_version(before, &after) {
        true => Ok(()),
        false => Err(changed(path)),
    }
}

fn io_error(path: &Path, error: &io::Error) -> Error {
    file_error(path, error.kind(), error.to_string())
}

fn file_error(path: &Path, io_kind: io::ErrorKind, reason: String) -> Error {
    ErrorKind::File {
        path: path.to_owned(),
        io_kind,
        reason,
    }
    .into()
}

/// Whether reads that missed a file's length (`error`) came from a file
/// whose length is no guide: its length and time are as they were. Only
/// where `hash_file` then reads it from its start whatever its cursor
/// (Unix, Windows); elsewhere such a file stays refused.
fn length_is_no_guide(error: &Error, opened: &Opened) -> bool {
    cfg!(any(unix, windows))
        && matches!(error.kind(), ErrorKind::FileChanged { .. })
        && opened.unchanged().is_ok()
}

fn changed(path: &Path) -> Error {
    ErrorKind::FileChanged {
        path: path.to_owned(),
    }
    .into()
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::fs;
    use std::io::Write;

    fn file_with(bytes: &[u8]) -> (tempfile::TempDir, PathBuf) {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("f");
        fs::write(&path, bytes).unwrap();
        (dir, path)
    }

    fn opened(path: &Path) -> Opened {
        let file = File::open(path).unwrap();
        let before = file.metadata().unwrap();
        let path = path.to_owned();
        Opened { path, file, before }
    }

    fn is_changed(result: Result<(), Error>) -> bool {
        matches!(
            result.map_err(|error| error.kind().clone()),
            Err(ErrorKind::FileChanged { .. })
        )
    }

    #[test]
    fn a_file_that_grows_or_shrinks_after_opening_is_refused() {
        let (_dir, path) = file_with(&[1; 5000]);
        let mut place = [0u8; 5000];
        read_small(&opened(&path), &mut place).unwrap();
        assert_eq!(place, [1; 5000]);

        // Grows between opening and reading: the extra byte is seen.
        let grown = opened(&path);
        let mut appending = fs::OpenOptions::new().append(true).open(&path).unwrap();
        appending.write_all(b"more").unwrap();
        assert!(is_changed(read_small(&grown, &mut place)));

        // Shrinks: fewer bytes than at opening.
        let shrunk = opened(&path);
        let writer = fs::OpenOptions::new().write(true).open(&path).unwrap();
        writer.set_len(10).unwrap();
        assert!(is_changed(read_small(&shrunk, &mut place)));

        // Changes after it was read (a streamed file): found at the end.
        let read = opened(&path);
        appending.write_all(b"x").unwrap();
        assert!(is_changed(read.unchanged()));
    }

    /// A file over a piece, read in pieces at their positions: one that
    /// shrank fails at the piece past its end, one that grew at the check
    /// of its end.
    #[test]
    fn a_file_read_in_pieces_that_grows_or_shrinks_is_refused() {
        let len = 2 * READ_PIECE + 5;
        let contents: Vec<u8> = (0..len).map(|index| (index % 251) as u8).collect();
        let (_dir, path) = file_with(&contents);
        let read = |opened: &Opened| {
            let mut place = vec![0u8; opened.len() as usize];
            let mut parts = Vec::new();
            Part::cut(0, &mut place, &mut parts);
            let files = std::slice::from_ref(opened);
            let mut result = Ok(());
            for part in parts {
                let (_, read) = part.read(files);
                result = result.and(read);
            }
            result.and_then(|()| opened.ends_unchanged())?;
            Ok::<Vec<u8>, Error>(place)
        };
        let opening = || opened(&path);
        assert_eq!(read(&opening()).unwrap(), contents);

        let grown = opening();
        let mut appending = fs::OpenOptions::new().append(true).open(&path).unwrap();
        appending.write_all(b"more").unwrap();
        assert!(is_changed(read(&grown).map(drop)));

        let shrunk = opening();
        let writer = fs::OpenOptions::new().write(true).open(&path).unwrap();
        writer.set_len(READ_PIECE as u64).unwrap();
        assert!(is_changed(read(&shrunk).map(drop)));
    }

    #[test]
    fn a_rewrite_of_the_same_length_is_found_by_its_time() {
        let (_dir, path) = file_with(b"version one");
        let read = opened(&path);
        let later = read.before.modified().unwrap() + std::time::Duration::from_secs(2);
        let writer = fs::OpenOptions::new().write(true).open(&path).unwrap();
        (&writer).write_all(b"version two").unwrap();
        writer.set_modified(later).unwrap();
        assert!(is_changed(read.unchanged()));
    }

    #[test]
    fn files_open_as_their_kind_and_size_say() {
        let (dir, path) = file_with(&[2; 300]);
        let kind = |path: &Path, small_file| match open(path.to_owned(), small_file) {
            Opening::Small(..) => "small".to_owned(),
            Opening::Stream(..) => "stream".to_owned(),
            Opening::Failed(error) => match error.kind() {
                ErrorKind::File { io_kind, .. } => format!("{io_kind:?}"),
                other => panic!("{other:?}"),
            },
        };
        assert_eq!(kind(&path, 300), "small");
        assert_eq!(kind(&path, 299), "stream");
        assert_eq!(kind(&dir.path().join("missing"), 300), "NotFound");
        assert_eq!(kind(dir.path(), 300), "IsADirectory");
        #[cfg(unix)]
        assert_eq!(kind(Path::new("/dev/null"), 300), "stream");
    }
}
