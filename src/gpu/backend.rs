//! The GPU as the engine uses it: the opened device with its ring of slabs,
//! streaming a batch from host memory through them, and hashing blobs that
//! already live in the caller's GPU buffers.

use std::collections::VecDeque;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use wgpu::WriteOnly;

use super::buffers::{self, GpuBlobs};
use super::device::{self, gpu_failed, timed_out, GpuDevice};
use super::faults::{strikes, GpuFault, GpuFaultStage as Stage, Injector};
use super::host_memory::HostBuffer;
use super::info::{GpuInfo, GpuTimings};
use super::layout;
use super::pack::{self, Packed};
use super::pinned::{addresses, InPlace, PinnedMemory, Registry};
use super::settings::{DeviceSettings, GpuUpload};
use super::slab::{Slab, SlabPlan, SLABS};
use crate::blobs::BlobSource;
use crate::cpu::batch::Threads;
use crate::error::{Error, ErrorKind};
use crate::mode::ModeWords;

/// A device and queue the caller handed the engine.
pub(crate) type CallerDevice = (wgpu::Device, wgpu::Queue);

/// Every GPU adapter `wgpu` can see on this machine (honouring
/// `WGPU_BACKEND`), whether or not an engine would use it.
pub fn gpu_adapters() -> Vec<GpuInfo> {
    device::adapters()
}

/// The opened GPU with its slabs, shared by every clone of an engine.
pub(crate) struct Gpu {
    device: GpuDevice,
    plan: SlabPlan,
    timeout: Duration,
    /// Slabs are created on first use and kept; the lock also makes batches
    /// from several threads take turns on the device.
    slabs: Mutex<Vec<Slab>>,
    /// The small buffers of calls over the caller's buffers, made as
    /// needed and reused.
    buffer_scratch: buffers::ScratchPool,
    last_timings: Mutex<Option<GpuTimings>>,
    /// The pinned buffers made on this device, which batches copy from.
    pinned: Arc<Registry>,
    /// A fault to inject (tests only; see `faults.rs`).
    faults: Option<Injector>,
}

/// Which of a slab's stages are running.
struct InFlight {
    slab: usize,
    packed: Packed,
    /// The GPU copied the digests into the caller's pinned memory.
    digests_copied: bool,
    /// Its place in the batch, counting from 0.
    index: usize,
}

impl Gpu {
    /// Opens the adapter and plans slabs within `budget` bytes.
    pub(crate) fn open(
        budget: u64,
        timeout: Duration,
        settings: DeviceSettings,
    ) -> Result<Gpu, Error> {
        Gpu::on(GpuDevice::open(settings)?, budget, timeout, settings)
    }

    /// Works on the caller's device and queue instead of opening one.
    pub(crate) fn adopt(
        (device, queue): CallerDevice,
        budget: u64,
        timeout: Duration,
        settings: DeviceSettings,
    ) -> Result<Gpu, Error> {
        Gpu::on(
            GpuDevice::adopt(device, queue, settings)?,
            budget,
            timeout,
            settings,
        )
    }

    /// Plans slabs within `budget` bytes on an opened device.
    fn on(
        device: GpuDevice,
        budget: u64,
        timeout: Duration,
        settings: DeviceSettings,
    ) -> Result<Gpu, Error> {
        let plan = SlabPlan::new(budget, &device.limits, device.workgroup_size)?;
        Ok(Gpu {
            device,
            plan,
            timeout,
            slabs: Mutex::new(Vec::new()),
            buffer_scratch: buffers::ScratchPool::default(),
            last_timings: Mutex::new(None),
            pinned: Arc::default(),
            faults: settings.fault.map(Injector::new),
        })
    }

    /// The device and queue the engine works on.
    pub(crate) fn wgpu(&self) -> (&wgpu::Device, &wgpu::Queue) {
        (&self.device.device, &self.device.queue)
    }

    /// How blobs reach the shader and the workgroup size, as opened.
    pub(crate) fn settings(&self) -> (GpuUpload, u32) {
        (self.device.upload, self.device.workgroup_size)
    }

