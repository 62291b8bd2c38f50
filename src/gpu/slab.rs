//! One slab: the buffers for a share of a batch that fits the device's
//! limits and the memory budget, packed straight into mapped staging memory
//! and read back straight into the caller's digests.
//!
//! A slab's life: packed (staging mapped) → submitted (copies in, dispatch,
//! copy out) → read back (readback mapped) → packed again once its staging
//! buffer is mapped anew (or, in host memory, once the GPU has copied it).
//! The stream keeps several slabs at different steps.

use std::sync::mpsc::{channel, Receiver, TryRecvError};
use std::time::Duration;

use wgpu::WriteOnly;

use super::device::{gpu_failed, GpuDevice};
use super::host_memory::HostBuffer;
use super::layout::{
    level_bytes, Params, CV_BYTES, DIGEST_BYTES, ENTRY_BYTES, JOB_BYTES, LEVEL_BYTES, LOAD_BYTES,
    MAX_ONE_INVOCATION, PARAMS_BYTES,
};
use super::pack::{pack, records_in_place, Packed, SlabLayout, SlabView};
use super::pinned::InPlace;
use super::settings::GpuUpload;
use crate::blobs::BlobSource;
use crate::cpu::batch::Threads;
use crate::error::{Error, ErrorKind};
use crate::mode::ModeWords;

/// Slabs in flight: one being packed, one computing, one reading back.
pub(crate) const SLABS: usize = 3;

/// Digests one thread copies out of a slab's readback at a time (2 MiB).
const READBACK_PIECE: usize = 64 * 1024;

/// Timestamps per slab: before upload, the shader's pass's start and end,
/// after the digest copy.
const STAMPS: u32 = 4;
const STAMP_BYTES: u64 = STAMPS as u64 * 8;

/// Dispatches one slab's long blobs can need: their chunks, then a level of
/// parents for each doubling of the longest blob's chunk count.
const MAX_LEVELS: u64 = 1 + u32::BITS as u64;

/// How big each slab is on a given device and budget.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct SlabPlan {
    /// Bytes of blob data one slab holds (a multiple of [`LOAD_BYTES`]).
    pub data_bytes: u64,
    /// Blobs (table entries, digests) one slab holds.
    pub entries: u64,
    /// Chaining value slots for the chunks of the slab's blobs over one
    /// chunk (`tree.rs`): one per 512 bytes of data. Enough: each chunk of
    /// a blob over 1 KiB holds more than 512 of its bytes on average.
    pub tree_slots: u64,
}

impl SlabPlan {
    /// The smallest budget that still holds one 1 KiB blob per slab.
    pub(crate) const MIN_BUDGET: u64 = SLABS as u64 * 5 * MAX_ONE_INVOCATION as u64;

    /// Splits `budget` bytes of GPU memory over [`SLABS`] slabs, each within
    /// the device's binding, buffer and dispatch limits.
    ///
    /// A slab holds its data and table twice (staging and device copies) and
    /// its digests twice (device and readback): two fifths of the slab's
    /// share go to data, 3/80 to the jobs (twice) and chaining values of
    /// long blobs' trees, half to per-blob table and digests (80 bytes per
    /// blob). A dispatch holds at most `max_compute_workgroups_per_dimension`
    /// workgroups of `workgroup_size` invocations.
    pub(crate) fn new(
        budget: u64,
        limits: &wgpu::Limits,
        workgroup_size: u32,
    ) -> Result<SlabPlan, Error> {
        if budget < Self::MIN_BUDGET {
            return Err(ErrorKind::GpuMemoryBudget {
                budget,
                minimum: Self::MIN_BUDGET,
            }
            .into());
        }
        let share = budget / SLABS as u64;
        let largest = limits
            .max_storage_buffer_binding_size
            .min(limits.max_buffer_size);
        let load = LOAD_BYTES as u64;
        let dispatchable =
            u64::from(limits.max_compute_workgroups_per_dimension) * u64::from(workgroup_size);
        let data_bytes = (share / 5).min(largest / 2).min(512 * dispatchable) / load * load;
        let entries = (share / (4 * (ENTRY_BYTES + DIGEST_BYTES)))
            .min(largest / DIGEST_BYTES)
            .min(dispatchable)
            .min(u64::from(u32::MAX - 1));
        Ok(SlabPlan {
            data_bytes,
            entries: entries.max(1),
            tree_slots: data_bytes / 512,
        })
    }

