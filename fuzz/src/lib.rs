//! What the fuzz targets share: the engines under test (every CPU backend
//! this machine runs, on one thread and on two), the `blake3` reference, and
//! a reader that turns the fuzzer's bytes into choices.

use std::sync::OnceLock;

use blake3_batch::{Backend, CpuBackend, Engine, Mode};

/// Every CPU backend here, on 1 and on 2 threads, built once.
pub fn engines() -> &'static [Engine] {
    static ENGINES: OnceLock<Vec<Engine>> = OnceLock::new();
    ENGINES.get_or_init(|| {
        CpuBackend::supported()
            .into_iter()
            .flat_map(|cpu| {
                [1, 2].map(|threads| {
                    Engine::builder()
                        .backend(Backend::Cpu)
                        .cpu_backend(cpu)
                        .threads(threads)
                        .build()
                        .expect("a supported backend builds")
                })
            })
            .collect()
    })
}

pub const KEY: [u8; 32] = *b"blake3-batch fuzzing key 32 byte";
pub const CONTEXT: &str = "blake3-batch fuzz 2026-11-26";

/// One of the three modes.
pub fn mode(choice: u8) -> Mode<'static> {
    match choice % 3 {
        0 => Mode::Hash,
        1 => Mode::KeyedHash(&KEY),
        _ => Mode::DeriveKey(CONTEXT),
    }
}

/// `blake3`'s digest of `data` in `mode`.
pub fn reference(mode: Mode, data: &[u8]) -> [u8; 32] {
    match mode {
        Mode::Hash => *blake3::hash(data).as_bytes(),
        Mode::KeyedHash(key) => *blake3::keyed_hash(key, data).as_bytes(),
        Mode::DeriveKey(context) => blake3::derive_key(context, data),
    }
}

/// Reads choices from the fuzzer's input; zeros once it runs out.
pub struct Input<'a>(pub &'a [u8]);

impl Input<'_> {
    pub fn byte(&mut self) -> u8 {
        match self.0.split_first() {
            Some((&first, rest)) => {
                self.0 = rest;
                first
            }
            None => 0,
        }
    }

    pub fn u16(&mut self) -> u16 {
        u16::from_le_bytes([self.byte(), self.byte()])
    }

    /// A blob length: mostly 0..=1100 and lane, block and chunk edges, now
    /// and then up to 70 000.
    pub fn length(&mut self) -> usize {
        const EDGES: [usize; 14] = [
            0, 1, 63, 64, 65, 127, 128, 129, 1023, 1024, 1025, 2048, 2049, 4097,
        ];
        match self.byte() % 8 {
            0..=3 => usize::from(self.u16()) % 1101,
            4 | 5 => EDGES[usize::from(self.byte()) % EDGES.len()],
            6 => usize::from(self.byte()),
            _ => usize::from(self.u16()) + usize::from(self.byte()) * 17,
        }
        .min(70_000)
    }
}

/// `len` bytes in a heap block of exactly that size, so that reading past
/// the end is caught by AddressSanitizer rather than landing in spare
/// capacity; filled from `seed`.
pub fn exact(len: usize, seed: u8) -> Box<[u8]> {
    (0..len)
        .map(|index| (index as u8).wrapping_mul(31).wrapping_add(seed))
        .collect::<Vec<u8>>()
        .into_boxed_slice()
}