    /// Hashes blobs that are already in GPU buffers ([`buffers::hash`]).
    pub(crate) fn hash_buffers(
        &self,
        words: ModeWords,
        blobs: GpuBlobs,
        digests: buffers::Digests,
    ) -> Result<(), Error> {
        let scratch = &self.buffer_scratch;
        // Packed blobs whose offsets the GPU finds bad must leave the
        // slots as they were, which a copy into them would not: only
        // records, which have no offsets, go straight into pinned slots.
        let place = match (&digests, blobs) {
            (buffers::Digests::Host(out), GpuBlobs::Records { .. }) => self.digest_slots(out),
            _ => None,
        };
        let slots = place.as_ref().map(|(place, range)| place.place(range));
        let digests = (digests, slots);
        let timings = buffers::hash(&self.device, scratch, words, blobs, digests, self.timeout)?;
        *lock(&self.last_timings) = Some(timings);
        Ok(())
    }

    /// Records the hash of blobs in GPU buffers for the caller to submit
    /// ([`buffers::encode`]).
    pub(crate) fn encode_buffers(
        &self,
        words: ModeWords,
        blobs: GpuBlobs,
        digests: &wgpu::Buffer,
        offset: u64,
    ) -> Result<(wgpu::CommandBuffer, Option<buffers::Recorded>), Error> {
        let scratch = &self.buffer_scratch;
        buffers::encode(&self.device, scratch, words, blobs, digests, offset)
    }

    /// Waits for a recorded hash the caller submitted, in `submission` or
    /// with everything submitted so far ([`buffers::finish`]).
    pub(crate) fn finish_buffers(
        &self,
        recorded: buffers::Recorded,
        submission: Option<wgpu::SubmissionIndex>,
    ) -> Result<(), Error> {
        let scratch = &self.buffer_scratch;
        buffers::finish(&self.device, scratch, recorded, submission, self.timeout).map(|_| ())
    }

    /// The time to move `bytes` from host memory into device memory the
    /// way a slab's upload does, at its best: copied on `threads` into a
    /// staging buffer (mapped, or in host memory with [`GpuUpload::Host`]),
    /// then by the GPU into device memory (the buffers exist beforehand,
    /// untimed). The bound on the end-to-end rate of this path: where the
    /// driver places mapped memory on the card (resizable BAR), the CPU's
    /// writes cross the bus, not the GPU's copy.
    pub(crate) fn bus_time(&self, bytes: &[u8], threads: Threads) -> Result<Duration, Error> {
        let gpu = &self.device;
        let size = (bytes.len() as u64)
            .next_multiple_of(4)
            .clamp(4, gpu.limits.max_buffer_size);
        let bytes = &bytes[..bytes.len().min(size as usize)];
        let buffer = |label, usage, mapped| {
            gpu.device.create_buffer(&wgpu::BufferDescriptor {
                label: Some(label),
                size,
                usage,
                mapped_at_creation: mapped,
            })
        };
        use wgpu::BufferUsages as U;
        let target = buffer("bus target", U::COPY_DST | U::STORAGE, false);
        let mut encoder = gpu.device.create_command_encoder(&Default::default());
        let started;
        // Both outlive the copy's submission.
        let mut host_staging: Option<HostBuffer> = None;
        let mut mapped_staging: Option<wgpu::Buffer> = None;
        if gpu.upload == GpuUpload::Host {
            let staging = HostBuffer::new(&gpu.device, "bus staging", size)
                .map_err(|why| gpu_failed("creating a host staging buffer", why))?;
            let staging = host_staging.insert(staging);
            // SAFETY: the buffer is new; no command has used it.
            let memory = unsafe { staging.bytes_mut() };
            // Untimed, as a slab's staging exists beforehand: the first
            // write of each page of fresh host memory faults it in.
            memory.fill(0);
            started = Instant::now();
            pack::copy_in_pieces(
                bytes,
                WriteOnly::from_mut(&mut memory[..bytes.len()]),
                threads,
            );
            encoder.copy_buffer_to_buffer(staging.buffer(), 0, &target, 0, size);
        } else {
            let staging =
                mapped_staging.insert(buffer("bus staging", U::MAP_WRITE | U::COPY_SRC, true));
            started = Instant::now();
            {
                let mut view = staging
                    .get_mapped_range_mut(..)
                    .map_err(|error| gpu_failed("filling a staging buffer", error.to_string()))?;
                pack::copy_in_pieces(bytes, view.slice(..bytes.len()), threads);
            }
            staging.unmap();
            encoder.copy_buffer_to_buffer(staging, 0, &target, 0, size);
        }
        let submission = gpu.queue.submit([encoder.finish()]);
        gpu.wait(submission, self.timeout)?;
        Ok(started.elapsed())
    }

