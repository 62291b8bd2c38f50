//! Bad input gets a typed error with a message that says what to fix, and
//! leaves the output untouched: never a panic, never a partial result.

use blake3_batch::{Backend, Engine, ErrorKind, Mode};

const SENTINEL: [u8; 32] = [0xEE; 32];

fn engine() -> Engine {
    Engine::builder().threads(1).build().unwrap()
}

#[test]
fn decreasing_offsets_are_rejected() {
    let data = [0u8; 16];
    let mut out = [SENTINEL; 3];
    let error = engine()
        .hash_packed_into(Mode::Hash, &data, &[0u32, 8, 4, 16], &mut out)
        .unwrap_err();
    assert_eq!(
        error.kind(),
        &ErrorKind::OffsetsDecrease {
            index: 2,
            previous: 8,
            offset: 4
        }
    );
    assert!(error.to_string().contains("must never decrease"), "{error}");
    assert_eq!(out, [SENTINEL; 3], "nothing written on error");
    // A decrease from an offset past 2^63 whose difference does not wrap
    // past 2^63 (the batch starts there, so no earlier step does either):
    // still reported as the decrease it is.
    let mut out = [SENTINEL; 2];
    for (huge, after) in [(u64::MAX, 1), ((1 << 63) + 1, 0)] {
        let error = engine()
            .hash_packed_into(Mode::Hash, &data, &[huge, huge, after], &mut out)
            .unwrap_err();
        assert_eq!(
            error.kind(),
            &ErrorKind::OffsetsDecrease {
                index: 2,
                previous: huge,
                offset: after
            }
        );
    }
    assert_eq!(out, [SENTINEL; 2]);
}

#[test]
fn offsets_past_the_data_are_rejected_for_both_widths() {
    let data = [0u8; 16];
    let mut out = [SENTINEL; 2];
    let error = engine()
        .hash_packed_into(Mode::Hash, &data, &[0u64, 8, 17], &mut out)
        .unwrap_err();
    assert_eq!(
        error.kind(),
        &ErrorKind::OffsetOutOfBounds {
            index: 2,
            offset: 17,
            data_len: 16
        }
    );
    assert!(
        error.to_string().contains("past the end of the data"),
        "{error}"
    );
    let error = engine()
        .hash_packed_into(Mode::Hash, &data, &[20u32, 20, 20], &mut out)
        .unwrap_err();
    assert!(matches!(
        error.kind(),
        ErrorKind::OffsetOutOfBounds { offset: 20, .. }
    ));
    // Larger than any address: must be an error, not a wrap-around.
    let error = engine()
        .hash_packed_into(Mode::Hash, &data, &[0u64, 0, u64::MAX], &mut out)
        .unwrap_err();
    assert!(matches!(error.kind(), ErrorKind::OffsetOutOfBounds { .. }));
    assert_eq!(out, [SENTINEL; 2]);
}

#[test]
fn empty_offsets_are_rejected_and_a_single_offset_is_an_empty_batch() {
    let mut none: [[u8; 32]; 0] = [];
    let error = engine()
        .hash_packed_into::<u32>(Mode::Hash, b"abc", &[], &mut none)
        .unwrap_err();
    assert_eq!(error.kind(), &ErrorKind::OffsetsEmpty);
    engine()
        .hash_packed_into(Mode::Hash, b"abc", &[2u32], &mut none)
        .unwrap();
}

#[test]
fn output_of_the_wrong_length_is_rejected_in_every_layout() {
    let engine = engine();
    let blobs = [b"a".as_slice(), b"b", b"c"];
    for len in [0, 2, 4] {
        let mut out = vec![SENTINEL; len];
        let want = ErrorKind::OutputLength {
            expected: 3,
            actual: len,
        };
        let error = engine
            .hash_slices_into(Mode::Hash, &blobs, &mut out)
            .unwrap_err();
        assert_eq!(error.kind(), &want);
        assert!(error.to_string().contains("exactly 3 entries"), "{error}");
        let error = engine
            .hash_packed_into(Mode::Hash, b"abc", &[0u32, 1, 2, 3], &mut out)
            .unwrap_err();
        assert_eq!(error.kind(), &want);
        let error = engine
            .hash_records_into(Mode::Hash, b"abc", 1, &mut out)
            .unwrap_err();
        assert_eq!(error.kind(), &want);
        assert!(out.iter().all(|slot| *slot == SENTINEL));
    }
}

#[test]
fn record_size_zero_is_rejected() {
    let mut out = [SENTINEL; 1];
    let error = engine()
        .hash_records_into(Mode::Hash, b"abcd", 0, &mut out)
        .unwrap_err();
    assert_eq!(error.kind(), &ErrorKind::RecordSizeZero);
    assert!(error.to_string().contains("at least 1"), "{error}");
    assert_eq!(out, [SENTINEL]);
}

#[test]
fn record_size_that_does_not_divide_the_data_is_rejected() {
    let mut out = [SENTINEL; 3];
    let error = engine()
        .hash_records_into(Mode::KeyedHash(&[1; 32]), &[0u8; 10], 3, &mut out)
        .unwrap_err();
    assert_eq!(
        error.kind(),
        &ErrorKind::RecordSizeMismatch {
            data_len: 10,
            record_size: 3
        }
    );
    assert!(error.to_string().contains("1 bytes left over"), "{error}");
    assert_eq!(out, [SENTINEL; 3]);
}