    pub(crate) fn table_bytes(self) -> u64 {
        self.entries * ENTRY_BYTES
    }

    /// Bytes of the jobs of long blobs' trees: chunks, and one parent fewer
    /// than chunks per blob.
    pub(crate) fn job_bytes(self) -> u64 {
        2 * self.tree_slots * JOB_BYTES
    }

    pub(crate) fn cv_bytes(self) -> u64 {
        self.tree_slots * CV_BYTES
    }

    /// The longest blob a slab holds; longer ones stay on the CPU.
    pub(crate) fn max_blob(self) -> usize {
        self.data_bytes as usize
    }
}

/// A pending buffer map.
pub(crate) struct MapWait {
    submission: wgpu::SubmissionIndex,
    done: Receiver<Result<(), wgpu::BufferAsyncError>>,
}

/// Where a slab is packed: the table, the data from `data_offset`, the
/// jobs of long blobs from `jobs_offset`.
enum Staging {
    /// A buffer `wgpu` maps again after every use ([`GpuUpload::Copy`];
    /// with [`GpuUpload::Direct`] the shader reads it in place). `map` is
    /// `None` while it is mapped and ready to pack.
    Mapped {
        buffer: wgpu::Buffer,
        map: Option<MapWait>,
    },
    /// Host memory mapped for good ([`GpuUpload::Host`]); `busy` until the
    /// submission that copies it has finished.
    Host {
        memory: HostBuffer,
        busy: Option<wgpu::SubmissionIndex>,
    },
}

impl Staging {
    fn buffer(&self) -> &wgpu::Buffer {
        match self {
            Staging::Mapped { buffer, .. } => buffer,
            Staging::Host { memory, .. } => memory.buffer(),
        }
    }
}

/// The buffers of one slab.
pub(crate) struct Slab {
    plan: SlabPlan,
    staging: Staging,
    data_offset: u64,
    jobs_offset: u64,
    /// The device's copies of table, data and jobs, with
    /// [`GpuUpload::Copy`].
    device_input: Option<[wgpu::Buffer; 3]>,
    digests: wgpu::Buffer,
    readback: wgpu::Buffer,
    params: wgpu::Buffer,
    /// One `Level` per dispatch of a long blobs' tree, `level_stride`
    /// bytes apart (the device's dynamic offset alignment).
    levels: wgpu::Buffer,
    level_stride: u64,
    bind_group: wgpu::BindGroup,
    stamps: Option<(wgpu::QuerySet, wgpu::Buffer)>,
    readback_map: Option<MapWait>,
}

