//! `Backend::Auto` under injected profiles: the decisions, split execution
//! on a real (software) GPU against the `blake3` crate, and profiles that
//! are saved, loaded, corrupt or foreign.

mod common;

use blake3_batch::{
    cpu_model, Backend, BatchShape, Choice, CpuRates, Engine, ErrorKind, GpuRates, Mode, Profile,
};
use common::{vector_input, vectors};
use proptest::prelude::*;
use std::sync::OnceLock;

fn cpu_rates() -> CpuRates {
    CpuRates {
        tiny_bytes_per_sec: 4e9,
        small_bytes_per_sec: 6e9,
        chunk_bytes_per_sec: 7e9,
        large_bytes_per_sec: 6e9,
        thread_efficiency: 0.9,
        tiny_thread_efficiency: None,
    }
}

/// A CPU a million times slower than the GPUs here: Auto sends them all it
/// can.
fn slow_cpu() -> CpuRates {
    CpuRates {
        tiny_bytes_per_sec: 1e6,
        small_bytes_per_sec: 1e6,
        chunk_bytes_per_sec: 1e6,
        large_bytes_per_sec: 1e6,
        ..cpu_rates()
    }
}

fn profile(gpu: Option<GpuRates>) -> Profile {
    Profile {
        cpu_model: cpu_model(),
        adapter: gpu.as_ref().map(|_| "injected".to_owned()),
        cpu: cpu_rates(),
        gpu,
    }
}

/// A GPU that, by this profile, keeps pace with the CPU: every batch of
/// more than a few blobs is split about evenly.
fn even_gpu() -> GpuRates {
    GpuRates {
        latency_sec: 1e-9,
        upload_bytes_per_sec: 1e12,
        upload_one_thread_bytes_per_sec: None,
        pinned_upload_bytes_per_sec: None,
        pinned_blob_sec: None,
        split_slowdown: None,
        small_split_slowdown: None,
        download_bytes_per_sec: 1e12,
        kernel_blobs_per_sec: 30e6,
        large_bytes_per_sec: None,
        software: false,
    }
}

/// A discrete GPU on a fast bus.
fn fast_gpu() -> GpuRates {
    GpuRates {
        latency_sec: 300e-6,
        upload_bytes_per_sec: 25e9,
        upload_one_thread_bytes_per_sec: None,
        pinned_upload_bytes_per_sec: None,
        pinned_blob_sec: None,
        split_slowdown: None,
        small_split_slowdown: None,
        download_bytes_per_sec: 25e9,
        kernel_blobs_per_sec: 300e6,
        large_bytes_per_sec: None,
        software: false,
    }
}

fn auto(profile: Profile) -> Option<Engine> {
    // Opening the GPU needs an adapter; skip like the GPU tests do (asked
    // once: on an H200 a few dozen devices opened in a row made the next
    // one fail as lost).
    static HAS_GPU: OnceLock<bool> = OnceLock::new();
    if !*HAS_GPU.get_or_init(|| common::gpu_engine(None).is_some()) {
        return None;
    }
    Some(
        Engine::builder()
            .backend(Backend::Auto)
            .threads(2)
            .gpu_memory_budget(64 * 1024)
            .profile(profile)
            .build()
            .expect("auto engine"),
    )
}

