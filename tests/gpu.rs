//! The GPU backend: digests at the lengths and batch sizes where the shader,
//! the workgroup and the slab boundaries could go wrong, the memory budget,
//! the reports, and the error paths that can be provoked from outside.

mod common;

use blake3_batch::{
    cpu_model, Backend, BatchShape, Choice, Engine, ErrorKind, GpuUpload, Mode, Profile,
};
use common::{first_mismatch, gpu_engine, reference, SMALL_GPU_BUDGET};

/// Blobs of length `len_of(i)` whose bytes depend on their index.
fn blobs(count: usize, len_of: impl Fn(usize) -> usize) -> Vec<Vec<u8>> {
    (0..count)
        .map(|i| (0..len_of(i)).map(|j| (i * 31 + j * 7) as u8).collect())
        .collect()
}

fn check(engine: &Engine, mode: Mode, blobs: &[Vec<u8>], what: &str) {
    if let Some(mismatch) = first_mismatch(engine, mode, blobs) {
        panic!("{what}: {mismatch}");
    }
}

/// [`check`] for the blobs packed behind `lead` bytes, as Arrow offsets:
/// the slabs copy them as they lie (verbatim), or as records.
fn check_packed(engine: &Engine, mode: Mode, blobs: &[Vec<u8>], lead: usize, what: &str) {
    let (data, offsets) = common::pack(blobs, lead);
    let mut out = vec![[0u8; 32]; blobs.len()];
    engine
        .hash_packed_into(mode, &data, &offsets, &mut out)
        .unwrap();
    for (index, (blob, digest)) in blobs.iter().zip(&out).enumerate() {
        let len = blob.len();
        assert_eq!(
            *digest,
            reference(mode, blob),
            "{what}, packed from {lead}: blob {index} ({len} B)"
        );
    }
}

#[test]
fn edge_lengths_in_every_mode() {
    let Some(engine) = gpu_engine(None) else {
        return;
    };
    let key = [0x42; 32];
    for mode in [
        Mode::Hash,
        Mode::KeyedHash(&key),
        Mode::DeriveKey("gpu ctx"),
    ] {
        for len in [0, 1, 3, 4, 5, 63, 64, 65, 127, 128, 129, 1023, 1024] {
            check(
                &engine,
                mode,
                &blobs(3, |_| len),
                &format!("{mode:?} len {len}"),
            );
        }
    }
}

#[test]
fn batch_sizes_around_the_workgroup() {
    let Some(engine) = gpu_engine(None) else {
        return;
    };
    for count in [1, 2, 63, 64, 65, 127, 128, 129, 1000] {
        check(
            &engine,
            Mode::Hash,
            &blobs(count, |i| i % 200),
            &format!("{count} blobs"),
        );
    }
}

#[test]
fn batches_around_slab_boundaries() {
    // Slabs of 1 KiB of data and 32 entries.
    let Some(engine) = gpu_engine(Some(SMALL_GPU_BUDGET)) else {
        return;
    };
    for count in [31, 32, 33, 63, 64, 65, 200] {
        check(
            &engine,
            Mode::Hash,
            &blobs(count, |_| 40),
            &format!("{count} x 40 B"),
        );
    }
    // Data, not entries, fills these slabs: exactly one, then just over.
    for (count, len) in [(1, 1024), (2, 1024), (2, 512), (3, 512), (5, 300)] {
        check(
            &engine,
            Mode::Hash,
            &blobs(count, |_| len),
            &format!("{count} x {len} B"),
        );
    }
    // A 1 KiB blob after a small one does not fit the rest of the slab.
    check(
        &engine,
        Mode::Hash,
        &blobs(9, |i| [4, 1024, 0][i % 3]),
        "alternating",
    );
    let timings = engine
        .last_gpu_timings()
        .expect("timings of the last batch");
    assert!(timings.slabs >= 6, "{timings:?}");
}

#[test]
fn blobs_longer_than_a_slab_go_to_the_cpu() {
    // Slabs of 1 KiB: every blob over one chunk is longer.
    let Some(engine) = gpu_engine(Some(SMALL_GPU_BUDGET)) else {
        return;
    };
    let lens = [1025, 0, 5000, 1024, 70_000, 64, 2048, 1];
    let blobs = blobs(40, |i| lens[i % lens.len()]);
    let key = [7; 32];
    for mode in [Mode::Hash, Mode::KeyedHash(&key), Mode::DeriveKey("large")] {
        check(&engine, mode, &blobs, &format!("{mode:?} mixed large"));
    }
    let timings = engine.last_gpu_timings().unwrap();
    // Half the lengths are over 1 KiB.
    assert_eq!(timings.cpu_blobs, 20, "{timings:?}");
    assert_eq!(timings.gpu_blobs, 20, "{timings:?}");
    // Only large blobs: nothing for the shader to do.
    check(&engine, Mode::Hash, &blobs[..1], "one large");
}

