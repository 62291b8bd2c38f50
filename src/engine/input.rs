//! Where a stream's bytes come from ([`super::stream`]): a reader, read in
//! turn on the calling thread; or a regular file, whose windows are read
//! at their positions in pieces on the engine's threads, as one thread
//! copying from the page cache is slower than the hashing it feeds, or,
//! on several threads, whose pieces are each read and hashed by one of
//! them ([`Input::hash_in_pieces`]).

use std::fs::Metadata;
use std::io::{self, Read};
#[cfg(any(unix, windows))]
use std::{
    fs::File,
    sync::{Mutex, PoisonError},
};

#[cfg(any(unix, windows))]
use super::positional;
#[cfg(any(unix, windows))]
use crate::cpu::batch::Threads;
use crate::error::{Error, ErrorKind};

/// Bytes of a file one thread reads at a time.
#[cfg(any(unix, windows))]
const FILE_PIECE: usize = 1 << 20;

#[cfg(any(unix, windows))]
thread_local! {
    /// Each thread's buffer for the pieces it reads and hashes
    /// ([`FileInput::hash_in_pieces`]): one piece (256 KiB), kept for the
    /// thread's next, so that no piece costs an allocation and its page
    /// faults.
    static PIECE: std::cell::RefCell<Vec<u8>> = const { std::cell::RefCell::new(Vec::new()) };
}

/// A stream's input, read window by window.
pub(super) trait Input {
    /// The first window: up to `len` bytes, all of them unless the input
    /// ends first, in a buffer no longer than the input needs.
    fn first_window(&mut self, len: usize) -> Result<Vec<u8>, Error>;
    /// Reads until `buffer` is full or the input ends: the bytes read.
    fn fill(&mut self, buffer: &mut [u8]) -> Result<usize, Error>;
    /// Where the input can be read in pieces side by side (see
    /// [`FileInput`]'s) and is longer than `round_len` bytes: reads all of
    /// it, in pieces of `piece_len` bytes, each passed with its offset to
    /// `hash` on the thread that read it, and gives what `hash` returns to
    /// `take` in input order, a round of `round_len` bytes at a time (of
    /// whole pieces). `None`, having read nothing, where it cannot.
    fn hash_in_pieces(
        &mut self,
        _piece_len: usize,
        _round_len: usize,
        _hash: &(dyn Fn(u64, &[u8]) -> [u8; 32] + Sync),
        _take: &mut dyn FnMut([u8; 32]),
    ) -> Option<Result<(), Error>> {
        None
    }
}

/// A reader, and how many bytes it gave.
pub(super) struct ReaderInput<R> {
    reader: R,
    read: u64,
}

impl<R: Read> ReaderInput<R> {
    pub(super) fn new(reader: R) -> Self {
        ReaderInput { reader, read: 0 }
    }

    fn failed(&self, error: io::Error) -> Error {
        read_error(self.read, error.to_string())
    }
}

impl<R: Read> Input for ReaderInput<R> {
    fn first_window(&mut self, len: usize) -> Result<Vec<u8>, Error> {
        grown_window(len, |buffer| self.fill(buffer))
    }

    fn fill(&mut self, buffer: &mut [u8]) -> Result<usize, Error> {
        let (filled, result) = fill_with(buffer, |buffer| self.reader.read(buffer));
        self.read += filled as u64;
        result.map_err(|error| self.failed(error))?;
        Ok(filled)
    }
}

/// A regular file of `len` bytes when opened, read from its start at
/// positions, in pieces on `threads`. One that grows or shrinks while it
/// is read is an error: its bytes could mix two versions.
///
/// Or ([`FileInput::to_its_end`]) a file whose length is no guide to what
/// its reads give, read in turn from its start until a read gives nothing.
#[cfg(any(unix, windows))]
pub(super) struct FileInput<'f> {
    file: &'f File,
    len: u64,
    /// Whether `len` is ignored, and the file read until its end.
    to_its_end: bool,
    /// Whether a read ended before `len` or went on past it.
    length_mismatched: bool,
    /// Where the next window starts.
    at: u64,
    threads: Threads<'f>,
    /// The caller's cursor, put back when this is dropped: Windows' reads
    /// at a position move it.
    #[cfg(windows)]
    cursor: Option<u64>,
}

