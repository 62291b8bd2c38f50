//! `b3batch`: the command-line front end of blake3-batch.

mod bench;

use std::process::ExitCode;

use clap::{Parser, Subcommand};

/// Hash huge numbers of small blobs with BLAKE3.
#[derive(Parser)]
#[command(name = "b3batch", version, about)]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Subcommand)]
enum Command {
    /// Hash generated blobs and compare throughput with a `blake3::hash` loop.
    Bench(bench::BenchArgs),
}

fn main() -> ExitCode {
    let cli = Cli::parse();
    let result = match cli.command {
        Command::Bench(args) => bench::run(&args),
    };
    match result {
        Ok(()) => ExitCode::SUCCESS,
        Err(message) => {
            eprintln!("b3batch: {message}");
            ExitCode::FAILURE
        }
    }
}