#[test]
fn packed_and_records_layouts() {
    let Some(engine) = gpu_engine(Some(SMALL_GPU_BUDGET)) else {
        return;
    };
    let blobs = blobs(77, |i| (i * 13) % 1100);
    let (data, offsets) = common::pack(&blobs, 5);
    let mut out = vec![[0u8; 32]; blobs.len()];
    engine
        .hash_packed_into(Mode::Hash, &data, &offsets, &mut out)
        .unwrap();
    for (blob, digest) in blobs.iter().zip(&out) {
        assert_eq!(*digest, reference(Mode::Hash, blob));
    }
    let records: Vec<u8> = (0..33 * 90).map(|i| (i % 253) as u8).collect();
    let mut out = vec![[0u8; 32]; 90];
    engine
        .hash_records_into(Mode::Hash, &records, 33, &mut out)
        .unwrap();
    for (record, digest) in records.chunks(33).zip(&out) {
        assert_eq!(*digest, reference(Mode::Hash, record));
    }
}

#[test]
fn an_engine_is_reused_and_shared_between_threads() {
    let Some(engine) = gpu_engine(Some(64 * 1024)) else {
        return;
    };
    std::thread::scope(|scope| {
        for thread in 0..3 {
            let engine = engine.clone();
            scope.spawn(move || {
                for round in 0..4 {
                    let blobs = blobs(100 + thread * 10 + round, |i| (i + round) % 300);
                    check(
                        &engine,
                        Mode::Hash,
                        &blobs,
                        &format!("thread {thread} round {round}"),
                    );
                }
            });
        }
    });
}

#[test]
fn reports_the_adapter_and_the_split_of_a_batch() {
    let Some(engine) = gpu_engine(None) else {
        return;
    };
    let info = engine.gpu_info().expect("a GPU engine reports its adapter");
    assert!(!info.name.is_empty());
    assert!(info.max_storage_buffer_binding_size >= 128 << 20, "{info}");
    assert!(
        info.max_compute_workgroups_per_dimension >= 65_535,
        "{info}"
    );
    assert!(engine.last_gpu_timings().is_none());
    let blobs = blobs(5000, |_| 1024);
    check(&engine, Mode::Hash, &blobs, "5000 x 1 KiB");
    let timings = engine.last_gpu_timings().unwrap();
    assert_eq!(timings.gpu_blobs, 5000);
    assert_eq!(timings.bytes_uploaded, 5000 * (1024 + 8));
    assert!(timings.total >= timings.readback);
    assert_eq!(timings.upload.is_some(), info.timestamps, "{timings:?}");
    // The CPU engine reports no GPU.
    let cpu = Engine::builder().backend(Backend::Cpu).build().unwrap();
    assert!(cpu.gpu_info().is_none() && cpu.last_gpu_timings().is_none());
}

#[test]
fn a_budget_below_one_slab_is_an_error() {
    if gpu_engine(None).is_none() {
        return;
    }
    let error = Engine::builder()
        .backend(Backend::Gpu)
        .gpu_memory_budget(1000)
        .build()
        .unwrap_err();
    assert!(
        matches!(error.kind(), ErrorKind::GpuMemoryBudget { budget: 1000, minimum } if *minimum > 1000),
        "{error}"
    );
    assert!(error.to_string().contains("at least"), "{error}");
}

#[test]
fn bad_input_is_rejected_before_the_gpu_sees_it() {
    let Some(engine) = gpu_engine(None) else {
        return;
    };
    let mut out = [[7u8; 32]; 2];
    let error = engine
        .hash_packed_into(Mode::Hash, b"abc", &[0u32, 2, 9], &mut out)
        .unwrap_err();
    assert!(
        matches!(error.kind(), ErrorKind::OffsetOutOfBounds { .. }),
        "{error}"
    );
    let error = engine
        .hash_slices_into(Mode::Hash, &[b"a"], &mut out)
        .unwrap_err();
    assert!(
        matches!(error.kind(), ErrorKind::OutputLength { .. }),
        "{error}"
    );
    assert_eq!(out, [[7u8; 32]; 2], "nothing written on error");
    assert!(engine.hash_many(&[] as &[&[u8]]).unwrap().is_empty());
}

/// Records and equal-length packed blobs go to the shader without a table:
/// one copy of their bytes where the length is a whole number of 16-byte
/// loads, padded record by record otherwise; in one slab or streamed
/// through small ones, packed on two threads in several pieces.
/// Whether the last batch uploaded `bytes` of blobs and nothing else (no
/// table, no padding), give or take the word each slab's copy rounds up to.
fn uploaded_just(engine: &Engine, bytes: usize) -> Result<(), String> {
    let timings = engine.last_gpu_timings().unwrap();
    let uploaded = timings.bytes_uploaded as usize;
    match (bytes..=bytes + 3 * timings.slabs).contains(&uploaded) {
        true => Ok(()),
        false => Err(format!("{bytes} bytes of blobs, but {timings:?}")),
    }
}

