//! The GPU path failing on purpose at each stage (buffer creation, mapping,
//! a slab that never completes, device loss in the middle of a batch, a
//! validation error): `Backend::Gpu` returns `ErrorKind::Gpu` naming the
//! stage and serves the next batch, `Backend::Auto` redoes the work on the
//! CPU with exact digests, and a thousand faulted batches leave memory flat.

mod common;

use std::sync::{Mutex, MutexGuard};
use std::time::Duration;

use blake3_batch::{
    cpu_model, Backend, CpuRates, Engine, EngineBuilder, ErrorKind, GpuFault, GpuFaultStage,
    GpuRates, Mode, Profile,
};
use common::{first_mismatch, gpu_engine};

/// Small slabs (16 KiB of GPU memory), so a batch of a few hundred blobs
/// streams through several and a fault can strike in its middle.
const BUDGET: u64 = 16 * 1024;

/// The memory test reads the process's resident size, which the other
/// tests' batches move by tens of MiB: each test holds this lock, so none
/// runs beside another however many threads the harness uses.
static ONE_AT_A_TIME: Mutex<()> = Mutex::new(());

fn one_at_a_time() -> MutexGuard<'static, ()> {
    // A test that failed holding the lock has reported its failure.
    ONE_AT_A_TIME
        .lock()
        .unwrap_or_else(|poison| poison.into_inner())
}

fn blobs(count: usize, seed: u64) -> Vec<Vec<u8>> {
    (0..count)
        .map(|index| {
            let length = (index * 37 + seed as usize) % 1025;
            (0..length)
                .map(|byte| (byte as u64 * 31 + seed) as u8)
                .collect()
        })
        .collect()
}

fn fault(stage: GpuFaultStage, batches: usize) -> GpuFault {
    GpuFault {
        stage,
        at_slab: 1,
        batches,
    }
}

fn builder(backend: Backend) -> EngineBuilder {
    Engine::builder()
        .backend(backend)
        .threads(2)
        .gpu_memory_budget(BUDGET)
        .gpu_timeout(Duration::from_secs(20))
}

/// By this profile the GPU hashes everything: Auto sends it each batch.
fn gpu_first_profile() -> Profile {
    Profile {
        cpu_model: cpu_model(),
        adapter: Some("injected".to_owned()),
        cpu: CpuRates {
            tiny_bytes_per_sec: 1e6,
            small_bytes_per_sec: 1e6,
            chunk_bytes_per_sec: 1e6,
            large_bytes_per_sec: 1e6,
            thread_efficiency: 0.9,
            tiny_thread_efficiency: None,
        },
        gpu: Some(GpuRates {
            latency_sec: 1e-9,
            upload_bytes_per_sec: 1e12,
            upload_one_thread_bytes_per_sec: None,
            pinned_upload_bytes_per_sec: None,
            pinned_blob_sec: None,
            split_slowdown: None,
            small_split_slowdown: None,
            download_bytes_per_sec: 1e12,
            kernel_blobs_per_sec: 1e12,
            large_bytes_per_sec: None,
            software: false,
        }),
    }
}

/// Asserts that `error` is a GPU error whose message names the stage
/// (`words`) the fault struck.
fn assert_names_its_stage(error: &blake3_batch::Error, stage: GpuFaultStage, words: &str) {
    let message = error.to_string();
    assert!(
        matches!(error.kind(), ErrorKind::Gpu { .. })
            && message.to_lowercase().contains(&words.to_lowercase()),
        "{stage:?}: {message}"
    );
}

const STAGES: [(GpuFaultStage, &str); 5] = [
    (GpuFaultStage::CreateBuffers, "creating a slab's buffers"),
    (GpuFaultStage::Map, "mapping the digest readback buffer"),
    (GpuFaultStage::Timeout, "did not finish within"),
    (GpuFaultStage::DeviceLost, "lost"),
    (GpuFaultStage::Validation, "Validation"),
];

#[test]
fn each_fault_is_a_gpu_error_naming_its_stage_and_the_next_batch_is_served() {
    let _alone = one_at_a_time();
    if gpu_engine(None).is_none() {
        return;
    }
    let batch = blobs(300, 1);
    for (stage, words) in STAGES {
        let engine = builder(Backend::Gpu)
            .gpu_fault(fault(stage, 1))
            .build()
            .unwrap();
        let mut out = vec![[0u8; 32]; batch.len()];
        let error = engine
            .hash_slices_into(Mode::Hash, &batch, &mut out)
            .expect_err("the fault strikes");
        assert_names_its_stage(&error, stage, words);
        // The fault was for one batch: the next is served, except by a
        // device that is gone, which keeps failing cleanly.
        let next = blobs(300, 2);
        if stage == GpuFaultStage::DeviceLost {
            let again = engine.hash_many(&next).expect_err("the device stays lost");
            assert!(matches!(again.kind(), ErrorKind::Gpu { .. }), "{again}");
        } else {
            assert_eq!(
                first_mismatch(&engine, Mode::Hash, &next),
                None,
                "{stage:?}"
            );
        }
    }
}

