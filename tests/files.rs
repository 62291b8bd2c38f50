//! `Engine::hash_files` and `Engine::file_hasher`: files named by their
//! paths, small ones batched and large ones streamed, against `blake3` in
//! every mode on the CPU and the GPU; the batch's limits on bytes and
//! files; files that cannot be hashed, each with its typed error among the
//! others' digests; results in the order pushed; a caller that stops.

mod common;

use std::fs;
use std::io;
use std::path::{Path, PathBuf};

use blake3_batch::{Backend, Engine, Error, ErrorKind, FileDigest, Mode};
use common::{gpu_engine, read_xof, reference, reference_xof, xorshift};

/// Files over this size are read in pieces (`src/engine/files.rs`)...
const READ_PIECE: usize = 1 << 20;
/// ...files up to this size are batched, larger ones streamed...
const SMALL_FILE: usize = 64 << 20;
/// ...and a batch holds at most this many files.
const BATCH_FILES: usize = 16 * 1024;

const KEY: [u8; 32] = [0x3e; 32];

fn modes() -> [Mode<'static>; 3] {
    [
        Mode::Hash,
        Mode::KeyedHash(&KEY),
        Mode::DeriveKey("blake3-batch files test"),
    ]
}

fn cpu() -> Engine {
    Engine::builder()
        .backend(Backend::Cpu)
        .threads(2)
        .build()
        .unwrap()
}

/// Writes a file of `len` bytes (distinct for each `seed`) under `dir`.
fn write_file(dir: &Path, name: &str, len: usize, seed: u64) -> PathBuf {
    let path = dir.join(name);
    let mut next = xorshift(seed | 1);
    let bytes: Vec<u8> = (0..len).map(|_| next() as u8).collect();
    fs::write(&path, bytes).unwrap();
    path
}

/// Asserts that every result is the `blake3` digest of its file.
fn assert_digests(name: &str, mode: Mode, paths: &[PathBuf], digests: &[FileDigest]) {
    let contents: Vec<Vec<u8>> = paths.iter().map(|path| fs::read(path).unwrap()).collect();
    assert_digests_of(name, mode, paths, &contents, digests);
}

fn assert_digests_of(
    name: &str,
    mode: Mode,
    paths: &[PathBuf],
    contents: &[Vec<u8>],
    digests: &[FileDigest],
) {
    assert_eq!(digests.len(), paths.len(), "{name}");
    for ((path, content), digest) in paths.iter().zip(contents).zip(digests) {
        let len = content.len();
        match digest {
            Ok(digest) => assert_eq!(
                *digest,
                reference(mode, content),
                "{name}: {path:?} ({len} bytes), {mode:?}"
            ),
            Err(error) => panic!("{name}: {path:?} ({len} bytes): {error}"),
        }
    }
}

/// Asserts that every extended output is `blake3`'s for its file's
/// `contents` (100 bytes of it: past one output block).
fn assert_outputs_of(
    name: &str,
    mode: Mode,
    contents: &[Vec<u8>],
    outputs: Vec<Result<blake3::OutputReader, Error>>,
) {
    assert_eq!(outputs.len(), contents.len(), "{name}");
    for (index, (content, output)) in contents.iter().zip(outputs).enumerate() {
        let len = content.len();
        match output {
            Ok(output) => assert_eq!(
                read_xof(output, 100),
                reference_xof(mode, content, 100),
                "{name}: file {index} ({len} bytes), {mode:?}, extended"
            ),
            Err(error) => panic!("{name}: file {index} ({len} bytes): {error}"),
        }
    }
}

/// Asserts that each engine's digests and extended outputs of `paths` in
/// every mode are `blake3`'s of their `contents`.
fn assert_every_mode(engines: &[(String, Engine)], paths: &[PathBuf], contents: &[Vec<u8>]) {
    for (name, engine) in engines {
        for mode in modes() {
            let digests = engine.hash_files(mode, paths);
            assert_digests_of(name, mode, paths, contents, &digests);
            let outputs = engine.hash_files_xof(mode, paths);
            assert_outputs_of(name, mode, contents, outputs);
        }
    }
}

