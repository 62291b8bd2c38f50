//! Outputs of any length per blob, from any byte on, in every layout
//! ([`Engine::hash_slices_xof_into`], [`Engine::hash_packed_xof_into`],
//! [`Engine::hash_records_xof_into`], and their `_at_` forms with a seek):
//! BLAKE3's extended output, whose first 32 bytes are the digest. Outputs
//! within the first 32 bytes are a piece of the digest and take the
//! engine's own path on its backend; others are the root node's
//! compression repeated with a counter: for blobs of up to 16 KiB and
//! outputs spanning up to 1 KiB of blocks the CPU lanes do that
//! (`Kernel::root_outputs`), other blobs are hashed by `blake3` whole,
//! short ones side by side on the engine's threads, long ones each over
//! all of them.

use super::Engine;
use crate::blobs::{BlobSource, Offset, Records, Slices, Span};
use crate::consts::BLOCK_LEN;
use crate::cpu::batch::Threads;
use crate::cpu::{SubtreeHashing, MAX_LANE_OUTPUT};
use crate::error::{Error, ErrorKind};
use crate::mode::Mode;
use crate::Backend;

/// Blobs handed to one thread at a time for outputs over 32 bytes: enough
/// that a task's overhead is small beside `blake3`'s own per-blob cost,
/// few enough that threads share a batch of mixed lengths evenly.
const BLOBS_PER_TASK: usize = 256;
/// Input bytes at which a task ends short of [`BLOBS_PER_TASK`] blobs, so
/// that blobs of many KiB are shared among threads too (64 blobs of 1 MiB
/// made one task, on one thread of two; at 1 MiB a task, so did 16 blobs
/// of 64 KiB).
const TASK_BYTES: usize = 256 * 1024;
/// Tasks a thread should have to take, at least, where the batch's bytes
/// allow: threads wake at different times and blobs cost unevenly.
const TASKS_PER_THREAD: usize = 2;
/// The fewest input bytes a task holds before it ends (but for
/// [`BLOBS_PER_TASK`]): 16 blobs of a chunk, a full lane group.
const MIN_TASK_BYTES: usize = 16 * 1024;
/// Blobs a thread hashes into a temporary buffer of digests at a time for
/// outputs of under 32 bytes: few enough that their digests are still in
/// its cache when they are cut (64 Ki blobs on two threads took a third
/// longer to cut than 16 Ki).
const PIECE_BLOBS_PER_THREAD: usize = 8192;
/// Blobs hashed at a time for outputs of under 32 bytes on an engine with
/// a GPU, which pays for a submission by the batch.
const GPU_PIECE_BLOBS: usize = 1 << 16;
/// Digests a thread cuts outputs of under 32 bytes from at a time.
const CUTS_PER_TASK: usize = 4096;
/// Blobs longer than this are hashed in subtrees over every thread for
/// their `OutputReader`s, shorter ones by one thread each.
const LONG_BLOB: usize = 1 << 20;
/// The most blocks a blob of up to a chunk has for its 1 KiB of output
/// to be left to `blake3`, where its output reader makes the 16 blocks in
/// one pass ([`left_to_blake3`]). Against that reader, on one thread
/// (AVX-512), the lanes made 16 output blocks of blobs of one block at
/// 0.7x its rate and of two blocks at 0.9x, of four blocks at 1.3x; 9 to
/// 15 blocks of blobs of one block (the reader's passes then part empty)
/// at 1.0x to 1.3x, and 8 blocks at 0.85x, where the reader through the
/// engine did no better.
const LEFT_TO_BLAKE3_BLOCKS: usize = 2;

