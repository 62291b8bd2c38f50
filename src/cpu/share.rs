//! One batch on several threads: the calling thread and the pool's workers
//! take chunks of blobs from one cursor until none are left.
//!
//! The calling thread works too, rather than hand the whole batch to the
//! pool and sleep. Each hand-over between threads costs a wake-up, 20 to
//! 30 us apiece on a virtual machine whose idle CPUs halt; a 64 Ki-blob
//! batch of 64-byte blobs is 0.4 ms on each of two threads, and with the
//! batch injected into the pool (one wake-up to start, one to spread, one
//! to return) two threads ran 1.3x one where two separate one-thread runs
//! made 2x. Here the caller starts at once, helpers join when they wake, and
//! chunks shrink towards the end of the batch so all finish together.

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Mutex, MutexGuard, PoisonError};
use std::time::{Duration, Instant};

use super::batch::Threads;
use super::kernel::MAX_LANES;
use crate::blobs::{BlobSource, Offset, Packed};
use crate::error::Error;
use crate::offsets::SharedCheck;

/// Input bytes (plus a per-blob allowance) at which a chunk ends, whatever
/// its count: large enough that a chunk's tree blobs make at least one full
/// tree batch (lengths in 1025..=16384 on two threads ran 10 % faster than
/// with 256 KiB, AVX-512), and that a batch of small blobs held in cache is
/// a few long chunks rather than many short ones; small enough that a
/// chunk whose blobs cost more per byte than their weight says holds the
/// other threads up by at most a few hundred microseconds at the end.
///
/// It was 1 MiB, with each chunk a quarter of what was left on two threads.
/// A chunk of 64-byte blobs then ended every 5461 blobs (28 us), and such
/// chunks hashed at 12.5 GB/s where chunks of half the batch made 12.9
/// (blobs of at most a block laid back to back were then left to the
/// hardware prefetcher, whose stream each new chunk starts over). With
/// 4 MiB and an even split ([`take_chunk`]), side by side on two threads
/// (AVX-512, three interleaved rounds of medians): 64-byte records in 4 MiB
/// batches +12 %, 64-byte packed blobs +4 %, lengths in 1..=1024 in 32 MiB
/// +4 %, 256 B in 16 MiB -1.5 %, and 1 KiB, 16 KiB and 1025..=16384 level.
const UNIT_BYTES: usize = 4 * 1024 * 1024;
/// Per-blob weight in a chunk's size, for the fixed cost of a blob (lookup,
/// binning, output scatter).
const BLOB_WEIGHT: usize = 128;
/// Weight below which a chunk is not cut smaller: about 15 us of work, so
/// the end of a batch is not spent on per-chunk set-up.
const MIN_CHUNK_WEIGHT: usize = 64 * 1024;
/// How long the caller, done with its chunks, waits for helpers still
/// hashing before it sleeps until they finish: each is at most one small
/// chunk from done, which is shorter than a sleep and a wake-up.
const FINISH_SPIN: Duration = Duration::from_micros(50);

/// Hashes every blob of `source` into `out` with `hash(first, slots)` over
/// chunks of consecutive blobs, on the calling thread and the helpers of
/// `threads` (a pool, or rayon's global pool).
///
/// `hash` gets chunks that start on a multiple of [`MAX_LANES`] blobs where
/// blobs are short ([`chunk_end`]), so a run of equal-length blobs aligned
/// to lane groups stays aligned.
pub(crate) fn share<S, F>(threads: Threads, source: &S, out: &mut [[u8; 32]], hash: F)
where
    S: BlobSource,
    F: Fn(usize, &mut [[u8; 32]]) + Sync,
{
    let workers = workers(threads);
    // The slots not yet handed out: the batch's last blobs.
    let count = out.len();
    let rest = Mutex::new(out);
    let take = || take_chunk(&rest, count, source, workers);
    let drain = || {
        while let Some((first, slots)) = take() {
            hash(first, slots);
        }
    };
    let Some((first, slots)) = take() else {
        return;
    };
    // A batch of one chunk stays on this thread: no helper to wake.
    if workers == 1 || lock(&rest).is_empty() {
        hash(first, slots);
        drain();
        return;
    }
    work_beside(threads, workers - 1, &drain, || {
        hash(first, slots);
        drain();
    });
}

