//! `Engine::hash_reader` and `Engine::hash_file` (and their extended
//! outputs, `_xof`): one input of any length,
//! read in windows, against `blake3` in every mode on the CPU and the GPU,
//! at the lengths where windows and subtrees begin and end; reads that come
//! short or are interrupted; a reader that fails; files whose cursor is
//! not at their start, and files that are not regular.

mod common;

use std::fs::File;
use std::io::{self, Read, Seek, SeekFrom};

use blake3_batch::{Backend, Engine, ErrorKind, Mode};
use common::{gpu_engine, read_xof, reference, reference_xof, vector_input};

/// The CPU's windows (`src/engine/stream.rs`).
const CPU_WINDOW: usize = 16 << 20;
/// The CPU's subtrees.
const CPU_PIECE: usize = 256 * 1024;
/// A GPU memory budget whose slabs hash subtrees of 16 KiB (in 20 KiB of
/// data, room for one taken from a pinned buffer as it lies)...
const SMALL_BUDGET: u64 = 300 * 1024;
const GPU_PIECE: usize = 16 * 1024;
/// ...four to a window.
const GPU_WINDOW: usize = 4 * GPU_PIECE;

const KEY: [u8; 32] = [0x5c; 32];

fn modes() -> [Mode<'static>; 3] {
    [
        Mode::Hash,
        Mode::KeyedHash(&KEY),
        Mode::DeriveKey("blake3-batch reader test"),
    ]
}

/// Lengths around the windows and subtrees of `window` bytes cut into
/// pieces of `piece`: an input that fills one window exactly (a root of
/// its own), one byte into the next, a last subtree of one chunk (hashed
/// on the host by the GPU path), and several windows.
fn boundary_lengths(window: usize, piece: usize) -> Vec<usize> {
    vec![
        0,
        1,
        1024,
        1025,
        window - 1,
        window,
        window + 1,
        window + 1024,
        window + 1025,
        window + piece,
        window + piece + 1,
        2 * window,
        3 * window + piece + 1025,
    ]
}

/// A CPU engine on two threads and, where there is an adapter, a GPU one
/// with [`SMALL_BUDGET`]: each with its window and subtree lengths.
fn cpu_and_gpu() -> Vec<(&'static str, Engine, usize, usize)> {
    let cpu = Engine::builder()
        .backend(Backend::Cpu)
        .threads(2)
        .build()
        .unwrap();
    let mut engines = vec![("cpu", cpu, CPU_WINDOW, CPU_PIECE)];
    if let Some(gpu) = gpu_engine(Some(SMALL_BUDGET)) {
        engines.push(("gpu", gpu, GPU_WINDOW, GPU_PIECE));
    }
    engines
}

fn check(engine: &Engine, name: &str, data: &[u8], lengths: &[usize]) {
    for &len in lengths {
        let input = &data[..len];
        for mode in modes() {
            let digest = engine.hash_reader(mode, input).unwrap();
            assert_eq!(
                digest,
                reference(mode, input),
                "{name}: {len} bytes, {mode:?}"
            );
            // Past two output blocks of the root.
            let output = engine.hash_reader_xof(mode, input).unwrap();
            assert_eq!(
                read_xof(output, 131),
                reference_xof(mode, input, 131),
                "{name}: {len} bytes, {mode:?}, extended"
            );
        }
    }
}

#[test]
fn cpu_streams_match_blake3_at_window_and_subtree_boundaries() {
    let lengths = boundary_lengths(CPU_WINDOW, CPU_PIECE);
    let data = vector_input(*lengths.iter().max().unwrap());
    for threads in [1, 2] {
        let engine = Engine::builder()
            .backend(Backend::Cpu)
            .threads(threads)
            .build()
            .unwrap();
        check(&engine, &format!("cpu/{threads}"), &data, &lengths);
    }
}

