//! Helpers shared by the integration tests: the official vectors, the
//! engines to cover, and reference digests from the `blake3` crate.
#![allow(dead_code)] // each test binary uses a different subset

use blake3_batch::{Backend, CpuBackend, Engine, ErrorKind, Mode};
use serde_json::Value;
use std::sync::OnceLock;

/// The official BLAKE3 test vectors (a copy of
/// `shared/testdata/blake3_test_vectors.json`, kept in the crate so it tests
/// anywhere).
pub struct Vectors {
    pub key: [u8; 32],
    pub context: String,
    pub cases: Vec<Case>,
}

impl Vectors {
    /// The three modes with the vectors' key and context.
    pub fn modes(&self) -> [Mode<'_>; 3] {
        [
            Mode::Hash,
            Mode::KeyedHash(&self.key),
            Mode::DeriveKey(&self.context),
        ]
    }
}

/// One vector: the input length and the digests (first 32 bytes of each
/// extended output).
pub struct Case {
    pub input_len: usize,
    pub hash: [u8; 32],
    pub keyed_hash: [u8; 32],
    pub derive_key: [u8; 32],
    /// The whole extended outputs (131 bytes), in the same order: hash,
    /// keyed hash, derived key.
    pub extended: [Vec<u8>; 3],
}

impl Case {
    /// The expected digest in `mode` (whose key and context must be the
    /// vectors' own).
    pub fn expected(&self, mode: Mode) -> [u8; 32] {
        match mode {
            Mode::Hash => self.hash,
            Mode::KeyedHash(_) => self.keyed_hash,
            Mode::DeriveKey(_) => self.derive_key,
        }
    }
}

pub fn vectors() -> Vectors {
    let text = include_str!("../data/blake3_test_vectors.json");
    let json: Value = serde_json::from_str(text).expect("vectors parse");
    let digest = |case: &Value, field: &str| -> [u8; 32] {
        let hex = case[field].as_str().expect("hex output");
        let bytes = decode_hex(&hex[..64]);
        bytes.try_into().expect("32 bytes")
    };
    let key: [u8; 32] = json["key"]
        .as_str()
        .expect("key")
        .as_bytes()
        .try_into()
        .expect("32-byte key");
    let cases = json["cases"]
        .as_array()
        .expect("cases")
        .iter()
        .map(|case| Case {
            input_len: case["input_len"].as_u64().expect("input_len") as usize,
            hash: digest(case, "hash"),
            keyed_hash: digest(case, "keyed_hash"),
            derive_key: digest(case, "derive_key"),
            extended: ["hash", "keyed_hash", "derive_key"]
                .map(|field| decode_hex(case[field].as_str().expect("hex output"))),
        })
        .collect::<Vec<_>>();
    assert!(cases.len() >= 30, "the vectors file lost cases");
    Vectors {
        key,
        context: json["context_string"].as_str().expect("context").to_owned(),
        cases,
    }
}

fn decode_hex(hex: &str) -> Vec<u8> {
    (0..hex.len())
        .step_by(2)
        .map(|i| u8::from_str_radix(&hex[i..i + 2], 16).expect("hex digit"))
        .collect()
}

/// The vectors' input: byte `i` is `i mod 251`.
pub fn vector_input(len: usize) -> Vec<u8> {
    (0..len).map(|i| (i % 251) as u8).collect()
}

/// One engine per CPU backend this machine supports, each single-threaded
/// and with two threads, so that every backend and the thread split are
/// covered, not only the one detection picks.
pub fn engines() -> Vec<(String, Engine)> {
    let mut engines = Vec::new();
    for cpu in CpuBackend::supported() {
        for threads in [1, 2] {
            let engine = Engine::builder()
                .cpu_backend(cpu)
                .threads(threads)
                .build()
                .expect("a supported backend builds");
            engines.push((format!("{cpu}/{threads} threads"), engine));
        }
    }
    engines
}

/// Set to `1` (as `.ci/run` does) to make GPU tests fail, not skip, when no
/// adapter is found.
pub const REQUIRE_GPU_ENV: &str = "B3BATCH_REQUIRE_GPU";

/// The smallest GPU memory budget: slabs of 1 KiB of data and 32 entries.
pub const SMALL_GPU_BUDGET: u64 = 15 * 1024;

/// A GPU engine with this memory budget (`None`: the default), or `None`
/// with one line on stderr when the machine has no adapter and
/// `B3BATCH_REQUIRE_GPU=1` is not set.
pub fn gpu_engine(budget: Option<u64>) -> Option<Engine> {
    let mut builder = Engine::builder().backend(Backend::Gpu).threads(2);
    if let Some(budget) = budget {
        builder = builder.gpu_memory_budget(budget);
    }
    match builder.build() {
        Ok(engine) => Some(engine),
        Err(error) if matches!(error.kind(), ErrorKind::BackendUnavailable { .. }) => {
            if std::env::var(REQUIRE_GPU_ENV).is_ok_and(|value| value == "1") {
                panic!("{REQUIRE_GPU_ENV}=1 but no GPU: {error}");
            }
            eprintln!("skipping the GPU in this test: {error}");
            None
        }
        Err(error) => panic!("building a GPU engine failed: {error}"),
    }
}

