//! The three BLAKE3 modes and what each means for the compression inputs.

use crate::consts::{key_words, DERIVE_KEY_CONTEXT, DERIVE_KEY_MATERIAL, IV, KEYED_HASH};

/// Which BLAKE3 function to apply to every blob of a batch.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Mode<'a> {
    /// `blake3::hash`.
    Hash,
    /// `blake3::keyed_hash` with this key.
    KeyedHash(&'a [u8; 32]),
    /// `blake3::derive_key` with this context string; the context is hashed
    /// once per batch, not once per blob.
    DeriveKey(&'a str),
}

/// The starting chaining value and mode flag of every blob's compressions.
#[derive(Clone, Copy, Debug)]
pub(crate) struct ModeWords {
    pub key: [u32; 8],
    pub flags: u32,
}

impl Mode<'_> {
    /// The key words and flags for this mode. `context_key` hashes a derive
    /// key context string (a full BLAKE3 hash with `DERIVE_KEY_CONTEXT`).
    pub(crate) fn words(self, context_key: impl FnOnce(&[u8]) -> [u8; 32]) -> ModeWords {
        match self {
            Mode::Hash => ModeWords { key: IV, flags: 0 },
            Mode::KeyedHash(key) => ModeWords {
                key: key_words(key),
                flags: KEYED_HASH,
            },
            Mode::DeriveKey(context) => ModeWords {
                key: key_words(&context_key(context.as_bytes())),
                flags: DERIVE_KEY_MATERIAL,
            },
        }
    }

    /// The key words and flags for hashing a derive-key context string.
    pub(crate) const CONTEXT: ModeWords = ModeWords {
        key: IV,
        flags: DERIVE_KEY_CONTEXT,
    };

    /// Hashes one blob with the `blake3` crate: the cheapest path for a
    /// single blob, and the fastest for large ones on one thread, which
    /// `blake3` already spreads over SIMD lanes.
    pub(crate) fn hash_with_blake3(self, data: &[u8]) -> [u8; 32] {
        match self {
            Mode::Hash => *blake3::hash(data).as_bytes(),
            Mode::KeyedHash(key) => *blake3::keyed_hash(key, data).as_bytes(),
            Mode::DeriveKey(context) => blake3::derive_key(context, data),
        }
    }
}
