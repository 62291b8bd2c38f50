//! `b3batch records`: one digest per record of a file or stdin, streamed.
//!
//! Three stages overlap: a thread reads the next piece of input
//! ([`ReaderThread`]) while records are cut from this one, hashed by the
//! engine and formatted, and a thread writes the text made before
//! ([`WriterThread`]). Cutting delimited records and formatting outputs
//! run on as many threads as the engine hashes with (`--threads`), so
//! none of it stays on one core where hashing short records is spread
//! over many (or a GPU).
//!
//! Memory stays bounded whatever the input size: input is read in two
//! pieces of [`PIECE`] bytes, records are hashed [`RECORDS_PER_BATCH`] at
//! a time, and a record still open at a piece's end (one longer than a
//! piece too) is hashed incrementally as it streams by. The bound is about
//! 2 × `PIECE` + 40 bytes × `RECORDS_PER_BATCH` + three texts of a batch
//! (up to 2 × [`EXTENDED_BUFFER`] in hex each), some 45 MiB, plus the
//! threads.
//!
//! The input is read into the engine's pinned memory and the digests land
//! in it ([`Engine::pinned_buffer`]): where a GPU takes a batch of records
//! (a multiple of 16 bytes up to 1 KiB), it copies them from where they
//! were read and its digests straight back, with no core packing either.
//!
//! `--length` (and `--seek`) past the first 32 bytes asks for BLAKE3's
//! extended output, which the engine makes on its threads
//! ([`Engine::hash_records_xof_at_into`]); past [`BATCHED_OUTPUT`] bytes
//! each record streams its output alone.

use std::fs::File;
use std::io::{self, Read, Write};
use std::path::PathBuf;
use std::process::ExitCode;

use blake3_batch::{Engine, PinnedBuffer};
use clap::{ArgGroup, Args};

use crate::delimited::cut_on_threads;
use crate::files::{Digest, Encoding};
use crate::options::{CliError, GlobalArgs, HashMode, ModeArgs};
use crate::output_text::{write_empty, write_outputs};
use crate::reader_thread::ReaderThread;
use crate::writer_thread::WriterThread;

/// Bytes read from the input into one buffer, at most.
pub const PIECE: usize = 8 << 20;
/// Records hashed in one engine call, at most.
const RECORDS_PER_BATCH: usize = 64 * 1024;
/// Extended outputs up to this length are made by the engine, records side
/// by side on its threads; longer ones stream from `blake3`'s output reader
/// one record at a time, so any `--length` takes bounded memory.
const BATCHED_OUTPUT: usize = 64 << 10;
/// Bytes of extended output made in one engine call, at most.
const EXTENDED_BUFFER: usize = 4 << 20;

/// Options of `b3batch records`.
#[derive(Args, Debug)]
#[command(group(ArgGroup::new("layout").required(true).args(["lines", "null", "size"])))]
pub struct RecordsArgs {
    /// The input (`-` or nothing: stdin).
    #[arg(value_name = "FILE")]
    file: Option<PathBuf>,
    /// One record per line, without its `\n`; a last line without one
    /// still counts. A `\r` before the `\n` is part of the record (for
    /// CRLF text, `tr -d '\r'` first).
    #[arg(long)]
    lines: bool,
    /// Records separated by NUL bytes.
    #[arg(short = '0', long)]
    null: bool,
    /// Fixed-size records of this many bytes.
    #[arg(long, value_name = "BYTES")]
    size: Option<usize>,
    /// With --size, hash a shorter last record instead of failing.
    // clap 4 lets `requires = "size"` pass when --lines or --null fills
    // the layout group, so the conflicts refuse those.
    #[arg(long, requires = "size", conflicts_with_all = ["lines", "null"])]
    allow_short: bool,
    /// Output bytes per record, before hex encoding: fewer than 32 give a
    /// prefix of the digest, more BLAKE3's extended output (in the SIMD
    /// lanes up to 1 KiB of output from records of up to 16 KiB).
    #[arg(short = 'l', long, value_name = "LEN", default_value_t = 32)]
    length: u64,
    /// The output's first byte: with --length, bytes SEEK..SEEK+LEN of
    /// each record's extended output, as b3sum's --seek.
    #[arg(long, value_name = "SEEK", default_value_t = 0)]
    seek: u64,
    /// Write the raw output bytes of each record (32 unless --length says
    /// otherwise) instead of a hex line.
    #[arg(long)]
    raw: bool,
    #[command(flatten)]
    mode: ModeArgs,
}

