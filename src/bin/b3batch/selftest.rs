//! `b3batch selftest`: random batches through every backend this machine
//! has, every digest checked against the `blake3` crate. A soak test users
//! run on their own hardware; a mismatch prints the seed that reproduces it.

use std::io::{self, Write};
use std::process::ExitCode;
use std::time::{Duration, Instant};

use blake3_batch::{Backend, CpuBackend, Engine, Mode};
use clap::Args;
use rayon::prelude::*;

use crate::names::hex;
use crate::options::{BackendArg, CliError, GlobalArgs};
use crate::random::Random;

/// `b3batch selftest` options.
#[derive(Args)]
pub struct SelftestArgs {
    /// How long to run, in seconds. Every batch runs on every backend.
    #[arg(long, default_value_t = 10.0)]
    seconds: f64,
    /// Seed of the first batch (default: from the clock). A failure prints
    /// the seed of its batch: `--seed` with it (and the same `--backend`)
    /// runs that batch first.
    #[arg(long, value_parser = parse_seed)]
    seed: Option<u64>,
    /// Most blobs in one batch.
    #[arg(long, default_value_t = 1_000_000)]
    max_blobs: usize,
    /// Most bytes in one batch, in MiB (bounds memory: about three times this).
    #[arg(long, default_value_t = 64)]
    max_mib: usize,
}

/// Set (to anything), every batch's first digest has a bit flipped after
/// hashing: only for the test that shows a mismatch is caught.
const FLIP_BIT_ENV: &str = "B3BATCH_SELFTEST_FLIP_BIT";

/// One engine under test.
struct Target {
    name: String,
    engine: Engine,
    batches: u64,
    blobs: u64,
    bytes: u64,
    mismatches: u64,
}

/// How a batch's blobs reach the engine.
#[derive(Clone, Copy, Debug)]
enum Layout {
    Slices,
    PackedU32,
    PackedU64,
    Records,
}

/// A reproducible random batch: blobs in one buffer, plus how to pass them.
struct Batch {
    data: Vec<u8>,
    /// Where each blob starts and ends in `data`; the first may start above 0.
    bounds: Vec<usize>,
    layout: Layout,
    key: [u8; 32],
    context: String,
    mode: u8,
}

pub fn run(args: &SelftestArgs, global: &GlobalArgs) -> Result<ExitCode, CliError> {
    let mut targets = targets(global)?;
    if targets.is_empty() {
        return Err(CliError::Message(
            "no backend to test: --backend gpu found no GPU adapter".to_owned(),
        ));
    }
    let seed = args.seed.unwrap_or_else(|| {
        std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map(|time| time.as_nanos() as u64)
            .unwrap_or(1)
    });
    let mut out = io::stdout().lock();
    let names: Vec<String> = targets.iter().map(|target| target.name.clone()).collect();
    writeln!(
        out,
        "selftest: seed {seed:#x}, {} s, {}",
        args.seconds,
        names.join(", ")
    )?;
    let max_bytes = args.max_mib.max(1) << 20;
    let deadline = Instant::now() + Duration::from_secs_f64(args.seconds.max(0.0));
    let mut next_report = Instant::now() + Duration::from_secs(10);
    let mut batch_seed = seed;
    let mut failed = false;
    let mut first = true;
    while first || Instant::now() < deadline {
        first = false;
        let batch = Batch::generate(batch_seed, args.max_blobs, max_bytes);
        // One reference for every engine: blake3 on one blob at a time costs
        // more than most engines' whole batch.
        let expected = batch.references();
        for target in &mut targets {
            let check = batch.check(&target.engine, &expected);
            target.batches += 1;
            target.blobs += batch.count() as u64;
            target.bytes += batch.data.len() as u64;
            if let Err(message) = check {
                target.mismatches += 1;
                failed = true;
                writeln!(
                    out,
                    "MISMATCH on {}: {message}\n  batch seed {batch_seed:#x}, {:?}, {} blobs; \
                     reproduce with `b3batch{} selftest --seed {batch_seed:#x} --seconds 0`",
                    target.name,
                    batch.layout,
                    batch.count(),
                    backend_flag(global)
                )?;
            }
        }
        batch_seed = splitmix(batch_seed);
        if !global.quiet && Instant::now() >= next_report {
            let blobs: u64 = targets.iter().map(|target| target.blobs).sum();
            writeln!(out, "  … {blobs} blobs checked")?;
            next_report += Duration::from_secs(10);
        }
    }
    let width = names.iter().map(|name| name.len()).max().unwrap_or(0) + 2;
    writeln!(
        out,
        "{:<width$}{:>10}{:>16}{:>18}{:>12}",
        "backend", "batches", "blobs", "bytes", "mismatches"
    )?;
    for target in &targets {
        writeln!(
            out,
            "{:<width$}{:>10}{:>16}{:>18}{:>12}",
            target.name, target.batches, target.blobs, target.bytes, target.mismatches
        )?;
    }
    let total: u64 = targets.iter().map(|target| target.blobs).sum();
    let mismatches: u64 = targets.iter().map(|target| target.mismatches).sum();
    writeln!(
        out,
        "{total} blobs checked, {mismatches} batches with a mismatch"
    )?;
    Ok(if failed {
        ExitCode::FAILURE
    } else {
        ExitCode::SUCCESS
    })
}

