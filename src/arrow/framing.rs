//! Arrays whose rows are not one run of bytes in their buffers — structs
//! (a record batch's rows), booleans, lists of anything but numbers, maps —
//! hashed by their rows' encodings (see `encoding.rs`): the rows are
//! encoded into pieces of packed blobs on the engine's threads, and each
//! piece hashed.

use std::ops::Range;

use arrow_array::Array;

use super::encoding::Encoding;
use super::walk::Keep;
use crate::cpu::batch::Threads;
use crate::{Engine, Error, Mode};

/// Encoded bytes per piece and thread, about (a piece's rows are counted
/// from the last piece's): each piece costs a few wake-ups of the engine's
/// threads, and its rows should still be in cache when they are hashed.
/// Rows of 40 to 1000 bytes on two threads (ad hoc, 2 vCPUs): 1 MiB ran
/// 0.43 to 0.49 of the same bytes as one column, 4 MiB 0.51 to 0.61,
/// 16 MiB 0.37 to 0.62.
const PIECE_BYTES: usize = 4 << 20;

/// The most encoded bytes a piece holds on any number of threads (one row
/// larger than this is a piece of its own), so memory stays bounded.
const MAX_PIECE_BYTES: usize = 64 << 20;

/// Rows in the first piece, before the rows' size is known.
const FIRST_PIECE_ROWS: usize = 4096;

/// A piece of encoded rows: packed bytes and their offsets.
#[derive(Default)]
struct Piece {
    data: Vec<u8>,
    offsets: Vec<u64>,
}

/// The rows encoded into a piece, and the threads that encode them.
struct Framing<'f, 'a> {
    rows: &'f Encoding<'a>,
    threads: Threads<'f>,
    parts: usize,
}

impl Framing<'_, '_> {
    /// Encodes `rows` into `piece`, a part of the rows on each thread (a
    /// struct's a field at a time): first every row's length (0 for a
    /// null row), then, from their sum, each row's bytes at its offset.
    fn frame(&self, rows: Range<usize>, piece: &mut Piece) -> Result<(), Error> {
        let part_rows = rows.len().div_ceil(self.parts).max(1);
        piece.offsets.clear();
        piece.offsets.resize(rows.len() + 1, 0);
        let parts = piece.offsets[1..]
            .chunks_mut(part_rows)
            .zip(rows.clone().step_by(part_rows))
            .collect();
        let measured = self
            .threads
            .map(parts, |(lengths, first)| self.measure(first, lengths));
        measured.into_iter().collect::<Result<(), Error>>()?;
        let mut total = 0;
        for offset in &mut piece.offsets[1..] {
            total += *offset;
            *offset = total;
        }
        // Every byte is written below, so the buffer is only zeroed where
        // it grows.
        piece.data.resize(total as usize, 0);
        let offsets = &piece.offsets;
        let mut parts = Vec::with_capacity(self.parts);
        let mut rest = &mut piece.data[..];
        for (part, first) in rows.clone().step_by(part_rows).enumerate() {
            let bounds = &offsets[part * part_rows..=((part + 1) * part_rows).min(rows.len())];
            let (out, after) = rest.split_at_mut((bounds[bounds.len() - 1] - bounds[0]) as usize);
            parts.push((first, bounds, out));
            rest = after;
        }
        let written = self
            .threads
            .map(parts, |(first, bounds, out)| self.write(first, bounds, out));
        written.into_iter().collect()
    }

    /// Writes `length` bytes of output from byte `seek` on of each of the
    /// `count` rows into `out`, a piece at a time: each piece's rows are
    /// about [`PIECE_BYTES`] a thread framed, as the last piece's averaged.
    fn hash_rows(
        &self,
        engine: &Engine,
        mode: Mode,
        (length, seek): (usize, u64),
        count: usize,
        out: &mut [u8],
    ) -> Result<(), Error> {
        let piece_bytes = (PIECE_BYTES * self.parts).min(MAX_PIECE_BYTES) as u64;
        let mut piece = Piece::default();
        let (mut first, mut piece_rows) = (0, FIRST_PIECE_ROWS);
        while first < count {
            let rows = first..(first + piece_rows).min(count);
            self.frame(rows.clone(), &mut piece)?;
            let (data, offsets) = (&piece.data, &piece.offsets);
            let outputs = &mut out[rows.start * length..rows.end * length];
            engine.hash_packed_xof_at_into(mode, data, offsets, length, seek, outputs)?;
            let row_bytes = (data.len() as u64 / rows.len() as u64).max(1);
            piece_rows = (piece_bytes / row_bytes).clamp(1, 1 << 24) as usize;
            first = rows.end;
        }
        Ok(())
    }

    /// Adds each row's encoded length from row `first` on into `lengths`.
    fn measure(&self, first: usize, lengths: &mut [u64]) -> Result<(), Error> {
        let rows = first..first + lengths.len();
        self.rows.add_lengths(rows, Keep::All, false, lengths)
    }

    /// Writes the encoded rows from row `first` on into `out`, which
    /// starts at the first's offset; `bounds` holds their offsets and the
    /// end's.
    fn write(&self, first: usize, bounds: &[u64], out: &mut [u8]) -> Result<(), Error> {
        let rows = first..first + bounds.len() - 1;
        let mut cursors: Vec<usize> = bounds[..rows.len()]
            .iter()
            .map(|&offset| (offset - bounds[0]) as usize)
            .collect();
        self.rows
            .write_rows(rows, Keep::All, false, &mut cursors, out)
    }
}

/// Writes `length` bytes of output from byte `seek` on of every row of an
/// array into `out`, back to back, hashing each row's encoding (null rows
/// get the empty input's; the caller zeroes them). The array must have
/// passed `problems::check`.
pub(super) fn encoded_outputs_into(
    engine: &Engine,
    mode: Mode,
    output: (usize, u64),
    array: &dyn Array,
    out: &mut [u8],
) -> Result<(), Error> {
    let framing = Framing {
        rows: &Encoding::of(array)?,
        threads: engine.cpu_threads(),
        parts: engine.threads(),
    };
    framing.hash_rows(engine, mode, output, array.len(), out)
}
