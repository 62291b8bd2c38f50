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
use crate::options::{CliError, GlobalArgs, ModeArgs};

/// Options of `b3batch hash`.
#[derive(Args, Debug)]
pub struct HashArgs {
    /// Files to hash (`-` or nothing: stdin); with --check, checkfiles.
    #[arg(value_name = "FILE")]
    files: Vec<PathBuf>,
    /// Hash the files under directories, recursively.
    #[arg(short = 'r', long)]
    recursive: bool,
    /// Read b3sum-format lines and check each file's digest.
    #[arg(
        short = 'c',
        long,
        conflicts_with_all = ["tag", "no_names", "raw", "recursive", "length", "seek"]
    )]
    check: bool,
    /// Output bytes per file, before hex encoding: fewer than 32 give a
    /// prefix of the digest, more BLAKE3's extended output (small files
    /// then hashed by `blake3` on every thread, not in SIMD lanes).
    #[arg(short = 'l', long, value_name = "LEN", default_value_t = 32)]
    length: u64,
    /// The output's first byte: with --length, bytes SEEK..SEEK+LEN of
    /// BLAKE3's extended output, as b3sum's --seek.
    #[arg(long, value_name = "SEEK", default_value_t = 0)]
    seek: u64,
    /// BSD-style lines: `BLAKE3 (FILE) = HASH`.
    #[arg(long)]
    tag: bool,
    /// Print only the digests.
    #[arg(long, conflicts_with = "tag")]
    no_names: bool,
    /// Write the raw output bytes, not hex (one input only).
    #[arg(long, conflicts_with_all = ["tag", "no_names"])]
    raw: bool,
    #[command(flatten)]
    mode: ModeArgs,
}

pub fn run(args: &HashArgs, global: &GlobalArgs) -> Result<ExitCode, CliError> {
    let mut files = args.files.clone();
    if files.is_empty() {
        files.push(PathBuf::from("-"));
    }
    let mode = args.mode.resolve()?;
    if mode.reads_stdin() && files.iter().any(|file| file == Path::new("-")) {
        return Err(CliError::Message(
            "--keyed reads the key from stdin, so stdin cannot also be an input: name files"
                .to_owned(),
        ));
    }
    if args.raw && (files.len() != 1 || args.recursive) {
        return Err(CliError::Message(
            "--raw writes bytes with no names, so it takes exactly one input file".to_owned(),
        ));
    }
    let engine = global.engine()?;
    let stdout = io::stdout();
    let mut out = io::BufWriter::new(stdout.lock());
    let progress = global.progress(None, "files");
    let failed = if args.check {
        let mut hasher = FileHasher::new(&engine, &mode, &progress);
        check(&files, global.quiet, &mut hasher, &mut out)?
    } else {
        // Output past the digest's 32 bytes is extended output.
        let extended = args.seek.saturating_add(args.length) > 32;
        let mut hasher = FileHasher::new(&engine, &mode, &progress).extended(extended);
        hash(args, &files, &mut hasher, &mut out)?
    };
    progress.finish_and_clear();
    out.flush()?;
    if args.check && failed > 0 {
        eprintln!(
            "b3batch: WARNING: {failed} computed checksum{} did NOT match",
            if failed == 1 { "" } else { "s" }
        );
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
                eprintln!("b3batch: {}: {reason}", path.to_string_lossy());
            }
        }
        Ok(())
    };
    for file in files {
        let is_dir = file != Path::new("-") && file.is_dir();
        if args.recursive && is_dir {
            let (mut found, mut skipped) = (Vec::new(), Vec::new());
            walk(file, &mut found, &mut skipped);
            if !skipped.is_empty() {
                hasher.flush(&mut emit)?;
                for (path, reason) in skipped {
                    emit(path, Err(reason))?;
                }
            }
            for path in found {
                hasher.push(&path.clone(), path, &mut emit)?;
            }
        } else {
            hasher.push(file, file.clone(), &mut emit)?;
        }
    }
    hasher.flush(&mut emit)?;
    Ok(failed)
}

/// What a checkfile line asks, carried to its result.
struct Expected {
    shown: String,
    digest: [u8; 32],
}

/// Checks every line of every checkfile; returns how many failed.
fn check(
    checkfiles: &[PathBuf],
    quiet: bool,
    hasher: &mut FileHasher<'_, Expected>,
    out: &mut impl Write,
) -> Result<u64, CliError> {
    // Counted both in `emit` and beside it.
    let failed = Cell::new(0u64);
    let fail = || failed.set(failed.get() + 1);
    let mut emit = |expected: Expected, outcome: Outcome| -> Result<(), CliError> {
        match outcome {
            Ok(digest) if digest.hash() == expected.digest => {
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
        let reader: Box<dyn BufRead> = if checkfile == Path::new("-") {
            Box::new(BufReader::new(io::stdin()))
        } else {
            match File::open(checkfile) {
                Ok(file) => Box::new(BufReader::new(file)),
                Err(error) => {
                    hasher.flush(&mut emit)?;
                    fail();
                    eprintln!("b3batch: {}: {error}", checkfile.to_string_lossy());
                    continue;
                }
            }
        };
        for line in reader.lines() {
            let line = match line {
                Ok(line) => line,
                Err(error) => {
                    fail();
                    eprintln!("b3batch: {}: {error}", checkfile.to_string_lossy());
                    break;
                }
            };
            match parse_check_line(&line) {
                Ok(parsed) => {
                    let expected = Expected {
                        shown: parsed.shown,
                        digest: parsed.expected,
                    };
                    hasher.push(&parsed.path, expected, &mut emit)?;
                }
                Err(reason) => {
                    // Results so far first, so messages stay in line order.
                    hasher.flush(&mut emit)?;
                    fail();
                    eprintln!("b3batch: {reason}");
                }
            }
        }
    }
    hasher.flush(&mut emit)?;
    Ok(failed.get())
}