    /// `len` bytes (at least one) of pinned host memory on this device,
    /// zeroed on `threads`, which batches whose bytes lie in it copy from;
    /// `None` where slabs cannot copy from it: off Vulkan, where the engine
    /// cannot allocate host memory, and with the direct upload, where slabs
    /// have no device memory to copy into.
    pub(crate) fn pinned_memory(
        &self,
        len: usize,
        threads: Threads,
    ) -> Result<Option<PinnedMemory>, Error> {
        if !self.pins_memory() {
            return Ok(None);
        }
        let largest = self.device.limits.max_buffer_size;
        if len as u64 > largest {
            // The size asked for is at fault, not the GPU.
            return Err(ErrorKind::OutOfMemory {
                what: format!("a pinned buffer (this adapter's largest buffer is {largest} bytes)"),
                bytes: len,
            }
            .into());
        }
        let zero = |bytes: &mut [u8]| {
            let pieces: Vec<_> = bytes.chunks_mut(4 << 20).collect();
            threads.for_each(pieces, |piece| piece.fill(0));
        };
        PinnedMemory::new(&self.device.device, Arc::clone(&self.pinned), len, zero)
            .map(Some)
            .map_err(|why| gpu_failed("allocating a pinned buffer", why))
    }

    /// Whether [`pinned_memory`](Self::pinned_memory) gives memory that
    /// slabs copy from: on Vulkan, unless the upload is direct.
    pub(crate) fn pins_memory(&self) -> bool {
        self.device.info.api == "Vulkan" && self.device.upload != GpuUpload::Direct
    }

    /// Whether `bytes` lie in one of this device's pinned buffers.
    pub(crate) fn holds_pinned(&self, bytes: &[u8]) -> bool {
        self.pinned.find(bytes).is_some()
    }

    /// Whether the slabs would copy all of `source` from a pinned buffer
    /// where it lies, packing nothing but a table: packed blobs (records
    /// too) whose bytes lie in one.
    pub(crate) fn copies_in_place<S: BlobSource>(&self, source: &S) -> bool {
        source
            .contiguous_bytes(0, source.count())
            .is_some_and(|bytes| self.copies_in_place_from(bytes))
    }

    /// Whether the slabs would copy packed blobs whose bytes are `bytes`
    /// from a pinned buffer where they lie.
    pub(crate) fn copies_in_place_from(&self, bytes: &[u8]) -> bool {
        self.device.upload != GpuUpload::Direct && !bytes.is_empty() && self.holds_pinned(bytes)
    }

    /// The pinned buffer `out`'s slots lie in, from a 4-byte boundary of
    /// it (as GPU copies need), and their addresses.
    fn digest_slots(&self, out: &[[u8; 32]]) -> Option<(InPlace, std::ops::Range<usize>)> {
        let slots: &[u8] = bytemuck::cast_slice(out);
        let range = addresses(slots);
        self.pinned
            .find(slots)
            .filter(|place| place.place(&range).1 % 4 == 0)
            .map(|place| (place, range))
    }

    /// The adapter in use.
    pub(crate) fn info(&self) -> &GpuInfo {
        &self.device.info
    }

    /// Timings of the last batch that ran on the GPU.
    pub(crate) fn last_timings(&self) -> Option<GpuTimings> {
        lock(&self.last_timings).clone()
    }

