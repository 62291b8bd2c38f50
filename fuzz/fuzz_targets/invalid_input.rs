//! Offsets, output lengths and record sizes as the fuzzer picks them, valid
//! or not: an `Error` leaves the output untouched, success gives `blake3`'s
//! digests, and nothing panics.
#![no_main]

use blake3_batch_fuzz::{engines, exact, mode, reference, Input};
use libfuzzer_sys::fuzz_target;

const UNTOUCHED: [u8; 32] = [0xEE; 32];

fuzz_target!(|bytes: &[u8]| {
    let mut input = Input(bytes);
    let mode = mode(input.byte());
    let data = exact(usize::from(input.u16()) % 5000, input.byte());
    let offsets: Vec<u64> = (0..usize::from(input.byte()) % 24)
        .map(|_| u64::from(input.u16()) % (data.len() as u64 + 64))
        .collect();
    let blobs = offsets.len().saturating_sub(1);
    let out_len = match input.byte() % 4 {
        0 => blobs + 1,
        1 => blobs.saturating_sub(1),
        _ => blobs,
    };
    let record_size = usize::from(input.u16()) % 300;
    for engine in engines() {
        let mut out = vec![UNTOUCHED; out_len];
        match engine.hash_packed_into(mode, &data, &offsets, &mut out) {
            Ok(()) => {
                for (index, pair) in offsets.windows(2).enumerate() {
                    let blob = &data[pair[0] as usize..pair[1] as usize];
                    assert_eq!(out[index], reference(mode, blob));
                }
            }
            Err(_) => assert!(
                out.iter().all(|slot| *slot == UNTOUCHED),
                "written on error"
            ),
        }
        let records = data.len().checked_div(record_size).unwrap_or(0);
        let mut out = vec![UNTOUCHED; records + usize::from(out_len % 2 == 1)];
        match engine.hash_records_into(mode, &data, record_size, &mut out) {
            Ok(()) => {
                for (index, record) in data.chunks(record_size).enumerate() {
                    assert_eq!(out[index], reference(mode, record));
                }
            }
            Err(_) => assert!(
                out.iter().all(|slot| *slot == UNTOUCHED),
                "written on error"
            ),
        }
    }
});
