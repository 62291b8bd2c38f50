//! Hashing blobs that already live in GPU buffers on the engine's device
//! (`shaders/buffers.wgsl`): for pipelines that decode, decompress or
//! generate data on the card, so nothing crosses the bus but the digests,
//! or not even those.

use std::sync::Mutex;
use std::time::{Duration, Instant};

use super::device::{gpu_failed, timed_out, GpuDevice};
use super::info::GpuDeviceType;
use super::layout::{
    BufferParams, DIGEST_BYTES, MAX_ONE_INVOCATION, PIECE_CHUNKS, SHORT_TREE_CHUNKS, SORT_GROUP,
    STATUS_DECREASING, STATUS_PAST_DATA, TREE_GROUP, TREE_LIST_COUNTS,
};
use super::slab::{finish_map, map};
use super::GpuTimings;
use crate::error::{Error, ErrorKind};
use crate::mode::ModeWords;

/// Offsets of packed blobs in a GPU buffer, Arrow style: `count + 1` of
/// them, blob `i` the bytes from offset `i` to offset `i + 1` of the data.
#[derive(Clone, Copy, Debug)]
pub enum GpuOffsets<'a> {
    /// 32-bit offsets (Arrow `Binary`, `Utf8`).
    U32(&'a wgpu::Buffer),
    /// 64-bit offsets (Arrow `LargeBinary`, `LargeUtf8`), each under 4 GiB.
    U64(&'a wgpu::Buffer),
}

/// Blobs in GPU buffers of the engine's device
/// ([`Engine::wgpu_device`](crate::Engine::wgpu_device)), every buffer
/// created with `BufferUsages::STORAGE`. Blobs of any length: one of at
/// most 1 KiB is one invocation of the shader, one of up to 16 KiB a tree
/// of chunks that one invocation hashes, one of up to 256 KiB a tree that a
/// workgroup of 64 hashes, 64 chunks at a time, and a longer one is split
/// in pieces of 256 KiB that workgroups hash side by side, so that even a
/// single large blob keeps many of the card's cores busy.
#[derive(Clone, Copy, Debug)]
pub enum GpuBlobs<'a> {
    /// `count` blobs packed in `data` with `offsets`; the offsets may
    /// start above 0 and the buffer may hold more than they cover.
    /// Offsets that decrease or run past the data are found on the GPU and
    /// make the call fail before any digest is written.
    Packed {
        /// The blobs' bytes.
        data: &'a wgpu::Buffer,
        /// `count + 1` offsets into `data`.
        offsets: GpuOffsets<'a>,
        /// How many blobs.
        count: u32,
    },
    /// `count` records of `record_size` bytes (at least 1) back to back
    /// from byte `first_byte` of `data`.
    Records {
        /// The records' bytes.
        data: &'a wgpu::Buffer,
        /// Where the first record starts in `data`.
        first_byte: u64,
        /// Bytes a record, at least 1.
        record_size: u32,
        /// How many records.
        count: u32,
    },
}

impl GpuBlobs<'_> {
    /// How many blobs.
    pub fn count(&self) -> u32 {
        match *self {
            GpuBlobs::Packed { count, .. } | GpuBlobs::Records { count, .. } => count,
        }
    }
}

/// The small buffers a call uses, kept in a [`ScratchPool`] and reused
/// (created per call, they were a tenth of a 256 MiB batch's time on an
/// H200).
pub(crate) struct Scratch {
    params: wgpu::Buffer,
    /// What `check_packed` found (8 bytes), the token of the call that
    /// last wrote it (4 bytes, for the host) and the block counts seen (4
    /// bytes), all bound.
    status: wgpu::Buffer,
    /// Binds where records have no offsets.
    placeholder: wgpu::Buffer,
    /// The packed blobs over one chunk that `check_packed` lists for
    /// `hash_trees`: their counts and the next piece to take, then their
    /// indices. Grown to the largest call's need, as is the next.
    tree_list: wgpu::Buffer,
    /// The blobs over `PIECE_CHUNKS` chunks, and their pieces' chaining
    /// values for `join_pieces`.
    piece_list: wgpu::Buffer,
    /// The status buffer's 16 bytes, then the timestamps, for the host.
    status_readback: wgpu::Buffer,
    stamps: Option<(wgpu::QuerySet, wgpu::Buffer)>,
    /// Calls recorded with this set so far: the token of the next.
    calls: u32,
}