/// Blobs of one length of at most 1 KiB, records or packed, go without a
/// table and without padding: as records where the length is a multiple of
/// 16 bytes, else as they lie (padded only in a slab too small to hold one
/// unpadded with the words around it).
#[test]
fn equal_lengths_go_without_a_table() {
    // Small slabs hold one 1 KiB blob: fewer blobs there.
    let engines = [
        (gpu_engine(None), 5000, false),
        (gpu_engine(Some(SMALL_GPU_BUDGET)), 200, true),
    ];
    let key = [9; 32];
    for (engine, most, small) in engines
        .iter()
        .filter_map(|(e, most, small)| Some((e.as_ref()?, *most, *small)))
    {
        for (len, mode) in [
            (0usize, Mode::Hash),
            (1, Mode::KeyedHash(&key)),
            (15, Mode::DeriveKey("records")),
            (16, Mode::Hash),
            (17, Mode::Hash),
            (64, Mode::KeyedHash(&key)),
            (100, Mode::Hash),
            (1008, Mode::DeriveKey("records")),
            (1020, Mode::KeyedHash(&key)),
            (1024, Mode::Hash),
        ] {
            let padded = small && len > 1016 && len % 16 != 0;
            let uploaded = |count: usize| match padded {
                true => count * len.next_multiple_of(16),
                false => count * len,
            };
            for count in [1, 63, most] {
                let data: Vec<u8> = (0..len * count).map(|i| (i * 7 % 251) as u8).collect();
                let what = format!("{count} x {len} B, {mode:?}");
                let mut out = vec![[0u8; 32]; count];
                if len > 0 {
                    engine
                        .hash_records_into(mode, &data, len, &mut out)
                        .unwrap();
                    for (index, record) in data.chunks(len).enumerate() {
                        assert_eq!(
                            out[index],
                            reference(mode, record),
                            "records {what} #{index}"
                        );
                    }
                    uploaded_just(engine, uploaded(count)).unwrap();
                }
                // The same blobs as packed offsets that step evenly, from 3.
                let mut packed = vec![0xEE; 3];
                packed.extend_from_slice(&data);
                let offsets: Vec<u32> = (0..=count).map(|i| (3 + i * len) as u32).collect();
                out.fill([0; 32]);
                engine
                    .hash_packed_into(mode, &packed, &offsets, &mut out)
                    .unwrap();
                for index in 0..count {
                    let blob = &data[index * len..(index + 1) * len];
                    assert_eq!(out[index], reference(mode, blob), "packed {what} #{index}");
                }
                uploaded_just(engine, uploaded(count)).unwrap();
            }
        }
    }
}

/// Packed blobs of other layouts than records are copied as they lie: the
/// slabs upload their bytes unpadded with one table entry a blob, from any
/// byte, in every mode, every length from 0 to 1 KiB side by side. Given
/// as slices, the same blobs are padded one by one.
#[test]
fn packed_blobs_are_copied_as_they_lie() {
    let Some(engine) = gpu_engine(Some(1 << 20)) else {
        return;
    };
    let key = [3; 32];
    let modes = [
        Mode::Hash,
        Mode::KeyedHash(&key),
        Mode::DeriveKey("as they lie"),
    ];
    let mixed = blobs(40_000, |i| (i * 37) % 1025);
    let bytes: usize = mixed.iter().map(Vec::len).sum();
    for lead in 0..4 {
        let mode = modes[lead % modes.len()];
        check_packed(&engine, mode, &mixed, lead, &format!("{mode:?}"));
        let timings = engine.last_gpu_timings().unwrap();
        assert!(timings.slabs >= 10, "{timings:?}");
        let uploaded = timings.bytes_uploaded as usize;
        let most = bytes + 8 * mixed.len() + 3 * timings.slabs;
        assert!(
            (bytes..=most).contains(&uploaded),
            "from {lead}: {timings:?}"
        );
    }
    check(&engine, Mode::Hash, &mixed, "slices");
    let padded: usize = mixed
        .iter()
        .map(|blob| blob.len().next_multiple_of(16))
        .sum();
    let timings = engine.last_gpu_timings().unwrap();
    assert_eq!(timings.bytes_uploaded as usize, padded + 8 * mixed.len());
}

/// Mixed lengths in a batch of several packing pieces (4096 blobs each)
/// on two threads, with blobs over 1 KiB among them, all on the GPU.
#[test]
fn mixed_lengths_packed_in_pieces_on_two_threads() {
    let Some(engine) = gpu_engine(None) else {
        return;
    };
    let lens = |i: usize| match i % 97 {
        0 => 1025 + i % 3000,
        _ => (i * 37) % 1025,
    };
    check(&engine, Mode::Hash, &blobs(13_000, lens), "13 000 mixed");
    let timings = engine.last_gpu_timings().unwrap();
    assert!(
        timings.cpu_blobs == 0 && timings.gpu_blobs == 13_000,
        "{timings:?}"
    );
}

/// Blobs over one chunk are hashed on the GPU as trees: chunks, then levels
/// of parents. At chunk boundaries, in every mode, as packed blobs and as
/// records, alone and among short ones.
#[test]
fn blobs_over_one_chunk_are_trees_on_the_gpu() {
    let Some(engine) = gpu_engine(None) else {
        return;
    };
    let key = [0x5A; 32];
    let lengths = [
        1024,
        1025,
        2047,
        2048,
        2049,
        3072,
        3073,
        4096,
        4097,
        5 * 1024 + 7,
        16 * 1024,
        16 * 1024 + 1,
        (1 << 20) + 1,
    ];
    for mode in [
        Mode::Hash,
        Mode::KeyedHash(&key),
        Mode::DeriveKey("gpu trees"),
    ] {
        let boundaries = blobs(lengths.len(), |i| lengths[i]);
        let what = format!("{mode:?} chunk boundaries");
        check(&engine, mode, &boundaries, &what);
        let timings = engine.last_gpu_timings().unwrap();
        assert_eq!(timings.cpu_blobs, 0, "{timings:?}");
        check_packed(&engine, mode, &boundaries, 1, &what);
        let timings = engine.last_gpu_timings().unwrap();
        assert_eq!(timings.cpu_blobs, 0, "{timings:?}");
        // Long blobs between short ones, every length from 0 to 9 chunks.
        let mixed = blobs(300, |i| match i % 3 {
            0 => (i * 61) % (9 * 1024),
            1 => i % 65,
            _ => 1024 + i,
        });
        check(&engine, mode, &mixed, &format!("{mode:?} mixed"));
        check_packed(&engine, mode, &mixed, 2, &format!("{mode:?} mixed"));
    }
    // Equal lengths over one chunk: records and evenly stepping offsets.
    for len in [1025, 2048, 4100] {
        let count = 40;
        let data: Vec<u8> = (0..len * count).map(|i| (i * 5 % 251) as u8).collect();
        let mut out = vec![[0u8; 32]; count];
        engine
            .hash_records_into(Mode::Hash, &data, len, &mut out)
            .unwrap();
        for (index, record) in data.chunks(len).enumerate() {
            assert_eq!(
                out[index],
                reference(Mode::Hash, record),
                "{len} B #{index}"
            );
        }
    }
}

