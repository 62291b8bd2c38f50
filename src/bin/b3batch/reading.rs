//! Opening inputs and reading small files whole, on several threads: over
//! many small files the system calls (open, stat, read, close) take most
//! of the time, not the hashing, and they run side by side. Each file is
//! checked for changes while it is read: one whose length or modification
//! time moved gets an error, never a digest.

use std::fs::{File, Metadata};
use std::io::Read;
use std::path::Path;

use rayon::iter::{IntoParallelIterator, ParallelIterator};

/// An input, opened.
pub enum Opened {
    /// Standard input (`-`), streamed in its turn.
    Stdin,
    /// A regular file of at most the batch's limit, to read whole.
    Small(File, Metadata),
    /// A file to stream: larger, not regular (its length is not to be
    /// trusted), or any with extended output.
    Stream(File, Metadata),
    /// Why it cannot be read.
    Failed(String),
}

/// Threads that open and read files side by side: a pool of the engine's
/// thread count (`--threads`), none where that is one.
pub struct Readers {
    pool: Option<rayon::ThreadPool>,
}

impl Readers {
    pub fn new(threads: usize) -> Readers {
        let pool = (threads > 1)
            .then(|| {
                rayon::ThreadPoolBuilder::new()
                    .num_threads(threads)
                    .thread_name(|index| format!("b3batch-reader-{index}"))
                    .build()
                    .ok()
            })
            .flatten();
        Readers { pool }
    }

    /// `work` on every item, in order, side by side where there are
    /// threads and more than one item.
    pub fn each<I: Send, O: Send>(
        &self,
        items: Vec<I>,
        work: impl Fn(I) -> O + Sync + Send,
    ) -> Vec<O> {
        match &self.pool {
            Some(pool) if items.len() > 1 => {
                pool.install(|| items.into_par_iter().map(work).collect())
            }
            _ => items.into_iter().map(work).collect(),
        }
    }
}

/// Opens `path` (`-`: stdin) and says how to read it: whole where it is a
/// regular file of at most `small_file` bytes and `stream_all` is false.
pub fn open(path: &Path, small_file: u64, stream_all: bool) -> Opened {
    if path == Path::new("-") {
        return Opened::Stdin;
    }
    match open_file(path) {
        Err(message) => Opened::Failed(message),
        // FIFOs, character devices and sockets have no length to trust:
        // they are streamed, like large files, never read whole.
        Ok((file, before)) if stream_all || !before.is_file() || before.len() > small_file => {
            Opened::Stream(file, before)
        }
        Ok((file, before)) => Opened::Small(file, before),
    }
}

/// The bytes of a small regular file opened with `before` as its metadata.
pub fn read_small(mut file: File, before: &Metadata) -> Result<Vec<u8>, String> {
    // One byte more than it had: reading it means the file grew.
    let mut data = Vec::with_capacity(before.len() as usize + 1);
    read_whole(&mut file, before, &mut data)?;
    Ok(data)
}

/// The error for a file whose length or modification time changed while it
/// was read: its bytes may mix two versions, so it gets no digest.
const CHANGED: &str = "the file changed while it was read; hash it again once it is complete";

/// Opens a file that is not a directory, with its metadata at opening.
fn open_file(path: &Path) -> Result<(File, Metadata), String> {
    let file = File::open(path).map_err(|error| error.to_string())?;
    let metadata = file.metadata().map_err(|error| error.to_string())?;
    if metadata.is_dir() {
        return Err("Is a directory (use -r to hash the files in it)".to_owned());
    }
    Ok((file, metadata))
}

/// Appends a small regular file's bytes to `data`, or fails if it changed
/// while read. Reads one byte more than the file had at opening: getting
/// it means the file grew.
fn read_whole(file: &mut File, before: &Metadata, data: &mut Vec<u8>) -> Result<(), String> {
    let read = file
        .take(before.len() + 1)
        .read_to_end(data)
        .map_err(|error| error.to_string())?;
    if read as u64 != before.len() {
        return Err(CHANGED.to_owned());
    }
    unchanged(file, before)
}