impl Scratch {
    pub(crate) fn new(gpu: &GpuDevice) -> Scratch {
        let device = &gpu.device;
        let buffer = |label, size, usage| new_buffer(device, label, size, usage);
        use wgpu::BufferUsages as U;
        Scratch {
            params: buffer("buffer params", 64, U::STORAGE | U::COPY_DST),
            status: buffer("status", 16, U::STORAGE | U::COPY_DST | U::COPY_SRC),
            placeholder: buffer("no offsets", 16, U::STORAGE),
            tree_list: buffer("tree blobs", 16, U::STORAGE | U::COPY_DST),
            piece_list: buffer("pieces", MIN_PIECE_LIST_BYTES, U::STORAGE),
            status_readback: buffer(
                "status readback",
                16 + STAMPS_BYTES,
                U::MAP_READ | U::COPY_DST,
            ),
            stamps: gpu.timestamp_period.map(|_| {
                let set = device.create_query_set(&wgpu::QuerySetDescriptor {
                    label: Some("buffer stamps"),
                    ty: wgpu::QueryType::Timestamp,
                    count: STAMPS,
                });
                (
                    set,
                    buffer("stamps", STAMPS_BYTES, U::QUERY_RESOLVE | U::COPY_SRC),
                )
            }),
            calls: 0,
        }
    }
}

/// Timestamps a call writes: the hash pass's beginning and end, then the
/// check pass's (packed blobs only).
const STAMPS: u32 = 4;
const STAMPS_BYTES: u64 = 8 * STAMPS as u64;

/// The GPU times of one call's passes, where timestamps are on.
#[derive(Clone, Copy, Debug, Default)]
pub(crate) struct PassTimes {
    /// The hash pass: the shader alone.
    pub hash: Option<Duration>,
    /// The pass that checks packed blobs' offsets before it.
    pub check: Option<Duration>,
}

/// Where the digests go: a caller's buffer, or the host.
pub(crate) enum Digests<'a> {
    Buffer {
        buffer: &'a wgpu::Buffer,
        offset: u64,
    },
    Host(&'a mut [[u8; 32]]),
}

fn buffer_error(buffer: &str, reason: String) -> Error {
    ErrorKind::GpuBuffer {
        buffer: buffer.to_owned(),
        reason,
    }
    .into()
}

/// Fails unless `buffer` was created with `STORAGE` usage.
fn check_storage(name: &str, buffer: &wgpu::Buffer) -> Result<(), Error> {
    if buffer.usage().contains(wgpu::BufferUsages::STORAGE) {
        Ok(())
    } else {
        Err(buffer_error(
            name,
            format!(
                "was created with usage {:?}, without STORAGE: create it with \
                 BufferUsages::STORAGE so the shader can bind it",
                buffer.usage()
            ),
        ))
    }
}

/// The most bytes of `buffer` one binding covers on this device.
fn bindable(gpu: &GpuDevice, buffer: &wgpu::Buffer) -> u64 {
    buffer
        .size()
        .min(gpu.limits.max_storage_buffer_binding_size)
        .min(u64::from(u32::MAX))
        / 4
        * 4
}

/// What one dispatch of the buffer shader covers, checked on the host.
struct Plan<'a> {
    params: BufferParams,
    data: &'a wgpu::Buffer,
    data_binding: u64,
    /// The offsets buffer and the bytes of it bound, for packed blobs.
    offsets: Option<(&'a wgpu::Buffer, u64)>,
    /// Workgroups of `hash_packed` or `hash_records`, none where every
    /// blob is `hash_trees`'.
    groups: Option<(u32, u32)>,
    /// Workgroups of the check pass (along x only).
    check_groups: u32,
    /// Workgroups of `hash_trees` (none where no blob can be over one
    /// chunk).
    tree_groups: u32,
    /// Workgroups of `join_pieces` (none where no blob can be over
    /// `PIECE_CHUNKS` chunks).
    join_groups: u32,
    /// Bytes the list of packed blobs over one chunk needs: its counts,
    /// and room for as many as the data can hold.
    tree_list_bytes: u64,
    /// Bytes the list of blobs over `PIECE_CHUNKS` chunks and their
    /// pieces' chaining values need.
    piece_list_bytes: u64,
}

/// The smallest list of pieces bound: one piece's chaining value.
const MIN_PIECE_LIST_BYTES: u64 = 32;

