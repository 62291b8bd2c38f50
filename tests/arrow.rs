//! `Engine::hash_arrow` (feature `arrow`): every Arrow layout it reads —
//! binary and string offsets, large offsets, views, fixed-size binary,
//! dictionaries, run-end encoded arrays, numbers and lists and list views
//! of them, the null type — against the `blake3`
//! crate and the official vectors, with nulls, slices and every engine
//! here; and the errors of arrays it cannot hash.

mod common;

use std::sync::Arc;

use blake3_batch::arrow_array::builder::{
    BinaryViewBuilder, FixedSizeBinaryBuilder, LargeBinaryBuilder, StringBuilder,
};
use blake3_batch::arrow_array::types::{
    Float64Type, Int16Type, Int32Type, Int64Type, Int8Type, UInt16Type,
};
use blake3_batch::arrow_array::{
    Array, ArrayRef, BinaryArray, Decimal128Array, DictionaryArray, FixedSizeListArray,
    Float64Array, Int16Array, Int32Array, Int64Array, Int8Array, LargeListArray,
    LargeListViewArray, ListArray, ListViewArray, NullArray, PrimitiveArray, RunArray, StringArray,
    TimestampMicrosecondArray, UInt16Array,
};
use blake3_batch::{ErrorKind, Mode};
use common::{
    all_engines, no_fields, reference, reference_xof_at, vector_input, vectors, xorshift,
};

use arrow_buffer::{NullBuffer, OffsetBuffer, ScalarBuffer};
use arrow_schema::{DataType, Field};

/// The digests an array of these rows must get (`None`: a null row).
fn expected(mode: Mode, rows: &[Option<Vec<u8>>]) -> Vec<Option<[u8; 32]>> {
    rows.iter()
        .map(|row| row.as_ref().map(|bytes| reference(mode, bytes)))
        .collect()
}

/// The digests `hash_arrow` gave, row by row.
fn digests(engine: &blake3_batch::Engine, mode: Mode, array: &dyn Array) -> Vec<Option<[u8; 32]>> {
    let out = engine.hash_arrow(mode, array).unwrap();
    assert_eq!(out.len(), array.len());
    (0..out.len())
        .map(|row| {
            if out.is_null(row) {
                assert_eq!(out.value(row), [0; 32], "a null row holds zeros");
                None
            } else {
                Some(out.value(row).try_into().unwrap())
            }
        })
        .collect()
}

/// Rows of random lengths (some past a chunk), every fifth null.
fn random_rows(seed: u64, count: usize) -> Vec<Option<Vec<u8>>> {
    let mut next = xorshift(seed);
    (0..count)
        .map(|index| {
            let len = match next() % 4 {
                0 => next() % 65,
                1 => next() % 1025,
                2 => 1024 + next() % 3000,
                _ => 0,
            } as usize;
            (index % 5 != 3).then(|| (0..len).map(|_| next() as u8).collect())
        })
        .collect()
}

/// The same rows in every byte layout Arrow has.
fn byte_arrays(rows: &[Option<Vec<u8>>]) -> Vec<(&'static str, ArrayRef)> {
    let slices: Vec<Option<&[u8]>> = rows.iter().map(|row| row.as_deref()).collect();
    let mut large = LargeBinaryBuilder::new();
    let mut views = BinaryViewBuilder::new();
    for row in &slices {
        large.append_option(*row);
        views.append_option(*row);
    }
    vec![
        (
            "binary",
            Arc::new(BinaryArray::from(slices.clone())) as ArrayRef,
        ),
        ("large binary", Arc::new(large.finish())),
        ("binary view", Arc::new(views.finish())),
    ]
}

#[test]
fn every_byte_layout_with_nulls_and_slices_on_every_engine() {
    let rows = random_rows(7, 300);
    let vectors = vectors();
    for (name, engine) in all_engines() {
        for mode in vectors.modes() {
            for (layout, array) in byte_arrays(&rows) {
                let what = format!("{name} {mode:?} {layout}");
                assert_eq!(
                    digests(engine, mode, &array),
                    expected(mode, &rows),
                    "{what}"
                );
                let slice = array.slice(17, 150);
                assert_eq!(
                    digests(engine, mode, &slice),
                    expected(mode, &rows[17..167]),
                    "{what}, sliced"
                );
            }
        }
    }
}

