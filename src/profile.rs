//! Where a calibrated [`Profile`] lives between runs: a small JSON file in
//! the user's cache directory, named after the CPU it was measured on, or
//! wherever `B3BATCH_PROFILE` points.

use std::fs;
use std::io::{self, Write};
use std::path::{Path, PathBuf};

use crate::error::{Error, ErrorKind};
use crate::scheduler::Profile;

/// Environment variable naming the profile file to load and save.
pub const PROFILE_ENV: &str = "B3BATCH_PROFILE";

/// The profile file for this machine: `B3BATCH_PROFILE`, else
/// `blake3-batch/profile-<cpu>.json` under the user's cache directory
/// (`$XDG_CACHE_HOME`, `~/.cache`, `~/Library/Caches` or `%LOCALAPPDATA%`);
/// `None` when no cache directory is known.
pub fn profile_path() -> Option<PathBuf> {
    if let Some(path) = std::env::var_os(PROFILE_ENV) {
        return Some(PathBuf::from(path));
    }
    let env_dir = |name: &str| std::env::var_os(name).filter(|value| !value.is_empty());
    let cache = if cfg!(windows) {
        env_dir("LOCALAPPDATA").map(PathBuf::from)
    } else if cfg!(target_os = "macos") {
        env_dir("HOME").map(|home| PathBuf::from(home).join("Library/Caches"))
    } else {
        env_dir("XDG_CACHE_HOME")
            .map(PathBuf::from)
            .or_else(|| env_dir("HOME").map(|home| PathBuf::from(home).join(".cache")))
    }?;
    let key = blake3::hash(cpu_model().as_bytes()).to_hex();
    Some(
        cache
            .join("blake3-batch")
            .join(format!("profile-{}.json", &key[..16])),
    )
}

/// The CPU's name as the system reports it (the profile's key).
pub fn cpu_model() -> String {
    let from_proc = fs::read_to_string("/proc/cpuinfo").ok().and_then(|info| {
        info.lines()
            .find(|line| line.starts_with("model name") || line.starts_with("Model"))
            .and_then(|line| line.split_once(':'))
            .map(|(_, name)| name.trim().to_owned())
    });
    from_proc.unwrap_or_else(|| format!("unknown {} CPU", std::env::consts::ARCH))
}

impl Profile {
    /// Reads a profile file. A missing, unreadable or malformed file is an
    /// error naming the path.
    pub fn load(path: &Path) -> Result<Profile, Error> {
        let invalid = |reason: String| -> Error {
            ErrorKind::Profile {
                path: path.to_owned(),
                reason,
            }
            .into()
        };
        let text = fs::read_to_string(path).map_err(|error| invalid(error.to_string()))?;
        let profile: Profile =
            serde_json::from_str(&text).map_err(|error| invalid(error.to_string()))?;
        let rates = [
            profile.cpu.tiny_bytes_per_sec,
            profile.cpu.small_bytes_per_sec,
            profile.cpu.chunk_bytes_per_sec,
            profile.cpu.large_bytes_per_sec,
        ];
        let gpu_rates = profile.gpu.iter().flat_map(|gpu| {
            [
                gpu.upload_bytes_per_sec,
                gpu.upload_one_thread_bytes_per_sec.unwrap_or(1.0),
                gpu.pinned_upload_bytes_per_sec.unwrap_or(1.0),
                // A cost, not a rate: zero is fine, a negative one is not.
                gpu.pinned_blob_sec
                    .map_or(1.0, |seconds| if seconds >= 0.0 { 1.0 } else { f64::NAN }),
                gpu.download_bytes_per_sec,
                gpu.kernel_blobs_per_sec,
            ]
            .into_iter()
            .chain(gpu.split_factors())
        });
        if rates
            .into_iter()
            .chain(gpu_rates)
            .any(|rate| !(rate.is_finite() && rate > 0.0))
        {
            return Err(invalid(
                "a rate is zero, negative or not a number".to_owned(),
            ));
        }
        Ok(profile)
    }

    /// Writes the profile as JSON, creating its directory.
    pub fn save(&self, path: &Path) -> Result<(), Error> {
        let failed = |reason: String| -> Error {
            ErrorKind::Profile {
                path: path.to_owned(),
                reason,
            }
            .into()
        };
        if let Some(dir) = path.parent().filter(|dir| !dir.as_os_str().is_empty()) {
            fs::create_dir_all(dir).map_err(|error| failed(error.to_string()))?;
        }
        let text = serde_json::to_string_pretty(self).map_err(|error| failed(error.to_string()))?;
        fs::write(path, text).map_err(|error| failed(error.to_string()))
    }

    /// The profile saved for this machine, if there is a usable one: one
    /// that is missing is silently `None`; one that is corrupt or was
    /// measured on another CPU is `None` with a warning on stderr.
    pub(crate) fn load_saved(path: Option<&Path>) -> Option<Profile> {
        let path = path?;
        if !path.exists() {
            return None;
        }
        match Profile::load(path) {
            Ok(profile) if profile.cpu_model == cpu_model() => Some(profile),
            Ok(profile) => {
                // Not `eprintln!`, which panics where stderr is closed.
                let _ = writeln!(
                    io::stderr(),
                    "blake3-batch: ignoring profile {}: measured on {:?}, this is {:?}; \
                     run `b3batch calibrate` to measure this machine",
                    path.display(),
                    profile.cpu_model,
                    cpu_model()
                );
                None
            }
            Err(error) => {
                let _ = writeln!(
                    io::stderr(),
                    "blake3-batch: ignoring {error}; run `b3batch calibrate` to rewrite it"
                );
                None
            }
        }
    }
}
