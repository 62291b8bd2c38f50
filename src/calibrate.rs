//! Measuring the rates of a [`Profile`] on this machine, in a few
//! seconds: the CPU lanes by blob size on one thread and, at 64 bytes and
//! 1 KiB, on all of the engine's, and the GPU's fixed latency, transfer
//! and shader rates, and its rate end to end on blobs over 1 KiB.

use std::time::{Duration, Instant};

use crate::engine::{Backend, Engine};
use crate::error::Error;
use crate::gpu::{GpuDeviceType, GpuTimings};
use crate::mode::Mode;
use crate::pinned::PinnedBuffer;
use crate::profile::cpu_model;
use crate::scheduler::{self, BatchShape, CpuRates, GpuRates, Profile, SplitSlowdown};

/// Input bytes of each CPU measurement on one thread (the rates by blob
/// size): long enough that the timer's noise does not count.
const CPU_BYTES: usize = 4 << 20;
/// Input bytes of the CPU measurement on all threads: past any CPU's
/// last-level cache, as the batches that matter are. At 4 MiB a thread
/// (64 MiB), an H200 host's 16 cores measured 78 GB/s and Auto kept on the
/// CPU batches of 256 MiB and 1 GiB that they hashed at 52–69 GB/s, while
/// a split from pinned memory ran at 65–102. (At 4 MiB in all, the same
/// cores measured an efficiency of 0.10 in one calibration and 0.58 in the
/// next: waking threads must be noise too.) The large timed split is as
/// many bytes, so that its CPU side runs from memory as the model's rate
/// for it was measured.
const ALL_THREADS_BYTES: usize = scheduler::SPLIT_LARGE_BYTES as usize;
/// Blobs of 1 KiB in the GPU throughput measurement: 64 MiB, enough that
/// a card's streaming rate shows past its fixed latency.
const GPU_BLOBS: usize = 64 * 1024;
/// Blobs over 1 KiB are measured on the GPU at this length (as many bytes
/// as the 1 KiB blobs): 64 chunks and 63 parents each, a tree of six
/// levels.
const GPU_LARGE_BLOB: usize = 64 * 1024;

/// The GPU's share in a timed split is kept within this of 0 and 1, so
/// that both sides run even where the model gives one nearly everything.
const SPLIT_SHARE_MIN: f64 = 0.05;
/// Bounds on a measured slowdown, against a timing gone wrong.
const SLOWDOWN_MIN: f64 = 0.5;
const SLOWDOWN_MAX: f64 = 20.0;

/// How long the GPU is kept busy before it is timed: a card idles at a
/// fraction of its clock (an H200 at 345 MHz against 1980).
const GPU_WARMUP: Duration = Duration::from_millis(300);

/// Generated blobs of `len` bytes, about `bytes` in all, packed: a short
/// pattern repeated (BLAKE3 takes as long whatever the bytes, and 256 MiB
/// made a byte at a time took longer than hashing them).
fn packed(len: usize, bytes: usize) -> (Vec<u8>, Vec<u64>) {
    // Not a multiple of any blob length, so that neighbours differ.
    const PATTERN: usize = 4099;
    let count = (bytes / len.max(1)).max(2);
    let pattern: Vec<u8> = (0..PATTERN).map(|i| (i * 131 + i / 7) as u8).collect();
    let total = count * len;
    let mut data = Vec::with_capacity(total);
    while data.len() < total {
        let take = (total - data.len()).min(PATTERN);
        data.extend_from_slice(&pattern[..take]);
    }
    let offsets = (0..=count).map(|i| (i * len) as u64).collect();
    (data, offsets)
}

