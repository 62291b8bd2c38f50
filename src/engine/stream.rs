//! One input of any length, from a reader ([`Engine::hash_reader`], and
//! its extended output [`Engine::hash_reader_xof`]): read
//! in windows, each hashed on the engine's backend while the next one is
//! read. A window is cut into subtrees of one power of two of chunks (a
//! slab's subtrees on the GPU), whose chaining values are merged as they
//! come; an input that fits one window is hashed as a batch of one blob.
//!
//! The input stays on the calling thread, which reads the next window
//! while a scoped thread hashes the one before, so a reader need not be
//! `Send` (a file's windows are read on the engine's threads,
//! `input.rs`).
//! On the GPU the windows after the first are pinned buffers where the
//! GPU can pin memory, which its slabs copy from where the bytes lie.

use std::fs::File;
use std::io::Read;

#[cfg(any(unix, windows))]
use super::input::{same_version, FileInput};
use super::input::{Input, ReaderInput};
use super::{Backend, Engine};
use crate::cpu::{SubtreeHashing, SubtreeStack};
use crate::error::Error;
use crate::gpu::GpuTimings;
use crate::mode::{Mode, ModeWords};
use crate::pinned::PinnedBuffer;
use crate::scheduler::{BatchShape, Choice, GpuRates};

/// Bytes of input per window on the CPU: a few MiB a thread, for two
/// windows held at once.
const CPU_WINDOW: usize = 16 << 20;
/// Subtrees of input per window on the GPU (64 MiB at the default memory
/// budget): enough that a window's fixed costs (submitting, waiting) are
/// a small part of its copy across the bus, and that its slabs fill the
/// ring.
const GPU_WINDOW_PIECES: usize = 4;
/// The CPU's subtrees: those its threads share (`cpu/subtrees.rs`).
const CPU_PIECE: usize = 256 * 1024;

/// Where a stream's windows are hashed, and in subtrees of how many bytes.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Side {
    Cpu,
    Gpu { piece_len: usize },
}

impl Side {
    fn piece_len(self) -> usize {
        match self {
            Side::Cpu => CPU_PIECE,
            Side::Gpu { piece_len } => piece_len,
        }
    }

    fn window_len(self) -> usize {
        match self {
            Side::Cpu => CPU_WINDOW,
            Side::Gpu { piece_len } => GPU_WINDOW_PIECES * piece_len,
        }
    }
}

impl Engine {
    /// The digest in `mode` of everything `reader` gives until its end,
    /// of any length, as `blake3` hashes one input (a file, a socket,
    /// stdin).
    ///
    /// The input is read in windows (16 MiB on the CPU; on the GPU four of
    /// the subtrees its slabs hash, 64 MiB at the default memory budget),
    /// each hashed while the next one is read, so at most two are held.
    /// An input that fits one window is hashed as a batch of one blob. The
    /// windows of a longer input go where the backend says: with
    /// [`Backend::Gpu`] to the GPU, cut into the subtrees its slabs hash;
    /// with [`Backend::Auto`] to the GPU where the profile has a rate for
    /// long blobs there and plans a window there, else to the CPU's
    /// threads. Auto redoes a window the GPU fails on the CPU.
    ///
    /// Fails with [`ErrorKind::Read`](crate::ErrorKind::Read) where the reader fails (reads that
    /// are interrupted are retried), with no digest; with
    /// [`ErrorKind::Gpu`](crate::ErrorKind::Gpu) where the GPU fails under [`Backend::Gpu`].
    ///
    /// ```
    /// use blake3_batch::{Engine, Mode};
    ///
    /// let engine = Engine::builder().build()?;
    /// let input = vec![7u8; 40 << 20];
    /// let digest = engine.hash_reader(Mode::Hash, &input[..])?;
    /// assert_eq!(digest, *blake3::hash(&input).as_bytes());
    /// # Ok::<(), blake3_batch::Error>(())
    /// ```
    pub fn hash_reader(&self, mode: Mode, reader: impl Read) -> Result<[u8; 32], Error> {
        self.hash_input(mode, &mut ReaderInput::new(reader))
    }

