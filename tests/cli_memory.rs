//! The `b3batch` binary's peak memory, in a test binary of its own: a child
//! spawned from a process inherits, in its peak resident size, the size
//! its parent had when it was spawned (the child runs in the parent's
//! memory until it execs), so beside tests that hold hundreds of MiB (as
//! `tests/cli.rs` has) the figure measured the test process, not
//! `b3batch`. Here the parent stays small.
#![cfg(target_os = "linux")]

mod common;

use std::fs;
use std::io::{Read, Write};
use std::process::{Command, Stdio};

use common::vector_input;

fn b3batch() -> Command {
    Command::new(env!("CARGO_BIN_EXE_b3batch"))
}

#[cfg(target_os = "linux")]
#[test]
fn a_fifo_is_streamed_in_bounded_memory_not_read_whole() {
    use std::os::unix::ffi::OsStrExt;
    let dir = tempfile::tempdir().unwrap();
    let fifo = dir.path().join("fifo");
    let name = std::ffi::CString::new(fifo.as_os_str().as_bytes()).unwrap();
    // SAFETY: a valid NUL-terminated path.
    assert_eq!(unsafe { libc::mkfifo(name.as_ptr(), 0o600) }, 0);
    // 256 MiB through the FIFO, 1 MiB at a time.
    let piece = vector_input(1 << 20);
    let mut reference = blake3::Hasher::new();
    for _ in 0..256 {
        reference.update(&piece);
    }
    let writer = {
        let (fifo, piece) = (fifo.clone(), piece.clone());
        std::thread::spawn(move || {
            let _ = fs::OpenOptions::new()
                .write(true)
                .open(&fifo)
                .and_then(|mut pipe| (0..256).try_for_each(|_| pipe.write_all(&piece)));
        })
    };
    let (stdout, success, peak_mib) =
        run_measured(b3batch().args(["--backend", "cpu", "hash"]).arg(&fifo));
    // Unblock the writer had b3batch not opened the FIFO.
    let _ = fs::OpenOptions::new()
        .read(true)
        .custom_flags_nonblock()
        .open(&fifo);
    writer.join().unwrap();
    assert!(success);
    assert_eq!(
        stdout,
        format!("{}  {}\n", reference.finalize().to_hex(), fifo.display())
    );
    println!("256 MiB through a FIFO peaked at {peak_mib} MiB");
    assert!(peak_mib < 128, "{peak_mib} MiB: the FIFO was read whole");
}

#[cfg(target_os = "linux")]
trait NonBlocking {
    fn custom_flags_nonblock(&mut self) -> &mut Self;
}

#[cfg(target_os = "linux")]
impl NonBlocking for fs::OpenOptions {
    fn custom_flags_nonblock(&mut self) -> &mut Self {
        use std::os::unix::fs::OpenOptionsExt;
        self.custom_flags(libc::O_NONBLOCK)
    }
}

#[cfg(target_os = "linux")]
#[test]
fn a_hundred_thousand_files_in_one_directory_keep_memory_bounded() {
    let dir = tempfile::tempdir().unwrap();
    let tree = dir.path().join("many");
    fs::create_dir(&tree).unwrap();
    for index in 0..100_000 {
        fs::write(tree.join(format!("{index:06}")), index.to_string()).unwrap();
    }
    let (stdout, success, peak_mib) = run_measured(b3batch().current_dir(dir.path()).args([
        "--backend",
        "cpu",
        "--quiet",
        "hash",
        "-r",
        "many",
    ]));
    assert!(success);
    let lines: Vec<&str> = stdout.lines().collect();
    assert_eq!(lines.len(), 100_000);
    assert_eq!(
        lines[12_345],
        format!("{}  many/012345", blake3::hash(b"12345").to_hex())
    );
    println!("hashing 100 000 files peaked at {peak_mib} MiB");
    assert!(peak_mib < 200, "{peak_mib} MiB");
}

/// Runs `command` to its end with stdout captured, and returns its stdout,
/// whether it succeeded, and its peak resident memory in MiB.
#[cfg(target_os = "linux")]
// The child is reaped by wait4, which also gives its peak memory (std's
// wait does not), so clippy's check for an unwaited child misfires here.
#[allow(clippy::zombie_processes)]
fn run_measured(command: &mut Command) -> (String, bool, i64) {
    let mut child = command
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let mut stdout = child.stdout.take().unwrap();
    let reader = std::thread::spawn(move || {
        let mut text = String::new();
        stdout.read_to_string(&mut text).unwrap();
        text
    });
    let mut status = 0;
    // SAFETY: rusage is plain data that wait4 fills in.
    let mut usage: libc::rusage = unsafe { std::mem::zeroed() };
    // SAFETY: waits for our own child, with valid pointers.
    let waited = unsafe { libc::wait4(child.id() as i32, &mut status, 0, &mut usage) };
    assert_eq!(waited, child.id() as i32);
    let success = libc::WIFEXITED(status) && libc::WEXITSTATUS(status) == 0;
    (reader.join().unwrap(), success, usage.ru_maxrss / 1024)
}
