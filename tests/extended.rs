//! Outputs of any length (`Engine::hash_slices_xof_into`) against the
//! official vectors' 131-byte extended outputs and the `blake3` crate's
//! `finalize_xof`, in all three modes, on every engine; and its errors.

mod common;

use blake3_batch::{Backend, Engine, ErrorKind, Mode};
use common::{all_engines, vector_input, vectors, xorshift};

/// `length` bytes of `blake3`'s extended output of `data` in `mode`.
fn reference_xof(mode: Mode, data: &[u8], length: usize) -> Vec<u8> {
    let mut hasher = match mode {
        Mode::Hash => blake3::Hasher::new(),
        Mode::KeyedHash(key) => blake3::Hasher::new_keyed(key),
        Mode::DeriveKey(context) => blake3::Hasher::new_derive_key(context),
    };
    let mut out = vec![0u8; length];
    hasher.update(data).finalize_xof().fill(&mut out);
    out
}

/// Output lengths on both sides of the digest (32) and of one output block
/// (64), and the vectors' full 131.
const LENGTHS: [usize; 8] = [1, 16, 31, 32, 33, 64, 65, 131];

#[test]
fn every_vector_in_one_batch_at_every_output_length() {
    let vectors = vectors();
    let inputs: Vec<Vec<u8>> = vectors
        .cases
        .iter()
        .map(|case| vector_input(case.input_len))
        .collect();
    for (name, engine) in all_engines() {
        for (which, mode) in vectors.modes().into_iter().enumerate() {
            for length in LENGTHS {
                let mut out = vec![0u8; inputs.len() * length];
                engine
                    .hash_slices_xof_into(mode, &inputs, length, &mut out)
                    .unwrap();
                for (case, output) in vectors.cases.iter().zip(out.chunks_exact(length)) {
                    assert_eq!(
                        output,
                        &case.extended[which][..length],
                        "{name} {mode:?} input {} output {length}",
                        case.input_len
                    );
                }
            }
        }
    }
}

#[test]
fn random_batches_match_blake3_xof_on_one_and_two_threads() {
    let mut next = xorshift(0x005e_ed0f_0e17);
    let blobs: Vec<Vec<u8>> = (0..700)
        .map(|_| {
            // Mostly under a chunk, some over: lengths 0..=3000.
            let len = (next() % 3001) as usize;
            (0..len).map(|_| next() as u8).collect()
        })
        .collect();
    let key = [0x42u8; 32];
    let modes = [
        Mode::Hash,
        Mode::KeyedHash(&key),
        Mode::DeriveKey("blake3-batch extended tests"),
    ];
    for threads in [1, 2] {
        let engine = Engine::builder()
            .backend(Backend::Cpu)
            .threads(threads)
            .build()
            .unwrap();
        for mode in modes {
            for length in [7, 32, 40, 64, 200, 1000] {
                let mut out = vec![0u8; blobs.len() * length];
                engine
                    .hash_slices_xof_into(mode, &blobs, length, &mut out)
                    .unwrap();
                for (index, (blob, output)) in
                    blobs.iter().zip(out.chunks_exact(length)).enumerate()
                {
                    assert_eq!(
                        output,
                        reference_xof(mode, blob, length),
                        "{threads} threads {mode:?} blob {index} ({} bytes) output {length}",
                        blob.len()
                    );
                }
            }
        }
    }
}

#[test]
fn an_empty_batch_gives_nothing_at_any_length() {
    let engine = Engine::builder().backend(Backend::Cpu).build().unwrap();
    let none: [&[u8]; 0] = [];
    for length in [1, 32, 64] {
        engine
            .hash_slices_xof_into(Mode::Hash, &none, length, &mut [])
            .unwrap();
    }
}

#[test]
fn a_length_of_zero_or_a_buffer_of_the_wrong_size_is_an_error_and_writes_nothing() {
    let engine = Engine::builder().backend(Backend::Cpu).build().unwrap();
    let blobs = ["a", "bb", "ccc"];

    let mut out = [0xaau8; 3 * 64];
    let error = engine
        .hash_slices_xof_into(Mode::Hash, &blobs, 0, &mut out)
        .unwrap_err();
    assert_eq!(error.kind(), &ErrorKind::XofLength);
    assert!(error.to_string().contains("at least 1 byte"), "{error}");

    for (length, size) in [(64, 3 * 64 - 1), (64, 3 * 64 + 1), (16, 3 * 64), (33, 0)] {
        let mut out = vec![0xaau8; size];
        let error = engine
            .hash_slices_xof_into(Mode::Hash, &blobs, length, &mut out)
            .unwrap_err();
        assert_eq!(
            error.kind(),
            &ErrorKind::XofOutputLength {
                blobs: 3,
                length,
                actual: size
            }
        );
        assert!(
            error.to_string().contains(&format!("need {}", 3 * length)),
            "{error}"
        );
        assert!(out.iter().all(|&byte| byte == 0xaa), "written on error");
    }
}
