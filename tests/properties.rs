//! Differential property tests: random batches against the `blake3` crate,
//! on every CPU backend and thread count, and on the GPU.

mod common;

use blake3_batch::{Engine, Mode};
use common::{all_engines, engines, first_mismatch, pack, reference, xorshift};
use proptest::prelude::*;

/// How one blob is cut from the shared buffer: start and length.
type Cut = (usize, usize);

const BUFFER_LEN: usize = 300_000;

/// A source buffer of pseudo-random bytes that blobs are cut out of, so
/// blobs start at arbitrary (odd) addresses.
fn buffer() -> Vec<u8> {
    let mut next = xorshift(0x9E37_79B9_7F4A_7C15);
    (0..BUFFER_LEN).map(|_| (next() >> 24) as u8).collect()
}

/// Mostly lengths 0..=5000 (all block counts, one to five chunks), one in
/// twenty a large blob up to 200 KB.
fn blob_len() -> impl Strategy<Value = usize> {
    prop_oneof![
        19 => 0usize..=5000,
        1 => 5001usize..=200_000,
    ]
}

fn cut() -> impl Strategy<Value = Cut> {
    blob_len().prop_flat_map(|len| (0..=BUFFER_LEN - len, Just(len)))
}

#[derive(Clone, Debug)]
enum ModeChoice {
    Hash,
    Keyed([u8; 32]),
    Derive(String),
}

impl ModeChoice {
    fn mode(&self) -> Mode<'_> {
        match self {
            ModeChoice::Hash => Mode::Hash,
            ModeChoice::Keyed(key) => Mode::KeyedHash(key),
            ModeChoice::Derive(context) => Mode::DeriveKey(context),
        }
    }
}

fn mode_choice() -> impl Strategy<Value = ModeChoice> {
    prop_oneof![
        Just(ModeChoice::Hash),
        any::<[u8; 32]>().prop_map(ModeChoice::Keyed),
        // Contexts past one chunk too: the context hash is itself a tree.
        prop_oneof![".{0,40}", "[a-z]{1000,2100}"].prop_map(ModeChoice::Derive),
    ]
}

fn check_all_layouts(
    buffer: &[u8],
    cuts: &[Cut],
    choice: &ModeChoice,
) -> Result<(), TestCaseError> {
    let mode = choice.mode();
    let blobs: Vec<&[u8]> = cuts
        .iter()
        .map(|&(start, len)| &buffer[start..start + len])
        .collect();
    let want: Vec<[u8; 32]> = blobs.iter().map(|blob| reference(mode, blob)).collect();
    let (data, offsets) = pack(&blobs, 1);
    let offsets32: Vec<u32> = offsets.iter().map(|&o| o as u32).collect();
    for (name, engine) in all_engines() {
        let mut out = vec![[0u8; 32]; blobs.len()];
        engine.hash_slices_into(mode, &blobs, &mut out).unwrap();
        prop_assert_eq!(&out, &want, "slices on {}", name);
        out.fill([0; 32]);
        engine
            .hash_packed_into(mode, &data, &offsets, &mut out)
            .unwrap();
        prop_assert_eq!(&out, &want, "packed u64 on {}", name);
        out.fill([0; 32]);
        engine
            .hash_packed_into(mode, &data, &offsets32, &mut out)
            .unwrap();
        prop_assert_eq!(&out, &want, "packed u32 on {}", name);
    }
    Ok(())
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(64))]

    #[test]
    fn random_batches_match_blake3(
        cuts in prop::collection::vec(cut(), 0..=300),
        choice in mode_choice(),
    ) {
        check_all_layouts(&buffer(), &cuts, &choice)?;
    }

    #[test]
    fn random_fixed_size_records_match_blake3(
        record_size in prop_oneof![1usize..=1100, 1100usize..=9000],
        count in 0usize..=33,
        start in 0usize..64,
        choice in mode_choice(),
    ) {
        let buffer = buffer();
        let data = &buffer[start..start + record_size * count];
        let mode = choice.mode();
        let want: Vec<[u8; 32]> = data.chunks(record_size).map(|r| reference(mode, r)).collect();
        for (name, engine) in all_engines() {
            let mut out = vec![[0u8; 32]; count];
            engine.hash_records_into(mode, data, record_size, &mut out).unwrap();
            prop_assert_eq!(&out, &want, "records on {}", name);
        }
    }
}