    pub(crate) fn set_last_timings(&self, timings: GpuTimings) {
        *lock(&self.last_timings) = Some(timings);
    }

    /// The longest blob a slab holds: one that fills its data. Longer ones
    /// are hashed in subtrees (`subtrees.rs`).
    pub(crate) fn max_blob(&self) -> usize {
        self.plan.max_blob()
    }

    /// Hashes the blobs of at most `max_blob` bytes (at most
    /// [`max_blob`](Self::max_blob)) of `source` into their slots of `out`,
    /// packing slabs on `threads`; slots of longer blobs (`cpu_blobs` of
    /// them) are left for the caller.
    pub(crate) fn hash<S: BlobSource>(
        &self,
        words: ModeWords,
        source: &S,
        max_blob: usize,
        out: &mut [[u8; 32]],
        cpu_blobs: usize,
        threads: Threads,
    ) -> Result<(), Error> {
        let started = Instant::now();
        let mut timings = GpuTimings {
            cpu_blobs,
            ..GpuTimings::default()
        };
        // A lost device fails every batch at once, with its own message.
        self.device.check_faults()?;
        let fault = self.faults.as_ref().and_then(Injector::for_batch);
        let mut slabs = lock(&self.slabs);
        // Blobs that lie back to back in a pinned buffer may be copied
        // from there, and digests into one, from a 4-byte boundary, where
        // their slots lie.
        let in_place = source
            .contiguous_bytes(0, source.count())
            .and_then(|bytes| self.pinned.find(bytes));
        let digests_in_place = self.digest_slots(out).map(|(place, _)| place);
        let batch = Batch {
            words,
            source,
            max_blob,
            in_place,
            digests_in_place,
        };
        let streamed = self.stream(&mut slabs, batch, out, threads, &mut timings, fault);
        if let Err(error) = streamed {
            // A failed batch leaves maps half done: let the device finish
            // what was submitted, then start the next batch afresh.
            self.device.settle(self.timeout);
            slabs.clear();
            // The device's own report (a loss, a validation error) names
            // the cause better than the operation that tripped over it.
            return Err(self.device.check_faults().err().unwrap_or(error));
        }
        drop(slabs);
        timings.gpu_blobs -= cpu_blobs;
        timings.total = started.elapsed();
        *lock(&self.last_timings) = Some(timings);
        Ok(())
    }

