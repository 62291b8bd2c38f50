//! `b3batch`: the command-line front end of blake3-batch.

mod bench;
mod delimited;
mod files;
mod hash;
mod info;
mod names;
mod options;
mod output_text;
mod random;
mod reader_thread;
mod records;
mod selftest;
mod writer_thread;

use std::io;
use std::process::ExitCode;

use clap::{Parser, Subcommand};

use options::{warn, CliError, GlobalArgs};

/// Hash huge numbers of small blobs with BLAKE3.
#[derive(Parser)]
#[command(name = "b3batch", version, about)]
struct Cli {
    #[command(subcommand)]
    command: Command,
    #[command(flatten)]
    global: GlobalArgs,
}

#[derive(Subcommand)]
enum Command {
    /// Hash files, b3sum style (`<hash>  <name>` lines), or check them.
    Hash(hash::HashArgs),
    /// Hash each record of a file or stdin: lines, NUL-separated, or fixed size.
    Records(records::RecordsArgs),
    /// Show CPU features, backends, threads, GPU adapters and the profile.
    Info,
    /// Measure this machine's CPU and GPU rates and save the profile that
    /// `--backend auto` plans with.
    Calibrate,
    /// Compare the GPU, 1..N CPU threads, Auto and the `blake3::hash` loop
    /// on generated blobs.
    Bench(bench::BenchArgs),
    /// Hash random batches with every backend here for a while, checking
    /// each digest against the blake3 crate (exit 1 on a mismatch).
    Selftest(selftest::SelftestArgs),
}

fn main() -> ExitCode {
    // On Windows the shell passes `*.txt` as it is: expand it as a Unix
    // shell would (b3sum does the same). Elsewhere the arguments as given.
    let cli = Cli::parse_from(wild::args_os());
    let result = match &cli.command {
        Command::Hash(args) => hash::run(args, &cli.global),
        Command::Records(args) => records::run(args, &cli.global),
        Command::Info => info::run(&cli.global),
        Command::Calibrate => info::calibrate(&cli.global),
        Command::Selftest(args) => selftest::run(args, &cli.global),
        Command::Bench(args) => bench::run(args, &cli.global)
            .map(|()| ExitCode::SUCCESS)
            .map_err(CliError::Message),
    };
    match result {
        Ok(code) => code,
        // A reader that stopped early (`| head`) is not an error.
        Err(CliError::Io(error)) if error.kind() == io::ErrorKind::BrokenPipe => ExitCode::SUCCESS,
        Err(error) => {
            warn(format_args!("b3batch: {error}"));
            ExitCode::FAILURE
        }
    }
}
