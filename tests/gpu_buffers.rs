//! Blobs that already live in GPU buffers (`Engine::hash_gpu_blobs`): the
//! official vectors and random batches against `blake3`, packed (u32 and
//! u64 offsets that start above 0, at odd byte offsets, in a buffer larger
//! than the data) and as records; blobs over one chunk at its boundaries;
//! a device the caller opened; and the errors for buffers that cannot be
//! used as given, with nothing written.
#![cfg(feature = "gpu")]

mod common;

use blake3_batch::wgpu::{self, util::DeviceExt};
use blake3_batch::{Backend, Engine, ErrorKind, GpuBlobs, GpuOffsets, Mode};
use common::{gpu_engine, reference, vector_input, vectors, xorshift};

const STORAGE: wgpu::BufferUsages = wgpu::BufferUsages::STORAGE;

fn upload(engine: &Engine, bytes: &[u8], usage: wgpu::BufferUsages) -> wgpu::Buffer {
    let (device, _) = engine.wgpu_device().expect("a GPU engine");
    // Storage bindings are whole words: pad the buffer, not the data.
    let mut padded = bytes.to_vec();
    padded.resize(bytes.len().next_multiple_of(4).max(4), 0xCC);
    device.create_buffer_init(&wgpu::util::BufferInitDescriptor {
        label: Some("test"),
        contents: &padded,
        usage,
    })
}

fn offsets_u32(offsets: &[u64]) -> Vec<u8> {
    offsets
        .iter()
        .flat_map(|&o| (o as u32).to_le_bytes())
        .collect()
}

fn offsets_u64(offsets: &[u64]) -> Vec<u8> {
    offsets.iter().flat_map(|&o| o.to_le_bytes()).collect()
}

/// Reads `len` bytes of `buffer` (created with COPY_SRC) back to the host.
fn read(engine: &Engine, buffer: &wgpu::Buffer, len: u64) -> Vec<u8> {
    let (device, queue) = engine.wgpu_device().unwrap();
    let staging = device.create_buffer(&wgpu::BufferDescriptor {
        label: Some("test readback"),
        size: len,
        usage: wgpu::BufferUsages::MAP_READ | wgpu::BufferUsages::COPY_DST,
        mapped_at_creation: false,
    });
    let mut encoder = device.create_command_encoder(&Default::default());
    encoder.copy_buffer_to_buffer(buffer, 0, &staging, 0, len);
    queue.submit([encoder.finish()]);
    staging.map_async(wgpu::MapMode::Read, .., |result| result.unwrap());
    device.poll(wgpu::PollType::wait_indefinitely()).unwrap();
    staging.get_mapped_range(..).unwrap().to_vec()
}

/// Packs `blobs` after `lead` bytes, followed by `tail` spare bytes.
fn pack(blobs: &[&[u8]], lead: usize, tail: usize) -> (Vec<u8>, Vec<u64>) {
    let mut data = vec![0x5A; lead];
    let mut offsets = vec![lead as u64];
    for blob in blobs {
        data.extend_from_slice(blob);
        offsets.push(data.len() as u64);
    }
    data.extend(std::iter::repeat_n(0x77, tail));
    (data, offsets)
}

#[test]
fn vectors_in_gpu_buffers_packed_and_as_records() {
    let Some(engine) = gpu_engine(None) else {
        return;
    };
    let vectors = vectors();
    let modes = [
        Mode::Hash,
        Mode::KeyedHash(&vectors.key),
        Mode::DeriveKey(&vectors.context),
    ];
    let cases: Vec<_> = vectors.cases.iter().collect();
    let inputs: Vec<Vec<u8>> = cases.iter().map(|c| vector_input(c.input_len)).collect();
    let blobs: Vec<&[u8]> = inputs.iter().map(Vec::as_slice).collect();
    // One batch of every vector, starting at an odd byte, in a buffer with
    // spare bytes after the data.
    let (data, offsets) = pack(&blobs, 3, 100);
    let data_buffer = upload(&engine, &data, STORAGE);
    let narrow = upload(&engine, &offsets_u32(&offsets), STORAGE);
    let wide = upload(&engine, &offsets_u64(&offsets), STORAGE);
    for mode in modes {
        for (width, offsets) in [
            ("u32", GpuOffsets::U32(&narrow)),
            ("u64", GpuOffsets::U64(&wide)),
        ] {
            let mut out = vec![[0u8; 32]; cases.len()];
            let blobs = GpuBlobs::Packed {
                data: &data_buffer,
                offsets,
                count: cases.len() as u32,
            };
            engine.hash_gpu_blobs_into(mode, blobs, &mut out).unwrap();
            for (case, digest) in cases.iter().zip(&out) {
                assert_eq!(
                    *digest,
                    case.expected(mode),
                    "{mode:?} {width} len {}",
                    case.input_len
                );
            }
        }
        // Each vector as three records, from byte 5.
        for (case, input) in cases.iter().zip(&inputs).filter(|(c, _)| c.input_len > 0) {
            let mut bytes = vec![0u8; 5];
            for _ in 0..3 {
                bytes.extend_from_slice(input);
            }
            let buffer = upload(&engine, &bytes, STORAGE);
            let mut out = [[0u8; 32]; 3];
            let records = GpuBlobs::Records {
                data: &buffer,
                first_byte: 5,
                record_size: input.len() as u32,
                count: 3,
            };
            engine.hash_gpu_blobs_into(mode, records, &mut out).unwrap();
            assert_eq!(
                out,
                [case.expected(mode); 3],
                "{mode:?} records len {}",
                case.input_len
            );
        }
    }
}