#[test]
fn strings_and_fixed_size_binary() {
    let words = [Some("ada"), None, Some(""), Some("grace hopper")];
    let strings = StringArray::from(words.to_vec());
    let mut builder = StringBuilder::new();
    words.iter().for_each(|word| builder.append_option(*word));
    let rows: Vec<Option<Vec<u8>>> = words
        .iter()
        .map(|w| w.map(|w| w.as_bytes().to_vec()))
        .collect();
    let engine = &all_engines()[0].1;
    assert_eq!(
        digests(engine, Mode::Hash, &strings),
        expected(Mode::Hash, &rows)
    );
    assert_eq!(
        digests(engine, Mode::Hash, &builder.finish()),
        expected(Mode::Hash, &rows)
    );

    let mut fixed = FixedSizeBinaryBuilder::new(5);
    let records: Vec<Option<Vec<u8>>> = (0..40u8)
        .map(|i| (i % 7 != 2).then(|| vec![i, i ^ 0x55, 3, 4, 5]))
        .collect();
    for record in &records {
        match record {
            Some(bytes) => fixed.append_value(bytes).unwrap(),
            None => fixed.append_null(),
        }
    }
    let fixed = fixed.finish();
    let key = [9u8; 32];
    let mode = Mode::KeyedHash(&key);
    assert_eq!(digests(engine, mode, &fixed), expected(mode, &records));
    assert_eq!(
        digests(engine, mode, &fixed.slice(3, 20)),
        expected(mode, &records[3..23])
    );
}

#[test]
fn every_official_vector_as_a_binary_column_with_extended_output() {
    let vectors = vectors();
    let inputs: Vec<Vec<u8>> = vectors
        .cases
        .iter()
        .map(|case| vector_input(case.input_len))
        .collect();
    let column = BinaryArray::from(
        inputs
            .iter()
            .map(|input| Some(input.as_slice()))
            .collect::<Vec<_>>(),
    );
    for (name, engine) in all_engines() {
        for (index, mode) in vectors.modes().into_iter().enumerate() {
            let digests = engine.hash_arrow(mode, &column).unwrap();
            let outputs = engine.hash_arrow_xof_at(mode, &column, 131, 0).unwrap();
            let keys = engine.hash_arrow_u64(mode, &column).unwrap();
            for (row, case) in vectors.cases.iter().enumerate() {
                let what = format!("{name} {mode:?} len {}", case.input_len);
                assert_eq!(digests.value(row), case.expected(mode), "{what}");
                assert_eq!(outputs.value(row), case.extended[index], "{what}");
                let key = u64::from_le_bytes(case.expected(mode)[..8].try_into().unwrap());
                assert_eq!(keys.value(row), key, "{what}");
            }
            // From a byte past the start, as b3sum --seek.
            let far = engine
                .hash_arrow_xof_at(mode, &column, 40, 1 << 33)
                .unwrap();
            for (row, input) in inputs.iter().enumerate().step_by(7) {
                assert_eq!(
                    far.value(row),
                    reference_xof_at(mode, input, 40, 1 << 33),
                    "{name}"
                );
            }
        }
    }
}

/// The values of `rows` (lists of `i32`, `None` a null row) as one child
/// array with `lead` values before the first row, and the list offsets.
fn int_lists(rows: &[Option<Vec<i32>>], lead: usize) -> (Int32Array, Vec<i32>) {
    let mut values: Vec<i32> = (0..lead as i32).map(|i| -i).collect();
    let mut offsets = vec![lead as i32];
    for row in rows {
        values.extend(row.iter().flatten());
        offsets.push(values.len() as i32);
    }
    (Int32Array::from(values), offsets)
}

fn list_rows(seed: u64, count: usize, fixed: Option<usize>) -> Vec<Option<Vec<i32>>> {
    let mut next = xorshift(seed);
    (0..count)
        .map(|index| {
            let len = fixed.unwrap_or_else(|| (next() % 700) as usize);
            (index % 6 != 4).then(|| (0..len).map(|_| next() as i32).collect())
        })
        .collect()
}

/// Each row's values as their little-endian bytes.
fn le_bytes(rows: &[Option<Vec<i32>>]) -> Vec<Option<Vec<u8>>> {
    rows.iter()
        .map(|row| {
            row.as_ref()
                .map(|values| values.iter().flat_map(|v| v.to_le_bytes()).collect())
        })
        .collect()
}