/// Lengths batched whole and in pieces, and streamed: empty, one block,
/// one chunk and a byte over, a piece and a byte either side, the largest
/// batched file (a batch of its own) and a byte more (a stream of four CPU
/// windows and a byte).
fn lengths() -> Vec<usize> {
    vec![
        0,
        1,
        64,
        1024,
        1025,
        5000,
        READ_PIECE - 1,
        READ_PIECE,
        READ_PIECE + 1,
        3 * READ_PIECE + 7,
        SMALL_FILE,
        SMALL_FILE + 1,
    ]
}

#[test]
fn batched_and_streamed_files_match_blake3_on_the_cpu_and_the_gpu() {
    let dir = tempfile::tempdir().unwrap();
    // Small and large files interleaved, so batches end at every stream.
    let paths: Vec<PathBuf> = lengths()
        .into_iter()
        .enumerate()
        .flat_map(|(index, len)| {
            let small = write_file(dir.path(), &format!("s{index}"), index * 7, index as u64);
            let file = write_file(dir.path(), &format!("f{index}"), len, 100 + index as u64);
            [small, file]
        })
        .collect();
    let contents: Vec<Vec<u8>> = paths.iter().map(|path| fs::read(path).unwrap()).collect();
    let mut engines = vec![("cpu".to_owned(), cpu())];
    engines.push((
        "auto".to_owned(),
        Engine::builder().threads(2).build().unwrap(),
    ));
    engines.push((
        "cpu, one thread".to_owned(),
        Engine::builder().threads(1).build().unwrap(),
    ));
    if let Some(gpu) = gpu_engine(None) {
        engines.push(("gpu".to_owned(), gpu));
    }
    assert_every_mode(&engines, &paths, &contents);
}

#[test]
fn batches_end_at_their_limits_on_files_and_bytes() {
    let dir = tempfile::tempdir().unwrap();
    let engine = cpu();
    // More files than a batch holds, and than are opened at a time.
    let many: Vec<PathBuf> = (0..BATCH_FILES + 300)
        .map(|index| write_file(dir.path(), &format!("m{index}"), index % 97, index as u64))
        .collect();
    assert_digests(
        "files",
        Mode::Hash,
        &many,
        &engine.hash_files(Mode::Hash, &many),
    );
    // More bytes than a batch holds on the GPU (64 MiB), so several
    // batches on the CPU (16 MiB), in files of about a piece.
    let count = SMALL_FILE / READ_PIECE + 3;
    let large: Vec<PathBuf> = (0..count)
        .map(|index| {
            let len = READ_PIECE + 4 - index;
            write_file(dir.path(), &format!("l{index}"), len, index as u64)
        })
        .collect();
    let gpu = gpu_engine(None).map(|gpu| ("gpu", gpu));
    for (name, engine) in [("cpu", engine)].into_iter().chain(gpu) {
        let digests = engine.hash_files(Mode::Hash, &large);
        assert_digests(name, Mode::Hash, &large, &digests);
    }
}

#[test]
fn the_gpu_takes_files_up_to_a_batchs_bytes_together() {
    let Some(gpu) = gpu_engine(None) else {
        return;
    };
    let dir = tempfile::tempdir().unwrap();
    // Two files batched on the GPU, but not together (70 MiB), then a
    // small one batched with the second.
    let paths = [
        write_file(dir.path(), "a", 40 << 20, 1),
        write_file(dir.path(), "b", 30 << 20, 2),
        write_file(dir.path(), "c", 3, 3),
    ];
    let digests = gpu.hash_files(Mode::Hash, &paths);
    assert_digests("gpu", Mode::Hash, &paths, &digests);
    // Had "b" streamed, the last batch would have been "c" alone.
    let last = gpu.last_gpu_timings().expect("the GPU hashed the files");
    assert!(last.bytes_uploaded >= (30 << 20) + 3, "{last:?}");
    // One over a batch streams.
    let over = [write_file(dir.path(), "d", SMALL_FILE + 1, 4)];
    assert_digests(
        "gpu stream",
        Mode::Hash,
        &over,
        &gpu.hash_files(Mode::Hash, &over),
    );
}

