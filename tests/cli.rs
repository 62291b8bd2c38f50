//! The `b3batch` binary, run as a user would: b3sum's formats and check
//! round trips, records in every layout, streaming with bounded memory, and
//! the error cases. Expected digests come from the official vectors or the
//! `blake3` crate, never from running b3sum.

mod common;

use std::borrow::BorrowMut;
use std::fs;
use std::io::{Read, Write};
use std::path::Path;
use std::process::{Child, Command, Output, Stdio};

use common::{vector_input, vectors};

fn b3batch() -> Command {
    let mut command = Command::new(env!("CARGO_BIN_EXE_b3batch"));
    // The CPU path unless a test asks otherwise: quick to start.
    command.env_remove("B3BATCH_CPU");
    command
}

/// Starts `command` with all three standard streams piped.
fn spawn_piped(command: &mut Command) -> Child {
    command
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("the command starts")
}

/// Runs with `stdin` fed in and returns the output.
fn run(mut command: impl BorrowMut<Command>, stdin: &[u8]) -> Output {
    let mut child = spawn_piped(command.borrow_mut());
    let mut input = child.stdin.take().expect("stdin");
    let stdin = stdin.to_vec();
    let writer = std::thread::spawn(move || {
        // The child may exit without reading everything.
        let _ = input.write_all(&stdin);
    });
    let output = child.wait_with_output().expect("b3batch runs");
    writer.join().unwrap();
    output
}

fn text(bytes: &[u8]) -> &str {
    std::str::from_utf8(bytes).expect("utf-8 output")
}

/// A path as b3sum prints it (unescaped): on Windows with `/` for `\`.
fn printed(path: &Path) -> String {
    let name = path.to_string_lossy();
    match cfg!(windows) {
        true => name.replace('\\', "/"),
        false => name.into_owned(),
    }
}

fn hex(digest: &[u8; 32]) -> String {
    blake3::Hash::from(*digest).to_hex().to_string()
}

/// A directory holding one file per official vector length (named `v<len>`),
/// with the vectors' expected digests.
struct VectorFiles {
    dir: tempfile::TempDir,
    files: Vec<(String, common::Case)>,
    key: [u8; 32],
    context: String,
}

fn vector_files() -> VectorFiles {
    let vectors = vectors();
    let dir = tempfile::tempdir().unwrap();
    let files = vectors
        .cases
        .into_iter()
        .map(|case| {
            let name = format!("v{:05}", case.input_len);
            fs::write(dir.path().join(&name), vector_input(case.input_len)).unwrap();
            (name, case)
        })
        .collect();
    VectorFiles {
        dir,
        files,
        key: vectors.key,
        context: vectors.context,
    }
}

impl VectorFiles {
    /// One expected output line per vector file.
    fn lines(&self, line: impl Fn(&str, &common::Case) -> String) -> String {
        self.files
            .iter()
            .map(|(name, case)| line(name, case))
            .collect()
    }

    fn command(&self, args: &[&str]) -> Command {
        let mut command = b3batch();
        command.current_dir(self.dir.path()).args(args);
        command.args(self.files.iter().map(|(name, _)| name));
        command
    }
}

#[test]
fn hash_prints_b3sum_lines_for_every_vector_in_every_mode() {
    let files = vector_files();
    let plain = run(files.command(&["hash"]), b"");
    assert!(plain.status.success(), "{}", text(&plain.stderr));
    let want = files.lines(|name, case| format!("{}  {name}\n", hex(&case.hash)));
    assert_eq!(text(&plain.stdout), want);

    let keyed = run(files.command(&["hash", "--keyed"]), &files.key);
    assert!(keyed.status.success(), "{}", text(&keyed.stderr));
    let want = files.lines(|name, case| format!("{}  {name}\n", hex(&case.keyed_hash)));
    assert_eq!(text(&keyed.stdout), want);

    let derived = run(
        files.command(&["hash", "--derive-key", &files.context, "--tag"]),
        b"",
    );
    assert!(derived.status.success(), "{}", text(&derived.stderr));
    let want = files.lines(|name, case| format!("BLAKE3 ({name}) = {}\n", hex(&case.derive_key)));
    assert_eq!(text(&derived.stdout), want);

    let bare = run(files.command(&["hash", "--no-names"]), b"");
    let want = files.lines(|_, case| format!("{}\n", hex(&case.hash)));
    assert_eq!(text(&bare.stdout), want);
}

/// `--length`, as b3sum's: a prefix of the digest below 32 bytes, the
/// extended output above (the official vectors' 131 bytes in every mode),
/// streamed files and stdin alike, in hex and raw.
#[test]
fn hash_length_gives_prefixes_and_extended_output() {
    let files = vector_files();
    for length in [0usize, 1, 16, 31, 32, 33, 64, 131] {
        let len = length.to_string();
        for (mode, args, stdin) in [
            (0, vec![], &[][..]),
            (1, vec!["--keyed"], &files.key[..]),
            (2, vec!["--derive-key", files.context.as_str()], &[][..]),
        ] {
            let mut all = vec!["hash", "--length", &len];
            all.extend(&args);
            let out = run(files.command(&all), stdin);
            assert!(out.status.success(), "{}", text(&out.stderr));
            let want = files.lines(|name, case| {
                let hex: String = case.extended[mode][..length]
                    .iter()
                    .map(|byte| format!("{byte:02x}"))
                    .collect();
                format!("{hex}  {name}\n")
            });
            assert_eq!(text(&out.stdout), want, "--length {length}, mode {mode}");
        }
    }
    // A file streamed for its size, stdin, --raw and --tag: against blake3.
    let dir = tempfile::tempdir().unwrap();
    let big = dir.path().join("big");
    let input = vector_input((1 << 20) + 1);
    fs::write(&big, &input).unwrap();
    let xof = |length: usize| {
        let mut bytes = vec![0u8; length];
        blake3::Hasher::new()
            .update(&input)
            .finalize_xof()
            .fill(&mut bytes);
        bytes
    };
    let hex = |bytes: &[u8]| -> String { bytes.iter().map(|b| format!("{b:02x}")).collect() };
    for length in [16, 32, 200] {
        let len = length.to_string();
        let out = run(b3batch().args(["hash", "--tag", "-l", &len]).arg(&big), b"");
        assert_eq!(
            text(&out.stdout),
            format!("BLAKE3 ({}) = {}\n", printed(&big), hex(&xof(length)))
        );
        let out = run(b3batch().args(["hash", "--raw", "-l", &len]), &input);
        assert_eq!(out.stdout, xof(length), "--raw --length {length}");
    }
    // --check reads 32-byte digests only, as b3sum does.
    let out = run(b3batch().args(["hash", "--check", "-l", "16", "-"]), b"");
    assert_eq!(out.status.code(), Some(2), "{}", text(&out.stderr));
}