/// How many of a call's blobs may be over one chunk, at most: of up to
/// `SHORT_TREE_CHUNKS` chunks (for packed blobs, of any length over one
/// chunk: the room their list needs), of up to `PIECE_CHUNKS`, of more,
/// and the pieces of the last.
struct TreeBlobs {
    short: u32,
    long: u32,
    split: u32,
    pieces: u32,
}

impl TreeBlobs {
    /// Every record is of one kind.
    fn records(count: u32, record_size: u32) -> TreeBlobs {
        let chunks = record_size.div_ceil(MAX_ONE_INVOCATION as u32);
        let all_if = |kind: bool| if kind { count } else { 0 };
        TreeBlobs {
            short: all_if(chunks > 1 && chunks <= SHORT_TREE_CHUNKS),
            long: all_if(chunks > SHORT_TREE_CHUNKS && chunks <= PIECE_CHUNKS),
            split: all_if(chunks > PIECE_CHUNKS),
            pieces: all_if(chunks > PIECE_CHUNKS) * chunks.div_ceil(PIECE_CHUNKS),
        }
    }

    /// Packed blobs may be of every kind, as many of each as `data_bytes`
    /// have room for (a good batch's blobs never overlap).
    fn packed(count: u32, data_bytes: u32) -> TreeBlobs {
        let one_chunk = MAX_ONE_INVOCATION as u32;
        let longer_than = |chunks: u32| count.min(data_bytes / (chunks * one_chunk + 1));
        let split = longer_than(PIECE_CHUNKS);
        TreeBlobs {
            short: longer_than(1),
            long: longer_than(SHORT_TREE_CHUNKS),
            split,
            // A piece of each such blob may be short.
            pieces: data_bytes / (PIECE_CHUNKS * one_chunk) + split,
        }
    }
}

/// Workgroups of `hash_trees` on a card, where a packed batch may have
/// blobs over one chunk: twice what an H200 keeps resident at once (132
/// multiprocessors, about 16 workgroups of 64 each at this shader's
/// registers), so that blobs of unequal lengths even out. Each takes every
/// so many of the blobs `check_packed` listed, and returns at once where
/// there are none: a batch without such blobs pays a few microseconds.
const TREE_WORKGROUPS: u32 = 4096;
/// The same on a software adapter, which ran each workgroup with nothing
/// to do in a few microseconds: one per core or so.
const TREE_WORKGROUPS_CPU: u32 = 4;

/// Workgroups of `hash_trees` for `trees`' short blobs, an invocation
/// each, long ones and pieces, a workgroup each; at most `most`.
fn tree_groups(gpu: &GpuDevice, trees: &TreeBlobs, most: u32) -> u32 {
    trees
        .short
        .div_ceil(TREE_GROUP)
        .max(trees.long)
        .max(trees.pieces)
        .min(most)
        .min(gpu.limits.max_compute_workgroups_per_dimension)
}

/// Blobs each invocation of the check pass takes on a card, once a batch
/// is large enough to keep it busy with fewer invocations than blobs.
/// A software adapter keeps one each: its loop cost more than the
/// invocations it saved (64 MiB of 64-byte blobs on lavapipe: 31 ms
/// against 24 ms).
const CHECK_BLOBS_PER_INVOCATION: u32 = 16;
/// Invocations below which the check pass keeps one blob each.
const CHECK_MIN_INVOCATIONS: u32 = 1 << 16;

/// Workgroups for the check pass over `count` blobs (along x only, at
/// most the device's limit).
fn check_groups(gpu: &GpuDevice, count: u32) -> u32 {
    let invocations = match gpu.info.device_type {
        GpuDeviceType::Cpu => count,
        _ => count
            .div_ceil(CHECK_BLOBS_PER_INVOCATION)
            .max(count.min(CHECK_MIN_INVOCATIONS)),
    };
    invocations
        .div_ceil(gpu.workgroup_size)
        .clamp(1, gpu.limits.max_compute_workgroups_per_dimension)
}