impl Engine {
    /// Writes `length` bytes of output for every blob into `out`, back to
    /// back (`blobs.len() * length` bytes): BLAKE3's extended output
    /// (`blake3::Hasher::finalize_xof`) in `mode`, whose first 32 bytes
    /// are the digest that [`hash_slices_into`](Self::hash_slices_into)
    /// gives.
    ///
    /// Outputs of up to 32 bytes are a prefix of each digest and run on
    /// the engine's backend, as fast as full digests. Longer ones are made
    /// on the CPU's threads, whatever the backend: up to 1 KiB of output
    /// from blobs of up to 16 KiB in its SIMD lanes (a third of the
    /// digests' rate at 64-byte blobs, three fifths at 1 KiB), other blobs by
    /// `blake3`, a blob over 1 MiB in subtrees over all the threads as
    /// `blake3`'s `update_rayon` would.
    ///
    /// Fails with [`ErrorKind::XofLength`] for a `length` of 0 and with
    /// [`ErrorKind::XofOutputLength`] when `out` is not `blobs.len() *
    /// length` bytes long; on any error nothing is written to `out`.
    ///
    /// ```
    /// use blake3_batch::{Engine, Mode};
    ///
    /// let engine = Engine::builder().build()?;
    /// let blobs = ["ada", "grace"];
    /// let mut out = [0u8; 2 * 64];
    /// engine.hash_slices_xof_into(Mode::Hash, &blobs, 64, &mut out)?;
    /// let mut want = [0u8; 64];
    /// blake3::Hasher::new().update(b"grace").finalize_xof().fill(&mut want);
    /// assert_eq!(out[64..], want);
    /// # Ok::<(), blake3_batch::Error>(())
    /// ```
    pub fn hash_slices_xof_into<B: AsRef<[u8]> + Sync>(
        &self,
        mode: Mode,
        blobs: &[B],
        length: usize,
        out: &mut [u8],
    ) -> Result<(), Error> {
        self.hash_slices_xof_at_into(mode, blobs, length, 0, out)
    }

    /// [`hash_slices_xof_into`](Self::hash_slices_xof_into) from byte
    /// `seek` of each blob's output on: `length` bytes of what
    /// `blake3::OutputReader` gives after `set_position(seek)`, as b3sum's
    /// `--seek` and blake3-py's `digest(length, seek=…)`. Outputs of up to
    /// 1 KiB of blocks (`seek % 64 + length`) of blobs of up to 16 KiB
    /// come from the lanes as from the start; any `seek` is valid.
    ///
    /// ```
    /// use blake3_batch::{Engine, Mode};
    ///
    /// let engine = Engine::builder().build()?;
    /// let mut out = [0u8; 2 * 16];
    /// engine.hash_slices_xof_at_into(Mode::Hash, &["ada", "grace"], 16, 100, &mut out)?;
    /// let mut reader = blake3::Hasher::new().update(b"ada").finalize_xof();
    /// reader.set_position(100);
    /// let mut want = [0u8; 16];
    /// reader.fill(&mut want);
    /// assert_eq!(out[..16], want);
    /// # Ok::<(), blake3_batch::Error>(())
    /// ```
    pub fn hash_slices_xof_at_into<B: AsRef<[u8]> + Sync>(
        &self,
        mode: Mode,
        blobs: &[B],
        length: usize,
        seek: u64,
        out: &mut [u8],
    ) -> Result<(), Error> {
        check_length(length)?;
        self.xof_into(mode, &Slices(blobs), length, seek, out)
    }

    /// [`hash_slices_xof_into`](Self::hash_slices_xof_into) for packed
    /// blobs, Arrow style, as [`hash_packed_into`](Self::hash_packed_into)
    /// takes them: blob `i` is `data[offsets[i]..offsets[i + 1]]`. Offsets
    /// that decrease or run past `data` are an error, reported before a
    /// wrong length of `out`.
    ///
    /// ```
    /// use blake3_batch::{Engine, Mode};
    ///
    /// let engine = Engine::builder().build()?;
    /// let mut out = [0u8; 2 * 48];
    /// engine.hash_packed_xof_into(Mode::Hash, b"adagrace", &[0u32, 3, 8], 48, &mut out)?;
    /// let mut want = [0u8; 48];
    /// blake3::Hasher::new().update(b"ada").finalize_xof().fill(&mut want);
    /// assert_eq!(out[..48], want);
    /// # Ok::<(), blake3_batch::Error>(())
    /// ```
    pub fn hash_packed_xof_into<O: Offset>(
        &self,
        mode: Mode,
        data: &[u8],
        offsets: &[O],
        length: usize,
        out: &mut [u8],
    ) -> Result<(), Error> {
        self.hash_packed_xof_at_into(mode, data, offsets, length, 0, out)
    }