impl Slab {
    pub(crate) fn new(gpu: &GpuDevice, plan: SlabPlan) -> Result<Slab, Error> {
        let device = &gpu.device;
        let buffer = |label: &str, size: u64, usage: wgpu::BufferUsages, mapped: bool| {
            device.create_buffer(&wgpu::BufferDescriptor {
                label: Some(label),
                size,
                usage,
                mapped_at_creation: mapped,
            })
        };
        use wgpu::BufferUsages as U;
        let table_bytes = plan.table_bytes();
        // Each binding into the staging buffer starts on the device's offset
        // alignment.
        let align = u64::from(gpu.limits.min_storage_buffer_offset_alignment);
        let data_offset = table_bytes.next_multiple_of(align);
        let jobs_offset = (data_offset + plan.data_bytes).next_multiple_of(align);
        let digest_bytes = plan.entries * DIGEST_BYTES;
        let staging_bytes = jobs_offset + plan.job_bytes();
        let device_input = || {
            Some([
                buffer("table", table_bytes, U::STORAGE | U::COPY_DST, false),
                buffer("data", plan.data_bytes, U::STORAGE | U::COPY_DST, false),
                buffer("jobs", plan.job_bytes(), U::STORAGE | U::COPY_DST, false),
            ])
        };
        let mapped = |usage| Staging::Mapped {
            buffer: buffer("staging", staging_bytes, usage, true),
            map: None,
        };
        let (staging, device_input) = match gpu.upload {
            GpuUpload::Copy => (mapped(U::MAP_WRITE | U::COPY_SRC), device_input()),
            GpuUpload::Direct => (mapped(U::MAP_WRITE | U::STORAGE), None),
            GpuUpload::Host => {
                let memory = HostBuffer::new(device, "host staging", staging_bytes)
                    .map_err(|why| gpu_failed("creating a slab's host staging buffer", why))?;
                let staging = Staging::Host { memory, busy: None };
                (staging, device_input())
            }
        };
        let digests = buffer("digests", digest_bytes, U::STORAGE | U::COPY_SRC, false);
        let readback = buffer(
            "readback",
            digest_bytes + STAMP_BYTES,
            U::MAP_READ | U::COPY_DST,
            false,
        );
        let params = buffer("params", PARAMS_BYTES, U::STORAGE | U::COPY_DST, false);
        let cvs = buffer("chaining values", plan.cv_bytes().max(4), U::STORAGE, false);
        let level_stride = LEVEL_BYTES.next_multiple_of(align);
        let levels = buffer(
            "levels",
            MAX_LEVELS * level_stride,
            U::STORAGE | U::COPY_DST,
            false,
        );
        let [table, data, jobs] = match &device_input {
            Some([table, data, jobs]) => [whole(table), whole(data), whole(jobs)],
            None => [
                part(staging.buffer(), 0, table_bytes),
                part(staging.buffer(), data_offset, plan.data_bytes),
                part(staging.buffer(), jobs_offset, plan.job_bytes()),
            ],
        };
        let bind_group = device.create_bind_group(&wgpu::BindGroupDescriptor {
            label: Some("blake3-batch slab"),
            layout: &gpu.bind_layout,
            entries: &[
                entry(0, whole(&params)),
                entry(1, table),
                entry(2, data),
                entry(3, whole(&digests)),
                entry(4, jobs),
                entry(5, whole(&cvs)),
                entry(6, part(&levels, 0, LEVEL_BYTES)),
            ],
        });
        let stamps = gpu.timestamp_period.map(|_| {
            let set = device.create_query_set(&wgpu::QuerySetDescriptor {
                label: Some("slab stamps"),
                ty: wgpu::QueryType::Timestamp,
                count: STAMPS,
            });
            let resolve = buffer("stamps", STAMP_BYTES, U::QUERY_RESOLVE | U::COPY_SRC, false);
            (set, resolve)
        });
        Ok(Slab {
            plan,
            staging,
            data_offset,
            jobs_offset,
            device_input,
            digests,
            readback,
            params,
            levels,
            level_stride,
            bind_group,
            stamps,
            readback_map: None,
        })
    }

    /// Waits until the staging buffer can be packed again after its last
    /// use: mapped anew, or in host memory, copied by the GPU.
    pub(crate) fn ready_to_pack(
        &mut self,
        gpu: &GpuDevice,
        timeout: Duration,
    ) -> Result<(), Error> {
        match &mut self.staging {
            Staging::Mapped { map, .. } => {
                finish_map(gpu, map.take(), timeout, "mapping a staging buffer")
            }
            Staging::Host { busy, .. } => match busy.clone() {
                Some(submission) => {
                    gpu.wait(submission, timeout)?;
                    *busy = None;
                    Ok(())
                }
                None => Ok(()),
            },
        }
    }

    /// Takes blobs from `start` on straight from the pinned buffer they lie
    /// in, `in_place`, where they lie there as the shader reads them
    /// ([`records_in_place`]) and the slab copies into device memory; else
    /// packs them ([`pack`](Self::pack)), packed blobs that lie in it
    /// with only their table.
    pub(crate) fn fill<S: BlobSource>(
        &mut self,
        source: &S,
        start: usize,
        max_blob: usize,
        in_place: Option<&InPlace>,
        threads: Threads,
    ) -> Result<Packed, Error> {
        let max_blob = max_blob.min(self.plan.max_blob());
        // Only a slab with device memory of its own copies from elsewhere.
        let in_place = in_place.filter(|_| self.device_input.is_some());
        if let Some(in_place) = in_place {
            if let Some((bytes, packed)) = records_in_place(source, start, self.plan, max_blob) {
                if in_place.holds(bytes) {
                    return Ok(packed);
                }
            }
        }
        self.pack(source, start, max_blob, threads, in_place)
    }