    /// Streams the batch through the slab ring.
    fn stream<S: BlobSource>(
        &self,
        slabs: &mut Vec<Slab>,
        batch: Batch<'_, S>,
        out: &mut [[u8; 32]],
        threads: Threads,
        timings: &mut GpuTimings,
        fault: Option<GpuFault>,
    ) -> Result<(), Error> {
        let mut gpu_stages = self.device.timestamp_period.map(|_| [Duration::ZERO; 3]);
        let mut in_flight: VecDeque<InFlight> = VecDeque::with_capacity(SLABS);
        let mut next_blob = 0;
        let mut next_slab = 0;
        let mut submitted = 0;
        let Batch {
            words,
            source,
            max_blob,
            in_place,
            digests_in_place,
        } = batch;
        let total = source.count();
        while next_blob < total || !in_flight.is_empty() {
            // Pack and submit while a slab is free; otherwise retire the
            // oldest, whose readback is due first.
            if next_blob < total && in_flight.len() < SLABS {
                if strikes(fault, Stage::CreateBuffers, submitted) {
                    return Err(gpu_failed(
                        "creating a slab's buffers",
                        "out of GPU memory (an injected fault)".to_owned(),
                    ));
                }
                if slabs.len() == next_slab {
                    slabs.push(Slab::new(&self.device, self.plan)?);
                }
                let slab = &mut slabs[next_slab];
                let clock = Instant::now();
                slab.ready_to_pack(&self.device, self.timeout)?;
                timings.wait += clock.elapsed();
                let clock = Instant::now();
                let packed = slab.fill(source, next_blob, max_blob, in_place.as_ref(), threads)?;
                timings.pack += clock.elapsed();
                if strikes(fault, Stage::DeviceLost, submitted) {
                    self.device.destroy();
                }
                if strikes(fault, Stage::Validation, submitted) {
                    self.device.submit_invalid_command();
                }
                let slots: &[u8] = bytemuck::cast_slice(&out[packed.blobs.clone()]);
                let digests_to = digests_in_place
                    .as_ref()
                    .map(|place| place.place(&addresses(slots)));
                slab.submit(&self.device, &packed, words, in_place.as_ref(), digests_to);
                if digests_to.is_some() {
                    timings.digests_in_place += packed.blobs.len();
                }
                timings.slabs += 1;
                timings.gpu_blobs += packed.blobs.len();
                timings.bytes_uploaded += packed.data_bytes
                    + packed.job_bytes
                    + match packed.layout.has_table() {
                        true => packed.count() * layout::ENTRY_BYTES,
                        false => 0,
                    };
                if packed.in_place.is_some() {
                    timings.bytes_in_place += packed.data_bytes;
                }
                next_blob = packed.blobs.end;
                in_flight.push_back(InFlight {
                    slab: next_slab,
                    packed,
                    digests_copied: digests_to.is_some(),
                    index: submitted,
                });
                submitted += 1;
                next_slab = (next_slab + 1) % SLABS;
            } else if let Some(done) = in_flight.pop_front() {
                let slab = &mut slabs[done.slab];
                let clock = Instant::now();
                if strikes(fault, Stage::Timeout, done.index) {
                    return Err(timed_out(self.timeout));
                }
                if strikes(fault, Stage::Map, done.index) {
                    return Err(gpu_failed(
                        "mapping the digest readback buffer",
                        "the map failed (an injected fault)".to_owned(),
                    ));
                }
                slab.ready_to_read(&self.device, self.timeout)?;
                timings.wait += clock.elapsed();
                let clock = Instant::now();
                let out = (&mut *out, done.digests_copied);
                let stages = slab.read_back(&self.device, source, &done.packed, out, threads)?;
                timings.readback += clock.elapsed();
                if let (Some(sum), Some(stages)) = (gpu_stages.as_mut(), stages) {
                    for (sum, stage) in sum.iter_mut().zip(stages) {
                        *sum += stage;
                    }
                }
            }
        }
        if let Some([upload, dispatch, download]) = gpu_stages {
            timings.upload = Some(upload);
            timings.dispatch = Some(dispatch);
            timings.download = Some(download);
        }
        self.device.check_faults()
    }

    /// Destroys the device so that every later batch fails (device-loss
    /// tests).
    #[cfg(test)]
    pub(crate) fn destroy(&self) {
        self.device.destroy();
    }
}

/// What one batch on the GPU hashes: the blobs of `source` of at most
/// `max_blob` bytes, in `words`' mode; `in_place` where they lie in a
/// pinned buffer.
struct Batch<'a, S> {
    words: ModeWords,
    source: &'a S,
    max_blob: usize,
    in_place: Option<InPlace>,
    /// Where the batch's digest slots lie in a pinned buffer.
    digests_in_place: Option<InPlace>,
}