/// A slab holds blobs up to its data's size: one that fills it is a tree on
/// the GPU, one a byte longer is hashed in subtrees; several long blobs
/// stream through slabs that each hold a few.
#[test]
fn the_longest_gpu_blob_fills_a_slab() {
    // 240 KiB: slabs of 16 KiB of data.
    let Some(engine) = gpu_engine(Some(240 * 1024)) else {
        return;
    };
    let slab = 16 * 1024;
    check(
        &engine,
        Mode::Hash,
        &blobs(3, |i| [slab, slab + 1, 100][i]),
        "a slab's length and one more",
    );
    let timings = engine.last_gpu_timings().unwrap();
    assert_eq!(
        (timings.gpu_blobs, timings.cpu_blobs),
        (3, 0),
        "{timings:?}"
    );
    check(
        &engine,
        Mode::Hash,
        &blobs(50, |i| 1025 + i * 301),
        "long blobs over many slabs",
    );
    let timings = engine.last_gpu_timings().unwrap();
    assert!(timings.slabs >= 10 && timings.cpu_blobs == 0, "{timings:?}");
}

/// Blobs longer than a slab are hashed on the GPU in subtrees of a slab's
/// largest power of two of chunks (16 here), joined on the host: at every
/// kind of last subtree (a lone chunk of one byte or a whole one, two
/// chunks, a whole subtree), at odd and even subtree counts, beside blobs
/// a slab holds, in every mode, from slices, packed offsets and records.
#[test]
fn blobs_longer_than_a_slab_are_hashed_in_subtrees() {
    // 240 KiB: slabs of 16 KiB of data, subtrees of 16 chunks.
    let Some(engine) = gpu_engine(Some(240 * 1024)) else {
        return;
    };
    let subtree = 16 * 1024;
    let lengths = [
        subtree + 1,
        subtree + 1024,
        subtree + 1025,
        2 * subtree,
        3 * subtree + 7,
        5 * subtree,
        100_000,
        (1 << 20) + 1,
        0,
        2000,
        subtree,
        64,
    ];
    let batch = blobs(2 * lengths.len(), |i| lengths[i % lengths.len()]);
    let key = [0x5c; 32];
    for mode in [
        Mode::Hash,
        Mode::KeyedHash(&key),
        Mode::DeriveKey("subtrees"),
    ] {
        check(&engine, mode, &batch, &format!("{mode:?} in subtrees"));
        let timings = engine.last_gpu_timings().unwrap();
        assert_eq!(
            (timings.gpu_blobs, timings.cpu_blobs),
            (batch.len(), 0),
            "{timings:?}"
        );
        // The 1 MiB blob alone fills 65 slabs.
        assert!(timings.slabs > 80, "{timings:?}");
        check_packed(&engine, mode, &batch, 3, &format!("{mode:?} packed"));
    }
    // Only blobs longer than a slab, and records of them.
    check(&engine, Mode::Hash, &batch[..1], "one blob of 16 KiB + 1");
    let len = 3 * subtree + 1;
    let records: Vec<u8> = (0..5 * len).map(|i| (i * 13 % 251) as u8).collect();
    let mut out = vec![[0u8; 32]; 5];
    engine
        .hash_records_into(Mode::Hash, &records, len, &mut out)
        .unwrap();
    for (record, digest) in records.chunks(len).zip(&out) {
        assert_eq!(*digest, reference(Mode::Hash, record), "records of {len} B");
    }
    let timings = engine.last_gpu_timings().unwrap();
    assert_eq!(
        (timings.gpu_blobs, timings.cpu_blobs),
        (5, 0),
        "{timings:?}"
    );
}