    /// The digest in `mode` of a file's contents, from its start whatever
    /// its cursor, as [`hash_reader`](Self::hash_reader) gives it, with
    /// each window of a regular file read at its position on the engine's
    /// threads, in pieces of 1 MiB: one thread copying from the page cache
    /// is slower than the hashing it feeds. The cursor is left where it was.
    /// Other files (pipes, devices), and every file on platforms other than
    /// Unix and Windows, are read in turn, from the cursor on.
    ///
    /// Fails with [`ErrorKind::Read`](crate::ErrorKind::Read) where a read fails, or where the
    /// file's length changes while it is read (its bytes could mix two
    /// versions); otherwise as `hash_reader` does. A regular file whose
    /// reads end before its length or go on past it while its length and
    /// time stay as they were (the files of Linux's `/proc` and `/sys`
    /// say 0 or 4096 bytes) is read again from its start to where its
    /// reads end, as `cat` and `b3sum` read it.
    ///
    /// ```
    /// use std::io::Write;
    /// use blake3_batch::{Engine, Mode};
    ///
    /// let mut file = tempfile::tempfile().unwrap();
    /// file.write_all(&[5u8; 3 << 20]).unwrap();
    /// let engine = Engine::builder().build()?;
    /// let digest = engine.hash_file(Mode::Hash, &file)?;
    /// assert_eq!(digest, *blake3::hash(&[5u8; 3 << 20]).as_bytes());
    /// # Ok::<(), blake3_batch::Error>(())
    /// ```
    pub fn hash_file(&self, mode: Mode, file: &File) -> Result<[u8; 32], Error> {
        self.hash_file_input(file, |input| self.hash_input(mode, input))
    }

    /// BLAKE3's extended output in `mode` of everything `reader` gives
    /// until its end: an [`OutputReader`](blake3::OutputReader) to read
    /// any number of output bytes from, whose first 32 are
    /// [`hash_reader`](Self::hash_reader)'s digest. The input is read and
    /// hashed as `hash_reader` does it, windows of a long input on the
    /// backend, but an input that fits one window is hashed on the CPU's
    /// threads whatever the backend. Fails as `hash_reader` does.
    ///
    /// ```
    /// use blake3_batch::{Engine, Mode};
    ///
    /// let engine = Engine::builder().build()?;
    /// let input = vec![7u8; 20 << 20];
    /// let mut output = [0u8; 64];
    /// engine.hash_reader_xof(Mode::Hash, &input[..])?.fill(&mut output);
    /// let mut want = [0u8; 64];
    /// blake3::Hasher::new().update(&input).finalize_xof().fill(&mut want);
    /// assert_eq!(output, want);
    /// # Ok::<(), blake3_batch::Error>(())
    /// ```
    pub fn hash_reader_xof(
        &self,
        mode: Mode,
        reader: impl Read,
    ) -> Result<blake3::OutputReader, Error> {
        self.hash_input_xof(mode, &mut ReaderInput::new(reader))
    }

    /// [`hash_reader_xof`](Self::hash_reader_xof) for a file's contents,
    /// read as [`hash_file`](Self::hash_file) reads them.
    pub fn hash_file_xof(&self, mode: Mode, file: &File) -> Result<blake3::OutputReader, Error> {
        self.hash_file_input(file, |input| self.hash_input_xof(mode, input))
    }

    /// `hash` over a file's input: a regular file's read at positions on
    /// the engine's threads, other files' in turn from the cursor.
    fn hash_file_input<T>(
        &self,
        file: &File,
        hash: impl Fn(&mut dyn Input) -> Result<T, Error>,
    ) -> Result<T, Error> {
        #[cfg(any(unix, windows))]
        if let Some(before) = file.metadata().ok().filter(|metadata| metadata.is_file()) {
            let threads = self.cpu_threads();
            // (Dropped before a second input is made, which on Windows
            // puts the cursor back.)
            let (hashed, mismatched) = {
                let mut input = FileInput::new(file, before.len(), threads);
                let hashed = hash(&mut input);
                (hashed, input.length_mismatched())
            };
            // Reads that do not match a length which stays the same: not a
            // file that changed, but one whose length is no guide (Linux's
            // `/proc` and `/sys`, some network file systems). Read it again
            // to its end, as `cat` and `b3sum` do.
            let same = || {
                file.metadata()
                    .is_ok_and(|after| same_version(&before, &after))
            };
            if hashed.is_err() && mismatched && same() {
                return hash(&mut FileInput::to_its_end(file, threads));
            }
            return hashed;
        }
        hash(&mut ReaderInput::new(file))
    }