fn io_kind(digest: &FileDigest) -> Option<io::ErrorKind> {
    match digest.as_ref().map_err(Error::kind) {
        Err(ErrorKind::File { io_kind, .. }) => Some(*io_kind),
        _ => None,
    }
}

#[test]
fn files_that_cannot_be_hashed_get_their_error_among_the_others_digests() {
    let dir = tempfile::tempdir().unwrap();
    let good = write_file(dir.path(), "good", 3000, 1);
    let large = write_file(dir.path(), "large", 2 * READ_PIECE + 5, 2);
    let missing = dir.path().join("missing");
    let subdir = dir.path().join("sub");
    fs::create_dir(&subdir).unwrap();
    let paths = vec![
        missing.clone(),
        good.clone(),
        subdir.clone(),
        large.clone(),
        missing.clone(),
    ];
    for (name, engine) in [("cpu", cpu())]
        .into_iter()
        .chain(gpu_engine(None).map(|gpu| ("gpu", gpu)))
    {
        let digests = engine.hash_files(Mode::Hash, &paths);
        assert_eq!(
            io_kind(&digests[0]),
            Some(io::ErrorKind::NotFound),
            "{name}"
        );
        assert_eq!(
            io_kind(&digests[2]),
            Some(io::ErrorKind::IsADirectory),
            "{name}"
        );
        assert_eq!(
            io_kind(&digests[4]),
            Some(io::ErrorKind::NotFound),
            "{name}"
        );
        for index in [1, 3] {
            let expected = reference(Mode::Hash, &fs::read(&paths[index]).unwrap());
            assert_eq!(digests[index], Ok(expected), "{name}: {index}");
        }
        // The message names the file and what went wrong.
        let message = digests[2].as_ref().unwrap_err().to_string();
        assert!(
            message.starts_with(&format!("{}: ", subdir.display())),
            "{message}"
        );
        assert!(message.contains("is a directory"), "{message}");
        let message = digests[0].as_ref().unwrap_err().to_string();
        assert!(
            message.starts_with(&format!("{}: ", missing.display())),
            "{message}"
        );
        // Extended outputs fail alike, the others' outputs all the same.
        let outputs = engine.hash_files_xof(Mode::Hash, &paths);
        for (index, (output, digest)) in outputs.into_iter().zip(&digests).enumerate() {
            match (output, digest) {
                (Ok(output), Ok(_)) => {
                    let content = fs::read(&paths[index]).unwrap();
                    let expected = reference_xof(Mode::Hash, &content, 80);
                    assert_eq!(read_xof(output, 80), expected, "{name}: {index}");
                }
                (Err(extended), Err(error)) => assert_eq!(extended, *error, "{name}: {index}"),
                _ => panic!("{name}: file {index} is hashed one way and not the other"),
            }
        }
    }
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt;
        // Root reads any file: only a refused open can be checked.
        let locked = write_file(dir.path(), "locked", 10, 3);
        fs::set_permissions(&locked, fs::Permissions::from_mode(0o000)).unwrap();
        if fs::read(&locked).is_err() {
            let digests = cpu().hash_files(Mode::Hash, [&locked, &good]);
            assert_eq!(io_kind(&digests[0]), Some(io::ErrorKind::PermissionDenied));
            assert!(digests[1].is_ok());
        }
    }
}

#[cfg(unix)]
#[test]
fn a_fifo_is_streamed_to_its_end() {
    use common::vector_input;
    use std::io::Write;

    let dir = tempfile::tempdir().unwrap();
    let fifo = dir.path().join("fifo");
    let status = std::process::Command::new("mkfifo")
        .arg(&fifo)
        .status()
        .unwrap();
    assert!(status.success());
    let data = vector_input(3 * READ_PIECE + 11);
    let writer = {
        let (fifo, data) = (fifo.clone(), data.clone());
        std::thread::spawn(move || fs::File::create(fifo).unwrap().write_all(&data).unwrap())
    };
    let small = write_file(dir.path(), "small", 10, 1);
    let digests = cpu().hash_files(Mode::Hash, [&small, &fifo]);
    writer.join().unwrap();
    assert_eq!(digests[1], Ok(reference(Mode::Hash, &data)));
    assert_eq!(
        digests[0],
        Ok(reference(Mode::Hash, &fs::read(&small).unwrap()))
    );
}

