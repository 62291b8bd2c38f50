//! Reads at a position in a file, leaving its cursor to the caller: Unix's
//! `pread`, and Windows' `ReadFile` at an offset. They let the engine's
//! threads read pieces of one file side by side (`input.rs`, `files.rs`),
//! and `Engine::hash_file` read a file from its start whatever its cursor.
//! Other platforms have none: there a file is read in turn, as a reader.

use std::fs::File;
use std::io;

/// Reads into `buffer` from byte `at` of `file`: the bytes read, 0 at or
/// past its end. On Windows the cursor moves to where the read ended.
pub(super) fn read_at(file: &File, buffer: &mut [u8], at: u64) -> io::Result<usize> {
    #[cfg(unix)]
    return std::os::unix::fs::FileExt::read_at(file, buffer, at);
    #[cfg(windows)]
    return std::os::windows::fs::FileExt::seek_read(file, buffer, at);
}

/// Fills `buffer` from byte `at` of `file`; `UnexpectedEof` where the file
/// ends first.
pub(super) fn read_exact_at(file: &File, mut buffer: &mut [u8], mut at: u64) -> io::Result<()> {
    while !buffer.is_empty() {
        match read_at(file, buffer, at) {
            Ok(0) => return Err(io::ErrorKind::UnexpectedEof.into()),
            Ok(read) => {
                buffer = &mut buffer[read..];
                at += read as u64;
            }
            Err(error) if error.kind() == io::ErrorKind::Interrupted => {}
            Err(error) => return Err(error),
        }
    }
    Ok(())
}
