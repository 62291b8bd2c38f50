//! Digests as lowercase hex, as blake3-py's `hexdigest` writes them: one
//! output as a `str`, or a column of them as an Arrow string array
//! formatted on the engine's threads (a column of short blobs took longer
//! to format on one thread than to hash on two).

use std::sync::{Arc, Mutex, PoisonError};

use arrow_array::cast::AsArray;
use arrow_array::{Array, ArrayRef, GenericStringArray, OffsetSizeTrait};
use arrow_buffer::{Buffer, OffsetBuffer, ScalarBuffer};
use blake3_batch::{Error, ErrorKind};

/// The fewest input bytes worth a thread of their own: starting one costs
/// tens of microseconds, about as long as formatting this much.
const BYTES_PER_THREAD: usize = 256 * 1024;

/// `bytes` in lowercase hex, two digits a byte.
pub fn hex_string(bytes: &[u8]) -> String {
    let mut digits = vec![0; 2 * bytes.len()];
    hex_into(bytes, &mut digits);
    String::from_utf8(digits).expect("hex digits are ASCII")
}

/// The rows of `outputs` (a FixedSizeBinary array of digests) as hex
/// strings of twice their width, nulls kept, formatted on up to `threads`
/// threads: a `string` array, or a `large_string` one where `large` (more
/// than 2 GiB of digits).
pub fn hex_array(outputs: &ArrayRef, large: bool, threads: usize) -> Result<ArrayRef, Error> {
    match large {
        false => hex_strings::<i32>(outputs, threads),
        true => hex_strings::<i64>(outputs, threads),
    }
}

fn hex_strings<O: OffsetSizeTrait>(outputs: &ArrayRef, threads: usize) -> Result<ArrayRef, Error> {
    let outputs = outputs.as_fixed_size_binary();
    let (rows, width) = (outputs.len(), 2 * outputs.value_length() as usize);
    let too_large = || ErrorKind::OutOfMemory {
        what: format!("the hex strings ({rows} × {width} characters)"),
        bytes: rows.saturating_mul(width),
    };
    let total = rows.checked_mul(width).ok_or_else(too_large)?;
    O::from_usize(total).ok_or_else(too_large)?;
    let offsets: Vec<O> = (0..=rows).map(|row| O::usize_as(row * width)).collect();
    // Zeroed by the allocator (fresh pages from the kernel for a large
    // column), not by a pass on this thread: the threads that write the
    // digits fault the pages in.
    let mut digits = bytemuck::allocation::try_zeroed_vec(total).map_err(|()| too_large())?;
    hex_on_threads(outputs.value_data(), &mut digits, threads);
    let strings = GenericStringArray::<O>::try_new(
        OffsetBuffer::new(ScalarBuffer::from(offsets)),
        Buffer::from_vec(digits),
        outputs.nulls().cloned(),
    );
    Ok(Arc::new(strings.expect("hex digits are UTF-8 at every offset")) as ArrayRef)
}

/// [`hex_into`] split over up to `threads` threads, in pieces of at
/// least [`BYTES_PER_THREAD`] that every thread takes from a shared list
/// until none is left: where a thread cannot be started, the others (this
/// one at least) format its share.
fn hex_on_threads(bytes: &[u8], digits: &mut [u8], threads: usize) {
    let threads = threads.min(bytes.len() / BYTES_PER_THREAD).max(1);
    let piece = bytes.len().div_ceil(threads).max(1);
    let pieces = Mutex::new(bytes.chunks(piece).zip(digits.chunks_mut(2 * piece)));
    let format = || loop {
        let next = pieces.lock().unwrap_or_else(PoisonError::into_inner).next();
        let Some((bytes, digits)) = next else { break };
        hex_into(bytes, digits);
    };
    std::thread::scope(|scope| {
        for _ in 1..threads {
            let thread = std::thread::Builder::new().name("b3batch-hex".into());
            if thread.spawn_scoped(scope, format).is_err() {
                break;
            }
        }
        format();
    });
}

/// Writes `bytes` as lowercase hex into `digits`, two for each byte:
/// computed rather than looked up in a table of pairs, so that the
/// compiler makes vector code of it (as `b3batch`'s `names::hex_into`,
/// which this crate cannot reach).
fn hex_into(bytes: &[u8], digits: &mut [u8]) {
    debug_assert_eq!(digits.len(), 2 * bytes.len());
    let digit = |nibble: u8| nibble + if nibble > 9 { b'a' - 10 } else { b'0' };
    let (pairs, _) = digits.as_chunks_mut::<2>();
    for (pair, &byte) in pairs.iter_mut().zip(bytes) {
        *pair = [digit(byte >> 4), digit(byte & 15)];
    }
}
