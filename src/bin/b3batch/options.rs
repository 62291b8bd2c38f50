//! What every subcommand shares: the global options, the hash mode flags,
//! building the engine, the error type, and the progress bar.

use std::fmt;
use std::io::{self, IsTerminal, Read, Write};

use blake3_batch::{Backend, Engine, EngineBuilder, Mode};
use clap::{Args, ValueEnum};
use indicatif::{ProgressBar, ProgressStyle};

/// Options accepted by every subcommand.
#[derive(Args, Clone, Debug)]
pub struct GlobalArgs {
    /// Where hashing runs.
    #[arg(long, global = true, value_enum, default_value_t = BackendArg::Auto)]
    pub backend: BackendArg,
    /// Threads for the CPU path (default, or 0: one per core); `bench`
    /// takes a list to compare (`--threads 1,2,4`). `--num-threads` is
    /// b3sum's name for it.
    #[arg(
        long,
        global = true,
        visible_alias = "num-threads",
        value_delimiter = ',',
        num_args = 1
    )]
    pub threads: Vec<usize>,
    /// No progress bar; with `hash --check`, no line for files that are OK.
    #[arg(long, short = 'q', global = true)]
    pub quiet: bool,
    /// GPU memory the engine may hold for a batch's slabs, in MiB
    /// (default 256): larger slabs keep a fast card busier.
    #[arg(long, global = true, value_name = "MIB")]
    pub gpu_memory: Option<u64>,
}

/// `--backend`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, ValueEnum)]
pub enum BackendArg {
    /// The fastest available.
    Auto,
    /// The CPU lanes.
    Cpu,
    /// The GPU (fails when there is no adapter).
    Gpu,
}

impl GlobalArgs {
    /// A builder for `backend` with the GPU options applied.
    pub fn builder(&self, backend: Backend) -> EngineBuilder {
        let builder = Engine::builder().backend(backend);
        match self.gpu_memory {
            Some(mib) => builder.gpu_memory_budget(mib.saturating_mul(1 << 20)),
            None => builder,
        }
    }

    /// `--threads` as asked: empty for the default, which a lone 0 asks
    /// for too (b3sum's way).
    pub fn threads_asked(&self) -> &[usize] {
        match self.threads.as_slice() {
            [0] => &[],
            list => list,
        }
    }

    /// The engine these options ask for.
    pub fn engine(&self) -> Result<Engine, CliError> {
        let mut builder = self.builder(match self.backend {
            BackendArg::Auto => Backend::Auto,
            BackendArg::Cpu => Backend::Cpu,
            BackendArg::Gpu => Backend::Gpu,
        });
        match self.threads_asked() {
            [] => {}
            [threads] => builder = builder.threads(*threads),
            _ => {
                return Err(CliError::Message(
                    "--threads takes one number here (a list is for `bench`)".to_owned(),
                ))
            }
        }
        builder
            .build()
            .map_err(|error| CliError::Message(error.to_string()))
    }

    /// A progress bar on stderr counting `unit`s up to `total` (a spinner
    /// when unknown), hidden under `--quiet` or when stderr is not a
    /// terminal.
    pub fn progress(&self, total: Option<u64>, unit: &str) -> ProgressBar {
        if self.quiet || !io::stderr().is_terminal() {
            return ProgressBar::hidden();
        }
        let bar = match total {
            Some(total) => ProgressBar::new(total),
            None => ProgressBar::new_spinner(),
        };
        let template = match (total, unit) {
            (Some(_), "bytes") => "{bar:40} {bytes}/{total_bytes} {bytes_per_sec} {eta}",
            (None, "bytes") => "{spinner} {bytes} {bytes_per_sec}",
            (Some(_), _) => "{bar:40} {pos}/{len} {per_sec} {eta}",
            (None, _) => "{spinner} {pos} {per_sec}",
        };
        if let Ok(style) = ProgressStyle::with_template(template) {
            bar.set_style(style);
        }
        bar
    }
}

/// `--keyed` and `--derive-key`: which BLAKE3 function to apply.
#[derive(Args, Clone, Debug)]
pub struct ModeArgs {
    /// Keyed hash, with the 32-byte key read from stdin.
    #[arg(long, conflicts_with = "derive_key")]
    pub keyed: bool,
    /// Key derivation with this context string.
    #[arg(long, value_name = "CONTEXT")]
    pub derive_key: Option<String>,
}

/// The chosen function, owning its key or context.
pub enum HashMode {
    Hash,
    Keyed([u8; 32]),
    DeriveKey(String),
}

impl ModeArgs {
    /// Reads the key from stdin for `--keyed`.
    pub fn resolve(&self) -> Result<HashMode, CliError> {
        if self.keyed {
            let mut key = Vec::with_capacity(33);
            io::stdin().lock().take(33).read_to_end(&mut key)?;
            let key: [u8; 32] = key.as_slice().try_into().map_err(|_| {
                CliError::Message(format!(
                    "--keyed needs exactly 32 bytes of key on stdin, got {}",
                    if key.len() > 32 {
                        "more".to_owned()
                    } else {
                        key.len().to_string()
                    }
                ))
            })?;
            return Ok(HashMode::Keyed(key));
        }
        Ok(match &self.derive_key {
            Some(context) => HashMode::DeriveKey(context.clone()),
            None => HashMode::Hash,
        })
    }
}

impl HashMode {
    /// The library's view of this mode.
    pub fn mode(&self) -> Mode<'_> {
        match self {
            HashMode::Hash => Mode::Hash,
            HashMode::Keyed(key) => Mode::KeyedHash(key),
            HashMode::DeriveKey(context) => Mode::DeriveKey(context),
        }
    }

    /// An incremental hasher in this mode, for inputs streamed in pieces.
    pub fn hasher(&self) -> blake3::Hasher {
        match self {
            HashMode::Hash => blake3::Hasher::new(),
            HashMode::Keyed(key) => blake3::Hasher::new_keyed(key),
            HashMode::DeriveKey(context) => blake3::Hasher::new_derive_key(context),
        }
    }
}

/// Why a subcommand stopped.
#[derive(Debug)]
pub enum CliError {
    /// A message for stderr.
    Message(String),
    /// An I/O error on stdout or stdin (a closed stdout ends quietly).
    Io(io::Error),
}

/// Writes a line to stderr, as `eprintln!` does but without its panic
/// when stderr is closed (`2>&1 | head`): the exit status still tells.
pub fn warn(line: fmt::Arguments<'_>) {
    let _ = writeln!(io::stderr().lock(), "{line}");
}

impl From<io::Error> for CliError {
    fn from(error: io::Error) -> Self {
        CliError::Io(error)
    }
}

impl fmt::Display for CliError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            CliError::Message(message) => f.write_str(message),
            CliError::Io(error) => write!(f, "{error}"),
        }
    }
}
