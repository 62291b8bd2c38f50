//! Rust mirrors of the shaders' bindings (`shaders/*.wgsl`): the parameter
//! block, the per-blob table entry and the constants both sides share.

use crate::mode::ModeWords;

/// The compression shared by both shaders (`shaders/compress.wgsl`).
const COMPRESS: &str = include_str!("../../shaders/compress.wgsl");

/// The shader over the CPU's slabs: the compression, the unaligned reads,
/// then its entry points.
pub(crate) fn slab_shader() -> String {
    [
        COMPRESS,
        UNALIGNED,
        include_str!("../../shaders/slabs.wgsl"),
    ]
    .concat()
}

/// Reading blobs that start at any byte (`shaders/unaligned.wgsl`).
const UNALIGNED: &str = include_str!("../../shaders/unaligned.wgsl");

/// The shader over the caller's buffers: the compression, the unaligned
/// reads, then its entry points.
pub(crate) fn buffer_shader() -> String {
    [
        COMPRESS,
        UNALIGNED,
        include_str!("../../shaders/buffers.wgsl"),
    ]
    .concat()
}

/// `buffers.wgsl`'s entry points.
pub(crate) const CHECK_PACKED_ENTRY: &str = "check_packed";
pub(crate) const HASH_PACKED_ENTRY: &str = "hash_packed";
pub(crate) const HASH_BUFFER_RECORDS_ENTRY: &str = "hash_records";
pub(crate) const HASH_TREES_ENTRY: &str = "hash_trees";
pub(crate) const JOIN_PIECES_ENTRY: &str = "join_pieces";

/// Bits of the status word `check_packed` sets (`DECREASING` and
/// `PAST_DATA` in the shader).
pub(crate) const STATUS_DECREASING: u32 = 1;
pub(crate) const STATUS_PAST_DATA: u32 = 2;

/// Invocations in a workgroup of `hash_packed`, which sorts its blobs by
/// block count (`SORT_GROUP` in `buffers.wgsl`).
pub(crate) const SORT_GROUP: u32 = 256;

/// Chunks of the longest blob in GPU buffers that one invocation hashes
/// (`SHORT_TREE` in `buffers.wgsl`, in `hash_trees`); a whole workgroup
/// takes each longer one.
pub(crate) const SHORT_TREE_CHUNKS: u32 = 16;

/// Chunks of the longest blob in GPU buffers that one workgroup hashes
/// alone (`PIECE` in `buffers.wgsl`): a longer one is split in pieces of
/// this many chunks, hashed side by side, then joined by `join_pieces`.
pub(crate) const PIECE_CHUNKS: u32 = 256;

/// Words of counts before the lists of blobs over one chunk in
/// `buffers.wgsl`'s `trees` (`LIST_START`), zeroed before each call that
/// has blobs over one chunk.
pub(crate) const TREE_LIST_COUNTS: u32 = 4;

/// Invocations in a workgroup of `hash_trees` (`LONG_GROUP` in
/// `buffers.wgsl`).
pub(crate) const TREE_GROUP: u32 = 64;

/// Invocations per workgroup unless `B3BATCH_GPU_WORKGROUP` says otherwise
/// (the shader's `workgroup_size` override).
pub(crate) const DEFAULT_WORKGROUP_SIZE: u32 = 64;

/// The slab shader's entry points, in the order `GpuDevice` makes their
/// pipelines.
pub(crate) const SLAB_ENTRIES: [&str; 7] = [
    TABLE_ENTRY,
    RECORDS_ENTRY,
    VERBATIM_ENTRY,
    VERBATIM_RECORDS_ENTRY,
    CHUNKS_ENTRY,
    VERBATIM_CHUNKS_ENTRY,
    PARENTS_ENTRY,
];

/// The shader's entry point for blobs found through the table.
pub(crate) const TABLE_ENTRY: &str = "hash_table";

/// The shader's entry point for blobs of one length at a fixed stride.
pub(crate) const RECORDS_ENTRY: &str = "hash_records";

/// The shader's entry points for blobs as they lay in packed input: found
/// through the table in bytes, and of one length back to back.
pub(crate) const VERBATIM_ENTRY: &str = "hash_verbatim";
pub(crate) const VERBATIM_RECORDS_ENTRY: &str = "hash_verbatim_records";

/// The shader's entry points for blobs over one chunk (`tree.rs`): chunks
/// padded to loads, chunks as they lay, and parents.
pub(crate) const CHUNKS_ENTRY: &str = "hash_chunks";
pub(crate) const VERBATIM_CHUNKS_ENTRY: &str = "hash_verbatim_chunks";
pub(crate) const PARENTS_ENTRY: &str = "hash_parents";