#[test]
fn random_batches_into_a_gpu_digest_buffer() {
    let Some(engine) = gpu_engine(None) else {
        return;
    };
    let mut next = xorshift(0x9E37_79B9_7F4A_7C15u64);
    let key = [3u8; 32];
    let (device, _) = engine.wgpu_device().unwrap();
    let alignment = u64::from(device.limits().min_storage_buffer_offset_alignment);
    for round in 0..6 {
        let count = [1, 2, 63, 64, 65, 5000][round];
        // One blob in 16 over a chunk, up to 40 chunks (one invocation
        // takes those of up to 16, a workgroup longer ones).
        let lens: Vec<usize> = (0..count)
            .map(|_| match next() % 16 {
                0 => 1025 + (next() % 40_000) as usize,
                _ => (next() % 1025) as usize,
            })
            .collect();
        let inputs: Vec<Vec<u8>> = lens
            .iter()
            .map(|&len| (0..len).map(|_| next() as u8).collect())
            .collect();
        let blobs: Vec<&[u8]> = inputs.iter().map(Vec::as_slice).collect();
        let (data, offsets) = pack(&blobs, (next() % 7) as usize, (next() % 50) as usize);
        let mode = [
            Mode::Hash,
            Mode::KeyedHash(&key),
            Mode::DeriveKey("gpu buffers"),
        ][round % 3];
        let data_buffer = upload(&engine, &data, STORAGE);
        let offset_buffer = upload(&engine, &offsets_u32(&offsets), STORAGE);
        // The digests go after `alignment` bytes of a buffer that holds more.
        let digests = device.create_buffer(&wgpu::BufferDescriptor {
            label: Some("digests"),
            size: alignment + 32 * count as u64 + 64,
            usage: STORAGE | wgpu::BufferUsages::COPY_SRC,
            mapped_at_creation: false,
        });
        let blobs_on_gpu = GpuBlobs::Packed {
            data: &data_buffer,
            offsets: GpuOffsets::U32(&offset_buffer),
            count: count as u32,
        };
        engine
            .hash_gpu_blobs(mode, blobs_on_gpu, &digests, alignment)
            .unwrap();
        let bytes = read(&engine, &digests, digests.size());
        for (index, input) in inputs.iter().enumerate() {
            let at = alignment as usize + 32 * index;
            assert_eq!(
                bytes[at..at + 32],
                reference(mode, input),
                "round {round} blob {index}"
            );
        }
        let timings = engine.last_gpu_timings().unwrap();
        assert_eq!(timings.gpu_blobs, count, "{timings:?}");
        // The offsets' check is timed wherever the hash pass is.
        assert_eq!(
            timings.check.is_some(),
            timings.dispatch.is_some(),
            "{timings:?}"
        );
        assert!(timings.wait <= timings.total, "{timings:?}");
        // Back to the host, into pinned memory from a 4-byte boundary and
        // off one: the GPU copies records' digests there itself; packed
        // blobs, whose bad offsets must leave the slots untouched, and
        // slots off the boundary are read back as into a Vec.
        let records = data.len() / 16;
        let mut pinned = engine.pinned_buffer(32 * count.max(records) + 8).unwrap();
        for lead in [4, 2] {
            pinned.fill(0xEE);
            let slots = &mut pinned[lead..].as_chunks_mut::<32>().0[..count];
            engine
                .hash_gpu_blobs_into(mode, blobs_on_gpu, slots)
                .unwrap();
            for (index, (input, digest)) in inputs.iter().zip(&*slots).enumerate() {
                assert_eq!(
                    *digest,
                    reference(mode, input),
                    "round {round}, {lead}: {index}"
                );
            }
            assert_eq!(engine.last_gpu_timings().unwrap().digests_in_place, 0);
            let slots = &mut pinned[lead..].as_chunks_mut::<32>().0[..records];
            let as_records = GpuBlobs::Records {
                data: &data_buffer,
                first_byte: 0,
                record_size: 16,
                count: records as u32,
            };
            engine.hash_gpu_blobs_into(mode, as_records, slots).unwrap();
            for (index, (record, digest)) in data.chunks_exact(16).zip(&*slots).enumerate() {
                assert_eq!(
                    *digest,
                    reference(mode, record),
                    "round {round}, {lead}: {index}"
                );
            }
            let timings = engine.last_gpu_timings().unwrap();
            let copied = if pinned.is_pinned() && lead == 4 {
                records
            } else {
                0
            };
            assert_eq!(timings.digests_in_place, copied, "{timings:?}");
            // Records have no offsets to check.
            assert_eq!(timings.check, None, "{timings:?}");
            assert!(
                timings.wait + timings.readback <= timings.total,
                "{timings:?}"
            );
        }
    }
}