/// Auto hashes the windows of a stream (`Engine::hash_reader`) on the GPU
/// where the profile has a rate for long blobs there that beats the CPU,
/// and on the CPU where it has none.
#[test]
fn auto_streams_windows_to_the_gpu_where_the_profile_has_their_rate() {
    let input = vector_input((1 << 20) + 5);
    let key = [4u8; 32];
    let slow_cpu = slow_cpu();
    let mut gpu = even_gpu();
    gpu.large_bytes_per_sec = Some(1e12);
    let with = |gpu: GpuRates| Profile {
        cpu: slow_cpu.clone(),
        ..profile(Some(gpu))
    };
    let Some(engine) = auto(with(gpu.clone())) else {
        return;
    };
    for mode in [Mode::Hash, Mode::KeyedHash(&key), Mode::DeriveKey("stream")] {
        let digest = engine.hash_reader(mode, &input[..]).unwrap();
        assert_eq!(digest, common::reference(mode, &input), "{mode:?}");
    }
    let timings = engine
        .last_gpu_timings()
        .expect("the windows ran on the GPU");
    assert!(timings.slabs > 1, "{timings:?}");

    gpu.large_bytes_per_sec = None;
    let engine = auto(with(gpu)).unwrap();
    let digest = engine.hash_reader(Mode::Hash, &input[..]).unwrap();
    assert_eq!(digest, common::reference(Mode::Hash, &input));
    assert!(engine.last_gpu_timings().is_none());
}

/// One Auto engine under [`even_gpu`] for every case of the property test:
/// each engine opens a device of its own.
fn even_auto() -> Option<&'static Engine> {
    static ENGINE: OnceLock<Option<Engine>> = OnceLock::new();
    ENGINE
        .get_or_init(|| auto(profile(Some(even_gpu()))))
        .as_ref()
}

#[test]
fn decisions_under_injected_profiles() {
    let Some(engine) = auto(profile(Some(fast_gpu()))) else {
        return;
    };
    assert_eq!(
        engine.plan(&BatchShape::of(&[b"one blob"])).choice,
        Choice::Cpu
    );
    let big = BatchShape {
        blobs: 10 << 20,
        bytes: 10 << 30,
        large_blobs: 0,
        large_bytes: 0,
    };
    let plan = engine.plan(&big);
    assert!(
        matches!(plan.choice, Choice::Gpu | Choice::Split { .. }),
        "{plan:?}"
    );
    assert!(plan.predicted_sec() < plan.cpu_sec, "{plan:?}");

    let mut slow_bus = fast_gpu();
    slow_bus.upload_bytes_per_sec = 0.5e9;
    slow_bus.download_bytes_per_sec = 0.5e9;
    let engine = auto(profile(Some(slow_bus))).unwrap();
    let plan = engine.plan(&big);
    assert!(plan.gpu_sec.unwrap() > plan.cpu_sec, "{plan:?}");
    assert_eq!(plan.choice, Choice::Cpu, "{plan:?}");

    // A CPU engine reports the model's numbers but keeps its choice.
    let cpu = Engine::builder()
        .backend(Backend::Cpu)
        .profile(profile(Some(fast_gpu())))
        .build()
        .unwrap();
    let plan = cpu.plan(&big);
    assert_eq!(plan.choice, Choice::Cpu);
    assert!(plan.gpu_sec.is_none(), "a CPU engine has no GPU to predict");
}

#[test]
fn without_a_profile_nothing_goes_to_the_gpu() {
    let engine = Engine::builder()
        .profile_file("/nonexistent/profile.json")
        .build()
        .unwrap();
    assert!(engine.profile().gpu.is_none());
    assert!(engine.gpu_info().is_none(), "no GPU opened for Auto");
    let shape = BatchShape::from_lengths(std::iter::repeat_n(1024, 1 << 20));
    assert_eq!(engine.plan(&shape).choice, Choice::Cpu);
    // A software adapter in a profile is never chosen either.
    let mut software = even_gpu();
    software.software = true;
    let engine = Engine::builder()
        .profile(profile(Some(software)))
        .build()
        .unwrap();
    assert!(engine.gpu_info().is_none());
    assert_eq!(engine.plan(&shape).choice, Choice::Cpu);
}