/// `--seek`, as b3sum's: `--length` bytes of output from byte `--seek` on,
/// within the digest, across its end and past it (the official vectors'
/// 131 bytes in every mode); a file streamed for its size and stdin in raw
/// against `blake3`; with `--check`, the checkfile's digests from there.
#[test]
fn hash_seek_reads_the_output_from_any_byte() {
    let files = vector_files();
    for (seek, length) in [(8usize, 16usize), (31, 1), (1, 32), (32, 99), (100, 31)] {
        let (seek_arg, len) = (seek.to_string(), length.to_string());
        for (mode, args, stdin) in [
            (0, vec![], &[][..]),
            (1, vec!["--keyed"], &files.key[..]),
            (2, vec!["--derive-key", files.context.as_str()], &[][..]),
        ] {
            let mut all = vec!["hash", "--seek", &seek_arg, "--length", &len];
            all.extend(&args);
            let out = run(files.command(&all), stdin);
            assert!(out.status.success(), "{}", text(&out.stderr));
            let want = files.lines(|name, case| {
                let hex: String = case.extended[mode][seek..seek + length]
                    .iter()
                    .map(|byte| format!("{byte:02x}"))
                    .collect();
                format!("{hex}  {name}\n")
            });
            assert_eq!(text(&out.stdout), want, "--seek {seek} --length {length}");
        }
    }
    let dir = tempfile::tempdir().unwrap();
    let big = dir.path().join("big");
    let input = vector_input((1 << 20) + 1);
    fs::write(&big, &input).unwrap();
    let xof_at = |seek: u64, length: usize| {
        let mut reader = blake3::Hasher::new().update(&input).finalize_xof();
        reader.set_position(seek);
        let mut bytes = vec![0u8; length];
        reader.fill(&mut bytes);
        bytes
    };
    for (seek, length) in [(4u64, 20usize), (1000, 100), (u64::MAX - 9, 10)] {
        let (seek_arg, len) = (seek.to_string(), length.to_string());
        let out = run(
            b3batch()
                .args(["hash", "--raw", "--seek", &seek_arg, "-l", &len])
                .arg(&big),
            b"",
        );
        assert_eq!(out.stdout, xof_at(seek, length), "file from {seek}");
        let out = run(
            b3batch().args(["hash", "--raw", "--seek", &seek_arg, "-l", &len]),
            &input,
        );
        assert_eq!(out.stdout, xof_at(seek, length), "stdin from {seek}");
    }
    // --check --seek, as b3sum's: the checkfile's digests are 32 bytes of
    // output from the seek on, in every mode; checked from 0 they fail.
    let seek = 5;
    for (mode, args, key) in [
        (0, vec![], &[][..]),
        (1, vec!["--keyed"], &files.key[..]),
        (2, vec!["--derive-key", files.context.as_str()], &[][..]),
    ] {
        let sums = files.lines(|name, case| {
            let hex: String = case.extended[mode][seek..seek + 32]
                .iter()
                .map(|byte| format!("{byte:02x}"))
                .collect();
            format!("{hex}  {name}\n")
        });
        fs::write(files.dir.path().join("sums"), &sums).unwrap();
        let check = |more: &[&str]| {
            let mut command = b3batch();
            command
                .current_dir(files.dir.path())
                .args(["hash", "--check", "sums"])
                .args(&args)
                .args(more);
            run(command, key)
        };
        let out = check(&["--seek", "5"]);
        assert!(out.status.success(), "{}", text(&out.stderr));
        assert_eq!(
            text(&out.stdout),
            files.lines(|name, _| format!("{name}: OK\n"))
        );
        let out = check(&[]);
        assert_eq!(out.status.code(), Some(1));
        assert_eq!(
            text(&out.stdout),
            files.lines(|name, _| format!("{name}: FAILED\n"))
        );
    }
    // The last 32 bytes a seek reaches, of a file streamed for its size.
    let seek = u64::MAX - 31;
    let sums = format!("{}  big\n", hex(&xof_at(seek, 32).try_into().unwrap()));
    let out = run(
        b3batch().current_dir(dir.path()).args([
            "hash",
            "--check",
            "--seek",
            &seek.to_string(),
            "-",
        ]),
        sums.as_bytes(),
    );
    assert!(out.status.success(), "{}", text(&out.stderr));
    assert_eq!(text(&out.stdout), "big: OK\n");
}

#[test]
fn hash_runs_the_same_on_the_gpu() {
    if common::gpu_engine(None).is_none() {
        return;
    }
    let files = vector_files();
    let cpu = run(files.command(&["hash", "--backend", "cpu"]), b"");
    let gpu = run(
        files.command(&["hash", "--backend", "gpu", "--threads", "2"]),
        b"",
    );
    assert!(gpu.status.success(), "{}", text(&gpu.stderr));
    assert_eq!(text(&gpu.stdout), text(&cpu.stdout));
}