/// `hash_packed` sorts each workgroup's blobs by block count where a batch
/// has several counts, and hashes blobs where they lie where it has one.
/// Lengths at every block boundary, longest first so that the sort moves
/// every blob; a whole workgroup of one count among them; a last workgroup
/// partly filled; u32 and u64 offsets from above 0: every digest lands in
/// its own blob's slot.
#[test]
fn blobs_of_many_block_counts_land_in_their_own_slots() {
    let Some(engine) = gpu_engine(None) else {
        return;
    };
    let boundaries: Vec<usize> = (0..=16)
        .flat_map(|blocks| [64 * blocks, 64 * blocks + 1])
        .filter(|&len| len <= 1024)
        .rev()
        .collect();
    let mut lens: Vec<usize> = boundaries.iter().cycle().take(3 * 256).copied().collect();
    // A workgroup's worth of one count (the sort group is 256 blobs), then
    // a partial one.
    lens.splice(256..256, std::iter::repeat_n(1000, 256));
    lens.extend(boundaries.iter().take(37));
    let one_count = vec![700; 3 * 256 + 37];
    for (case, lens) in [("many counts", &lens), ("one count", &one_count)] {
        let inputs: Vec<Vec<u8>> = lens
            .iter()
            .enumerate()
            .map(|(index, &len)| (0..len).map(|at| (index * 7 + at) as u8).collect())
            .collect();
        let blobs: Vec<&[u8]> = inputs.iter().map(Vec::as_slice).collect();
        let (data, offsets) = pack(&blobs, 5, 3);
        let data_buffer = upload(&engine, &data, STORAGE);
        for wide in [false, true] {
            let offset_bytes = match wide {
                false => offsets_u32(&offsets),
                true => offsets_u64(&offsets),
            };
            let offset_buffer = upload(&engine, &offset_bytes, STORAGE);
            let offsets = match wide {
                false => GpuOffsets::U32(&offset_buffer),
                true => GpuOffsets::U64(&offset_buffer),
            };
            let gpu_blobs = GpuBlobs::Packed {
                data: &data_buffer,
                offsets,
                count: blobs.len() as u32,
            };
            let mut out = vec![[0u8; 32]; blobs.len()];
            engine
                .hash_gpu_blobs_into(Mode::Hash, gpu_blobs, &mut out)
                .unwrap();
            for (index, (input, digest)) in inputs.iter().zip(&out).enumerate() {
                assert_eq!(
                    *digest,
                    *blake3::hash(input).as_bytes(),
                    "{case}, u64 offsets {wide}: blob {index} of {} bytes",
                    input.len()
                );
            }
        }
    }
}

/// Blobs over one chunk are trees: one invocation of `hash_trees` hashes
/// one of up to 16 chunks, a whole workgroup one of up to 256, 64 chunks a
/// round, and a longer one is split in pieces of 256 chunks that
/// `join_pieces` joins. Every chunk count up to 17 and lengths at chunk
/// boundaries; a round's worth of chunks and one more; several rounds
/// (whose subtrees are joined as blake3's own hasher joins chunks); a
/// piece's worth and one more (a last piece of one byte), several split
/// blobs of unequal piece counts, 1 MiB + 1. Among short blobs, in every
/// mode, packed from an odd byte (u32 and u64 offsets, into a GPU buffer
/// and to the host, and recorded for the caller to submit) and as records
/// of each kind.
#[test]
fn blobs_over_one_chunk_at_chunk_boundaries() {
    let Some(engine) = gpu_engine(None) else {
        return;
    };
    let (device, queue) = engine.wgpu_device().unwrap();
    let chunk = 1024;
    let mut long: Vec<usize> = (2..=17).map(|chunks| chunks * chunk).collect();
    long.extend([
        1025,
        2049,
        4097,
        7 * chunk + 3,
        16 * chunk + 1,
        64 * chunk,
        64 * chunk + 1,
        65 * chunk,
        128 * chunk,
        129 * chunk + 5,
        192 * chunk + 1,
        256 * chunk,
        256 * chunk + 1,
        257 * chunk,
        384 * chunk + 7,
        512 * chunk + 1,
        (1 << 20) + 1,
    ]);
    let mut lens = Vec::new();
    for (at, &len) in long.iter().enumerate() {
        lens.extend([len, [0, 1, 64, 1000, 1024][at % 5]]);
    }
    let inputs: Vec<Vec<u8>> = lens
        .iter()
        .enumerate()
        .map(|(index, &len)| (0..len).map(|at| (at * 13 + index) as u8).collect())
        .collect();
    let blobs: Vec<&[u8]> = inputs.iter().map(Vec::as_slice).collect();
    let (data, offsets) = pack(&blobs, 3, 7);
    let data_buffer = upload(&engine, &data, STORAGE);
    let narrow = upload(&engine, &offsets_u32(&offsets), STORAGE);
    let wide = upload(&engine, &offsets_u64(&offsets), STORAGE);
    let count = blobs.len() as u32;
    let digest_bytes = 32 * u64::from(count);
    let digests = upload(
        &engine,
        &vec![0; digest_bytes as usize],
        STORAGE | wgpu::BufferUsages::COPY_SRC | wgpu::BufferUsages::COPY_DST,
    );
    let key = [0x42u8; 32];
    for mode in [
        Mode::Hash,
        Mode::KeyedHash(&key),
        Mode::DeriveKey("long blobs"),
    ] {
        for (width, offsets) in [
            ("u32", GpuOffsets::U32(&narrow)),
            ("u64", GpuOffsets::U64(&wide)),
        ] {
            let packed = GpuBlobs::Packed {
                data: &data_buffer,
                offsets,
                count,
            };
            let check = |digests: &[[u8; 32]], how: &str| {
                for (input, digest) in inputs.iter().zip(digests) {
                    assert_eq!(
                        *digest,
                        reference(mode, input),
                        "{mode:?} {width} {how}: {} bytes",
                        input.len()
                    );
                }
            };
            let mut out = vec![[0u8; 32]; blobs.len()];
            engine.hash_gpu_blobs_into(mode, packed, &mut out).unwrap();
            check(&out, "to the host");
            engine.hash_gpu_blobs(mode, packed, &digests, 0).unwrap();
            let bytes = read(&engine, &digests, digest_bytes);
            check(bytes.as_chunks().0, "into a buffer");
            // Cleared, then recorded and submitted by the caller.
            let mut encoder = device.create_command_encoder(&Default::default());
            encoder.clear_buffer(&digests, 0, None);
            let (hash, pending) = engine.encode_gpu_blobs(mode, packed, &digests, 0).unwrap();
            let submitted = queue.submit([encoder.finish(), hash]);
            pending.wait_for(submitted).unwrap();
            let bytes = read(&engine, &digests, digest_bytes);
            check(bytes.as_chunks().0, "recorded");
        }
        // Three records of each kind's lengths, from byte 5.
        for len in [
            1025,
            2048,
            4097,
            7 * chunk + 3,
            16 * chunk,
            16 * chunk + 1,
            65 * chunk,
            256 * chunk + 1,
            300 * chunk,
        ] {
            let bytes: Vec<u8> = (0..5 + 3 * len).map(|at| (at * 7 / 3) as u8).collect();
            let buffer = upload(&engine, &bytes, STORAGE);
            let records = GpuBlobs::Records {
                data: &buffer,
                first_byte: 5,
                record_size: len as u32,
                count: 3,
            };
            let mut out = [[0u8; 32]; 3];
            engine.hash_gpu_blobs_into(mode, records, &mut out).unwrap();
            for (record, digest) in bytes[5..].chunks(len).zip(out) {
                assert_eq!(digest, reference(mode, record), "{mode:?} records of {len}");
            }
        }
    }
}