/// Checks the packed offsets of `check`, then hashes their blobs into `out`
/// with `hash(blobs, first, slots)` as [`share`] does, on the calling thread
/// and the helpers of `threads`, and returns the checked blobs; or returns
/// the check's error, with nothing written.
///
/// The helpers are spawned before the check, not after, so their wake-up
/// overlaps it, and a helper already awake takes pieces of it. Checked on
/// this thread alone, 64 Ki offsets took 30 to 40 us, a tenth of hashing
/// their 64-byte blobs on two threads, and the helper started 90 to 135 us
/// into the batch; spawned first, a median 33 us.
pub(crate) fn share_checking<'a, O, F>(
    threads: Threads,
    check: &SharedCheck<'a, O>,
    out: &mut [[u8; 32]],
    hash: F,
) -> Result<Packed<'a, O>, Error>
where
    O: Offset,
    F: Fn(&Packed<'a, O>, usize, &mut [[u8; 32]]) + Sync,
{
    debug_assert_eq!(check.count(), out.len());
    let workers = workers(threads);
    let count = out.len();
    let rest = Mutex::new(out);
    // Every thread reaches the same verdict; the caller's is returned.
    let work = || {
        check.scan_pieces();
        let blobs = check.verdict()?;
        while let Some((first, slots)) = take_chunk(&rest, count, &blobs, workers) {
            hash(&blobs, first, slots);
        }
        Ok(blobs)
    };
    if workers == 1 {
        return work();
    }
    let mut verdict = None;
    work_beside(threads, workers - 1, &|| drop(work()), || {
        verdict = Some(work())
    });
    verdict.expect("the calling thread ran its share")
}

/// `work` on every item, the outputs in the items' order, on the calling
/// thread and the helpers of `threads`, which take runs of items from one
/// queue as [`share`]'s threads take chunks: half of what is left over the
/// threads at a time, so a late helper still finds work and runs shrink
/// towards the end.
///
/// Handed to the pool as one parallel iterator, a few long items (the four
/// 1 MiB tasks of 4 MiB of extended outputs) took as long on two threads
/// as on one: the caller slept while the pool's workers woke one after the
/// other, and its own pool has one worker fewer than the engine's threads.
pub(crate) fn share_items<T: Send, O: Send>(
    threads: Threads,
    items: Vec<T>,
    work: impl Fn(T) -> O + Sync,
) -> Vec<O> {
    let workers = workers(threads);
    let count = items.len();
    if workers == 1 || count <= 1 {
        return items.into_iter().map(work).collect();
    }
    // The items not yet taken: the last ones.
    let left = Mutex::new(items.into_iter());
    let runs = Mutex::new(Vec::new());
    let drain = || loop {
        let (first, run): (usize, Vec<T>) = {
            let mut left = left.lock().unwrap_or_else(PoisonError::into_inner);
            if left.len() == 0 {
                break;
            }
            let take = left.len().div_ceil(2 * workers);
            (count - left.len(), left.by_ref().take(take).collect())
        };
        let outputs: Vec<O> = run.into_iter().map(&work).collect();
        let mut runs = runs.lock().unwrap_or_else(PoisonError::into_inner);
        runs.push((first, outputs));
    };
    work_beside(threads, workers - 1, &drain, drain);
    let mut runs = runs.into_inner().unwrap_or_else(PoisonError::into_inner);
    runs.sort_unstable_by_key(|(first, _)| *first);
    let outputs: Vec<O> = runs.into_iter().flat_map(|(_, outputs)| outputs).collect();
    debug_assert_eq!(outputs.len(), count);
    outputs
}

/// The threads that take chunks: the caller and the pool's helpers.
///
/// The engine's own pool holds one thread fewer than the engine has, as the
/// caller, which is not one of its workers, makes up the last (a caller
/// inside the pool counts once). With as many workers as threads, the one
/// left over was woken each batch anyway, since rayon wakes a sleeping
/// worker whenever one finds work, and on two CPUs it took one from the
/// two that hash: 0.5 to 2 % of batches took over 1.5 times the median,
/// the helper queued behind the caller on one CPU for 1 to 4 ms. rayon's
/// global pool is shared with the rest of the program and sized to the
/// CPUs, so there the caller takes one worker's place.
fn workers(threads: Threads) -> usize {
    match threads {
        Threads::One => 1,
        Threads::Pool(pool) => {
            pool.current_num_threads() + usize::from(pool.current_thread_index().is_none())
        }
        Threads::Global => rayon::current_num_threads(),
        Threads::Part { workers, .. } => workers,
    }
}

/// Runs `drain` on `helpers` threads of `threads`' pool and `own` on this
/// one, and returns once all are done.
fn work_beside(threads: Threads, helpers: usize, drain: &(impl Fn() + Sync), own: impl FnOnce()) {
    let finished = AtomicUsize::new(0);
    match threads {
        Threads::Pool(pool)
        | Threads::Part {
            pool: Some(pool), ..
        } => {
            pool.in_place_scope(|scope| spawn_beside(scope, helpers, drain, &finished, own));
        }
        _ => rayon::in_place_scope(|scope| spawn_beside(scope, helpers, drain, &finished, own)),
    }
}

/// Spawns `helpers` jobs that run `drain` and count themselves `finished`,
/// runs `own` on this thread, then waits up to [`FINISH_SPIN`] for the
/// helpers before the scope's end puts it to sleep.
fn spawn_beside<'s>(
    scope: &rayon::Scope<'s>,
    helpers: usize,
    drain: &'s (impl Fn() + Sync),
    finished: &'s AtomicUsize,
    own: impl FnOnce(),
) {
    for _ in 0..helpers {
        scope.spawn(move |_| {
            drain();
            finished.fetch_add(1, Ordering::Release);
        });
    }
    own();
    let start = Instant::now();
    while finished.load(Ordering::Acquire) < helpers && start.elapsed() < FINISH_SPIN {
        std::hint::spin_loop();
    }
}