/// A fault while a blob longer than a slab streams through in subtrees
/// (the second of the batch's two streams, the first one slab long) is
/// the same error, and the next such batch is served.
#[test]
fn a_fault_among_a_long_blobs_subtrees_is_a_gpu_error() {
    let _alone = one_at_a_time();
    if gpu_engine(None).is_none() {
        return;
    }
    // 240 KiB: slabs of 16 KiB, so 200 KiB is 13 subtrees.
    let batch: Vec<Vec<u8>> = [100, 200 * 1024 + 5, 7]
        .iter()
        .map(|&len| (0..len).map(|byte| (byte % 253) as u8).collect())
        .collect();
    for (stage, words) in STAGES {
        let engine = builder(Backend::Gpu)
            .gpu_memory_budget(240 * 1024)
            .gpu_fault(fault(stage, 2))
            .build()
            .unwrap();
        let mut out = vec![[0u8; 32]; batch.len()];
        let error = engine
            .hash_slices_into(Mode::Hash, &batch, &mut out)
            .expect_err("the fault strikes a subtree");
        assert_names_its_stage(&error, stage, words);
        if stage != GpuFaultStage::DeviceLost {
            assert_eq!(
                first_mismatch(&engine, Mode::Hash, &batch),
                None,
                "{stage:?}"
            );
        }
    }
}

/// A fault while a window of a stream (`Engine::hash_reader`) is on the
/// GPU: `Backend::Gpu` returns the stage's error and no digest, then serves
/// the next stream; Auto, whose profile sends the windows to the GPU,
/// redoes that window on the CPU, and the input's digest is exact.
#[test]
fn a_fault_in_a_streams_window_is_a_gpu_error_and_auto_redoes_it() {
    let _alone = one_at_a_time();
    if gpu_engine(None).is_none() {
        return;
    }
    // Slabs of 20 KiB hash subtrees of 16 KiB, four to a window: the
    // first window's second slab faults, the other windows run.
    let budget = 300 * 1024;
    let input: Vec<u8> = (0..300 * 1024 + 5).map(|byte| (byte % 253) as u8).collect();
    let expected = *blake3::hash(&input).as_bytes();
    let mut profile = gpu_first_profile();
    if let Some(gpu) = profile.gpu.as_mut() {
        gpu.large_bytes_per_sec = Some(1e12);
    }
    for (stage, words) in STAGES {
        let engine = builder(Backend::Gpu)
            .gpu_memory_budget(budget)
            .gpu_fault(fault(stage, 1))
            .build()
            .unwrap();
        let error = engine
            .hash_reader(Mode::Hash, &input[..])
            .expect_err("the fault strikes a window");
        assert_names_its_stage(&error, stage, words);
        if stage != GpuFaultStage::DeviceLost {
            let digest = engine.hash_reader(Mode::Hash, &input[..]).unwrap();
            assert_eq!(digest, expected, "{stage:?}: the stream after");
        }

        let auto = builder(Backend::Auto)
            .gpu_memory_budget(budget)
            .profile(profile.clone())
            .gpu_fault(fault(stage, 1))
            .build()
            .unwrap();
        let digest = auto.hash_reader(Mode::Hash, &input[..]).unwrap();
        assert_eq!(digest, expected, "{stage:?}: Auto");
    }
}