fn plan<'a>(gpu: &GpuDevice, words: ModeWords, blobs: GpuBlobs<'a>) -> Result<Plan<'a>, Error> {
    let count = blobs.count();
    // Packed blobs are sorted by block count in workgroups of their own
    // size.
    let wg = match blobs {
        GpuBlobs::Packed { .. } => SORT_GROUP,
        GpuBlobs::Records { .. } => gpu.workgroup_size,
    };
    let per_row = gpu.limits.max_compute_workgroups_per_dimension;
    let groups_x = count.div_ceil(wg).clamp(1, per_row);
    let row = groups_x * wg;
    let groups_y = count.div_ceil(row).max(1);
    if groups_y > per_row {
        return Err(buffer_error(
            "data",
            format!(
                "{count} blobs are more than one dispatch covers on this device: split the batch"
            ),
        ));
    }
    let check_groups = check_groups(gpu, count);
    let mut params = BufferParams {
        key: words.key,
        base_flags: words.flags,
        count,
        row,
        offset_words: 1,
        check_stride: check_groups * gpu.workgroup_size,
        ..BufferParams::default()
    };
    let (data, offsets) = match blobs {
        GpuBlobs::Packed {
            data,
            offsets,
            count,
        } => {
            let (buffer, width) = match offsets {
                GpuOffsets::U32(buffer) => (buffer, 4),
                GpuOffsets::U64(buffer) => (buffer, 8),
            };
            check_storage("offsets", buffer)?;
            if count >= 1 << 29 {
                return Err(buffer_error(
                    "offsets",
                    format!("{count} blobs: at most 2^29 packed blobs a call; split the batch"),
                ));
            }
            let needed = (u64::from(count) + 1) * width;
            if buffer.size() < needed {
                return Err(buffer_error(
                    "offsets",
                    format!(
                        "holds {} bytes, but {count} blobs need {} offsets of {width} bytes \
                         ({needed} bytes)",
                        buffer.size(),
                        u64::from(count) + 1
                    ),
                ));
            }
            if needed > gpu.limits.max_storage_buffer_binding_size {
                return Err(buffer_error(
                    "offsets",
                    format!(
                        "{needed} bytes of offsets are more than one binding holds on this \
                         device ({}): split the batch",
                        gpu.limits.max_storage_buffer_binding_size
                    ),
                ));
            }
            params.offset_words = (width / 4) as u32;
            (data, Some((buffer, needed.next_multiple_of(4))))
        }
        GpuBlobs::Records {
            data,
            first_byte,
            record_size,
            count,
        } => {
            if record_size == 0 {
                return Err(buffer_error(
                    "data",
                    "records of 0 bytes: records in GPU buffers are at least 1 byte (hash \
                     empty blobs as packed blobs with equal offsets)"
                        .to_owned(),
                ));
            }
            let end = first_byte + u64::from(count) * u64::from(record_size);
            if end > data.size() || end > bindable(gpu, data) {
                return Err(buffer_error(
                    "data",
                    format!(
                        "{count} records of {record_size} bytes from byte {first_byte} end at \
                         byte {end}, past the {} bytes of the buffer that can be bound \
                         (buffer size {}, binding limit {})",
                        bindable(gpu, data),
                        data.size(),
                        gpu.limits.max_storage_buffer_binding_size
                    ),
                ));
            }
            params.first_byte = first_byte as u32;
            params.record_len = record_size;
            (data, None)
        }
    };
    check_storage("data", data)?;
    let data_binding = bindable(gpu, data);
    params.data_bytes = data_binding as u32;
    // Blobs of one chunk are `hash_packed`'s or `hash_records`', longer
    // ones `hash_trees`' (and those split in pieces, then `join_pieces`').
    let one_chunk = MAX_ONE_INVOCATION as u32;
    let (one_chunk_blobs, trees, most) = match blobs {
        GpuBlobs::Records { record_size, .. } => (
            record_size <= one_chunk,
            TreeBlobs::records(count, record_size),
            u32::MAX,
        ),
        GpuBlobs::Packed { .. } => {
            let most = match gpu.info.device_type {
                GpuDeviceType::Cpu => TREE_WORKGROUPS_CPU,
                _ => TREE_WORKGROUPS,
            };
            (true, TreeBlobs::packed(count, params.data_bytes), most)
        }
    };
    // Records need no lists: every workgroup knows where each one lies.
    let listed = offsets.is_some();
    let listed_split = if listed { trees.split } else { 0 };
    Ok(Plan {
        params,
        data,
        data_binding,
        offsets,
        groups: one_chunk_blobs.then_some((groups_x, groups_y)),
        check_groups,
        tree_groups: tree_groups(gpu, &trees, most),
        join_groups: trees
            .split
            .min(most)
            .min(gpu.limits.max_compute_workgroups_per_dimension),
        tree_list_bytes: 4 * u64::from(TREE_LIST_COUNTS + if listed { trees.short } else { 0 }),
        piece_list_bytes: (16 * (u64::from(listed_split) + 2 * u64::from(trees.pieces)))
            .max(MIN_PIECE_LIST_BYTES),
    })
}