    /// Packs blobs from `start` on into the mapped staging buffer until the
    /// slab or the batch is full ([`pack`]); blobs over `max_blob` bytes
    /// are left to the CPU, and packed blobs in the pinned buffer
    /// `in_place` are left there for the GPU to copy.
    pub(crate) fn pack<S: BlobSource>(
        &mut self,
        source: &S,
        start: usize,
        max_blob: usize,
        threads: Threads,
        in_place: Option<&InPlace>,
    ) -> Result<Packed, Error> {
        let table_bytes = self.plan.table_bytes() as usize;
        let (data_offset, jobs_offset) = (self.data_offset as usize, self.jobs_offset as usize);
        let parts = |whole| parts(whole, table_bytes, data_offset, jobs_offset);
        let (plan, max_blob) = (self.plan, max_blob.min(self.plan.max_blob()));
        match &mut self.staging {
            Staging::Mapped { buffer, map } => {
                if map.is_some() {
                    return Err(gpu_failed(
                        "packing a slab",
                        "its buffer is not mapped".into(),
                    ));
                }
                let mut view = buffer
                    .get_mapped_range_mut(..)
                    .map_err(|error| gpu_failed("packing a slab", error.to_string()))?;
                let parts = parts(view.slice(..));
                let packed = pack(source, start, plan, max_blob, parts, threads, in_place);
                drop(view);
                buffer.unmap();
                Ok(packed)
            }
            Staging::Host { memory, busy } => {
                if busy.is_some() {
                    return Err(gpu_failed(
                        "packing a slab",
                        "the GPU may be copying it".into(),
                    ));
                }
                // SAFETY: the last submission that copied this buffer has
                // finished (`ready_to_pack` waited for it and cleared
                // `busy`), and none since used it.
                let bytes = unsafe { memory.bytes_mut() };
                let whole = WriteOnly::from_mut(bytes);
                let view = parts(whole);
                Ok(pack(source, start, plan, max_blob, view, threads, in_place))
            }
        }
    }