#[test]
fn zero_threads_is_rejected() {
    let error = Engine::builder().threads(0).build().unwrap_err();
    assert_eq!(error.kind(), &ErrorKind::ZeroThreads);
}

/// More threads than 16 per CPU (and 256) are refused before any starts,
/// with the limit in the error; the limit itself builds.
#[test]
fn threads_past_the_limit_are_rejected_naming_it() {
    let most = blake3_batch::max_threads();
    let cpus = std::thread::available_parallelism().unwrap().get();
    assert_eq!(most, (16 * cpus).max(256));
    for threads in [most + 1, 200_000, usize::MAX] {
        let error = Engine::builder().threads(threads).build().unwrap_err();
        assert_eq!(
            error.kind(),
            &ErrorKind::TooManyThreads {
                threads,
                cpus,
                most
            }
        );
        let message = error.to_string();
        assert!(message.contains(&format!("at most {most}")), "{message}");
    }
    let engine = Engine::builder()
        .backend(Backend::Cpu)
        .threads(most)
        .build()
        .unwrap();
    assert_eq!(engine.threads(), most);
    let blobs: Vec<Vec<u8>> = (0..5000).map(|len| vec![len as u8; len % 300]).collect();
    let digests = engine.hash_many(&blobs).unwrap();
    for (blob, digest) in blobs.iter().zip(&digests) {
        assert_eq!(*digest, blake3::hash(blob));
    }
}

#[test]
fn empty_batches_are_fine_in_every_layout() {
    let engine = engine();
    let none: [&[u8]; 0] = [];
    assert!(engine.hash_many(&none).unwrap().is_empty());
    engine
        .hash_records_into(Mode::Hash, &[], 7, &mut [])
        .unwrap();
    engine
        .hash_packed_into(Mode::Hash, &[], &[0u64], &mut [])
        .unwrap();
}

/// Past 16 Ki offsets, an engine of several threads has them all check the
/// offsets, a piece (8 Ki offsets) each, before any blob is hashed: the same
/// error as one thread's single pass, for a decrease in any piece or across
/// two pieces' shared offset, the first of two decreases, an offset past
/// 2^63 and a last offset past the data; and nothing written.
#[test]
fn offsets_checked_on_several_threads_give_one_threads_errors() {
    const BLOBS: usize = 40_000;
    let lead = 100u64;
    let data = vec![7u8; 100 + BLOBS * 8];
    let sound: Vec<u64> = (0..=BLOBS as u64).map(|index| lead + index * 8).collect();
    let engines: Vec<Engine> = [1, 2, 3]
        .iter()
        .map(|&threads| Engine::builder().threads(threads).build().unwrap())
        .collect();
    let mut cases = Vec::new();
    for index in [1, 8191, 8192, 8193, 20_000, BLOBS] {
        let mut offsets = sound.clone();
        offsets[index] = offsets[index - 1] - 1;
        let decrease = ErrorKind::OffsetsDecrease {
            index,
            previous: offsets[index - 1],
            offset: offsets[index],
        };
        // A second decrease later on: still the first one is reported.
        if index + 10 < BLOBS {
            offsets[index + 9_000] = 0;
        }
        cases.push((offsets, decrease));
    }
    let mut huge = sound.clone();
    huge[30_000] = u64::MAX;
    let after_huge = ErrorKind::OffsetsDecrease {
        index: 30_001,
        previous: u64::MAX,
        offset: huge[30_001],
    };
    cases.push((huge, after_huge));
    let mut past_end = sound.clone();
    past_end[BLOBS] = data.len() as u64 + 1;
    let beyond = ErrorKind::OffsetOutOfBounds {
        index: BLOBS,
        offset: data.len() as u64 + 1,
        data_len: data.len(),
    };
    cases.push((past_end, beyond));
    let mut out = vec![SENTINEL; BLOBS];
    for (offsets, want) in &cases {
        let offsets32: Vec<u32> = offsets.iter().map(|&offset| offset as u32).collect();
        for engine in &engines {
            let threads = engine.threads();
            let error = engine
                .hash_packed_into(Mode::Hash, &data, offsets, &mut out)
                .unwrap_err();
            assert_eq!(error.kind(), want, "u64 offsets, {threads} threads");
            // u32 offsets cannot hold u64::MAX.
            if offsets.iter().all(|&offset| offset <= u64::from(u32::MAX)) {
                let error = engine
                    .hash_packed_into(Mode::Hash, &data, &offsets32, &mut out)
                    .unwrap_err();
                assert_eq!(error.kind(), want, "u32 offsets, {threads} threads");
            }
        }
    }
    assert!(out.iter().all(|slot| *slot == SENTINEL), "nothing written");
}

#[test]
fn a_buffer_larger_than_memory_is_an_error_not_an_abort() {
    let engine = Engine::builder().backend(Backend::Cpu).build().unwrap();
    for bytes in [usize::MAX, 1 << 60] {
        let error = engine.pinned_buffer(bytes).unwrap_err();
        assert_eq!(
            error.kind(),
            &ErrorKind::OutOfMemory {
                what: "a buffer".to_owned(),
                bytes
            }
        );
        assert!(error.to_string().contains("ask for less"), "{error}");
    }
    // and one that fits is made, zeroed
    let buffer = engine.pinned_buffer(4096).unwrap();
    assert!(buffer.len() == 4096 && buffer.iter().all(|&byte| byte == 0));
}
