//! `Engine::blob_hasher`: blobs pushed one at a time from a buffer the
//! caller reuses, against `blake3` in every mode on every CPU backend and
//! the GPU; digests in the order pushed, long blobs in their turn; the
//! batch's limits on bytes and blobs; a caller whose `emit` fails; each
//! blob's extended output.

mod common;

use blake3_batch::{Backend, BlobDigest, BlobHasher, Engine, Error, HasherOutput, Mode};
use common::{
    all_engines, read_xof, reference, reference_xof, reference_xof_at, vector_input, xorshift,
};

/// Blobs of at least this many bytes are hashed on their own
/// (`src/engine/blob_hasher.rs`)...
const DIRECT_BLOB: usize = 1 << 20;
/// ...a batch holds at most this many blobs...
const BATCH_BLOBS: usize = 64 * 1024;
/// ...and on the CPU at most this many bytes.
const CPU_BATCH_BYTES: usize = 16 << 20;

const KEY: [u8; 32] = [0x5c; 32];

fn modes() -> [Mode<'static>; 3] {
    [
        Mode::Hash,
        Mode::KeyedHash(&KEY),
        Mode::DeriveKey("blake3-batch blob hasher test"),
    ]
}

/// Pushes every blob of `blobs` into `hasher` through one reused buffer,
/// which is overwritten after each push, and returns what was emitted.
fn push_all<D: HasherOutput>(
    mut hasher: BlobHasher<'_, usize, D>,
    blobs: &[Vec<u8>],
) -> Vec<(usize, D)> {
    let mut emitted = Vec::new();
    let mut emit = |index: usize, output: Result<D, Error>| {
        emitted.push((index, output?));
        Ok::<(), Error>(())
    };
    let mut buffer = Vec::new();
    for (index, blob) in blobs.iter().enumerate() {
        buffer.clear();
        buffer.extend_from_slice(blob);
        hasher.push(&buffer, index, &mut emit).unwrap();
        buffer.fill(0xff);
    }
    hasher.finish(&mut emit).unwrap();
    assert_eq!(hasher.pending(), 0);
    emitted
}

#[test]
fn pushed_blobs_come_back_in_order_on_every_engine() {
    let mut random = xorshift(0xb10b);
    for (name, engine) in all_engines() {
        // Fewer on the GPU, whose lavapipe runs slowly; blobs from 0 bytes
        // to past a chunk, and two long ones hashed on their own.
        let count = if name.starts_with("gpu") { 200 } else { 3000 };
        let mut blobs: Vec<Vec<u8>> = (0..count)
            .map(|_| {
                let len = (random() % 5000) as usize;
                let start = (random() % 251) as usize;
                vector_input(start + len)[start..].to_vec()
            })
            .collect();
        blobs.insert(count / 3, vector_input(DIRECT_BLOB));
        blobs.insert(count / 2, vector_input(DIRECT_BLOB + 1));
        blobs.insert(count / 2 + 1, Vec::new());
        for mode in modes() {
            let emitted = push_all(engine.blob_hasher(mode), &blobs);
            assert_eq!(emitted.len(), blobs.len(), "{name} {mode:?}");
            for (position, (index, digest)) in emitted.iter().enumerate() {
                assert_eq!(*index, position, "{name} {mode:?}: out of order");
                let len = blobs[*index].len();
                assert_eq!(
                    *digest,
                    reference(mode, &blobs[*index]),
                    "{name} {mode:?}: blob {index} of {len} bytes"
                );
            }
        }
    }
}

#[test]
fn batches_end_at_their_blob_and_byte_limits() {
    let engine = Engine::builder()
        .backend(Backend::Cpu)
        .threads(2)
        .build()
        .unwrap();
    let mut hasher = engine.blob_hasher(Mode::Hash);
    let mut emitted = 0usize;
    let mut emit = |_: usize, digest: BlobDigest| digest.map(|_| emitted += 1);
    // The last blob of a batch's count hashes the batch in its push.
    for index in 0..BATCH_BLOBS - 1 {
        hasher.push(b"x", index, &mut emit).unwrap();
    }
    assert_eq!(hasher.pending(), BATCH_BLOBS - 1);
    hasher.push(b"x", BATCH_BLOBS, &mut emit).unwrap();
    assert_eq!(hasher.pending(), 0);
    // A blob that would take the batch past its bytes hashes the batch
    // before it is added.
    let blob = vec![7u8; DIRECT_BLOB - 1];
    let fit = CPU_BATCH_BYTES / blob.len();
    for index in 0..fit {
        hasher.push(&blob, index, &mut emit).unwrap();
    }
    assert_eq!(hasher.pending(), fit);
    hasher.push(&blob, fit, &mut emit).unwrap();
    assert_eq!(hasher.pending(), 1);
    hasher.finish(&mut emit).unwrap();
    drop(hasher);
    assert_eq!(emitted, BATCH_BLOBS + fit + 1);
}

#[test]
fn a_failing_emit_stops_the_call_and_the_hasher_goes_on() {
    let engine = Engine::builder().backend(Backend::Cpu).build().unwrap();
    let mut hasher = engine.blob_hasher(Mode::Hash);
    let mut seen = Vec::new();
    let mut refuse_third = |index: usize, digest: BlobDigest| {
        if seen.len() == 2 {
            return Err(format!("no room for blob {index}"));
        }
        seen.push((index, digest.unwrap()));
        Ok(())
    };
    for index in 0..5 {
        hasher
            .push(&[index as u8; 100], index, &mut refuse_third)
            .unwrap();
    }
    assert_eq!(
        hasher.finish(&mut refuse_third),
        Err("no room for blob 2".to_owned())
    );
    // The rest of that batch is dropped; the hasher takes more.
    assert_eq!(hasher.pending(), 0);
    let mut later = Vec::new();
    let mut emit = |index: usize, digest: BlobDigest| {
        later.push((index, digest.unwrap()));
        Ok::<(), ()>(())
    };
    hasher.push(b"after", 9, &mut emit).unwrap();
    hasher.finish(&mut emit).unwrap();
    let first = *blake3::hash(&[0u8; 100]).as_bytes();
    assert_eq!(seen[0], (0, first));
    assert_eq!(later, vec![(9, *blake3::hash(b"after").as_bytes())]);
}

/// `blob_hasher_xof`: each blob's extended output, from its start and from
/// a seek past its first block, in the order pushed, on every engine; a
/// long blob in its turn.
#[test]
fn extended_output_comes_back_in_order_on_every_engine() {
    let mut random = xorshift(0x0f0f);
    let mut blobs: Vec<Vec<u8>> = (0..500)
        .map(|_| vector_input((random() % 3000) as usize))
        .collect();
    blobs.insert(100, vector_input(DIRECT_BLOB + 1));
    blobs.insert(101, Vec::new());
    for (name, engine) in all_engines() {
        for mode in modes() {
            let emitted = push_all(engine.blob_hasher_xof(mode), &blobs);
            assert_eq!(emitted.len(), blobs.len(), "{name} {mode:?}");
            for (position, (index, mut output)) in emitted.into_iter().enumerate() {
                assert_eq!(index, position, "{name} {mode:?}: out of order");
                let blob = &blobs[index];
                let what = format!("{name} {mode:?}: blob {index} of {} bytes", blob.len());
                let start = read_xof(output.clone(), 100);
                assert_eq!(start, reference_xof(mode, blob, 100), "{what}");
                output.set_position(1000);
                let seeked = read_xof(output, 72);
                assert_eq!(seeked, reference_xof_at(mode, blob, 72, 1000), "{what}");
            }
        }
    }
}