    /// The digest of `input` (see [`hash_reader`](Self::hash_reader)).
    fn hash_input(&self, mode: Mode, input: &mut dyn Input) -> Result<[u8; 32], Error> {
        let hashing = SubtreeHashing::new(mode);
        Ok(match self.stream(mode, &hashing, input)? {
            Streamed::Whole(window) => {
                let mut out = [[0u8; 32]];
                let offsets = [0, window.len() as u64];
                self.hash_packed_into(mode, &window, &offsets, &mut out)?;
                out[0]
            }
            Streamed::Tree(stack) => stack.root(&hashing),
        })
    }

    /// The extended output of `input` (see
    /// [`hash_reader_xof`](Self::hash_reader_xof)).
    fn hash_input_xof(
        &self,
        mode: Mode,
        input: &mut dyn Input,
    ) -> Result<blake3::OutputReader, Error> {
        let hashing = SubtreeHashing::new(mode);
        Ok(match self.stream(mode, &hashing, input)? {
            Streamed::Whole(window) => hashing.output_reader(self.cpu_threads(), &window),
            Streamed::Tree(stack) => stack.root_xof(&hashing),
        })
    }

    /// Reads `input` to its end: one window whole, or the chaining values
    /// of the subtrees of several, each window hashed while the next is
    /// read.
    fn stream(
        &self,
        mode: Mode,
        hashing: &SubtreeHashing,
        input: &mut dyn Input,
    ) -> Result<Streamed, Error> {
        let side = self.stream_side();
        let window_len = side.window_len();
        if side == Side::Cpu {
            let mut stack = SubtreeStack::new();
            let hash = |offset, piece: &[u8]| hashing.chaining_value(offset, piece);
            let mut take = |value| stack.push(hashing, value);
            // At least two pieces: the root is a parent of subtrees.
            if let Some(read) = input.hash_in_pieces(CPU_PIECE, window_len, &hash, &mut take) {
                read?;
                return Ok(Streamed::Tree(stack));
            }
        }
        let first = input.first_window(window_len)?;
        let mut peeked = [0u8; 1];
        if first.len() < window_len || input.fill(&mut peeked)? == 0 {
            return Ok(Streamed::Whole(first));
        }
        let mut windows = Windows {
            engine: self,
            side,
            hashing,
            words: self.mode_words(mode),
            stack: SubtreeStack::new(),
            hashed: 0,
            timings: None,
        };
        // The byte peeked past the first window starts the second.
        let mut next = self.window_buffer(side, window_len)?;
        next[0] = peeked[0];
        let mut next_len = 1 + windows.hash_beside(&first, input, &mut next[1..])?;
        drop(first);
        let mut spare = self.window_buffer(side, window_len)?;
        while next_len > 0 {
            std::mem::swap(&mut next, &mut spare);
            let hashed = &spare[..next_len];
            next_len = windows.hash_beside(hashed, input, &mut next)?;
        }
        Ok(Streamed::Tree(windows.finish()))
    }

    /// Where this engine hashes the windows of a stream longer than one.
    fn stream_side(&self) -> Side {
        let Some(gpu) = &self.inner.gpu else {
            return Side::Cpu;
        };
        let Some(piece_len) = gpu.subtree_bytes() else {
            return Side::Cpu;
        };
        let on_gpu = match self.inner.backend {
            Backend::Cpu => false,
            Backend::Gpu => true,
            Backend::Auto => {
                let takes_large = self.inner.profile.gpu.as_ref();
                let window = Side::Gpu { piece_len }.window_len();
                let shape = || BatchShape::from_lengths([window]);
                takes_large.is_some_and(GpuRates::takes_large)
                    && self.auto_choice(1, Some(window as u64), shape, gpu.pins_memory())
                        == Choice::Gpu
            }
        };
        match on_gpu {
            true => Side::Gpu { piece_len },
            false => Side::Cpu,
        }
    }