/// [`engines`] plus, where the machine has an adapter, a GPU engine with
/// slabs small enough ([`SMALL_GPU_BUDGET`]: one 1 KiB blob or 32 entries a
/// slab)
/// that every batch of more than a few blobs streams through several.
///
/// Built once per test binary: opening a GPU device takes about 100 ms.
pub fn all_engines() -> &'static [(String, Engine)] {
    static ENGINES: OnceLock<Vec<(String, Engine)>> = OnceLock::new();
    ENGINES.get_or_init(|| {
        let mut engines = engines();
        if let Some(gpu) = gpu_engine(None) {
            engines.push(("gpu".to_owned(), gpu));
        }
        if let Some(gpu) = gpu_engine(Some(SMALL_GPU_BUDGET)) {
            engines.push(("gpu/small slabs".to_owned(), gpu));
        }
        engines
    })
}

/// The `blake3` crate's digest of `data` in `mode`.
pub fn reference(mode: Mode, data: &[u8]) -> [u8; 32] {
    match mode {
        Mode::Hash => *blake3::hash(data).as_bytes(),
        Mode::KeyedHash(key) => *blake3::keyed_hash(key, data).as_bytes(),
        Mode::DeriveKey(context) => blake3::derive_key(context, data),
    }
}

/// `length` bytes of the `blake3` crate's extended output of `data` in
/// `mode`.
#[allow(dead_code)] // not every test binary asks for extended output
pub fn reference_xof(mode: Mode, data: &[u8], length: usize) -> Vec<u8> {
    reference_xof_at(mode, data, length, 0)
}

/// `length` bytes of `blake3`'s extended output of `data` in `mode` from
/// byte `seek` on.
#[allow(dead_code)]
pub fn reference_xof_at(mode: Mode, data: &[u8], length: usize, seek: u64) -> Vec<u8> {
    let mut hasher = match mode {
        Mode::Hash => blake3::Hasher::new(),
        Mode::KeyedHash(key) => blake3::Hasher::new_keyed(key),
        Mode::DeriveKey(context) => blake3::Hasher::new_derive_key(context),
    };
    let mut reader = hasher.update(data).finalize_xof();
    reader.set_position(seek);
    let mut out = vec![0u8; length];
    reader.fill(&mut out);
    out
}

/// `length` bytes read from `output`.
#[allow(dead_code)]
pub fn read_xof(mut output: blake3::OutputReader, length: usize) -> Vec<u8> {
    let mut out = vec![0u8; length];
    output.fill(&mut out);
    out
}

/// Hashes `blobs` as slices on `engine` and returns the first digest that
/// differs from the `blake3` crate's, described; `None` when all match.
pub fn first_mismatch<B: AsRef<[u8]> + Sync>(
    engine: &Engine,
    mode: Mode,
    blobs: &[B],
) -> Option<String> {
    let mut out = vec![[0u8; 32]; blobs.len()];
    engine.hash_slices_into(mode, blobs, &mut out).unwrap();
    blobs
        .iter()
        .zip(&out)
        .position(|(blob, digest)| *digest != reference(mode, blob.as_ref()))
        .map(|index| {
            format!(
                "blob {index} of {} ({} bytes) differs from blake3",
                blobs.len(),
                blobs[index].as_ref().len()
            )
        })
}

/// Packs blobs Arrow style behind `lead` bytes of padding, so the first
/// offset is not zero.
pub fn pack<B: AsRef<[u8]>>(blobs: &[B], lead: usize) -> (Vec<u8>, Vec<u64>) {
    let mut data = vec![0xA5; lead];
    let mut offsets = vec![lead as u64];
    for blob in blobs {
        data.extend_from_slice(blob.as_ref());
        offsets.push(data.len() as u64);
    }
    (data, offsets)
}

/// A xorshift64 generator from `state` (not zero): repeatable test data.
pub fn xorshift(mut state: u64) -> impl FnMut() -> u64 {
    move || {
        state ^= state << 13;
        state ^= state >> 7;
        state ^= state << 17;
        state
    }
}

/// An Arrow output array row by row: `None` for a null output (which must
/// hold zeros), else its bytes.
#[cfg(feature = "arrow")]
pub fn arrow_outputs(
    array: &blake3_batch::arrow_array::FixedSizeBinaryArray,
) -> Vec<Option<Vec<u8>>> {
    use blake3_batch::arrow_array::Array;
    (0..array.len())
        .map(|row| {
            let value = array.value(row).to_vec();
            if array.is_null(row) {
                assert!(value.iter().all(|&b| b == 0), "a null row holds zeros");
                None
            } else {
                Some(value)
            }
        })
        .collect()
}

/// A struct of no fields and `len` rows: a type that `hash_arrow`
/// refuses (its rows have no bytes).
#[cfg(feature = "arrow")]
pub fn no_fields(len: usize) -> blake3_batch::arrow_array::StructArray {
    blake3_batch::arrow_array::StructArray::new_empty_fields(len, None)
}