/// Bytes the shader loads at once (a `vec4<u32>`): every blob starts on a
/// multiple of it in the data buffer.
pub(crate) const LOAD_BYTES: usize = 16;

/// Table length marking a blob the shader skips (`SKIP` in the shader):
/// one the CPU hashes instead.
pub(crate) const SKIP: u32 = u32::MAX;

/// A parent job's digest slot when it is not a root (`NOT_ROOT` in the
/// shader).
pub(crate) const NOT_ROOT: u32 = u32::MAX;

/// Largest blob one invocation hashes alone: one chunk. Longer ones are
/// hashed as trees in slabs (`tree.rs`); the shader over the caller's
/// buffers takes only these.
pub(crate) const MAX_ONE_INVOCATION: usize = crate::consts::CHUNK_LEN;

/// Bytes of one chunk or parent job: four `u32`.
pub(crate) const JOB_BYTES: u64 = 16;

/// Bytes of one chaining value.
pub(crate) const CV_BYTES: u64 = 32;

/// Bytes of the shader's `Level` (first job, job count).
pub(crate) const LEVEL_BYTES: u64 = 8;

/// Bytes of one table entry: `(offset, len)` as two `u32`, the offset in
/// loads ([`SlabLayout::Table`](super::pack::SlabLayout)) or in bytes
/// (`Verbatim`).
pub(crate) const ENTRY_BYTES: u64 = 8;

/// Bytes of one digest in the output buffer.
pub(crate) const DIGEST_BYTES: u64 = 32;

/// The slab shader's `Params`: 52 bytes, 64 with WGSL's padding to 16.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub(crate) struct Params {
    pub key: [u32; 8],
    pub base_flags: u32,
    pub count: u32,
    /// `hash_records` and `hash_verbatim_records`: every blob's length in
    /// bytes.
    pub record_len: u32,
    /// `hash_records` only: how far apart blobs start, in [`LOAD_BYTES`].
    pub record_stride: u32,
    /// `hash_verbatim_records` only: the byte the first blob starts at.
    pub first_byte: u32,
}

/// Bytes of [`Params`] as the shader's storage buffer holds it.
pub(crate) const PARAMS_BYTES: u64 = 64;

impl Params {
    /// Parameters for `count` blobs found through the table.
    pub(crate) fn table(words: ModeWords, count: u32) -> Params {
        Params::records(words, count, 0, 0)
    }

    /// Parameters for `count` blobs of `len` bytes, `stride` loads apart.
    pub(crate) fn records(words: ModeWords, count: u32, len: u32, stride: u32) -> Params {
        Params {
            key: words.key,
            base_flags: words.flags,
            count,
            record_len: len,
            record_stride: stride,
            first_byte: 0,
        }
    }

    /// Parameters for `count` blobs of `len` bytes back to back from byte
    /// `first_byte`.
    pub(crate) fn verbatim_records(
        words: ModeWords,
        count: u32,
        len: u32,
        first_byte: u32,
    ) -> Params {
        Params {
            first_byte,
            ..Params::records(words, count, len, 0)
        }
    }

    /// The parameters' bytes, little-endian as WGSL reads them.
    pub(crate) fn to_bytes(self) -> [u8; PARAMS_BYTES as usize] {
        let mut words = [0u32; PARAMS_BYTES as usize / 4];
        words[..8].copy_from_slice(&self.key);
        words[8] = self.base_flags;
        words[9] = self.count;
        words[10] = self.record_len;
        words[11] = self.record_stride;
        words[12] = self.first_byte;
        let mut bytes = [0u8; PARAMS_BYTES as usize];
        for (chunk, word) in bytes.chunks_exact_mut(4).zip(words) {
            chunk.copy_from_slice(&word.to_le_bytes());
        }
        bytes
    }
}

/// A `Level`'s bytes: its first job and job count.
pub(crate) fn level_bytes(first: u32, count: u32) -> [u8; 8] {
    // Two words, as a table entry.
    entry_bytes(first, count)
}

/// The buffer shader's `BufferParams`: 64 bytes.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub(crate) struct BufferParams {
    pub key: [u32; 8],
    pub base_flags: u32,
    pub count: u32,
    pub first_byte: u32,
    pub record_len: u32,
    pub offset_words: u32,
    pub data_bytes: u32,
    pub row: u32,
    /// Invocations in `check_packed`'s dispatch: each checks every blob
    /// this far apart.
    pub check_stride: u32,
}