fn backend_flag(global: &GlobalArgs) -> &'static str {
    match global.backend {
        BackendArg::Auto => "",
        BackendArg::Cpu => " --backend cpu",
        BackendArg::Gpu => " --backend gpu",
    }
}

/// Every CPU backend this machine runs, on one thread and on all (or
/// `--threads`), and the GPU when there is an adapter.
fn targets(global: &GlobalArgs) -> Result<Vec<Target>, CliError> {
    let mut engines = Vec::new();
    if global.backend != BackendArg::Gpu {
        // 0 asks for the default, as everywhere.
        let wide = global
            .threads
            .first()
            .copied()
            .filter(|&threads| threads != 0);
        for cpu in CpuBackend::supported() {
            for threads in [Some(1), wide] {
                let mut builder = Engine::builder().backend(Backend::Cpu).cpu_backend(cpu);
                if let Some(threads) = threads {
                    builder = builder.threads(threads);
                }
                let engine = builder
                    .build()
                    .map_err(|error| CliError::Message(error.to_string()))?;
                engines.push((format!("{cpu} {}t", engine.threads()), engine));
            }
        }
    }
    if global.backend != BackendArg::Cpu {
        match global.builder(Backend::Gpu).build() {
            Ok(engine) => {
                let name = engine
                    .gpu_info()
                    .map(|gpu| format!("gpu ({})", gpu.name))
                    .unwrap_or_else(|| "gpu".to_owned());
                engines.push((name, engine));
            }
            Err(error) if global.backend == BackendArg::Gpu => {
                return Err(CliError::Message(error.to_string()))
            }
            Err(_) => {}
        }
    }
    Ok(engines
        .into_iter()
        .map(|(name, engine)| Target {
            name,
            engine,
            batches: 0,
            blobs: 0,
            bytes: 0,
            mismatches: 0,
        })
        .collect())
}

impl Batch {
    /// Up to `max_blobs` blobs and `max_bytes` bytes: most at most 1 KiB
    /// (and often at a lane or block edge), some up to 16 KiB, a few up to
    /// 70 000 bytes; sizes log-uniform so small batches are common too.
    fn generate(seed: u64, max_blobs: usize, max_bytes: usize) -> Batch {
        let mut random = Random(seed | 1);
        let layout = match random.below(4) {
            0 => Layout::Slices,
            1 => Layout::PackedU32,
            2 => Layout::PackedU64,
            _ => Layout::Records,
        };
        let count = if random.below(50) == 0 {
            0
        } else {
            let scale = (max_blobs.max(1) as f64).ln();
            ((random.unit() * scale).exp() as usize).min(max_blobs)
        };
        // Most batches hold small blobs only, the kind the lanes are for;
        // some mix in chunked blobs, a few are mostly large.
        let profile = match random.below(10) {
            0..=5 => Profile::Small,
            6..=8 => Profile::Mixed,
            _ => Profile::Large,
        };
        let record_length = random_length(&mut random, profile);
        let start = if random.below(2) == 0 {
            0
        } else {
            random.below(100) as usize
        };
        let mut bounds = vec![start];
        let mut end = start;
        for _ in 0..count {
            let length = match layout {
                Layout::Records => record_length,
                _ => random_length(&mut random, profile),
            };
            if end + length > max_bytes {
                break;
            }
            end += length;
            bounds.push(end);
        }
        let mut data = vec![0u8; end];
        random.fill(&mut data);
        let mut key = [0u8; 32];
        random.fill(&mut key);
        Batch {
            data,
            bounds,
            layout,
            key,
            context: format!("b3batch selftest {}", random.next()),
            mode: random.below(3) as u8,
        }
    }

    fn count(&self) -> usize {
        self.bounds.len() - 1
    }

