//! With no adapter to be found (`WGPU_BACKEND` naming an API this machine
//! lacks), or no GPU backend built in (the `gpu` feature off),
//! `Backend::Gpu` is an error that says what to do, and the other backends
//! still work. In its own test binary because it sets an environment
//! variable for the whole process.

#[cfg(feature = "gpu")]
use std::time::{Duration, Instant};

use blake3_batch::{Backend, Engine, ErrorKind};

#[cfg(feature = "gpu")]
#[test]
fn no_adapter_is_an_error_naming_what_was_tried() {
    // Metal exists only on Apple systems, DX12 only on Windows.
    let absent = if cfg!(target_vendor = "apple") {
        "dx12"
    } else {
        "metal"
    };
    std::env::set_var("WGPU_BACKEND", absent);
    let started = Instant::now();
    let error = Engine::builder()
        .backend(Backend::Gpu)
        .build()
        .expect_err("no adapter on this API");
    assert!(started.elapsed() < Duration::from_secs(10), "not a hang");
    assert!(
        matches!(error.kind(), ErrorKind::BackendUnavailable { backend, .. } if backend == "gpu"),
        "{error}"
    );
    let message = error.to_string();
    assert!(
        message.contains(&format!("WGPU_BACKEND={absent}")),
        "{message}"
    );
    assert!(message.contains("Backend::Cpu"), "{message}");
    assert!(blake3_batch::gpu_adapters().is_empty());

    for backend in [Backend::Auto, Backend::Cpu] {
        let engine = Engine::builder().backend(backend).build().unwrap();
        assert!(engine.gpu_info().is_none());
        let digests = engine.hash_many(&[b"a".as_slice(), b"bc"]).unwrap();
        assert_eq!(digests[1], blake3::hash(b"bc"));
    }
}

#[cfg(not(feature = "gpu"))]
#[test]
fn without_the_gpu_feature_gpu_is_an_error_naming_the_feature() {
    let error = Engine::builder()
        .backend(Backend::Gpu)
        .build()
        .expect_err("no GPU backend in this build");
    assert!(
        matches!(error.kind(), ErrorKind::BackendUnavailable { backend, .. } if backend == "gpu"),
        "{error}"
    );
    let message = error.to_string();
    assert!(message.contains("`gpu` feature"), "{message}");
    assert!(message.contains("Backend::Cpu"), "{message}");
    assert!(blake3_batch::gpu_adapters().is_empty());
    for backend in [Backend::Auto, Backend::Cpu] {
        let engine = Engine::builder().backend(backend).build().unwrap();
        assert!(engine.gpu_info().is_none() && engine.last_gpu_timings().is_none());
        let blobs: Vec<Vec<u8>> = (0..300).map(|i| vec![i as u8; i * 7]).collect();
        let digests = engine.hash_many(&blobs).unwrap();
        for (blob, digest) in blobs.iter().zip(&digests) {
            assert_eq!(*digest, blake3::hash(blob), "{} bytes", blob.len());
        }
    }
}