#[test]
fn lists_of_numbers_hash_their_values_bytes_on_every_engine() {
    let rows = list_rows(11, 120, None);
    let (values, offsets) = int_lists(&rows, 3);
    let nulls = NullBuffer::from(rows.iter().map(Option::is_some).collect::<Vec<_>>());
    let field = Arc::new(Field::new("item", DataType::Int32, true));
    let list = ListArray::new(
        field.clone(),
        OffsetBuffer::new(ScalarBuffer::from(offsets.clone())),
        Arc::new(values.clone()),
        Some(nulls.clone()),
    );
    let large_offsets: Vec<i64> = offsets.iter().map(|&o| i64::from(o)).collect();
    let large = LargeListArray::new(
        field.clone(),
        OffsetBuffer::new(ScalarBuffer::from(large_offsets)),
        Arc::new(values),
        Some(nulls),
    );
    let fixed_rows = list_rows(12, 50, Some(300));
    // A fixed-size list keeps its size's values under a null row too.
    let fixed_values: Vec<i32> = fixed_rows
        .iter()
        .flat_map(|row| row.clone().unwrap_or_else(|| vec![-1; 300]))
        .collect();
    let fixed_values = Int32Array::from(fixed_values);
    let fixed_nulls = NullBuffer::from(fixed_rows.iter().map(Option::is_some).collect::<Vec<_>>());
    let fixed = FixedSizeListArray::new(field, 300, Arc::new(fixed_values), Some(fixed_nulls));
    for (name, engine) in all_engines() {
        let mode = Mode::DeriveKey("blake3-batch 2026-12-05 arrow lists");
        let want = expected(mode, &le_bytes(&rows));
        assert_eq!(digests(engine, mode, &list), want, "{name} list");
        assert_eq!(digests(engine, mode, &large), want, "{name} large list");
        assert_eq!(
            digests(engine, mode, &list.slice(5, 90)),
            want[5..95],
            "{name} sliced"
        );
        let want_fixed = expected(mode, &le_bytes(&fixed_rows));
        assert_eq!(
            digests(engine, mode, &fixed),
            want_fixed,
            "{name} fixed-size list"
        );
        assert_eq!(
            digests(engine, mode, &fixed.slice(7, 9)),
            want_fixed[7..16],
            "{name}"
        );
    }
}

/// The same rows of numbers as a list view whose rows lie in reverse order
/// in its values, with a value shared by two rows and values no row reads.
#[test]
fn list_views_of_numbers_hash_as_lists_of_the_same_values() {
    let rows = list_rows(13, 120, None);
    let mut values: Vec<i32> = vec![-7; 5];
    let mut offsets = vec![0; rows.len()];
    let mut sizes = vec![0; rows.len()];
    for (row, values_of_row) in rows.iter().enumerate().rev() {
        offsets[row] = values.len() as i32;
        sizes[row] = values_of_row.as_ref().map_or(0, Vec::len) as i32;
        values.extend(values_of_row.iter().flatten());
    }
    // Rows 0 and 1 of the view share row 0's values (a null row's are never
    // read).
    let rows: Vec<Option<Vec<i32>>> = [&rows[..1], &rows[..1], &rows[2..]].concat();
    (offsets[1], sizes[1]) = (offsets[0], sizes[0]);
    let nulls = NullBuffer::from(rows.iter().map(Option::is_some).collect::<Vec<_>>());
    let field = Arc::new(Field::new("item", DataType::Int32, true));
    let view = ListViewArray::new(
        field.clone(),
        offsets.iter().copied().collect(),
        sizes.iter().copied().collect(),
        Arc::new(Int32Array::from(values.clone())),
        Some(nulls.clone()),
    );
    let large = LargeListViewArray::new(
        field,
        offsets.iter().map(|&offset| i64::from(offset)).collect(),
        sizes.iter().map(|&size| i64::from(size)).collect(),
        Arc::new(Int32Array::from(values)),
        Some(nulls),
    );
    let (list_values, list_offsets) = int_lists(&rows, 0);
    let list = ListArray::new(
        Arc::new(Field::new("item", DataType::Int32, true)),
        OffsetBuffer::new(ScalarBuffer::from(list_offsets)),
        Arc::new(list_values),
        view.nulls().cloned(),
    );
    let want = expected(Mode::Hash, &le_bytes(&rows));
    for (name, engine) in all_engines() {
        assert_eq!(digests(engine, Mode::Hash, &view), want, "{name} list view");
        assert_eq!(digests(engine, Mode::Hash, &large), want, "{name} large");
        assert_eq!(digests(engine, Mode::Hash, &list), want, "{name} list");
        assert_eq!(
            digests(engine, Mode::Hash, &view.slice(9, 70)),
            want[9..79],
            "{name} sliced"
        );
        let far = engine
            .hash_arrow_xof_at(Mode::Hash, &view, 40, 1000)
            .unwrap();
        for (row, bytes) in le_bytes(&rows).iter().enumerate() {
            if let Some(bytes) = bytes {
                assert_eq!(
                    far.value(row),
                    reference_xof_at(Mode::Hash, bytes, 40, 1000)
                );
            }
        }
    }
}

