//! Cutting a buffer of delimited records (`records --lines`, `-0`) on
//! several threads. One thread finding each delimiter took longer than the
//! engine took to hash the short records it cut, so it capped `records` on
//! any host with more cores (or a GPU).
//!
//! The buffer is split into one segment a thread, each holding the records
//! whose delimiter lies in it. A first pass counts each segment's
//! delimiters, so every record's place in the batch is known before it is
//! cut; the threads then cut their segments' records straight into their
//! slots, a batch of at most `batch` records at a time, in input order.

use rayon::prelude::*;

/// The records of one segment of the buffer not yet cut.
struct Segment {
    /// Where the next record starts.
    next: usize,
    /// Its delimiters not yet cut at (records left).
    left: usize,
}

/// Cuts the complete records in `data[start..]` (each ended by
/// `delimiter`, which is part of none) on `pool`'s threads and hands them
/// to `hash`, at most `batch` at a time, in order; returns where the
/// unfinished last record starts.
pub fn cut_on_threads<'d, E>(
    pool: &rayon::ThreadPool,
    data: &'d [u8],
    start: usize,
    (delimiter, batch): (u8, usize),
    mut hash: impl FnMut(&[&'d [u8]]) -> Result<(), E>,
) -> Result<usize, E> {
    let threads = pool.current_num_threads().max(1);
    let span = (data.len() - start).div_ceil(threads).max(1);
    let bounds: Vec<usize> = (0..threads)
        .map(|index| (start + index * span).min(data.len()))
        .collect();
    let mut segments: Vec<Segment> = pool.install(|| {
        bounds
            .par_iter()
            .map(|&from| {
                let to = (from + span).min(data.len());
                let left = count(delimiter, &data[from..to]);
                // The segment's first record began after the last delimiter
                // before it (a record may span segments).
                let before = &data[start..from];
                let next = match left {
                    0 => start,
                    _ => memchr::memrchr(delimiter, before).map_or(start, |at| start + at + 1),
                };
                Segment { next, left }
            })
            .collect()
    });
    let mut records: Vec<&'d [u8]> = Vec::new();
    loop {
        let want = segments
            .iter()
            .map(|segment| segment.left)
            .sum::<usize>()
            .min(batch);
        if want == 0 {
            break;
        }
        records.clear();
        records.resize(want, &[]);
        // Each segment's share of the batch, in order, with its slots.
        let mut jobs = Vec::with_capacity(threads);
        let mut slots = records.as_mut_slice();
        for segment in segments.iter_mut().filter(|segment| segment.left > 0) {
            if slots.is_empty() {
                break;
            }
            let (mine, rest) = slots.split_at_mut(segment.left.min(slots.len()));
            jobs.push((segment, mine));
            slots = rest;
        }
        pool.install(|| {
            jobs.into_par_iter()
                .for_each(|(segment, slots)| cut_into(data, delimiter, segment, slots))
        });
        hash(&records)?;
    }
    Ok(segments
        .iter()
        .map(|segment| segment.next)
        .fold(start, usize::max))
}

/// Cuts `slots.len()` records of `segment` into `slots`.
fn cut_into<'d>(data: &'d [u8], delimiter: u8, segment: &mut Segment, slots: &mut [&'d [u8]]) {
    let from = segment.next;
    let mut cursor = from;
    let ends = memchr::memchr_iter(delimiter, &data[from..]);
    let mut cut = 0;
    for (slot, end) in slots.iter_mut().zip(ends) {
        *slot = &data[cursor..from + end];
        cursor = from + end + 1;
        cut += 1;
    }
    // The count found these delimiters, so none is left out.
    assert_eq!(
        cut,
        slots.len(),
        "a segment held fewer records than counted"
    );
    segment.next = cursor;
    segment.left -= slots.len();
}

/// How many times `delimiter` occurs in `data`: 64 bytes at a time, a form
/// the compiler turns into vector compares (several times as fast as
/// `filter().count()`).
fn count(delimiter: u8, data: &[u8]) -> usize {
    let (blocks, rest) = data.as_chunks::<64>();
    let in_blocks: usize = blocks
        .iter()
        .map(|block| {
            // At most 64: fits a byte.
            let found: u8 = block.iter().map(|&byte| u8::from(byte == delimiter)).sum();
            usize::from(found)
        })
        .sum();
    in_blocks + rest.iter().filter(|&&byte| byte == delimiter).count()
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The records `data[start..]` holds, cut one at a time: the reference.
    fn cut_serially(data: &[u8], start: usize, delimiter: u8) -> (Vec<&[u8]>, usize) {
        let mut records = Vec::new();
        let mut cursor = start;
        while let Some(at) = memchr::memchr(delimiter, &data[cursor..]) {
            records.push(&data[cursor..cursor + at]);
            cursor += at + 1;
        }
        (records, cursor)
    }

    #[test]
    fn records_cut_on_threads_match_one_thread_in_every_batch_size() {
        // Records from empty to longer than a segment, delimiters at the
        // buffer's ends and runs of them, and text with none.
        let mut data = Vec::new();
        for index in 0..3000usize {
            let len = match index % 7 {
                0 => 0,
                1 => 1,
                6 => 200 + index % 90,
                other => other * 5 + index % 13,
            };
            data.extend((0..len).map(|at| b'a' + ((index + at) % 26) as u8));
            data.push(b'\n');
        }
        data.extend(b"unfinished");
        let long_first = [vec![b'x'; 50_000], b"\nend\n".to_vec()].concat();
        let inputs = [
            &data[..],
            b"\n\n\n\n\n\n\n\n\n",
            b"no delimiter at all",
            b"",
            &long_first[..],
        ];
        for threads in [1, 2, 3, 8] {
            let pool = rayon::ThreadPoolBuilder::new()
                .num_threads(threads)
                .build()
                .unwrap();
            for data in inputs {
                for start in [0, 1, 7].into_iter().filter(|&start| start <= data.len()) {
                    let (want, want_end) = cut_serially(data, start, b'\n');
                    for batch in [1, 5, 64, 1 << 16] {
                        let mut got = Vec::new();
                        let end = cut_on_threads(&pool, data, start, (b'\n', batch), |records| {
                            assert!(!records.is_empty() && records.len() <= batch);
                            got.extend_from_slice(records);
                            Ok::<(), ()>(())
                        })
                        .unwrap();
                        assert_eq!((got.len(), end), (want.len(), want_end));
                        assert!(
                            got == want,
                            "{threads} threads, start {start}, batch {batch}"
                        );
                    }
                }
            }
        }
    }

    #[test]
    fn counts_match_a_plain_count_at_every_length() {
        let data: Vec<u8> = (0..300u32)
            .map(|at| [b'\n', b'a', 0][(at % 3) as usize])
            .collect();
        for len in 0..data.len() {
            for delimiter in [b'\n', 0, b'a', b'z'] {
                let want = data[..len]
                    .iter()
                    .filter(|&&byte| byte == delimiter)
                    .count();
                assert_eq!(count(delimiter, &data[..len]), want);
            }
        }
    }
}
