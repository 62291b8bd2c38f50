//! `Engine::hash_arrow` over struct arrays (a record batch's rows): each
//! row's fields framed as the crate documents it (a null `0x00`, any other
//! value `0x01`, its length as a little-endian u64, its bytes), checked
//! against the `blake3` crate over that framing built here from the
//! fields' values, with nulls, slices, extended output, pieces of framed
//! rows and every engine here; and the errors of structs it cannot hash.

mod common;

use std::sync::Arc;

use blake3_batch::arrow_array::builder::StringViewBuilder;
use blake3_batch::arrow_array::types::{Int32Type, Int8Type};
use blake3_batch::arrow_array::{
    Array, ArrayRef, BinaryArray, DictionaryArray, Int64Array, ListArray, NullArray, RecordBatch,
    StringArray, StructArray,
};
use blake3_batch::{ErrorKind, Mode};
use common::{all_engines, arrow_outputs, no_fields, reference_xof_at, vectors, xorshift};

use arrow_buffer::NullBuffer;
use arrow_schema::{Field, Fields};

/// A row's input: each value framed as the crate documents it.
fn framed(values: &[Option<Vec<u8>>]) -> Vec<u8> {
    let mut input = Vec::new();
    for value in values {
        match value {
            None => input.push(0),
            Some(bytes) => {
                input.push(1);
                input.extend_from_slice(&(bytes.len() as u64).to_le_bytes());
                input.extend_from_slice(bytes);
            }
        }
    }
    input
}

/// A struct's columns and, row by row, each field's value (`None` for a
/// row the struct holds null).
struct Table {
    array: StructArray,
    rows: Vec<Option<Vec<Option<Vec<u8>>>>>,
}

impl Table {
    /// `length` bytes from `seek` of each row's output (`None`: null).
    fn expected(&self, mode: Mode, length: usize, seek: u64) -> Vec<Option<Vec<u8>>> {
        let output =
            |values: &Vec<Option<Vec<u8>>>| reference_xof_at(mode, &framed(values), length, seek);
        self.rows
            .iter()
            .map(|row| row.as_ref().map(output))
            .collect()
    }
}

/// Rows of five fields of different layouts — random binary (some past a
/// chunk), int64, a list of int32, a dictionary of strings, string views
/// — each with nulls, and the null type; every seventh row of the struct
/// null.
fn mixed_table(seed: u64, count: usize) -> Table {
    let mut next = xorshift(seed);
    let mut blobs = Vec::new();
    let mut numbers = Vec::new();
    let mut lists = Vec::new();
    let mut keys = Vec::new();
    let mut views = StringViewBuilder::new();
    let words = ["red", "", "a longer colour name than twelve bytes"];
    let mut rows = Vec::new();
    for row in 0..count {
        let blob = (!next().is_multiple_of(5)).then(|| {
            let len = [next() % 40, next() % 1100, next() % 5000][row % 3] as usize;
            (0..len).map(|_| next() as u8).collect::<Vec<u8>>()
        });
        let number = (!next().is_multiple_of(4)).then(|| next() as i64);
        let list =
            (!next().is_multiple_of(6)).then(|| (0..next() % 9).map(|_| next() as i32).collect());
        let key = (!next().is_multiple_of(5)).then(|| (next() % 3) as i8);
        let view =
            (!next().is_multiple_of(4)).then(|| words[(next() % 3) as usize].repeat(row % 4));
        blobs.push(blob.clone());
        numbers.push(number);
        lists.push(list.clone());
        keys.push(key);
        views.append_option(view.as_deref());
        let values = vec![
            blob,
            number.map(|n| n.to_le_bytes().to_vec()),
            list.map(|l: Vec<i32>| l.iter().flat_map(|v| v.to_le_bytes()).collect()),
            key.map(|k| words[k as usize].as_bytes().to_vec()),
            view.map(String::into_bytes),
            None,
        ];
        rows.push((row % 7 != 5).then_some(values));
    }
    let dictionary =
        DictionaryArray::<Int8Type>::new(keys.into(), Arc::new(StringArray::from(words.to_vec())));
    let columns: Vec<ArrayRef> = vec![
        Arc::new(BinaryArray::from(
            blobs.iter().map(Option::as_deref).collect::<Vec<_>>(),
        )),
        Arc::new(Int64Array::from(numbers)),
        Arc::new(ListArray::from_iter_primitive::<Int32Type, _, _>(
            lists.iter().map(|list| {
                list.as_ref()
                    .map(|l| l.iter().map(|&v| Some(v)).collect::<Vec<_>>())
            }),
        )),
        Arc::new(dictionary),
        Arc::new(views.finish()),
        Arc::new(NullArray::new(count)),
    ];
    let fields: Fields = columns
        .iter()
        .enumerate()
        .map(|(i, column)| Field::new(format!("f{i}"), column.data_type().clone(), true))
        .collect();
    let nulls = NullBuffer::from(rows.iter().map(Option::is_some).collect::<Vec<_>>());
    let array = StructArray::new(fields, columns, Some(nulls));
    Table { array, rows }
}

#[test]
fn struct_rows_hash_their_framed_fields_on_every_engine() {
    let table = mixed_table(5, 400);
    let vectors = vectors();
    for (name, engine) in all_engines() {
        for mode in vectors.modes() {
            let what = format!("{name} {mode:?}");
            let digests = engine.hash_arrow(mode, &table.array).unwrap();
            assert_eq!(
                arrow_outputs(&digests),
                table.expected(mode, 32, 0),
                "{what}"
            );
            let slice = table.array.slice(33, 200);
            let digests = engine.hash_arrow(mode, &slice).unwrap();
            assert_eq!(
                arrow_outputs(&digests),
                table.expected(mode, 32, 0)[33..233],
                "{what}, sliced"
            );
            let far = engine
                .hash_arrow_xof_at(mode, &table.array, 80, 1000)
                .unwrap();
            assert_eq!(
                arrow_outputs(&far),
                table.expected(mode, 80, 1000),
                "{what}, extended"
            );
        }
    }
}