fn lock<'m, 'o>(rest: &'m Mutex<&'o mut [[u8; 32]]>) -> MutexGuard<'m, &'o mut [[u8; 32]]> {
    rest.lock().unwrap_or_else(PoisonError::into_inner)
}

/// Hands out the next chunk of a `count`-blob batch whose last slots are
/// `rest`: an even split of what is left between `workers` (guided
/// self-scheduling: a late helper still finds the other shares, and chunks
/// shrink towards the end), ended early at [`UNIT_BYTES`] of weight and
/// never cut below [`MIN_CHUNK_WEIGHT`].
fn take_chunk<'o, S: BlobSource>(
    rest: &Mutex<&'o mut [[u8; 32]]>,
    count: usize,
    source: &S,
    workers: usize,
) -> Option<(usize, &'o mut [[u8; 32]])> {
    let mut rest = lock(rest);
    let remaining = rest.len();
    if remaining == 0 {
        return None;
    }
    let start = count - remaining;
    let end = chunk_end(source, start, count, remaining / workers);
    let (slots, later) = std::mem::take(&mut *rest).split_at_mut(end - start);
    *rest = later;
    Some((start, slots))
}

/// Where a chunk of blobs from `start` (before `count`) ends: after the
/// first blob at which its weight reaches [`UNIT_BYTES`], or at which it
/// holds `share` blobs and at least [`MIN_CHUNK_WEIGHT`] ([`ending_blob`]);
/// at `count` if neither comes first. That end is then moved on to the next
/// lane-group boundary ([`MAX_LANES`]), so that every chunk but the last
/// starts on one and a run of equal-length blobs aligned to lane groups
/// stays aligned, unless the blobs that adds weigh [`MIN_CHUNK_WEIGHT`] or
/// more: then blobs are long enough that alignment is worth nothing beside
/// their hashing, and a batch of 16 or fewer (a lane group of 512 KiB
/// blobs, the 4 to 16 subtrees of a 1 to 4 MiB blob) is still shared among
/// threads, as it was not when chunks were whole lane groups.
fn chunk_end<S: BlobSource>(source: &S, start: usize, count: usize, share: usize) -> usize {
    let end = ending_blob(source, start, count, share);
    let aligned = end.next_multiple_of(MAX_LANES).min(count);
    match weight(source, end, aligned) < MIN_CHUNK_WEIGHT {
        true => aligned,
        false => end,
    }
}

/// The end of the shortest chunk from `start` that [`chunk_end`]'s tests
/// end (or `count`).
///
/// Both tests only turn true as the chunk grows, so where blobs lie back
/// to back ([`BlobSource::CONTIGUOUS`]: packed offsets, records), and a
/// range's bytes are one subtraction, the end is bisected: a walk over
/// every lane group read a new cache line of offsets per group, often one
/// the other thread had just checked, and took 1.2 % of two threads' time
/// on 64-byte blobs (AVX-512, Zen 4). Other sources sum their lengths as
/// they go.
fn ending_blob<S: BlobSource>(source: &S, start: usize, count: usize, share: usize) -> usize {
    let ends_chunk = |end: usize, weight: usize| {
        weight >= UNIT_BYTES || (end - start >= share && weight >= MIN_CHUNK_WEIGHT)
    };
    if S::CONTIGUOUS {
        // The first end that ends the chunk lies in `fewest..=most`; the
        // last one ends it whatever its weight.
        let (mut fewest, mut most) = (start + 1, count);
        while fewest < most {
            let middle = fewest + (most - fewest) / 2;
            if ends_chunk(middle, weight(source, start, middle)) {
                most = middle;
            } else {
                fewest = middle + 1;
            }
        }
        return fewest;
    }
    let (mut end, mut weight) = (start, 0);
    while end < count {
        weight += source.len(end) + BLOB_WEIGHT;
        end += 1;
        if ends_chunk(end, weight) {
            break;
        }
    }
    end
}

