//! With no adapter to be found (`WGPU_BACKEND` naming an API this machine
//! lacks), `Backend::Gpu` is an error that says what was tried, and the
//! other backends still work. In its own test binary because it sets an
//! environment variable for the whole process.

use std::time::{Duration, Instant};

use blake3_batch::{Backend, Engine, ErrorKind};

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