/// More framed bytes than one piece holds (1 MiB): rows are framed in
/// several pieces, each hashed while the next is framed.
#[test]
fn struct_rows_past_one_piece_of_framing() {
    let table = mixed_table(9, 7000);
    let framed_bytes: usize = table
        .rows
        .iter()
        .flatten()
        .map(|row| framed(row).len())
        .sum();
    assert!(
        framed_bytes > 4 << 20,
        "{framed_bytes} bytes is not several pieces"
    );
    for (name, engine) in all_engines() {
        let digests = engine.hash_arrow(Mode::Hash, &table.array).unwrap();
        assert_eq!(
            arrow_outputs(&digests),
            table.expected(Mode::Hash, 32, 0),
            "{name}"
        );
        let keys = engine.hash_arrow_u64(Mode::Hash, &table.array).unwrap();
        assert_eq!(keys.null_count(), table.array.null_count(), "{name}");
    }
}

/// Rows larger than a piece: each is a piece of its own.
#[test]
fn struct_rows_larger_than_a_piece() {
    let lengths = [3, 1_500_000, 0, 2_100_000, 10];
    let blobs: Vec<Vec<u8>> = lengths.iter().map(|&n| vec![n as u8; n]).collect();
    let column = Arc::new(BinaryArray::from_iter_values(&blobs)) as ArrayRef;
    let array = StructArray::from(vec![(
        Arc::new(Field::new("blob", column.data_type().clone(), false)),
        column,
    )]);
    for (name, engine) in all_engines() {
        let digests = engine.hash_arrow(Mode::Hash, &array).unwrap();
        for (row, blob) in blobs.iter().enumerate() {
            let input = framed(&[Some(blob.clone())]);
            assert_eq!(
                digests.value(row),
                blake3::hash(&input).as_bytes(),
                "{name} row {row}"
            );
        }
    }
}

#[test]
fn a_record_batch_hashes_as_its_struct_and_framing_keeps_rows_apart() {
    let batch = RecordBatch::try_from_iter([
        (
            "a",
            Arc::new(StringArray::from(vec![
                Some("ab"),
                Some("a"),
                None,
                Some(""),
            ])) as ArrayRef,
        ),
        (
            "b",
            Arc::new(StringArray::from(vec![
                Some("c"),
                Some("bc"),
                Some(""),
                None,
            ])),
        ),
    ])
    .unwrap();
    let engine = &all_engines()[0].1;
    let digests = engine
        .hash_arrow(Mode::Hash, &StructArray::from(batch))
        .unwrap();
    let rows = arrow_outputs(&digests);
    let row = |a: Option<&str>, b: Option<&str>| {
        let values = [a, b].map(|v| v.map(|v| v.as_bytes().to_vec()));
        Some(blake3::hash(&framed(&values)).as_bytes().to_vec())
    };
    assert_eq!(
        rows,
        [
            row(Some("ab"), Some("c")),
            row(Some("a"), Some("bc")),
            row(None, Some("")),
            row(Some(""), None)
        ]
    );
    // Rows with the same bytes back to back differ, and so do a null and
    // an empty value.
    assert_ne!(rows[0], rows[1]);
    assert_ne!(rows[2], rows[3]);
}

#[test]
fn structs_that_cannot_be_hashed_are_typed_errors() {
    let engine = &all_engines()[0].1;
    let text = Arc::new(StringArray::from(vec!["a", "b"])) as ArrayRef;
    let field = |name: &str, column: &ArrayRef| {
        Arc::new(Field::new(name, column.data_type().clone(), true))
    };
    let empty = Arc::new(no_fields(2)) as ArrayRef;
    let with_empty = StructArray::from(vec![
        (field("t", &text), text.clone()),
        (field("e", &empty), empty),
    ]);
    for (what, array) in [
        ("a field of no fields", with_empty),
        ("no fields", no_fields(2)),
    ] {
        assert!(
            !blake3_batch::is_hashable_arrow_type(array.data_type()),
            "{what}"
        );
        let error = engine.hash_arrow(Mode::Hash, &array).unwrap_err();
        assert!(
            matches!(error.kind(), ErrorKind::ArrowType { .. }),
            "{what}: {error}"
        );
    }

    let holes = Arc::new(ListArray::from_iter_primitive::<Int32Type, _, _>(vec![
        Some(vec![Some(1)]),
        Some(vec![Some(2), None]),
    ])) as ArrayRef;
    let with_holes = StructArray::from(vec![
        (field("t", &text), text.clone()),
        (field("l", &holes), holes.clone()),
    ]);
    let error = engine.hash_arrow(Mode::Hash, &with_holes).unwrap_err();
    assert!(
        matches!(error.kind(), ErrorKind::ArrowNullValue { row: 1 }),
        "{error}"
    );
    // The first row with a hole in any field, whatever the field's place.
    let earlier = Arc::new(ListArray::from_iter_primitive::<Int32Type, _, _>(vec![
        Some(vec![None]),
        Some(vec![Some(3)]),
    ])) as ArrayRef;
    let two_holes = StructArray::from(vec![
        (field("l", &holes), holes),
        (field("e", &earlier), earlier),
    ]);
    let error = engine.hash_arrow(Mode::Hash, &two_holes).unwrap_err();
    assert!(
        matches!(error.kind(), ErrorKind::ArrowNullValue { row: 0 }),
        "{error}"
    );
}
