//! CPU throughput per backend and blob size, against the references measured
//! in the same run: a `blake3::hash` loop, `p3-blake3`'s batch hasher (equal
//! lengths only) and the ceiling, `blake3::Hasher::update` over one 64 MiB
//! input on one thread.
//!
//! Then long extended outputs of short blobs against a loop of `blake3`'s
//! `finalize_xof`, and batches of a few blobs each against the
//! `blake3::hash` loop.
//!
//! `cargo bench --bench hash_many`; criterion prints bytes/s for every row,
//! so ratios against the baselines come from one run, and compressions/s
//! for the `compressions/` rows (1 KiB and mixed lengths). Every batch of
//! the throughput rows holds 64 Ki blobs, as the speed targets are stated
//! for (4 MiB at 64 B, 1 GiB at 16 KiB); batches over 64 MiB take ten timed
//! runs each (flat sampling), so the large sizes cost seconds, not minutes,
//! per row.

use std::time::Duration;

use blake3_batch::{CpuBackend, Engine, Mode};
use criterion::{
    criterion_group, criterion_main, BenchmarkId, Criterion, SamplingMode, Throughput,
};
use p3_symmetric::CryptographicHasher;

const BLOBS: usize = 64 * 1024;
/// From this size a batch takes flat sampling: a linear sample of ten would
/// run a 1 GiB batch 55 times per row.
const LARGE_BATCH: usize = 64 << 20;
/// Timing per row for batches up to [`LARGE_BATCH`].
const MEASUREMENT_TIME: Duration = Duration::from_secs(1);

/// A batch: packed data and Arrow-style offsets.
struct Batch {
    label: &'static str,
    data: Vec<u8>,
    offsets: Vec<u64>,
    /// The length of every blob, if they are equal.
    equal_len: Option<usize>,
}

impl Batch {
    fn new(label: &'static str, shortest: usize, longest: usize) -> Batch {
        let lengths = |random: u64| shortest + (random % (longest - shortest + 1) as u64) as usize;
        let mut state = 0x2545_F491_4F6C_DD1Du64;
        let mut next = move || {
            state ^= state << 13;
            state ^= state >> 7;
            state ^= state << 17;
            state
        };
        let mut offsets = vec![0u64];
        let mut total = 0;
        while offsets.len() <= BLOBS {
            total += lengths(next());
            offsets.push(total as u64);
        }
        let mut data = Vec::with_capacity(total + 8);
        while data.len() < total {
            data.extend_from_slice(&next().to_le_bytes());
        }
        data.truncate(total);
        Batch {
            label,
            data,
            offsets,
            equal_len: (shortest == longest).then_some(shortest),
        }
    }

    fn blob(&self, index: usize) -> &[u8] {
        &self.data[self.offsets[index] as usize..self.offsets[index + 1] as usize]
    }

    fn count(&self) -> usize {
        self.offsets.len() - 1
    }
}

/// Each row's blob lengths: label, shortest, longest (uniform in between).
const SHAPES: [(&str, usize, usize); 7] = [
    ("64", 64, 64),
    ("256", 256, 256),
    ("1024", 1024, 1024),
    ("4096", 4096, 4096),
    ("16384", 16384, 16384),
    ("mixed-1..=1024", 1, 1024),
    ("mixed-1025..=16384", 1025, 16384),
];

/// The rows that also get a `compressions/` row, on the best backend and
/// one thread: the target for mixed lengths is stated in compressions/s
/// against the 1 KiB rate, so the ratio of these two rows is that figure,
/// with no conversion from bytes/s by hand.
const COMPRESSION_ROWS: [&str; 2] = ["1024", "mixed-1..=1024"];

/// The batches, each built when its rows come up, so that one at a time is
/// in memory (up to 1 GiB) rather than all of them (about 2 GB).
fn batches() -> impl Iterator<Item = Batch> {
    SHAPES
        .into_iter()
        .map(|(label, shortest, longest)| Batch::new(label, shortest, longest))
}

/// An engine on one thread per CPU backend this machine runs, named for
/// its rows (`avx512_1_thread`, …).
fn one_thread_engines() -> Vec<(String, Engine)> {
    CpuBackend::supported()
        .into_iter()
        .map(|cpu| {
            let engine = Engine::builder()
                .cpu_backend(cpu)
                .threads(1)
                .build()
                .expect("supported");
            (format!("{cpu}_1_thread"), engine)
        })
        .collect()
}

/// A benchmark group named `name` with the timing every row but the
/// large batches' shares.
fn configure<'c>(
    c: &'c mut Criterion,
    name: &str,
) -> criterion::BenchmarkGroup<'c, criterion::measurement::WallTime> {
    let mut group = c.benchmark_group(name);
    group
        .sample_size(10)
        .warm_up_time(Duration::from_millis(300))
        .measurement_time(MEASUREMENT_TIME);
    group
}

