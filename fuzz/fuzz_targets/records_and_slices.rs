//! Fixed-size records, and slices each in its own heap block that starts at
//! an odd address and ends exactly where the block ends, so an over-read or
//! a misaligned load is caught by AddressSanitizer; every CPU backend, all
//! three modes, each digest equal to `blake3`'s.
#![no_main]

use blake3_batch_fuzz::{engines, exact, mode, reference, Input};
use libfuzzer_sys::fuzz_target;

fuzz_target!(|bytes: &[u8]| {
    let mut input = Input(bytes);
    let mode = mode(input.byte());

    // Records: `count` of `size` bytes, the last ending at the block's end.
    let size = input.length().clamp(1, 4200);
    let count = usize::from(input.byte()) % 40;
    let records = exact(size * count, input.byte());
    let expected: Vec<[u8; 32]> = records
        .chunks(size)
        .map(|record| reference(mode, record))
        .collect();

    // Slices: blob i is bytes 1.. of its own block, so it starts one byte
    // past the block's (aligned) start and ends at its end.
    let blocks: Vec<Box<[u8]>> = (0..usize::from(input.byte()) % 40)
        .map(|_| exact(input.length() + 1, input.byte()))
        .collect();
    let slices: Vec<&[u8]> = blocks.iter().map(|block| &block[1..]).collect();
    let expected_slices: Vec<[u8; 32]> =
        slices.iter().map(|slice| reference(mode, slice)).collect();

    for engine in engines() {
        let mut out = vec![[0u8; 32]; count];
        if count > 0 {
            engine
                .hash_records_into(mode, &records, size, &mut out)
                .unwrap();
        }
        assert_eq!(out, expected, "records on {:?}", engine.cpu_backend());
        let mut out = vec![[0u8; 32]; slices.len()];
        engine.hash_slices_into(mode, &slices, &mut out).unwrap();
        assert_eq!(out, expected_slices, "slices on {:?}", engine.cpu_backend());
    }
});
