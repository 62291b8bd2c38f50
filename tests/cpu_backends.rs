//! Choosing a CPU backend: detection, the builder option and `B3BATCH_CPU`.

use blake3_batch::{CpuBackend, Engine, ErrorKind, Mode, CPU_BACKEND_ENV};

#[test]
fn every_supported_backend_can_be_forced_and_reports_itself() {
    let supported = CpuBackend::supported();
    assert_eq!(supported.last(), Some(&CpuBackend::Portable));
    assert_eq!(supported[0], CpuBackend::detect());
    for cpu in supported {
        let engine = Engine::builder()
            .cpu_backend(cpu)
            .threads(1)
            .build()
            .unwrap();
        assert_eq!(engine.cpu_backend(), cpu);
        assert_eq!(engine.lanes(), cpu.lanes());
        // And it hashes correctly: 33 blobs, a full group plus tails.
        let blobs: Vec<Vec<u8>> = (0..33).map(|i| vec![i as u8; 7 * i]).collect();
        let digests = engine.hash_many(&blobs).unwrap();
        for (blob, digest) in blobs.iter().zip(digests) {
            assert_eq!(digest, blake3::hash(blob), "{cpu}");
        }
    }
}

#[test]
fn lane_counts_are_the_instruction_sets_widths() {
    assert_eq!(CpuBackend::Avx512.lanes(), 16);
    assert_eq!(CpuBackend::Avx2.lanes(), 8);
    assert_eq!(CpuBackend::Sse41.lanes(), 4);
    assert_eq!(CpuBackend::Neon.lanes(), 4);
}

#[test]
fn a_backend_this_cpu_lacks_is_an_error_naming_the_ones_it_has() {
    for cpu in CpuBackend::ALL
        .iter()
        .copied()
        .filter(|cpu| !cpu.is_supported())
    {
        let error = Engine::builder().cpu_backend(cpu).build().unwrap_err();
        assert!(
            matches!(error.kind(), ErrorKind::BackendUnavailable { .. }),
            "{error}"
        );
        assert!(error.to_string().contains("portable"), "{error}");
    }
}

#[test]
fn names_parse_back() {
    for &cpu in CpuBackend::ALL {
        assert_eq!(cpu.name().parse::<CpuBackend>().unwrap(), cpu);
        assert_eq!(cpu.to_string(), cpu.name());
    }
    let error = "avx1024".parse::<CpuBackend>().unwrap_err();
    assert!(error.to_string().contains("choose one of"), "{error}");
}

#[test]
fn threads_are_honoured() {
    for threads in [1, 2, 3] {
        // A backend named here, as the builder option wins over the
        // variable: the test below sets it to names that fail, in parallel.
        let engine = Engine::builder()
            .cpu_backend(CpuBackend::Portable)
            .threads(threads)
            .build()
            .unwrap();
        assert_eq!(engine.threads(), threads);
    }
}

/// The only test in this binary that touches the environment.
#[test]
fn environment_variable_forces_a_backend_or_fails_clearly() {
    std::env::set_var(CPU_BACKEND_ENV, "portable");
    let engine = Engine::builder().build().unwrap();
    assert_eq!(engine.cpu_backend(), CpuBackend::Portable);
    let mut out = [[0u8; 32]; 2];
    engine
        .hash_slices_into(Mode::Hash, &[b"x".as_slice(), b"y"], &mut out)
        .unwrap();
    assert_eq!(out[1], *blake3::hash(b"y").as_bytes());

    // The builder option wins over the variable.
    let best = CpuBackend::detect();
    let engine = Engine::builder().cpu_backend(best).build().unwrap();
    assert_eq!(engine.cpu_backend(), best);

    std::env::set_var(CPU_BACKEND_ENV, "avx1024");
    let error = Engine::builder().build().unwrap_err();
    assert!(
        error.to_string().contains("no CPU backend has that name"),
        "{error}"
    );

    if let Some(missing) = CpuBackend::ALL.iter().find(|cpu| !cpu.is_supported()) {
        std::env::set_var(CPU_BACKEND_ENV, missing.name());
        let error = Engine::builder().build().unwrap_err();
        assert!(error.to_string().contains(CPU_BACKEND_ENV), "{error}");
    }
    std::env::remove_var(CPU_BACKEND_ENV);
}