/// Batch sizes around every lane width and its multiples, at block and chunk
/// boundary lengths, at odd addresses: every tail path of the lane groups,
/// and an odd number of whole groups after a pair (three and a blob) where
/// a kernel hashes equal-length groups two at a time.
#[test]
fn batches_around_lane_widths_at_boundary_lengths() {
    let buffer = buffer();
    let lengths = [0, 1, 63, 64, 65, 127, 128, 1023, 1024, 1025, 2048, 2049];
    let mut sizes = vec![1, 2, 3, 31, 32, 33];
    for (_, engine) in all_engines() {
        for width in [engine.lanes(), 4, 8, 16] {
            sizes.extend([
                width - 1,
                width,
                width + 1,
                2 * width - 1,
                2 * width + 1,
                3 * width + 1,
            ]);
        }
    }
    sizes.sort_unstable();
    sizes.dedup();
    for choice in [
        ModeChoice::Hash,
        ModeChoice::Keyed([9; 32]),
        ModeChoice::Derive("ctx".into()),
    ] {
        for &len in &lengths {
            for &size in &sizes {
                let cuts: Vec<Cut> = (0..size).map(|i| (1 + 3 * i, len)).collect();
                check_all_layouts(&buffer, &cuts, &choice).unwrap();
                // Mixed: this length alternating with its neighbours.
                let mixed: Vec<Cut> = (0..size)
                    .map(|i| (7 * i + 1, len + (i % 3)).min((7 * i + 1, 5000)))
                    .collect();
                check_all_layouts(&buffer, &mixed, &choice).unwrap();
            }
        }
    }
}

/// Runs of equal lengths (hashed a whole lane group at a time, straight into
/// their slots) next to mixed lengths (binned), starting at every offset
/// from a lane group boundary, including runs of one length over a chunk.
#[test]
fn equal_length_runs_among_mixed_lengths() {
    let buffer = buffer();
    for run_len in [0, 64, 100, 1024, 1025, 3000] {
        for lead in 0..17 {
            let mut cuts: Vec<Cut> = Vec::new();
            let mut start = 5;
            let mut push = |cuts: &mut Vec<Cut>, len: usize| {
                cuts.push((start, len));
                start = (start + 11) % 4000;
            };
            for i in 0..lead {
                push(&mut cuts, 1 + 37 * i % 1100);
            }
            for _ in 0..40 {
                push(&mut cuts, run_len);
            }
            for i in 0..lead + 3 {
                push(&mut cuts, 2 + 53 * i % 1024);
            }
            check_all_layouts(&buffer, &cuts, &ModeChoice::Hash).unwrap();
        }
    }
}

/// A batch far past one work unit (1 MiB): on one thread the whole batch
/// is one unit, whose bins carry blobs across what would be unit ends and
/// whose tree blobs are hashed every 1 MiB of them; on two, many units.
#[test]
fn batches_past_one_work_unit() {
    let buffer = buffer();
    let mut random = xorshift(0x2545_F491_4F6C_DD1D);
    let mut next = move || random() as usize;
    let cuts: Vec<Cut> = (0..3000)
        .map(|index| {
            // Every seventh blob spans chunks: 1025..=20000 bytes.
            let len = if index % 7 == 3 {
                1025 + next() % 18_976
            } else {
                next() % 1025
            };
            (next() % (BUFFER_LEN - len), len)
        })
        .collect();
    let tree_bytes: usize = cuts.iter().map(|cut| cut.1).filter(|&len| len > 1024).sum();
    assert!(tree_bytes > 3 << 20, "several 1 MiB batches of tree blobs");
    for choice in [ModeChoice::Hash, ModeChoice::Keyed([9; 32])] {
        check_all_layouts(&buffer, &cuts, &choice).unwrap();
    }
}

