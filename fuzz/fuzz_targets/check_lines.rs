//! The CLI's checkfile format (`src/bin/b3batch/names.rs`, compiled in
//! here as it is in `b3batch`): any line parses or is rejected with a reason,
//! never a panic; a line that parses names a usable path and prints back
//! into a line that parses to the same path and digest; and any file name
//! printed on a digest line, in either style, reads back as itself.
#![no_main]

use std::path::Path;

use libfuzzer_sys::fuzz_target;

#[path = "../../src/bin/b3batch/names.rs"]
#[allow(dead_code)]
mod names;

use names::{line_parts, parse_check_line, LineStyle};

/// A digest line as `b3batch hash` writes it: the hex between the parts
/// `line_parts` gives.
fn digest_line(digest: &[u8; 32], path: &Path, style: LineStyle) -> String {
    let (before, after) = line_parts(path, style);
    format!("{before}{}{after}", blake3::Hash::from(*digest).to_hex())
}

fuzz_target!(|bytes: &[u8]| {
    let text = String::from_utf8_lossy(bytes);

    // The bytes as one checkfile line.
    match parse_check_line(&text) {
        Ok(line) => {
            let name = line.path.to_str().expect("parsed from a str");
            assert!(!name.is_empty() && !name.contains(['\0', '\u{FFFD}']));
            for style in [LineStyle::Plain, LineStyle::Tag] {
                let printed = digest_line(&line.expected, &line.path, style);
                let again = parse_check_line(&printed).expect("a printed line parses");
                assert_eq!(
                    (again.path, again.expected),
                    (line.path.clone(), line.expected)
                );
            }
        }
        Err(reason) => assert!(!reason.is_empty()),
    }

    // The bytes as a file name: what `hash` prints, `--check` reads back.
    if text.is_empty() || text.contains(['\0', '\u{FFFD}']) {
        return;
    }
    let digest = *blake3::hash(bytes).as_bytes();
    for style in [LineStyle::Plain, LineStyle::Tag] {
        let printed = digest_line(&digest, Path::new(&*text), style);
        assert_eq!(printed.matches('\n').count(), 1, "one line: {printed:?}");
        let line = parse_check_line(&printed).expect("a printed line parses");
        assert_eq!(line.path, Path::new(&*text));
        assert_eq!(line.expected, digest);
    }
});