/// With `--backend gpu`, files up to a batch's 64 MiB are read whole for
/// the GPU, those longer than a slab hashed in subtrees; a longer one is
/// streamed as on the CPU. Every line is the CPU's.
#[test]
fn large_files_run_the_same_on_the_gpu() {
    if common::gpu_engine(None).is_none() {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let mib = 1 << 20;
    let lengths = [mib + 1, 3 * mib + 7, 20 * mib + 5, 5, 64 * mib + 1];
    let mut names = Vec::new();
    for (index, len) in lengths.into_iter().enumerate() {
        let name = format!("large-{index}");
        let bytes: Vec<u8> = (0..len).map(|i| (i * 7 % 251) as u8).collect();
        fs::write(dir.path().join(&name), bytes).unwrap();
        names.push(name);
    }
    let command = |backend: &str| {
        let mut command = b3batch();
        command
            .current_dir(dir.path())
            .args(["hash", "--backend", backend, "--threads", "2"])
            .args(&names);
        command
    };
    let cpu = run(command("cpu"), b"");
    let gpu = run(command("gpu"), b"");
    assert!(gpu.status.success(), "{}", text(&gpu.stderr));
    assert_eq!(text(&gpu.stdout), text(&cpu.stdout));
    let first = text(&cpu.stdout).lines().next().unwrap().to_owned();
    let bytes = fs::read(dir.path().join(&names[0])).unwrap();
    assert!(first.starts_with(&blake3::hash(&bytes).to_hex().to_string()));
}

/// Records on the GPU come from the pinned buffer they were read into
/// (64-byte records: in place) and their digests go back into pinned
/// memory; more than one batch, and lines (packed), give what the CPU does.
#[test]
fn records_run_the_same_on_the_gpu() {
    if common::gpu_engine(None).is_none() {
        return;
    }
    let data = vector_input(64 * 70_000);
    let chunks: Vec<&[u8]> = data.chunks(64).collect();
    let gpu = ["--backend", "gpu", "--threads", "2", "records"];
    let out = run(b3batch().args(gpu).args(["--size", "64"]), &data);
    assert!(out.status.success(), "{}", text(&out.stderr));
    assert_eq!(text(&out.stdout), record_lines(&chunks));
    let lines: Vec<u8> = data
        .iter()
        .map(|&byte| if byte == b'\n' { b'.' } else { byte })
        .collect();
    let lines: Vec<u8> = lines
        .chunks(100)
        .flat_map(|line| line.iter().copied().chain([b'\n']))
        .collect();
    let want: Vec<&[u8]> = lines
        .split(|&byte| byte == b'\n')
        .filter(|line| !line.is_empty())
        .collect();
    let out = run(b3batch().args(gpu).arg("--lines"), &lines);
    assert!(out.status.success(), "{}", text(&out.stderr));
    assert_eq!(text(&out.stdout), record_lines(&want));
}

#[test]
fn stdin_raw_and_the_key_on_stdin() {
    let input = vector_input(1025);
    let out = run(b3batch().arg("hash"), &input);
    assert_eq!(
        text(&out.stdout),
        format!("{}  -\n", blake3::hash(&input).to_hex())
    );
    let out = run(b3batch().args(["hash", "-"]), &input);
    assert_eq!(
        text(&out.stdout),
        format!("{}  -\n", blake3::hash(&input).to_hex())
    );
    let out = run(b3batch().args(["hash", "--raw"]), &input);
    assert_eq!(out.stdout, blake3::hash(&input).as_bytes());

    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("f");
    fs::write(&file, &input).unwrap();
    let key = [3u8; 32];
    let out = run(
        b3batch().args(["hash", "--keyed", "--no-names"]).arg(&file),
        &key,
    );
    assert_eq!(
        text(&out.stdout),
        format!("{}\n", blake3::keyed_hash(&key, &input).to_hex())
    );
    for bad_key in [&key[..31], &[3u8; 33][..]] {
        let out = run(b3batch().args(["hash", "--keyed"]).arg(&file), bad_key);
        assert_eq!(out.status.code(), Some(1));
        assert!(
            text(&out.stderr).contains("exactly 32 bytes"),
            "{}",
            text(&out.stderr)
        );
        assert!(out.stdout.is_empty());
    }
    // --raw takes one input only.
    let out = run(b3batch().args(["hash", "--raw"]).arg(&file).arg(&file), b"");
    assert_eq!(out.status.code(), Some(1));
    assert!(out.stdout.is_empty());
    // As b3sum, --raw wins over --tag and --no-names, and --no-names over
    // --tag, in any order: b3sum command lines run unchanged.
    let digest = blake3::hash(&input);
    for flags in [
        &["--raw", "--tag"][..],
        &["--no-names", "--raw"],
        &["--tag", "--raw", "--no-names"],
    ] {
        let out = run(b3batch().arg("hash").args(flags).arg(&file), b"");
        assert!(out.status.success(), "{flags:?}: {}", text(&out.stderr));
        assert_eq!(out.stdout, digest.as_bytes(), "{flags:?}");
    }
    for flags in [["--tag", "--no-names"], ["--no-names", "--tag"]] {
        let out = run(b3batch().arg("hash").args(flags).arg(&file), b"");
        assert!(out.status.success(), "{flags:?}: {}", text(&out.stderr));
        assert_eq!(
            text(&out.stdout),
            format!("{}\n", digest.to_hex()),
            "{flags:?}"
        );
    }
    // Records on stdin beside a key on stdin: refused before the key is
    // read, so the refusal is about where the records come from.
    let out = run(b3batch().args(["records", "--lines", "--keyed"]), b"");
    assert_eq!(out.status.code(), Some(1));
    assert!(
        text(&out.stderr).contains("the records must come from a FILE"),
        "{}",
        text(&out.stderr)
    );
}

#[cfg(unix)]
#[test]
fn names_with_backslashes_and_newlines_are_escaped_like_b3sum() {
    let dir = tempfile::tempdir().unwrap();
    let vectors = vectors();
    let case = &vectors.cases[5];
    let content = vector_input(case.input_len);
    let names = ["back\\slash", "new\nline", "both\\\n", "plain"];
    for name in names {
        fs::write(dir.path().join(name), &content).unwrap();
    }
    let digest = hex(&case.hash);
    let mut command = b3batch();
    command.current_dir(dir.path()).arg("hash").args(names);
    let out = run(command, b"");
    assert!(out.status.success(), "{}", text(&out.stderr));
    let want = format!(
        "\\{digest}  back\\\\slash\n\\{digest}  new\\nline\n\\{digest}  both\\\\\\n\n{digest}  plain\n"
    );
    assert_eq!(text(&out.stdout), want);
    let mut command = b3batch();
    command
        .current_dir(dir.path())
        .args(["hash", "--tag", "new\nline"]);
    let out = run(command, b"");
    assert_eq!(
        text(&out.stdout),
        format!("\\BLAKE3 (new\\nline) = {digest}\n")
    );

    // Those lines check back, from a file and from stdin.
    fs::write(dir.path().join("sums"), &want).unwrap();
    let mut command = b3batch();
    command
        .current_dir(dir.path())
        .args(["hash", "--check", "sums"]);
    let out = run(command, b"");
    assert!(out.status.success(), "{}", text(&out.stderr));
    assert_eq!(
        text(&out.stdout),
        "\\back\\\\slash: OK\n\\new\\nline: OK\n\\both\\\\\\n: OK\nplain: OK\n"
    );
}

/// On Windows, as b3sum there: wildcards the shell passed on are
/// expanded (quoted ones are not), names are printed with `/` for `\`, and
/// a check line whose name holds a `\` is refused.
#[cfg(windows)]
#[test]
fn windows_wildcards_and_separators_as_b3sum() {
    use std::os::windows::process::CommandExt;

    let dir = tempfile::tempdir().unwrap();
    fs::create_dir(dir.path().join("sub")).unwrap();
    let vectors = vectors();
    let mut lines = Vec::new();
    for (name, case) in ["x1", "x2", "y"].into_iter().zip(&vectors.cases[3..]) {
        fs::write(
            dir.path().join("sub").join(name),
            vector_input(case.input_len),
        )
        .unwrap();
        lines.push(format!("{}  sub/{name}\n", hex(&case.hash)));
    }
    let hash = |args: &[&str], raw: Option<&str>| {
        let mut command = b3batch();
        command.current_dir(dir.path()).args(args);
        if let Some(raw) = raw {
            command.raw_arg(raw);
        }
        run(command, b"")
    };

    // The pattern is expanded in name order, with the directory part.
    let out = hash(&["hash", "sub\\x*"], None);
    assert!(out.status.success(), "{}", text(&out.stderr));
    assert_eq!(text(&out.stdout), lines[..2].concat());
    let out = hash(&["hash", "-r", "sub"], None);
    assert!(out.status.success(), "{}", text(&out.stderr));
    assert_eq!(text(&out.stdout), lines.concat());
    // Quoted, it is a name, and no file has it.
    let out = hash(&["hash"], Some("\"sub\\x*\""));
    assert_eq!(out.status.code(), Some(1));
    assert!(out.stdout.is_empty(), "{}", text(&out.stdout));
    assert!(text(&out.stderr).contains("x*"), "{}", text(&out.stderr));

    // The `/` lines check back; a `\` in a name is refused, as b3sum does.
    let sums = lines.concat() + &lines[0].replace("sub/", "sub\\");
    fs::write(dir.path().join("sums"), sums).unwrap();
    let out = hash(&["hash", "--check", "sums"], None);
    assert_eq!(out.status.code(), Some(1));
    assert_eq!(text(&out.stdout), "sub/x1: OK\nsub/x2: OK\nsub/y: OK\n");
    assert!(
        text(&out.stderr).contains("Backslash in path"),
        "{}",
        text(&out.stderr)
    );
}

#[test]
fn check_round_trips_success_a_changed_file_and_a_missing_file() {
    let files = vector_files();
    let dir = files.dir.path();
    // Hand-written checkfile in both b3sum formats, from the vectors.
    let mut sums = String::new();
    for (index, (name, case)) in files.files.iter().enumerate() {
        if index % 2 == 0 {
            sums += &format!("{}  {name}\n", hex(&case.hash));
        } else {
            sums += &format!("BLAKE3 ({name}) = {}\n", hex(&case.hash));
        }
    }
    fs::write(dir.join("sums"), &sums).unwrap();
    let check = |args: &[&str], stdin: &[u8]| {
        let mut command = b3batch();
        command
            .current_dir(dir)
            .args(["hash", "--check"])
            .args(args);
        run(command, stdin)
    };
    let ok = check(&["sums"], b"");
    assert!(ok.status.success(), "{}", text(&ok.stderr));
    let want = files.lines(|name, _| format!("{name}: OK\n"));
    assert_eq!(text(&ok.stdout), want);
    let quiet = check(&["--quiet", "-"], sums.as_bytes());
    assert!(quiet.status.success());
    assert_eq!(text(&quiet.stdout), "");

    // hash's own output checks back.
    let produced = run(files.command(&["hash"]), b"");
    let again = check(&[], &produced.stdout);
    assert!(again.status.success(), "{}", text(&again.stdout));

    let (changed, _) = &files.files[3];
    let (missing, _) = &files.files[7];
    fs::write(dir.join(changed), b"changed").unwrap();
    fs::remove_file(dir.join(missing)).unwrap();
    let bad = check(&["-q", "sums"], b"");
    assert_eq!(bad.status.code(), Some(1));
    let stdout = text(&bad.stdout);
    assert!(
        stdout.starts_with(&format!("{changed}: FAILED\n{missing}: FAILED (")),
        "{stdout}"
    );
    assert_eq!(stdout.lines().count(), 2, "{stdout}");
    assert!(
        text(&bad.stderr).contains("WARNING: 2 computed checksums did NOT match"),
        "{}",
        text(&bad.stderr)
    );

    // A malformed line is reported and counted; the rest still checks.
    let (first, case) = &files.files[0];
    let mixed = format!("not a check line\n{}  {first}\n", hex(&case.hash));
    let out = check(&["-"], mixed.as_bytes());
    assert_eq!(out.status.code(), Some(1));
    assert_eq!(text(&out.stdout), format!("{first}: OK\n"));
    assert!(text(&out.stderr).contains("Invalid check line format"));
}

/// A checkfile that cannot be read is named in an error and fails the run,
/// but is no "computed checksum" in the closing warning; the other
/// checkfiles are still checked. A line that is not UTF-8 is one bad line.
#[test]
fn check_reports_unreadable_checkfiles_apart_from_failed_lines() {
    let dir = tempfile::tempdir().unwrap();
    fs::write(dir.path().join("good"), b"good").unwrap();
    fs::create_dir(dir.path().join("folder")).unwrap();
    let line = format!("{}  good\n", blake3::hash(b"good").to_hex());
    fs::write(dir.path().join("sums"), &line).unwrap();
    let mut not_utf8 = line.clone().into_bytes();
    not_utf8.extend_from_slice(blake3::hash(b"good").to_hex().as_bytes());
    not_utf8.extend_from_slice(b"  bad\xff\n");
    not_utf8.extend_from_slice(line.as_bytes());
    fs::write(dir.path().join("mixed"), not_utf8).unwrap();
    let check = |checkfiles: &[&str]| {
        let mut command = b3batch();
        command
            .current_dir(dir.path())
            .args(["hash", "--check"])
            .args(checkfiles);
        run(command, b"")
    };

    for unreadable in ["gone", "folder"] {
        let out = check(&[unreadable, "sums"]);
        assert_eq!(out.status.code(), Some(1), "{unreadable}");
        assert_eq!(text(&out.stdout), "good: OK\n", "{unreadable}");
        let stderr = text(&out.stderr);
        assert!(
            stderr.starts_with(&format!("b3batch: {unreadable}: ")),
            "{stderr}"
        );
        assert!(!stderr.contains("WARNING"), "{stderr}");
        assert_eq!(stderr.lines().count(), 1, "{stderr}");
    }

    // A line naming a directory fails as b3sum's does, with no hint at
    // -r, which --check does not take.
    let listed = format!("{}  folder\n{line}", blake3::hash(b"").to_hex());
    fs::write(dir.path().join("lists_a_folder"), listed).unwrap();
    let out = check(&["lists_a_folder"]);
    assert_eq!(out.status.code(), Some(1));
    assert_eq!(
        text(&out.stdout),
        "folder: FAILED (Is a directory)\ngood: OK\n"
    );

    let out = check(&["mixed"]);
    assert_eq!(out.status.code(), Some(1));
    assert_eq!(text(&out.stdout), "good: OK\ngood: OK\n");
    let stderr = text(&out.stderr);
    assert!(
        stderr.contains("Unicode replacement character in path")
            && stderr.contains("WARNING: 1 computed checksum did NOT match"),
        "{stderr}"
    );
}

#[test]
fn unreadable_inputs_are_reported_and_the_rest_still_hashed() {
    let dir = tempfile::tempdir().unwrap();
    fs::write(dir.path().join("good"), b"good").unwrap();
    fs::create_dir(dir.path().join("sub")).unwrap();
    fs::write(dir.path().join("sub").join("inner"), b"inner").unwrap();
    let mut command = b3batch();
    command
        .current_dir(dir.path())
        .args(["hash", "gone", "good", "sub", "good"]);
    let out = run(command, b"");
    assert_eq!(out.status.code(), Some(1));
    let digest = blake3::hash(b"good").to_hex();
    assert_eq!(
        text(&out.stdout),
        format!("{digest}  good\n{digest}  good\n")
    );
    let stderr = text(&out.stderr);
    assert!(stderr.contains("b3batch: gone: "), "{stderr}");
    assert!(
        stderr.contains("b3batch: sub: Is a directory (use -r to hash the files in it)"),
        "{stderr}"
    );

    // -r hashes a tree, entries sorted.
    let mut command = b3batch();
    command.current_dir(dir.path()).args(["hash", "-r", "."]);
    let out = run(command, b"");
    assert!(out.status.success(), "{}", text(&out.stderr));
    let inner = blake3::hash(b"inner").to_hex();
    assert_eq!(
        text(&out.stdout),
        format!("{digest}  ./good\n{inner}  ./sub/inner\n")
    );
}

#[test]
fn many_small_files_hash_in_order() {
    let dir = tempfile::tempdir().unwrap();
    let names: Vec<String> = (0..3000).map(|i| format!("f{i}")).collect();
    let mut want = String::new();
    for (i, name) in names.iter().enumerate() {
        let content = vector_input(i % 1500);
        fs::write(dir.path().join(name), &content).unwrap();
        want += &format!("{}  {name}\n", blake3::hash(&content).to_hex());
    }
    // One large file in the middle is streamed, in its place; a missing
    // file among the groups opened side by side only fails itself.
    let large = vector_input(3 << 20);
    fs::write(dir.path().join("large"), &large).unwrap();
    let mut command = b3batch();
    command
        .current_dir(dir.path())
        .args(["--threads", "2", "hash"])
        .args(&names[..700])
        .arg("missing")
        .args(&names[700..1500])
        .arg("large")
        .args(&names[1500..]);
    let out = run(command, b"");
    assert_eq!(out.status.code(), Some(1), "{}", text(&out.stderr));
    assert!(
        text(&out.stderr).contains("b3batch: missing: "),
        "{}",
        text(&out.stderr)
    );
    let lines: Vec<&str> = want.lines().collect();
    let large_line = format!("{}  large", blake3::hash(&large).to_hex());
    let want = [&lines[..1500], &[large_line.as_str()], &lines[1500..]]
        .concat()
        .join("\n")
        + "\n";
    assert_eq!(text(&out.stdout), want);
}

/// Linux's `/proc` and `/sys` files say they hold 0 or 4096 bytes
/// whatever their reads give: they are hashed as far as their reads go, as
/// b3sum hashes them, and check so.
#[cfg(target_os = "linux")]
#[test]
fn proc_and_sys_files_hash_as_far_as_their_reads_go() {
    let mut paths = vec!["/proc/version"];
    if Path::new("/sys/devices/system/cpu/online").exists() {
        paths.push("/sys/devices/system/cpu/online");
    }
    let want: String = paths
        .iter()
        .map(|path| {
            format!(
                "{}  {path}\n",
                blake3::hash(&fs::read(path).unwrap()).to_hex()
            )
        })
        .collect();
    for extra in [&[][..], &["--no-mmap"]] {
        let out = run(b3batch().arg("hash").args(extra).args(&paths), b"");
        assert!(out.status.success(), "{}", text(&out.stderr));
        assert_eq!(text(&out.stdout), want);
    }
    let dir = tempfile::tempdir().unwrap();
    let sums = dir.path().join("sums");
    fs::write(&sums, &want).unwrap();
    let out = run(b3batch().args(["hash", "--check"]).arg(&sums), b"");
    assert!(out.status.success(), "{}", text(&out.stderr));
    let oks: String = paths.iter().map(|path| format!("{path}: OK\n")).collect();
    assert_eq!(text(&out.stdout), oks);
}

/// `--files-from`: the files named in a list, newline- or NUL-separated,
/// from a file or stdin, after any named on the command line, in order;
/// b3sum's `--num-threads` and `--no-mmap` are accepted. A listed file
/// that cannot be read fails alone; a list that cannot be read, or on
/// stdin beside stdin as an input, is an error naming it.
#[test]
fn files_from_a_list_hash_in_order() {
    let dir = tempfile::tempdir().unwrap();
    // Names with a space, a CR inside (not before the separator; Windows
    // allows no control character, so a `;` there) and a lone `-`, which
    // is a file, not stdin.
    let odd = if cfg!(windows) { "c;d" } else { "c\rd" };
    let names = ["a b", odd, "-", "e", "f"];
    let mut line = std::collections::HashMap::new();
    for (i, name) in names.iter().enumerate() {
        let content = vector_input(700 * i + 1);
        fs::write(dir.path().join(name), &content).unwrap();
        let shown = if *name == "-" { "./-" } else { name };
        let digest = blake3::hash(&content).to_hex();
        // b3sum escapes a CR in a name and marks the line with `\`.
        let printed = match shown.contains('\r') {
            true => format!("\\{digest}  {}\n", shown.replace('\r', "\\r")),
            false => format!("{digest}  {shown}\n"),
        };
        line.insert(*name, printed);
    }
    let want = |order: &[&str]| -> String { order.iter().map(|name| line[name].clone()).collect() };
    let listed = ["a b", odd, "-", "missing", "e"];

    let by_lines: String = listed.iter().map(|name| format!("{name}\n")).collect();
    let nul: String = listed.iter().map(|name| format!("{name}\0")).collect();
    fs::write(
        dir.path().join("list.txt"),
        by_lines.replace('\n', "\r\n") + "\n",
    )
    .unwrap();
    fs::write(dir.path().join("list.nul"), &nul).unwrap();
    let cases: [(&[&str], &[u8]); 3] = [
        (&["--files-from", "list.txt"], b""),
        (&["--files-from", "-", "-0"], nul.as_bytes()),
        (&["--files-from", "-", "--no-mmap"], by_lines.as_bytes()),
    ];
    for (args, stdin) in cases {
        let mut command = b3batch();
        command
            .current_dir(dir.path())
            .args(["--num-threads", "2", "hash", "f"])
            .args(args);
        let out = run(command, stdin);
        assert_eq!(
            out.status.code(),
            Some(1),
            "{args:?}: {}",
            text(&out.stderr)
        );
        assert!(
            text(&out.stderr).contains("b3batch: missing: "),
            "{args:?}: {}",
            text(&out.stderr)
        );
        assert_eq!(
            text(&out.stdout),
            want(&["f", "a b", odd, "-", "e"]),
            "{args:?}"
        );
    }

    for (args, message) in [
        (&["--files-from", "absent"][..], "--files-from absent: "),
        (
            &["--files-from", "-", "-"][..],
            "stdin cannot also be an input",
        ),
        (
            &["--files-from", "-", "--keyed", "e"][..],
            "--keyed reads the key from stdin",
        ),
        (&["-0", "e"][..], "--files-from"),
    ] {
        let mut command = b3batch();
        command.current_dir(dir.path()).arg("hash").args(args);
        let out = run(command, b"");
        assert!(!out.status.success(), "{args:?}");
        assert!(out.stdout.is_empty(), "{args:?}: {}", text(&out.stdout));
        assert!(
            text(&out.stderr).contains(message),
            "{args:?}: {}",
            text(&out.stderr)
        );
    }
}

/// The `blake3_batch` digests of these records, as hex lines.
fn record_lines(records: &[&[u8]]) -> String {
    blake3_batch::hash_many(records)
        .iter()
        .map(|digest| format!("{}\n", digest.to_hex()))
        .collect()
}

#[test]
fn records_in_every_layout_match_hash_many() {
    let lines_input = b"alpha\n\nbeta\ngamma without newline";
    let out = run(b3batch().args(["records", "--lines"]), lines_input);
    assert!(out.status.success(), "{}", text(&out.stderr));
    let records: Vec<&[u8]> = vec![b"alpha", b"", b"beta", b"gamma without newline"];
    assert_eq!(text(&out.stdout), record_lines(&records));
    // A final newline ends the last record; it does not start another.
    let out = run(b3batch().args(["records", "--lines"]), b"a\nb\n");
    assert_eq!(text(&out.stdout), record_lines(&[b"a", b"b"]));
    let out = run(b3batch().args(["records", "--lines"]), b"");
    assert_eq!(text(&out.stdout), "");

    let out = run(b3batch().args(["records", "-0"]), b"x\0yy\0\0zzz");
    assert_eq!(text(&out.stdout), record_lines(&[b"x", b"yy", b"", b"zzz"]));

    let data: Vec<u8> = vector_input(7 * 100);
    let chunks: Vec<&[u8]> = data.chunks(7).collect();
    let out = run(b3batch().args(["records", "--size", "7"]), &data);
    assert_eq!(text(&out.stdout), record_lines(&chunks));
    let out = run(b3batch().args(["records", "--size", "7", "--raw"]), &data);
    let raw: Vec<u8> = blake3_batch::hash_many(&chunks)
        .iter()
        .flat_map(|digest| *digest.as_bytes())
        .collect();
    assert_eq!(out.stdout, raw);

    // A short last record is an error, unless allowed.
    let short = &data[..7 * 3 + 2];
    let out = run(b3batch().args(["records", "--size", "7"]), short);
    assert_eq!(out.status.code(), Some(1));
    assert_eq!(text(&out.stdout), record_lines(&chunks[..3]));
    assert!(
        text(&out.stderr).contains("--allow-short"),
        "{}",
        text(&out.stderr)
    );
    let out = run(
        b3batch().args(["records", "--size", "7", "--allow-short"]),
        short,
    );
    assert!(out.status.success());
    assert_eq!(
        text(&out.stdout),
        record_lines(&short.chunks(7).collect::<Vec<_>>())
    );
    // It means nothing to records that have no size: a usage error.
    for layout in ["--lines", "--null"] {
        let out = run(b3batch().args(["records", layout, "--allow-short"]), short);
        assert_eq!(out.status.code(), Some(2), "{layout}");
        assert!(out.stdout.is_empty());
        assert!(text(&out.stderr).contains("--allow-short"), "{layout}");
    }
    // A file's length shows the short record before any digest is written;
    // with --allow-short it is hashed as from stdin.
    let short_dir = tempfile::tempdir().unwrap();
    let short_file = short_dir.path().join("short");
    fs::write(&short_file, short).unwrap();
    let out = run(
        b3batch().args(["records", "--size", "7"]).arg(&short_file),
        b"",
    );
    assert_eq!(out.status.code(), Some(1));
    assert_eq!(text(&out.stdout), "");
    assert!(
        text(&out.stderr).contains("the last record has 2 bytes, not 7"),
        "{}",
        text(&out.stderr)
    );
    let out = run(
        b3batch()
            .args(["records", "--size", "7", "--allow-short"])
            .arg(&short_file),
        b"",
    );
    assert!(out.status.success(), "{}", text(&out.stderr));
    assert_eq!(
        text(&out.stdout),
        record_lines(&short.chunks(7).collect::<Vec<_>>())
    );

    // Keyed and derive-key records; the key comes from stdin, so the
    // records from a file.
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("records");
    fs::write(&file, lines_input).unwrap();
    let key = [9u8; 32];
    let out = run(
        b3batch().args(["records", "--lines", "--keyed"]).arg(&file),
        &key,
    );
    let want: String = records
        .iter()
        .map(|r| format!("{}\n", blake3::keyed_hash(&key, r).to_hex()))
        .collect();
    assert_eq!(text(&out.stdout), want);
    let out = run(
        b3batch()
            .args(["records", "--lines", "--derive-key", "ctx"])
            .arg(&file),
        b"",
    );
    let want: String = records
        .iter()
        .map(|r| format!("{}\n", hex(&blake3::derive_key("ctx", r))))
        .collect();
    assert_eq!(text(&out.stdout), want);
}

/// `records --length`, as `hash --length`: a prefix of each digest up to
/// 32 bytes, BLAKE3's extended output past it, in hex and raw, in every
/// mode and layout, for a record streamed through (longer than the read
/// buffer) and a short last one too.
#[test]
fn records_length_gives_prefixes_and_extended_output() {
    let key = [7u8; 32];
    let output = |mode: usize, record: &[u8], length: usize| {
        let mut hasher = match mode {
            0 => blake3::Hasher::new(),
            1 => blake3::Hasher::new_keyed(&key),
            _ => blake3::Hasher::new_derive_key("records ctx"),
        };
        let mut bytes = vec![0u8; length];
        hasher.update(record).finalize_xof().fill(&mut bytes);
        bytes
    };
    let hex = |bytes: &[u8]| -> String { bytes.iter().map(|b| format!("{b:02x}")).collect() };
    let dir = tempfile::tempdir().unwrap();
    // Lines, one of them longer than the 8 MiB read piece.
    let long: Vec<u8> = vector_input(9 << 20)
        .into_iter()
        .map(|byte| if byte == b'\n' { b'N' } else { byte })
        .collect();
    let lines: Vec<&[u8]> = vec![b"alpha", b"", &long, b"omega"];
    let lines_file = dir.path().join("lines");
    fs::write(&lines_file, lines.join(&b'\n')).unwrap();
    // Fixed-size records, the last one short.
    let sized = vector_input(5 * 100 + 3);
    let sized_file = dir.path().join("sized");
    fs::write(&sized_file, &sized).unwrap();
    let chunks: Vec<&[u8]> = sized.chunks(5).collect();
    let layouts = [
        (&["--lines"][..], lines_file.as_path(), &lines[..]),
        (
            &["--size", "5", "--allow-short"],
            sized_file.as_path(),
            &chunks,
        ),
    ];
    for length in [1usize, 16, 32, 33, 131] {
        let len = length.to_string();
        for (mode, args, stdin) in [
            (0, vec![], &[][..]),
            (1, vec!["--keyed"], &key[..]),
            (2, vec!["--derive-key", "records ctx"], &[][..]),
        ] {
            for (layout, file, records) in layouts {
                let mut command = b3batch();
                command
                    .args(["records", "-l", &len])
                    .args(layout)
                    .args(&args);
                let out = run(command.arg(file), stdin);
                assert!(out.status.success(), "{}", text(&out.stderr));
                let want: String = records
                    .iter()
                    .map(|record| format!("{}\n", hex(&output(mode, record, length))))
                    .collect();
                assert_eq!(
                    text(&out.stdout),
                    want,
                    "--length {length}, mode {mode}, {layout:?}"
                );
            }
        }
        let out = run(
            b3batch()
                .args(["records", "--raw", "--length", &len, "--lines"])
                .arg(&lines_file),
            b"",
        );
        let want: Vec<u8> = lines
            .iter()
            .flat_map(|record| output(0, record, length))
            .collect();
        assert_eq!(out.stdout, want, "--raw --length {length}");
    }
    // Long outputs: made by the engine in more than one piece (60000 bytes
    // for 101 records), and past the batched bound, streamed per record.
    for length in [60_000usize, 70_000] {
        let out = run(
            b3batch()
                .args(["records", "--raw", "--size", "5", "--allow-short"])
                .args(["--length", &length.to_string()])
                .arg(&sized_file),
            b"",
        );
        assert!(out.status.success(), "{}", text(&out.stderr));
        let want: Vec<u8> = chunks
            .iter()
            .flat_map(|record| output(0, record, length))
            .collect();
        assert!(out.stdout == want, "--raw --length {length} differs");
    }
}

/// `records --seek`, as `hash --seek`: each record's output from byte
/// `--seek` on, within the digest and past it, made by the engine in the
/// lanes, by `blake3` for records over a chunk and streamed per record past
/// the batched bound.
#[test]
fn records_seek_reads_each_output_from_any_byte() {
    let output_at = |record: &[u8], seek: u64, length: usize| {
        let mut reader = blake3::Hasher::new_keyed(&[3; 32])
            .update(record)
            .finalize_xof();
        reader.set_position(seek);
        let mut bytes = vec![0u8; length];
        reader.fill(&mut bytes);
        bytes
    };
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("lines");
    let lines: Vec<Vec<u8>> = (0..50usize)
        .map(|index| vec![b'a' + (index % 26) as u8; index * 47])
        .collect();
    fs::write(&file, lines.join(&b'\n')).unwrap();
    let cases = [
        (8u64, 16usize),
        (1, 32),
        (40, 64),
        (1000, 100),
        (70, 70_000),
    ];
    for (seek, length) in cases {
        let (seek_arg, len) = (seek.to_string(), length.to_string());
        let out = run(
            b3batch()
                .args(["records", "--lines", "--raw", "--keyed"])
                .args(["--seek", &seek_arg, "--length", &len])
                .arg(&file),
            &[3; 32],
        );
        assert!(out.status.success(), "{}", text(&out.stderr));
        let want: Vec<u8> = lines
            .iter()
            .flat_map(|line| output_at(line, seek, length))
            .collect();
        assert!(
            out.stdout == want,
            "--seek {seek} --length {length} differs"
        );
    }
}

#[test]
fn records_longer_than_the_read_buffer_stream_through() {
    // Lines of 20 MiB and 1 byte, and fixed records of 9 MiB: longer than
    // the 8 MiB read piece.
    let long: Vec<u8> = vector_input(20 << 20)
        .into_iter()
        .map(|byte| if byte == b'\n' { b'N' } else { byte })
        .collect();
    let mut input = long.clone();
    input.extend_from_slice(b"\nx\n");
    input.extend_from_slice(&long[..5]);
    let out = run(b3batch().args(["records", "--lines"]), &input);
    assert!(out.status.success(), "{}", text(&out.stderr));
    assert_eq!(text(&out.stdout), record_lines(&[&long, b"x", &long[..5]]));

    let size = 9 << 20;
    let data = &long[..2 * size + 100];
    let out = run(
        b3batch().args(["records", "--size", &size.to_string(), "--allow-short"]),
        data,
    );
    assert!(out.status.success(), "{}", text(&out.stderr));
    let chunks: Vec<&[u8]> = data.chunks(size).collect();
    assert_eq!(text(&out.stdout), record_lines(&chunks));
}

/// Bytes `seek..seek + length` of the output of each record, as `blake3`
/// gives it: a hex line each, or (`raw`) the bytes run together.
fn record_outputs(records: &[&[u8]], (length, seek): (usize, u64), raw: bool) -> Vec<u8> {
    let mut want = Vec::new();
    for record in records {
        let mut output = blake3::Hasher::new().update(record).finalize_xof();
        output.set_position(seek);
        let mut bytes = vec![0; length];
        output.fill(&mut bytes);
        match raw {
            true => want.extend_from_slice(&bytes),
            false => {
                let hex: String = bytes.iter().map(|byte| format!("{byte:02x}")).collect();
                want.extend_from_slice(format!("{hex}\n").as_bytes());
            }
        }
    }
    want
}

/// Short records over several read pieces and batches, cut and formatted
/// on three threads (a pool of them with more than one): each layout and
/// output form gives what `blake3` gives, in input order.
#[test]
fn records_cut_and_written_on_several_threads_match_blake3() {
    // 300 000 records of 0 to 60 bytes, about 9 MiB: over one read piece
    // and four batches, with runs of empty records.
    let records: Vec<Vec<u8>> = (0..300_000usize)
        .map(|index| {
            let len = match index % 1000 < 20 {
                true => 0,
                false => index * 7919 % 61,
            };
            (0..len)
                .map(|at| b'a' + ((index + at) % 26) as u8)
                .collect()
        })
        .collect();
    let slices: Vec<&[u8]> = records.iter().map(Vec::as_slice).collect();
    for (layout, delimiter) in [("--lines", b'\n'), ("-0", 0)] {
        let mut input = slices.join(&delimiter);
        // The last record without its delimiter still counts.
        input.push(delimiter);
        input.extend_from_slice(b"tail");
        let mut all = slices.clone();
        all.push(b"tail");
        let forms: [(&[&str], (usize, u64), bool); 5] = [
            (&[], (32, 0), false),
            (&["--raw"], (32, 0), true),
            (&["-l", "5", "--seek", "3"], (5, 3), false),
            (&["-l", "40", "--raw"], (40, 0), true),
            (&["-l", "0", "--seek", "40"], (0, 40), false),
        ];
        for (form, output, raw) in forms {
            let out = run(
                b3batch()
                    .args(["--threads", "3", "records", layout])
                    .args(form),
                &input,
            );
            assert!(out.status.success(), "{form:?}: {}", text(&out.stderr));
            let want = record_outputs(&all, output, raw);
            assert!(out.stdout == want, "{layout} {form:?}: output differs");
        }
    }
}

/// 1 GiB of records through a process whose address space is capped at
/// 768 MiB: it can only finish by streaming.
#[cfg(target_os = "linux")]
#[test]
fn a_large_input_streams_in_bounded_memory() {
    let script = format!(
        "ulimit -v {}; exec \"$0\" records --size 4096 --raw --threads 2",
        768 * 1024
    );
    let mut child =
        spawn_piped(Command::new("sh").args(["-c", &script, env!("CARGO_BIN_EXE_b3batch")]));
    let mut stdin = child.stdin.take().unwrap();
    let piece = vector_input(1 << 20);
    let writer = std::thread::spawn(move || {
        let mut reference = blake3::Hasher::new();
        for _ in 0..1024 {
            if stdin.write_all(&piece).is_err() {
                break;
            }
        }
        // Each 4096-byte record of the repeated piece: 256 distinct ones.
        for record in piece.chunks(4096) {
            reference.update(blake3::hash(record).as_bytes());
        }
        reference.finalize()
    });
    let mut stdout = Vec::new();
    child
        .stdout
        .take()
        .unwrap()
        .read_to_end(&mut stdout)
        .unwrap();
    let status = child.wait().unwrap();
    let mut stderr = String::new();
    child
        .stderr
        .take()
        .unwrap()
        .read_to_string(&mut stderr)
        .unwrap();
    let piece_digests = writer.join().unwrap();
    assert!(status.success(), "{stderr}");
    assert_eq!(stdout.len(), 32 * (1 << 30) / 4096);
    // The digests repeat the first piece's 256 every 8 KiB of output.
    let mut first = blake3::Hasher::new();
    first.update(&stdout[..256 * 32]);
    assert_eq!(first.finalize(), piece_digests);
    assert!(stdout
        .chunks(256 * 32)
        .all(|chunk| chunk == &stdout[..256 * 32]));
}

#[test]
fn a_closed_stdout_ends_quietly() {
    let mut child = spawn_piped(b3batch().args(["records", "--size", "1"]));
    let mut stdin = child.stdin.take().unwrap();
    let writer = std::thread::spawn(move || {
        let _ = stdin.write_all(&vector_input(4 << 20));
    });
    // Read one line, then hang up, as `| head -1` does.
    let mut stdout = child.stdout.take().unwrap();
    let mut first = [0u8; 65];
    stdout.read_exact(&mut first).unwrap();
    drop(stdout);
    let output = child.wait_with_output().unwrap();
    writer.join().unwrap();
    assert!(output.status.success(), "{:?}", output.status);
    assert_eq!(text(&output.stderr), "");
}

/// With stdout and stderr both closed (`2>&1 | head` after the reader left)
/// no command panics: a failure still sets the exit status, and what goes
/// to files (a profile, a bench's JSON) is still written.
#[test]
fn closed_stdout_and_stderr_are_no_panic() {
    let dir = tempfile::tempdir().unwrap();
    let profile = dir.path().join("profile.json");
    let json = dir.path().join("bench.json");
    let quick_bench = ["bench", "--count", "64", "--reps", "2", "--warmup", "0"];
    // Each reads stdin, or works a while, before it writes anything: by
    // then both readers are gone.
    let cases: [(Vec<&str>, &[u8], i32); 4] = [
        (vec!["hash", "--files-from", "-"], b"/nonexistent\n", 1),
        (vec!["hash", "--check", "-"], b"not a check line\n", 1),
        (
            [
                &quick_bench[..],
                &["--sizes", "64", "--json", json.to_str().unwrap()],
            ]
            .concat(),
            b"",
            0,
        ),
        (vec!["--threads", "2", "calibrate"], b"", 0),
    ];
    for (args, input, code) in cases {
        let mut command = b3batch();
        command.env("B3BATCH_PROFILE", &profile).args(&args);
        let mut child = spawn_piped(&mut command);
        drop(child.stdout.take());
        drop(child.stderr.take());
        let mut stdin = child.stdin.take().unwrap();
        let _ = stdin.write_all(input);
        drop(stdin);
        let status = child.wait().unwrap();
        assert_eq!(status.code(), Some(code), "{args:?}");
    }
    assert!(json.exists());
    assert!(blake3_batch::Profile::load(&profile).is_ok());
}

#[test]
fn bad_flags_get_usage_and_info_reports_the_machine() {
    let out = run(b3batch().args(["hash", "--no-such-flag"]), b"");
    assert_eq!(out.status.code(), Some(2));
    assert!(text(&out.stderr).contains("Usage"), "{}", text(&out.stderr));
    let out = run(b3batch().args(["records"]), b"");
    assert_eq!(out.status.code(), Some(2), "a layout is required");
    let out = run(b3batch().args(["hash", "--check", "--tag"]), b"");
    assert_eq!(out.status.code(), Some(2));
    let out = run(b3batch().args(["hash", "--threads", "1,2", "-"]), b"");
    assert_eq!(out.status.code(), Some(1));
    assert!(
        text(&out.stderr).contains("a list is for `bench`"),
        "{}",
        text(&out.stderr)
    );
    // A thread count past the engine's limit is refused, naming the limit.
    let out = run(b3batch().args(["--threads", "200000", "hash", "-"]), b"abc");
    assert_eq!(out.status.code(), Some(1));
    assert_eq!(text(&out.stdout), "");
    let most = blake3_batch::max_threads();
    assert!(
        text(&out.stderr).contains(&format!("ask for at most {most}")),
        "{}",
        text(&out.stderr)
    );
    // b3sum's `--num-threads 0` asks for the default.
    let out = run(b3batch().args(["--num-threads", "0", "hash", "-"]), b"abc");
    assert!(out.status.success(), "{}", text(&out.stderr));
    let want = format!("{}  -\n", blake3::hash(b"abc").to_hex());
    assert_eq!(text(&out.stdout), want);

    let out = run(b3batch().arg("info"), b"");
    assert!(out.status.success(), "{}", text(&out.stderr));
    let stdout = text(&out.stdout);
    for field in ["cpu: ", "cpu backends: ", "engine: ", "profile: "] {
        assert!(stdout.contains(field), "{stdout}");
    }
    assert!(stdout.contains("gpu adapter"), "{stdout}");
    let out = run(
        b3batch().args(["--backend", "cpu", "--threads", "1", "info"]),
        b"",
    );
    assert!(
        text(&out.stdout).contains("1 threads"),
        "{}",
        text(&out.stdout)
    );
}

#[test]
fn missing_checkfile_is_an_error_naming_it() {
    let out = run(b3batch().args(["hash", "-c", "/nonexistent/sums"]), b"");
    assert_eq!(out.status.code(), Some(1));
    assert!(text(&out.stderr).contains("/nonexistent/sums"));
    assert!(Path::new(env!("CARGO_BIN_EXE_b3batch")).exists());
}

#[test]
fn calibrate_saves_the_profile_that_info_and_auto_load() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("profile.json");
    let out = run(
        b3batch()
            .env("B3BATCH_PROFILE", &path)
            .args(["--threads", "2", "calibrate"]),
        b"",
    );
    assert!(out.status.success(), "{}", text(&out.stderr));
    assert!(text(&out.stdout).contains("saved"), "{}", text(&out.stdout));
    let profile = blake3_batch::Profile::load(&path).unwrap();
    assert_eq!(profile.cpu_model, blake3_batch::cpu_model());
    let out = run(b3batch().env("B3BATCH_PROFILE", &path).arg("info"), b"");
    let stdout = text(&out.stdout);
    assert!(
        stdout.contains(&format!("profile: {}", path.display())),
        "{stdout}"
    );
    // A corrupt profile is a warning, not a failure.
    fs::write(&path, b"garbage").unwrap();
    let out = run(
        b3batch().env("B3BATCH_PROFILE", &path).args(["hash", "-"]),
        b"x",
    );
    assert!(out.status.success());
    assert_eq!(
        text(&out.stdout),
        format!("{}  -\n", blake3::hash(b"x").to_hex())
    );
    assert!(
        text(&out.stderr).contains("ignoring profile"),
        "{}",
        text(&out.stderr)
    );
}