/// The ends of `runs` runs of one to five rows each.
fn run_ends(runs: usize, seed: u64) -> Vec<usize> {
    let mut next = xorshift(seed);
    let mut ends: Vec<usize> = Vec::with_capacity(runs);
    for _ in 0..runs {
        ends.push(ends.last().unwrap_or(&0) + 1 + (next() % 5) as usize);
    }
    ends
}

/// Rows of bytes, `None` a null row.
type Rows = [Option<Vec<u8>>];

/// Each row of a run-end encoded array (of any type of run ends, of
/// binary, string views or numbers, sliced within runs) gets its run's
/// value's digest, as the decoded rows would.
#[test]
fn run_end_encoded_rows_hash_their_runs_values_on_every_engine() {
    // One value a run, a null value a null run.
    let values = random_rows(21, 150);
    let ends = run_ends(values.len(), 22);
    // Each row's value, as the decoded array holds it.
    let decoded = |values: &Rows| -> Vec<Option<Vec<u8>>> {
        (0..ends[ends.len() - 1])
            .map(|row| values[ends.partition_point(|&end| end <= row)].clone())
            .collect()
    };
    let rows = decoded(&values);
    let binary = BinaryArray::from_iter(values.iter().map(Option::as_deref));
    let strings: Vec<Option<String>> = (values.iter())
        .map(|value| value.as_ref().map(|bytes| format!("{bytes:?}")))
        .collect();
    let string_values: Vec<Option<Vec<u8>>> = (strings.iter())
        .map(|string| string.clone().map(String::into_bytes))
        .collect();
    let string_rows = decoded(&string_values);
    let views = blake3_batch::arrow_array::StringViewArray::from_iter(strings.iter().cloned());
    let numbers = Int64Array::from_iter_values((0..values.len()).map(|run| run as i64 * 31 - 9));
    let number_values: Vec<Option<Vec<u8>>> = (numbers.values().iter())
        .map(|number| Some(number.to_le_bytes().to_vec()))
        .collect();
    let number_rows = decoded(&number_values);
    let ends16 = Int16Array::from_iter_values(ends.iter().map(|&end| end as i16));
    let ends32 = Int32Array::from_iter_values(ends.iter().map(|&end| end as i32));
    let ends64 = Int64Array::from_iter_values(ends.iter().map(|&end| end as i64));
    let cases: Vec<(&str, ArrayRef, &Rows)> = vec![
        (
            "binary, i16 ends",
            Arc::new(RunArray::<Int16Type>::try_new(&ends16, &binary).unwrap()),
            &rows,
        ),
        (
            "binary, i32 ends",
            Arc::new(RunArray::<Int32Type>::try_new(&ends32, &binary).unwrap()),
            &rows,
        ),
        (
            "string views, i64 ends",
            Arc::new(RunArray::<Int64Type>::try_new(&ends64, &views).unwrap()),
            &string_rows,
        ),
        (
            "numbers",
            Arc::new(RunArray::<Int32Type>::try_new(&ends32, &numbers).unwrap()),
            &number_rows,
        ),
    ];
    let vectors = vectors();
    for (name, engine) in all_engines() {
        for (case, array, rows) in &cases {
            assert!(blake3_batch::is_hashable_arrow_type(array.data_type()));
            for mode in vectors.modes() {
                assert_eq!(
                    digests(engine, mode, array),
                    expected(mode, rows),
                    "{name} {case} {mode:?}"
                );
            }
            // From inside a run to inside another, and within one run.
            let (start, len) = (ends[3] + 1, ends[100] - ends[3]);
            assert_eq!(
                digests(engine, Mode::Hash, &array.slice(start, len)),
                expected(Mode::Hash, &rows[start..start + len]),
                "{name} {case} sliced"
            );
            let within = ends[7] - 2;
            assert_eq!(
                digests(engine, Mode::Hash, &array.slice(within, 1)),
                expected(Mode::Hash, &rows[within..within + 1]),
                "{name} {case} within a run"
            );
            let far = engine
                .hash_arrow_xof_at(Mode::Hash, array.as_ref(), 50, 3000)
                .unwrap();
            for (row, bytes) in rows.iter().enumerate() {
                match bytes {
                    Some(bytes) => assert_eq!(
                        far.value(row),
                        reference_xof_at(Mode::Hash, bytes, 50, 3000),
                        "{name} {case} row {row}"
                    ),
                    None => assert!(far.is_null(row)),
                }
            }
            let keys = engine.hash_arrow_u64(Mode::Hash, array.as_ref()).unwrap();
            for (row, bytes) in rows.iter().enumerate() {
                if let Some(bytes) = bytes {
                    let digest = reference(Mode::Hash, bytes);
                    assert_eq!(keys.value(row).to_le_bytes(), digest[..8]);
                }
            }
        }
    }
}

