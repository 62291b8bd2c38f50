//! Running one contestant on one batch: warm-up, timed repetitions, the
//! median and spread, and the digest check that makes a wrong engine abort
//! the benchmark.

use std::time::{Duration, Instant};

use blake3_batch::wgpu::{self, util::DeviceExt};
use blake3_batch::{Engine, GpuBlobs, GpuOffsets, Mode, PinnedBuffer};
use rayon::prelude::*;
use serde::{Deserialize, Serialize};

use super::cases::Case;

/// One column of the table.
pub enum Contestant {
    /// An engine (GPU, CPU with some threads, or Auto), by name.
    Engine(String, Engine),
    /// An engine hashing the case from a copy of its bytes in the engine's
    /// pinned buffer ([`pinned`]), its digests into another, by name.
    Pinned(String, Engine, PinnedBuffer),
    /// `blake3::hash` in a loop on one thread: what people use today.
    HashLoop,
    /// The same loop spread over every core with rayon.
    HashLoopAllCores,
}

impl Contestant {
    pub fn name(&self) -> String {
        match self {
            Contestant::Engine(name, _) | Contestant::Pinned(name, ..) => name.clone(),
            Contestant::HashLoop => "blake3 loop 1t".to_owned(),
            Contestant::HashLoopAllCores => {
                format!("blake3 loop {}t", rayon::current_num_threads())
            }
        }
    }

    /// The engine behind the column, if it is one.
    pub fn engine(&self) -> Option<&Engine> {
        match self {
            Contestant::Engine(_, engine) | Contestant::Pinned(_, engine, _) => Some(engine),
            _ => None,
        }
    }

    fn run(&self, case: &Case, out: &mut [[u8; 32]]) -> Result<(), String> {
        match self {
            Contestant::Engine(_, engine) => engine
                .hash_packed_into(Mode::Hash, &case.data, &case.offsets, out)
                .map_err(|error| error.to_string()),
            Contestant::Pinned(_, engine, buffer) => engine
                .hash_packed_into(Mode::Hash, buffer, &case.offsets, out)
                .map_err(|error| error.to_string()),
            Contestant::HashLoop => {
                for (index, slot) in out.iter_mut().enumerate() {
                    *slot = *blake3::hash(case.blob(index)).as_bytes();
                }
                Ok(())
            }
            Contestant::HashLoopAllCores => {
                out.par_iter_mut().enumerate().for_each(|(index, slot)| {
                    *slot = *blake3::hash(case.blob(index)).as_bytes();
                });
                Ok(())
            }
        }
    }
}

/// `engine`, named `name`, hashing the case from its pinned buffer; `None`
/// where the engine has no pinned memory to give.
pub fn pinned(name: &str, engine: &Engine, case: &Case) -> Result<Option<Contestant>, String> {
    let mut buffer = engine
        .pinned_buffer(case.data.len())
        .map_err(|error| error.to_string())?;
    if !buffer.is_pinned() {
        return Ok(None);
    }
    buffer.copy_from_slice(&case.data);
    Ok(Some(Contestant::Pinned(
        name.to_owned(),
        engine.clone(),
        buffer,
    )))
}

/// How long a GPU contestant runs untimed before its timed runs, at
/// least: a card idles at a fraction of its clock (an H200 at 345 MHz
/// against 1980) and a few short batches do not wake it; without this the
/// shader's figures on an H200 varied fivefold between runs.
const GPU_WARMUP: Duration = Duration::from_millis(500);

/// A contestant's measurement, and the GPU shader's own times of the timed
/// runs where it has them.
pub type Timed = (Measurement, Option<Vec<Duration>>);

/// A GPU engine's own stages over the timed runs, where it reports them:
/// packing on the CPU, the copy into device memory timed on the GPU, and
/// the GPU's part of the run from start to digests (in a split, the GPU's
/// share alone).
#[derive(Default)]
pub struct Stages {
    pub pack: Vec<Duration>,
    pub copy_in: Vec<Duration>,
    pub gpu_side: Vec<Duration>,
}

/// The name of the CPU column on `threads` threads.
pub fn cpu_column(threads: usize) -> String {
    format!("cpu {threads}t")
}