/// The GPU's own account of its fastest of three runs over `data`, after
/// it has been kept busy for [`GPU_WARMUP`]; digests into pinned memory
/// where `pinned_digests`.
fn streaming_timings(
    engine: &Engine,
    data: &[u8],
    offsets: &[u64],
    one_thread: bool,
    pinned_digests: bool,
) -> Result<GpuTimings, Error> {
    let mut slots = digest_slots(engine, offsets.len() - 1, pinned_digests)?;
    let out = slots.as_digests_mut();
    let warm_until = Instant::now() + GPU_WARMUP;
    while Instant::now() < warm_until {
        engine.hash_packed_on_gpu(data, offsets, out, one_thread)?;
    }
    let mut best: Option<GpuTimings> = None;
    for _ in 0..3 {
        engine.hash_packed_on_gpu(data, offsets, out, one_thread)?;
        let timings = engine.last_gpu_timings().unwrap_or_default();
        if best.as_ref().is_none_or(|best| timings.total < best.total) {
            best = Some(timings);
        }
    }
    Ok(best.unwrap_or_default())
}

/// Slots for `count` digests: in the engine's pinned memory where
/// `pinned` (where it has some), else on the heap. A batch measured from
/// pinned memory is hashed into pinned memory too, as `PinnedBuffer`'s
/// documentation and the bench's pinned columns do: the GPU then writes
/// its digests where they belong, with no copy on the host.
fn digest_slots(engine: &Engine, count: usize, pinned: bool) -> Result<PinnedBuffer, Error> {
    match pinned {
        true => engine.pinned_buffer(32 * count),
        false => PinnedBuffer::heap(32 * count),
    }
}

/// A copy of `data` in the engine's pinned memory; `None` where it has
/// none to give.
fn pinned_copy(engine: &Engine, data: &[u8]) -> Result<Option<PinnedBuffer>, Error> {
    let mut pinned = engine.pinned_buffer(data.len())?;
    if !pinned.is_pinned() {
        return Ok(None);
    }
    pinned.copy_from_slice(data);
    Ok(Some(pinned))
}

/// How long a measurement is run untimed before it is timed, at least:
/// cores and cards clock up only under load. After one untimed run, one
/// thread of an H200 host measured 3.2, 4.6 and 5.9 GB/s at 1 KiB in three
/// calibrations the same hour.
const WARMUP: Duration = Duration::from_millis(200);

/// The best of three timed runs after [`WARMUP`] of untimed ones.
fn best_time(mut run: impl FnMut() -> Result<(), Error>) -> Result<Duration, Error> {
    let warm_until = Instant::now() + WARMUP;
    run()?;
    while Instant::now() < warm_until {
        run()?;
    }
    let mut best = Duration::MAX;
    for _ in 0..3 {
        let started = Instant::now();
        run()?;
        best = best.min(started.elapsed());
    }
    Ok(best.max(Duration::from_nanos(1)))
}

/// The engine's CPU rate over `bytes` of blobs of `len` bytes.
fn bytes_per_sec(engine: &Engine, len: usize, bytes: usize) -> Result<f64, Error> {
    let (data, offsets) = packed(len, bytes);
    let mut out = vec![[0u8; 32]; offsets.len() - 1];
    let time = best_time(|| engine.hash_packed_into(Mode::Hash, &data, &offsets, &mut out))?;
    Ok(data.len() as f64 / time.as_secs_f64())
}

/// Measures `engine`'s CPU backend and, when it has one, its GPU.
pub(crate) fn calibrate(engine: &Engine) -> Result<Profile, Error> {
    let cpu_engine = |threads| {
        Engine::builder()
            .backend(Backend::Cpu)
            .cpu_backend(engine.cpu_backend())
            .threads(threads)
            .build()
    };
    let one = cpu_engine(1)?;
    let mut cpu = CpuRates {
        tiny_bytes_per_sec: bytes_per_sec(&one, 64, CPU_BYTES)?,
        small_bytes_per_sec: bytes_per_sec(&one, 256, CPU_BYTES)?,
        chunk_bytes_per_sec: bytes_per_sec(&one, 1024, CPU_BYTES)?,
        large_bytes_per_sec: bytes_per_sec(&one, 8192, CPU_BYTES)?,
        thread_efficiency: 1.0,
        tiny_thread_efficiency: None,
    };
    let threads = engine.threads();
    if threads > 1 {
        let all = cpu_engine(threads)?;
        let efficiency = |len: usize, one_thread: f64| -> Result<f64, Error> {
            let speedup = bytes_per_sec(&all, len, ALL_THREADS_BYTES)? / one_thread;
            Ok(((speedup - 1.0) / (threads - 1) as f64).clamp(0.05, 1.0))
        };
        cpu.thread_efficiency = efficiency(1024, cpu.chunk_bytes_per_sec)?;
        cpu.tiny_thread_efficiency = Some(efficiency(64, cpu.tiny_bytes_per_sec)?);
    }
    let (adapter, gpu) = match engine.gpu() {
        Some(gpu_handle) => {
            let info = gpu_handle.info().clone();
            let software = info.device_type == GpuDeviceType::Cpu;
            let rates = measure_gpu(engine, &cpu, software)?;
            (Some(info.name), Some(rates))
        }
        None => (None, None),
    };
    Ok(Profile {
        cpu_model: cpu_model(),
        adapter,
        cpu,
        gpu,
    })
}