#[test]
fn lists_of_other_widths_and_of_one_byte() {
    let engine = &all_engines()[0].1;
    let floats = ListArray::from_iter_primitive::<Float64Type, _, _>(vec![
        Some(vec![Some(1.5), Some(-0.0)]),
        Some(vec![]),
    ]);
    let bytes: Vec<u8> = [1.5f64, -0.0]
        .iter()
        .flat_map(|v| v.to_le_bytes())
        .collect();
    let want = expected(Mode::Hash, &[Some(bytes), Some(vec![])]);
    assert_eq!(digests(engine, Mode::Hash, &floats), want);
    let small =
        ListArray::from_iter_primitive::<Int8Type, _, _>(vec![Some(vec![Some(-1), Some(2)])]);
    assert_eq!(
        digests(engine, Mode::Hash, &small),
        expected(Mode::Hash, &[Some(vec![0xFF, 2])])
    );
}

#[test]
fn dictionaries_hash_each_rows_value_with_few_or_many_values() {
    let values = BinaryArray::from(vec![
        Some(&b"red"[..]),
        Some(&[7u8; 2000][..]),
        None,
        Some(&b""[..]),
    ]);
    let keys = PrimitiveArray::<UInt16Type>::from(vec![
        Some(0),
        Some(1),
        None,
        Some(3),
        Some(2),
        Some(1),
        Some(0),
    ]);
    let dictionary = DictionaryArray::new(keys, Arc::new(values.clone()));
    let value = |key: Option<u16>| {
        key.and_then(|key| {
            values
                .is_valid(key as usize)
                .then(|| values.value(key as usize).to_vec())
        })
    };
    let rows: Vec<Option<Vec<u8>>> = dictionary.keys().iter().map(value).collect();
    for (name, engine) in all_engines() {
        let want = expected(Mode::Hash, &rows);
        assert_eq!(
            digests(engine, Mode::Hash, &dictionary),
            want,
            "{name}: fewer values than rows"
        );
        assert_eq!(
            digests(engine, Mode::Hash, &dictionary.slice(4, 2)),
            want[4..6],
            "{name}: more"
        );
        let keys = engine.hash_arrow_u64(Mode::Hash, &dictionary).unwrap();
        for (row, want) in want.iter().enumerate() {
            let key = want.map(|digest| u64::from_le_bytes(digest[..8].try_into().unwrap()));
            assert_eq!(
                keys.is_valid(row).then(|| keys.value(row)),
                key,
                "{name} row {row}"
            );
        }
    }
}