/// Batches that the calling thread shares with the pool's threads: a pool
/// of three and rayon's global pool, called from outside and from inside a
/// rayon worker, on batches of one chunk, of many chunks with the weight at
/// the front, and with blobs of a MiB and more (spread over the engine's
/// threads from whichever thread takes them).
#[test]
fn batches_shared_with_the_calling_thread() {
    let buffer = buffer();
    let mut random = xorshift(0x0123_4567_89AB_CDEF);
    let mut blobs: Vec<Vec<u8>> = (0..4000)
        .map(|index| {
            // The first 200 blobs span chunks, the rest are short.
            let len = if index < 200 { 5000 } else { 1 } + random() as usize % 1100;
            let start = random() as usize % (BUFFER_LEN - len);
            buffer[start..start + len].to_vec()
        })
        .collect();
    for (index, len) in [(7, 1 << 20), (2000, (1 << 20) + 1), (3999, (2 << 20) + 3)] {
        blobs[index] = buffer
            .iter()
            .copied()
            .cycle()
            .skip(index)
            .take(len)
            .collect();
    }
    let engines = [
        ("pool of 3", Engine::builder().threads(3).build().unwrap()),
        ("global pool", Engine::builder().build().unwrap()),
    ];
    for (name, engine) in &engines {
        for count in [40, 4000] {
            let batch = &blobs[..count];
            let outside = first_mismatch(engine, Mode::Hash, batch);
            assert_eq!(outside, None, "{name}, {count} blobs, called from outside");
            let inside = rayon::join(|| first_mismatch(engine, Mode::Hash, batch), || ()).0;
            assert_eq!(
                inside, None,
                "{name}, {count} blobs, called from a rayon worker"
            );
        }
    }
}

/// Blobs of a MiB and more on several threads are cut into subtrees that
/// every thread takes, their chaining values merged to the root: alone in
/// a batch and among small blobs, in every mode, on pools of 2 and 3 and
/// rayon's global pool, for lengths that end on a subtree, one byte past
/// one, inside a chunk, and with subtree counts that are not powers of two.
#[test]
fn large_blobs_spread_over_every_thread() {
    let buffer = buffer();
    let subtree = 256 * 1024;
    let lengths = [
        1 << 20,
        (1 << 20) + 1,
        5 * subtree + 1025,
        (2 << 20) + 3,
        7 * subtree - 64,
        (5 << 20) - 1000,
    ];
    let large: Vec<Vec<u8>> = lengths
        .iter()
        .enumerate()
        .map(|(index, &len)| {
            let skip = index * 4099;
            buffer
                .iter()
                .copied()
                .cycle()
                .skip(skip)
                .take(len)
                .collect()
        })
        .collect();
    let mut mixed: Vec<Vec<u8>> = (0..300)
        .map(|index| buffer[index..][..index % 1500].to_vec())
        .collect();
    for (slot, blob) in [5, 120, 299].into_iter().zip(&large) {
        mixed[slot] = blob.clone();
    }
    let engines = [
        ("pool of 2", Engine::builder().threads(2).build().unwrap()),
        ("pool of 3", Engine::builder().threads(3).build().unwrap()),
        ("global pool", Engine::builder().build().unwrap()),
    ];
    let key = [0x42; 32];
    let modes = [
        Mode::Hash,
        Mode::KeyedHash(&key),
        Mode::DeriveKey("b3batch subtrees"),
    ];
    for (name, engine) in &engines {
        for mode in modes {
            for blob in &large {
                let alone = first_mismatch(engine, mode, std::slice::from_ref(blob));
                assert_eq!(alone, None, "{name}, {mode:?}, {} bytes alone", blob.len());
            }
            let among = first_mismatch(engine, mode, &mixed);
            assert_eq!(among, None, "{name}, {mode:?}, among small blobs");
            let (data, offsets) = pack(&mixed, 3);
            let mut out = vec![[0u8; 32]; mixed.len()];
            engine
                .hash_packed_into(mode, &data, &offsets, &mut out)
                .unwrap();
            for (index, (blob, digest)) in mixed.iter().zip(&out).enumerate() {
                assert_eq!(
                    *digest,
                    reference(mode, blob),
                    "{name}, {mode:?}, packed blob {index}"
                );
            }
        }
        // Past 16 Ki offsets the threads check them before they hash.
        let mut many: Vec<&[u8]> = (0..20_000)
            .map(|index| &buffer[index..][..index % 100])
            .collect();
        many[17] = &large[1];
        many[19_999] = &large[5];
        let (data, offsets) = pack(&many, 0);
        let mut out = vec![[0u8; 32]; many.len()];
        engine
            .hash_packed_into(Mode::Hash, &data, &offsets, &mut out)
            .unwrap();
        for (index, (blob, digest)) in many.iter().zip(&out).enumerate() {
            assert_eq!(
                *digest,
                reference(Mode::Hash, blob),
                "{name}, 20 000 packed, blob {index}"
            );
        }
    }
}