/// Where the profile has a GPU rate for blobs over 1 KiB, Auto's GPU plans
/// and the GPU's share of its splits hash them there (those longer than a
/// slab in subtrees); without one they stay on the CPU beside the GPU.
/// Exact digests every way.
#[test]
fn auto_sends_blobs_over_a_chunk_to_the_gpu_where_the_profile_has_their_rate() {
    let lengths = [100, 3000, 4096, 10_000, 0, 1025];
    let batch: Vec<Vec<u8>> = (0..60)
        .map(|i| (0..lengths[i % 6]).map(|j| (i * 7 + j) as u8).collect())
        .collect();
    let over_a_chunk = |blobs: &[Vec<u8>]| blobs.iter().filter(|blob| blob.len() > 1024).count();
    let key = [9u8; 32];
    let exact = |engine: &Engine| {
        for mode in [Mode::Hash, Mode::KeyedHash(&key), Mode::DeriveKey("large")] {
            let mismatch = common::first_mismatch(engine, mode, &batch);
            assert_eq!(mismatch, None, "{mode:?}");
        }
    };
    let slow_cpu = slow_cpu();
    let mut gpu = even_gpu();
    gpu.large_bytes_per_sec = Some(1e12);
    let with_cpu = |cpu: CpuRates, gpu: GpuRates| Profile {
        cpu,
        ..profile(Some(gpu))
    };
    let Some(engine) = auto(with_cpu(slow_cpu.clone(), gpu.clone())) else {
        return;
    };
    assert_eq!(engine.plan(&BatchShape::of(&batch)).choice, Choice::Gpu);
    exact(&engine);
    let timings = engine.last_gpu_timings().unwrap();
    assert_eq!(
        (timings.gpu_blobs, timings.cpu_blobs),
        (60, 0),
        "{timings:?}"
    );

    let mut no_rate = gpu.clone();
    no_rate.large_bytes_per_sec = None;
    let engine = auto(with_cpu(slow_cpu, no_rate)).unwrap();
    exact(&engine);
    let timings = engine.last_gpu_timings().unwrap();
    assert_eq!(timings.cpu_blobs, over_a_chunk(&batch), "{timings:?}");

    // Both sides about as fast at long blobs: a split.
    gpu.large_bytes_per_sec = Some(10e9);
    let engine = auto(with_cpu(cpu_rates(), gpu)).unwrap();
    let Choice::Split { gpu_blobs, .. } = engine.plan(&BatchShape::of(&batch)).choice else {
        panic!("{:?}", engine.plan(&BatchShape::of(&batch)));
    };
    exact(&engine);
    // Slabs of 4 KiB (`auto`'s budget): the GPU share's blobs of 10 000
    // bytes are hashed there in subtrees.
    let timings = engine.last_gpu_timings().unwrap();
    assert!(
        batch[..gpu_blobs].iter().any(|blob| blob.len() == 10_000),
        "{gpu_blobs}"
    );
    assert_eq!(
        (timings.gpu_blobs, timings.cpu_blobs),
        (gpu_blobs, 0),
        "{timings:?}"
    );
}

fn check_split(engine: &Engine, mode: Mode, blobs: &[Vec<u8>]) -> Result<(), TestCaseError> {
    let mismatch = common::first_mismatch(engine, mode, blobs);
    prop_assert!(mismatch.is_none(), "{}", mismatch.unwrap_or_default());
    Ok(())
}