/// Whether a regular file still has the length and modification time it
/// had when opened (other kinds of files have no versions to mix).
pub fn unchanged(file: &File, before: &Metadata) -> Result<(), String> {
    if !before.is_file() {
        return Ok(());
    }
    let after = file.metadata().map_err(|error| error.to_string())?;
    let same_time = match (before.modified(), after.modified()) {
        (Ok(before), Ok(after)) => before == after,
        _ => true,
    };
    if after.len() == before.len() && same_time {
        Ok(())
    } else {
        Err(CHANGED.to_owned())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::fs;
    use std::io::Write;
    use std::path::PathBuf;

    fn file_with(bytes: &[u8]) -> (tempfile::TempDir, PathBuf) {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("f");
        fs::write(&path, bytes).unwrap();
        (dir, path)
    }

    #[test]
    fn a_file_that_grows_or_shrinks_after_opening_is_refused() {
        let (_dir, path) = file_with(&[1; 5000]);
        let (mut file, before) = open_file(&path).unwrap();
        let mut data = Vec::new();
        read_whole(&mut file, &before, &mut data).unwrap();
        assert_eq!(data, [1; 5000]);

        // Grows between opening and reading: the extra byte is seen.
        let (mut file, before) = open_file(&path).unwrap();
        fs::OpenOptions::new()
            .append(true)
            .open(&path)
            .unwrap()
            .write_all(b"more")
            .unwrap();
        assert_eq!(
            read_whole(&mut file, &before, &mut Vec::new()),
            Err(CHANGED.to_owned())
        );

        // Shrinks: fewer bytes than at opening.
        let (mut file, before) = open_file(&path).unwrap();
        fs::OpenOptions::new()
            .write(true)
            .open(&path)
            .unwrap()
            .set_len(10)
            .unwrap();
        assert_eq!(
            read_whole(&mut file, &before, &mut Vec::new()),
            Err(CHANGED.to_owned())
        );

        // Changes after it was read (a streamed file): found at the end.
        let (file, before) = open_file(&path).unwrap();
        fs::OpenOptions::new()
            .append(true)
            .open(&path)
            .unwrap()
            .write_all(b"x")
            .unwrap();
        assert_eq!(unchanged(&file, &before), Err(CHANGED.to_owned()));
    }

    #[test]
    fn a_rewrite_of_the_same_length_is_found_by_its_time() {
        let (_dir, path) = file_with(b"version one");
        let (file, before) = open_file(&path).unwrap();
        let later = before.modified().unwrap() + std::time::Duration::from_secs(2);
        let writer = fs::OpenOptions::new().write(true).open(&path).unwrap();
        (&writer).write_all(b"version two").unwrap();
        writer.set_modified(later).unwrap();
        assert_eq!(unchanged(&file, &before), Err(CHANGED.to_owned()));
    }

    #[test]
    fn inputs_open_as_their_kind_says_and_readers_keep_their_order() {
        let (dir, path) = file_with(&[2; 300]);
        let readers = Readers::new(2);
        let paths = vec![
            PathBuf::from("-"),
            path.clone(),
            dir.path().join("missing"),
            dir.path().to_owned(),
            PathBuf::from("/dev/null"),
        ];
        let opened = readers.each(paths, |path| open(&path, 1000, false));
        let kinds: Vec<&str> = opened
            .iter()
            .map(|opened| match opened {
                Opened::Stdin => "stdin",
                Opened::Small(..) => "small",
                Opened::Stream(..) => "stream",
                Opened::Failed(_) => "failed",
            })
            .collect();
        assert_eq!(kinds, ["stdin", "small", "failed", "failed", "stream"]);
        assert!(matches!(open(&path, 299, false), Opened::Stream(..)));
        assert!(matches!(open(&path, 1000, true), Opened::Stream(..)));
        let Opened::Small(file, before) = open(&path, 300, false) else {
            panic!("a file of 300 bytes is small at 300");
        };
        assert_eq!(read_small(file, &before).unwrap(), [2; 300]);
        let squares = readers.each((0..1000u64).collect(), |n| n * n);
        assert!(squares
            .iter()
            .enumerate()
            .all(|(n, &sq)| sq == (n * n) as u64));
    }
}
