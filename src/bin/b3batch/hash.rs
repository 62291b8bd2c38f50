//! `b3batch hash`: b3sum's output and `--check`, with many small files
//! hashed together through the engine.

use std::cell::Cell;
use std::fs::File;
use std::io::{self, BufRead, BufReader, Write};
use std::path::{Path, PathBuf};
use std::process::ExitCode;

use clap::Args;

use crate::files::{walk, Encoding, FileHasher, Outcome};
use crate::names::{line_parts, parse_check_line, LineStyle};
use crate::options::{warn, CliError, GlobalArgs, ModeArgs};

/// What a directory given as a file to hash gets.
const IS_A_DIRECTORY: &str = "Is a directory (use -r to hash the files in it)";

/// Options of `b3batch hash`.
#[derive(Args, Debug)]
pub struct HashArgs {
    /// Files to hash (`-` or nothing: stdin); with --check, checkfiles.
    #[arg(value_name = "FILE")]
    files: Vec<PathBuf>,
    /// Also hash the files named in LIST (`-`: stdin), one path per line,
    /// after any FILEs: for more files than a command line holds.
    #[arg(long, value_name = "LIST")]
    files_from: Option<PathBuf>,
    /// With --files-from: paths end in NUL bytes, not newlines (as `find
    /// -print0` writes them).
    #[arg(short = '0', long, requires = "files_from")]
    null: bool,
    /// Hash the files under directories, recursively.
    #[arg(short = 'r', long)]
    recursive: bool,
    /// Read b3sum-format lines and check each file's digest.
    #[arg(
        short = 'c',
        long,
        conflicts_with_all = ["tag", "no_names", "raw", "recursive", "length", "files_from"]
    )]
    check: bool,
    /// Output bytes per file, before hex encoding: fewer than 32 give a
    /// prefix of the digest, more BLAKE3's extended output (small files
    /// then hashed by `blake3` on every thread, not in SIMD lanes).
    #[arg(short = 'l', long, value_name = "LEN", default_value_t = 32)]
    length: u64,
    /// The output's first byte: with --length, bytes SEEK..SEEK+LEN of
    /// BLAKE3's extended output, as b3sum's --seek; with --check, the
    /// checkfile's digests are bytes SEEK..SEEK+32.
    #[arg(long, value_name = "SEEK", default_value_t = 0)]
    seek: u64,
    /// BSD-style lines: `BLAKE3 (FILE) = HASH`.
    #[arg(long)]
    tag: bool,
    /// Print only the digests (over --tag, as b3sum).
    #[arg(long)]
    no_names: bool,
    /// Write the raw output bytes, not hex (one input only; over --tag and
    /// --no-names, as b3sum).
    #[arg(long, conflicts_with = "files_from")]
    raw: bool,
    /// Accepted for b3sum's command lines: b3batch reads files, it never
    /// maps them.
    #[arg(long)]
    no_mmap: bool,
    #[command(flatten)]
    mode: ModeArgs,
}

pub fn run(args: &HashArgs, global: &GlobalArgs) -> Result<ExitCode, CliError> {
    let mut files = args.files.clone();
    if files.is_empty() && args.files_from.is_none() {
        files.push(PathBuf::from("-"));
    }
    let stdin = Path::new("-");
    let list_on_stdin = args.files_from.as_deref() == Some(stdin);
    if list_on_stdin && files.iter().any(|file| file == stdin) {
        return Err(CliError::Message(
            "--files-from - reads the list from stdin, so stdin cannot also be an input".to_owned(),
        ));
    }
    // Checked before the key is read, so that nothing is taken from stdin.
    if args.mode.keyed && (list_on_stdin || files.iter().any(|file| file == stdin)) {
        return Err(CliError::Message(
            "--keyed reads the key from stdin, so stdin cannot also be an input or the list \
             of --files-from: name files"
                .to_owned(),
        ));
    }
    let mode = args.mode.resolve()?;
    if args.raw && (files.len() != 1 || args.recursive) {
        return Err(CliError::Message(
            "--raw writes bytes with no names, so it takes exactly one input file".to_owned(),
        ));
    }
    let engine = global.engine()?;
    let stdout = io::stdout();
    let mut out = io::BufWriter::new(stdout.lock());
    let progress = global.progress(None, "files");
    // Failures of any kind, and those b3sum's closing warning counts.
    let (failed, failed_lines) = if args.check {
        // As b3sum, a checkfile written with --seek is checked with it: its
        // digests are 32 bytes of extended output from there.
        let mut hasher = FileHasher::new(&engine, &mode, &progress).extended(args.seek > 0);
        let checked = check(&files, args.seek, global.quiet, &mut hasher, &mut out)?;
        // A checkfile that could not be read was named in its own error.
        let lines = checked.failed_lines;
        (lines + checked.unreadable_checkfiles, lines)
    } else {
        // Output past the digest's 32 bytes is extended output.
        let extended = args.seek.saturating_add(args.length) > 32;
        let mut hasher = FileHasher::new(&engine, &mode, &progress)
            .extended(extended)
            .directory_reason(IS_A_DIRECTORY);
        (hash(args, &files, &mut hasher, &mut out)?, 0)
    };
    progress.finish_and_clear();
    out.flush()?;
    if failed_lines > 0 {
        warn(format_args!(
            "b3batch: WARNING: {failed_lines} computed checksum{} did NOT match",
            if failed_lines == 1 { "" } else { "s" }
        ));
    }
    Ok(if failed > 0 {
        ExitCode::FAILURE
    } else {
        ExitCode::SUCCESS
    })
}