impl BufferParams {
    /// The parameters' bytes, little-endian as WGSL reads them.
    pub(crate) fn to_bytes(self) -> [u8; 64] {
        let mut words = [0u32; 16];
        words[..8].copy_from_slice(&self.key);
        words[8..].copy_from_slice(&[
            self.base_flags,
            self.count,
            self.first_byte,
            self.record_len,
            self.offset_words,
            self.data_bytes,
            self.row,
            self.check_stride,
        ]);
        let mut bytes = [0u8; 64];
        for (chunk, word) in bytes.chunks_exact_mut(4).zip(words) {
            chunk.copy_from_slice(&word.to_le_bytes());
        }
        bytes
    }
}

/// One table entry's bytes: where the blob starts in the data buffer (in
/// [`LOAD_BYTES`], or in bytes for verbatim slabs) and its length in bytes
/// (or [`SKIP`]).
pub(crate) fn entry_bytes(offset: u32, len: u32) -> [u8; 8] {
    let mut bytes = [0u8; 8];
    bytes[..4].copy_from_slice(&offset.to_le_bytes());
    bytes[4..].copy_from_slice(&len.to_le_bytes());
    bytes
}

/// Bytes a blob takes in the data buffer: its length rounded up to a whole
/// load, so every blob starts where the shader can load it.
pub(crate) fn padded_len(len: usize) -> usize {
    len.next_multiple_of(LOAD_BYTES)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn shader_constants_match_the_mirrors() {
        let (slabs, buffers) = (slab_shader(), buffer_shader());
        let workgroup = format!("override workgroup_size: u32 = {DEFAULT_WORKGROUP_SIZE}u;");
        assert!(slabs.contains(&workgroup) && buffers.contains(&workgroup));
        assert!(slabs.contains("const SKIP: u32 = 0xffffffffu;"));
        assert!(buffers.contains(&format!("const SORT_GROUP: u32 = {SORT_GROUP}u;")));
        assert!(buffers.contains(&format!("const SHORT_TREE: u32 = {SHORT_TREE_CHUNKS}u;")));
        assert!(buffers.contains(&format!("const LONG_GROUP: u32 = {TREE_GROUP}u;")));
        assert!(buffers.contains(&format!("const PIECE: u32 = {PIECE_CHUNKS}u;")));
        assert!(buffers.contains(&format!("const LIST_START: u32 = {TREE_LIST_COUNTS}u;")));
        assert!(slabs.contains("const NOT_ROOT: u32 = 0xffffffffu;"));
        assert_eq!(NOT_ROOT, 0xffff_ffff);
        for entry in SLAB_ENTRIES {
            assert!(slabs.contains(&format!("fn {entry}(")), "{entry}");
        }
        for entry in [
            CHECK_PACKED_ENTRY,
            HASH_PACKED_ENTRY,
            HASH_BUFFER_RECORDS_ENTRY,
            HASH_TREES_ENTRY,
            JOIN_PIECES_ENTRY,
        ] {
            assert!(buffers.contains(&format!("fn {entry}(")), "{entry}");
        }
        for (name, bit) in [
            ("DECREASING", STATUS_DECREASING),
            ("PAST_DATA", STATUS_PAST_DATA),
        ] {
            assert!(
                buffers.contains(&format!("const {name}: u32 = {bit}u;")),
                "{name}"
            );
        }
        assert_eq!(SKIP, 0xffff_ffff);
    }

    #[test]
    fn params_bytes_are_little_endian_words_in_field_order() {
        let words = ModeWords {
            key: [1, 2, 3, 4, 5, 6, 7, 0x0102_0304],
            flags: 16,
        };
        let bytes = Params::records(words, 9, 100, 7).to_bytes();
        assert_eq!(bytes[28..32], [4, 3, 2, 1]);
        assert_eq!(bytes[32..36], 16u32.to_le_bytes());
        assert_eq!(bytes[36..40], 9u32.to_le_bytes());
        assert_eq!(bytes[40..44], 100u32.to_le_bytes());
        assert_eq!(bytes[44..48], 7u32.to_le_bytes());
        assert_eq!(bytes[48..], [0; 16]);
        assert_eq!(Params::table(words, 9).to_bytes()[40..], [0; 24]);
        let bytes = Params::verbatim_records(words, 9, 100, 3).to_bytes();
        assert_eq!(bytes[40..44], 100u32.to_le_bytes());
        assert_eq!(bytes[48..52], 3u32.to_le_bytes());
    }
}