/// The widest CPU column among `results`: its threads and rate.
pub fn widest_cpu(results: &[Measurement]) -> Option<(usize, f64)> {
    results
        .iter()
        .filter_map(|result| {
            let threads = result.contestant.strip_prefix("cpu ")?.strip_suffix('t')?;
            Some((threads.parse::<usize>().ok()?, result.gb_per_sec))
        })
        .max_by_key(|(threads, _)| *threads)
}

/// One cell: timings and the rates derived from them.
#[derive(Clone, Debug, Serialize, Deserialize, PartialEq)]
pub struct Measurement {
    pub contestant: String,
    pub median_sec: f64,
    pub min_sec: f64,
    pub max_sec: f64,
    pub gb_per_sec: f64,
    pub mblobs_per_sec: f64,
    /// Against the single-thread `blake3::hash` loop of the same case.
    pub speedup: f64,
}

impl Measurement {
    pub fn from_times(contestant: String, case: &Case, mut times: Vec<Duration>) -> Measurement {
        times.sort_unstable();
        let seconds = |time: Duration| time.as_secs_f64().max(1e-9);
        let median = seconds(times[times.len() / 2]);
        Measurement {
            contestant,
            median_sec: median,
            min_sec: seconds(times[0]),
            max_sec: seconds(times[times.len() - 1]),
            gb_per_sec: case.data.len() as f64 / median / 1e9,
            mblobs_per_sec: case.count() as f64 / median / 1e6,
            speedup: 0.0,
        }
    }

    /// (max − min) / median: how much the repetitions disagreed.
    pub fn spread(&self) -> f64 {
        (self.max_sec - self.min_sec) / self.median_sec
    }
}

/// Times `contestant` on `case`: `warmup` untimed runs, then `reps` timed
/// ones; checks the digests of the last run. Also returns the GPU shader
/// times of the timed runs when the contestant is a GPU engine that can
/// time them.
pub fn measure(
    contestant: &Contestant,
    case: &Case,
    warmup: usize,
    reps: usize,
    inject_fault: bool,
) -> Result<(Timed, Stages), String> {
    let mut pinned_out = match contestant {
        Contestant::Pinned(_, engine, _) => Some(
            engine
                .pinned_buffer(32 * case.count())
                .map_err(|error| error.to_string())?,
        ),
        _ => None,
    };
    let mut vec_out = Vec::new();
    let out = match &mut pinned_out {
        Some(pinned) => pinned.as_digests_mut(),
        None => {
            vec_out.resize(case.count(), [0u8; 32]);
            &mut vec_out[..]
        }
    };
    let mut stages = Stages::default();
    let on_gpu = contestant
        .engine()
        .is_some_and(|engine| engine.gpu_info().is_some());
    let warm_until = Instant::now() + if on_gpu { GPU_WARMUP } else { Duration::ZERO };
    let mut runs = 0;
    while runs < warmup || Instant::now() < warm_until {
        contestant.run(case, out)?;
        runs += 1;
    }
    let mut times = Vec::with_capacity(reps);
    let mut kernel_times = Vec::with_capacity(reps);
    for _ in 0..reps.max(1) {
        let started = Instant::now();
        contestant.run(case, out)?;
        times.push(started.elapsed());
        if let Some(engine) = contestant.engine() {
            // Only where the shader hashed every blob: with blobs over
            // 1 KiB on the CPU, the shader time alone says nothing.
            let timings = engine.last_gpu_timings();
            if let Some(timings) = &timings {
                stages.pack.push(timings.pack);
                stages.copy_in.extend(timings.upload);
                stages.gpu_side.push(timings.total);
            }
            let timings = timings.filter(|timings| timings.cpu_blobs == 0);
            if let Some(dispatch) = timings.and_then(|timings| timings.dispatch) {
                kernel_times.push(dispatch);
            }
        }
    }
    if inject_fault {
        // Test-only: a wrong digest must stop the benchmark.
        out[case.count() / 2][0] ^= 1;
    }
    verify(case, out, &contestant.name())?;
    let kernel = (kernel_times.len() == times.len()).then_some(kernel_times);
    let measured = Measurement::from_times(contestant.name(), case, times);
    Ok(((measured, kernel), stages))
}