fn ceiling(c: &mut Criterion) {
    let input = vec![0x5Au8; 64 << 20];
    let mut group = configure(c, "cpu");
    group.throughput(Throughput::Bytes(input.len() as u64));
    group.bench_function("ceiling/blake3_update_64MiB_1_thread", |b| {
        b.iter(|| {
            let mut hasher = blake3::Hasher::new();
            hasher.update(&input);
            hasher.finalize()
        })
    });
    group.finish();
}

fn backends(c: &mut Criterion) {
    let mut group = configure(c, "cpu");
    for batch in batches() {
        let mut out = vec![[0u8; 32]; batch.count()];
        let bytes = Throughput::Bytes(batch.data.len() as u64);
        group.throughput(bytes.clone());
        if batch.data.len() > LARGE_BATCH {
            // Ten runs of the slowest such row, the loop over 540 MB of
            // 1025..=16384 B at ~2 GB/s, need about 3 s.
            group
                .sampling_mode(SamplingMode::Flat)
                .measurement_time(Duration::from_secs(3));
        } else {
            group
                .sampling_mode(SamplingMode::Auto)
                .measurement_time(MEASUREMENT_TIME);
        }
        group.bench_function(BenchmarkId::new("blake3_hash_loop", batch.label), |b| {
            b.iter(|| {
                for (index, slot) in out.iter_mut().enumerate() {
                    *slot = *blake3::hash(batch.blob(index)).as_bytes();
                }
            })
        });
        if batch.equal_len.is_some() {
            group.bench_function(BenchmarkId::new("p3_blake3_hash_many", batch.label), |b| {
                b.iter(|| p3_blake3::Blake3.hash_many(&batch.data, &mut out))
            });
        }
        for (name, engine) in one_thread_engines() {
            group.bench_function(BenchmarkId::new(name, batch.label), |b| {
                b.iter(|| {
                    engine.hash_packed_into(Mode::Hash, &batch.data, &batch.offsets, &mut out)
                })
            });
        }
        if COMPRESSION_ROWS.contains(&batch.label) {
            // The same work as the best backend's row above, reported in
            // compressions/s (criterion's elements/s).
            let engine = Engine::builder().threads(1).build().expect("CPU engine");
            let name = format!("compressions/{}_1_thread", engine.cpu_backend());
            group.throughput(Throughput::Elements(compressions(&batch)));
            group.bench_function(BenchmarkId::new(name, batch.label), |b| {
                b.iter(|| {
                    engine.hash_packed_into(Mode::Hash, &batch.data, &batch.offsets, &mut out)
                })
            });
            group.throughput(bytes);
        }
        // The crate's front door: slices in, `Vec<Hash>` out, every core.
        let slices: Vec<&[u8]> = (0..batch.count()).map(|index| batch.blob(index)).collect();
        group.bench_function(BenchmarkId::new("hash_many", batch.label), |b| {
            b.iter(|| blake3_batch::hash_many(&slices))
        });
        let engine = Engine::builder().threads(2).build().expect("CPU engine");
        let name = format!("{}_2_threads", engine.cpu_backend());
        group.bench_function(BenchmarkId::new(name, batch.label), |b| {
            b.iter(|| engine.hash_packed_into(Mode::Hash, &batch.data, &batch.offsets, &mut out))
        });
    }
    group.finish();
}

/// The compressions a batch of blobs of at most a chunk each costs: one per
/// started block, and one for an empty blob.
fn compressions(batch: &Batch) -> u64 {
    (0..batch.count())
        .map(|index| {
            let len = batch.blob(index).len();
            assert!(
                len <= blake3::CHUNK_LEN,
                "counted for blobs of at most a chunk"
            );
            len.div_ceil(blake3::BLOCK_LEN).max(1) as u64
        })
        .sum()
}

/// The blob shapes of the extended-output rows: blobs of up to a chunk and
/// trees of up to 16, whose outputs come from the lanes.
const EXTENDED_SHAPES: [&str; 5] = ["64", "1024", "4096", "mixed-1..=1024", "mixed-1025..=16384"];
/// Output bytes per blob in the extended-output rows: two output blocks'
/// worth past the digest, the length of a 512-bit key.
const EXTENDED_LENGTH: usize = 64;