fn lock<T>(mutex: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    mutex.lock().unwrap_or_else(|poison| poison.into_inner())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::blobs::Slices;
    use crate::error::ErrorKind;
    use crate::mode::Mode;

    /// A GPU with small slabs, or `None` (with a line on stderr) where the
    /// machine has no adapter and `B3BATCH_REQUIRE_GPU=1` is not set.
    fn open_small() -> Option<Gpu> {
        match Gpu::open(
            64 * 1024,
            Duration::from_secs(20),
            DeviceSettings::default(),
        ) {
            Ok(gpu) => Some(gpu),
            Err(error) => {
                assert!(
                    std::env::var("B3BATCH_REQUIRE_GPU").map_or(true, |value| value != "1"),
                    "B3BATCH_REQUIRE_GPU=1 but no GPU: {error}"
                );
                eprintln!("skipping the GPU in this test: {error}");
                None
            }
        }
    }

    fn hash(gpu: &Gpu, blobs: &[Vec<u8>]) -> Result<Vec<[u8; 32]>, Error> {
        let words = Mode::Hash.words(|_| unreachable!("no context in Mode::Hash"));
        let mut out = vec![[0u8; 32]; blobs.len()];
        let max_blob = gpu.max_blob();
        gpu.hash(words, &Slices(blobs), max_blob, &mut out, 0, Threads::One)?;
        Ok(out)
    }

    #[test]
    fn a_destroyed_device_fails_with_an_error_not_a_panic_or_a_hang() {
        let Some(gpu) = open_small() else { return };
        let blobs: Vec<Vec<u8>> = (0..500u32).map(|i| i.to_le_bytes().repeat(40)).collect();
        let digests = hash(&gpu, &blobs).unwrap();
        assert_eq!(digests[499], *blake3::hash(&blobs[499]).as_bytes());
        gpu.destroy();
        let error = hash(&gpu, &blobs).expect_err("a destroyed device cannot hash");
        assert!(matches!(error.kind(), ErrorKind::Gpu { .. }), "{error}");
        // And again: the failed batch left nothing behind that hangs.
        let error = hash(&gpu, &blobs).expect_err("still destroyed");
        assert!(matches!(error.kind(), ErrorKind::Gpu { .. }), "{error}");
    }

    /// Pinned memory is the crate's, not `wgpu`'s: a device destroyed
    /// while a buffer lives (which frees what `wgpu` owns) leaves its bytes
    /// readable and writable, and dropping it after frees it once.
    #[test]
    fn pinned_memory_outlives_a_destroyed_device() {
        let Some(gpu) = open_small() else { return };
        let Some(mut memory) = gpu.pinned_memory(1 << 20, Threads::One).unwrap() else {
            eprintln!("this adapter cannot pin memory");
            return;
        };
        memory.bytes_mut().fill(7);
        gpu.destroy();
        // A batch after: `wgpu` frees what it owns as it polls the device.
        let blobs = vec![vec![1u8; 100]; 10];
        hash(&gpu, &blobs).expect_err("a destroyed device cannot hash");
        gpu.device
            .device
            .poll(wgpu::PollType::wait_indefinitely())
            .ok();
        // Memory freed under it would be handed out again, and written.
        let others: Vec<Vec<u8>> = (0..8).map(|_| vec![3u8; 1 << 20]).collect();
        assert!(memory.bytes().iter().all(|&byte| byte == 7));
        memory.bytes_mut()[12345] = 9;
        assert_eq!(memory.bytes()[12345], 9);
        drop(memory);
        drop(others);
    }

    #[test]
    fn slab_plans_respect_the_budget_and_the_limits() {
        let limits = wgpu::Limits::default();
        let wg = layout::DEFAULT_WORKGROUP_SIZE;
        let plan = SlabPlan::new(SlabPlan::MIN_BUDGET, &limits, wg).unwrap();
        assert!(plan.data_bytes >= layout::MAX_ONE_INVOCATION as u64 && plan.entries >= 1);
        let plan = SlabPlan::new(64 << 30, &limits, wg).unwrap();
        assert!(plan.data_bytes <= limits.max_storage_buffer_binding_size);
        assert!(
            plan.entries <= u64::from(limits.max_compute_workgroups_per_dimension) * u64::from(wg)
        );
        assert!(plan.entries * layout::DIGEST_BYTES <= limits.max_storage_buffer_binding_size);
        for budget in [SlabPlan::MIN_BUDGET, 1 << 20, 256 << 20] {
            let plan = SlabPlan::new(budget, &limits, wg).unwrap();
            let per_slab = 2 * (plan.data_bytes + plan.entries * layout::ENTRY_BYTES)
                + 2 * plan.entries * layout::DIGEST_BYTES
                + 2 * plan.job_bytes()
                + plan.cv_bytes();
            assert!(per_slab * SLABS as u64 <= budget, "{budget}: {plan:?}");
        }
        let error = SlabPlan::new(SlabPlan::MIN_BUDGET - 1, &limits, wg).unwrap_err();
        assert!(matches!(error.kind(), ErrorKind::GpuMemoryBudget { .. }));
    }
}
