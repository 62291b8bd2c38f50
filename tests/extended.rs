//! Outputs of any length (`Engine::hash_{slices,packed,records}_xof_into`)
//! against the official vectors' 131-byte extended outputs and the
//! `blake3` crate's `finalize_xof`, in all three modes, in every layout, on
//! every engine; and their errors.

mod common;

use blake3_batch::{Backend, Engine, Error, ErrorKind, Mode};
use common::{all_engines, pack, reference_xof, vector_input, vectors, xorshift};

/// `length` bytes of output per blob from every layout that can hold
/// `blobs`: slices; packed, with `u32` and `u64` offsets that start above 0
/// in a buffer longer than the blobs; and records where every blob has one
/// length (of at least a byte).
fn every_layout(
    engine: &Engine,
    mode: Mode,
    blobs: &[Vec<u8>],
    length: usize,
) -> Vec<(&'static str, Vec<u8>)> {
    let run = |hash: &dyn Fn(&mut [u8]) -> Result<(), Error>| {
        let mut out = vec![0u8; blobs.len() * length];
        hash(&mut out).unwrap();
        out
    };
    let (mut data, offsets) = pack(blobs, 3);
    data.extend_from_slice(&[0x5a; 5]);
    let offsets32: Vec<u32> = offsets.iter().map(|&offset| offset as u32).collect();
    let mut outputs = vec![
        (
            "slices",
            run(&|out| engine.hash_slices_xof_into(mode, blobs, length, out)),
        ),
        (
            "packed u32",
            run(&|out| engine.hash_packed_xof_into(mode, &data, &offsets32, length, out)),
        ),
        (
            "packed u64",
            run(&|out| engine.hash_packed_xof_into(mode, &data, &offsets, length, out)),
        ),
    ];
    let size = blobs.first().map_or(0, Vec::len);
    if size > 0 && blobs.iter().all(|blob| blob.len() == size) {
        let records = blobs.concat();
        outputs.push((
            "records",
            run(&|out| engine.hash_records_xof_into(mode, &records, size, length, out)),
        ));
    }
    outputs
}

/// Asserts that `out` holds `blake3`'s `length` bytes of extended output
/// of every blob, in order.
fn assert_matches_blake3(label: &str, mode: Mode, blobs: &[Vec<u8>], length: usize, out: &[u8]) {
    assert_eq!(out.len(), blobs.len() * length, "{label}");
    for (index, (blob, output)) in blobs.iter().zip(out.chunks_exact(length)).enumerate() {
        assert_eq!(
            output,
            reference_xof(mode, blob, length),
            "{label} {mode:?} blob {index} ({} bytes) output {length}",
            blob.len()
        );
    }
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
                for (layout, out) in every_layout(engine, mode, &inputs, length) {
                    for (case, output) in vectors.cases.iter().zip(out.chunks_exact(length)) {
                        assert_eq!(
                            output,
                            &case.extended[which][..length],
                            "{name} {layout} {mode:?} input {} output {length}",
                            case.input_len
                        );
                    }
                }
            }
        }
    }
}

#[test]
fn random_batches_match_blake3_xof_on_one_and_two_threads() {
    let mut next = xorshift(0x005e_ed0f_0e17);
    let mut blobs_of = |count: usize, len: &mut dyn FnMut() -> usize| -> Vec<Vec<u8>> {
        (0..count)
            .map(|_| (0..len()).map(|_| next() as u8).collect())
            .collect()
    };
    let mut lengths = xorshift(0x1e4_97a5);
    let batches = [
        // Mostly under a chunk, some over: lengths 0..=3000.
        blobs_of(700, &mut || (lengths() % 3001) as usize),
        // Records of one length, over a chunk and under a block.
        blobs_of(90, &mut || 1500),
        blobs_of(500, &mut || 40),
    ];
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
        for (blobs, mode) in batches
            .iter()
            .flat_map(|blobs| modes.map(|mode| (blobs, mode)))
        {
            for length in [7, 32, 40, 64, 200, 1000] {
                for (layout, out) in every_layout(&engine, mode, blobs, length) {
                    let label = format!("{threads} threads {layout}");
                    assert_matches_blake3(&label, mode, blobs, length, &out);
                }
            }
        }
    }
}

/// Prefixes of under 32 bytes are hashed in pieces of 64 Ki blobs: every
/// piece lands where its blobs' outputs belong, in every layout.
#[test]
fn prefixes_of_more_blobs_than_one_piece_land_in_order() {
    let mut next = xorshift(0x9e37_79b9);
    let blobs: Vec<Vec<u8>> = (0..70_000).map(|_| next().to_le_bytes().to_vec()).collect();
    let engine = Engine::builder().backend(Backend::Cpu).build().unwrap();
    for (layout, out) in every_layout(&engine, Mode::Hash, &blobs, 20) {
        for (index, (blob, output)) in blobs.iter().zip(out.chunks_exact(20)).enumerate() {
            assert_eq!(
                output,
                &blake3::hash(blob).as_bytes()[..20],
                "{layout} blob {index}"
            );
        }
    }
}