#[test]
fn split_execution_matches_blake3_on_the_vectors() {
    // An engine of its own: the timings checked below are the engine's
    // last batch's.
    let Some(engine) = auto(profile(Some(even_gpu()))) else {
        return;
    };
    let vectors = vectors();
    // The vectors of at most one chunk, eight times over, so that the CPU
    // has no large blobs to keep it busy and the model splits the batch;
    // the longer vectors go through the GPU path's CPU side in the
    // property test below and in tests/gpu.rs.
    let blobs: Vec<Vec<u8>> = std::iter::repeat_n(&vectors.cases, 8)
        .flatten()
        .filter(|case| case.input_len <= 1024)
        .map(|case| vector_input(case.input_len))
        .collect();
    let plan = engine.plan(&BatchShape::of(&blobs));
    // Packing costs next to nothing here, so no thread is kept for it:
    // it takes turns with the CPU's share on both.
    let Choice::Split {
        gpu_blobs,
        packing_threads: 0,
    } = plan.choice
    else {
        panic!("an even GPU splits the vectors, packing on every thread: {plan:?}")
    };
    assert!(gpu_blobs > 0 && gpu_blobs < blobs.len());
    for mode in [
        Mode::Hash,
        Mode::KeyedHash(&vectors.key),
        Mode::DeriveKey(&vectors.context),
    ] {
        check_split(&engine, mode, &blobs).unwrap();
    }
    let timings = engine.last_gpu_timings().expect("the GPU took part");
    assert_eq!(timings.gpu_blobs + timings.cpu_blobs, gpu_blobs);
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(24))]

    #[test]
    fn split_execution_matches_blake3_on_random_batches(
        lengths in prop::collection::vec(prop_oneof![0usize..=1024, 1025usize..=5000], 2..=200),
        key in any::<[u8; 32]>(),
    ) {
        let Some(engine) = even_auto() else { return Ok(()) };
        let blobs: Vec<Vec<u8>> = lengths
            .iter()
            .enumerate()
            .map(|(i, &len)| (0..len).map(|j| (i * 7 + j) as u8).collect())
            .collect();
        check_split(engine, Mode::Hash, &blobs)?;
        check_split(engine, Mode::KeyedHash(&key), &blobs)?;
    }
}

#[test]
fn profiles_round_trip_and_bad_ones_are_ignored() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("nested").join("profile.json");
    let saved = profile(Some(fast_gpu()));
    saved.save(&path).unwrap();
    assert_eq!(Profile::load(&path).unwrap(), saved);

    let corrupt = dir.path().join("corrupt.json");
    std::fs::write(&corrupt, b"{ not json").unwrap();
    let error = Profile::load(&corrupt).unwrap_err();
    assert!(matches!(error.kind(), ErrorKind::Profile { .. }), "{error}");
    assert!(error.to_string().contains("corrupt.json"), "{error}");
    let negative = dir.path().join("negative.json");
    let mut bad = profile(None);
    bad.cpu.tiny_bytes_per_sec = -1.0;
    bad.save(&negative).unwrap();
    assert!(Profile::load(&negative).is_err());
    // A split slowdown of either size is checked too.
    let mut gpu = fast_gpu();
    gpu.small_split_slowdown = Some(blake3_batch::SplitSlowdown {
        tiny: 1.0,
        chunk: 1.0,
        pinned_tiny: Some(0.0),
        pinned_chunk: None,
    });
    let zero_slowdown = dir.path().join("zero-slowdown.json");
    profile(Some(gpu)).save(&zero_slowdown).unwrap();
    assert!(Profile::load(&zero_slowdown).is_err());
    // And the upload on one thread, where there is one.
    let mut gpu = fast_gpu();
    gpu.upload_one_thread_bytes_per_sec = Some(0.0);
    let no_rate = dir.path().join("zero-one-thread.json");
    profile(Some(gpu)).save(&no_rate).unwrap();
    assert!(Profile::load(&no_rate).is_err());

    let mut foreign = profile(None);
    foreign.cpu_model = "some other CPU".to_owned();
    foreign.cpu.chunk_bytes_per_sec = 123.0;
    let foreign_path = dir.path().join("foreign.json");
    foreign.save(&foreign_path).unwrap();

    // An engine given any of these builds, on conservative rates.
    for file in [&corrupt, &negative, &foreign_path] {
        let engine = Engine::builder().profile_file(file).build().unwrap();
        assert_eq!(
            engine.profile(),
            &Profile::conservative(cpu_model()),
            "{file:?}"
        );
        assert_eq!(engine.hash_many(&[b"ok"]).unwrap()[0], blake3::hash(b"ok"));
    }
    // A good one for this CPU is used.
    let mine = dir.path().join("mine.json");
    let mut own = profile(None);
    own.cpu.chunk_bytes_per_sec = 42e9;
    own.save(&mine).unwrap();
    let engine = Engine::builder().profile_file(&mine).build().unwrap();
    assert_eq!(engine.profile(), &own);
}

