//! `b3batch bench`: throughput of the engine against a `blake3::hash` loop on
//! generated blobs, measured in the same run.

use std::time::{Duration, Instant};

use blake3_batch::{CpuBackend, Engine, Mode};
use clap::Args;

/// Options of `b3batch bench`.
#[derive(Args)]
pub struct BenchArgs {
    /// Blob sizes in bytes; `mixed` means lengths uniform in 1..=1024.
    #[arg(long, value_delimiter = ',', default_value = "64,256,1024,4096,mixed")]
    sizes: Vec<SizeSpec>,
    /// Input bytes per case (rounded to whole blobs).
    #[arg(long, default_value_t = 32 << 20)]
    bytes: usize,
    /// Timed repetitions per case; the median is reported.
    #[arg(long, default_value_t = 5)]
    reps: usize,
    /// Threads for the engine (default: every core).
    #[arg(long)]
    threads: Option<usize>,
    /// Force a CPU backend (portable, ...).
    #[arg(long)]
    cpu: Option<CpuBackend>,
}

/// One row of the table: equal-length blobs, or mixed lengths.
#[derive(Clone, Copy, Debug)]
enum SizeSpec {
    Fixed(usize),
    Mixed,
}

impl std::str::FromStr for SizeSpec {
    type Err = String;

    fn from_str(text: &str) -> Result<Self, String> {
        if text.eq_ignore_ascii_case("mixed") {
            return Ok(SizeSpec::Mixed);
        }
        text.parse::<usize>()
            .map(SizeSpec::Fixed)
            .map_err(|_| format!("blob size {text:?} is neither a number of bytes nor `mixed`"))
    }
}

impl SizeSpec {
    fn label(self) -> String {
        match self {
            SizeSpec::Fixed(size) => format!("{size} B"),
            SizeSpec::Mixed => "1..=1024 B".to_owned(),
        }
    }

    /// Generates about `bytes` of input as packed data and offsets.
    fn generate(self, bytes: usize) -> (Vec<u8>, Vec<u64>) {
        let mut rng = XorShift(0x2545_F491_4F6C_DD1D);
        let mut offsets = vec![0u64];
        let mut total = 0usize;
        while total < bytes.max(1) {
            let len = match self {
                SizeSpec::Fixed(size) => size,
                SizeSpec::Mixed => 1 + (rng.next() % 1024) as usize,
            };
            total += len;
            offsets.push(total as u64);
            if len == 0 && offsets.len() > bytes / 64 + 1 {
                break;
            }
        }
        let data = (0..total).map(|_| rng.next() as u8).collect();
        (data, offsets)
    }
}

struct XorShift(u64);

impl XorShift {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        self.0
    }
}

/// Runs the benchmark and prints the table.
pub fn run(args: &BenchArgs) -> Result<(), String> {
    let mut builder = Engine::builder();
    if let Some(threads) = args.threads {
        builder = builder.threads(threads);
    }
    if let Some(cpu) = args.cpu {
        builder = builder.cpu_backend(cpu);
    }
    let engine = builder.build().map_err(|error| error.to_string())?;
    println!(
        "engine: cpu backend {} ({} lanes), {} threads; {} MiB per case, median of {}",
        engine.cpu_backend(),
        engine.lanes(),
        engine.threads(),
        args.bytes >> 20,
        args.reps.max(1),
    );
    let ceiling = ceiling_gbps(args.reps)?;
    println!("ceiling: blake3::Hasher::update over one 64 MiB input, 1 thread: {ceiling:.2} GB/s");
    println!(
        "{:<12} {:>10} {:>12} {:>12} {:>14} {:>9} {:>9}",
        "blobs", "count", "engine GB/s", "Mblobs/s", "hash loop GB/s", "speedup", "/ceiling"
    );
    for &size in &args.sizes {
        let (data, offsets) = size.generate(args.bytes);
        let count = offsets.len() - 1;
        let mut out = vec![[0u8; 32]; count];
        let engine_time = median(args.reps, || {
            engine
                .hash_packed_into(Mode::Hash, &data, &offsets, &mut out)
                .map_err(|error| error.to_string())
        })?;
        verify(&data, &offsets, &out)?;
        let loop_time = median(args.reps, || {
            for (slot, range) in out.iter_mut().zip(offsets.windows(2)) {
                *slot = *blake3::hash(&data[range[0] as usize..range[1] as usize]).as_bytes();
            }
            Ok(())
        })?;
        let gbps = |time: Duration| data.len() as f64 / time.as_secs_f64() / 1e9;
        println!(
            "{:<12} {:>10} {:>12.2} {:>12.1} {:>14.2} {:>8.2}x {:>8.2}x",
            size.label(),
            count,
            gbps(engine_time),
            count as f64 / engine_time.as_secs_f64() / 1e6,
            gbps(loop_time),
            loop_time.as_secs_f64() / engine_time.as_secs_f64(),
            gbps(engine_time) / ceiling,
        );
    }
    Ok(())
}

/// `blake3`'s own rate on one large input, single thread: the ceiling a
/// batch of small blobs is measured against.
fn ceiling_gbps(reps: usize) -> Result<f64, String> {
    let input = vec![0x5Au8; 64 << 20];
    let time = median(reps, || {
        let mut hasher = blake3::Hasher::new();
        hasher.update(&input);
        std::hint::black_box(hasher.finalize());
        Ok(())
    })?;
    Ok(input.len() as f64 / time.as_secs_f64() / 1e9)
}

/// Median wall time of `reps` runs after one warm-up run.
fn median(reps: usize, mut run: impl FnMut() -> Result<(), String>) -> Result<Duration, String> {
    run()?;
    let mut times = Vec::with_capacity(reps.max(1));
    for _ in 0..reps.max(1) {
        let start = Instant::now();
        run()?;
        times.push(start.elapsed());
    }
    times.sort_unstable();
    Ok(times[times.len() / 2])
}

/// Checks a spread of digests against `blake3::hash`; a mismatch aborts.
fn verify(data: &[u8], offsets: &[u64], out: &[[u8; 32]]) -> Result<(), String> {
    let step = (out.len() / 1000).max(1);
    for index in (0..out.len()).step_by(step).chain([out.len() - 1]) {
        let blob = &data[offsets[index] as usize..offsets[index + 1] as usize];
        if out[index] != *blake3::hash(blob).as_bytes() {
            return Err(format!(
                "digest mismatch at blob {index} ({} bytes): the engine is wrong, do not trust its output",
                blob.len()
            ));
        }
    }
    Ok(())
}