/// Each row of a dictionary, and of a run-end encoded array sliced past
/// its first runs, of many more rows than one thread's share gets its
/// value's output at every output length: digests, `u64` keys, prefixes
/// and extended outputs from a seek, on two threads.
#[test]
fn every_row_of_a_long_dictionary_or_run_array_gets_its_values_output() {
    let values = StringArray::from(vec!["ada", "grace", "edsger"]);
    let mut next = xorshift(0xd1c7_0a7e);
    let keys: Vec<i32> = (0..40_000).map(|_| (next() % 3) as i32).collect();
    let dictionary = DictionaryArray::new(Int32Array::from(keys.clone()), Arc::new(values.clone()));
    // Runs of 1 to 4 rows, the values in turn; the array sliced from row
    // 10, inside its third run or later.
    let mut ends = vec![];
    while ends.last().is_none_or(|&end| end < 40_010) {
        ends.push(ends.last().unwrap_or(&0) + 1 + (next() % 4) as i32);
    }
    let run_values =
        StringArray::from_iter_values((0..ends.len()).map(|run| values.value(run % 3)));
    let runs =
        RunArray::<Int32Type>::try_new(&Int32Array::from(ends.clone()), &run_values).unwrap();
    let runs = runs.slice(10, 40_000);
    // Row `row` of the array lies in the first run that ends past it.
    let mut run = 0;
    let run_keys: Vec<i32> = (10..40_010)
        .map(|row| {
            while ends[run] <= row {
                run += 1;
            }
            (run % 3) as i32
        })
        .collect();
    let engine = blake3_batch::Engine::builder()
        .backend(blake3_batch::Backend::Cpu)
        .threads(2)
        .build()
        .unwrap();
    for (name, array, keys) in [
        ("dictionary", &dictionary as &dyn Array, &keys),
        ("runs", &runs, &run_keys),
    ] {
        for (length, seek) in [(32, 0), (8, 0), (20, 3), (100, 50)] {
            let outputs = engine
                .hash_arrow_xof_at(Mode::Hash, array, length, seek)
                .unwrap();
            for (row, &key) in keys.iter().enumerate() {
                let value = values.value(key as usize).as_bytes();
                assert_eq!(
                    outputs.value(row),
                    reference_xof_at(Mode::Hash, value, length, seek),
                    "{name} row {row}, {length} bytes from {seek}"
                );
            }
        }
    }
}

#[test]
fn dictionaries_of_numbers_hash_each_rows_number() {
    let values = Int64Array::from(vec![Some(7), None, Some(-3)]);
    let keys = PrimitiveArray::<Int8Type>::from(vec![Some(2), Some(0), None, Some(1), Some(2)]);
    let dictionary = DictionaryArray::new(keys, Arc::new(values));
    let rows = [Some(-3i64), Some(7), None, None, Some(-3)]
        .map(|value| value.map(|value| value.to_le_bytes().to_vec()));
    for (name, engine) in all_engines() {
        assert_eq!(
            digests(engine, Mode::Hash, &dictionary),
            expected(Mode::Hash, &rows),
            "{name}"
        );
    }
}

#[test]
fn the_null_type_gives_null_outputs() {
    let engine = &all_engines()[0].1;
    let out = engine.hash_arrow(Mode::Hash, &NullArray::new(3)).unwrap();
    assert_eq!((out.len(), out.null_count()), (3, 3));
}

/// A column of numbers of each width: every row a number's little-endian
/// bytes, with nulls and a slice, on every engine.
#[test]
fn numbers_hash_their_little_endian_bytes_on_every_engine() {
    let mut next = xorshift(11);
    let values: Vec<Option<i64>> = (0..3000)
        .map(|row| (row % 7 != 2).then(|| next() as i64))
        .collect();
    // A number's low `width` bytes, little-endian (sign-extended to 16 for
    // the i128 of a decimal made from it).
    let bytes_of = |width: usize| -> Vec<Option<Vec<u8>>> {
        values
            .iter()
            .map(|v| v.map(|v| i128::from(v).to_le_bytes()[..width].to_vec()))
            .collect()
    };
    let columns: Vec<(&str, ArrayRef, usize)> = vec![
        (
            "int8",
            Arc::new(
                values
                    .iter()
                    .map(|v| v.map(|v| v as i8))
                    .collect::<Int8Array>(),
            ),
            1,
        ),
        (
            "uint16",
            Arc::new(
                values
                    .iter()
                    .map(|v| v.map(|v| v as u16))
                    .collect::<UInt16Array>(),
            ),
            2,
        ),
        (
            "int32",
            Arc::new(
                values
                    .iter()
                    .map(|v| v.map(|v| v as i32))
                    .collect::<Int32Array>(),
            ),
            4,
        ),
        (
            "int64",
            Arc::new(values.iter().copied().collect::<Int64Array>()),
            8,
        ),
        (
            "float64 (its bits)",
            Arc::new(
                values
                    .iter()
                    .map(|v| v.map(|v| f64::from_bits(v as u64)))
                    .collect::<Float64Array>(),
            ),
            8,
        ),
        (
            "timestamp[us, UTC]",
            Arc::new(
                values
                    .iter()
                    .copied()
                    .collect::<TimestampMicrosecondArray>()
                    .with_timezone("UTC"),
            ),
            8,
        ),
        (
            "decimal128",
            Arc::new(
                values
                    .iter()
                    .map(|v| v.map(i128::from))
                    .collect::<Decimal128Array>(),
            ),
            16,
        ),
    ];
    for (name, engine) in all_engines() {
        for (kind, column, width) in &columns {
            let want = expected(Mode::Hash, &bytes_of(*width));
            assert_eq!(digests(engine, Mode::Hash, column), want, "{name} {kind}");
            assert_eq!(
                digests(engine, Mode::Hash, &column.slice(1001, 999)),
                want[1001..2000],
                "{name} {kind} sliced"
            );
        }
    }
}