    /// [`hash_packed_xof_into`](Self::hash_packed_xof_into) from byte
    /// `seek` of each blob's output on, as
    /// [`hash_slices_xof_at_into`](Self::hash_slices_xof_at_into).
    pub fn hash_packed_xof_at_into<O: Offset>(
        &self,
        mode: Mode,
        data: &[u8],
        offsets: &[O],
        length: usize,
        seek: u64,
        out: &mut [u8],
    ) -> Result<(), Error> {
        check_length(length)?;
        let blobs = offsets.len().saturating_sub(1);
        if (length, seek) == (32, 0) && !offsets.is_empty() && out.len() == blobs * 32 {
            // Full digests take the packed path itself, which checks the
            // offsets as it hashes where that pays.
            let (slots, _) = out.as_chunks_mut::<32>();
            return self.hash_packed_into(mode, data, offsets, slots);
        }
        let packed = self.checked_packed(data, offsets)?;
        self.xof_into(mode, &packed, length, seek, out)
    }

    /// [`hash_slices_xof_into`](Self::hash_slices_xof_into) for `data` cut
    /// into records of `record_size` bytes, as
    /// [`hash_records_into`](Self::hash_records_into) takes them.
    ///
    /// ```
    /// use blake3_batch::{Engine, Mode};
    ///
    /// let engine = Engine::builder().build()?;
    /// let mut out = [0u8; 3 * 16];
    /// engine.hash_records_xof_into(Mode::Hash, &[5u8; 12], 4, 16, &mut out)?;
    /// assert_eq!(out[32..], blake3::hash(&[5; 4]).as_bytes()[..16]);
    /// # Ok::<(), blake3_batch::Error>(())
    /// ```
    pub fn hash_records_xof_into(
        &self,
        mode: Mode,
        data: &[u8],
        record_size: usize,
        length: usize,
        out: &mut [u8],
    ) -> Result<(), Error> {
        self.hash_records_xof_at_into(mode, data, record_size, length, 0, out)
    }

    /// [`hash_records_xof_into`](Self::hash_records_xof_into) from byte
    /// `seek` of each record's output on, as
    /// [`hash_slices_xof_at_into`](Self::hash_slices_xof_at_into).
    pub fn hash_records_xof_at_into(
        &self,
        mode: Mode,
        data: &[u8],
        record_size: usize,
        length: usize,
        seek: u64,
        out: &mut [u8],
    ) -> Result<(), Error> {
        check_length(length)?;
        let records = Records::new(data, record_size)?;
        self.xof_into(mode, &records, length, seek, out)
    }

    /// `length` bytes of output from byte `seek` on of every blob of a
    /// validated `source`.
    fn xof_into<S: BlobSource>(
        &self,
        mode: Mode,
        source: &S,
        length: usize,
        seek: u64,
        out: &mut [u8],
    ) -> Result<(), Error> {
        let blobs = source.count();
        if blobs.checked_mul(length) != Some(out.len()) {
            return Err(ErrorKind::XofOutputLength {
                blobs,
                length,
                actual: out.len(),
            }
            .into());
        }
        // Bytes `seek..seek + length` of the output, where they lie within
        // the digest.
        let in_digest = usize::try_from(seek)
            .ok()
            .filter(|&start| start.checked_add(length).is_some_and(|end| end <= 32));
        match in_digest {
            // `out` is a whole number of digests: checked above.
            Some(0) if length == 32 => self.run(mode, source, out.as_chunks_mut::<32>().0),
            Some(start) => self.digest_pieces(mode, source, start, length, out),
            None => {
                self.extended_outputs(mode, source, length, seek, out);
                Ok(())
            }
        }
    }