/// How records are cut.
#[derive(Clone, Copy)]
enum Layout {
    Delimited(u8),
    Sized(usize),
}

pub fn run(args: &RecordsArgs, global: &GlobalArgs) -> Result<ExitCode, CliError> {
    let from_stdin = args
        .file
        .as_ref()
        .is_none_or(|file| file.as_os_str() == "-");
    // Checked before the key is read, so that nothing is taken from stdin.
    if args.mode.keyed && from_stdin {
        return Err(CliError::Message(
            "--keyed reads the key from stdin, so the records must come from a FILE".to_owned(),
        ));
    }
    let mode = args.mode.resolve()?;
    let layout = match (args.size, args.null) {
        (Some(0), _) => {
            return Err(CliError::Message(
                "--size 0: give the record size in bytes (at least 1)".to_owned(),
            ))
        }
        (Some(size), _) => Layout::Sized(size),
        (None, true) => Layout::Delimited(0),
        (None, false) => Layout::Delimited(b'\n'),
    };
    let (input, total): (Box<dyn Read + Send>, Option<u64>) = match &args.file {
        Some(path) if !from_stdin => {
            let file = File::open(path).map_err(|error| {
                CliError::Message(format!("{}: {error}", path.to_string_lossy()))
            })?;
            let meta = file.metadata().ok();
            let len = meta.as_ref().map(|meta| meta.len());
            // A regular file's length says now whether its last record is
            // short, so it is refused before any digest is written. A
            // stream's short last record shows only at its end, after the
            // digests of the whole records before it.
            let regular = meta.as_ref().is_some_and(|meta| meta.is_file());
            if let (Layout::Sized(size), Some(len), false, true) =
                (layout, len, args.allow_short, regular)
            {
                let partial = len % size as u64;
                if partial != 0 {
                    return Err(short_record(partial, size));
                }
            }
            (Box::new(file), len)
        }
        _ => (Box::new(io::stdin()), None),
    };
    let engine = global.engine()?;
    let pinned = |len| {
        engine
            .pinned_buffer(len)
            .map_err(|error| CliError::Message(error.to_string()))
    };
    let buffers = [pinned(PIECE)?, pinned(PIECE)?];
    let progress = global.progress(total, "bytes");
    let pool = helper_threads(engine.threads())?;
    let encoding = match args.raw {
        true => Encoding::Raw,
        false => Encoding::Hex,
    };
    let mut sink = Sink {
        engine: &engine,
        mode: &mode,
        length: args.length,
        seek: args.seek,
        encoding,
        pool: pool.as_ref(),
        digests: pinned(32 * RECORDS_PER_BATCH)?,
        out: WriterThread::start(|| io::stdout().lock())?,
    };
    let input = ReaderThread::start(progress.wrap_read(input), buffers)?;
    let result = stream_records(input, layout, args.allow_short, &mut sink);
    progress.finish_and_clear();
    let written = sink.out.finish();
    result?;
    written?;
    Ok(ExitCode::SUCCESS)
}

/// A batch of whole records, as the engine takes them.
enum Batch<'a> {
    /// Back to back, `size` bytes each.
    Sized { data: &'a [u8], size: usize },
    /// Cut out of the input between delimiters.
    Slices(&'a [&'a [u8]]),
}

impl Batch<'_> {
    fn count(&self) -> usize {
        match self {
            Batch::Sized { data, size } => data.len() / size,
            Batch::Slices(records) => records.len(),
        }
    }

    fn record(&self, index: usize) -> &[u8] {
        match self {
            Batch::Sized { data, size } => &data[index * size..(index + 1) * size],
            Batch::Slices(records) => records[index],
        }
    }
}

/// Hashes record batches and writes their digests.
struct Sink<'a> {
    engine: &'a Engine,
    mode: &'a HashMode,
    /// Output bytes per record (`--length`).
    length: u64,
    /// The output's first byte (`--seek`).
    seek: u64,
    encoding: Encoding,
    /// Threads that cut records and format outputs (as many as the
    /// engine hashes with), or none for one thread.
    pool: Option<&'a rayon::ThreadPool>,
    /// Digest slots for a batch, reused.
    digests: PinnedBuffer,
    out: WriterThread,
}