/// Equal-length batches (which a work unit cuts out of the packed bytes or
/// records itself, without looking up each blob) long enough for several
/// units on two threads, so units start past the first blob, with a tail
/// short of a lane group: single blocks, partial and full, and several
/// blocks.
#[test]
fn equal_length_batches_past_one_work_unit() {
    let buffer = buffer();
    for (len, count) in [(0, 2999), (1, 2999), (63, 3001), (64, 3005), (700, 3003)] {
        let cuts: Vec<Cut> = (0..count)
            .map(|index| ((index * 37) % (BUFFER_LEN - len), len))
            .collect();
        for choice in [ModeChoice::Hash, ModeChoice::Keyed([9; 32])] {
            check_all_layouts(&buffer, &cuts, &choice).unwrap();
        }
        if len == 0 {
            continue;
        }
        let mut records = vec![0u8; 1];
        for &(start, len) in &cuts {
            records.extend_from_slice(&buffer[start..start + len]);
        }
        let data = &records[1..];
        let want: Vec<[u8; 32]> = data.chunks(len).map(|r| reference(Mode::Hash, r)).collect();
        for (name, engine) in all_engines() {
            let mut out = vec![[0u8; 32]; count];
            engine
                .hash_records_into(Mode::Hash, data, len, &mut out)
                .unwrap();
            assert_eq!(out, want, "records of {len} bytes on {name}");
        }
    }
}

/// Batches of long blobs, which threads share blob by blob rather than a
/// lane group at a time, so that chunks start inside lane groups: equal
/// lengths the lanes take (regular trees, a chunk and a bit, two chunks per
/// lane) and lengths `blake3` takes, as slices and packed on every engine,
/// and as records on those and a pool of 3; in counts under a lane group,
/// one past it and a few groups with a tail.
#[test]
fn long_blobs_in_chunks_that_start_inside_lane_groups() {
    let buffer = buffer();
    let three = Engine::builder().threads(3).build().unwrap();
    let engines = all_engines()
        .iter()
        .map(|(name, engine)| (name.as_str(), engine));
    let engines: Vec<(&str, &Engine)> = engines.chain([("pool of 3", &three)]).collect();
    for len in [8 * 1024, 1025 + 1024, 16 * 1024, 32 * 1024, 70_001] {
        for count in [5, 17, 40] {
            let cuts: Vec<Cut> = (0..count)
                .map(|index| ((index * 4099) % (BUFFER_LEN - len), len))
                .collect();
            check_all_layouts(&buffer, &cuts, &ModeChoice::Hash).unwrap();
            let records: Vec<u8> = cuts
                .iter()
                .flat_map(|&(at, len)| &buffer[at..at + len])
                .copied()
                .collect();
            let want: Vec<[u8; 32]> = records
                .chunks(len)
                .map(|record| reference(Mode::Hash, record))
                .collect();
            for (name, engine) in &engines {
                let mut out = vec![[0u8; 32]; count];
                engine
                    .hash_records_into(Mode::Hash, &records, len, &mut out)
                    .unwrap();
                assert_eq!(out, want, "{count} records of {len} bytes on {name}");
            }
        }
    }
}

/// Slices that open with blobs of one length of at most a block, which a
/// work unit gathers straight from the slices many lane groups at a time
/// (128 blobs a kernel call), then change length at every position around
/// lane groups and those calls: cut from the buffer back to back (the
/// hardware prefetcher's case) and with a byte between them (hinted one by
/// one), at odd addresses, and owned apart. The two-thread engines split
/// the longer batches into units that each open the same way.
#[test]
fn slices_opening_with_one_short_length() {
    let buffer = buffer();
    for len in [0, 1, 32, 63, 64] {
        let other = if len == 64 { 63 } else { len + 1 };
        for change_at in [3, 15, 16, 17, 31, 33, 127, 128, 129, 255, 256, 300, 2100] {
            for gap in [0, 1] {
                let mut cuts: Vec<Cut> = Vec::new();
                let mut start = 1;
                for index in 0..change_at + 40 {
                    let blob_len = match index {
                        _ if index < change_at => len,
                        _ if index < change_at + 20 => other,
                        _ => 1 + index % 300,
                    };
                    cuts.push((start, blob_len));
                    start = (start + blob_len + gap) % (BUFFER_LEN - 300);
                }
                check_all_layouts(&buffer, &cuts, &ModeChoice::Hash).unwrap();
                let owned: Vec<Vec<u8>> = cuts
                    .iter()
                    .map(|&(start, len)| buffer[start..start + len].to_vec())
                    .collect();
                for (name, engine) in all_engines() {
                    let mismatch = first_mismatch(engine, Mode::Hash, &owned);
                    assert_eq!(mismatch, None, "owned slices of {len} bytes on {name}");
                }
            }
        }
        // All of one length: every whole group from the slices, the tail
        // short of a group through the binner.
        for count in [31, 33, 129, 5000] {
            let cuts: Vec<Cut> = (0..count)
                .map(|index| ((1 + index * len) % (BUFFER_LEN - len), len))
                .collect();
            for choice in [ModeChoice::Hash, ModeChoice::Keyed([3; 32])] {
                check_all_layouts(&buffer, &cuts, &choice).unwrap();
            }
        }
    }
}

