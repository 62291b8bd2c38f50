//! `b3batch info`: what this machine offers and what the engine would use.

use std::io::{self, Write};
use std::process::ExitCode;

use blake3_batch::{gpu_adapters, profile_path, CpuBackend, PROFILE_ENV};

use crate::options::{CliError, GlobalArgs};

pub fn run(global: &GlobalArgs) -> Result<ExitCode, CliError> {
    let engine = global.engine()?;
    let mut out = io::stdout().lock();
    writeln!(out, "cpu: {}", blake3_batch::cpu_model())?;
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
    let path = profile_path().map_or("(no cache directory)".to_owned(), |path| {
        path.display().to_string()
    });
    let profile = engine.profile();
    writeln!(
        out,
        "profile: {path}: cpu {:.2}/{:.2}/{:.2}/{:.2} GB/s per thread (64 B/256 B/1 KiB/larger), \
         thread efficiency {:.2} at 1 KiB{}, gpu {}",
        profile.cpu.tiny_bytes_per_sec / 1e9,
        profile.cpu.small_bytes_per_sec / 1e9,
        profile.cpu.chunk_bytes_per_sec / 1e9,
        profile.cpu.large_bytes_per_sec / 1e9,
        profile.cpu.thread_efficiency,
        profile
            .cpu
            .tiny_thread_efficiency
            .map(|tiny| format!(", {tiny:.2} at 64 B"))
            .unwrap_or_default(),
        match &profile.gpu {
            None => "none".to_owned(),
            Some(gpu) => format!(
                "{:.0} us latency, {:.1} M blobs/s, {}{:.1}/{:.1} GB/s up/down{}{}{}{}",
                gpu.latency_sec * 1e6,
                gpu.kernel_blobs_per_sec / 1e6,
                gpu.large_bytes_per_sec
                    .map(|rate| format!("{:.1} GB/s over 1 KiB end to end, ", rate / 1e9))
                    .unwrap_or_default(),
                gpu.upload_bytes_per_sec / 1e9,
                gpu.download_bytes_per_sec / 1e9,
                gpu.upload_one_thread_bytes_per_sec
                    .map(|rate| format!(" ({:.1} up packed on one thread)", rate / 1e9))
                    .unwrap_or_default(),
                gpu.pinned_upload_bytes_per_sec
                    .map(|rate| format!(", {:.1} GB/s up from pinned memory", rate / 1e9))
                    .unwrap_or_default(),
                [
                    ("", gpu.split_slowdown),
                    (" small", gpu.small_split_slowdown)
                ]
                .into_iter()
                .filter_map(|(which, slowdown)| Some((which, slowdown?)))
                .map(|(which, slowdown)| {
                    let pinned = match (slowdown.pinned_tiny, slowdown.pinned_chunk) {
                        (Some(tiny), Some(chunk)) => format!(", {tiny:.2}/{chunk:.2} pinned"),
                        _ => String::new(),
                    };
                    format!(
                        ",{which} splits {:.2}/{:.2}× the model's time (64 B/1 KiB){pinned}",
                        slowdown.tiny, slowdown.chunk
                    )
                })
                .collect::<String>(),
                if gpu.software {
                    ", software (never chosen)"
                } else {
                    ""
                }
            ),
        }
    )?;
    Ok(ExitCode::SUCCESS)
}

/// `b3batch calibrate`: measures this machine and saves the profile that
/// `--backend auto` plans with.
pub fn calibrate(global: &GlobalArgs) -> Result<ExitCode, CliError> {
    // Measure the GPU too when there is one, whatever --backend says.
    let gpu = GlobalArgs {
        backend: crate::options::BackendArg::Gpu,
        ..global.clone()
    };
    let engine = gpu.engine().or_else(|_| {
        GlobalArgs {
            backend: crate::options::BackendArg::Cpu,
            ..global.clone()
        }
        .engine()
    })?;
    let profile = engine
        .calibrate()
        .map_err(|error| CliError::Message(error.to_string()))?;
    let path = profile_path().ok_or_else(|| {
        CliError::Message(format!(
            "no cache directory: set {PROFILE_ENV} to a file path"
        ))
    })?;
    profile
        .save(&path)
        .map_err(|error| CliError::Message(error.to_string()))?;
    let json = serde_json::to_string_pretty(&profile).unwrap_or_default();
    // The profile is saved: a closed stdout (`| head`) is no failure.
    writeln!(io::stdout().lock(), "saved {}:\n{json}", path.display())?;
    Ok(ExitCode::SUCCESS)
}
