//! Choosing a CPU backend: detection, the builder option and `B3BATCH_CPU`.

mod common;

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

/// Blobs that end at the last byte before a page that faults when read, on
/// every backend: a kernel that reads a last block in place (a masked load)
/// must not touch the bytes past a blob's end, and one that copies it must
/// copy only the blob's own bytes.
#[cfg(unix)]
#[test]
fn blobs_ending_at_an_unreadable_page_hash_in_place() {
    let page = GuardedPage::new();
    let bytes = page.bytes();
    let end = bytes.len();
    // Mixed lengths (binned by block count), each ending at the page's end,
    // twice over so that bins of every block count fill.
    let mixed: Vec<&[u8]> = (0..2)
        .flat_map(|_| 0..=1024)
        .map(|len| &bytes[end - len..])
        .collect();
    let want: Vec<[u8; 32]> = mixed
        .iter()
        .map(|blob| *blake3::hash(blob).as_bytes())
        .collect();
    for (name, engine) in common::engines() {
        let got = engine.hash_many(&mixed).unwrap();
        for (index, (got, want)) in got.iter().zip(&want).enumerate() {
            assert_eq!(got.as_bytes(), want, "{name}, blob {index}");
        }
        // Equal lengths back to back, the last one ending at the page's end.
        for len in [1, 63, 64, 65, 100, 1000, 1024] {
            let count = (end / len).min(2 * 16 + 3);
            let data = &bytes[end - count * len..];
            let mut out = vec![[0u8; 32]; count];
            engine
                .hash_records_into(Mode::Hash, data, len, &mut out)
                .unwrap();
            for (index, (record, got)) in data.chunks(len).zip(&out).enumerate() {
                assert_eq!(
                    got,
                    blake3::hash(record).as_bytes(),
                    "{name}, {len} B, record {index}"
                );
            }
        }
    }
}

/// Readable pages followed by one that faults when touched.
#[cfg(unix)]
struct GuardedPage {
    base: *mut libc::c_void,
    readable: usize,
    mapped: usize,
}

#[cfg(unix)]
impl GuardedPage {
    /// 64 KiB of readable bytes (a pattern), then a page with no access.
    fn new() -> Self {
        // SAFETY: sysconf has no preconditions.
        let page = unsafe { libc::sysconf(libc::_SC_PAGESIZE) } as usize;
        let readable = (64 * 1024usize).div_ceil(page) * page;
        let mapped = readable + page;
        // SAFETY: a fresh private anonymous mapping; the result is checked.
        let base = unsafe {
            libc::mmap(
                std::ptr::null_mut(),
                mapped,
                libc::PROT_READ | libc::PROT_WRITE,
                libc::MAP_PRIVATE | libc::MAP_ANONYMOUS,
                -1,
                0,
            )
        };
        assert_ne!(base, libc::MAP_FAILED, "mmap failed");
        // SAFETY: `base` maps `mapped` bytes, so the last page lies inside it.
        let guard = unsafe {
            libc::mprotect(
                base.cast::<u8>().add(readable).cast(),
                page,
                libc::PROT_NONE,
            )
        };
        assert_eq!(guard, 0, "mprotect failed");
        // SAFETY: the first `readable` bytes are mapped read-write and
        // borrowed by nothing else.
        let bytes = unsafe { std::slice::from_raw_parts_mut(base.cast::<u8>(), readable) };
        for (index, byte) in bytes.iter_mut().enumerate() {
            *byte = (index % 251) as u8;
        }
        GuardedPage {
            base,
            readable,
            mapped,
        }
    }

    /// The readable bytes, which end where the guard page starts.
    fn bytes(&self) -> &[u8] {
        // SAFETY: mapped readable for as long as `self` lives.
        unsafe { std::slice::from_raw_parts(self.base.cast::<u8>(), self.readable) }
    }
}

#[cfg(unix)]
impl Drop for GuardedPage {
    fn drop(&mut self) {
        // SAFETY: unmaps exactly the mapping made in `new`, no longer borrowed.
        unsafe { libc::munmap(self.base, self.mapped) };
    }
}