/// The weight of blobs `start..end`: their bytes and [`BLOB_WEIGHT`] each.
fn weight<S: BlobSource>(source: &S, start: usize, end: usize) -> usize {
    source.bytes(start, end) + (end - start) * BLOB_WEIGHT
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::blobs::Slices;
    use crate::cpu::subtrees::Pieces;
    use std::sync::atomic::AtomicBool;

    /// Lengths from a fixed xorshift, each in `0..=longest`.
    fn lengths(count: usize, longest: usize) -> Vec<usize> {
        let mut state = 0x9E37_79B9_7F4A_7C15u64;
        (0..count)
            .map(|_| {
                state ^= state << 13;
                state ^= state >> 7;
                state ^= state << 17;
                (state % (longest as u64 + 1)) as usize
            })
            .collect()
    }

    /// The bisected chunk ends of packed offsets are the ends the walk over
    /// the same lengths as slices finds, chunk after chunk, for batches that
    /// end on and off lane groups and weigh under and over [`UNIT_BYTES`].
    #[test]
    fn bisected_chunks_end_where_the_walk_ends_them() {
        let shapes = [
            (lengths(1, 100), 2),
            (lengths(33, 1024), 2),
            (vec![64; 40_001], 2),
            (vec![64; 40_000], 3),
            (lengths(5_003, 4096), 2),
            (lengths(70_000, 300), 4),
            (vec![0; 10_000], 2),
        ];
        for (lengths, workers) in shapes {
            let data = vec![0u8; lengths.iter().sum()];
            let mut offsets = vec![0u64];
            let mut slices = Vec::new();
            for len in &lengths {
                let from = *offsets.last().unwrap() as usize;
                slices.push(&data[from..from + len]);
                offsets.push((from + len) as u64);
            }
            let packed = Packed::new(&data, &offsets).unwrap();
            let slices = Slices(&slices[..]);
            let count = lengths.len();
            let (mut start, mut chunks) = (0, 0);
            while start < count {
                let share = (count - start) / workers;
                let end = chunk_end(&packed, start, count, share);
                assert_eq!(end, chunk_end(&slices, start, count, share), "from {start}");
                assert!(end > start && (end == count || end % MAX_LANES == 0));
                start = end;
                chunks += 1;
            }
            assert!(
                count < 1000 || chunks > 2,
                "{count} blobs in {chunks} chunks"
            );
        }
    }

    /// Long blobs are cut into chunks blob by blob, not lane group by lane
    /// group: the eight subtrees of one 2 MiB blob, and a lane group of
    /// 512 KiB blobs, are shared among two threads, and a chunk still ends
    /// at [`UNIT_BYTES`].
    #[test]
    fn long_blobs_are_shared_one_by_one() {
        let data = vec![0u8; 64 << 20];
        // The subtrees of one 2 MiB blob.
        let source = Pieces::new(&data[..2 << 20], 256 * 1024);
        assert_eq!(source.count(), 8);
        assert_eq!(chunk_end(&source, 0, 8, 8 / 2), 4);
        assert_eq!(chunk_end(&source, 4, 8, 4 / 2), 6);
        assert_eq!(chunk_end(&source, 7, 8, 0), 8);
        let source = Pieces::new(&data, 256 * 1024);
        assert_eq!(chunk_end(&source, 0, 256, 128), 16);
        let offsets: Vec<u64> = (0..=16).map(|blob| blob << 19).collect();
        let packed = Packed::new(&data, &offsets).unwrap();
        assert_eq!(chunk_end(&packed, 0, 16, 8), 8);
        assert_eq!(chunk_end(&packed, 8, 16, 4), 12);
    }

    /// A part of a pool leaves its other workers free: work asked of the
    /// pool while the part hashes runs at once. Every chunk of the part
    /// waits for that work, so with the whole pool (whose workers take the
    /// batch's jobs first and keep them to its end) the wait runs out.
    #[test]
    fn a_part_of_the_pool_leaves_its_other_workers_free() {
        let pool = rayon::ThreadPoolBuilder::new()
            .num_threads(3)
            .build()
            .unwrap();
        let data = vec![0u8; 64];
        // Chunks enough for every worker.
        let blobs: Vec<&[u8]> = vec![&data; 4096];
        let source = Slices(&blobs[..]);
        let run = |threads: Threads, patience: Duration| {
            let other_work_ran = AtomicBool::new(false);
            let waited_out = AtomicBool::new(false);
            let chunks_started = AtomicUsize::new(0);
            let mut out = vec![[0u8; 32]; blobs.len()];
            std::thread::scope(|scope| {
                scope.spawn(|| {
                    share(threads, &source, &mut out, |_, slots| {
                        chunks_started.fetch_add(1, Ordering::AcqRel);
                        let deadline = Instant::now() + patience;
                        while !other_work_ran.load(Ordering::Acquire) {
                            if Instant::now() > deadline {
                                waited_out.store(true, Ordering::Release);
                                break;
                            }
                            std::thread::yield_now();
                        }
                        slots.fill([1; 32]);
                    })
                });
                // Asked once every thread of the batch holds a chunk, so
                // that each helper has left the pool's queue.
                let deadline = Instant::now() + Duration::from_secs(10);
                while chunks_started.load(Ordering::Acquire) < workers(threads) {
                    assert!(
                        Instant::now() < deadline,
                        "the batch's threads never started"
                    );
                    std::thread::yield_now();
                }
                pool.install(|| other_work_ran.store(true, Ordering::Release));
            });
            assert!(out.iter().all(|digest| *digest == [1; 32]));
            !waited_out.load(Ordering::Acquire)
        };
        let part = Threads::Pool(&pool).part(3);
        let free = run(part, Duration::from_secs(10));
        assert!(free, "the pool's free worker ran the other work");
        // The test can fail: the whole pool holds the other work back.
        assert!(!run(Threads::Pool(&pool), Duration::from_millis(300)));
        assert!(matches!(Threads::Pool(&pool).part(1), Threads::One));
        assert!(matches!(Threads::One.part(3), Threads::One));
    }

    /// A part of rayon's global pool hashes every chunk, each once, and
    /// runs work spread over it.
    #[test]
    fn a_part_of_the_global_pool_takes_every_chunk() {
        let data = vec![0u8; 64];
        let blobs: Vec<&[u8]> = vec![&data; 4096];
        let source = Slices(&blobs[..]);
        let part = Threads::Global.part(2);
        assert!(matches!(
            part,
            Threads::Part {
                pool: None,
                workers: 2
            }
        ));
        let mut out = vec![[0u8; 32]; blobs.len()];
        let chunks = AtomicUsize::new(0);
        share(part, &source, &mut out, |first, slots| {
            chunks.fetch_add(1, Ordering::Relaxed);
            for (index, slot) in (first..).zip(slots) {
                *slot = [index as u8; 32];
                slot[1] = (index >> 8) as u8;
            }
        });
        assert!(chunks.into_inner() > 1);
        for (index, digest) in out.iter().enumerate() {
            assert_eq!((digest[0], digest[1]), (index as u8, (index >> 8) as u8));
        }
        let sum = AtomicUsize::new(0);
        part.for_each((1..=100).collect(), |item| {
            sum.fetch_add(item, Ordering::Relaxed);
        });
        assert_eq!(sum.into_inner(), 5050);
    }

    /// Items are shared by the calling thread and the pool's one worker
    /// (an engine of two threads): each of two items waits until both have
    /// started, which one thread alone never sees; and every item of many
    /// runs once, the outputs in the items' order.
    #[test]
    fn items_are_shared_by_the_caller_and_the_pool() {
        let pool = rayon::ThreadPoolBuilder::new()
            .num_threads(1)
            .build()
            .unwrap();
        for threads in [Threads::Pool(&pool), Threads::Global.part(2)] {
            let started = AtomicUsize::new(0);
            let deadline = Instant::now() + Duration::from_secs(10);
            let together = share_items(threads, vec![0, 1], |_| {
                started.fetch_add(1, Ordering::AcqRel);
                while started.load(Ordering::Acquire) < 2 && Instant::now() < deadline {
                    std::thread::yield_now();
                }
                started.load(Ordering::Acquire) == 2
            });
            assert_eq!(together, [true, true], "two threads took an item each");
            let outputs = share_items(threads, (0..1000).collect(), |item: usize| item * 3);
            assert_eq!(outputs, (0..1000).map(|item| item * 3).collect::<Vec<_>>());
        }
    }
}