/// A blob of 193 pieces and one byte: its join takes four rounds of 64
/// pieces' roots (the last of two), so that two subtrees wait to be
/// joined at its end, as blake3's own hasher joins chunks. Beside it, a
/// split blob of two pieces and short blobs.
#[test]
fn a_blob_of_many_pieces() {
    let Some(engine) = gpu_engine(None) else {
        return;
    };
    let piece = 256 * 1024;
    let inputs: Vec<Vec<u8>> = [100, 193 * piece + 1, 2 * piece, 0]
        .iter()
        .enumerate()
        .map(|(index, &len)| (0..len).map(|at| (at * 31 / 7 + index) as u8).collect())
        .collect();
    let blobs: Vec<&[u8]> = inputs.iter().map(Vec::as_slice).collect();
    let (data, offsets) = pack(&blobs, 1, 0);
    let data_buffer = upload(&engine, &data, STORAGE);
    let offsets_buffer = upload(&engine, &offsets_u32(&offsets), STORAGE);
    let packed = GpuBlobs::Packed {
        data: &data_buffer,
        offsets: GpuOffsets::U32(&offsets_buffer),
        count: blobs.len() as u32,
    };
    let key = [7u8; 32];
    for mode in [Mode::Hash, Mode::KeyedHash(&key)] {
        let mut out = vec![[0u8; 32]; blobs.len()];
        engine.hash_gpu_blobs_into(mode, packed, &mut out).unwrap();
        for (input, digest) in inputs.iter().zip(&out) {
            assert_eq!(
                *digest,
                reference(mode, input),
                "{mode:?}: {} bytes",
                input.len()
            );
        }
    }
}

/// Batches with many blobs split in pieces, of random lengths among
/// shorter blobs: `check_packed` lists them in whatever order its
/// invocations run, and each piece's workgroup finds its blob by binary
/// search in that list.
#[test]
fn random_batches_of_blobs_split_in_pieces() {
    let Some(engine) = gpu_engine(None) else {
        return;
    };
    let mut next = xorshift(0x2545_F491_4F6C_DD1Du64);
    let piece = 256 * 1024;
    let key = [9u8; 32];
    for (round, (count, split_one_in)) in [(30, 3), (200, 10)].into_iter().enumerate() {
        let lens: Vec<usize> = (0..count)
            .map(|_| match next() % split_one_in {
                0 => piece + 1 + (next() % (4 * piece as u64)) as usize,
                _ => (next() % 40_000) as usize,
            })
            .collect();
        let inputs: Vec<Vec<u8>> = lens
            .iter()
            .map(|&len| {
                let seed = next();
                (0..len)
                    .map(|at| (seed >> (at % 57)) as u8 ^ at as u8)
                    .collect()
            })
            .collect();
        let blobs: Vec<&[u8]> = inputs.iter().map(Vec::as_slice).collect();
        let (data, offsets) = pack(&blobs, (next() % 7) as usize, 0);
        let data_buffer = upload(&engine, &data, STORAGE);
        let offset_buffer = upload(&engine, &offsets_u64(&offsets), STORAGE);
        let packed = GpuBlobs::Packed {
            data: &data_buffer,
            offsets: GpuOffsets::U64(&offset_buffer),
            count: count as u32,
        };
        let mode = [Mode::KeyedHash(&key), Mode::Hash][round];
        let mut out = vec![[0u8; 32]; count];
        engine.hash_gpu_blobs_into(mode, packed, &mut out).unwrap();
        for (index, (input, digest)) in inputs.iter().zip(&out).enumerate() {
            assert_eq!(
                *digest,
                reference(mode, input),
                "round {round} blob {index} of {} bytes",
                input.len()
            );
        }
    }
}

