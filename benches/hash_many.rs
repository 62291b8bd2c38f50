//! `hash_many` against a `blake3::hash` loop, per blob size, in bytes/s.
//!
//! Run with `cargo bench --bench hash_many`. Each case hashes about 4 MiB of
//! generated blobs; criterion reports throughput so the rows compare
//! directly with the baseline measured in the same run.

use std::time::Duration;

use blake3_batch::{CpuBackend, Engine};
use criterion::{criterion_group, criterion_main, BenchmarkId, Criterion, Throughput};

const CASE_BYTES: usize = 4 << 20;

/// Equal-length blobs, or lengths uniform in 1..=1024.
fn blobs(size: Option<usize>) -> Vec<Vec<u8>> {
    let mut state = 0x2545_F491_4F6C_DD1Du64;
    let mut next = move || {
        state ^= state << 13;
        state ^= state >> 7;
        state ^= state << 17;
        state
    };
    let mut blobs = Vec::new();
    let mut total = 0;
    while total < CASE_BYTES {
        let len = size.unwrap_or_else(|| 1 + (next() % 1024) as usize);
        blobs.push((0..len).map(|_| next() as u8).collect::<Vec<u8>>());
        total += len;
    }
    blobs
}

fn bench(c: &mut Criterion) {
    let cases = [
        ("64", Some(64)),
        ("256", Some(256)),
        ("1024", Some(1024)),
        ("4096", Some(4096)),
        ("mixed-1..=1024", None),
    ];
    let mut group = c.benchmark_group("hash_many");
    group
        .sample_size(10)
        .warm_up_time(Duration::from_millis(500))
        .measurement_time(Duration::from_secs(2));
    for (label, size) in cases {
        let blobs = blobs(size);
        let bytes: usize = blobs.iter().map(Vec::len).sum();
        group.throughput(Throughput::Bytes(bytes as u64));
        group.bench_with_input(
            BenchmarkId::new("blake3_hash_loop", label),
            &blobs,
            |b, blobs| {
                b.iter(|| {
                    blobs
                        .iter()
                        .map(|blob| blake3::hash(blob))
                        .collect::<Vec<_>>()
                })
            },
        );
        for cpu in CpuBackend::supported() {
            let engine = Engine::builder()
                .cpu_backend(cpu)
                .threads(1)
                .build()
                .expect("supported");
            let name = format!("{cpu}_1_thread");
            group.bench_with_input(BenchmarkId::new(name, label), &blobs, |b, blobs| {
                b.iter(|| engine.hash_many(blobs).expect("CPU batch"))
            });
        }
        group.bench_with_input(
            BenchmarkId::new("hash_many_all_threads", label),
            &blobs,
            |b, blobs| b.iter(|| blake3_batch::hash_many(blobs)),
        );
    }
    group.finish();
}

criterion_group!(benches, bench);
criterion_main!(benches);
