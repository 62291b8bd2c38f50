//! Every official vector, in all three modes, through every layout, alone and
//! inside mixed batches, on every CPU backend this machine supports and on the
//! GPU (lavapipe where there is no GPU; see `common::all_engines`).

mod common;

use blake3_batch::Mode;
use common::{all_engines, gpu_engine, pack, vector_input, vectors, SMALL_GPU_BUDGET};

#[test]
fn every_vector_alone_through_every_layout() {
    let vectors = vectors();
    let modes = vectors.modes();
    for (name, engine) in all_engines() {
        for mode in modes {
            for case in &vectors.cases {
                let input = vector_input(case.input_len);
                let want = case.expected(mode);
                let what = format!("{name} {mode:?} len {}", case.input_len);

                let mut out = [[0u8; 32]; 1];
                engine.hash_slices_into(mode, &[&input], &mut out).unwrap();
                assert_eq!(out[0], want, "slices: {what}");

                let (data, offsets) = pack(&[&input], 3);
                let offsets32: Vec<u32> = offsets.iter().map(|&o| o as u32).collect();
                out = [[0; 32]];
                engine
                    .hash_packed_into(mode, &data, &offsets, &mut out)
                    .unwrap();
                assert_eq!(out[0], want, "packed u64: {what}");
                out = [[0; 32]];
                engine
                    .hash_packed_into(mode, &data, &offsets32, &mut out)
                    .unwrap();
                assert_eq!(out[0], want, "packed u32: {what}");

                // Records cannot express one empty record: an empty buffer
                // holds none. That case is covered by the other layouts.
                if case.input_len > 0 {
                    out = [[0; 32]];
                    engine
                        .hash_records_into(mode, &input, input.len(), &mut out)
                        .unwrap();
                    assert_eq!(out[0], want, "records: {what}");
                }
            }
        }
    }
}

#[test]
fn all_vectors_in_one_mixed_batch_through_every_layout() {
    let vectors = vectors();
    let modes = vectors.modes();
    // Each vector twice, interleaved, so block-count groups mix lengths and
    // lanes are filled from scattered input positions.
    let inputs: Vec<Vec<u8>> = vectors
        .cases
        .iter()
        .chain(vectors.cases.iter().rev())
        .map(|case| vector_input(case.input_len))
        .collect();
    let expected = |mode: Mode| -> Vec<[u8; 32]> {
        vectors
            .cases
            .iter()
            .chain(vectors.cases.iter().rev())
            .map(|case| case.expected(mode))
            .collect()
    };
    let (data, offsets) = pack(&inputs, 5);
    let offsets32: Vec<u32> = offsets.iter().map(|&o| o as u32).collect();
    for (name, engine) in all_engines() {
        for mode in modes {
            let want = expected(mode);
            let mut out = vec![[0u8; 32]; inputs.len()];
            engine.hash_slices_into(mode, &inputs, &mut out).unwrap();
            assert_eq!(out, want, "slices: {name} {mode:?}");
            out.fill([0; 32]);
            engine
                .hash_packed_into(mode, &data, &offsets, &mut out)
                .unwrap();
            assert_eq!(out, want, "packed u64: {name} {mode:?}");
            out.fill([0; 32]);
            engine
                .hash_packed_into(mode, &data, &offsets32, &mut out)
                .unwrap();
            assert_eq!(out, want, "packed u32: {name} {mode:?}");
        }
    }
}

/// The same batch in each engine's pinned buffer, from every byte of a
/// word: the GPU copies it verbatim from where it lies.
#[test]
fn all_vectors_in_one_mixed_batch_from_pinned_memory() {
    let vectors = vectors();
    let modes = vectors.modes();
    let inputs: Vec<Vec<u8>> = vectors
        .cases
        .iter()
        .map(|case| vector_input(case.input_len))
        .collect();
    // Engines of its own: the timings asserted below must be this test's
    // batches', not those another test hashes at once on `all_engines`.
    let mut own = common::engines();
    own.extend(gpu_engine(None).map(|engine| ("gpu".to_owned(), engine)));
    let small = gpu_engine(Some(SMALL_GPU_BUDGET));
    own.extend(small.map(|engine| ("gpu/small slabs".to_owned(), engine)));
    for (name, engine) in &own {
        for lead in 0..4 {
            let (data, offsets) = pack(&inputs, lead);
            let mut pinned = engine.pinned_buffer(data.len()).unwrap();
            pinned.copy_from_slice(&data);
            let mode = modes[lead % modes.len()];
            let mut out = vec![[0u8; 32]; inputs.len()];
            engine
                .hash_packed_into(mode, &pinned, &offsets, &mut out)
                .unwrap();
            let what = format!("{name}, from byte {lead}, {mode:?}");
            for (case, digest) in vectors.cases.iter().zip(&out) {
                assert_eq!(
                    *digest,
                    case.expected(mode),
                    "{what}: len {}",
                    case.input_len
                );
            }
            if pinned.is_pinned() {
                let timings = engine.last_gpu_timings().expect("a GPU engine");
                assert!(timings.bytes_in_place > 0, "{what}: {timings:?}");
            }
        }
    }
}

#[test]
fn every_vector_as_a_batch_of_fixed_size_records() {
    let vectors = vectors();
    let modes = vectors.modes();
    for (name, engine) in all_engines() {
        for mode in modes {
            for case in vectors.cases.iter().filter(|case| case.input_len > 0) {
                // 17 records: more than the widest lane group, plus a tail.
                let records = vector_input(case.input_len).repeat(17);
                let mut out = vec![[0u8; 32]; 17];
                engine
                    .hash_records_into(mode, &records, case.input_len, &mut out)
                    .unwrap();
                let want = vec![case.expected(mode); 17];
                assert_eq!(out, want, "{name} {mode:?} len {}", case.input_len);
            }
        }
    }
}

#[test]
fn free_functions_match_the_vectors() {
    let vectors = vectors();
    let inputs: Vec<Vec<u8>> = vectors
        .cases
        .iter()
        .map(|c| vector_input(c.input_len))
        .collect();
    let hashes = blake3_batch::hash_many(&inputs);
    let keyed = blake3_batch::keyed_hash_many(&vectors.key, &inputs);
    let derived = blake3_batch::derive_key_many(&vectors.context, &inputs);
    assert_eq!(hashes.len(), inputs.len());
    for (i, case) in vectors.cases.iter().enumerate() {
        assert_eq!(
            hashes[i].as_bytes(),
            &case.hash,
            "hash len {}",
            case.input_len
        );
        assert_eq!(
            keyed[i].as_bytes(),
            &case.keyed_hash,
            "keyed len {}",
            case.input_len
        );
        assert_eq!(derived[i], case.derive_key, "derive len {}", case.input_len);
    }
}