#[cfg(any(unix, windows))]
impl<'f> FileInput<'f> {
    pub(super) fn new(file: &'f File, len: u64, threads: Threads<'f>) -> Self {
        FileInput {
            file,
            len,
            to_its_end: false,
            length_mismatched: false,
            at: 0,
            threads,
            #[cfg(windows)]
            cursor: io::Seek::stream_position(&mut &*file).ok(),
        }
    }

    /// `file`, read from its start until a read gives nothing, one read
    /// after the other: for a file whose length no read matches though it
    /// stays the same, as Linux gives the files of `/proc` and `/sys`
    /// (`cat` and `b3sum` read them so).
    pub(super) fn to_its_end(file: &'f File, threads: Threads<'f>) -> Self {
        FileInput {
            to_its_end: true,
            ..FileInput::new(file, 0, threads)
        }
    }

    /// Whether a read came short of the length the file was opened with,
    /// or went past it.
    pub(super) fn length_mismatched(&self) -> bool {
        self.length_mismatched
    }

    /// Reads from `self.at` on into `buffer` until it is full or a read
    /// gives nothing: the bytes read.
    fn read_in_turn(&mut self, buffer: &mut [u8]) -> Result<usize, Error> {
        let (file, mut at) = (self.file, self.at);
        let (filled, result) = fill_with(buffer, |buffer| {
            let read = positional::read_at(file, buffer, at)?;
            at += read as u64;
            Ok(read)
        });
        self.at += filled as u64;
        result.map_err(|error| read_error(self.at, error.to_string()))?;
        Ok(filled)
    }

    /// Reads `buffer` from `self.at` on, in pieces on the threads.
    fn read_at(&mut self, buffer: &mut [u8]) -> Result<(), Error> {
        let failure = Mutex::new(None);
        let pieces: Vec<(u64, &mut [u8])> = (self.at..)
            .step_by(FILE_PIECE)
            .zip(buffer.chunks_mut(FILE_PIECE))
            .collect();
        self.threads.for_each(pieces, |(at, piece)| {
            if let Err(error) = positional::read_exact_at(self.file, piece, at) {
                let mut failure = failure.lock().unwrap_or_else(PoisonError::into_inner);
                failure.get_or_insert(error);
            }
        });
        match failure.into_inner().unwrap_or_else(PoisonError::into_inner) {
            None => Ok(()),
            Some(error) => Err(self.failed_read(error)),
        }
    }

    /// The error of a read at `self.at` that failed with `error`; a file
    /// that ended early has changed.
    fn failed_read(&mut self, error: io::Error) -> Error {
        if error.kind() == io::ErrorKind::UnexpectedEof {
            self.length_mismatched = true;
            return read_error(self.at, CHANGED.to_owned());
        }
        read_error(self.at, error.to_string())
    }

    /// Fails if the file now holds more than `len` bytes.
    fn check_no_more(&mut self) -> Result<(), Error> {
        let mut byte = [0u8];
        loop {
            return match positional::read_at(self.file, &mut byte, self.len) {
                Ok(0) => Ok(()),
                Ok(_) => {
                    self.length_mismatched = true;
                    Err(read_error(self.len, CHANGED.to_owned()))
                }
                Err(error) if error.kind() == io::ErrorKind::Interrupted => continue,
                Err(error) => Err(read_error(self.len, error.to_string())),
            };
        }
    }
}

#[cfg(windows)]
impl Drop for FileInput<'_> {
    fn drop(&mut self) {
        if let Some(cursor) = self.cursor {
            // Best effort: the cursor was found, so it can be sought to.
            let _ = io::Seek::seek(&mut &*self.file, io::SeekFrom::Start(cursor));
        }
    }
}