/// Batches of more than 16 Ki packed blobs, whose offsets an engine of
/// several threads checks in pieces (8 Ki offsets each) on all of them
/// before it hashes: equal lengths (cut out of the bytes, not looked up),
/// equal lengths but for one blob in the last piece or right after the
/// first piece (which the merged check must see, or the batch is cut at the
/// wrong places), and mixed lengths; with u64 and u32 offsets.
#[test]
fn packed_batches_checked_in_pieces() {
    let buffer = buffer();
    let mut random = xorshift(0x5851_F42D_4C95_7F2D);
    let count = 20_000;
    let equal: Vec<Cut> = (0..count)
        .map(|index| ((index * 13) % 200_000, 64))
        .collect();
    let mut odd_in_last_piece = equal.clone();
    odd_in_last_piece[count - 5].1 = 65;
    let mut odd_after_first_piece = equal.clone();
    odd_after_first_piece[8192].1 = 63;
    let mixed: Vec<Cut> = (0..count)
        .map(|_| {
            let len = random() as usize % 1100;
            (random() as usize % (BUFFER_LEN - len), len)
        })
        .collect();
    let batches = [equal, odd_in_last_piece, odd_after_first_piece, mixed];
    for (batch, cuts) in batches.iter().enumerate() {
        let blobs: Vec<&[u8]> = cuts
            .iter()
            .map(|&(start, len)| &buffer[start..start + len])
            .collect();
        let want: Vec<[u8; 32]> = blobs
            .iter()
            .map(|blob| reference(Mode::Hash, blob))
            .collect();
        let (data, offsets) = pack(&blobs, 3);
        let offsets32: Vec<u32> = offsets.iter().map(|&offset| offset as u32).collect();
        let mut engines = engines();
        // rayon's global pool, on as many threads as this machine has.
        engines.push(("global pool".to_owned(), Engine::builder().build().unwrap()));
        for (name, engine) in engines {
            let mut out = vec![[0u8; 32]; count];
            engine
                .hash_packed_into(Mode::Hash, &data, &offsets, &mut out)
                .unwrap();
            assert_eq!(out, want, "batch {batch}, u64 offsets, {name}");
            out.fill([0; 32]);
            engine
                .hash_packed_into(Mode::Hash, &data, &offsets32, &mut out)
                .unwrap();
            assert_eq!(out, want, "batch {batch}, u32 offsets, {name}");
        }
    }
}

/// Long runs of blobs of at most a block (whose lane groups are held back
/// and hashed many groups per kernel call): runs longer than several calls
/// hold, a run ending where one of another length begins, a run broken by a
/// few blobs of mixed lengths and resumed, at every offset from a lane
/// group boundary, in every mode, and as fixed-size records.
#[test]
fn single_block_runs_change_length_and_resume() {
    let buffer = buffer();
    let lengths = [0, 1, 31, 32, 63, 64];
    let modes = [
        ModeChoice::Hash,
        ModeChoice::Keyed([5; 32]),
        ModeChoice::Derive("runs".into()),
    ];
    for (index, &len) in lengths.iter().enumerate() {
        let other = lengths[(index + 1) % lengths.len()];
        for lead in [0, 1, 7, 9, 15, 17] {
            let mut cuts: Vec<Cut> = Vec::new();
            let mut start = 3;
            let mut push = |cuts: &mut Vec<Cut>, len: usize| {
                cuts.push((start, len));
                start = (start + len + 1) % 200_000;
            };
            for i in 0..lead {
                push(&mut cuts, 65 + 29 * i % 900);
            }
            for _ in 0..300 {
                push(&mut cuts, len);
            }
            for _ in 0..77 {
                push(&mut cuts, other);
            }
            for i in 0..5 {
                push(&mut cuts, 100 + 13 * i);
            }
            for _ in 0..133 {
                push(&mut cuts, len);
            }
            for choice in &modes {
                check_all_layouts(&buffer, &cuts, choice).unwrap();
            }
        }
        if len == 0 {
            continue;
        }
        let count = 517;
        let data = &buffer[1..1 + len * count];
        for choice in &modes {
            let mode = choice.mode();
            let want: Vec<[u8; 32]> = data.chunks(len).map(|r| reference(mode, r)).collect();
            for (name, engine) in all_engines() {
                let mut out = vec![[0u8; 32]; count];
                engine.hash_records_into(mode, data, len, &mut out).unwrap();
                assert_eq!(out, want, "records of {len} bytes on {name}");
            }
        }
    }
}