    /// Bytes `start..start + length` (within the first 32) of every
    /// digest, hashed on the backend a piece of blobs at a time (see
    /// [`PIECE_BLOBS_PER_THREAD`]), then cut from the digests on the
    /// engine's threads (cutting 200 000 on one thread took as long as
    /// hashing their 64-byte blobs on two). A batch that may fail part way
    /// (the GPU's) is cut into a buffer of its own, so that `out` is
    /// written only once every piece is hashed.
    fn digest_pieces<S: BlobSource>(
        &self,
        mode: Mode,
        source: &S,
        start: usize,
        length: usize,
        out: &mut [u8],
    ) -> Result<(), Error> {
        let blobs = source.count();
        let mut staged = (self.inner.backend == Backend::Gpu).then(|| vec![0u8; out.len()]);
        let pieces_out = match &mut staged {
            Some(staged) => staged.as_mut_slice(),
            None => &mut *out,
        };
        let mut piece = PIECE_BLOBS_PER_THREAD * self.inner.threads;
        if self.inner.gpu.is_some() {
            piece = piece.max(GPU_PIECE_BLOBS);
        }
        let mut digests = vec![[0u8; 32]; blobs.min(piece)];
        let firsts = (0..blobs).step_by(piece);
        for (first, pieces) in firsts.zip(pieces_out.chunks_mut(piece * length)) {
            let len = pieces.len() / length;
            let digests = &mut digests[..len];
            let span = Span {
                source,
                start: first,
                len,
            };
            self.run(mode, &span, digests)?;
            let tasks = pieces
                .chunks_mut(CUTS_PER_TASK * length)
                .zip(digests.chunks(CUTS_PER_TASK))
                .collect();
            self.cpu_threads().for_each(tasks, |(pieces, digests)| {
                cut_pieces(digests.as_flattened(), start, length, pieces);
            });
        }
        if let Some(staged) = staged {
            out.copy_from_slice(&staged);
        }
        Ok(())
    }

    /// `length` bytes of extended output from byte `seek` on (past the
    /// digest) of every blob, on the engine's threads in tasks of
    /// [`BLOBS_PER_TASK`]: blobs of up to 16 KiB in the lanes where the
    /// output blocks spanned fit them, others of up to
    /// [`LONG_BLOB`] by `blake3` a thread each, longer ones after them, all
    /// in subtrees over every thread, so that one long blob does not hold
    /// the batch to one thread.
    fn extended_outputs<S: BlobSource>(
        &self,
        mode: Mode,
        source: &S,
        length: usize,
        seek: u64,
        out: &mut [u8],
    ) {
        // The derive-key context is hashed once, not once per blob, and
        // its key serves the lanes too.
        let hashing = SubtreeHashing::new(mode);
        let words = hashing.words();
        let kernel = self.inner.kernel;
        let skip = (seek % BLOCK_LEN as u64) as usize;
        let in_lanes = skip + length <= MAX_LANE_OUTPUT;
        let left_blocks = left_to_blake3(skip, length);
        let threads = self.cpu_threads();
        let tasks = tasks(source, length, task_bytes(source, self.threads()), out);
        // Each task gives back the indices of its long blobs.
        let long = threads.map(tasks, |(first, out)| {
            // Blobs of up to 16 KiB in the lanes, where the output fits
            // them; the rest (`left`, places in `out`) by `blake3`.
            let left = match in_lanes {
                true => kernel.root_outputs(words, source, first, (length, seek), left_blocks, out),
                false => (0..out.len() / length).collect(),
            };
            let mut long = Vec::new();
            for place in left {
                let blob = source.blob(first + place);
                match blob.len() <= LONG_BLOB {
                    true => {
                        let mut reader = hashing.output_reader(Threads::One, blob);
                        reader.set_position(seek);
                        reader.fill(&mut out[place * length..][..length]);
                    }
                    false => long.push(first + place),
                }
            }
            long
        });
        let long: Vec<usize> = long.into_iter().flatten().collect();
        let blobs: Vec<&[u8]> = long.iter().map(|&index| source.blob(index)).collect();
        let readers = hashing.output_readers_of_all(threads, &blobs);
        for (index, mut reader) in long.into_iter().zip(readers) {
            reader.set_position(seek);
            reader.fill(&mut out[index * length..][..length]);
        }
    }
}