#[cfg(any(unix, windows))]
impl Input for FileInput<'_> {
    fn first_window(&mut self, len: usize) -> Result<Vec<u8>, Error> {
        if self.to_its_end {
            return grown_window(len, |buffer| self.read_in_turn(buffer));
        }
        let take = self.len.min(len as u64) as usize;
        if take == 0 {
            // An empty file: `fill` reads nothing, so look past it here.
            self.check_no_more()?;
            return Ok(Vec::new());
        }
        // Zeroed pages from the allocator: the kernel zeroes them as they
        // are first written, by the reads.
        let mut window = vec![0u8; take];
        self.fill(&mut window)?;
        Ok(window)
    }

    fn fill(&mut self, buffer: &mut [u8]) -> Result<usize, Error> {
        if self.to_its_end {
            return self.read_in_turn(buffer);
        }
        let take = (self.len - self.at).min(buffer.len() as u64) as usize;
        if take == 0 {
            if !buffer.is_empty() {
                self.check_no_more()?;
            }
            return Ok(0);
        }
        self.read_at(&mut buffer[..take])?;
        self.at += take as u64;
        // A file that ends within this buffer ends here.
        if take < buffer.len() || self.at == self.len {
            self.check_no_more()?;
        }
        Ok(take)
    }

    /// A file read on several threads, each piece into a buffer of the
    /// thread that reads it and hashed there while it is in that thread's
    /// cache. Windows read whole and then hashed passed every byte through
    /// memory twice more (into the window, out of it), which held a 1 GiB
    /// file in the page cache to 5.4 GiB/s on two threads, against
    /// `blake3`'s 9.6 over a memory map. On one thread the windows stay:
    /// there the next is read beside the hashing.
    fn hash_in_pieces(
        &mut self,
        piece_len: usize,
        round_len: usize,
        hash: &(dyn Fn(u64, &[u8]) -> [u8; 32] + Sync),
        take: &mut dyn FnMut([u8; 32]),
    ) -> Option<Result<(), Error>> {
        let several = !matches!(self.threads, Threads::One);
        if self.to_its_end || !several || self.at != 0 || self.len <= round_len as u64 {
            return None;
        }
        Some(self.hash_rounds(piece_len, round_len, hash, take))
    }
}

#[cfg(any(unix, windows))]
impl FileInput<'_> {
    /// [`Input::hash_in_pieces`] of the whole file, a round at a time.
    fn hash_rounds(
        &mut self,
        piece_len: usize,
        round_len: usize,
        hash: &(dyn Fn(u64, &[u8]) -> [u8; 32] + Sync),
        take: &mut dyn FnMut([u8; 32]),
    ) -> Result<(), Error> {
        let file = self.file;
        while self.at < self.len {
            let round_end = self.len.min(self.at + round_len as u64);
            let starts: Vec<u64> = (self.at..round_end).step_by(piece_len).collect();
            let values = self.threads.map(starts, |start| {
                let len = (round_end - start).min(piece_len as u64) as usize;
                PIECE.with_borrow_mut(|buffer| {
                    buffer.resize(buffer.len().max(len), 0);
                    let piece = &mut buffer[..len];
                    let read = positional::read_exact_at(file, piece, start);
                    read.map(|()| hash(start, piece))
                        .map_err(|error| (start, error))
                })
            });
            for value in values {
                match value {
                    Ok(value) => take(value),
                    Err((start, error)) => {
                        self.at = start;
                        return Err(self.failed_read(error));
                    }
                }
            }
            self.at = round_end;
        }
        self.check_no_more()
    }
}

/// Reads with `read` into `buffer` until it is full or a read gives
/// nothing, retrying interrupted reads: the bytes read, and the error that
/// stopped it. A read that says it filled more than it was given is one
/// (a `Read` that breaks its contract, on which std's `read_to_end` would
/// panic).
fn fill_with(
    buffer: &mut [u8],
    mut read: impl FnMut(&mut [u8]) -> io::Result<usize>,
) -> (usize, io::Result<()>) {
    let mut filled = 0;
    while filled < buffer.len() {
        let room = buffer.len() - filled;
        match read(&mut buffer[filled..]) {
            Ok(0) => break,
            Ok(read) if read > room => {
                let overstated = format!(
                    "the reader said it read {read} bytes into {room}: \
                     its Read::read returns more than the buffer holds"
                );
                return (filled, Err(io::Error::other(overstated)));
            }
            Ok(read) => filled += read,
            Err(error) if error.kind() == io::ErrorKind::Interrupted => {}
            Err(error) => return (filled, Err(error)),
        }
    }
    (filled, Ok(()))
}

/// Up to `len` bytes read with `fill` (which reads until its buffer is
/// full or the input ends) into a buffer grown as they come, from 64 KiB
/// and doubling, so that a short input allocates little.
fn grown_window(
    len: usize,
    mut fill: impl FnMut(&mut [u8]) -> Result<usize, Error>,
) -> Result<Vec<u8>, Error> {
    let mut window = Vec::new();
    while window.len() < len {
        let start = window.len();
        let step = (len - start).min(start.max(64 << 10));
        window.resize(start + step, 0);
        let read = fill(&mut window[start..])?;
        window.truncate(start + read);
        if read < step {
            break;
        }
    }
    Ok(window)
}