/// Linux's `/proc` files say they hold 0 bytes and its `/sys` files 4096,
/// whatever their reads give, and stay so: each is hashed as far as its
/// reads go (as `cat` and `b3sum` read it), batched among ordinary files
/// or alone, not refused as a file that changed.
#[cfg(target_os = "linux")]
#[test]
fn files_whose_length_is_no_guide_are_read_to_their_end() {
    let mut pseudo = vec![PathBuf::from("/proc/version")];
    // Where /sys is mounted (in most containers, read-only).
    let sys = PathBuf::from("/sys/devices/system/cpu/online");
    if sys.exists() {
        pseudo.push(sys);
    }
    for path in &pseudo {
        let said = fs::metadata(path).unwrap().len() as usize;
        let read = fs::read(path).unwrap().len();
        assert!(
            read > 0 && read != said,
            "{path:?} says {said} bytes and gives {read}"
        );
    }
    let dir = tempfile::tempdir().unwrap();
    let mut paths = vec![write_file(dir.path(), "before", 100, 1)];
    paths.extend(pseudo.iter().cloned());
    paths.push(write_file(dir.path(), "after", 3000, 2));
    let contents: Vec<Vec<u8>> = paths.iter().map(|path| fs::read(path).unwrap()).collect();
    let mut engines = vec![("cpu".to_owned(), cpu())];
    if let Some(gpu) = gpu_engine(None) {
        engines.push(("gpu".to_owned(), gpu));
    }
    assert_every_mode(&engines, &paths, &contents);
    for (name, engine) in &engines {
        for mode in modes() {
            for (path, content) in paths.iter().zip(&contents) {
                let file = fs::File::open(path).unwrap();
                let digest = engine.hash_file(mode, &file);
                assert_eq!(digest, Ok(reference(mode, content)), "{name}: {path:?}");
                let output = engine.hash_file_xof(mode, &file).unwrap();
                assert_eq!(read_xof(output, 100), reference_xof(mode, content, 100));
            }
        }
    }
}

#[test]
fn a_file_hasher_emits_in_order_stops_when_told_and_takes_more_after_finish() {
    let dir = tempfile::tempdir().unwrap();
    let engine = cpu();
    let lens = [10, SMALL_FILE + 1, 0, 700, 2 * READ_PIECE, 5];
    let paths: Vec<PathBuf> = lens
        .iter()
        .enumerate()
        .map(|(index, &len)| write_file(dir.path(), &format!("{index}"), len, index as u64))
        .collect();

    // Each digest with its token, in order, across streams and batches.
    let mut files = engine.file_hasher(Mode::Hash);
    let mut seen = Vec::new();
    let mut emit = |token: usize, digest: FileDigest| {
        seen.push((token, digest));
        Ok::<(), ()>(())
    };
    for (token, path) in paths.iter().enumerate() {
        files.push(path, token, &mut emit).unwrap();
    }
    files.finish(&mut emit).unwrap();
    // Used again after finishing: the same files, and nothing left over.
    for (token, path) in paths.iter().enumerate().take(2) {
        files.push(path, token + 100, &mut emit).unwrap();
    }
    files.finish(&mut emit).unwrap();
    let tokens: Vec<usize> = seen.iter().map(|(token, _)| *token).collect();
    assert_eq!(tokens, [0, 1, 2, 3, 4, 5, 100, 101]);
    for (token, digest) in &seen {
        let expected = reference(Mode::Hash, &fs::read(&paths[token % 100]).unwrap());
        assert_eq!(*digest, Ok(expected), "{token}");
    }

    // An emit that fails stops the hasher with its error.
    let mut emitted = 0;
    let mut stop_after_two = |_: usize, _: FileDigest| {
        emitted += 1;
        match emitted {
            2 => Err("stop"),
            _ => Ok(()),
        }
    };
    let mut files = engine.file_hasher(Mode::Hash);
    for (token, path) in paths.iter().enumerate() {
        files.push(path, token, &mut stop_after_two).unwrap();
    }
    assert_eq!(files.finish(&mut stop_after_two), Err("stop"));
    assert_eq!(emitted, 2);
}