/// Every upload the adapter offers and several workgroup sizes hash the
/// same digests; one it lacks, or a size that is not a power of two in
/// range, is an error that says what to change.
#[test]
fn uploads_and_workgroup_sizes() {
    if gpu_engine(None).is_none() {
        return;
    }
    let mixed = blobs(3000, |i| (i * 13) % 1100);
    let long = blobs(60, |i| 1025 + i * 997);
    let records: Vec<u8> = (0..64 * 2000).map(|i| (i % 249) as u8).collect();
    for (upload, workgroup) in [
        (GpuUpload::Copy, 32),
        (GpuUpload::Copy, 256),
        (GpuUpload::Direct, 64),
        (GpuUpload::Direct, 128),
        (GpuUpload::Host, 64),
        (GpuUpload::Host, 256),
    ] {
        let built = Engine::builder()
            .backend(Backend::Gpu)
            .threads(2)
            .gpu_memory_budget(1 << 20)
            .gpu_upload(upload)
            .gpu_workgroup_size(workgroup)
            .build();
        let engine = match built {
            Ok(engine) => engine,
            Err(error) => {
                assert_eq!(upload, GpuUpload::Direct, "{error}");
                assert!(
                    error.to_string().contains("MAPPABLE_PRIMARY_BUFFERS"),
                    "{error}"
                );
                eprintln!("this adapter has no direct upload: {error}");
                continue;
            }
        };
        let what = format!("{upload:?}, workgroup {workgroup}");
        check(&engine, Mode::Hash, &mixed, &what);
        check_packed(&engine, Mode::Hash, &mixed, 3, &what);
        // Trees, over several slabs: each slab's staging is reused once the
        // GPU is done with it.
        check(&engine, Mode::Hash, &long, &what);
        assert!(engine.last_gpu_timings().unwrap().slabs >= 4, "{what}");
        check_packed(&engine, Mode::Hash, &long, 1, &what);
        assert!(engine.last_gpu_timings().unwrap().slabs >= 4, "{what}");
        for size in [64, 100] {
            let count = records.len() / size;
            let mut out = vec![[0u8; 32]; count];
            let records = &records[..count * size];
            engine
                .hash_records_into(Mode::Hash, records, size, &mut out)
                .unwrap();
            for (record, digest) in records.chunks(size).zip(&out) {
                assert_eq!(*digest, reference(Mode::Hash, record), "{what}, {size} B");
            }
            assert_eq!(engine.last_gpu_timings().unwrap().bytes_in_place, 0);
        }
    }
    for size in [0, 16, 48, 1 << 20] {
        let error = Engine::builder()
            .backend(Backend::Gpu)
            .gpu_workgroup_size(size)
            .build()
            .unwrap_err();
        assert!(
            matches!(error.kind(), ErrorKind::BackendUnavailable { .. })
                && error.to_string().contains("power of two"),
            "{size}: {error}"
        );
    }
}

/// `gpu_share` sends that share of every batch to the GPU and the rest to
/// the CPU at once, whatever the profile says; a value that is not a share,
/// or a backend other than Auto, is an error that says so.
#[test]
fn a_forced_share_splits_every_batch() {
    for (backend, share, says) in [
        (Backend::Auto, 1.5, "from 0 to 1"),
        (Backend::Auto, -0.1, "from 0 to 1"),
        (Backend::Auto, f64::NAN, "from 0 to 1"),
        (Backend::Cpu, 0.5, "Backend::Auto"),
        (Backend::Gpu, 0.5, "Backend::Auto"),
    ] {
        let error = Engine::builder()
            .backend(backend)
            .gpu_share(share)
            .build()
            .unwrap_err();
        assert!(
            matches!(error.kind(), ErrorKind::GpuShare { .. }) && error.to_string().contains(says),
            "{backend:?}, {share}: {error}"
        );
    }
    if gpu_engine(None).is_none() {
        return;
    }
    // One blob in 50 over 1 KiB: those stay on the CPU beside the GPU.
    let batch = blobs(4000, |i| if i % 50 == 7 { 3000 + i } else { i % 1025 });
    let long = batch.iter().filter(|blob| blob.len() > 1024).count();
    for (share, gpu_blobs) in [(0.0, None), (0.37, Some(1480)), (1.0, Some(4000))] {
        let engine = Engine::builder()
            .backend(Backend::Auto)
            .threads(2)
            .gpu_memory_budget(1 << 20)
            .gpu_share(share)
            // No GPU rates, whatever this machine calibrated: the split
            // keeps threads to pack in proportion to its share.
            .profile(Profile::conservative(cpu_model()))
            .build()
            .unwrap();
        // The plan says so beforehand, with a thread of two kept to pack.
        let planned = engine.plan(&BatchShape::of(&batch)).choice;
        let expected = match gpu_blobs {
            None => Choice::Cpu,
            Some(4000) => Choice::Gpu,
            Some(gpu_blobs) => Choice::Split {
                gpu_blobs,
                packing_threads: 1,
            },
        };
        assert_eq!(planned, expected, "share {share}");
        check(&engine, Mode::Hash, &batch, &format!("share {share}"));
        let timings = engine.last_gpu_timings();
        match gpu_blobs {
            None => assert!(timings.is_none(), "{timings:?}"),
            Some(count) => {
                let timings = timings.unwrap();
                let long_in_part = batch[..count].iter().filter(|b| b.len() > 1024).count();
                assert_eq!(timings.gpu_blobs + long_in_part, count, "{timings:?}");
                assert!(long_in_part <= long);
            }
        }
        // Packed, with enough offsets that the CPU checks them while
        // hashing where the whole batch stays on the CPU (share 0).
        let lengths = (0..20_000u64).map(|i| (i * 7) % 1500);
        let offsets: Vec<u64> = std::iter::once(0)
            .chain(lengths.scan(0, |end, len| {
                *end += len;
                Some(*end)
            }))
            .collect();
        let data: Vec<u8> = (0..offsets[20_000]).map(|i| (i % 251) as u8).collect();
        let mut out = vec![[0u8; 32]; 20_000];
        engine
            .hash_packed_into(Mode::Hash, &data, &offsets, &mut out)
            .unwrap();
        for (index, digest) in out.iter().enumerate() {
            let blob = &data[offsets[index] as usize..offsets[index + 1] as usize];
            assert_eq!(
                *digest,
                reference(Mode::Hash, blob),
                "share {share}, blob {index}"
            );
        }
        let mut bad = offsets.clone();
        bad[15_000] = bad[14_999] - 1;
        let error = engine
            .hash_packed_into(Mode::Hash, &data, &bad, &mut out)
            .unwrap_err();
        assert!(
            matches!(
                error.kind(),
                ErrorKind::OffsetsDecrease { index: 15_000, .. }
            ),
            "share {share}: {error}"
        );
    }
}