impl Sink<'_> {
    /// Hashes a batch of records and writes their digests in order: by the
    /// engine, or one record at a time by `blake3` for extended output.
    fn hash_and_write(&mut self, batch: Batch) -> Result<(), CliError> {
        let count = batch.count();
        if self.length == 0 {
            // No output bytes to make, whatever the records and --seek.
            return Ok(write_empty(self.encoding, count, &mut self.out)?);
        }
        if self.seek.saturating_add(self.length) > 32 {
            let batched = usize::try_from(self.length).ok();
            if let Some(length) = batched.filter(|&length| length <= BATCHED_OUTPUT) {
                return self.hash_extended_and_write(&batch, length);
            }
            for index in 0..count {
                let mut hasher = self.mode.hasher();
                hasher.update(batch.record(index));
                self.finish_hasher(hasher)?;
            }
            return Ok(());
        }
        let slots = &mut self.digests.as_digests_mut()[..count];
        let mode = self.mode.mode();
        match batch {
            Batch::Sized { data, size } => self.engine.hash_records_into(mode, data, size, slots),
            Batch::Slices(records) => self.engine.hash_slices_into(mode, records, slots),
        }
        .map_err(|error| CliError::Message(error.to_string()))?;
        // Within the digest, as the branch above checked.
        let (seek, length) = (self.seek as usize, self.length as usize);
        let digests = slots.as_flattened();
        let (pool, range) = (self.pool, seek..seek + length);
        let outputs = (digests, 32, range);
        Ok(write_outputs(pool, self.encoding, outputs, &mut self.out)?)
    }

    /// Extended output of every record of `batch` by the engine (on its
    /// threads), in pieces whose outputs fit [`EXTENDED_BUFFER`].
    fn hash_extended_and_write(&mut self, batch: &Batch, length: usize) -> Result<(), CliError> {
        let per_piece = (EXTENDED_BUFFER / length).max(1);
        let mut outputs = vec![0u8; per_piece.min(batch.count()) * length];
        let mode = self.mode.mode();
        for start in (0..batch.count()).step_by(per_piece) {
            let end = (start + per_piece).min(batch.count());
            let outputs = &mut outputs[..(end - start) * length];
            let seek = self.seek;
            match batch {
                Batch::Sized { data, size } => self.engine.hash_records_xof_at_into(
                    mode,
                    &data[start * size..end * size],
                    *size,
                    length,
                    seek,
                    outputs,
                ),
                Batch::Slices(records) => {
                    let records = &records[start..end];
                    (self.engine).hash_slices_xof_at_into(mode, records, length, seek, outputs)
                }
            }
            .map_err(|error| CliError::Message(error.to_string()))?;
            let outputs = (&outputs[..], length, 0..length);
            write_outputs(self.pool, self.encoding, outputs, &mut self.out)?;
        }
        Ok(())
    }

    /// Writes the digest of a record streamed through `hasher`.
    fn finish_hasher(&mut self, hasher: blake3::Hasher) -> Result<(), CliError> {
        let digest = Digest::Extended(hasher.finalize_xof());
        write_digest(
            &mut self.out,
            (self.length, self.seek),
            self.encoding,
            digest,
        )
    }
}

/// One record's `length` output bytes from byte `seek` on: raw, or a hex
/// line.
fn write_digest(
    out: &mut impl Write,
    (length, seek): (u64, u64),
    encoding: Encoding,
    digest: Digest,
) -> Result<(), CliError> {
    digest.write(length, seek, encoding, out)?;
    end_record(out, encoding)
}

/// Ends one record's output: a hex line ends with a newline, raw bytes
/// run on.
fn end_record(out: &mut impl Write, encoding: Encoding) -> Result<(), CliError> {
    if encoding == Encoding::Hex {
        out.write_all(b"\n")?;
    }
    Ok(())
}