    /// Records and submits upload, dispatch and download for a packed slab,
    /// then asks for both the readback and, for the next use, the staging
    /// buffer to be mapped when the GPU is done.
    /// Slabs whose data lies in a pinned buffer are copied from
    /// `in_place`.
    pub(crate) fn submit(
        &mut self,
        gpu: &GpuDevice,
        packed: &Packed,
        words: ModeWords,
        in_place: Option<&InPlace>,
        digests_to: Option<(&wgpu::Buffer, u64)>,
    ) {
        let count = packed.count();
        let (params, pipeline, chunks_pipeline) = match packed.layout {
            SlabLayout::Table => (
                Params::table(words, count as u32),
                &gpu.table_pipeline,
                &gpu.chunks_pipeline,
            ),
            SlabLayout::Records { len, stride } => (
                Params::records(words, count as u32, len, stride),
                &gpu.records_pipeline,
                &gpu.chunks_pipeline,
            ),
            SlabLayout::Verbatim => (
                Params::table(words, count as u32),
                &gpu.verbatim_pipeline,
                &gpu.verbatim_chunks_pipeline,
            ),
            SlabLayout::VerbatimRecords { len, first_byte } => (
                Params::verbatim_records(words, count as u32, len, first_byte),
                &gpu.verbatim_records_pipeline,
                &gpu.chunks_pipeline,
            ),
        };
        gpu.queue.write_buffer(&self.params, 0, &params.to_bytes());
        if !packed.tree.is_empty() {
            let mut levels = vec![0u8; packed.tree.len() * self.level_stride as usize];
            for (at, level) in levels
                .chunks_exact_mut(self.level_stride as usize)
                .zip(&packed.tree)
            {
                at[..LEVEL_BYTES as usize].copy_from_slice(&level_bytes(level.first, level.count));
            }
            gpu.queue.write_buffer(&self.levels, 0, &levels);
        }
        let mut encoder = gpu
            .device
            .create_command_encoder(&wgpu::CommandEncoderDescriptor {
                label: Some("blake3-batch slab"),
            });
        let stamp = |encoder: &mut wgpu::CommandEncoder, index: u32| {
            if let Some((set, _)) = &self.stamps {
                encoder.write_timestamp(set, index);
            }
        };
        stamp(&mut encoder, 0);
        if let Some([table, data, jobs]) = &self.device_input {
            let staging = self.staging.buffer();
            if packed.layout.has_table() {
                encoder.copy_buffer_to_buffer(staging, 0, table, 0, count * ENTRY_BYTES);
            }
            match (&packed.in_place, in_place) {
                (Some(range), Some(in_place)) => {
                    let (buffer, from) = in_place.place(range);
                    encoder.copy_buffer_to_buffer(buffer, from, data, 0, packed.data_bytes);
                }
                _ if packed.data_bytes > 0 => {
                    debug_assert!(packed.in_place.is_none(), "in place, but not found");
                    let (from, bytes) = (self.data_offset, packed.data_bytes);
                    encoder.copy_buffer_to_buffer(staging, from, data, 0, bytes);
                }
                _ => {}
            }
            if packed.job_bytes > 0 {
                let (from, bytes) = (self.jobs_offset, packed.job_bytes);
                encoder.copy_buffer_to_buffer(staging, from, jobs, 0, bytes);
            }
        }
        {
            // The pass's own timestamps bracket the shader's work; written
            // from the encoder between commands, they could run before the
            // copies ahead of them finished (on an H200 the slabs' shader
            // times varied fourfold).
            let mut pass = encoder.begin_compute_pass(&wgpu::ComputePassDescriptor {
                label: Some("blake3"),
                timestamp_writes: self.stamps.as_ref().map(|(set, _)| {
                    wgpu::ComputePassTimestampWrites {
                        query_set: set,
                        beginning_of_pass_write_index: Some(1),
                        end_of_pass_write_index: Some(2),
                    }
                }),
            });
            let workgroup = u64::from(gpu.workgroup_size);
            pass.set_pipeline(pipeline);
            pass.set_bind_group(0, &self.bind_group, &[0]);
            pass.dispatch_workgroups(count.div_ceil(workgroup) as u32, 1, 1);
            // Blobs over one chunk: their chunks, then each level of
            // parents, each dispatch after the one before it has finished.
            for (height, level) in packed.tree.iter().enumerate() {
                let pipeline = match height {
                    0 => chunks_pipeline,
                    _ => &gpu.parents_pipeline,
                };
                let offset = height as u64 * self.level_stride;
                pass.set_pipeline(pipeline);
                pass.set_bind_group(0, &self.bind_group, &[offset as u32]);
                let groups = u64::from(level.count).div_ceil(workgroup);
                pass.dispatch_workgroups(groups as u32, 1, 1);
            }
        }
        // Into the caller's pinned memory where their slots lie there, else
        // into the readback, to be copied out on the host.
        let (target, at) = digests_to.unwrap_or((&self.readback, 0));
        encoder.copy_buffer_to_buffer(&self.digests, 0, target, at, count * DIGEST_BYTES);
        stamp(&mut encoder, 3);
        if let Some((set, resolve)) = &self.stamps {
            encoder.resolve_query_set(set, 0..STAMPS, resolve, 0);
            let at = self.plan.entries * DIGEST_BYTES;
            encoder.copy_buffer_to_buffer(resolve, 0, &self.readback, at, STAMP_BYTES);
        }
        let submission = gpu.queue.submit([encoder.finish()]);
        self.readback_map = Some(map(&self.readback, wgpu::MapMode::Read, submission.clone()));
        // Records copied from a pinned buffer left the staging as it was.
        if packed.staged() {
            match &mut self.staging {
                Staging::Mapped { buffer, map: wait } => {
                    *wait = Some(map(buffer, wgpu::MapMode::Write, submission));
                }
                Staging::Host { busy, .. } => *busy = Some(submission),
            }
        }
    }

    /// Waits until the slab's digests are mapped for reading.
    pub(crate) fn ready_to_read(
        &mut self,
        gpu: &GpuDevice,
        timeout: Duration,
    ) -> Result<(), Error> {
        let wait = self.readback_map.take();
        finish_map(gpu, wait, timeout, "mapping the digest readback buffer")
    }