#[test]
fn selftest_checks_every_backend_against_blake3_and_passes() {
    let output = run(
        b3batch().args([
            "selftest",
            "--seconds",
            "2",
            "--seed",
            "7",
            "--max-mib",
            "4",
            "--max-blobs",
            "20000",
        ]),
        b"",
    );
    let stdout = text(&output.stdout);
    assert!(output.status.success(), "{stdout}{}", text(&output.stderr));
    for cpu in blake3_batch::CpuBackend::supported() {
        assert!(stdout.contains(&format!("{cpu} 1t")), "{stdout}");
    }
    let summary = stdout.lines().last().expect("a summary line");
    let checked: u64 = summary.split_whitespace().next().unwrap().parse().unwrap();
    assert!(checked > 0, "{stdout}");
    assert!(summary.ends_with(" 0 batches with a mismatch"), "{stdout}");
}

#[test]
fn selftest_reports_a_wrong_digest_with_the_seed_that_reproduces_it() {
    let selftest = |seed: &str, seconds: &str, flip: bool| {
        let mut command = b3batch();
        command.args([
            "--backend",
            "cpu",
            "selftest",
            "--seconds",
            seconds,
            "--seed",
            seed,
        ]);
        command.args(["--max-mib", "1", "--max-blobs", "1000"]);
        if flip {
            command.env("B3BATCH_SELFTEST_FLIP_BIT", "1");
        }
        run(command, b"")
    };
    // A flipped bit in every batch's first digest: the first batch with a
    // blob fails, and its line says how to run that batch again.
    let output = selftest("42", "1", true);
    let stdout = text(&output.stdout);
    assert_eq!(output.status.code(), Some(1), "{stdout}");
    assert!(stdout.contains("MISMATCH on "), "{stdout}");
    assert!(stdout.contains("blob 0 "), "{stdout}");
    let rerun = stdout
        .split("reproduce with `b3batch --backend cpu selftest --seed ")
        .nth(1)
        .expect("a line to reproduce the failure");
    let seed = rerun.split_whitespace().next().unwrap();
    assert!(seed.starts_with("0x"), "{stdout}");
    // That seed alone fails the same way, and passes without the flip.
    let again = selftest(seed, "0", true);
    assert_eq!(again.status.code(), Some(1), "{}", text(&again.stdout));
    let clean = selftest(seed, "0", false);
    assert!(clean.status.success(), "{}", text(&clean.stdout));
}