/// Reads `input` to its end, a piece of up to [`PIECE`] bytes at a time on
/// the reader thread, cutting records and hashing them in batches. A
/// record still open at the end of a piece goes on through a hasher into
/// the next (so no piece waits for the one before it to be moved), and
/// one longer than a piece streams through it whole.
fn stream_records(
    mut input: ReaderThread,
    layout: Layout,
    allow_short: bool,
    sink: &mut Sink<'_>,
) -> Result<(), CliError> {
    let mut open: Option<blake3::Hasher> = None;
    loop {
        // What is made goes out before waiting on a slow stream for more.
        sink.out.flush()?;
        let (buffer, filled) = input.next()?;
        if filled == 0 {
            return finish(layout, allow_short, open, sink);
        }
        let data = &buffer[..filled];
        let mut start = 0;
        // First finish the record that the pieces before left open.
        if let Some(hasher) = open.as_mut() {
            let (take, complete) = match layout {
                Layout::Sized(size) => {
                    let take = (size - hasher.count() as usize).min(filled);
                    (take, hasher.count() as usize + take == size)
                }
                Layout::Delimited(delimiter) => match memchr::memchr(delimiter, data) {
                    Some(end) => (end, true),
                    None => (filled, false),
                },
            };
            hasher.update_rayon(&data[..take]);
            start = take;
            if complete {
                sink.finish_hasher(open.take().expect("hasher"))?;
                // The delimiter ends the record and belongs to no record.
                if matches!(layout, Layout::Delimited(_)) {
                    start += 1;
                }
            }
        }
        if open.is_none() {
            start = match layout {
                Layout::Sized(size) => cut_sized(data, start, size, sink)?,
                Layout::Delimited(delimiter) => cut_delimited(data, start, delimiter, sink)?,
            };
            if start < filled {
                let mut hasher = sink.mode.hasher();
                hasher.update_rayon(&data[start..]);
                open = Some(hasher);
            }
        }
        input.recycle(buffer);
    }
}

/// Hashes the whole `size`-byte records in `data[start..]` in batches;
/// returns where the unfinished last record starts.
fn cut_sized(
    data: &[u8],
    mut start: usize,
    size: usize,
    sink: &mut Sink<'_>,
) -> Result<usize, CliError> {
    loop {
        let count = ((data.len() - start) / size).min(RECORDS_PER_BATCH);
        if count == 0 {
            return Ok(start);
        }
        let data = &data[start..start + count * size];
        sink.hash_and_write(Batch::Sized { data, size })?;
        start += count * size;
    }
}

/// Hashes the complete records in `data[start..]` in batches; returns where
/// the unfinished last record starts.
fn cut_delimited(
    data: &[u8],
    mut start: usize,
    delimiter: u8,
    sink: &mut Sink<'_>,
) -> Result<usize, CliError> {
    if let Some(pool) = sink.pool {
        let layout = (delimiter, RECORDS_PER_BATCH);
        return cut_on_threads(pool, data, start, layout, |records| {
            sink.hash_and_write(Batch::Slices(records))
        });
    }
    loop {
        // Records are not back to back (delimiters sit between them), so
        // they go to the engine as slices.
        let mut records: Vec<&[u8]> = Vec::with_capacity(1024);
        let mut cursor = start;
        while records.len() < RECORDS_PER_BATCH {
            match memchr::memchr(delimiter, &data[cursor..]) {
                Some(at) => {
                    records.push(&data[cursor..cursor + at]);
                    cursor += at + 1;
                }
                None => break,
            }
        }
        if records.is_empty() {
            return Ok(start);
        }
        sink.hash_and_write(Batch::Slices(&records))?;
        start = cursor;
    }
}

/// The threads beside the engine's that cut records and format outputs:
/// as many as it hashes with, or none (the caller's) for one.
fn helper_threads(threads: usize) -> Result<Option<rayon::ThreadPool>, CliError> {
    if threads <= 1 {
        return Ok(None);
    }
    let pool = rayon::ThreadPoolBuilder::new()
        .num_threads(threads)
        .thread_name(|index| format!("b3batch-records-{index}"))
        .build()
        .map_err(|error| CliError::Message(format!("starting {threads} threads: {error}")))?;
    Ok(Some(pool))
}

/// The input ended: hash the last record, if one was left open.
fn finish(
    layout: Layout,
    allow_short: bool,
    open: Option<blake3::Hasher>,
    sink: &mut Sink<'_>,
) -> Result<(), CliError> {
    let Some(hasher) = open else {
        return Ok(());
    };
    if let Layout::Sized(size) = layout {
        if !allow_short {
            return Err(short_record(hasher.count(), size));
        }
    }
    sink.finish_hasher(hasher)
}

/// The error for a last record of `partial` bytes, short of `size`.
fn short_record(partial: u64, size: usize) -> CliError {
    CliError::Message(format!(
        "the last record has {partial} bytes, not {size}: the input is not a whole number of \
         records (pass --allow-short to hash the short record too)"
    ))
}
