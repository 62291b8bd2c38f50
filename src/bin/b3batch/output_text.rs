//! The text `records` writes for a batch of outputs (a hex line each, or
//! the raw bytes), made on as many threads as the engine hashes with and
//! handed at once to the thread that writes it. One thread formatting and
//! writing a line at a time took as long as hashing short records on one,
//! so it capped `records` whatever the core count.

use std::io::{self, Write};
use std::ops::Range;

use rayon::prelude::*;

use crate::files::Encoding;
use crate::names::hex_into;
use crate::writer_thread::WriterThread;

/// Bytes of text one thread formats at a time, about: enough to outweigh
/// handing the work out, small enough that every thread gets some.
const TEXT_PER_TASK: usize = 64 << 10;

/// Writes bytes `range` of each `stride`-byte output in `outputs` to
/// `out`: a lowercase hex line each, or the bytes themselves. `stride` is
/// at least 1 (outputs of no bytes have no text to cut from them: see
/// [`write_empty`]). Formats on `pool`'s threads, or with none on the
/// caller's.
pub fn write_outputs(
    pool: Option<&rayon::ThreadPool>,
    encoding: Encoding,
    (outputs, stride, range): (&[u8], usize, Range<usize>),
    out: &mut WriterThread,
) -> io::Result<()> {
    debug_assert!(stride > 0 && range.end <= stride && outputs.len().is_multiple_of(stride));
    if encoding == Encoding::Raw && range == (0..stride) {
        return out.write_all(outputs);
    }
    let width = match encoding {
        Encoding::Hex => 2 * range.len() + 1,
        Encoding::Raw => range.len(),
    };
    // Raw outputs of no bytes: nothing to write.
    if width == 0 {
        return Ok(());
    }
    let count = outputs.len() / stride;
    // Every byte is overwritten below, so a recycled buffer is only cut
    // or grown, not zeroed again (that cost a twentieth of `--lines`).
    let mut text = out.buffer();
    text.resize(count * width, 0);
    let per_task = (TEXT_PER_TASK / width).max(1);
    let format = |(text, outputs): (&mut [u8], &[u8])| {
        let lines = text.chunks_exact_mut(width);
        for (line, output) in lines.zip(outputs.chunks_exact(stride)) {
            let bytes = &output[range.clone()];
            match encoding {
                Encoding::Hex => {
                    let (digits, newline) = line.split_at_mut(2 * bytes.len());
                    hex_into(bytes, digits);
                    newline[0] = b'\n';
                }
                Encoding::Raw => line.copy_from_slice(bytes),
            }
        }
    };
    match pool {
        Some(pool) if count > per_task => pool.install(|| {
            let texts = text.par_chunks_mut(per_task * width);
            texts
                .zip(outputs.par_chunks(per_task * stride))
                .for_each(format);
        }),
        _ => {
            let texts = text.chunks_mut(per_task * width);
            texts
                .zip(outputs.chunks(per_task * stride))
                .for_each(format);
        }
    }
    out.send(text)
}

/// Writes `count` outputs of no bytes: an empty line each in hex, nothing
/// raw.
pub fn write_empty(encoding: Encoding, count: usize, out: &mut WriterThread) -> io::Result<()> {
    match encoding {
        Encoding::Hex => {
            let mut text = out.buffer();
            text.clear();
            text.resize(count, b'\n');
            out.send(text)
        }
        Encoding::Raw => Ok(()),
    }
}