impl Engine {
    /// Every blob's extended output as an `OutputReader`, by `blake3` on
    /// the engine's threads: blobs of up to [`LONG_BLOB`] a thread each,
    /// longer ones after them, all in subtrees over every thread.
    pub(crate) fn output_readers<S: BlobSource>(
        &self,
        mode: Mode,
        source: &S,
    ) -> Vec<blake3::OutputReader> {
        let hashing = SubtreeHashing::new(mode);
        let threads = self.cpu_threads();
        let indices: Vec<usize> = (0..source.count()).collect();
        let short = threads.map(indices, |index| {
            let blob = source.blob(index);
            (blob.len() <= LONG_BLOB).then(|| hashing.output_reader(Threads::One, blob))
        });
        let long: Vec<&[u8]> = (0..source.count())
            .zip(&short)
            .filter(|(_, output)| output.is_none())
            .map(|(index, _)| source.blob(index))
            .collect();
        let mut long = hashing.output_readers_of_all(threads, &long).into_iter();
        let outputs = short.into_iter().map(|output| {
            output
                .or_else(|| long.next())
                .expect("a reader for every long blob")
        });
        outputs.collect()
    }
}

/// The most blocks a blob of up to a chunk may have for its output of
/// `length` bytes from `skip` bytes into a block to be made by `blake3`
/// rather than the lanes: [`LEFT_TO_BLAKE3_BLOCKS`] where its output
/// reader makes all of it in one pass of its AVX-512 assembly, 16 whole
/// blocks (it fills 16 at a time, then 8, 4, 2 and 1, and each part-block
/// by a compression of its own); else none.
fn left_to_blake3(skip: usize, length: usize) -> usize {
    let one_pass = skip == 0 && length == 16 * BLOCK_LEN;
    match one_pass && blake3_fills_outputs_side_by_side() {
        true => LEFT_TO_BLAKE3_BLOCKS,
        false => 0,
    }
}

/// Whether `blake3`'s output reader makes a blob's output blocks side by
/// side, 16 at a time: with its AVX-512 assembly, which it builds on x86-64
/// Unix. Elsewhere it makes them one compression at a time.
fn blake3_fills_outputs_side_by_side() -> bool {
    #[cfg(all(unix, target_arch = "x86_64"))]
    return std::arch::is_x86_feature_detected!("avx512f")
        && std::arch::is_x86_feature_detected!("avx512vl");
    #[cfg(not(all(unix, target_arch = "x86_64")))]
    return false;
}

/// The input bytes at which a task of [`Engine::extended_outputs`] ends
/// on `threads` threads: [`TASK_BYTES`], or less where that would make
/// fewer than [`TASKS_PER_THREAD`] tasks a thread, down to
/// [`MIN_TASK_BYTES`]. With 256 KiB, 8 blobs of 100 KB made 3 tasks, and
/// two threads hashed them 1.5x as fast as one (sixteen could have used
/// only three).
fn task_bytes<S: BlobSource>(source: &S, threads: usize) -> usize {
    let tasks = threads * TASKS_PER_THREAD;
    // Blobs enough for that many tasks of BLOBS_PER_TASK: none to count.
    if source.count() >= tasks * BLOBS_PER_TASK {
        return TASK_BYTES;
    }
    let total: usize = (0..source.count()).map(|index| source.len(index)).sum();
    (total / tasks).clamp(MIN_TASK_BYTES, TASK_BYTES)
}

/// The tasks of [`Engine::extended_outputs`]: runs of consecutive blobs of
/// at most [`BLOBS_PER_TASK`] blobs that end once they hold `task_bytes`,
/// each with its first blob and its part of `out` (`length` bytes a blob).
fn tasks<'o, S: BlobSource>(
    source: &S,
    length: usize,
    task_bytes: usize,
    mut out: &'o mut [u8],
) -> Vec<(usize, &'o mut [u8])> {
    let mut tasks = Vec::new();
    let mut first = 0;
    while first < source.count() {
        let (mut end, mut bytes) = (first, 0);
        while end < source.count() && end - first < BLOBS_PER_TASK && bytes < task_bytes {
            bytes += source.len(end);
            end += 1;
        }
        let (task_out, rest) = std::mem::take(&mut out).split_at_mut((end - first) * length);
        tasks.push((first, task_out));
        (first, out) = (end, rest);
    }
    tasks
}