/// A slab of long blobs is packed in pieces of a few MiB on every thread,
/// not one piece per 4096 blobs: the pieces' seams fall between long blobs
/// of every length.
#[test]
fn long_blobs_are_packed_in_pieces_of_bytes() {
    let Some(engine) = gpu_engine(None) else {
        return;
    };
    // About 15 MB: one slab at the default budget, four or more pieces.
    let batch = blobs(300, |i| 40_000 + i * 37 + (i % 3) * 1024);
    check(&engine, Mode::Hash, &batch, "300 long blobs in one slab");
    let timings = engine.last_gpu_timings().unwrap();
    assert_eq!((timings.slabs, timings.cpu_blobs), (1, 0), "{timings:?}");
}

/// A blob over a piece's 4 MiB is copied into its slab in parts on every
/// thread, between short blobs, at the largest a slab holds, and as the
/// 16 MiB subtrees of one longer than a slab; the parts' seams fall inside
/// the blob, the padding after its odd end.
#[test]
fn blobs_over_a_piece_are_copied_in_parts() {
    let Some(engine) = gpu_engine(None) else {
        return;
    };
    let mib = 1 << 20;
    let lengths = [
        5,
        4 * mib + 1,
        3000,
        5 * mib + 3,
        4 * mib,
        16 * mib,
        40 * mib + 1025,
        70,
    ];
    let batch = blobs(lengths.len(), |i| lengths[i]);
    check(&engine, Mode::Hash, &batch, "blobs over a piece");
    check_packed(&engine, Mode::Hash, &batch, 1, "blobs over a piece, packed");
    let timings = engine.last_gpu_timings().unwrap();
    assert_eq!(timings.cpu_blobs, 0, "{timings:?}");
}

/// A split batch hashes right through every upload the adapter offers:
/// the GPU's share streams through its slabs while the CPU hashes the rest.
#[test]
fn a_split_through_every_upload() {
    if gpu_engine(None).is_none() {
        return;
    }
    let batch = blobs(6000, |i| if i % 40 == 3 { 1500 + i } else { i % 1025 });
    let records: Vec<u8> = (0..64 * 40_000).map(|i| (i % 241) as u8).collect();
    for upload in [GpuUpload::Copy, GpuUpload::Direct, GpuUpload::Host] {
        let built = Engine::builder()
            .backend(Backend::Auto)
            .threads(2)
            .gpu_memory_budget(1 << 20)
            .gpu_upload(upload)
            .gpu_share(0.5)
            .build();
        let Ok(engine) = built else {
            // As `uploads_and_workgroup_sizes` checks, only Direct may be
            // missing.
            assert_eq!(upload, GpuUpload::Direct, "{built:?}");
            continue;
        };
        let what = format!("{upload:?}, half on the GPU");
        // Packed, the GPU's half copied as it lies but for the long blobs
        // (a thirtieth of the bytes, left to the CPU), or, where they are a
        // fifth of the bytes, padded blob by blob without them.
        let rare_long = blobs(6000, |i| if i % 100 == 3 { 1500 + i } else { i % 1025 });
        check_packed(&engine, Mode::Hash, &rare_long, 2, &what);
        check_packed(&engine, Mode::Hash, &batch, 2, &what);
        check(&engine, Mode::Hash, &batch, &what);
        let timings = engine.last_gpu_timings().unwrap();
        let long = batch[..3000]
            .iter()
            .filter(|blob| blob.len() > 1024)
            .count();
        assert_eq!(timings.gpu_blobs + long, 3000, "{upload:?}: {timings:?}");
        assert!(timings.slabs >= 2, "{upload:?}: {timings:?}");
        // Records in a pinned buffer: the GPU's half copied from where it
        // lies, except with the direct upload, which packs it.
        let mut pinned = engine.pinned_buffer(records.len()).unwrap();
        pinned.copy_from_slice(&records);
        let mut out = vec![[0u8; 32]; records.len() / 64];
        engine
            .hash_records_into(Mode::Hash, &pinned, 64, &mut out)
            .unwrap();
        for (record, digest) in records.chunks(64).zip(&out) {
            assert_eq!(*digest, reference(Mode::Hash, record), "{upload:?}");
        }
        let timings = engine.last_gpu_timings().unwrap();
        assert_eq!(timings.gpu_blobs, out.len() / 2, "{upload:?}: {timings:?}");
        let in_place = match pinned.is_pinned() {
            true => 64 * timings.gpu_blobs as u64,
            false => 0,
        };
        assert_eq!(timings.bytes_in_place, in_place, "{upload:?}: {timings:?}");
        assert_eq!(
            pinned.is_pinned(),
            upload != GpuUpload::Direct,
            "{upload:?}"
        );
    }
}

