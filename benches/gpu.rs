//! GPU throughput end to end, against the `blake3::hash` loop measured in the
//! same run, and where one GPU batch spends its time.
//!
//! `cargo bench --bench gpu`. Needs an adapter (lavapipe counts); without
//! one it prints why and measures nothing. After the criterion rows it
//! hashes 1 Mi blobs of 1 KiB a few times and prints the median split of
//! one batch into pack, upload, dispatch, download and readback.

use std::time::Duration;

use blake3_batch::{Backend, Engine, GpuTimings, Mode};
use criterion::{criterion_group, criterion_main, BenchmarkId, Criterion, Throughput};

/// The length of blob `index` in a generated batch.
type BlobLength = fn(usize) -> usize;

/// Blobs per criterion batch.
const BLOBS: usize = 64 * 1024;

fn gpu_engine() -> Option<Engine> {
    match Engine::builder().backend(Backend::Gpu).build() {
        Ok(engine) => Some(engine),
        Err(error) => {
            println!("gpu bench skipped: {error}");
            None
        }
    }
}

/// `count` blobs of `len(i)` bytes, packed.
fn packed(count: usize, len: impl Fn(usize) -> usize) -> (Vec<u8>, Vec<u64>) {
    let mut data = Vec::new();
    let mut offsets = vec![0u64];
    for index in 0..count {
        data.extend((0..len(index)).map(|byte| (index * 131 + byte * 7) as u8));
        offsets.push(data.len() as u64);
    }
    (data, offsets)
}

fn throughput(c: &mut Criterion) {
    let Some(engine) = gpu_engine() else { return };
    let mut group = c.benchmark_group("gpu");
    group
        .sample_size(10)
        .warm_up_time(Duration::from_millis(300))
        .measurement_time(Duration::from_secs(2));
    let sizes: [(&str, BlobLength); 4] = [
        ("64", |_| 64),
        ("256", |_| 256),
        ("1024", |_| 1024),
        ("mixed-1..=1024", |index| 1 + (index * 7919) % 1024),
    ];
    for (label, len) in sizes {
        let (data, offsets) = packed(BLOBS, len);
        let mut out = vec![[0u8; 32]; BLOBS];
        group.throughput(Throughput::Bytes(data.len() as u64));
        group.bench_function(BenchmarkId::new("blake3_hash_loop", label), |b| {
            b.iter(|| {
                for (slot, window) in out.iter_mut().zip(offsets.windows(2)) {
                    *slot = *blake3::hash(&data[window[0] as usize..window[1] as usize]).as_bytes();
                }
            })
        });
        group.bench_function(BenchmarkId::new("gpu_end_to_end", label), |b| {
            b.iter(|| engine.hash_packed_into(Mode::Hash, &data, &offsets, &mut out))
        });
    }
    group.finish();
}

/// Prints the median split of one batch of 1 Mi blobs of 1 KiB (64 Ki when
/// run as a test, to stay quick).
fn split(_: &mut Criterion) {
    let Some(engine) = gpu_engine() else { return };
    let benchmarking = std::env::args().any(|arg| arg == "--bench");
    let (count, runs) = if benchmarking {
        (1 << 20, 5)
    } else {
        (BLOBS, 1)
    };
    let (data, offsets) = packed(count, |_| 1024);
    let mut out = vec![[0u8; 32]; count];
    let mut timings: Vec<GpuTimings> = (0..runs)
        .map(|_| {
            engine
                .hash_packed_into(Mode::Hash, &data, &offsets, &mut out)
                .expect("GPU batch");
            engine.last_gpu_timings().expect("timings")
        })
        .collect();
    assert_eq!(
        out[count - 1],
        *blake3::hash(&data[data.len() - 1024..]).as_bytes()
    );
    timings.sort_by_key(|timing| timing.total);
    let median = &timings[timings.len() / 2];
    let info = engine.gpu_info().expect("GPU engine");
    println!("gpu split: {count} blobs x 1 KiB on {info}");
    println!("{}", describe(median));
}

fn describe(timings: &GpuTimings) -> String {
    let ms = |duration: Duration| duration.as_secs_f64() * 1e3;
    let share = |duration: Duration| 100.0 * duration.as_secs_f64() / timings.total.as_secs_f64();
    let mut lines = vec![format!(
        "  total {:.1} ms over {} slabs ({:.2} GB/s)",
        ms(timings.total),
        timings.slabs,
        timings.bytes_uploaded as f64 / timings.total.as_secs_f64() / 1e9
    )];
    let mut stage = |name: &str, duration: Duration, note: &str| {
        lines.push(format!(
            "  {name:<9} {:>8.1} ms {:>5.1}%  {note}",
            ms(duration),
            share(duration)
        ));
    };
    stage("pack", timings.pack, "CPU, into mapped staging memory");
    if let (Some(upload), Some(dispatch), Some(download)) =
        (timings.upload, timings.dispatch, timings.download)
    {
        stage("upload", upload, "GPU copy, staging to storage");
        stage("dispatch", dispatch, "GPU shader");
        stage("download", download, "GPU copy, digests to readback");
    }
    stage(
        "readback",
        timings.readback,
        "CPU, mapped digests to the caller's slice",
    );
    stage("wait", timings.wait, "CPU idle, waiting on the GPU");
    if let Some(share) = timings.transfer_share() {
        lines.push(format!(
            "  transfer share (upload + download + readback) / total: {:.1}%",
            100.0 * share
        ));
    }
    lines.join("\n")
}

criterion_group!(benches, throughput, split);
criterion_main!(benches);