/// Whether a file's metadata `after` describes the version it had at
/// `before`: the same length and modification time (where the platform
/// keeps one).
pub(super) fn same_version(before: &Metadata, after: &Metadata) -> bool {
    let same_time = match (before.modified(), after.modified()) {
        (Ok(before), Ok(after)) => before == after,
        _ => true,
    };
    after.len() == before.len() && same_time
}

/// The reason given for a file whose length changed while it was read.
#[cfg(any(unix, windows))]
const CHANGED: &str =
    "the file changed length while it was read; hash it again once it is complete";

fn read_error(bytes: u64, reason: String) -> Error {
    ErrorKind::Read { bytes, reason }.into()
}

#[cfg(all(test, any(unix, windows)))]
mod tests {
    use super::*;
    use std::io::Write;

    /// A file that holds more, or fewer, bytes than it had when opened
    /// (the length given) fails at the window that reaches its end.
    #[test]
    fn a_file_whose_length_changed_is_a_read_error() {
        let mut file = tempfile::tempfile().unwrap();
        file.write_all(&[3u8; 5000]).unwrap();
        let threads = Threads::One;
        let cases = [
            (0, 8192),
            (4000, 8192),
            (4999, 4999),
            (6000, 8192),
            (6000, 4096),
        ];
        for (len, window) in cases {
            let mut input = FileInput::new(&file, len, threads);
            let error = input
                .first_window(window)
                .and_then(|_| input.fill(&mut [0u8; 8192]))
                .expect_err("the length changed");
            let ErrorKind::Read { reason, .. } = error.kind() else {
                panic!("{error:?}");
            };
            assert_eq!(reason, CHANGED, "{len} {window}");
        }
        let mut input = FileInput::new(&file, 5000, threads);
        assert_eq!(input.first_window(4096).unwrap(), [3u8; 4096]);
        let mut rest = [0u8; 8192];
        assert_eq!(input.fill(&mut rest).unwrap(), 904);
        assert_eq!(input.fill(&mut rest).unwrap(), 0);
    }

    /// A piece's offset, length and `blake3::hash`, as one value.
    fn piece_value(offset: u64, piece: &[u8]) -> [u8; 32] {
        let mut value = *blake3::hash(piece).as_bytes();
        value[..8].copy_from_slice(&offset.to_le_bytes());
        value[8..16].copy_from_slice(&(piece.len() as u64).to_le_bytes());
        value
    }

    /// Pieces read and hashed on several threads come out in order, each
    /// from its own bytes; a file that is longer or shorter than its
    /// length is a read error; one thread, or a file within one round,
    /// is left to the windows.
    #[test]
    fn a_file_hashed_in_pieces_gives_every_piece_in_order() {
        let bytes: Vec<u8> = (0..5000u32).map(|i| (i * 7 / 3) as u8).collect();
        let mut file = tempfile::tempfile().unwrap();
        file.write_all(&bytes).unwrap();
        let several = Threads::Global;
        let mut values = Vec::new();
        let mut input = FileInput::new(&file, 5000, several);
        let read = input.hash_in_pieces(1024, 2048, &piece_value, &mut |v| values.push(v));
        read.expect("several threads, three rounds").unwrap();
        let want: Vec<[u8; 32]> = (0..5000)
            .step_by(1024)
            .map(|at| piece_value(at as u64, &bytes[at..(at + 1024).min(5000)]))
            .collect();
        assert_eq!(values, want);

        for len in [4000, 4999, 5001, 6000, 9000] {
            let mut input = FileInput::new(&file, len, several);
            let read = input.hash_in_pieces(1024, 2048, &piece_value, &mut |_| {});
            let error = read
                .expect("several threads")
                .expect_err("the length changed");
            let ErrorKind::Read { reason, .. } = error.kind() else {
                panic!("{error:?}");
            };
            assert_eq!(reason, CHANGED, "{len}");
            assert!(input.length_mismatched(), "{len}");
        }

        let mut unused = |_| panic!("nothing is hashed");
        let mut one = FileInput::new(&file, 5000, Threads::One);
        assert!(one
            .hash_in_pieces(1024, 2048, &piece_value, &mut unused)
            .is_none());
        let mut within = FileInput::new(&file, 5000, several);
        assert!(within
            .hash_in_pieces(1024, 5000, &piece_value, &mut unused)
            .is_none());
    }
}
