//! The generated batches a benchmark runs on: one per blob size.

use std::fmt;
use std::str::FromStr;

use crate::random::Random;

/// One row of the table: equal-length blobs, or lengths uniform in
/// 1..=1024.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum SizeSpec {
    Fixed(usize),
    Mixed,
}

impl FromStr for SizeSpec {
    type Err = String;

    fn from_str(text: &str) -> Result<Self, String> {
        if text.eq_ignore_ascii_case("mixed") {
            return Ok(SizeSpec::Mixed);
        }
        match text.parse::<usize>() {
            Ok(0) | Err(_) => Err(format!(
                "blob size {text:?} is neither a positive number of bytes nor `mixed`"
            )),
            Ok(size) => Ok(SizeSpec::Fixed(size)),
        }
    }
}

impl fmt::Display for SizeSpec {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            SizeSpec::Fixed(size) => write!(f, "{size}"),
            SizeSpec::Mixed => f.write_str("mixed 1..=1024"),
        }
    }
}

/// A generated batch, packed Arrow style.
pub struct Case {
    pub size: SizeSpec,
    pub data: Vec<u8>,
    pub offsets: Vec<u64>,
}

impl Case {
    /// `count` blobs if given, else about `bytes` of them.
    pub fn generate(size: SizeSpec, bytes: usize, count: Option<usize>) -> Case {
        let mut rng = Random(0x2545_F491_4F6C_DD1D ^ bytes as u64);
        let mut offsets = vec![0u64];
        let mut total = 0usize;
        loop {
            let done = match count {
                Some(count) => offsets.len() > count,
                None => total >= bytes.max(1),
            };
            if done {
                break;
            }
            total += match size {
                SizeSpec::Fixed(size) => size,
                SizeSpec::Mixed => 1 + (rng.next() % 1024) as usize,
            };
            offsets.push(total as u64);
        }
        let data = (0..total).map(|_| rng.next() as u8).collect();
        Case {
            size,
            data,
            offsets,
        }
    }

    pub fn count(&self) -> usize {
        self.offsets.len() - 1
    }

    pub fn blob(&self, index: usize) -> &[u8] {
        &self.data[self.offsets[index] as usize..self.offsets[index + 1] as usize]
    }
}