#[test]
fn arrays_that_cannot_be_hashed_are_typed_errors() {
    let engine = &all_engines()[0].1;
    let empty = no_fields(2);
    assert!(!blake3_batch::is_hashable_arrow_type(empty.data_type()));
    let error = engine.hash_arrow(Mode::Hash, &empty).unwrap_err();
    assert!(
        matches!(error.kind(), ErrorKind::ArrowType { data_type } if data_type.starts_with("Struct")),
        "{error}"
    );
    // Run-end encoded values that cannot be hashed are refused as such.
    let runs =
        RunArray::<Int32Type>::try_new(&Int32Array::from(vec![2]), &empty.slice(0, 1)).unwrap();
    assert!(!blake3_batch::is_hashable_arrow_type(runs.data_type()));
    let error = engine.hash_arrow(Mode::Hash, &runs).unwrap_err();
    assert!(
        matches!(error.kind(), ErrorKind::ArrowType { data_type } if data_type.starts_with("RunEndEncoded")),
        "{error}"
    );
    // So are dictionaries of them.
    let dictionary = DictionaryArray::new(Int8Array::from(vec![0, 1, 0]), Arc::new(empty.clone()));
    assert!(!blake3_batch::is_hashable_arrow_type(
        dictionary.data_type()
    ));
    let error = engine.hash_arrow(Mode::Hash, &dictionary).unwrap_err();
    assert!(
        matches!(error.kind(), ErrorKind::ArrowType { data_type } if data_type.starts_with("Dictionary")),
        "{error}"
    );
    // A null inside a run's list of numbers is refused at the first row of
    // the run.
    let holes_in_runs = RunArray::<Int32Type>::try_new(
        &Int32Array::from(vec![3, 5]),
        &ListArray::from_iter_primitive::<Int32Type, _, _>(vec![
            Some(vec![Some(1)]),
            Some(vec![None]),
        ]),
    )
    .unwrap();
    let error = engine.hash_arrow(Mode::Hash, &holes_in_runs).unwrap_err();
    assert!(
        matches!(error.kind(), ErrorKind::ArrowNullValue { row: 3 }),
        "{error}"
    );
    // (Malformed run ends, list views and unions, which only unvalidated
    // arrays can hold, are refused too: python/tests/test_encodings.py and
    // test_nested.py build them.)

    // (Structs that cannot be hashed: tests/arrow_rows.rs.)

    let holes = ListArray::from_iter_primitive::<Int32Type, _, _>(vec![
        Some(vec![Some(1)]),
        None,
        Some(vec![Some(2), None]),
    ]);
    let error = engine.hash_arrow(Mode::Hash, &holes).unwrap_err();
    assert!(
        matches!(error.kind(), ErrorKind::ArrowNullValue { row: 2 }),
        "{error}"
    );

    // (A dictionary key past its values, which only an unvalidated array
    // can hold, is refused too: python/tests/test_dictionary.py builds one.)
    let error = engine
        .hash_arrow_xof_at(Mode::Hash, &StringArray::from(vec!["a"]), 0, 0)
        .unwrap_err();
    assert!(matches!(error.kind(), ErrorKind::XofLength), "{error}");
}

#[test]
fn the_free_function_uses_the_shared_engine() {
    let column = StringArray::from(vec!["x"]);
    let out = blake3_batch::hash_arrow(Mode::Hash, &column).unwrap();
    assert_eq!(out.value(0), blake3::hash(b"x").as_bytes());
}
