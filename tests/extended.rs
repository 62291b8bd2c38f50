//! Outputs of any length (`Engine::hash_{slices,packed,records}_xof_into`)
//! and from any byte on (their `_xof_at_into` forms) against the official
//! vectors' 131-byte extended outputs and the `blake3` crate's
//! `finalize_xof`, in all three modes, in every layout, on every engine;
//! and their errors.

mod common;

use blake3_batch::{Backend, Engine, Error, ErrorKind, Mode};
use common::{all_engines, pack, reference_xof_at, vector_input, vectors, xorshift, Vectors};

/// `length` bytes of output from byte `seek` on per blob from every layout
/// that can hold `blobs`: slices; packed, with `u32` and `u64` offsets that
/// start above 0 in a buffer longer than the blobs; and records where every
/// blob has one length (of at least a byte). A `seek` of 0 takes the
/// `_xof_into` forms, any other their `_xof_at_into` forms.
fn every_layout(
    engine: &Engine,
    mode: Mode,
    blobs: &[Vec<u8>],
    length: usize,
    seek: u64,
) -> Vec<(&'static str, Vec<u8>)> {
    let run = |hash: &dyn Fn(&mut [u8]) -> Result<(), Error>| {
        let mut out = vec![0u8; blobs.len() * length];
        hash(&mut out).unwrap();
        out
    };
    let (mut data, offsets) = pack(blobs, 3);
    data.extend_from_slice(&[0x5a; 5]);
    let offsets32: Vec<u32> = offsets.iter().map(|&offset| offset as u32).collect();
    let packed = |out: &mut [u8], offsets: &[u64], wide: bool| match (seek, wide) {
        (0, true) => engine.hash_packed_xof_into(mode, &data, offsets, length, out),
        (0, false) => engine.hash_packed_xof_into(mode, &data, &offsets32, length, out),
        (_, true) => engine.hash_packed_xof_at_into(mode, &data, offsets, length, seek, out),
        (_, false) => engine.hash_packed_xof_at_into(mode, &data, &offsets32, length, seek, out),
    };
    let mut outputs = vec![
        (
            "slices",
            run(&|out| match seek {
                0 => engine.hash_slices_xof_into(mode, blobs, length, out),
                _ => engine.hash_slices_xof_at_into(mode, blobs, length, seek, out),
            }),
        ),
        ("packed u32", run(&|out| packed(out, &offsets, false))),
        ("packed u64", run(&|out| packed(out, &offsets, true))),
    ];
    let size = blobs.first().map_or(0, Vec::len);
    if size > 0 && blobs.iter().all(|blob| blob.len() == size) {
        let records = blobs.concat();
        outputs.push((
            "records",
            run(&|out| match seek {
                0 => engine.hash_records_xof_into(mode, &records, size, length, out),
                _ => engine.hash_records_xof_at_into(mode, &records, size, length, seek, out),
            }),
        ));
    }
    outputs
}

/// Asserts that `out` holds `blake3`'s `length` bytes of extended output
/// from byte `seek` on of every blob, in order.
fn assert_matches_blake3(
    label: &str,
    mode: Mode,
    blobs: &[Vec<u8>],
    (length, seek): (usize, u64),
    out: &[u8],
) {
    assert_eq!(out.len(), blobs.len() * length, "{label}");
    for (index, (blob, output)) in blobs.iter().zip(out.chunks_exact(length)).enumerate() {
        assert_eq!(
            output,
            reference_xof_at(mode, blob, length, seek),
            "{label} {mode:?} blob {index} ({} bytes) output {length} from {seek}",
            blob.len()
        );
    }
}

/// Every official vector's input, in order.
fn vector_inputs(vectors: &Vectors) -> Vec<Vec<u8>> {
    let inputs = vectors.cases.iter();
    inputs.map(|case| vector_input(case.input_len)).collect()
}

/// Output lengths on both sides of the digest (32) and of one output block
/// (64), and the vectors' full 131.
const LENGTHS: [usize; 8] = [1, 16, 31, 32, 33, 64, 65, 131];