#[test]
fn calibration_measures_sane_rates() {
    let calibrated = |threads| {
        let engine = Engine::builder().backend(Backend::Cpu).threads(threads);
        engine.build().unwrap().calibrate().unwrap()
    };
    let profile = calibrated(2);
    assert_eq!(profile.cpu_model, cpu_model());
    for rate in [
        profile.cpu.tiny_bytes_per_sec,
        profile.cpu.small_bytes_per_sec,
        profile.cpu.chunk_bytes_per_sec,
        profile.cpu.large_bytes_per_sec,
    ] {
        assert!(rate.is_finite() && rate > 1e6, "{profile:?}");
    }
    // Two threads: how the second scales, at 1 KiB and at 64 bytes.
    for efficiency in [
        Some(profile.cpu.thread_efficiency),
        profile.cpu.tiny_thread_efficiency,
    ] {
        let efficiency = efficiency.expect("measured on two threads");
        assert!((0.05..=1.0).contains(&efficiency), "{profile:?}");
    }
    let alone = calibrated(1);
    assert_eq!(alone.cpu.thread_efficiency, 1.0, "{alone:?}");
    assert_eq!(alone.cpu.tiny_thread_efficiency, None, "{alone:?}");
    assert!(profile.gpu.is_none());
    let Some(gpu) = common::gpu_engine(None) else {
        return;
    };
    let profile = gpu.calibrate().unwrap();
    let rates = profile.gpu.expect("a GPU engine measures its GPU");
    let info = gpu.gpu_info().unwrap();
    assert_eq!(profile.adapter.as_deref(), Some(info.name.as_str()));
    assert_eq!(
        rates.software,
        info.device_type == blake3_batch::GpuDeviceType::Cpu
    );
    assert!(
        rates.kernel_blobs_per_sec > 0.0 && rates.latency_sec > 0.0,
        "{rates:?}"
    );
    // Blobs over 1 KiB end to end: not much faster than the upload they
    // include, measured in another run (a bound against a gross error).
    let large = rates.large_bytes_per_sec.expect("measured");
    assert!(
        large > 1e6 && large <= rates.upload_bytes_per_sec * 2.0,
        "{rates:?}"
    );
    // Where the engine can pin memory (Vulkan), the upload from it too.
    let pinned = gpu.pinned_buffer(64).unwrap().is_pinned();
    assert_eq!(
        rates.pinned_upload_bytes_per_sec.is_some(),
        pinned,
        "{rates:?}"
    );
    assert_eq!(rates.pinned_blob_sec.is_some(), pinned, "{rates:?}");
    // Splits timed against the model at two sizes, from pinned memory
    // where there is some.
    for slowdown in [rates.split_slowdown, rates.small_split_slowdown] {
        let slowdown = slowdown.expect("splits are timed");
        for factor in [slowdown.tiny, slowdown.chunk]
            .into_iter()
            .chain(slowdown.pinned_tiny)
            .chain(slowdown.pinned_chunk)
        {
            assert!((0.5..=20.0).contains(&factor), "{slowdown:?}");
        }
        assert_eq!(slowdown.pinned_tiny.is_some(), pinned, "{slowdown:?}");
        assert_eq!(slowdown.pinned_chunk.is_some(), pinned, "{slowdown:?}");
    }
    assert!(
        rates.pinned_blob_sec.is_none_or(|seconds| seconds >= 0.0),
        "{rates:?}"
    );
    // With the GPU's stages timed, the upload with one thread packing too.
    let stamped = gpu
        .last_gpu_timings()
        .is_some_and(|timings| timings.dispatch.is_some());
    assert_eq!(
        rates.upload_one_thread_bytes_per_sec.is_some(),
        stamped,
        "{rates:?}"
    );
    assert!(
        rates
            .upload_one_thread_bytes_per_sec
            .is_none_or(|rate| rate.is_finite() && rate > 0.0),
        "{rates:?}"
    );
    assert!(
        rates
            .pinned_upload_bytes_per_sec
            .is_none_or(|rate| rate.is_finite() && rate > 0.0),
        "{rates:?}"
    );
}

