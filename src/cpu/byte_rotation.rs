//! `pshufb` masks for the two byte-aligned rotations of BLAKE3's G
//! function, shared by the SSE4.1 and AVX2 lanes.
//!
//! The lanes apply them through inline assembly rather than the shuffle
//! intrinsics: seeing a constant mask, LLVM distributes a shuffle over the
//! XOR before it and merges it with the rotation one step earlier, so each
//! G ends up with about twice the shuffles it needs (and AVX2's rotate by
//! 16 split into a `vpshuflw`/`vpshufhw` pair). An opaque instruction keeps
//! exactly one shuffle per rotation.

/// A 32-byte shuffle mask, aligned so one load reads either 16-byte half
/// or the whole row.
#[repr(C, align(32))]
pub(super) struct ShuffleMask(pub(super) [u8; 32]);

/// Rotates each u32 right by 16 bits.
pub(super) static ROTR16: ShuffleMask = ShuffleMask(rotation_mask(2));

/// Rotates each u32 right by 8 bits.
pub(super) static ROTR8: ShuffleMask = ShuffleMask(rotation_mask(1));

/// The mask that moves every little-endian u32's byte `i + bytes` (mod 4)
/// to byte `i`: a right rotation by `8 * bytes` bits.
const fn rotation_mask(bytes: u8) -> [u8; 32] {
    let mut mask = [0; 32];
    let mut i = 0;
    while i < 32 {
        mask[i] = (i as u8 & !3) | ((i as u8 + bytes) & 3);
        i += 1;
    }
    mask
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Applies `mask` to `words` as `vpshufb` does: each byte of the
    /// result comes from the same 16-byte half, at the mask byte's low four
    /// bits (a set high bit would zero it, which these masks never ask for).
    fn shuffle(words: [u32; 8], mask: &ShuffleMask) -> [u32; 8] {
        let bytes: Vec<u8> = words.iter().flat_map(|w| w.to_le_bytes()).collect();
        let moved: Vec<u8> = (0..32)
            .map(|i| {
                assert_eq!(mask.0[i] & 0x80, 0, "byte {i} would be zeroed");
                bytes[(i & !15) | usize::from(mask.0[i] & 15)]
            })
            .collect();
        core::array::from_fn(|i| u32::from_le_bytes(moved[4 * i..4 * i + 4].try_into().unwrap()))
    }

    #[test]
    fn masks_rotate_every_word() {
        let words = [
            0x0123_4567,
            0x89ab_cdef,
            0xdead_beef,
            0x0000_0001,
            0x8000_0000,
            0xffff_0000,
            0x1357_9bdf,
            0x2468_ace0,
        ];
        assert_eq!(shuffle(words, &ROTR16), words.map(|w| w.rotate_right(16)));
        assert_eq!(shuffle(words, &ROTR8), words.map(|w| w.rotate_right(8)));
    }
}