/// Extended output (`hash_packed_xof_into`, 64 bytes a blob) per backend
/// on one thread, against a loop of `blake3`'s `finalize_xof` and the
/// best backend's digests of the same batch, in the same run.
fn extended(c: &mut Criterion) {
    let mut group = configure(c, "xof64");
    for batch in batches().filter(|batch| EXTENDED_SHAPES.contains(&batch.label)) {
        let mut out = vec![0u8; batch.count() * EXTENDED_LENGTH];
        group.throughput(Throughput::Bytes(batch.data.len() as u64));
        group.bench_function(BenchmarkId::new("blake3_xof_loop", batch.label), |b| {
            b.iter(|| {
                for (index, output) in out.chunks_exact_mut(EXTENDED_LENGTH).enumerate() {
                    let mut hasher = blake3::Hasher::new();
                    hasher.update(batch.blob(index)).finalize_xof().fill(output);
                }
            })
        });
        for (name, engine) in one_thread_engines() {
            group.bench_function(BenchmarkId::new(name, batch.label), |b| {
                b.iter(|| {
                    let (data, offsets) = (&batch.data, &batch.offsets);
                    engine.hash_packed_xof_into(
                        Mode::Hash,
                        data,
                        offsets,
                        EXTENDED_LENGTH,
                        &mut out,
                    )
                })
            });
        }
        let engine = Engine::builder().threads(1).build().expect("CPU engine");
        let mut digests = vec![[0u8; 32]; batch.count()];
        let name = format!("digests/{}_1_thread", engine.cpu_backend());
        group.bench_function(BenchmarkId::new(name, batch.label), |b| {
            b.iter(|| {
                engine.hash_packed_into(Mode::Hash, &batch.data, &batch.offsets, &mut digests)
            })
        });
    }
    group.finish();
}

/// Output lengths of the long-output rows: 8 and 16 whole blocks (whole
/// passes of `blake3`'s output reader, which makes the 16 for blobs of up
/// to two blocks), 10 between them, and 64 blocks (past what the lanes
/// make).
const LONG_OUTPUTS: [usize; 4] = [512, 640, 1024, 4096];

/// Long extended outputs of 4096 short blobs on one thread, against a loop
/// of `blake3`'s `finalize_xof` in the same run: where the output costs
/// more than the blob, whichever of the lanes and `blake3` makes it faster.
fn long_outputs(c: &mut Criterion) {
    let mut group = configure(c, "long_outputs");
    let engine = Engine::builder().threads(1).build().expect("CPU engine");
    for size in [64, 256] {
        let blobs: Vec<Vec<u8>> = (0..4096).map(|index| vec![index as u8; size]).collect();
        for length in LONG_OUTPUTS {
            let mut out = vec![0u8; blobs.len() * length];
            let label = format!("{size}B_{length}");
            group.throughput(Throughput::Bytes((blobs.len() * (size + length)) as u64));
            group.bench_function(BenchmarkId::new("blake3_xof_loop", &label), |b| {
                b.iter(|| {
                    for (blob, output) in blobs.iter().zip(out.chunks_exact_mut(length)) {
                        blake3::Hasher::new()
                            .update(blob)
                            .finalize_xof()
                            .fill(output);
                    }
                })
            });
            let name = format!("{}_1_thread", engine.cpu_backend());
            group.bench_function(BenchmarkId::new(name, &label), |b| {
                b.iter(|| engine.hash_slices_xof_into(Mode::Hash, &blobs, length, &mut out))
            });
        }
    }
    group.finish();
}

/// Blobs in a small batch each: what the few-blob batches of a stream or
/// of a tiny Arrow chunk cost.
const SMALL_BATCHES: [usize; 5] = [2, 3, 5, 8, 16];

/// 4096 blobs hashed a few at a time ([`SMALL_BATCHES`]) on one thread,
/// against a `blake3::hash` loop over the same blobs in the same run: the
/// rows where the engine hashes blob by blob (setting up its lanes would
/// cost more) and those where its lanes pay off.
fn small_batches(c: &mut Criterion) {
    let mut group = configure(c, "small_batches");
    let engine = Engine::builder().threads(1).build().expect("CPU engine");
    for size in [64, 1024] {
        let blobs: Vec<Vec<u8>> = (0..4096u32)
            .map(|index| index.to_le_bytes().repeat(size / 4))
            .collect();
        let mut out = vec![[0u8; 32]; blobs.len()];
        group.throughput(Throughput::Bytes((blobs.len() * size) as u64));
        group.bench_function(BenchmarkId::new("blake3_hash_loop", size), |b| {
            b.iter(|| {
                for (blob, slot) in blobs.iter().zip(out.iter_mut()) {
                    *slot = *blake3::hash(blob).as_bytes();
                }
            })
        });
        for count in SMALL_BATCHES {
            let name = format!("batches_of_{count}");
            group.bench_function(BenchmarkId::new(name, size), |b| {
                b.iter(|| {
                    for (batch, slots) in blobs.chunks(count).zip(out.chunks_mut(count)) {
                        engine
                            .hash_slices_into(Mode::Hash, batch, slots)
                            .expect("hashed");
                    }
                })
            });
        }
    }
    group.finish();
}

criterion_group!(
    benches,
    ceiling,
    backends,
    extended,
    long_outputs,
    small_batches
);
criterion_main!(benches);