/// Prints one line per file; returns how many failed.
fn hash(
    args: &HashArgs,
    files: &[PathBuf],
    hasher: &mut FileHasher<'_, PathBuf>,
    out: &mut impl Write,
) -> Result<u64, CliError> {
    let style = if args.no_names {
        LineStyle::NoNames
    } else if args.tag {
        LineStyle::Tag
    } else {
        LineStyle::Plain
    };
    let mut failed = 0u64;
    let mut emit = |path: PathBuf, outcome: Outcome| -> Result<(), CliError> {
        match outcome {
            Ok(digest) if args.raw => digest.write(args.length, args.seek, Encoding::Raw, out)?,
            Ok(digest) => {
                let (before, after) = line_parts(&path, style);
                out.write_all(before.as_bytes())?;
                digest.write(args.length, args.seek, Encoding::Hex, out)?;
                out.write_all(after.as_bytes())?;
            }
            Err(reason) => {
                failed += 1;
                // Keep stdout and stderr in order for a reader of both.
                out.flush()?;
                warn(format_args!(
                    "b3batch: {}: {reason}",
                    path.to_string_lossy()
                ));
            }
        }
        Ok(())
    };
    let mut push = |file: PathBuf| -> Result<(), CliError> {
        let is_dir = file != Path::new("-") && file.is_dir();
        if args.recursive && is_dir {
            let (mut found, mut skipped) = (Vec::new(), Vec::new());
            walk(&file, &mut found, &mut skipped);
            if !skipped.is_empty() {
                hasher.flush(&mut emit)?;
                for (path, reason) in skipped {
                    emit(path, Err(reason))?;
                }
            }
            for path in found {
                hasher.push(&path.clone(), path, &mut emit)?;
            }
            Ok(())
        } else {
            hasher.push(&file.clone(), file, &mut emit)
        }
    };
    for file in files {
        push(file.clone())?;
    }
    if let Some(list) = &args.files_from {
        let separator = if args.null { b'\0' } else { b'\n' };
        read_list(list, separator, &mut push)?;
    }
    hasher.flush(&mut emit)?;
    Ok(failed)
}

/// Hands each path listed in `list` (`-`: stdin), one per `separator`, to
/// `push` as it is read, so a list of millions of files is never held
/// whole. Empty entries are skipped; with newlines, a `\r` before one is
/// dropped (lists written on Windows); `-` names a file, `./-`.
fn read_list(
    list: &Path,
    separator: u8,
    push: &mut impl FnMut(PathBuf) -> Result<(), CliError>,
) -> Result<(), CliError> {
    let shown = list.to_string_lossy();
    let failed = |error: io::Error| CliError::Message(format!("--files-from {shown}: {error}"));
    let mut reader: Box<dyn BufRead> = if list == Path::new("-") {
        Box::new(BufReader::new(io::stdin()))
    } else {
        Box::new(BufReader::new(File::open(list).map_err(failed)?))
    };
    let mut entry = Vec::new();
    loop {
        entry.clear();
        if reader.read_until(separator, &mut entry).map_err(failed)? == 0 {
            return Ok(());
        }
        if entry.last() == Some(&separator) {
            entry.pop();
        }
        if separator == b'\n' && entry.last() == Some(&b'\r') {
            entry.pop();
        }
        // A listed `-` is a file of that name, not stdin again.
        if entry == b"-" {
            entry.splice(0..0, *b"./");
        }
        if !entry.is_empty() {
            push(path_from_bytes(&entry, &shown)?)?;
        }
    }
}