/// Where one thread packs as fast as all of them, a split keeps a thread
/// of two to pack the GPU's share while the other hashes the CPU's, and
/// the digests stay exact: records, packed blobs of mixed lengths from an
/// odd byte, and slices, in every mode.
#[test]
fn a_split_with_a_thread_kept_to_pack_is_exact() {
    let gpu = GpuRates {
        latency_sec: 1e-9,
        upload_bytes_per_sec: 20e9,
        upload_one_thread_bytes_per_sec: Some(20e9),
        pinned_upload_bytes_per_sec: None,
        pinned_blob_sec: None,
        split_slowdown: None,
        small_split_slowdown: None,
        download_bytes_per_sec: 1e12,
        kernel_blobs_per_sec: 1e9,
        large_bytes_per_sec: None,
        software: false,
    };
    let Some(engine) = auto(profile(Some(gpu))) else {
        return;
    };
    let vectors = vectors();
    let mut lengths = (0..3000).map(|i| (i * 37) % 1025);
    let blobs: Vec<Vec<u8>> = std::iter::from_fn(|| lengths.next())
        .enumerate()
        .map(|(i, len)| (0..len).map(|j| (i * 7 + j * 3) as u8).collect())
        .collect();
    let (data, offsets) = common::pack(&blobs, 3);
    let records = vector_input(100 * 3000);
    let record_plan = engine.plan(&BatchShape::from_lengths(std::iter::repeat_n(100, 3000)));
    assert!(
        matches!(
            record_plan.choice,
            Choice::Split {
                packing_threads: 1,
                ..
            }
        ),
        "{record_plan:?}"
    );
    for mode in [
        Mode::Hash,
        Mode::KeyedHash(&vectors.key),
        Mode::DeriveKey(&vectors.context),
    ] {
        let planned = engine.plan_packed(&data, &offsets);
        let Choice::Split {
            gpu_blobs,
            packing_threads: 1,
        } = planned.choice
        else {
            panic!("a thread kept to pack: {planned:?}")
        };
        let mut out = vec![[0u8; 32]; blobs.len()];
        engine
            .hash_packed_into(mode, &data, &offsets, &mut out)
            .unwrap();
        let timings = engine.last_gpu_timings().expect("the GPU took part");
        assert_eq!(timings.gpu_blobs, gpu_blobs, "{timings:?}");
        for (index, (blob, digest)) in blobs.iter().zip(&out).enumerate() {
            assert_eq!(
                *digest,
                common::reference(mode, blob),
                "{mode:?} blob {index}"
            );
        }
        let mut out = vec![[0u8; 32]; 3000];
        engine
            .hash_records_into(mode, &records, 100, &mut out)
            .unwrap();
        let timings = engine.last_gpu_timings().expect("the GPU took part");
        assert!((1..3000).contains(&timings.gpu_blobs), "{timings:?}");
        for (index, (record, digest)) in records.chunks(100).zip(&out).enumerate() {
            assert_eq!(
                *digest,
                common::reference(mode, record),
                "{mode:?} record {index}"
            );
        }
        check_split(&engine, mode, &blobs).unwrap();
    }
}