/// Mixed lengths whose bins fill in turn, which a kernel that compresses
/// two groups side by side hashes two groups of one block count at a time,
/// and at the end the bins' full first groups in pairs of different block
/// counts (the longer's extra blocks alone) and an odd one alone; longer
/// blobs' chunks (counters past 0) fill the lane tree's bins the same way.
/// In every mode, on every backend.
#[test]
fn full_bins_hashed_in_pairs() {
    let buffer = buffer();
    let cycles: [&[usize]; 4] = [
        &[65, 700, 1],
        &[1024, 129, 1000, 3000],
        &[64, 960, 2049, 1023, 17],
        &[5000, 200],
    ];
    for cycle in cycles {
        for count in [97, 160, 333, 700] {
            let cuts: Vec<Cut> = (0..count)
                .map(|i| (1 + 13 * i % 4000, cycle[i % cycle.len()]))
                .collect();
            for choice in [ModeChoice::Hash, ModeChoice::Keyed([7; 32])] {
                check_all_layouts(&buffer, &cuts, &choice).unwrap();
            }
        }
    }
}

/// Blobs of a whole multiple of a lane group's chunks (which go to `blake3`
/// rather than the lane tree) and their neighbours, equal and mixed, for
/// every lane width: each side of that routing choice.
#[test]
fn blobs_at_whole_lane_groups_of_chunks() {
    let buffer = buffer();
    let mut lengths = Vec::new();
    for width in [4, 8, 16] {
        for chunks in [width, 2 * width, 3 * width] {
            let len = chunks * 1024;
            lengths.extend([len - 1, len, len + 1]);
        }
    }
    for choice in [ModeChoice::Hash, ModeChoice::Keyed([3; 32])] {
        for &len in &lengths {
            let equal: Vec<Cut> = (0..9).map(|i| (1 + 5 * i, len)).collect();
            check_all_layouts(&buffer, &equal, &choice).unwrap();
        }
        let mixed: Vec<Cut> = lengths
            .iter()
            .enumerate()
            .map(|(i, &len)| (3 + 7 * i, len))
            .collect();
        check_all_layouts(&buffer, &mixed, &choice).unwrap();
    }
}

/// Equal lengths of a power-of-two number of whole chunks (4 KiB pages,
/// 8 KiB records), whose trees are all one shape: packed or as records, a
/// work unit cuts their chunks out of the bytes and hashes each tree level
/// as one run of parent blocks, in slices of 1 MiB. Enough blobs for two
/// slices, the second short of a lane group at every level (up to 8 KiB)
/// or at the levels near the roots (16 and 32 KiB, more chunks a blob than
/// AVX-512 has lanes), in every mode.
#[test]
fn regular_trees_in_slices() {
    let buffer = buffer();
    for (len, count) in [
        (2048, 517),
        (4096, 261),
        (8192, 133),
        (16384, 69),
        (32768, 37),
    ] {
        let cuts: Vec<Cut> = (0..count)
            .map(|index| ((index * 37) % (BUFFER_LEN - len), len))
            .collect();
        let choices = [
            ModeChoice::Hash,
            ModeChoice::Keyed([5; 32]),
            ModeChoice::Derive("regular trees".to_owned()),
        ];
        for choice in &choices {
            check_all_layouts(&buffer, &cuts, choice).unwrap();
        }
        let mut records = vec![0u8; 1];
        for &(start, len) in &cuts {
            records.extend_from_slice(&buffer[start..start + len]);
        }
        let data = &records[1..];
        for choice in &choices {
            let mode = choice.mode();
            let want: Vec<[u8; 32]> = data.chunks(len).map(|r| reference(mode, r)).collect();
            for (name, engine) in all_engines() {
                let mut out = vec![[0u8; 32]; count];
                engine.hash_records_into(mode, data, len, &mut out).unwrap();
                assert_eq!(out, want, "records of {len} bytes in {mode:?} on {name}");
            }
        }
    }
}