/// A fault in a batch of files (`Engine::hash_files`): on `Backend::Gpu`
/// every file of the batch gets the GPU's error, never a digest, and the
/// next call is served; Auto redoes the batch on the CPU exactly.
#[test]
fn a_fault_in_a_batch_of_files_is_each_files_error_and_auto_redoes_it() {
    let _alone = one_at_a_time();
    if gpu_engine(None).is_none() {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let contents = blobs(300, 11);
    let paths: Vec<std::path::PathBuf> = contents
        .iter()
        .enumerate()
        .map(|(index, content)| {
            let path = dir.path().join(format!("{index}"));
            std::fs::write(&path, content).unwrap();
            path
        })
        .collect();
    let exact = |digests: &[blake3_batch::FileDigest], what: &str| {
        for (content, digest) in contents.iter().zip(digests) {
            assert_eq!(*digest, Ok(*blake3::hash(content).as_bytes()), "{what}");
        }
    };
    for (stage, words) in STAGES {
        let engine = builder(Backend::Gpu)
            .gpu_fault(fault(stage, 1))
            .build()
            .unwrap();
        let digests = engine.hash_files(Mode::Hash, &paths);
        assert_eq!(digests.len(), paths.len());
        for digest in &digests {
            let error = digest.as_ref().expect_err("the fault strikes the batch");
            assert_names_its_stage(error, stage, words);
        }
        if stage != GpuFaultStage::DeviceLost {
            let after = engine.hash_files(Mode::Hash, &paths);
            exact(&after, &format!("{stage:?}: the call after"));
        }

        let auto = builder(Backend::Auto)
            .profile(gpu_first_profile())
            .gpu_fault(fault(stage, 1))
            .build()
            .unwrap();
        exact(
            &auto.hash_files(Mode::Hash, &paths),
            &format!("{stage:?}: Auto"),
        );
    }
}

#[test]
fn a_fault_in_a_blob_hashers_batch_is_each_blobs_error() {
    let _alone = one_at_a_time();
    if gpu_engine(None).is_none() {
        return;
    }
    let contents = blobs(300, 13);
    let engine = builder(Backend::Gpu)
        .gpu_fault(fault(GpuFaultStage::Map, 1))
        .build()
        .unwrap();
    let mut hasher = engine.blob_hasher(Mode::Hash);
    // The faulted batch, then the next, from the same hasher.
    for faulted in [true, false] {
        let mut emitted = Vec::new();
        let mut emit = |index: usize, digest: blake3_batch::BlobDigest| {
            emitted.push((index, digest));
            Ok::<(), ()>(())
        };
        for (index, content) in contents.iter().enumerate() {
            hasher.push(content, index, &mut emit).unwrap();
        }
        hasher.finish(&mut emit).unwrap();
        let tokens: Vec<usize> = emitted.iter().map(|(index, _)| *index).collect();
        assert_eq!(tokens, (0..contents.len()).collect::<Vec<_>>());
        if faulted {
            for (_, digest) in &emitted {
                let error = digest.as_ref().expect_err("the fault strikes the batch");
                assert_names_its_stage(error, GpuFaultStage::Map, STAGES[1].1);
            }
        } else {
            for (index, digest) in emitted {
                assert_eq!(digest, Ok(*blake3::hash(&contents[index]).as_bytes()));
            }
        }
    }
}

#[test]
fn auto_redoes_a_faulted_gpu_batch_on_the_cpu_exactly() {
    let _alone = one_at_a_time();
    if gpu_engine(None).is_none() {
        return;
    }
    let key = [3u8; 32];
    for (stage, _) in STAGES {
        let engine = builder(Backend::Auto)
            .profile(gpu_first_profile())
            .gpu_fault(fault(stage, usize::MAX))
            .build()
            .unwrap();
        for (round, mode) in [Mode::Hash, Mode::KeyedHash(&key), Mode::DeriveKey("faults")]
            .into_iter()
            .enumerate()
        {
            let batch = blobs(300, round as u64);
            assert_eq!(
                first_mismatch(&engine, mode, &batch),
                None,
                "{stage:?}, round {round}"
            );
        }
    }
}

#[cfg(target_os = "linux")]
#[test]
fn a_thousand_faulted_batches_leave_memory_flat() {
    let _alone = one_at_a_time();
    if gpu_engine(None).is_none() {
        return;
    }
    fn resident_kib() -> i64 {
        let status = std::fs::read_to_string("/proc/self/status").unwrap();
        let line = status
            .lines()
            .find(|line| line.starts_with("VmRSS:"))
            .unwrap();
        line.split_whitespace().nth(1).unwrap().parse().unwrap()
    }
    for stage in [GpuFaultStage::Map, GpuFaultStage::Validation] {
        let engine = builder(Backend::Auto)
            .profile(gpu_first_profile())
            .gpu_fault(fault(stage, usize::MAX))
            .build()
            .unwrap();
        let batch = blobs(100, 5);
        let run = |times: usize| {
            for _ in 0..times {
                let digests = engine.hash_many(&batch).unwrap();
                assert_eq!(
                    *digests[99].as_bytes(),
                    *blake3::hash(&batch[99]).as_bytes()
                );
            }
        };
        run(100); // allocator and driver pools settle
        let before = resident_kib();
        run(1000);
        let grown = resident_kib() - before;
        println!("{stage:?}: 1000 faulted batches, resident memory {grown:+} KiB");
        assert!(grown < 8 * 1024, "{stage:?}: grew {grown} KiB");
    }
}