    fn mode(&self) -> Mode<'_> {
        match self.mode {
            0 => Mode::Hash,
            1 => Mode::KeyedHash(&self.key),
            _ => Mode::DeriveKey(&self.context),
        }
    }

    fn blob(&self, index: usize) -> &[u8] {
        &self.data[self.bounds[index]..self.bounds[index + 1]]
    }

    fn reference(&self, blob: &[u8]) -> [u8; 32] {
        match self.mode {
            0 => *blake3::hash(blob).as_bytes(),
            1 => *blake3::keyed_hash(&self.key, blob).as_bytes(),
            _ => blake3::derive_key(&self.context, blob),
        }
    }

    /// `blake3`'s digest of every blob, on every core.
    fn references(&self) -> Vec<[u8; 32]> {
        (0..self.count())
            .into_par_iter()
            .map(|index| self.reference(self.blob(index)))
            .collect()
    }

    /// Hashes the batch on `engine` and compares every digest with
    /// `blake3`'s (`expected`); the first difference, or the engine's error,
    /// as a message.
    fn check(&self, engine: &Engine, expected: &[[u8; 32]]) -> Result<(), String> {
        let count = self.count();
        let mut out = vec![[0u8; 32]; count];
        let hashed = match self.layout {
            Layout::Slices => {
                let slices: Vec<&[u8]> = (0..count).map(|index| self.blob(index)).collect();
                engine.hash_slices_into(self.mode(), &slices, &mut out)
            }
            Layout::PackedU32 => {
                let offsets: Vec<u32> = self.bounds.iter().map(|&b| b as u32).collect();
                engine.hash_packed_into(self.mode(), &self.data, &offsets, &mut out)
            }
            Layout::PackedU64 => {
                let offsets: Vec<u64> = self.bounds.iter().map(|&b| b as u64).collect();
                engine.hash_packed_into(self.mode(), &self.data, &offsets, &mut out)
            }
            Layout::Records => {
                let size = if count == 0 {
                    1
                } else {
                    self.bounds[1] - self.bounds[0]
                };
                if size == 0 {
                    // Records of 0 bytes are not a layout; hash them as slices.
                    let slices: Vec<&[u8]> = vec![&[]; count];
                    engine.hash_slices_into(self.mode(), &slices, &mut out)
                } else if count == 0 {
                    Ok(())
                } else {
                    let data = &self.data[self.bounds[0]..];
                    engine.hash_records_into(self.mode(), data, size, &mut out)
                }
            }
        };
        hashed.map_err(|error| format!("the engine failed: {error}"))?;
        // For the test that proves a wrong digest is caught and reported.
        if std::env::var_os(FLIP_BIT_ENV).is_some() {
            if let Some(digest) = out.first_mut() {
                digest[0] ^= 1;
            }
        }
        let wrong = (0..count)
            .into_par_iter()
            .find_first(|&index| out[index] != expected[index]);
        match wrong {
            None => Ok(()),
            Some(index) => Err(format!(
                "blob {index} ({} bytes) hashed to {}, blake3 gives {}",
                self.blob(index).len(),
                hex(&out[index]),
                hex(&expected[index])
            )),
        }
    }
}

/// Which lengths a batch draws from.
#[derive(Clone, Copy)]
enum Profile {
    /// Up to 1 KiB, a third of them at a block or chunk edge.
    Small,
    /// 70% small, 25% up to 16 KiB, 5% up to 70 000 bytes.
    Mixed,
    /// Up to 70 000 bytes.
    Large,
}

fn random_length(random: &mut Random, profile: Profile) -> usize {
    const EDGES: [usize; 12] = [0, 1, 63, 64, 65, 127, 128, 129, 1023, 1024, 1025, 2048];
    let roll = match profile {
        Profile::Small => random.below(70),
        Profile::Mixed => random.below(100),
        Profile::Large => 95,
    };
    match roll {
        0..=22 => EDGES[random.below(EDGES.len() as u64) as usize].min(match profile {
            Profile::Small => 1024,
            _ => usize::MAX,
        }),
        23..=69 => random.below(1025) as usize,
        70..=94 => 1025 + random.below(16384 - 1024) as usize,
        _ => random.below(70_001) as usize,
    }
}

/// A seed in decimal or `0x` hexadecimal, as printed.
fn parse_seed(text: &str) -> Result<u64, String> {
    let parsed = match text.strip_prefix("0x") {
        Some(hex) => u64::from_str_radix(hex, 16),
        None => text.parse(),
    };
    parsed.map_err(|error| format!("{text:?} is not a seed (decimal or 0x hex): {error}"))
}

fn splitmix(mut x: u64) -> u64 {
    x = x.wrapping_add(0x9e37_79b9_7f4a_7c15);
    x = (x ^ (x >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
    x = (x ^ (x >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
    x ^ (x >> 31)
}