    /// Copies the digests the GPU computed for a slab (after
    /// [`ready_to_read`](Self::ready_to_read)) into `out`, the whole batch's
    /// digests, unless the GPU copied them there itself (`copied`); returns
    /// the GPU stage times when timestamps are on.
    pub(crate) fn read_back<S: BlobSource>(
        &mut self,
        gpu: &GpuDevice,
        source: &S,
        packed: &Packed,
        (out, copied): (&mut [[u8; 32]], bool),
        threads: Threads,
    ) -> Result<Option<[Duration; 3]>, Error> {
        let view = self
            .readback
            .get_mapped_range(..)
            .map_err(|error| gpu_failed("reading digests back", error.to_string()))?;
        let digest_bytes = (packed.count() * DIGEST_BYTES) as usize;
        let digests: &[[u8; 32]] = bytemuck::cast_slice(&view[..digest_bytes]);
        let slots = &mut out[packed.blobs.clone()];
        if copied {
            // Blobs left to the CPU got stale bytes in their slots, which
            // the CPU overwrites once the GPU has finished.
        } else if packed.skipped {
            // Blobs left to the CPU have no GPU digest; the CPU writes theirs.
            for (offset, (slot, digest)) in slots.iter_mut().zip(digests).enumerate() {
                if source.len(packed.blobs.start + offset) <= packed.max_blob {
                    *slot = *digest;
                }
            }
        } else {
            // In pieces on every thread: a slab of 64-byte blobs reads back
            // half as many bytes as it uploaded.
            let pieces: Vec<_> = slots
                .chunks_mut(READBACK_PIECE)
                .zip(digests.chunks(READBACK_PIECE))
                .collect();
            threads.for_each(pieces, |(slots, digests)| slots.copy_from_slice(digests));
        }
        let stages = gpu.timestamp_period.map(|period| {
            let at = (self.plan.entries * DIGEST_BYTES) as usize;
            let stamp = |index: usize| {
                let bytes = &view[at + index * 8..at + index * 8 + 8];
                u64::from_le_bytes(bytes.try_into().expect("8 bytes"))
            };
            let span = |from: usize| {
                let ticks = stamp(from + 1).saturating_sub(stamp(from));
                Duration::from_nanos((ticks as f64 * f64::from(period)) as u64)
            };
            [span(0), span(1), span(2)]
        });
        drop(view);
        self.readback.unmap();
        Ok(stages)
    }
}

/// The table, data and jobs of a slab's whole staging memory.
fn parts(
    whole: WriteOnly<'_, [u8]>,
    table_bytes: usize,
    data_offset: usize,
    jobs_offset: usize,
) -> SlabView<'_> {
    let (table, rest) = whole.split_at(data_offset);
    let (data, jobs) = rest.split_at(jobs_offset - data_offset);
    SlabView {
        table: table.into_slice(..table_bytes),
        data,
        jobs,
    }
}

fn entry(index: u32, resource: wgpu::BindingResource<'_>) -> wgpu::BindGroupEntry<'_> {
    wgpu::BindGroupEntry {
        binding: index,
        resource,
    }
}

fn whole(buffer: &wgpu::Buffer) -> wgpu::BindingResource<'_> {
    buffer.as_entire_binding()
}

/// `size` bytes of `buffer` from `offset` (at least one word, as a
/// binding cannot be empty).
fn part(buffer: &wgpu::Buffer, offset: u64, size: u64) -> wgpu::BindingResource<'_> {
    wgpu::BindingResource::Buffer(wgpu::BufferBinding {
        buffer,
        offset,
        size: wgpu::BufferSize::new(size.max(4)),
    })
}

/// Asks for `buffer` to be mapped once `submission` is done.
pub(crate) fn map(
    buffer: &wgpu::Buffer,
    mode: wgpu::MapMode,
    submission: wgpu::SubmissionIndex,
) -> MapWait {
    let (sender, done) = channel();
    buffer.map_async(mode, .., move |result| {
        // The receiver may be gone if the batch already failed.
        let _ = sender.send(result);
    });
    MapWait { submission, done }
}

/// Waits for a map asked for with [`map`], if one is pending (`None`: the
/// buffer is already mapped).
pub(crate) fn finish_map(
    gpu: &GpuDevice,
    wait: Option<MapWait>,
    timeout: Duration,
    operation: &str,
) -> Result<(), Error> {
    let Some(wait) = wait else { return Ok(()) };
    gpu.wait(wait.submission, timeout)?;
    match wait.done.try_recv() {
        Ok(Ok(())) => Ok(()),
        Ok(Err(error)) => Err(gpu_failed(operation, error.to_string())),
        // Waiting for the submission runs its callbacks, so a missing one
        // means the device dropped it.
        Err(TryRecvError::Empty | TryRecvError::Disconnected) => Err(gpu_failed(
            operation,
            "the map never completed (the device may be lost)".to_owned(),
        )),
    }
}
