//! One engine shared by many threads: CPU, GPU and Auto splitting batches
//! between them, each thread hashing its own batches in every layout, every
//! digest checked against `blake3`; and an engine dropped while another
//! thread's batch is still running.

mod common;

use std::sync::Arc;
use std::thread;

use blake3_batch::{cpu_model, Backend, Choice, CpuRates, Engine, GpuRates, Mode, Profile};
use common::{first_mismatch, gpu_engine, pack, reference, xorshift};

const THREADS: usize = 8;
const ROUNDS: usize = 12;

/// Blobs for thread `thread`, round `round`: lengths from 0 to a few
/// chunks, most under 1 KiB, different in every round.
fn blobs(thread: usize, round: usize) -> Vec<Vec<u8>> {
    let mut next = xorshift((thread as u64 + 1) * 0x9e37_79b9 + round as u64 * 7919);
    let count = 50 + (next() % 400) as usize;
    (0..count)
        .map(|_| {
            let length = match next() % 10 {
                0 => 1025 + (next() % 5000) as usize,
                _ => (next() % 1025) as usize,
            };
            (0..length).map(|_| next() as u8).collect()
        })
        .collect()
}

/// Hashes batches on `engine` from `THREADS` threads at once, through
/// slices, packed offsets and records, and checks every digest.
fn hammer(engine: &Engine) {
    let key = [7u8; 32];
    thread::scope(|scope| {
        for thread in 0..THREADS {
            scope.spawn(move || {
                for round in 0..ROUNDS {
                    let mode = match (thread + round) % 3 {
                        0 => Mode::Hash,
                        1 => Mode::KeyedHash(&key),
                        _ => Mode::DeriveKey("blake3-batch concurrency test"),
                    };
                    let blobs = blobs(thread, round);
                    if let Some(mismatch) = first_mismatch(engine, mode, &blobs) {
                        panic!("thread {thread}, round {round}, slices: {mismatch}");
                    }
                    let (data, offsets) = pack(&blobs, thread);
                    let mut out = vec![[0u8; 32]; blobs.len()];
                    engine
                        .hash_packed_into(mode, &data, &offsets, &mut out)
                        .unwrap();
                    for (index, blob) in blobs.iter().enumerate() {
                        assert_eq!(
                            out[index],
                            reference(mode, blob),
                            "thread {thread}, round {round}, packed blob {index}"
                        );
                    }
                    let records = &data[thread..thread + (data.len() - thread) / 64 * 64];
                    let mut out = vec![[0u8; 32]; records.len() / 64];
                    engine
                        .hash_records_into(mode, records, 64, &mut out)
                        .unwrap();
                    for (index, record) in records.chunks(64).enumerate() {
                        assert_eq!(out[index], reference(mode, record), "records {index}");
                    }
                }
            });
        }
    });
}

#[test]
fn a_cpu_engine_shared_by_eight_threads_is_exact() {
    let engine = Engine::builder()
        .backend(Backend::Cpu)
        .threads(2)
        .build()
        .unwrap();
    hammer(&engine);
}

#[test]
fn a_gpu_engine_shared_by_eight_threads_is_exact() {
    // Small slabs, so that every batch streams through several.
    if let Some(engine) = gpu_engine(Some(16 * 1024)) {
        hammer(&engine);
    }
}

#[test]
fn auto_splitting_every_batch_shared_by_eight_threads_is_exact() {
    if gpu_engine(None).is_none() {
        return;
    }
    // A profile by which the GPU keeps pace with the CPU: batches split.
    let profile = Profile {
        cpu_model: cpu_model(),
        adapter: Some("injected".to_owned()),
        cpu: CpuRates {
            tiny_bytes_per_sec: 4e9,
            small_bytes_per_sec: 6e9,
            chunk_bytes_per_sec: 7e9,
            large_bytes_per_sec: 6e9,
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
            kernel_blobs_per_sec: 10e6,
            large_bytes_per_sec: None,
            software: false,
        }),
    };
    let engine = Engine::builder()
        .backend(Backend::Auto)
        .threads(2)
        .gpu_memory_budget(64 * 1024)
        .profile(profile)
        .build()
        .unwrap();
    let shape = blake3_batch::BatchShape::of(&blobs(0, 0));
    assert!(
        matches!(engine.plan(&shape).choice, Choice::Split { .. }),
        "the profile should split: {:?}",
        engine.plan(&shape)
    );
    hammer(&engine);
}

#[test]
fn an_engine_dropped_while_another_thread_hashes_lets_that_batch_finish() {
    for engine in [
        Some(
            Engine::builder()
                .backend(Backend::Cpu)
                .threads(2)
                .build()
                .unwrap(),
        ),
        gpu_engine(Some(16 * 1024)),
    ]
    .into_iter()
    .flatten()
    {
        let blobs = Arc::new(
            (0..200)
                .flat_map(|round| blobs(round % THREADS, round))
                .collect::<Vec<_>>(),
        );
        let worker = {
            let engine = engine.clone();
            let blobs = Arc::clone(&blobs);
            thread::spawn(move || engine.hash_many(&blobs))
        };
        drop(engine);
        let digests = worker
            .join()
            .expect("no panic")
            .expect("the batch finishes");
        for (blob, digest) in blobs.iter().zip(&digests) {
            assert_eq!(*digest.as_bytes(), reference(Mode::Hash, blob));
        }
    }
}
