//! Packed blobs with fuzzer-chosen lengths, u32 and u64 offsets, a first
//! offset above 0, all three modes, on every CPU backend: each digest equals
//! `blake3`'s. The data ends where its allocation ends.
#![no_main]

use blake3_batch_fuzz::{engines, exact, mode, reference, Input};
use libfuzzer_sys::fuzz_target;

fuzz_target!(|bytes: &[u8]| {
    let mut input = Input(bytes);
    let mode = mode(input.byte());
    let lead = usize::from(input.byte() % 8);
    let count = usize::from(input.byte()) % 80;
    let mut offsets = vec![lead as u64];
    for _ in 0..count {
        let end = offsets.last().unwrap() + input.length() as u64;
        offsets.push(end);
    }
    let data = exact(*offsets.last().unwrap() as usize, input.byte());
    let expected: Vec<[u8; 32]> = offsets
        .windows(2)
        .map(|pair| reference(mode, &data[pair[0] as usize..pair[1] as usize]))
        .collect();
    let offsets32: Vec<u32> = offsets.iter().map(|&offset| offset as u32).collect();
    for engine in engines() {
        let mut out = vec![[0u8; 32]; count];
        engine
            .hash_packed_into(mode, &data, &offsets, &mut out)
            .unwrap();
        assert_eq!(out, expected, "u64 offsets on {:?}", engine.cpu_backend());
        let mut out = vec![[0u8; 32]; count];
        engine
            .hash_packed_into(mode, &data, &offsets32, &mut out)
            .unwrap();
        assert_eq!(out, expected, "u32 offsets on {:?}", engine.cpu_backend());
    }
});