/// Where the profile says packing for the GPU costs the CPU more than it
/// saves, Auto keeps a batch in ordinary memory on the CPU but splits the
/// same batch in a pinned buffer, whose GPU share is copied as it lies.
#[test]
fn auto_splits_a_pinned_batch_it_would_keep_on_the_cpu() {
    let gpu = GpuRates {
        latency_sec: 1e-9,
        upload_bytes_per_sec: 1e9,
        upload_one_thread_bytes_per_sec: None,
        pinned_upload_bytes_per_sec: Some(1e12),
        pinned_blob_sec: Some(0.0),
        split_slowdown: None,
        small_split_slowdown: None,
        download_bytes_per_sec: 1e12,
        kernel_blobs_per_sec: 30e6,
        large_bytes_per_sec: None,
        software: false,
    };
    let Some(engine) = auto(profile(Some(gpu))) else {
        return;
    };
    let mut pinned = engine.pinned_buffer(1024 * 4096).unwrap();
    if !pinned.is_pinned() {
        eprintln!("this adapter cannot pin memory");
        return;
    }
    for (i, byte) in pinned.iter_mut().enumerate() {
        *byte = (i % 251) as u8;
    }
    let ordinary = pinned.to_vec();
    let mut out = vec![[0u8; 32]; 4096];
    engine
        .hash_records_into(Mode::Hash, &ordinary, 1024, &mut out)
        .unwrap();
    assert!(
        engine.last_gpu_timings().is_none(),
        "packed: all on the CPU"
    );
    let mut split = vec![[0u8; 32]; 4096];
    engine
        .hash_records_into(Mode::Hash, &pinned, 1024, &mut split)
        .unwrap();
    let timings = engine.last_gpu_timings().expect("pinned: split");
    assert!((1..4096).contains(&timings.gpu_blobs), "{timings:?}");
    assert_eq!(timings.bytes_in_place, 1024 * timings.gpu_blobs as u64);
    for (record, digest) in ordinary.chunks(1024).zip(&split) {
        assert_eq!(digest, blake3::hash(record).as_bytes());
    }
    assert!(out == split);
    // The plans say so beforehand.
    let offsets: Vec<u64> = (0..=4096).map(|i| i * 1024).collect();
    assert_eq!(engine.plan_packed(&ordinary, &offsets).choice, Choice::Cpu);
    let planned = engine.plan_packed(&pinned, &offsets);
    assert!(
        matches!(planned.choice, Choice::Split { .. }),
        "{planned:?}"
    );
    // Mixed lengths from an odd byte, copied as they lie: planned with the
    // pinned upload rate and no packing, and split.
    let mut offsets = vec![3u64];
    while offsets.len() < 6000 {
        let last = *offsets.last().unwrap();
        offsets.push(last + (offsets.len() as u64 * 37) % 1025);
    }
    let count = offsets.len() - 1;
    assert!(*offsets.last().unwrap() as usize <= pinned.len());
    let packed = engine.plan_packed(&ordinary, &offsets);
    let planned = engine.plan_packed(&pinned, &offsets);
    assert!(
        matches!(planned.choice, Choice::Split { .. }),
        "{planned:?}"
    );
    assert!(
        planned.gpu_sec.unwrap() < packed.gpu_sec.unwrap() / 10.0,
        "{planned:?} {packed:?}"
    );
    let mut out = vec![[0u8; 32]; count];
    engine
        .hash_packed_into(Mode::Hash, &ordinary, &offsets, &mut out)
        .unwrap();
    let mut split = vec![[0u8; 32]; count];
    engine
        .hash_packed_into(Mode::Hash, &pinned, &offsets, &mut split)
        .unwrap();
    let timings = engine.last_gpu_timings().expect("mixed, pinned: split");
    assert!((1..count).contains(&timings.gpu_blobs), "{timings:?}");
    assert!(timings.bytes_in_place > 0, "{timings:?}");
    assert!(out == split);
    for (index, digest) in split.iter().enumerate() {
        let blob = &ordinary[offsets[index] as usize..offsets[index + 1] as usize];
        assert_eq!(digest, blake3::hash(blob).as_bytes(), "mixed: blob {index}");
    }
}