#[test]
fn every_vector_in_one_batch_at_every_output_length() {
    let vectors = vectors();
    let inputs = vector_inputs(&vectors);
    for (name, engine) in all_engines() {
        for (which, mode) in vectors.modes().into_iter().enumerate() {
            for length in LENGTHS {
                for (layout, out) in every_layout(engine, mode, &inputs, length, 0) {
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
    let outputs = [7, 32, 40, 64, 200, 1000].map(|length| (length, 0));
    assert_batches_match_blake3(&batches, "blake3-batch extended tests", &outputs);
}

/// Outputs of 16 whole blocks (which `blake3`'s output reader makes for
/// blobs of one or two blocks where it fills them side by side, the lanes
/// for longer blobs) and lengths and seeks around them are `blake3`'s, in
/// every mode and layout, on one and two threads.
#[test]
fn outputs_of_whole_passes_match_blake3_for_blobs_on_either_side_of_the_split() {
    let mut next = xorshift(0x0b10_c5e5);
    let lengths = [0, 1, 64, 65, 128, 129, 300, 1024, 1025, 5000, 100];
    let blobs: Vec<Vec<u8>> = (0..70)
        .map(|index| {
            let len = lengths[index % lengths.len()];
            (0..len).map(|_| next() as u8).collect()
        })
        .collect();
    let records: Vec<Vec<u8>> = (0..33).map(|index| vec![index as u8; 64]).collect();
    let outputs = [(512, 0), (1024, 0), (1024, 128), (512, 1), (1023, 0)];
    assert_batches_match_blake3(&[blobs, records], "blake3-batch whole passes", &outputs);
}

/// Asserts that every batch's output at every `(length, seek)` of
/// `outputs` is `blake3`'s, in every mode (`context` the derive-key
/// one), layout and on one and two threads.
fn assert_batches_match_blake3(batches: &[Vec<Vec<u8>>], context: &str, outputs: &[(usize, u64)]) {
    let key = [0x42u8; 32];
    let modes = [Mode::Hash, Mode::KeyedHash(&key), Mode::DeriveKey(context)];
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
            for &(length, seek) in outputs {
                for (layout, out) in every_layout(&engine, mode, blobs, length, seek) {
                    let label = format!("{threads} threads {layout}");
                    assert_matches_blake3(&label, mode, blobs, (length, seek), &out);
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
    for (layout, out) in every_layout(&engine, Mode::Hash, &blobs, 20, 0) {
        for (index, (blob, output)) in blobs.iter().zip(out.chunks_exact(20)).enumerate() {
            assert_eq!(
                output,
                &blake3::hash(blob).as_bytes()[..20],
                "{layout} blob {index}"
            );
        }
    }
}

/// Blobs over 1 MiB are hashed after the short ones, all together over
/// every thread: every output still lands where its blob's belongs, whichever
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
                for (length, seek) in [(20, 0), (33, 0), (200, 0), (40, 1000)] {
                    for (layout, out) in every_layout(&engine, mode, blobs, length, seek) {
                        let label = format!("{threads} threads {layout}");
                        assert_matches_blake3(&label, mode, blobs, (length, seek), &out);
                    }
                }
            }
        }
    }
}

/// Output lengths and seeks: within the digest (a piece of it, from the
/// backend), across its end, from within a block and from its start, up to
/// the most the lanes make and one byte past it, across 2^32 blocks (the
/// counter's high word) and up to the output's last byte.
const SEEKS: [(usize, u64); 11] = [
    (16, 8),
    (1, 31),
    (32, 1),
    (64, 32),
    (40, 1000),
    (1000, 24),
    (1001, 24),
    (131, 64),
    (3000, 5),
    (80, (1 << 38) - 40),
    (33, u64::MAX - 32),
];

#[test]
fn outputs_from_any_seek_match_blake3_on_every_engine() {
    let mut next = xorshift(0x5eec_0ff5);
    // Around a block and a chunk, trees up to 16 chunks and one past them.
    let lengths = [
        0, 1, 63, 64, 65, 500, 1024, 1025, 2048, 2049, 3072, 4097, 200, 7, 16384, 16385,
    ];
    let blobs: Vec<Vec<u8>> = (0..64)
        .map(|index| {
            let len = lengths[index % lengths.len()];
            (0..len).map(|_| next() as u8).collect()
        })
        .collect();
    let records: Vec<Vec<u8>> = (0..40).map(|index| vec![index as u8; 100]).collect();
    let key = [0x17u8; 32];
    let modes = [
        Mode::Hash,
        Mode::KeyedHash(&key),
        Mode::DeriveKey("blake3-batch seek tests"),
    ];
    for (name, engine) in all_engines() {
        for mode in modes {
            for batch in [&blobs, &records] {
                for (length, seek) in SEEKS {
                    for (layout, out) in every_layout(engine, mode, batch, length, seek) {
                        let label = format!("{name} {layout}");
                        assert_matches_blake3(&label, mode, batch, (length, seek), &out);
                    }
                }
            }
        }
    }
}

/// The official vectors' 131 bytes of output read from a seek give the
/// same bytes as the vectors from there on.
#[test]
fn every_vector_from_a_seek_is_the_rest_of_its_output() {
    let vectors = vectors();
    let inputs = vector_inputs(&vectors);
    let engine = Engine::builder().backend(Backend::Cpu).build().unwrap();
    for (which, mode) in vectors.modes().into_iter().enumerate() {
        for seek in [1usize, 31, 32, 63, 64, 100] {
            let length = 131 - seek;
            let mut out = vec![0u8; inputs.len() * length];
            engine
                .hash_slices_xof_at_into(mode, &inputs, length, seek as u64, &mut out)
                .unwrap();
            for (case, output) in vectors.cases.iter().zip(out.chunks_exact(length)) {
                assert_eq!(
                    output,
                    &case.extended[which][seek..],
                    "{mode:?} input {} from {seek}",
                    case.input_len
                );
            }
        }
    }
}

/// The free functions run the shared engine's `_xof_at_into` forms.
#[test]
fn the_free_functions_seek_as_the_engine_does() {
    let blobs = ["ada", "grace", ""];
    let (data, offsets) = (b"adagrace", [0u32, 3, 8, 8]);
    let records = b"adagraceabc";
    let want = |blobs: &[&[u8]]| -> Vec<u8> {
        let outputs = blobs
            .iter()
            .map(|blob| reference_xof_at(Mode::Hash, blob, 40, 1000));
        outputs.flatten().collect()
    };
    let mut out = vec![0u8; 3 * 40];
    blake3_batch::hash_slices_xof_at_into(Mode::Hash, &blobs, 40, 1000, &mut out).unwrap();
    assert_eq!(out, want(&[b"ada", b"grace", b""]));
    blake3_batch::hash_packed_xof_at_into(Mode::Hash, data, &offsets, 40, 1000, &mut out).unwrap();
    assert_eq!(out, want(&[b"ada", b"grace", b""]));
    let mut out = vec![0u8; 11 * 40];
    blake3_batch::hash_records_xof_at_into(Mode::Hash, records, 1, 40, 1000, &mut out).unwrap();
    let bytes: Vec<&[u8]> = records.chunks(1).collect();
    assert_eq!(out, want(&bytes));
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
        engine
            .hash_slices_xof_at_into(Mode::Hash, &none, length, 1 << 40, &mut [])
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

/// The `_at_` forms check as the others do, whatever the seek.
#[test]
fn a_seek_does_not_change_what_is_an_error() {
    let engine = Engine::builder().backend(Backend::Cpu).build().unwrap();
    for seek in [0, 5, 100, u64::MAX] {
        let mut out = [0xaau8; 3 * 64];
        let blobs = ["a", "bb", "ccc"];
        let error = engine
            .hash_slices_xof_at_into(Mode::Hash, &blobs, 0, seek, &mut out)
            .unwrap_err();
        assert_eq!(error.kind(), &ErrorKind::XofLength, "from {seek}");
        let wrong = engine
            .hash_packed_xof_at_into(Mode::Hash, b"abbccc", &[0u32, 1, 3, 6], 63, seek, &mut out)
            .unwrap_err();
        let kind = ErrorKind::XofOutputLength {
            blobs: 3,
            length: 63,
            actual: 3 * 64,
        };
        assert_eq!(wrong.kind(), &kind, "from {seek}");
        let records = engine
            .hash_records_xof_at_into(Mode::Hash, b"abcdef", 4, 64, seek, &mut out)
            .unwrap_err();
        assert!(
            matches!(records.kind(), ErrorKind::RecordSizeMismatch { .. }),
            "from {seek}: {records}"
        );
        assert!(out.iter().all(|&byte| byte == 0xaa), "from {seek}: written");
    }
}

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
