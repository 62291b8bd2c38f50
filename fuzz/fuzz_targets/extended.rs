//! Extended output of slices and records, every CPU backend, all three
//! modes, at output lengths in the lanes (up to 1 KiB), past them and
//! under 32 bytes, from the start or from a seek, each equal to `blake3`'s
//! `finalize_xof` read from there. Slices each lie
//! in their own heap block, starting one byte past its start and ending at
//! its end, so an over-read of a last block is caught by AddressSanitizer.
#![no_main]

use blake3_batch::Mode;
use blake3_batch_fuzz::{engines, exact, mode, Input};
use libfuzzer_sys::fuzz_target;

/// `length` bytes of `blake3`'s extended output of `data` in `mode` from
/// byte `seek` on.
fn reference_xof(mode: Mode, data: &[u8], length: usize, seek: u64) -> Vec<u8> {
    let mut hasher = match mode {
        Mode::Hash => blake3::Hasher::new(),
        Mode::KeyedHash(key) => blake3::Hasher::new_keyed(key),
        Mode::DeriveKey(context) => blake3::Hasher::new_derive_key(context),
    };
    let mut reader = hasher.update(data).finalize_xof();
    reader.set_position(seek);
    let mut output = vec![0u8; length];
    reader.fill(&mut output);
    output
}

fuzz_target!(|bytes: &[u8]| {
    let mut input = Input(bytes);
    let mode = mode(input.byte());
    // Mostly 33..=1100 (the lanes and just past them), some prefixes.
    let length = match input.byte() % 4 {
        0 => 1 + usize::from(input.byte()) % 32,
        _ => 33 + usize::from(input.u16()) % 1068,
    };
    // From the start (the `_xof_into` forms), within the first kilobyte or
    // anywhere in the output, its counter's high word included.
    let seek = match input.byte() % 4 {
        0 | 1 => 0,
        2 => u64::from(input.u16()) % 1100,
        _ => (u64::from(input.u16()) << 48) | (u64::from(input.u16()) << 16),
    };

    let blocks: Vec<Box<[u8]>> = (0..usize::from(input.byte()) % 40)
        .map(|_| exact(input.length() + 1, input.byte()))
        .collect();
    let slices: Vec<&[u8]> = blocks.iter().map(|block| &block[1..]).collect();
    let expected: Vec<u8> = slices
        .iter()
        .flat_map(|slice| reference_xof(mode, slice, length, seek))
        .collect();

    // Records: `count` of `size` bytes, the last ending at the block's end.
    let size = input.length().clamp(1, 2100);
    let count = usize::from(input.byte()) % 24;
    let records = exact(size * count, input.byte());
    let expected_records: Vec<u8> = records
        .chunks(size)
        .flat_map(|record| reference_xof(mode, record, length, seek))
        .collect();

    for engine in engines() {
        let mut out = vec![0u8; slices.len() * length];
        match seek {
            0 => engine.hash_slices_xof_into(mode, &slices, length, &mut out),
            _ => engine.hash_slices_xof_at_into(mode, &slices, length, seek, &mut out),
        }
        .unwrap();
        assert!(
            out == expected,
            "slices on {:?}, output {length} from {seek}",
            engine.cpu_backend()
        );
        let mut out = vec![0u8; count * length];
        match seek {
            0 => engine.hash_records_xof_into(mode, &records, size, length, &mut out),
            _ => engine.hash_records_xof_at_into(mode, &records, size, length, seek, &mut out),
        }
        .unwrap();
        assert!(
            out == expected_records,
            "records on {:?}, output {length} from {seek}",
            engine.cpu_backend()
        );
    }
});