fn measure_gpu(engine: &Engine, cpu: &CpuRates, software: bool) -> Result<GpuRates, Error> {
    let (tiny, tiny_offsets) = packed(64, 128);
    let mut out = vec![[0u8; 32]; tiny_offsets.len() - 1];
    let latency = best_time(|| engine.hash_packed_on_gpu(&tiny, &tiny_offsets, &mut out, false))?;
    let (data, offsets) = packed(1024, GPU_BLOBS * 1024);
    let timings = streaming_timings(engine, &data, &offsets, false, false)?;
    // The same blobs in pinned memory, which the GPU copies as they lie.
    let pinned_timings = match pinned_copy(engine, &data)? {
        Some(pinned) => Some(streaming_timings(engine, &pinned, &offsets, false, true)?),
        None => None,
    };
    let blobs = (offsets.len() - 1) as f64;
    let seconds = |duration: Duration| duration.as_secs_f64().max(1e-9);
    let streaming_of = |timings: &GpuTimings| seconds(timings.total.saturating_sub(latency));
    let streaming = streaming_of(&timings);
    // The shader and the digests' copy are timed on the GPU; everything
    // else the stream took is the upload, packing by the CPU included.
    // (Timed on the GPU alone, the upload read 363 GB/s on an H200, where
    // mapped memory sits on the card and the CPU's writes cross the bus.)
    // Without GPU timestamps the stages cannot be told apart: charge it
    // all to the shader and treat the bus as free.
    // With one thread packing too, which says how many a split keeps to
    // pack the GPU's share.
    let (upload, upload_one_thread, kernel, download) = match (timings.dispatch, timings.download) {
        (Some(dispatch), Some(download)) => {
            let one_thread = streaming_timings(engine, &data, &offsets, true, false)?;
            (
                upload_rate(&timings, streaming),
                Some(upload_rate(&one_thread, streaming_of(&one_thread))),
                blobs / seconds(dispatch),
                32.0 * blobs / seconds(download),
            )
        }
        _ => (1e12, None, blobs / streaming, 1e12),
    };
    // From pinned memory the upload is all the stream does besides the
    // shader and the digests, which cost the same as above.
    let pinned_upload = pinned_timings.map(|timings| {
        let rest = streaming_of(&timings) - blobs / kernel - 32.0 * blobs / download;
        timings.bytes_uploaded as f64 / rest.max(streaming_of(&timings) / 100.0)
    });
    // 64-byte blobs from pinned memory, their host work on one thread as
    // in a split: what the rates above do not account for is the cost of
    // each blob.
    let (tiny_data, tiny_offsets) = packed(64, GPU_BLOBS * 64 * 4);
    let pinned_blob = match (pinned_upload, pinned_copy(engine, &tiny_data)?) {
        (Some(pinned_upload), Some(pinned)) => {
            let timings = streaming_timings(engine, &pinned, &tiny_offsets, true, true)?;
            let blobs = (tiny_offsets.len() - 1) as f64;
            let modelled = (pinned.len() as f64 + 8.0 * blobs) / pinned_upload
                + blobs / kernel
                + 32.0 * blobs / download;
            Some(((streaming_of(&timings) - modelled) / blobs).max(0.0))
        }
        _ => None,
    };
    // Blobs over 1 KiB: the stream's rate past the latency, packing,
    // upload, trees and readback together, which is what the model
    // charges them.
    let (large_data, large_offsets) = packed(GPU_LARGE_BLOB, GPU_BLOBS * 1024);
    let large_timings = streaming_timings(engine, &large_data, &large_offsets, false, false)?;
    let large = large_data.len() as f64 / streaming_of(&large_timings);
    let mut rates = GpuRates {
        latency_sec: latency.as_secs_f64(),
        upload_bytes_per_sec: upload,
        upload_one_thread_bytes_per_sec: upload_one_thread,
        pinned_upload_bytes_per_sec: pinned_upload,
        pinned_blob_sec: pinned_blob,
        split_slowdown: None,
        small_split_slowdown: None,
        download_bytes_per_sec: download,
        kernel_blobs_per_sec: kernel,
        large_bytes_per_sec: Some(large),
        software,
    };
    // A software adapter is never planned for: its splits are measured
    // small, for the code's sake, not for their figures.
    let (small, large) = match software {
        true => (1 << 20, 2 << 20),
        false => (scheduler::SPLIT_SMALL_BYTES, scheduler::SPLIT_LARGE_BYTES),
    };
    rates.split_slowdown = Some(split_slowdown(engine, cpu, &rates, large as usize)?);
    rates.small_split_slowdown = Some(split_slowdown(engine, cpu, &rates, small as usize)?);
    Ok(rates)
}