/// Whether the GPU copied `bytes` of input from a pinned buffer: exactly
/// where it copied them as records, or as the whole words that hold each
/// slab's bytes where it copied them verbatim (up to 3 more at each end).
fn copied_in_place(timings: &blake3_batch::GpuTimings, bytes: usize, as_records: bool) -> bool {
    let copied = timings.bytes_in_place as usize;
    match as_records {
        true => copied == bytes,
        false => (bytes..=bytes + 6 * timings.slabs).contains(&copied),
    }
}

/// Records and packed blobs in a pinned buffer are copied by the GPU from
/// where they lie, over many slabs, in every mode, from any byte: records
/// of a whole number of loads from a 4-byte boundary as records, other
/// records of up to 1 KiB as they lie without a table, everything else
/// as it lies with one. Every digest matches `blake3`, and matches the
/// same bytes hashed from a `Vec`.
#[test]
fn a_pinned_buffer_is_copied_from_where_it_lies() {
    let Some(engine) = gpu_engine(Some(4 << 20)) else {
        return;
    };
    let len = (20 << 20) + 64;
    let mut pinned = engine.pinned_buffer(len).unwrap();
    assert!(pinned.is_pinned(), "{pinned:?}");
    assert_eq!(pinned.len(), len);
    assert!(pinned.iter().all(|&byte| byte == 0), "not zeroed");
    for (i, byte) in pinned.iter_mut().enumerate() {
        *byte = (i * 7 + i / 4093) as u8;
    }
    let key = [0x5a; 32];
    let modes = [
        Mode::Hash,
        Mode::KeyedHash(&key),
        Mode::DeriveKey("pinned ctx"),
    ];
    for (case, (lead, size, as_records)) in [
        (0, 1024, true),
        (4, 1024, true),
        (12, 64, true),
        (16, 48, true),
        (1, 1024, false),
        (0, 100, false),
        (3, 100, false),
        (2, 2000, false),
    ]
    .into_iter()
    .enumerate()
    {
        let mode = modes[case % modes.len()];
        let count = (len - 64) / size;
        let records = &pinned[lead..lead + count * size];
        let mut out = vec![[0u8; 32]; count];
        engine
            .hash_records_into(mode, records, size, &mut out)
            .unwrap();
        let what = format!("{count} records of {size} B from byte {lead}, {mode:?}");
        for (index, (record, digest)) in records.chunks(size).zip(&out).enumerate() {
            assert_eq!(*digest, reference(mode, record), "{what}: record {index}");
        }
        let timings = engine.last_gpu_timings().unwrap();
        let in_place = copied_in_place(&timings, records.len(), as_records);
        assert!(in_place, "{what}: {timings:?}");
        // Records of up to 1 KiB need no table: nothing else is uploaded.
        if size <= 1024 {
            assert_eq!(timings.bytes_uploaded, timings.bytes_in_place, "{what}");
        }
        assert!(timings.slabs >= 10, "{what}: {timings:?}");
    }
    // Equal lengths through offsets that start above 0: in place too.
    let equal = blobs(5000, |_| 256);
    let (packed, offsets) = common::pack(&equal, 8);
    pinned[..packed.len()].copy_from_slice(&packed);
    let mut out = vec![[0u8; 32]; equal.len()];
    engine
        .hash_packed_into(Mode::Hash, &pinned[..packed.len()], &offsets, &mut out)
        .unwrap();
    for (blob, digest) in equal.iter().zip(&out) {
        assert_eq!(*digest, reference(Mode::Hash, blob), "256 B packed");
    }
    let timings = engine.last_gpu_timings().unwrap();
    assert_eq!(timings.bytes_in_place, 5000 * 256, "{timings:?}");
    // Mixed lengths, some over one chunk, from every byte of a word: in
    // place, verbatim.
    let mixed = blobs(30_000, |i| (i * 13) % 1100);
    for lead in 0..4 {
        let (packed, offsets) = common::pack(&mixed, lead);
        pinned[..packed.len()].copy_from_slice(&packed);
        let mut out = vec![[0u8; 32]; mixed.len()];
        let mode = modes[lead % modes.len()];
        engine
            .hash_packed_into(mode, &pinned, &offsets, &mut out)
            .unwrap();
        for (index, (blob, digest)) in mixed.iter().zip(&out).enumerate() {
            assert_eq!(*digest, reference(mode, blob), "mixed from {lead}: {index}");
        }
        let timings = engine.last_gpu_timings().unwrap();
        let bytes = packed.len() - lead;
        assert!(
            copied_in_place(&timings, bytes, false),
            "{lead}: {timings:?}"
        );
        assert!(timings.slabs >= 3, "mixed from {lead}: {timings:?}");
    }
    // The same bytes in a Vec: packed, and the same digests.
    let copy = pinned[..len - 64].to_vec();
    let mut from_vec = vec![[0u8; 32]; copy.len() / 1024];
    engine
        .hash_records_into(Mode::Hash, &copy, 1024, &mut from_vec)
        .unwrap();
    assert_eq!(engine.last_gpu_timings().unwrap().bytes_in_place, 0);
    let mut from_pinned = vec![[0u8; 32]; from_vec.len()];
    engine
        .hash_records_into(Mode::Hash, &pinned[..len - 64], 1024, &mut from_pinned)
        .unwrap();
    assert!(
        from_vec == from_pinned,
        "a Vec and a pinned buffer disagree"
    );
}