/// Writes bytes `start..start + length` of each 32-byte digest in
/// `digests` into `pieces`, back to back. Each piece but the last few is
/// written as 32 bytes copied from its start on, running into the next
/// pieces, which are written after it: a copy of a fixed size is a few
/// instructions, one of `length` bytes a call to `memcpy` (which took a
/// fifth of the time to hash 64-byte blobs and cut 8 bytes from each).
fn cut_pieces(digests: &[u8], start: usize, length: usize, pieces: &mut [u8]) {
    let count = pieces.len() / length;
    // The 32 bytes from a piece on fit in `pieces` where it and the pieces
    // after it are at least ⌈32 / length⌉, and then the 32 from its
    // digest's `start` fit in `digests` (two digests where `length` is
    // under 32).
    let wide = (count + 1).saturating_sub(32usize.div_ceil(length));
    for index in 0..wide {
        let digest = &digests[index * 32 + start..][..32];
        pieces[index * length..][..32].copy_from_slice(digest);
    }
    for index in wide..count {
        let digest = &digests[index * 32 + start..][..length];
        pieces[index * length..][..length].copy_from_slice(digest);
    }
}

/// An output length of at least one byte.
fn check_length(length: usize) -> Result<(), Error> {
    match length {
        0 => Err(ErrorKind::XofLength.into()),
        _ => Ok(()),
    }
}

#[cfg(test)]
mod tests {
    use super::{cut_pieces, task_bytes, tasks, MIN_TASK_BYTES, TASKS_PER_THREAD, TASK_BYTES};
    use crate::blobs::Slices;

    /// The tasks' blob counts of `blobs` on `threads` threads.
    fn task_sizes(blobs: &[Vec<u8>], threads: usize) -> Vec<usize> {
        let source = &Slices(blobs);
        let mut out = vec![0u8; blobs.len()];
        let tasks = tasks(source, 1, task_bytes(source, threads), &mut out);
        tasks.iter().map(|(_, out)| out.len()).collect()
    }

    /// A few long blobs are cut into tasks enough for every thread to take
    /// some; a batch with bytes enough keeps tasks of [`TASK_BYTES`], and
    /// one of short blobs tasks of at least [`MIN_TASK_BYTES`].
    #[test]
    fn a_few_long_blobs_make_tasks_for_every_thread() {
        let few_long = vec![vec![0u8; 100_000]; 8];
        assert_eq!(task_sizes(&few_long, 1), [3, 3, 2]);
        assert_eq!(task_sizes(&few_long, 2), [2, 2, 2, 2]);
        assert_eq!(task_sizes(&few_long, 16), [1; 8]);
        let many = vec![vec![0u8; 100_000]; 100];
        const { assert!(TASK_BYTES.div_ceil(100_000) == 3) };
        assert!(task_sizes(&many, 2)[..33].iter().all(|&size| size == 3));
        let short = vec![vec![0u8; 1000]; 40];
        const { assert!(40 * 1000 / (2 * TASKS_PER_THREAD) < MIN_TASK_BYTES) };
        assert_eq!(task_sizes(&short, 2), [17, 17, 6]);
    }

    /// Every piece of every digest, at every count from none to past the
    /// pieces written 32 bytes wide, is the bytes it is cut from, and
    /// nothing is written past the pieces.
    #[test]
    fn pieces_are_cut_from_their_digests_at_every_start_and_length() {
        let digests: Vec<u8> = (0..40 * 32).map(|byte| (byte * 7 + 3) as u8).collect();
        for length in 1..=32 {
            for start in 0..=32 - length {
                for count in 0..=40 {
                    let mut pieces = vec![0xee; count * length + 1];
                    cut_pieces(
                        &digests[..count * 32],
                        start,
                        length,
                        &mut pieces[..count * length],
                    );
                    let want: Vec<u8> = digests[..count * 32]
                        .chunks_exact(32)
                        .flat_map(|digest| &digest[start..start + length])
                        .copied()
                        .collect();
                    let label = format!("{count} pieces of {length} from {start}");
                    assert_eq!(pieces[..count * length], want, "{label}");
                    assert_eq!(pieces[count * length], 0xee, "{label}");
                }
            }
        }
    }
}