#[test]
fn a_device_the_caller_opened() {
    if gpu_engine(None).is_none() {
        return;
    }
    let instance =
        wgpu::Instance::new(wgpu::InstanceDescriptor::new_without_display_handle().with_env());
    let adapter = pollster_block_on(instance.request_adapter(&Default::default())).unwrap();
    let (device, queue) = pollster_block_on(adapter.request_device(&Default::default())).unwrap();
    let engine = Engine::builder()
        .backend(Backend::Gpu)
        .wgpu_device(device.clone(), queue)
        .build()
        .unwrap();
    let blobs: Vec<Vec<u8>> = (0..300u32)
        .map(|i| i.to_le_bytes().repeat(i as usize % 256))
        .collect();
    assert_eq!(
        engine.hash_many(&blobs).unwrap()[299],
        blake3::hash(&blobs[299])
    );
    let (data, offsets) = pack(&blobs.iter().map(Vec::as_slice).collect::<Vec<_>>(), 0, 0);
    let data = device.create_buffer_init(&wgpu::util::BufferInitDescriptor {
        label: None,
        contents: &data,
        usage: STORAGE,
    });
    let offsets = device.create_buffer_init(&wgpu::util::BufferInitDescriptor {
        label: None,
        contents: &offsets_u64(&offsets),
        usage: STORAGE,
    });
    let mut out = vec![[0u8; 32]; 300];
    let on_gpu = GpuBlobs::Packed {
        data: &data,
        offsets: GpuOffsets::U64(&offsets),
        count: 300,
    };
    engine
        .hash_gpu_blobs_into(Mode::Hash, on_gpu, &mut out)
        .unwrap();
    for (blob, digest) in blobs.iter().zip(&out) {
        assert_eq!(*digest, *blake3::hash(blob).as_bytes());
    }
    // A CPU engine with the caller's device hashes host batches on the CPU
    // and still reaches the GPU buffers.
    let cpu = Engine::builder()
        .backend(Backend::Cpu)
        .wgpu_device(device, engine.wgpu_device().unwrap().1.clone())
        .build()
        .unwrap();
    assert_eq!(cpu.hash_many(&blobs).unwrap()[7], blake3::hash(&blobs[7]));
    assert!(
        cpu.last_gpu_timings().is_none(),
        "host batches stayed on the CPU"
    );
    out.fill([0; 32]);
    cpu.hash_gpu_blobs_into(Mode::Hash, on_gpu, &mut out)
        .unwrap();
    assert_eq!(out[299], *blake3::hash(&blobs[299]).as_bytes());
}

fn pollster_block_on<F: std::future::Future>(future: F) -> F::Output {
    // A minimal executor: wgpu's futures on native backends are ready once
    // polled after the work is done.
    let waker = std::task::Waker::noop();
    let mut context = std::task::Context::from_waker(waker);
    let mut future = std::pin::pin!(future);
    loop {
        if let std::task::Poll::Ready(output) = future.as_mut().poll(&mut context) {
            return output;
        }
        std::thread::yield_now();
    }
}

fn gpu_buffer_error(result: Result<(), blake3_batch::Error>, buffer: &str, says: &str) {
    let error = result.expect_err("must fail");
    match error.kind() {
        ErrorKind::GpuBuffer {
            buffer: named,
            reason,
        } => {
            assert_eq!(named, buffer, "{error}");
            assert!(reason.contains(says), "{error}");
        }
        _ => panic!("expected a GpuBuffer error about {buffer}, got {error}"),
    }
}