/// A path from the bytes of a list entry: any bytes on Unix, UTF-8
/// elsewhere.
fn path_from_bytes(bytes: &[u8], list: &str) -> Result<PathBuf, CliError> {
    #[cfg(unix)]
    {
        let _ = list;
        Ok(PathBuf::from(
            <std::ffi::OsStr as std::os::unix::ffi::OsStrExt>::from_bytes(bytes),
        ))
    }
    #[cfg(not(unix))]
    match std::str::from_utf8(bytes) {
        Ok(path) => Ok(PathBuf::from(path)),
        Err(_) => Err(CliError::Message(format!(
            "--files-from {list}: a path that is not UTF-8 ({}); on this system list UTF-8 paths",
            String::from_utf8_lossy(bytes)
        ))),
    }
}

/// What a checkfile line asks, carried to its result.
struct Expected {
    shown: String,
    digest: [u8; 32],
}

/// What `check` found wrong.
struct Checked {
    /// Lines whose file failed to match, could not be read, or that could
    /// not be parsed.
    failed_lines: u64,
    /// Checkfiles that could not be opened or read to their end.
    unreadable_checkfiles: u64,
}

/// Checks every line of every checkfile against the 32 bytes of each
/// file's output from byte `seek` on.
fn check(
    checkfiles: &[PathBuf],
    seek: u64,
    quiet: bool,
    hasher: &mut FileHasher<'_, Expected>,
    out: &mut impl Write,
) -> Result<Checked, CliError> {
    // Counted both in `emit` and beside it.
    let failed_lines = Cell::new(0u64);
    let fail = || failed_lines.set(failed_lines.get() + 1);
    let mut unreadable_checkfiles = 0;
    let mut emit = |expected: Expected, outcome: Outcome| -> Result<(), CliError> {
        match outcome {
            Ok(digest) if digest.output_at(seek) == Some(expected.digest) => {
                if !quiet {
                    writeln!(out, "{}: OK", expected.shown)?;
                }
            }
            Ok(_) => {
                fail();
                writeln!(out, "{}: FAILED", expected.shown)?;
            }
            Err(reason) => {
                fail();
                writeln!(out, "{}: FAILED ({reason})", expected.shown)?;
            }
        }
        Ok(())
    };
    for checkfile in checkfiles {
        let shown = checkfile.to_string_lossy();
        let mut reader: Box<dyn BufRead> = if checkfile == Path::new("-") {
            Box::new(BufReader::new(io::stdin()))
        } else {
            match File::open(checkfile) {
                Ok(file) => Box::new(BufReader::new(file)),
                Err(error) => {
                    // Results so far first, so messages stay in order.
                    hasher.flush(&mut emit)?;
                    unreadable_checkfiles += 1;
                    warn(format_args!("b3batch: {shown}: {error}"));
                    continue;
                }
            }
        };
        let mut line = Vec::new();
        loop {
            line.clear();
            match reader.read_until(b'\n', &mut line) {
                Ok(0) => break,
                Ok(_) => {}
                Err(error) => {
                    hasher.flush(&mut emit)?;
                    unreadable_checkfiles += 1;
                    warn(format_args!("b3batch: {shown}: {error}"));
                    break;
                }
            }
            // A line that is not UTF-8 is one bad line, not the end of the
            // checkfile: read lossily, its name holds U+FFFD and is refused
            // as b3sum refuses the names it printed lossily.
            match parse_check_line(&String::from_utf8_lossy(&line)) {
                Ok(parsed) => {
                    let expected = Expected {
                        shown: parsed.shown,
                        digest: parsed.expected,
                    };
                    hasher.push(&parsed.path, expected, &mut emit)?;
                }
                Err(reason) => {
                    hasher.flush(&mut emit)?;
                    fail();
                    warn(format_args!("b3batch: {reason}"));
                }
            }
        }
    }
    hasher.flush(&mut emit)?;
    Ok(Checked {
        failed_lines: failed_lines.get(),
        unreadable_checkfiles,
    })
}
