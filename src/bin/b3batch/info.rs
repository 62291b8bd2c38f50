//! `b3batch info`: what this machine offers and what the engine would use.

use std::io::{self, Write};
use std::process::ExitCode;

use blake3_batch::{gpu_adapters, CpuBackend};

use crate::options::{CliError, GlobalArgs};

pub fn run(global: &GlobalArgs) -> Result<ExitCode, CliError> {
    let engine = global.engine()?;
    let mut out = io::stdout().lock();
    writeln!(out, "cpu: {}", cpu_model())?;
    let features: Vec<String> = CpuBackend::ALL
        .iter()
        .map(|cpu| format!("{cpu} {}", if cpu.is_supported() { "yes" } else { "no" }))
        .collect();
    writeln!(out, "cpu backends: {}", features.join(", "))?;
    writeln!(
        out,
        "engine: backend {:?}, cpu backend {} ({} lanes), {} threads",
        engine.backend(),
        engine.cpu_backend(),
        engine.lanes(),
        engine.threads()
    )?;
    if let Some(gpu) = engine.gpu_info() {
        writeln!(out, "engine gpu: {gpu}")?;
    }
    let adapters = gpu_adapters();
    if adapters.is_empty() {
        writeln!(out, "gpu adapters: none found")?;
    }
    for adapter in adapters {
        writeln!(out, "gpu adapter: {adapter}")?;
    }
    writeln!(out, "profile: none (Backend::Auto runs on the CPU)")?;
    Ok(ExitCode::SUCCESS)
}

/// The CPU's marketing name where the system says it, else the architecture.
pub fn cpu_model() -> String {
    std::fs::read_to_string("/proc/cpuinfo")
        .ok()
        .and_then(|info| {
            info.lines()
                .find(|line| line.starts_with("model name"))
                .and_then(|line| line.split_once(':'))
                .map(|(_, name)| name.trim().to_owned())
        })
        .unwrap_or_else(|| std::env::consts::ARCH.to_owned())
}
