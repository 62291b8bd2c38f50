//! `records`' output, written by a thread of its own: the kernel's copy of
//! each batch's text to a file or pipe (twice the input's size in hex)
//! then overlaps the reading, cutting and hashing of the next batch
//! instead of following it.

use std::io::{self, Write};
use std::sync::mpsc::{self, Receiver, SyncSender};
use std::thread::{self, JoinHandle};

/// Small writes are gathered up to this many bytes before they go to the
/// thread.
const GATHER: usize = 1 << 20;

/// Hands buffers of output to a thread that writes them in order.
pub struct WriterThread {
    /// Small writes not yet handed over.
    gathered: Vec<u8>,
    /// To the thread; `None` once it is told to stop. Holds one buffer
    /// while the thread writes another, so at most three are alive.
    texts: Option<SyncSender<Vec<u8>>>,
    /// Written buffers, back from the thread for reuse.
    spares: Receiver<Vec<u8>>,
    thread: Option<JoinHandle<io::Result<()>>>,
}

impl WriterThread {
    /// Starts the thread, which writes to what `open` gives it there.
    pub fn start<W: Write>(open: impl FnOnce() -> W + Send + 'static) -> io::Result<WriterThread> {
        let (texts, to_write) = mpsc::sync_channel::<Vec<u8>>(1);
        let (give_back, spares) = mpsc::channel();
        let thread = thread::Builder::new()
            .name("b3batch-writer".to_owned())
            .spawn(move || {
                let mut out = open();
                for text in to_write {
                    // Flushed each time, so that a slow stream's digests
                    // show as they are made (texts are large otherwise).
                    out.write_all(&text)?;
                    out.flush()?;
                    // Fails only once the other side stopped taking spares.
                    let _ = give_back.send(text);
                }
                Ok(())
            })?;
        Ok(WriterThread {
            gathered: Vec::new(),
            texts: Some(texts),
            spares,
            thread: Some(thread),
        })
    }

    /// A buffer to fill and [`send`](Self::send): one the thread has
    /// written, when there is one, still holding that text, to be
    /// overwritten or cleared (overwriting skips zeroing it again).
    pub fn buffer(&mut self) -> Vec<u8> {
        self.spares.try_recv().unwrap_or_default()
    }

    /// Hands `text` to the thread, after what was written before it.
    pub fn send(&mut self, text: Vec<u8>) -> io::Result<()> {
        self.send_gathered()?;
        self.hand_over(text)
    }

    /// Hands over what is left and waits for the thread to write it all;
    /// its error if it failed.
    pub fn finish(mut self) -> io::Result<()> {
        self.send_gathered()?;
        self.stop()
    }

    fn send_gathered(&mut self) -> io::Result<()> {
        if self.gathered.is_empty() {
            return Ok(());
        }
        let mut spare = self.buffer();
        spare.clear();
        let gathered = std::mem::replace(&mut self.gathered, spare);
        self.hand_over(gathered)
    }

    fn hand_over(&mut self, text: Vec<u8>) -> io::Result<()> {
        if text.is_empty() {
            return Ok(());
        }
        match &self.texts {
            Some(texts) if texts.send(text).is_ok() => Ok(()),
            // The thread stopped on an error (a closed pipe): that is why.
            _ => Err(self
                .stop()
                .err()
                .unwrap_or_else(|| io::Error::other("the output's writer thread stopped"))),
        }
    }

    /// Tells the thread to stop once it has written what it holds, and
    /// waits for it.
    fn stop(&mut self) -> io::Result<()> {
        self.texts = None;
        match self.thread.take() {
            Some(thread) => thread
                .join()
                .unwrap_or_else(|_| Err(io::Error::other("the output's writer thread panicked"))),
            None => Ok(()),
        }
    }
}

impl Write for WriterThread {
    fn write(&mut self, bytes: &[u8]) -> io::Result<usize> {
        self.gathered.extend_from_slice(bytes);
        if self.gathered.len() >= GATHER {
            self.send_gathered()?;
        }
        Ok(bytes.len())
    }

    /// Hands what was gathered to the thread (which writes it in its
    /// turn; [`WriterThread::finish`] waits for that).
    fn flush(&mut self) -> io::Result<()> {
        self.send_gathered()
    }
}

impl Drop for WriterThread {
    /// Whatever ended the run, what was handed over is written before the
    /// process exits.
    fn drop(&mut self) {
        let _ = self.send_gathered();
        let _ = self.stop();
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::{Arc, Mutex};

    /// A `Write` into a shared vector, failing after `limit` bytes.
    struct Shared {
        bytes: Arc<Mutex<Vec<u8>>>,
        limit: usize,
    }

    impl Write for Shared {
        fn write(&mut self, bytes: &[u8]) -> io::Result<usize> {
            let mut all = self.bytes.lock().unwrap();
            if all.len() + bytes.len() > self.limit {
                return Err(io::Error::new(io::ErrorKind::BrokenPipe, "closed"));
            }
            all.extend_from_slice(bytes);
            Ok(bytes.len())
        }

        fn flush(&mut self) -> io::Result<()> {
            Ok(())
        }
    }

    fn writer(limit: usize) -> (WriterThread, Arc<Mutex<Vec<u8>>>) {
        let bytes = Arc::new(Mutex::new(Vec::new()));
        let shared = Shared {
            bytes: bytes.clone(),
            limit,
        };
        (WriterThread::start(move || shared).unwrap(), bytes)
    }

    #[test]
    fn small_writes_and_buffers_come_out_in_the_order_given() {
        let (mut out, bytes) = writer(usize::MAX);
        let mut want = Vec::new();
        for round in 0..40u32 {
            // Small writes gathered, and every tenth round more than is
            // gathered before it goes to the thread.
            let small = match round % 10 {
                0 => vec![round as u8; GATHER + 5],
                _ => round.to_le_bytes().to_vec(),
            };
            out.write_all(&small).unwrap();
            want.extend_from_slice(&small);
            let mut text = out.buffer();
            text.clear();
            text.resize(round as usize * 997, round as u8);
            want.extend_from_slice(&text);
            out.send(text).unwrap();
        }
        out.write_all(b"last").unwrap();
        want.extend_from_slice(b"last");
        out.finish().unwrap();
        assert!(*bytes.lock().unwrap() == want);
    }

    #[test]
    fn a_failed_write_comes_back_as_its_error() {
        let (mut out, bytes) = writer(10_000);
        let error = (0..100)
            .find_map(|_| out.send(vec![7; 3000]).err())
            .or_else(|| out.finish().err())
            .expect("writing past the limit fails");
        assert_eq!(error.kind(), io::ErrorKind::BrokenPipe);
        assert_eq!(bytes.lock().unwrap().len(), 9000);
    }

    #[test]
    fn what_was_handed_over_is_written_when_the_writer_is_dropped() {
        let (mut out, bytes) = writer(usize::MAX);
        out.write_all(b"gathered").unwrap();
        out.send(b" sent".to_vec()).unwrap();
        drop(out);
        assert_eq!(&*bytes.lock().unwrap(), b"gathered sent");
    }
}