#[test]
fn buffers_that_cannot_be_used_are_errors_and_nothing_is_written() {
    let Some(engine) = gpu_engine(None) else {
        return;
    };
    let blobs: Vec<Vec<u8>> = (0..10).map(|i| vec![i as u8; 100 * i]).collect();
    let (data, offsets) = pack(&blobs.iter().map(Vec::as_slice).collect::<Vec<_>>(), 0, 0);
    let data_buffer = upload(&engine, &data, STORAGE);
    let good = upload(&engine, &offsets_u32(&offsets), STORAGE);
    fn ten<'a>(data: &'a wgpu::Buffer, offsets: &'a wgpu::Buffer) -> GpuBlobs<'a> {
        GpuBlobs::Packed {
            data,
            offsets: GpuOffsets::U32(offsets),
            count: 10,
        }
    }
    let packed = |offsets| ten(&data_buffer, offsets);
    let mut out = [[7u8; 32]; 10];

    // Usage flags.
    let no_storage = upload(&engine, &data, wgpu::BufferUsages::COPY_SRC);
    let wrong_data = GpuBlobs::Packed {
        data: &no_storage,
        offsets: GpuOffsets::U32(&good),
        count: 10,
    };
    gpu_buffer_error(
        engine.hash_gpu_blobs_into(Mode::Hash, wrong_data, &mut out),
        "data",
        "STORAGE",
    );
    let offsets_no_storage = upload(
        &engine,
        &offsets_u32(&offsets),
        wgpu::BufferUsages::COPY_SRC,
    );
    gpu_buffer_error(
        engine.hash_gpu_blobs_into(Mode::Hash, packed(&offsets_no_storage), &mut out),
        "offsets",
        "STORAGE",
    );
    // Too few offsets for the count.
    let short = upload(&engine, &offsets_u32(&offsets[..5]), STORAGE);
    gpu_buffer_error(
        engine.hash_gpu_blobs_into(Mode::Hash, packed(&short), &mut out),
        "offsets",
        "need",
    );

    // Offsets found bad on the GPU, into a digest buffer that must stay as
    // it was.
    let (device, _) = engine.wgpu_device().unwrap();
    let digests = upload(
        &engine,
        &[0xAB; 320],
        STORAGE | wgpu::BufferUsages::COPY_SRC,
    );
    let mut decreasing = offsets.clone();
    decreasing[6] = decreasing[5] - 1;
    let mut past = offsets.clone();
    past[10] = data.len() as u64 + 400;
    // Blob 2 grows to 1025 bytes, which is fine, and every later one
    // moves with it, so that blob 9 runs past the data: the blob over a
    // chunk must not be written either.
    let mut long = offsets.clone();
    let grow = 1025 - (long[3] - long[2]);
    long[3..].iter_mut().for_each(|offset| *offset += grow);
    for (bad, says, index) in [
        (decreasing, "never decrease", "blob 5"),
        (past, "past the data", "blob 9"),
        (long, "past the data", "blob 9"),
    ] {
        let buffer = upload(&engine, &offsets_u32(&bad), STORAGE);
        let result = engine.hash_gpu_blobs(Mode::Hash, ten(&data_buffer, &buffer), &digests, 0);
        let error = result.expect_err("bad offsets");
        assert!(
            matches!(error.kind(), ErrorKind::GpuBuffer { .. }),
            "{error}"
        );
        assert!(
            error.to_string().contains(says) && error.to_string().contains(index),
            "{error}"
        );
        assert_eq!(
            read(&engine, &digests, 320),
            vec![0xAB; 320],
            "{says}: nothing written"
        );
        let result = engine.hash_gpu_blobs_into(Mode::Hash, ten(&data_buffer, &buffer), &mut out);
        assert!(result.is_err());
        assert_eq!(out, [[7u8; 32]; 10], "{says}: nothing written to the host");
        let mut pinned = engine.pinned_buffer(320).unwrap();
        pinned.fill(7);
        let slots = pinned.as_digests_mut();
        let result = engine.hash_gpu_blobs_into(Mode::Hash, ten(&data_buffer, &buffer), slots);
        assert!(result.is_err());
        assert!(
            pinned.iter().all(|&byte| byte == 7),
            "{says}: nothing written to pinned slots"
        );
    }

    // Digest buffers: usage, size, alignment; the host slice's length.
    let no_storage = upload(&engine, &[0; 320], wgpu::BufferUsages::COPY_SRC);
    gpu_buffer_error(
        engine.hash_gpu_blobs(Mode::Hash, packed(&good), &no_storage, 0),
        "digests",
        "STORAGE",
    );
    let small = upload(&engine, &[0; 300], STORAGE);
    gpu_buffer_error(
        engine.hash_gpu_blobs(Mode::Hash, packed(&good), &small, 0),
        "digests",
        "300 bytes",
    );
    let alignment = u64::from(device.limits().min_storage_buffer_offset_alignment);
    let big = upload(&engine, &vec![0; 4 * alignment as usize], STORAGE);
    gpu_buffer_error(
        engine.hash_gpu_blobs(Mode::Hash, packed(&good), &big, 4),
        "digests",
        "multiple",
    );
    let error = engine
        .hash_gpu_blobs_into(Mode::Hash, packed(&good), &mut out[..9])
        .unwrap_err();
    assert!(
        matches!(error.kind(), ErrorKind::OutputLength { .. }),
        "{error}"
    );

    // Records: of no bytes, or past the buffer.
    for (size, count, says) in [
        (0, 1, "at least 1 byte"),
        (100, 100, "past"),
        (1025, 5, "past"),
    ] {
        let records = GpuBlobs::Records {
            data: &data_buffer,
            first_byte: 0,
            record_size: size,
            count,
        };
        let mut out = vec![[0u8; 32]; count as usize];
        gpu_buffer_error(
            engine.hash_gpu_blobs_into(Mode::Hash, records, &mut out),
            "data",
            says,
        );
    }
    assert_eq!(out, [[7u8; 32]; 10]);

    // An engine without a GPU.
    let cpu = Engine::builder().backend(Backend::Cpu).build().unwrap();
    let error = cpu
        .hash_gpu_blobs_into(Mode::Hash, packed(&good), &mut out)
        .unwrap_err();
    assert!(
        matches!(error.kind(), ErrorKind::BackendUnavailable { .. }),
        "{error}"
    );

    // And the engine still works after all of that.
    engine
        .hash_gpu_blobs_into(Mode::Hash, packed(&good), &mut out)
        .unwrap();
    for (blob, digest) in blobs.iter().zip(&out) {
        assert_eq!(*digest, *blake3::hash(blob).as_bytes());
    }
}