/// Checks about 1000 digests spread over the batch, and the last, against
/// `blake3::hash`.
fn verify(case: &Case, out: &[[u8; 32]], name: &str) -> Result<(), String> {
    let count = case.count();
    let step = (count / 1000).max(1);
    for index in (0..count).step_by(step).chain([count / 2, count - 1]) {
        if out[index] != *blake3::hash(case.blob(index)).as_bytes() {
            return Err(format!(
                "DIGEST MISMATCH: {name} gave a wrong digest for blob {index} ({} bytes) \
                 of the {} case; benchmark aborted, do not trust this build",
                case.blob(index).len(),
                case.size
            ));
        }
    }
    Ok(())
}

/// `blake3`'s own rate on one large input, single thread: the ceiling.
pub fn ceiling_gb_per_sec(reps: usize) -> f64 {
    let input = vec![0x5Au8; 32 << 20];
    let mut best = Duration::MAX;
    for _ in 0..reps.max(1) + 1 {
        let started = Instant::now();
        let mut hasher = blake3::Hasher::new();
        hasher.update(&input);
        std::hint::black_box(hasher.finalize());
        best = best.min(started.elapsed());
    }
    input.len() as f64 / best.as_secs_f64() / 1e9
}

/// Times the GPU engine on the case's blobs already in GPU memory, digests
/// left on the GPU: one call at a time ([`Engine::hash_gpu_blobs`],
/// `gpu resident`), the shader's own times of those calls (`gpu resident
/// kernel`, where timestamps are on), and [`QUEUED`] calls each submitted
/// as soon as recorded ([`Engine::encode_gpu_blobs`]) and waited for
/// together, a call's share of their time (`gpu resident queued`). With
/// `stages`, where a call's time went: the pass checking the offsets on
/// the GPU (`gpu resident check`), the host recording and submitting it
/// (`gpu resident host`) and waiting for it (`gpu resident wait`). Nothing
/// where the batch is too big for one call.
/// Checks the digests like [`measure`].
pub fn measure_resident(
    engine: &Engine,
    case: &Case,
    (warmup, reps): (usize, usize),
    stages: bool,
) -> Result<Vec<Measurement>, String> {
    let Some((device, queue)) = engine.wgpu_device() else {
        return Ok(Vec::new());
    };
    let first = case.offsets[0];
    let fits = case.data.len() < u32::MAX as usize
        && case.data.len() as u64 <= device.limits().max_storage_buffer_binding_size;
    if !fits {
        return Ok(Vec::new());
    }
    let init = |contents: &[u8]| {
        device.create_buffer_init(&wgpu::util::BufferInitDescriptor {
            label: Some("bench"),
            contents,
            usage: wgpu::BufferUsages::STORAGE,
        })
    };
    let mut data = case.data.clone();
    data.resize(data.len().next_multiple_of(4), 0);
    let data = init(&data);
    let offsets: Vec<u8> = case
        .offsets
        .iter()
        .flat_map(|&offset| ((offset - first) as u32).to_le_bytes())
        .collect();
    let offsets = init(&offsets);
    let digests = device.create_buffer(&wgpu::BufferDescriptor {
        label: Some("bench digests"),
        size: 32 * case.count() as u64,
        usage: wgpu::BufferUsages::STORAGE
            | wgpu::BufferUsages::COPY_SRC
            | wgpu::BufferUsages::COPY_DST,
        mapped_at_creation: false,
    });
    let blobs = GpuBlobs::Packed {
        data: &data,
        offsets: GpuOffsets::U32(&offsets),
        count: case.count() as u32,
    };
    let run = || {
        engine
            .hash_gpu_blobs(Mode::Hash, blobs, &digests, 0)
            .map_err(|error| error.to_string())
    };
    let warm_until = Instant::now() + GPU_WARMUP;
    let mut runs = 0;
    while runs < warmup || Instant::now() < warm_until {
        run()?;
        runs += 1;
    }
    let mut times = Vec::with_capacity(reps);
    let mut kernel_times = Vec::with_capacity(reps);
    let (mut check, mut host, mut wait) = (Vec::new(), Vec::new(), Vec::new());
    for _ in 0..reps.max(1) {
        let started = Instant::now();
        run()?;
        times.push(started.elapsed());
        if let Some(timings) = engine.last_gpu_timings() {
            kernel_times.extend(timings.dispatch);
            check.extend(timings.check);
            host.push(timings.total.saturating_sub(timings.wait));
            wait.push(timings.wait);
        }
    }
    // Cleared first, so that the digests checked below are the queued
    // calls' own.
    let mut encoder = device.create_command_encoder(&Default::default());
    encoder.clear_buffer(&digests, 0, None);
    queue.submit([encoder.finish()]);
    let mut queued_times = Vec::with_capacity(reps);
    for _ in 0..reps.max(1) {
        let started = Instant::now();
        let mut pending = Vec::with_capacity(QUEUED);
        for _ in 0..QUEUED {
            let (recorded, waiting) = engine
                .encode_gpu_blobs(Mode::Hash, blobs, &digests, 0)
                .map_err(|error| error.to_string())?;
            queue.submit([recorded]);
            pending.push(waiting);
        }
        for waiting in pending {
            waiting.wait().map_err(|error| error.to_string())?;
        }
        queued_times.push(started.elapsed() / QUEUED as u32);
    }
    verify(
        case,
        &read_back(device, queue, &digests)?,
        "gpu resident queued",
    )?;
    let mut out = vec![[0u8; 32]; case.count()];
    engine
        .hash_gpu_blobs_into(Mode::Hash, blobs, &mut out)
        .map_err(|error| error.to_string())?;
    let name = "gpu resident".to_owned();
    verify(case, &out, &name)?;
    let mut measured = vec![Measurement::from_times(name, case, times)];
    if kernel_times.len() == reps.max(1) {
        let name = "gpu resident kernel".to_owned();
        measured.push(Measurement::from_times(name, case, kernel_times));
    }
    let name = "gpu resident queued".to_owned();
    measured.push(Measurement::from_times(name, case, queued_times));
    if stages {
        for (stage, times) in [("check", check), ("host", host), ("wait", wait)] {
            if times.len() == reps.max(1) {
                let name = format!("gpu resident {stage}");
                measured.push(Measurement::from_times(name, case, times));
            }
        }
    }
    Ok(measured)
}

