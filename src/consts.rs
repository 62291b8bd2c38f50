//! BLAKE3 constants from the specification (section 2 of the BLAKE3 paper).
//!
//! Kept in one place because the CPU kernel, the GPU uniforms and the tree
//! driver all need the same flags and IV.

/// The initialisation vector: the first 32 bits of the fractional parts of the
/// square roots of the first 8 primes (the same as SHA-256's IV).
pub(crate) const IV: [u32; 8] = [
    0x6A09_E667,
    0xBB67_AE85,
    0x3C6E_F372,
    0xA54F_F53A,
    0x510E_527F,
    0x9B05_688C,
    0x1F83_D9AB,
    0x5BE0_CD19,
];

/// Bytes in one compression block.
pub(crate) const BLOCK_LEN: usize = 64;
/// Bytes in one chunk, the leaf of the BLAKE3 tree.
pub(crate) const CHUNK_LEN: usize = 1024;
/// Blocks in one full chunk.
pub(crate) const BLOCKS_PER_CHUNK: usize = CHUNK_LEN / BLOCK_LEN;

pub(crate) const CHUNK_START: u32 = 1;
pub(crate) const CHUNK_END: u32 = 2;
pub(crate) const PARENT: u32 = 4;
pub(crate) const ROOT: u32 = 8;
pub(crate) const KEYED_HASH: u32 = 16;
pub(crate) const DERIVE_KEY_CONTEXT: u32 = 32;
pub(crate) const DERIVE_KEY_MATERIAL: u32 = 64;

/// The message word permutation applied between rounds.
const MSG_PERMUTATION: [usize; 16] = [2, 6, 3, 10, 7, 0, 4, 13, 1, 11, 12, 5, 9, 14, 15, 8];

/// For each of the 7 rounds, which original message word feeds each slot.
///
/// Precomputing the composed permutation lets the kernel index the loaded
/// message directly instead of shuffling 16 vectors between rounds.
pub(crate) const MSG_SCHEDULE: [[usize; 16]; 7] = {
    let mut schedule = [[0usize; 16]; 7];
    let mut i = 0;
    while i < 16 {
        schedule[0][i] = i;
        i += 1;
    }
    let mut round = 1;
    while round < 7 {
        let mut slot = 0;
        while slot < 16 {
            schedule[round][slot] = schedule[round - 1][MSG_PERMUTATION[slot]];
            slot += 1;
        }
        round += 1;
    }
    schedule
};

/// Number of compression blocks in a single-chunk input of `len` bytes
/// (`len <= CHUNK_LEN`): the empty input still takes one block.
#[inline(always)]
pub(crate) const fn blocks_in_chunk(len: usize) -> usize {
    if len == 0 {
        1
    } else {
        len.div_ceil(BLOCK_LEN)
    }
}

/// Little-endian words of a 32-byte key.
pub(crate) fn key_words(key: &[u8; 32]) -> [u32; 8] {
    let mut words = [0u32; 8];
    for (word, bytes) in words.iter_mut().zip(key.chunks_exact(4)) {
        *word = u32::from_le_bytes([bytes[0], bytes[1], bytes[2], bytes[3]]);
    }
    words
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn schedule_matches_the_specifications_round_two_and_seven() {
        // Round 2 is one application of the permutation; round 7 is six.
        assert_eq!(MSG_SCHEDULE[1], MSG_PERMUTATION);
        let mut words: [usize; 16] = core::array::from_fn(|i| i);
        for _ in 0..6 {
            words = core::array::from_fn(|i| words[MSG_PERMUTATION[i]]);
        }
        assert_eq!(MSG_SCHEDULE[6], words);
    }

    #[test]
    fn block_counts() {
        assert_eq!(blocks_in_chunk(0), 1);
        assert_eq!(blocks_in_chunk(1), 1);
        assert_eq!(blocks_in_chunk(64), 1);
        assert_eq!(blocks_in_chunk(65), 2);
        assert_eq!(blocks_in_chunk(1024), 16);
    }
}