#[cfg(unix)]
#[test]
fn symbolic_link_loops_under_r_end_with_errors_not_a_hang() {
    let dir = tempfile::tempdir().unwrap();
    let tree = dir.path().join("tree");
    fs::create_dir(&tree).unwrap();
    fs::write(tree.join("file"), b"content").unwrap();
    std::os::unix::fs::symlink("..", tree.join("parent")).unwrap();
    std::os::unix::fs::symlink("b", tree.join("a")).unwrap();
    std::os::unix::fs::symlink("a", tree.join("b")).unwrap();
    let mut command = b3batch();
    command
        .current_dir(dir.path())
        .args(["--backend", "cpu", "hash", "-r", "tree"]);
    let out = run(command, b"");
    assert_eq!(out.status.code(), Some(1));
    assert_eq!(
        text(&out.stdout),
        format!("{}  tree/file\n", blake3::hash(b"content").to_hex())
    );
    let stderr = text(&out.stderr);
    assert!(
        stderr.contains("tree/parent: symbolic link to a directory, not followed"),
        "{stderr}"
    );
    assert!(
        stderr.contains("tree/a: Too many levels of symbolic links"),
        "{stderr}"
    );
}

#[cfg(unix)]
#[test]
fn names_that_are_not_utf8_are_hashed_and_refused_by_check_as_b3sum_does() {
    use std::os::unix::ffi::OsStrExt;
    let dir = tempfile::tempdir().unwrap();
    let name = std::ffi::OsStr::from_bytes(b"caf\xe9");
    fs::write(dir.path().join(name), b"latin-1").unwrap();
    let mut command = b3batch();
    command
        .current_dir(dir.path())
        .args(["--backend", "cpu", "hash"])
        .arg(name);
    let out = run(command, b"");
    assert!(out.status.success(), "{}", text(&out.stderr));
    let line = format!("{}  caf\u{FFFD}\n", blake3::hash(b"latin-1").to_hex());
    assert_eq!(text(&out.stdout), line);
    // The lossy name cannot name the file again: b3sum's refusal.
    fs::write(dir.path().join("sums"), &line).unwrap();
    let mut command = b3batch();
    command
        .current_dir(dir.path())
        .args(["--backend", "cpu", "hash", "--check", "sums"]);
    let out = run(command, b"");
    assert_eq!(out.status.code(), Some(1));
    assert!(
        text(&out.stderr).contains("Unicode replacement character in path"),
        "{}",
        text(&out.stderr)
    );
}