/// Blobs over 1 MiB are hashed after the short ones, each over every
/// thread: every output still lands where its blob's belongs, whichever
/// way round long and short blobs come, and records of one long length
/// take the same path.
#[test]
fn long_blobs_among_short_ones_land_in_place_at_every_output_length() {
    let mut next = xorshift(0x104e_b10b);
    let mut blob = |len: usize| -> Vec<u8> { (0..len).map(|_| next() as u8).collect() };
    let mixed = vec![
        blob((1 << 20) + 1),
        blob(5),
        blob(3 << 20),
        blob(1 << 20),
        blob(1025),
        blob((2 << 20) + 7),
    ];
    let records = vec![blob((1 << 20) + 64), blob((1 << 20) + 64)];
    let key = [7u8; 32];
    for threads in [1, 2] {
        let engine = Engine::builder()
            .backend(Backend::Cpu)
            .threads(threads)
            .build()
            .unwrap();
        for mode in [Mode::Hash, Mode::KeyedHash(&key)] {
            for blobs in [&mixed, &records] {
                for length in [20, 33, 200] {
                    for (layout, out) in every_layout(&engine, mode, blobs, length) {
                        let label = format!("{threads} threads {layout}");
                        assert_matches_blake3(&label, mode, blobs, length, &out);
                    }
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
        engine
            .hash_packed_xof_into(Mode::Hash, b"abc", &[2u32], length, &mut [])
            .unwrap();
        engine
            .hash_records_xof_into(Mode::Hash, &[], 16, length, &mut [])
            .unwrap();
    }
}

/// The three layouts of the blobs "a", "bb" and "ccc" (records: three
/// 2-byte records), each hashed into `out`.
type Layout = fn(&Engine, usize, &mut [u8]) -> Result<(), Error>;
const LAYOUTS: [(&str, Layout); 3] = [
    ("slices", |engine, length, out| {
        engine.hash_slices_xof_into(Mode::Hash, &["a", "bb", "ccc"], length, out)
    }),
    ("packed", |engine, length, out| {
        engine.hash_packed_xof_into(Mode::Hash, b"abbccc", &[0u64, 1, 3, 6], length, out)
    }),
    ("records", |engine, length, out| {
        engine.hash_records_xof_into(Mode::Hash, b"aabbcc", 2, length, out)
    }),
];

#[test]
fn a_length_of_zero_or_a_buffer_of_the_wrong_size_is_an_error_and_writes_nothing() {
    let engine = Engine::builder().backend(Backend::Cpu).build().unwrap();
    for (layout, hash) in LAYOUTS {
        let mut out = [0xaau8; 3 * 64];
        let error = hash(&engine, 0, &mut out).unwrap_err();
        assert_eq!(error.kind(), &ErrorKind::XofLength, "{layout}");
        assert!(error.to_string().contains("at least 1 byte"), "{error}");

        let cases = [
            (64, 3 * 64 - 1),
            (64, 3 * 64 + 1),
            (16, 3 * 64),
            (32, 2 * 32),
            (33, 0),
        ];
        for (length, size) in cases {
            let mut out = vec![0xaau8; size];
            let error = hash(&engine, length, &mut out).unwrap_err();
            assert_eq!(
                error.kind(),
                &ErrorKind::XofOutputLength {
                    blobs: 3,
                    length,
                    actual: size
                },
                "{layout}"
            );
            assert!(
                error.to_string().contains(&format!("need {}", 3 * length)),
                "{error}"
            );
            assert!(out.iter().all(|&byte| byte == 0xaa), "{layout}: written");
        }
    }
}

/// Bad offsets and record sizes are reported as the digest layouts report
/// them, before an output of the wrong size, at every output length.
#[test]
fn bad_offsets_and_record_sizes_are_errors_that_write_nothing() {
    let engine = Engine::builder().backend(Backend::Cpu).build().unwrap();
    for length in [8, 32, 64] {
        let decrease = ErrorKind::OffsetsDecrease {
            index: 2,
            previous: 3,
            offset: 1,
        };
        let past_end = ErrorKind::OffsetOutOfBounds {
            index: 3,
            offset: 9,
            data_len: 6,
        };
        let packed: [(&[u32], ErrorKind); 3] = [
            (&[0, 3, 1, 6], decrease),
            (&[0, 3, 4, 9], past_end),
            (&[], ErrorKind::OffsetsEmpty),
        ];
        for (offsets, expected) in packed {
            for size in [3 * length, 3 * length + 1] {
                let mut out = vec![0xaau8; size];
                let error = engine
                    .hash_packed_xof_into(Mode::Hash, b"abcdef", offsets, length, &mut out)
                    .unwrap_err();
                assert_eq!(error.kind(), &expected, "{offsets:?} {length} {size}");
                assert!(out.iter().all(|&byte| byte == 0xaa), "written");
            }
        }
        let records = [
            (0, ErrorKind::RecordSizeZero),
            (
                4,
                ErrorKind::RecordSizeMismatch {
                    data_len: 6,
                    record_size: 4,
                },
            ),
        ];
        for (record_size, expected) in records {
            let mut out = vec![0xaau8; length];
            let error = engine
                .hash_records_xof_into(Mode::Hash, b"abcdef", record_size, length, &mut out)
                .unwrap_err();
            assert_eq!(error.kind(), &expected, "{record_size} {length}");
            assert!(out.iter().all(|&byte| byte == 0xaa), "written");
        }
    }
}