/// The digests in `buffer` (created with `COPY_SRC`), on the host.
fn read_back(
    device: &wgpu::Device,
    queue: &wgpu::Queue,
    buffer: &wgpu::Buffer,
) -> Result<Vec<[u8; 32]>, String> {
    let staging = device.create_buffer(&wgpu::BufferDescriptor {
        label: Some("bench digest readback"),
        size: buffer.size(),
        usage: wgpu::BufferUsages::MAP_READ | wgpu::BufferUsages::COPY_DST,
        mapped_at_creation: false,
    });
    let mut encoder = device.create_command_encoder(&Default::default());
    encoder.copy_buffer_to_buffer(buffer, 0, &staging, 0, buffer.size());
    queue.submit([encoder.finish()]);
    let (sent, done) = std::sync::mpsc::channel();
    staging.map_async(wgpu::MapMode::Read, .., move |result| {
        let _ = sent.send(result);
    });
    device
        .poll(wgpu::PollType::wait_indefinitely())
        .map_err(|error| error.to_string())?;
    match done.try_recv() {
        Ok(Ok(())) => {}
        Ok(Err(error)) => return Err(error.to_string()),
        Err(_) => return Err("reading the digests back never finished".to_owned()),
    }
    let view = staging
        .get_mapped_range(..)
        .map_err(|error| error.to_string())?;
    Ok(digests_of(&view))
}

/// 32-byte digests from their bytes.
fn digests_of(bytes: &[u8]) -> Vec<[u8; 32]> {
    bytes
        .chunks_exact(32)
        .map(|digest| digest.try_into().expect("32 bytes"))
        .collect()
}

/// Calls submitted one after another in the `gpu resident queued` column:
/// a pipeline's hashes, the host recording the next while the GPU runs the
/// last, with no wait between them.
const QUEUED: usize = 8;

/// Times moving the case's bytes into the GPU as uploads do, at their best
/// ([`Engine::measure_gpu_bus`]): the bound on the end-to-end column.
pub fn measure_bus(engine: &Engine, case: &Case, reps: usize) -> Result<Measurement, String> {
    let mut times = Vec::with_capacity(reps);
    for _ in 0..reps.max(1) + 1 {
        let time = engine.measure_gpu_bus(&case.data);
        times.push(time.map_err(|error| error.to_string())?);
    }
    times.remove(0);
    Ok(Measurement::from_times("gpu bus".to_owned(), case, times))
}
