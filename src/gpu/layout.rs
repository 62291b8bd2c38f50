//! Rust mirrors of the shader's bindings (`shaders/blake3.wgsl`): the uniform
//! block, the per-blob table entry and the constants both sides share.

use crate::mode::ModeWords;

/// The WGSL source, compiled into the library.
pub(crate) const SHADER: &str = include_str!("../../shaders/blake3.wgsl");

/// Invocations per workgroup (`WORKGROUP_SIZE` in the shader).
pub(crate) const WORKGROUP_SIZE: u32 = 64;

/// Table length marking a blob the shader skips (`SKIP` in the shader): one
/// over 1024 bytes, hashed on the CPU instead.
pub(crate) const SKIP: u32 = u32::MAX;

/// Largest blob the shader hashes: one chunk.
pub(crate) const MAX_GPU_BLOB: usize = crate::consts::CHUNK_LEN;

/// Bytes of one table entry: `(word_offset, len)` as two `u32`.
pub(crate) const ENTRY_BYTES: u64 = 8;

/// Bytes of one digest in the output buffer.
pub(crate) const DIGEST_BYTES: u64 = 32;

/// The shader's `Params` uniform: 48 bytes, 16-byte aligned.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
#[repr(C)]
pub(crate) struct Params {
    pub key: [u32; 8],
    pub base_flags: u32,
    pub count: u32,
    pub pad: [u32; 2],
}

impl Params {
    pub(crate) fn new(words: ModeWords, count: u32) -> Params {
        Params {
            key: words.key,
            base_flags: words.flags,
            count,
            pad: [0; 2],
        }
    }

    /// The uniform's bytes, little-endian as WGSL reads them.
    pub(crate) fn to_bytes(self) -> [u8; 48] {
        let mut words = [0u32; 12];
        words[..8].copy_from_slice(&self.key);
        words[8] = self.base_flags;
        words[9] = self.count;
        let mut bytes = [0u8; 48];
        for (chunk, word) in bytes.chunks_exact_mut(4).zip(words) {
            chunk.copy_from_slice(&word.to_le_bytes());
        }
        bytes
    }
}

/// One table entry's bytes: where the blob starts in the data buffer (in
/// 32-bit words) and its length in bytes (or [`SKIP`]).
pub(crate) fn entry_bytes(word_offset: u32, len: u32) -> [u8; 8] {
    let mut bytes = [0u8; 8];
    bytes[..4].copy_from_slice(&word_offset.to_le_bytes());
    bytes[4..].copy_from_slice(&len.to_le_bytes());
    bytes
}

/// Bytes a blob takes in the data buffer: its length rounded up to a whole
/// 32-bit word, so every blob starts on a word the shader can load.
pub(crate) fn padded_len(len: usize) -> usize {
    len.next_multiple_of(4)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn shader_constants_match_the_mirrors() {
        assert!(SHADER.contains(&format!("const WORKGROUP_SIZE: u32 = {WORKGROUP_SIZE}u;")));
        assert!(SHADER.contains("const SKIP: u32 = 0xffffffffu;"));
        assert_eq!(SKIP, 0xffff_ffff);
        assert_eq!(std::mem::size_of::<Params>(), 48);
    }

    #[test]
    fn params_bytes_are_little_endian_words_in_field_order() {
        let words = ModeWords {
            key: [1, 2, 3, 4, 5, 6, 7, 0x0102_0304],
            flags: 16,
        };
        let bytes = Params::new(words, 9).to_bytes();
        assert_eq!(bytes[28..32], [4, 3, 2, 1]);
        assert_eq!(bytes[32..36], 16u32.to_le_bytes());
        assert_eq!(bytes[36..40], 9u32.to_le_bytes());
        assert_eq!(bytes[40..], [0; 8]);
    }
}