/// Hashes recorded for the caller to submit: several recorded before any
/// is submitted, submitted in the other order behind the caller's own
/// commands that write the data, each with its own parameters; an empty
/// call; bad offsets reported by `wait` with nothing written; commands
/// never submitted are an error, not a hang.
/// A batch with more blobs than the check pass has invocations, so that
/// each invocation checks several: every blob is still checked (a bad one
/// in any round is found, the first of two is named) and hashed right.
/// The smallest workgroups (32 invocations) cap the check at 65 535 × 32
/// invocations (the most workgroups a dispatch dimension takes) on any
/// adapter, a software one too.
#[test]
fn offsets_are_all_checked_where_each_check_takes_several_blobs() {
    if gpu_engine(None).is_none() {
        return;
    }
    let engine = Engine::builder()
        .backend(Backend::Gpu)
        .gpu_workgroup_size(32)
        .build()
        .expect("a GPU engine with the smallest workgroups");
    let count = 65_535 * 32 + 100_003;
    let lengths = (0..count).map(|i| (i * 7) % 5);
    let mut offsets = vec![0u64];
    offsets.extend(lengths.scan(0u64, |end, len| {
        *end += len as u64;
        Some(*end)
    }));
    let data: Vec<u8> = (0..offsets[count]).map(|i| (i * 31 % 251) as u8).collect();
    let data_buffer = upload(&engine, &data, STORAGE);
    let batch = |offsets: &wgpu::Buffer| {
        let blobs = GpuBlobs::Packed {
            data: &data_buffer,
            offsets: GpuOffsets::U32(offsets),
            count: count as u32,
        };
        let mut out = vec![[0u8; 32]; count];
        engine
            .hash_gpu_blobs_into(Mode::Hash, blobs, &mut out)
            .map(|()| out)
    };

    let good = upload(&engine, &offsets_u32(&offsets), STORAGE);
    let out = batch(&good).expect("good offsets");
    for (index, digest) in out.iter().enumerate() {
        let blob = &data[offsets[index] as usize..offsets[index + 1] as usize];
        assert_eq!(digest, blake3::hash(blob).as_bytes(), "blob {index}");
    }

    // The last blob, then one before it as well: each in a later round of
    // its invocation than the first.
    let earlier = count - 1000;
    let mut last_bad = offsets.clone();
    last_bad[count] = last_bad[count - 1] - 1;
    let mut two_bad = last_bad.clone();
    two_bad[earlier + 1] = two_bad[earlier] - 1;
    for (bad, index) in [(last_bad, count - 1), (two_bad, earlier)] {
        let buffer = upload(&engine, &offsets_u32(&bad), STORAGE);
        let error = batch(&buffer).expect_err("a bad offset");
        assert!(
            error
                .to_string()
                .contains(&format!("blob {index} (the first with a problem)")),
            "{error}"
        );
    }
}

