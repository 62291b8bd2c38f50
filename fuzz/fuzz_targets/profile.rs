//! Any bytes as a profile file: loading never panics, and a profile that
//! loads has only finite, positive rates.
#![no_main]

use std::io::Write;

use blake3_batch::Profile;
use libfuzzer_sys::fuzz_target;

fuzz_target!(|bytes: &[u8]| {
    let mut file = tempfile_in_shm();
    file.1.write_all(bytes).unwrap();
    if let Ok(profile) = Profile::load(&file.0) {
        let cpu = &profile.cpu;
        for rate in [
            cpu.tiny_bytes_per_sec,
            cpu.small_bytes_per_sec,
            cpu.chunk_bytes_per_sec,
            cpu.large_bytes_per_sec,
        ] {
            assert!(rate.is_finite() && rate > 0.0);
        }
        if let Some(gpu) = &profile.gpu {
            let optional = [
                gpu.upload_one_thread_bytes_per_sec,
                gpu.pinned_upload_bytes_per_sec,
            ];
            for rate in [
                gpu.upload_bytes_per_sec,
                gpu.download_bytes_per_sec,
                gpu.kernel_blobs_per_sec,
            ]
            .into_iter()
            .chain(optional.into_iter().flatten())
            {
                assert!(rate.is_finite() && rate > 0.0);
            }
        }
    }
});

/// A fresh file per process, rewritten for each input.
fn tempfile_in_shm() -> (std::path::PathBuf, std::fs::File) {
    let dir = if std::path::Path::new("/dev/shm").is_dir() {
        "/dev/shm".into()
    } else {
        std::env::temp_dir()
    };
    let path = dir.join(format!("b3batch-fuzz-profile-{}.json", std::process::id()));
    let file = std::fs::File::create(&path).unwrap();
    (path, file)
}