#[test]
fn check_files_with_crlf_lines_and_a_4_mib_line() {
    let dir = tempfile::tempdir().unwrap();
    fs::write(dir.path().join("one"), b"1").unwrap();
    fs::write(dir.path().join("two"), b"2").unwrap();
    let sums = format!(
        "{}  one\r\n{}\r\n{}  two\r\n",
        blake3::hash(b"1").to_hex(),
        "f".repeat(4 << 20),
        blake3::hash(b"2").to_hex()
    );
    fs::write(dir.path().join("sums"), sums).unwrap();
    let mut command = b3batch();
    command
        .current_dir(dir.path())
        .args(["--backend", "cpu", "hash", "--check", "sums"]);
    let out = run(command, b"");
    // The long line is reported, the others still checked.
    assert_eq!(out.status.code(), Some(1), "{}", text(&out.stderr));
    assert_eq!(text(&out.stdout), "one: OK\ntwo: OK\n");
    assert!(
        text(&out.stderr).len() < 4096,
        "the error does not echo the line"
    );
}

#[cfg(unix)]
#[test]
fn a_directory_that_cannot_be_read_is_reported_and_the_rest_hashed() {
    use std::os::unix::fs::PermissionsExt;
    // SAFETY: geteuid has no preconditions.
    if unsafe { libc::geteuid() } == 0 {
        eprintln!("skipped: root reads every directory");
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let tree = dir.path().join("tree");
    fs::create_dir_all(tree.join("closed")).unwrap();
    fs::write(tree.join("open"), b"open").unwrap();
    fs::set_permissions(tree.join("closed"), fs::Permissions::from_mode(0o000)).unwrap();
    let mut command = b3batch();
    command
        .current_dir(dir.path())
        .args(["--backend", "cpu", "hash", "-r", "tree"]);
    let out = run(command, b"");
    fs::set_permissions(tree.join("closed"), fs::Permissions::from_mode(0o700)).unwrap();
    assert_eq!(out.status.code(), Some(1));
    assert_eq!(
        text(&out.stdout),
        format!("{}  tree/open\n", blake3::hash(b"open").to_hex())
    );
    assert!(
        text(&out.stderr).contains("tree/closed: Permission denied"),
        "{}",
        text(&out.stderr)
    );
}

#[cfg(unix)]
#[test]
fn pipes_sockets_and_devices_under_r_are_skipped_not_read() {
    let dir = tempfile::tempdir().unwrap();
    let tree = dir.path().join("tree");
    fs::create_dir(&tree).unwrap();
    fs::write(tree.join("file"), b"content").unwrap();
    // Reading the pipe would wait for a writer forever, /dev/zero never ends.
    let made = Command::new("mkfifo").arg(tree.join("pipe")).status();
    assert!(made.unwrap().success(), "mkfifo makes the pipe");
    let _socket = std::os::unix::net::UnixListener::bind(tree.join("socket")).unwrap();
    std::os::unix::fs::symlink("/dev/zero", tree.join("zeros")).unwrap();
    let mut command = b3batch();
    command
        .current_dir(dir.path())
        .args(["--backend", "cpu", "hash", "-r", "tree"]);
    let mut child = spawn_piped(&mut command);
    let started = std::time::Instant::now();
    while child.try_wait().unwrap().is_none() {
        if started.elapsed() > std::time::Duration::from_secs(60) {
            child.kill().unwrap();
            panic!("`hash -r` still runs after 60 s: it read a special file");
        }
        std::thread::sleep(std::time::Duration::from_millis(20));
    }
    let out = child.wait_with_output().unwrap();
    assert_eq!(out.status.code(), Some(1), "a skipped entry is reported");
    assert_eq!(
        text(&out.stdout),
        format!("{}  tree/file\n", blake3::hash(b"content").to_hex())
    );
    let stderr = text(&out.stderr);
    for (name, kind) in [
        ("pipe", "named pipe"),
        ("socket", "socket"),
        ("zeros", "device"),
    ] {
        let line = format!("b3batch: tree/{name}: {kind}, not read under -r");
        assert!(stderr.contains(&line), "{line} in {stderr}");
    }
}