#[test]
fn hashes_recorded_for_the_caller_to_submit() {
    let Some(engine) = gpu_engine(None) else {
        return;
    };
    let (device, queue) = engine.wgpu_device().unwrap();
    let key = [9u8; 32];
    // Some over a chunk.
    let blobs: Vec<Vec<u8>> = (0..700u32)
        .map(|i| {
            let long = if i % 50 == 7 { 600 } else { 0 };
            i.to_le_bytes().repeat(i as usize % 257 + long)
        })
        .collect();
    let (data, offsets) = pack(&blobs.iter().map(Vec::as_slice).collect::<Vec<_>>(), 1, 9);
    let records: Vec<u8> = (0..64 * 500u32).map(|i| (i * 7 % 251) as u8).collect();
    // The caller's pipeline makes the data on the GPU: here, a copy in its
    // own command buffer, submitted with the hashes.
    let copy_src = wgpu::BufferUsages::COPY_SRC;
    let made = |bytes: &[u8]| {
        let source = upload(&engine, bytes, copy_src);
        let target = device.create_buffer(&wgpu::BufferDescriptor {
            label: Some("made on the GPU"),
            size: source.size(),
            usage: STORAGE | wgpu::BufferUsages::COPY_DST,
            mapped_at_creation: false,
        });
        (source, target)
    };
    let (data_source, data_buffer) = made(&data);
    let (records_source, records_buffer) = made(&records);
    let offset_buffer = upload(&engine, &offsets_u64(&offsets), STORAGE);
    let alignment = u64::from(device.limits().min_storage_buffer_offset_alignment);
    let second = (32 * 700u64).next_multiple_of(alignment);
    let digests = device.create_buffer(&wgpu::BufferDescriptor {
        label: Some("digests"),
        size: second + 32 * 500,
        usage: STORAGE | copy_src,
        mapped_at_creation: false,
    });
    let packed = GpuBlobs::Packed {
        data: &data_buffer,
        offsets: GpuOffsets::U64(&offset_buffer),
        count: 700,
    };
    let as_records = GpuBlobs::Records {
        data: &records_buffer,
        first_byte: 0,
        record_size: 64,
        count: 500,
    };
    let (first, first_pending) = engine
        .encode_gpu_blobs(Mode::KeyedHash(&key), packed, &digests, 0)
        .unwrap();
    let (later, later_pending) = engine
        .encode_gpu_blobs(Mode::DeriveKey("recorded"), as_records, &digests, second)
        .unwrap();
    let mut encoder = device.create_command_encoder(&Default::default());
    encoder.copy_buffer_to_buffer(&data_source, 0, &data_buffer, 0, data_source.size());
    encoder.copy_buffer_to_buffer(
        &records_source,
        0,
        &records_buffer,
        0,
        records_source.size(),
    );
    queue.submit([encoder.finish(), later, first]);
    first_pending.wait().unwrap();
    later_pending.wait().unwrap();
    let bytes = read(&engine, &digests, digests.size());
    for (index, blob) in blobs.iter().enumerate() {
        let at = 32 * index;
        assert_eq!(
            bytes[at..at + 32],
            *blake3::keyed_hash(&key, blob).as_bytes(),
            "packed blob {index}"
        );
    }
    for (index, record) in records.chunks(64).enumerate() {
        let at = second as usize + 32 * index;
        assert_eq!(
            bytes[at..at + 32],
            blake3::derive_key("recorded", record),
            "record {index}"
        );
    }

    // A pipeline: each hash submitted on its own, the first waited for by
    // its submission after the next was submitted.
    let (first, first_pending) = engine
        .encode_gpu_blobs(Mode::Hash, packed, &digests, 0)
        .unwrap();
    let first_submitted = queue.submit([first]);
    let (later, later_pending) = engine
        .encode_gpu_blobs(Mode::Hash, as_records, &digests, second)
        .unwrap();
    let later_submitted = queue.submit([later]);
    first_pending.wait_for(first_submitted).unwrap();
    later_pending.wait_for(later_submitted).unwrap();
    let bytes = read(&engine, &digests, digests.size());
    for (index, blob) in blobs.iter().enumerate() {
        let at = 32 * index;
        assert_eq!(bytes[at..at + 32], *blake3::hash(blob).as_bytes());
    }
    for (index, record) in records.chunks(64).enumerate() {
        let at = second as usize + 32 * index;
        assert_eq!(bytes[at..at + 32], *blake3::hash(record).as_bytes());
    }

    // No blobs: empty commands, nothing to wait for.
    let none = GpuBlobs::Records {
        data: &records_buffer,
        first_byte: 0,
        record_size: 64,
        count: 0,
    };
    let (commands, pending) = engine
        .encode_gpu_blobs(Mode::Hash, none, &digests, 0)
        .unwrap();
    queue.submit([commands]);
    pending.wait().unwrap();

    // Offsets the GPU finds bad: `wait` names the blob, nothing is written.
    let before = read(&engine, &digests, digests.size());
    let mut bad = offsets.clone();
    bad[400] = bad[399] - 1;
    let bad_buffer = upload(&engine, &offsets_u64(&bad), STORAGE);
    let bad_blobs = GpuBlobs::Packed {
        data: &data_buffer,
        offsets: GpuOffsets::U64(&bad_buffer),
        count: 700,
    };
    let (commands, pending) = engine
        .encode_gpu_blobs(Mode::Hash, bad_blobs, &digests, 0)
        .unwrap();
    queue.submit([commands]);
    let error = pending.wait().unwrap_err();
    assert!(
        matches!(error.kind(), ErrorKind::GpuBuffer { .. })
            && error.to_string().contains("blob 399"),
        "{error}"
    );
    assert_eq!(
        read(&engine, &digests, digests.size()),
        before,
        "nothing written"
    );

    // A buffer the shader cannot bind fails before anything is recorded.
    let no_storage = upload(&engine, &[0; 64], copy_src);
    let error = engine
        .encode_gpu_blobs(Mode::Hash, packed, &no_storage, 0)
        .unwrap_err();
    assert!(
        matches!(error.kind(), ErrorKind::GpuBuffer { .. }),
        "{error}"
    );

    // Never submitted: an error that says to submit, not a hang; dropping
    // the commands and a pending hash unwaited leaves the engine working.
    let (commands, pending) = engine
        .encode_gpu_blobs(Mode::Hash, as_records, &digests, second)
        .unwrap();
    let error = pending.wait().unwrap_err();
    assert!(error.to_string().contains("submit"), "{error}");
    drop(commands);
    // Waited for by a submission that does not hold them: the same.
    let (commands, pending) = engine
        .encode_gpu_blobs(Mode::Hash, as_records, &digests, second)
        .unwrap();
    let other = queue.submit([device.create_command_encoder(&Default::default()).finish()]);
    let error = pending.wait_for(other).unwrap_err();
    assert!(error.to_string().contains("submit"), "{error}");
    drop(commands);
    let (_, unwaited) = engine
        .encode_gpu_blobs(Mode::Hash, as_records, &digests, second)
        .unwrap();
    drop(unwaited);
    let mut out = vec![[0u8; 32]; 500];
    engine
        .hash_gpu_blobs_into(Mode::Hash, as_records, &mut out)
        .unwrap();
    for (record, digest) in records.chunks(64).zip(&out) {
        assert_eq!(*digest, *blake3::hash(record).as_bytes());
    }

    // An engine without a GPU.
    let cpu = Engine::builder().backend(Backend::Cpu).build().unwrap();
    let error = cpu
        .encode_gpu_blobs(Mode::Hash, packed, &digests, 0)
        .unwrap_err();
    assert!(
        matches!(error.kind(), ErrorKind::BackendUnavailable { .. }),
        "{error}"
    );
}
