//! The CPU path: backend choice (the one selection point), and the driver
//! that feeds the lane kernel.

pub(crate) mod batch;
mod groups;
mod kernel;
mod portable;
mod tree;

use std::fmt;
use std::str::FromStr;

use crate::consts::CHUNK_LEN;
use crate::error::{Error, ErrorKind};
use kernel::{GroupParams, LaneGroup};

/// A CPU instruction set the lane kernel is instantiated for.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum CpuBackend {
    /// Plain Rust arrays; runs everywhere.
    Portable,
}

impl CpuBackend {
    /// Every backend, widest first.
    pub const ALL: &'static [CpuBackend] = &[CpuBackend::Portable];

    /// The best backend this CPU supports.
    pub fn detect() -> CpuBackend {
        CpuBackend::supported()[0]
    }

    /// Whether this CPU can run the backend.
    pub fn is_supported(self) -> bool {
        match self {
            CpuBackend::Portable => true,
        }
    }

    /// Every backend this CPU can run, best first (always ends with
    /// `Portable`). Tests use it to cover all of them.
    pub fn supported() -> Vec<CpuBackend> {
        CpuBackend::ALL
            .iter()
            .copied()
            .filter(|backend| backend.is_supported())
            .collect()
    }

    /// The backend's name as `B3BATCH_CPU` and `--cpu` spell it.
    pub fn name(self) -> &'static str {
        match self {
            CpuBackend::Portable => "portable",
        }
    }

    /// Blobs hashed side by side in the widest lane group.
    pub fn lanes(self) -> usize {
        self.widths()[0]
    }

    /// Blobs longer than one chunk and at most this long go through the lanes
    /// as chunks and parent nodes; longer ones go to `blake3`, whose own SIMD
    /// hashes one big input's chunks side by side.
    ///
    /// Measured (`b3batch bench`, one thread, 4096-byte blobs): the portable
    /// lanes reach 0.36 GB/s where a `blake3::hash` loop reaches 2.5 GB/s, so
    /// the portable backend hands every multi-chunk blob to `blake3`.
    pub(crate) fn lane_tree_max(self) -> usize {
        match self {
            CpuBackend::Portable => CHUNK_LEN,
        }
    }

    /// This backend, or an error if this CPU lacks it.
    pub(crate) fn check_supported(self) -> Result<CpuBackend, Error> {
        if self.is_supported() {
            Ok(self)
        } else {
            Err(ErrorKind::BackendUnavailable {
                backend: self.name().to_owned(),
                reason: format!(
                    "this CPU lacks the instructions; choose one of {}",
                    names(&CpuBackend::supported())
                ),
            }
            .into())
        }
    }

    /// Lane counts of the kernel instances, widest first, ending with 1.
    pub(crate) fn widths(self) -> &'static [usize] {
        match self {
            CpuBackend::Portable => portable::WIDTHS,
        }
    }

    /// Hashes the first `width` lanes of `group` (`width` one of `widths()`).
    pub(crate) fn hash_group(
        self,
        width: usize,
        params: &GroupParams,
        group: &LaneGroup,
        out: &mut [[u8; 32]],
    ) {
        match self {
            CpuBackend::Portable => portable::hash_group(width, params, group, out),
        }
    }
}

fn names(backends: &[CpuBackend]) -> String {
    backends
        .iter()
        .map(|backend| backend.name())
        .collect::<Vec<_>>()
        .join(", ")
}

impl fmt::Display for CpuBackend {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

impl FromStr for CpuBackend {
    type Err = Error;

    /// Parses a name as [`CpuBackend::name`] spells it.
    fn from_str(name: &str) -> Result<Self, Error> {
        CpuBackend::ALL
            .iter()
            .copied()
            .find(|backend| backend.name().eq_ignore_ascii_case(name.trim()))
            .ok_or_else(|| {
                ErrorKind::BackendUnavailable {
                    backend: name.to_owned(),
                    reason: format!(
                        "no CPU backend has that name; choose one of {}",
                        names(CpuBackend::ALL)
                    ),
                }
                .into()
            })
    }
}

#[cfg(test)]
mod tests {
    use super::batch::hash_one;
    use super::*;
    use crate::mode::Mode;

    /// The lane tree against `blake3` at the lengths where its shape changes,
    /// including ones above the cut-over where batches use `blake3` instead.
    #[test]
    fn lane_tree_matches_blake3_at_every_tree_shape() {
        let data: Vec<u8> = (0..200 * 1024).map(|i| (i % 251) as u8).collect();
        let lengths = [
            0,
            1,
            64,
            1023,
            1024,
            1025,
            2048,
            2049,
            3072,
            3073,
            4096,
            4097,
            5120,
            7168,
            8193,
            16384,
            31745,
            65536,
            65537,
            102400,
            200 * 1024,
        ];
        for backend in CpuBackend::supported() {
            for len in lengths {
                let words = Mode::Hash.words(|_| unreachable!());
                let got = hash_one(backend, words, &data[..len]);
                assert_eq!(
                    got,
                    *blake3::hash(&data[..len]).as_bytes(),
                    "{backend} len {len}"
                );
            }
        }
    }
}