#[test]
fn gpu_streams_match_blake3_at_window_and_subtree_boundaries() {
    let Some(engine) = gpu_engine(Some(SMALL_BUDGET)) else {
        return;
    };
    let mut lengths = boundary_lengths(GPU_WINDOW, GPU_PIECE);
    // Sixteen windows, and the CPU's window on the GPU.
    lengths.extend([(1 << 20) + 3, CPU_WINDOW + 1]);
    let data = vector_input(*lengths.iter().max().unwrap());
    check(&engine, "gpu", &data, &lengths);

    // The windows after the first went through the slabs, from pinned
    // memory where the GPU pins it.
    let input = &data[..5 * GPU_WINDOW + 7];
    engine.hash_reader(Mode::Hash, input).unwrap();
    let timings = engine.last_gpu_timings().unwrap();
    assert!(timings.slabs >= 5, "{timings:?}");
    if engine.pinned_buffer(64).unwrap().is_pinned() {
        assert!(
            timings.bytes_in_place >= 4 * GPU_WINDOW as u64,
            "{timings:?}"
        );
    }
}

/// At the default budget: subtrees of 16 MiB, windows of 64 MiB.
#[test]
fn a_stream_over_two_default_windows_is_hashed_on_the_gpu() {
    let Some(engine) = gpu_engine(None) else {
        return;
    };
    let data = vector_input((129 << 20) + 1025);
    for len in [64 << 20, data.len()] {
        let digest = engine.hash_reader(Mode::Hash, &data[..len]).unwrap();
        assert_eq!(digest, reference(Mode::Hash, &data[..len]), "{len} bytes");
    }
    let timings = engine.last_gpu_timings().unwrap();
    if engine.pinned_buffer(64).unwrap().is_pinned() {
        assert!(timings.bytes_in_place >= 64 << 20, "{timings:?}");
    }
}

/// Gives at most `most` bytes a read, and fails every third read with
/// `Interrupted`, which is to be retried.
struct Trickle<'a> {
    data: &'a [u8],
    most: usize,
    reads: usize,
}

impl Read for Trickle<'_> {
    fn read(&mut self, buffer: &mut [u8]) -> io::Result<usize> {
        self.reads += 1;
        if self.reads.is_multiple_of(3) {
            return Err(io::ErrorKind::Interrupted.into());
        }
        let len = buffer.len().min(self.most).min(self.data.len());
        buffer[..len].copy_from_slice(&self.data[..len]);
        self.data = &self.data[len..];
        Ok(len)
    }
}

#[test]
fn short_and_interrupted_reads_give_the_same_digest() {
    for (name, engine, window, _) in cpu_and_gpu() {
        let data = vector_input(2 * window + 1029);
        for len in [window - 1, window, window + 1, data.len()] {
            for most in [1, 4093, 1 << 20] {
                if len / most > 100_000 {
                    continue;
                }
                let reader = Trickle {
                    data: &data[..len],
                    most,
                    reads: 0,
                };
                let digest = engine.hash_reader(Mode::Hash, reader).unwrap();
                let expected = reference(Mode::Hash, &data[..len]);
                assert_eq!(digest, expected, "{name}: {len} bytes, {most} a read");
            }
        }
    }
}

/// How a [`Failing`] reader ends once it has given its `data`.
#[derive(Clone, Copy, Debug)]
enum Ending {
    /// With an I/O error.
    Fails,
    /// With a read that says it filled more than its buffer: a `Read` that
    /// breaks its contract, on which std's `read_to_end` would panic.
    Overstates,
}

/// Gives `data`, then ends as `ending` says.
struct Failing<'a> {
    data: &'a [u8],
    ending: Ending,
}

impl Read for Failing<'_> {
    fn read(&mut self, buffer: &mut [u8]) -> io::Result<usize> {
        if self.data.is_empty() {
            return match self.ending {
                Ending::Fails => Err(io::Error::other("the disk went away")),
                Ending::Overstates => Ok(buffer.len() + 1),
            };
        }
        let len = buffer.len().min(self.data.len());
        buffer[..len].copy_from_slice(&self.data[..len]);
        self.data = &self.data[len..];
        Ok(len)
    }
}