/// Scratch sets no call is using. A call takes one and gives it back once
/// the GPU has finished with it, so calls recorded into several command
/// buffers before any is submitted each have their own.
#[derive(Default)]
pub(crate) struct ScratchPool(Mutex<Vec<Scratch>>);

impl ScratchPool {
    fn take(&self, gpu: &GpuDevice) -> Scratch {
        let spare = self.lock().pop();
        spare.unwrap_or_else(|| Scratch::new(gpu))
    }

    fn give(&self, scratch: Scratch) {
        self.lock().push(scratch);
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, Vec<Scratch>> {
        self.0.lock().unwrap_or_else(|poison| poison.into_inner())
    }
}

/// A call recorded into a command buffer, not yet known to be finished:
/// the scratch its status and timestamps land in.
pub(crate) struct Recorded {
    scratch: Scratch,
    /// What the status readback holds once these commands have run (a
    /// set's readback still holds its previous call's token until then).
    token: u32,
    /// Whether a check pass runs (and writes its timestamps).
    checked: bool,
}

/// Where a recorded call writes its digests.
struct Target<'a> {
    buffer: &'a wgpu::Buffer,
    offset: u64,
    /// A host call's digests, copied after the hash pass into this buffer
    /// from this byte: a readback, or the pinned memory their slots lie in.
    copy_to: Option<(&'a wgpu::Buffer, u64)>,
}

/// Checks a caller's digest buffer: `STORAGE` usage, room for `count`
/// digests from `offset`, an offset the device can bind.
fn check_digests(
    gpu: &GpuDevice,
    buffer: &wgpu::Buffer,
    offset: u64,
    count: u32,
) -> Result<(), Error> {
    check_storage("digests", buffer)?;
    let digest_bytes = u64::from(count) * DIGEST_BYTES;
    let alignment = u64::from(gpu.limits.min_storage_buffer_offset_alignment);
    if !offset.is_multiple_of(alignment) || offset + digest_bytes > buffer.size() {
        return Err(buffer_error(
            "digests",
            format!(
                "{count} digests from byte {offset} need bytes {offset}..{} of a buffer of \
                 {} bytes, at an offset that is a multiple of {alignment}",
                offset + digest_bytes,
                buffer.size()
            ),
        ));
    }
    Ok(())
}

/// Hashes `blobs` into `digests`, waiting for the GPU; returns the timings
/// of the call. Host digests whose slots lie in pinned memory
/// (`pinned_slots`: its buffer and their offset in it) are copied there by
/// the GPU.
pub(crate) fn hash(
    gpu: &GpuDevice,
    pool: &ScratchPool,
    words: ModeWords,
    blobs: GpuBlobs,
    (digests, pinned_slots): (Digests, Option<(&wgpu::Buffer, u64)>),
    timeout: Duration,
) -> Result<GpuTimings, Error> {
    let started = Instant::now();
    let count = blobs.count();
    let digest_bytes = u64::from(count) * DIGEST_BYTES;
    let mut timings = GpuTimings {
        gpu_blobs: count as usize,
        ..GpuTimings::default()
    };
    match &digests {
        Digests::Buffer { buffer, offset } => check_digests(gpu, buffer, *offset, count)?,
        Digests::Host(out) if out.len() != count as usize => {
            return Err(ErrorKind::OutputLength {
                expected: count as usize,
                actual: out.len(),
            }
            .into())
        }
        Digests::Host(_) => {}
    }
    if count == 0 {
        return Ok(timings);
    }
    use wgpu::BufferUsages as U;
    let buffer = |label, size, usage| new_buffer(&gpu.device, label, size, usage);
    let host = match &digests {
        Digests::Host(_) => Some(buffer("digests", digest_bytes, U::STORAGE | U::COPY_SRC)),
        Digests::Buffer { .. } => None,
    };
    let readback = match (&host, pinned_slots) {
        (Some(_), None) => Some(buffer(
            "digest readback",
            digest_bytes,
            U::MAP_READ | U::COPY_DST,
        )),
        _ => None,
    };
    let target = match (&digests, &host) {
        (Digests::Buffer { buffer, offset }, _) => Target {
            buffer,
            offset: *offset,
            copy_to: None,
        },
        (Digests::Host(_), Some(buffer)) => {
            timings.digests_in_place = if pinned_slots.is_some() {
                count as usize
            } else {
                0
            };
            Target {
                buffer,
                offset: 0,
                copy_to: pinned_slots.or(readback.as_ref().map(|readback| (readback, 0))),
            }
        }
        (Digests::Host(_), None) => unreachable!("a host call has its own digest buffer"),
    };
    let (commands, recorded) = record(gpu, pool, words, blobs, target)?;
    let submission = gpu.queue.submit([commands]);
    let waiting = Instant::now();
    let digest_map = readback
        .as_ref()
        .map(|readback| map(readback, wgpu::MapMode::Read, submission.clone()));
    let passes = finish(gpu, pool, recorded, Some(submission), timeout)?;
    (timings.dispatch, timings.check) = (passes.hash, passes.check);
    if let (Digests::Host(out), Some(readback)) = (digests, &readback) {
        finish_map(gpu, digest_map, timeout, "reading digests back")?;
        timings.wait = waiting.elapsed();
        let copying = Instant::now();
        let view = readback
            .get_mapped_range(..)
            .map_err(|error| gpu_failed("reading digests back", error.to_string()))?;
        out.copy_from_slice(bytemuck::cast_slice(&view));
        timings.readback = copying.elapsed();
    } else {
        timings.wait = waiting.elapsed();
    }
    timings.slabs = 1;
    timings.total = started.elapsed();
    Ok(timings)
}

/// Records hashing `blobs` into the caller's `digests` from byte `offset`
/// as a command buffer for the caller to submit, and what
/// [`finish`] needs to report on it once submitted (`None` for no blobs:
/// the commands are empty).
pub(crate) fn encode(
    gpu: &GpuDevice,
    pool: &ScratchPool,
    words: ModeWords,
    blobs: GpuBlobs,
    digests: &wgpu::Buffer,
    offset: u64,
) -> Result<(wgpu::CommandBuffer, Option<Recorded>), Error> {
    check_digests(gpu, digests, offset, blobs.count())?;
    if blobs.count() == 0 {
        let encoder = gpu
            .device
            .create_command_encoder(&wgpu::CommandEncoderDescriptor {
                label: Some("blake3-batch: no blobs"),
            });
        return Ok((encoder.finish(), None));
    }
    let target = Target {
        buffer: digests,
        offset,
        copy_to: None,
    };
    let (commands, recorded) = record(gpu, pool, words, blobs, target)?;
    Ok((commands, Some(recorded)))
}

/// Plans the call, writes its parameters into a scratch set from `pool`
/// and records the check, the hash and the status copy. Nothing runs
/// until the commands are submitted.
fn record(
    gpu: &GpuDevice,
    pool: &ScratchPool,
    words: ModeWords,
    blobs: GpuBlobs,
    target: Target,
) -> Result<(wgpu::CommandBuffer, Recorded), Error> {
    let count = blobs.count();
    let digest_bytes = u64::from(count) * DIGEST_BYTES;
    if digest_bytes > gpu.limits.max_storage_buffer_binding_size {
        return Err(buffer_error(
            "digests",
            format!(
                "{count} digests ({digest_bytes} bytes) are more than one binding holds on \
                 this device ({}): split the batch",
                gpu.limits.max_storage_buffer_binding_size
            ),
        ));
    }
    let plan = plan(gpu, words, blobs)?;
    let mut scratch = pool.take(gpu);
    scratch.calls = scratch.calls.wrapping_add(1);
    let token = scratch.calls;
    let device = &gpu.device;
    let scope = device.push_error_scope(wgpu::ErrorFilter::Validation);
    // Written before the next submission on the queue, so before these
    // commands whenever the caller submits them.
    gpu.queue
        .write_buffer(&scratch.params, 0, &plan.params.to_bytes());
    let mut initial = [0u8; 16];
    initial[4..8].copy_from_slice(&u32::MAX.to_le_bytes());
    initial[8..12].copy_from_slice(&token.to_le_bytes());
    gpu.queue.write_buffer(&scratch.status, 0, &initial);
    use wgpu::BufferUsages as U;
    if scratch.tree_list.size() < plan.tree_list_bytes {
        let size = plan.tree_list_bytes.next_multiple_of(256);
        scratch.tree_list = new_buffer(device, "tree blobs", size, U::STORAGE | U::COPY_DST);
    }
    if scratch.piece_list.size() < plan.piece_list_bytes {
        let size = plan.piece_list_bytes.next_multiple_of(256);
        scratch.piece_list = new_buffer(device, "pieces", size, U::STORAGE);
    }
    // Its counts, for `check_packed` to count from, and the pieces taken
    // by `hash_trees` (records have no list, but may have pieces).
    if plan.tree_groups > 0 {
        let counts = [0; 4 * TREE_LIST_COUNTS as usize];
        gpu.queue.write_buffer(&scratch.tree_list, 0, &counts);
    }
    // Records bind no offsets: a placeholder fills the slot.
    let (offsets, offsets_size) = plan.offsets.unwrap_or((&scratch.placeholder, 16));
    let bind = |binding, buffer, offset, size| wgpu::BindGroupEntry {
        binding,
        resource: wgpu::BindingResource::Buffer(wgpu::BufferBinding {
            buffer,
            offset,
            size: wgpu::BufferSize::new(size),
        }),
    };
    let bind_group = device.create_bind_group(&wgpu::BindGroupDescriptor {
        label: Some("blake3-batch buffers"),
        layout: &gpu.buffers.layout,
        entries: &[
            bind(0, &scratch.params, 0, 64),
            bind(1, offsets, 0, offsets_size),
            bind(2, plan.data, 0, plan.data_binding.max(4)),
            bind(3, target.buffer, target.offset, digest_bytes),
            bind(4, &scratch.status, 0, 16),
            bind(5, &scratch.tree_list, 0, scratch.tree_list.size()),
            bind(6, &scratch.piece_list, 0, scratch.piece_list.size()),
        ],
    });
    let mut encoder = device.create_command_encoder(&wgpu::CommandEncoderDescriptor {
        label: Some("blake3-batch buffers"),
    });
    let stamps = |first| {
        scratch
            .stamps
            .as_ref()
            .map(|(set, _)| wgpu::ComputePassTimestampWrites {
                query_set: set,
                beginning_of_pass_write_index: Some(first),
                end_of_pass_write_index: Some(first + 1),
            })
    };
    // Packed blobs' offsets are checked in a pass before the hash.
    let checked = plan.offsets.is_some();
    if checked {
        let mut pass = encoder.begin_compute_pass(&wgpu::ComputePassDescriptor {
            label: Some("blake3 buffers check"),
            timestamp_writes: stamps(2),
        });
        pass.set_bind_group(0, &bind_group, &[]);
        pass.set_pipeline(&gpu.buffers.check_packed);
        pass.dispatch_workgroups(plan.check_groups, 1, 1);
    }
    {
        let mut pass = encoder.begin_compute_pass(&wgpu::ComputePassDescriptor {
            label: Some("blake3 buffers"),
            timestamp_writes: stamps(0),
        });
        pass.set_bind_group(0, &bind_group, &[]);
        if let Some((x, y)) = plan.groups {
            let pipeline = match plan.offsets {
                Some(_) => &gpu.buffers.hash_packed,
                None => &gpu.buffers.hash_records,
            };
            pass.set_pipeline(pipeline);
            pass.dispatch_workgroups(x, y, 1);
        }
        if plan.tree_groups > 0 {
            pass.set_pipeline(&gpu.buffers.hash_trees);
            pass.dispatch_workgroups(plan.tree_groups, 1, 1);
        }
        // Once every piece is hashed: a dispatch starts after the one
        // before it in the pass has finished.
        if plan.join_groups > 0 {
            pass.set_pipeline(&gpu.buffers.join_pieces);
            pass.dispatch_workgroups(plan.join_groups, 1, 1);
        }
    }
    // Only the stamps written: records have no check pass.
    let written = if checked { STAMPS } else { 2 };
    if let Some((set, resolve)) = &scratch.stamps {
        encoder.resolve_query_set(set, 0..written, resolve, 0);
        let bytes = 8 * u64::from(written);
        encoder.copy_buffer_to_buffer(resolve, 0, &scratch.status_readback, 16, bytes);
    }
    encoder.copy_buffer_to_buffer(&scratch.status, 0, &scratch.status_readback, 0, 16);
    if let Some((copy_to, at)) = target.copy_to {
        encoder.copy_buffer_to_buffer(target.buffer, 0, copy_to, at, digest_bytes);
    }
    let commands = encoder.finish();
    if let Some(error) = pollster::block_on(scope.pop()) {
        // The scratch was never bound to anything that runs: keep it.
        pool.give(scratch);
        return Err(gpu_failed(
            "hashing blobs in GPU buffers",
            format!("{error} (are the buffers from the engine's device?)"),
        ));
    }
    Ok((
        commands,
        Recorded {
            scratch,
            token,
            checked,
        },
    ))
}

/// Waits for a recorded call, submitted as `submission` (or in one before
/// it) or, where that is `None`, with everything submitted so far (at
/// most `timeout`); gives its scratch back and returns its passes' times where
/// timestamps are on, or the error for bad offsets (in which case nothing
/// was written).
pub(crate) fn finish(
    gpu: &GpuDevice,
    pool: &ScratchPool,
    recorded: Recorded,
    submission: Option<wgpu::SubmissionIndex>,
    timeout: Duration,
) -> Result<PassTimes, Error> {
    let status_readback = &recorded.scratch.status_readback;
    let (sent, done) = std::sync::mpsc::channel();
    status_readback.map_async(wgpu::MapMode::Read, .., move |result| {
        // The receiver is gone if the wait already failed.
        let _ = sent.send(result);
    });
    // A failure below drops the scratch (its readback may stay mapped):
    // the next call makes a fresh one.
    let polled = gpu.device.poll(wgpu::PollType::Wait {
        submission_index: submission,
        timeout: Some(timeout),
    });
    gpu.check_faults()?;
    match polled {
        Ok(_) => {}
        Err(wgpu::PollError::Timeout) => return Err(timed_out(timeout)),
        Err(error) => return Err(gpu_failed("waiting for the blobs' hash", error.to_string())),
    }
    let not_run = || {
        gpu_failed(
            "waiting for the blobs' hash",
            "its commands have not run: submit them on the engine's queue \
             (Engine::wgpu_device) before waiting"
                .to_owned(),
        )
    };
    match done.try_recv() {
        Ok(Ok(())) => {}
        Ok(Err(error)) => return Err(gpu_failed("reading the blobs' status", error.to_string())),
        Err(_) => return Err(not_run()),
    }
    let view = status_readback
        .get_mapped_range(..)
        .map_err(|error| gpu_failed("reading the blobs' status", error.to_string()))?;
    let word = |at: usize| u32::from_le_bytes(view[at..at + 4].try_into().expect("4 bytes"));
    let (problems, first_bad, token) = (word(0), word(4), word(8));
    let pass = |first: usize| {
        gpu.timestamp_period.map(|period| {
            let stamp = |index: usize| {
                let at = 16 + 8 * index;
                u64::from_le_bytes(view[at..at + 8].try_into().expect("8 bytes"))
            };
            let ticks = stamp(first + 1).saturating_sub(stamp(first));
            Duration::from_nanos((ticks as f64 * f64::from(period)) as u64)
        })
    };
    let passes = PassTimes {
        hash: pass(0),
        check: pass(2).filter(|_| recorded.checked),
    };
    drop(view);
    // Unmapped, so that commands submitted after all can still copy into
    // it.
    status_readback.unmap();
    if token != recorded.token {
        return Err(not_run());
    }
    pool.give(recorded.scratch);
    if problems != 0 {
        return Err(packed_problem(first_bad % 8, first_bad / 8));
    }
    Ok(passes)
}

/// The error for what `check_packed` found at blob `index`, the first
/// with a problem (`problems`, its bits).
fn packed_problem(problems: u32, index: u32) -> Error {
    let what = if problems & STATUS_DECREASING != 0 {
        "its end offset is below its start (offsets must never decrease)"
    } else if problems & STATUS_PAST_DATA != 0 {
        "its offsets point past the data buffer, past 4 GiB or past the device's \
         binding limit (every offset must be at most the data's length)"
    } else {
        "unknown problem"
    };
    buffer_error(
        "offsets",
        format!("blob {index} (the first with a problem): {what}; no digest was written"),
    )
}

/// An unmapped buffer.
fn new_buffer(
    device: &wgpu::Device,
    label: &str,
    size: u64,
    usage: wgpu::BufferUsages,
) -> wgpu::Buffer {
    device.create_buffer(&wgpu::BufferDescriptor {
        label: Some(label),
        size,
        usage,
        mapped_at_creation: false,
    })
}