    /// A window's buffer: for the GPU, pinned memory where it has some
    /// (which the slabs copy from as it lies), else ordinary memory.
    fn window_buffer(&self, side: Side, len: usize) -> Result<PinnedBuffer, Error> {
        match side {
            Side::Gpu { .. } => self.pinned_buffer(len),
            Side::Cpu => PinnedBuffer::heap(len),
        }
    }
}

/// The windows of one stream hashed so far: their subtrees' chaining
/// values, merged as they come.
struct Windows<'e, 'm> {
    engine: &'e Engine,
    side: Side,
    hashing: &'e SubtreeHashing<'m>,
    /// The mode as the GPU takes it, derived once for every window.
    words: ModeWords,
    stack: SubtreeStack,
    /// Bytes of input hashed: where the next window starts.
    hashed: u64,
    /// The GPU's windows' timings, one after the other.
    timings: Option<GpuTimings>,
}

impl Windows<'_, '_> {
    /// Hashes `window` on a scoped thread while this one reads the next
    /// window into `next`: the bytes read.
    fn hash_beside(
        &mut self,
        window: &[u8],
        input: &mut dyn Input,
        next: &mut [u8],
    ) -> Result<usize, Error> {
        let (hashed, read) = std::thread::scope(|scope| {
            let hashing = scope.spawn(|| self.chaining_values(window));
            let read = input.fill(next);
            let hashed = match hashing.join() {
                Ok(hashed) => hashed,
                Err(panic) => std::panic::resume_unwind(panic),
            };
            (hashed, read)
        });
        let (values, timings) = hashed?;
        if let Some(timings) = timings {
            self.timings = Some(match self.timings.take() {
                Some(before) => before.then(timings),
                None => timings,
            });
        }
        for value in values {
            self.stack.push(self.hashing, value);
        }
        self.hashed += window.len() as u64;
        read
    }

    /// The chaining values of `window`'s subtrees, which starts where the
    /// windows hashed so far end; and the GPU's timings where it hashed
    /// them.
    fn chaining_values(&self, window: &[u8]) -> Result<(Vec<[u8; 32]>, Option<GpuTimings>), Error> {
        let engine = self.engine;
        let piece_len = self.side.piece_len();
        let mut values = vec![[0u8; 32]; window.len().div_ceil(piece_len)];
        let end = self.hashed + window.len() as u64;
        if let (Side::Gpu { .. }, Some(gpu)) = (self.side, &engine.inner.gpu) {
            if gpu.takes_pieces_up_to(end) {
                let words = self.words;
                let threads = engine.cpu_threads();
                let hashed = gpu.hash_pieces(
                    (self.hashing, words),
                    self.hashed,
                    window,
                    &mut values,
                    threads,
                );
                match (hashed, engine.inner.backend) {
                    (Ok(()), _) => return Ok((values, gpu.last_timings())),
                    (Err(error), Backend::Gpu) => return Err(error),
                    // Auto redoes it on the CPU, below.
                    (Err(_), _) => {}
                }
            }
        }
        let threads = engine.cpu_threads();
        (self.hashing).chaining_values(threads, self.hashed, window, piece_len, &mut values);
        Ok((values, None))
    }

    /// The subtrees of the input's windows (at least two), merged as far
    /// as they can be before the root.
    fn finish(self) -> SubtreeStack {
        if let (Some(timings), Some(gpu)) = (self.timings, &self.engine.inner.gpu) {
            gpu.set_last_timings(timings);
        }
        self.stack
    }
}

/// An input read to its end.
enum Streamed {
    /// It fitted one window: its bytes, hashed as one blob.
    Whole(Vec<u8>),
    /// Its windows' subtrees.
    Tree(SubtreeStack),
}