/// The upload's rate in a stream that took `streaming` seconds past the
/// fixed latency: everything but the shader and the digests' copy, which
/// the GPU timed (at most a hundredth of the stream is counted as
/// anything else, against a timing gone wrong).
fn upload_rate(timings: &GpuTimings, streaming: f64) -> f64 {
    let gpu_timed = |stage: Option<Duration>| stage.map_or(0.0, |time| time.as_secs_f64());
    let rest = streaming - gpu_timed(timings.dispatch) - gpu_timed(timings.download);
    timings.bytes_uploaded as f64 / rest.max(streaming / 100.0)
}

/// Splits of `bytes` of 64-byte and of 1 KiB blobs, from ordinary
/// and (where the engine can pin it) pinned memory into the same kind,
/// each at the share the model balances, timed against the model's
/// prediction from `cpu` and `gpu`.
fn split_slowdown(
    engine: &Engine,
    cpu: &CpuRates,
    gpu: &GpuRates,
    bytes: usize,
) -> Result<SplitSlowdown, Error> {
    let profile = Profile {
        cpu_model: cpu_model(),
        adapter: None,
        cpu: cpu.clone(),
        gpu: Some(gpu.clone()),
    };
    let threads = engine.threads();
    let measure = |len: usize, pinned: bool| -> Result<Option<f64>, Error> {
        let (data, offsets) = packed(len, bytes);
        let memory = match pinned {
            true => match pinned_copy(engine, &data)? {
                Some(memory) => Some(memory),
                None => return Ok(None),
            },
            false => None,
        };
        let bytes = memory.as_deref().unwrap_or(&data);
        let shape = BatchShape::from_lengths(std::iter::repeat_n(len, offsets.len() - 1));
        let in_place = engine.may_copy_in_place(bytes, &offsets);
        let share = scheduler::plan_for(&shape, &profile, threads, in_place)
            .gpu_share
            .clamp(SPLIT_SHARE_MIN, 1.0 - SPLIT_SHARE_MIN);
        let split = scheduler::split_at_share(&shape, &profile, threads, in_place, share);
        let mut slots = digest_slots(engine, offsets.len() - 1, pinned)?;
        let out = slots.as_digests_mut();
        let measured = best_time(|| {
            engine.hash_packed_split(bytes, &offsets, out, (share, split.packing_threads))
        })?;
        Ok(Some(
            (measured.as_secs_f64() / split.seconds).clamp(SLOWDOWN_MIN, SLOWDOWN_MAX),
        ))
    };
    let tiny = measure(64, false)?.unwrap_or(1.0);
    let chunk = measure(1024, false)?.unwrap_or(1.0);
    Ok(SplitSlowdown {
        tiny,
        chunk,
        pinned_tiny: measure(64, true)?,
        pinned_chunk: measure(1024, true)?,
    })
}
