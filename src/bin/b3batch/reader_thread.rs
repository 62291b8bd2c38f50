//! `records`' input, read by a thread of its own into two buffers in turn:
//! the kernel's copy of the next piece overlaps the cutting and hashing of
//! this one instead of coming before it.

use std::io::{self, Read};
use std::sync::mpsc::{self, Receiver, SyncSender};
use std::thread;

use blake3_batch::PinnedBuffer;

use crate::options::CliError;

/// A read of at least this many bytes says that more input is waiting (a
/// fast writer, or a file), so the thread reads on into the same piece; a
/// shorter one hands the piece over at once, so that a slow stream's
/// records are hashed as they arrive.
const MORE_WAITING: usize = 16 << 10;

/// A piece of input: the buffer and how many bytes of it were read (0 once
/// the input has ended).
type Piece = (PinnedBuffer, usize);

/// Reads the input on its thread, a piece at a time.
pub struct ReaderThread {
    pieces: Receiver<Result<Piece, CliError>>,
    empties: SyncSender<PinnedBuffer>,
}

impl ReaderThread {
    /// Starts the thread, reading `input` into `buffers` in turn. The
    /// thread is left to end by itself: once the input ends, or once this
    /// side stops taking pieces, after the read it is in (which may wait on
    /// a slow stream).
    pub fn start(
        input: impl Read + Send + 'static,
        buffers: [PinnedBuffer; 2],
    ) -> Result<ReaderThread, CliError> {
        let (empties, to_fill) = mpsc::sync_channel::<PinnedBuffer>(buffers.len());
        let (give, pieces) = mpsc::sync_channel(buffers.len());
        for buffer in buffers {
            empties.send(buffer).expect("room for every buffer");
        }
        thread::Builder::new()
            .name("b3batch-reader".to_owned())
            .spawn(move || {
                let mut input = input;
                for mut buffer in to_fill {
                    // What was read before an error is hashed before the
                    // error is reported, as with one read at a time.
                    let (read, error) = fill(&mut input, &mut buffer);
                    let sent = match (read, error) {
                        (0, None) => give.send(Ok((buffer, 0))).map(|()| true),
                        (0, Some(error)) => give.send(Err(error)).map(|()| true),
                        (read, None) => give.send(Ok((buffer, read))).map(|()| false),
                        (read, Some(error)) => (give.send(Ok((buffer, read))))
                            .and_then(|()| give.send(Err(error)))
                            .map(|()| true),
                    };
                    // Ended, or this side stopped taking pieces.
                    if !matches!(sent, Ok(false)) {
                        return;
                    }
                }
            })
            .map_err(|error| CliError::Message(format!("starting the reader thread: {error}")))?;
        Ok(ReaderThread { pieces, empties })
    }

    /// The next piece, or the error that stopped the reading.
    pub fn next(&mut self) -> Result<Piece, CliError> {
        self.pieces.recv().unwrap_or_else(|_| {
            Err(CliError::Message(
                "reading the input: the reader thread stopped".to_owned(),
            ))
        })
    }

    /// Hands a buffer whose piece is done with back to be filled again.
    pub fn recycle(&mut self, buffer: PinnedBuffer) {
        // Refused only once the thread has ended, when it needs no buffer.
        let _ = self.empties.send(buffer);
    }
}

/// Reads into `buffer` until it is full, the input ends, or a short read
/// says that no more is waiting; returns the bytes read (0: the end), and
/// the error that stopped it early.
fn fill(input: &mut impl Read, buffer: &mut [u8]) -> (usize, Option<CliError>) {
    let mut filled = 0;
    while filled < buffer.len() {
        match input.read(&mut buffer[filled..]) {
            Ok(read) => {
                filled += read;
                if read < MORE_WAITING {
                    break;
                }
            }
            Err(error) if error.kind() == io::ErrorKind::Interrupted => {}
            Err(error) => {
                let error = CliError::Message(format!("reading the input: {error}"));
                return (filled, Some(error));
            }
        }
    }
    (filled, None)
}