/// Digest slots in a pinned buffer, from a 4-byte boundary, are written by
/// the GPU's copy with nothing copied on the host: over many slabs, from
/// inputs packed or copied in place, and in a split whose long blobs the
/// CPU hashes into their slots meanwhile. Slots off a 4-byte boundary are
/// read back as from a `Vec`. Every digest matches `blake3`.
#[test]
fn digests_are_copied_into_pinned_memory_where_their_slots_lie() {
    let Some(engine) = gpu_engine(Some(1 << 20)) else {
        return;
    };
    let count = 20_000;
    let mut digests = engine.pinned_buffer(32 * count + 8).unwrap();
    assert!(digests.is_pinned());
    let mut input = engine.pinned_buffer(64 * count).unwrap();
    for (i, byte) in input.iter_mut().enumerate() {
        *byte = (i * 11 + i / 251) as u8;
    }
    let vec_input = input.to_vec();
    let mixed = blobs(count, |i| (i * 37) % 1025);
    let (packed, offsets) = common::pack(&mixed, 0);
    for (lead, copied) in [(0, true), (4, true), (2, false)] {
        digests.fill(0xEE);
        let slots = digests[lead..].as_chunks_mut::<32>().0;
        let slots = &mut slots[..count];
        let what = format!("slots from byte {lead}");
        // Records in place, records from a Vec, mixed lengths packed.
        for (name, records) in [("pinned", &input[..]), ("vec", &vec_input[..])] {
            slots.fill([0xEE; 32]);
            engine
                .hash_records_into(Mode::Hash, records, 64, slots)
                .unwrap();
            for (index, (record, digest)) in records.chunks(64).zip(&*slots).enumerate() {
                assert_eq!(
                    *digest,
                    reference(Mode::Hash, record),
                    "{what}, {name}: {index}"
                );
            }
            let timings = engine.last_gpu_timings().unwrap();
            let expected = if copied { count } else { 0 };
            assert_eq!(timings.digests_in_place, expected, "{what}: {timings:?}");
            assert!(timings.slabs >= 2, "{what}: {timings:?}");
        }
        slots.fill([0xEE; 32]);
        engine
            .hash_packed_into(Mode::DeriveKey("slots"), &packed, &offsets, slots)
            .unwrap();
        for (index, (blob, digest)) in mixed.iter().zip(&*slots).enumerate() {
            assert_eq!(
                *digest,
                reference(Mode::DeriveKey("slots"), blob),
                "{what}: {index}"
            );
        }
    }
    // A split with blobs over 1 KiB, which the CPU hashes into their slots
    // after the GPU's copy has filled them with whatever it had.
    let split = Engine::builder()
        .backend(Backend::Auto)
        .threads(2)
        .gpu_memory_budget(1 << 20)
        .gpu_share(0.6)
        .build()
        .unwrap();
    let mut digests = split.pinned_buffer(32 * 6000).unwrap();
    let batch = blobs(6000, |i| if i % 7 == 3 { 1025 + i } else { i % 1025 });
    let (packed, offsets) = common::pack(&batch, 0);
    let slots = digests.as_digests_mut();
    slots.fill([0xEE; 32]);
    split
        .hash_packed_into(Mode::Hash, &packed, &offsets, slots)
        .unwrap();
    for (index, (blob, digest)) in batch.iter().zip(digests.as_digests()).enumerate() {
        assert_eq!(*digest, reference(Mode::Hash, blob), "split: blob {index}");
    }
    let timings = split.last_gpu_timings().unwrap();
    assert_eq!(timings.digests_in_place, 3600, "{timings:?}");
}

/// Every engine gives a pinned buffer that hashes right: ordinary memory
/// without a GPU; too large a buffer for the adapter is an error that
/// says what to do, and an empty one is fine.
#[test]
fn pinned_buffers_on_every_engine() {
    let cpu = Engine::builder().backend(Backend::Cpu).build().unwrap();
    let mut buffer = cpu.pinned_buffer(64 * 100).unwrap();
    assert!(!buffer.is_pinned());
    for (i, byte) in buffer.iter_mut().enumerate() {
        *byte = i as u8;
    }
    let mut out = vec![[0u8; 32]; 100];
    cpu.hash_records_into(Mode::Hash, &buffer, 64, &mut out)
        .unwrap();
    assert_eq!(out[99], reference(Mode::Hash, &buffer[99 * 64..]));
    assert!(cpu.pinned_buffer(0).unwrap().is_empty());
    let Some(gpu) = gpu_engine(None) else {
        return;
    };
    assert!(gpu.pinned_buffer(0).unwrap().is_empty());
    let error = gpu.pinned_buffer(1 << 46).unwrap_err();
    assert!(
        matches!(error.kind(), ErrorKind::OutOfMemory { bytes, .. } if *bytes == 1 << 46)
            && error.to_string().contains("largest buffer"),
        "{error}"
    );
    // Dropped buffers leave nothing behind: a new one at the same place
    // hashes its own bytes.
    for round in 0..3u8 {
        let mut buffer = gpu.pinned_buffer(1024 * 64).unwrap();
        buffer.fill(round);
        let mut out = vec![[0u8; 32]; 64];
        gpu.hash_records_into(Mode::Hash, &buffer, 1024, &mut out)
            .unwrap();
        assert_eq!(out[63], reference(Mode::Hash, &[round; 1024]), "{round}");
    }
}