#[test]
fn a_reader_that_fails_gives_a_read_error_and_no_digest() {
    let endings = [
        (Ending::Fails, "the disk went away"),
        (Ending::Overstates, "more than the buffer holds"),
    ];
    for (name, engine, window, _) in cpu_and_gpu() {
        let data = vector_input(3 * window);
        // In the first window, right after it, and in a later one.
        let lengths = [0, 10, window, window + 1, 2 * window + 5];
        for ((ending, reason_says), len) in endings
            .into_iter()
            .flat_map(|ending| lengths.map(|len| (ending, len)))
        {
            let reader = || Failing {
                data: &data[..len],
                ending,
            };
            let error = engine
                .hash_reader(Mode::Hash, reader())
                .expect_err("the reader fails");
            let extended = engine
                .hash_reader_xof(Mode::Hash, reader())
                .expect_err("the reader fails");
            assert_eq!(extended.kind(), error.kind(), "{name}: {len}");
            match error.kind() {
                ErrorKind::Read { bytes, reason } => {
                    assert_eq!(*bytes, len as u64, "{name}: {len}");
                    assert!(reason.contains(reason_says), "{reason}");
                }
                other => panic!("{name}: {len}: {other:?}"),
            }
            assert!(error.to_string().contains("no digest"), "{error}");
        }
    }
}

/// Files at the window boundaries (read in pieces at their positions, on
/// the engine's threads) give what their bytes read as a reader give, from
/// the file's start whatever its cursor, which stays where it was (on
/// Windows, reads at a position move it, and the engine puts it back).
#[test]
fn files_match_blake3_at_window_boundaries_from_their_start() {
    let dir = tempfile::tempdir().unwrap();
    for (name, engine, window, piece) in cpu_and_gpu() {
        let lengths = boundary_lengths(window, piece);
        let data = vector_input(*lengths.iter().max().unwrap());
        for len in lengths {
            let path = dir.path().join(format!("{name}-{len}"));
            std::fs::write(&path, &data[..len]).unwrap();
            let mut file = File::open(&path).unwrap();
            file.seek(SeekFrom::Start(len as u64 / 2)).unwrap();
            for mode in modes() {
                let digest = engine.hash_file(mode, &file).unwrap();
                let expected = reference(mode, &data[..len]);
                assert_eq!(digest, expected, "{name}: {len} bytes, {mode:?}");
                let output = read_xof(engine.hash_file_xof(mode, &file).unwrap(), 100);
                let expected = reference_xof(mode, &data[..len], 100);
                assert_eq!(output, expected, "{name}: {len} bytes, {mode:?}, extended");
                let cursor = file.stream_position().unwrap();
                assert_eq!(
                    cursor,
                    len as u64 / 2,
                    "{name}: {len} bytes, the cursor moved"
                );
            }
        }
    }
}

/// Files that are not regular are read as readers: /dev/null is empty,
/// and a pipe gives what was written into it.
#[cfg(unix)]
#[test]
fn files_that_are_not_regular_are_read_in_turn() {
    use std::io::Write;

    let engine = Engine::builder().backend(Backend::Cpu).build().unwrap();
    let null = File::open("/dev/null").unwrap();
    let digest = engine.hash_file(Mode::Hash, &null).unwrap();
    assert_eq!(digest, reference(Mode::Hash, b""));

    let data = vector_input(CPU_WINDOW + 5000);
    let mut child = std::process::Command::new("cat")
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    let mut stdin = child.stdin.take().unwrap();
    let writer = {
        let data = data.clone();
        std::thread::spawn(move || stdin.write_all(&data).unwrap())
    };
    let stdout = child.stdout.take().unwrap();
    let pipe = File::from(std::os::fd::OwnedFd::from(stdout));
    let digest = engine.hash_file(Mode::Hash, &pipe).unwrap();
    writer.join().unwrap();
    child.wait().unwrap();
    assert_eq!(digest, reference(Mode::Hash, &data));
}
