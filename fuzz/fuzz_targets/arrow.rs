//! Arrow arrays of fuzzer-chosen rows — binary, large binary, views,
//! fixed-size binary, numbers (`u16`, `i64`), lists and fixed-size lists
//! of `u16`, dictionaries of binary values, structs of one to three of
//! any of these (a row's bytes its fields' values framed), lists and list
//! views of any of these (a row's bytes its values framed, or back to back
//! for numbers and fixed-size lists of them; a list view's rows anywhere
//! in its values), run-end encoded arrays of any of these (a row's bytes
//! its run's value's), dictionaries of any of these (its key's value's)
//! and sparse and dense unions of two or three of any of these (a row's
//! bytes its type id, then its member's value's), nested up to three deep
//! — with nulls, sliced at fuzzer-chosen bounds, in all three modes, on
//! every CPU backend: `Engine::hash_arrow` gives each valid row `blake3`'s
//! digest of its bytes and each null row a null, or, for a valid row that
//! holds a list of numbers with a null value in it at any depth (under
//! rows, fields and values that are not null), its typed error at that
//! row; never a panic.
#![no_main]

use std::sync::Arc;

use blake3_batch::arrow_array::builder::{
    BinaryViewBuilder, FixedSizeBinaryBuilder, LargeBinaryBuilder,
};
use blake3_batch::arrow_array::types::{Int32Type, UInt16Type};
use blake3_batch::arrow_array::{
    Array, ArrayRef, BinaryArray, DictionaryArray, FixedSizeListArray, Int32Array, Int64Array,
    ListArray, ListViewArray, PrimitiveArray, RunArray, StructArray, UInt16Array, UnionArray,
};

use blake3_batch::{ErrorKind, Mode};
use blake3_batch_fuzz::{engines, mode, reference, Input};
use libfuzzer_sys::fuzz_target;

use arrow_buffer::{NullBuffer, OffsetBuffer};
use arrow_schema::{DataType, Field, Fields, UnionFields};

/// Each row's bytes (`None`: a null row), whether it is a valid list row
/// with a null value inside, and an array holding them.
type Case = (Vec<Option<Vec<u8>>>, Vec<bool>, ArrayRef);

fn bytes_of(input: &mut Input, len: usize) -> Vec<u8> {
    (0..len).map(|_| input.byte()).collect()
}

fn byte_rows(input: &mut Input, count: usize, size: Option<usize>) -> Vec<Option<Vec<u8>>> {
    (0..count)
        .map(|_| {
            let null = input.byte().is_multiple_of(5);
            let len = size.unwrap_or_else(|| input.length() % 3000);
            let bytes = bytes_of(input, len);
            (!null).then_some(bytes)
        })
        .collect()
}

fn case(input: &mut Input) -> Case {
    let count = usize::from(input.byte()) % 40;
    any_case(input, count, 0)
}

/// Kinds 0 to 6 are columns (as the seeds were written), 7 a struct, 15 a
/// list, 13 a list view, 14 runs, 12 a dictionary and 11 a union of any
/// kind, up to three deep.
fn any_case(input: &mut Input, count: usize, depth: usize) -> Case {
    match input.byte() {
        kind if kind % 16 == 15 && depth < 3 => list_case(input, count, depth + 1),
        kind if kind % 16 == 12 && depth < 3 => dictionary_case(input, count, depth + 1),
        kind if kind % 16 == 14 && depth < 3 => runs_case(input, count, depth + 1),
        kind if kind % 16 == 13 && depth < 3 => list_view_case(input, count, depth + 1),
        kind if kind % 16 == 11 && depth < 3 => union_case(input, count, depth + 1),
        kind if kind % 8 == 7 && depth < 3 => struct_case(input, count, depth + 1),
        kind => column_case(input, count, kind),
    }
}

/// A run-end encoded array of `count` rows in runs of one to four rows of
/// values of any kind: a row's bytes (and hole) are its run's value's.
fn runs_case(input: &mut Input, count: usize, depth: usize) -> Case {
    let mut ends: Vec<usize> = Vec::new();
    while ends.last().map_or(count > 0, |&end| end < count) {
        let end = ends.last().unwrap_or(&0) + usize::from(input.byte()) % 4 + 1;
        ends.push(end.min(count));
    }
    let (values, value_holes, array) = any_case(input, ends.len(), depth);
    let (mut rows, mut holes, mut start) = (Vec::new(), Vec::new(), 0);
    for (run, &end) in ends.iter().enumerate() {
        rows.extend(std::iter::repeat_n(values[run].clone(), end - start));
        holes.extend(std::iter::repeat_n(value_holes[run], end - start));
        start = end;
    }
    let ends = Int32Array::from_iter_values(ends.iter().map(|&end| end as i32));
    let runs = RunArray::<Int32Type>::try_new(&ends, array.as_ref()).unwrap();
    (rows, holes, Arc::new(runs))
}

/// A dictionary array of `count` rows whose keys, some null, name one to
/// twelve values of any kind: a row's bytes (and hole) are its key's
/// value's.
fn dictionary_case(input: &mut Input, count: usize, depth: usize) -> Case {
    let value_count = usize::from(input.byte()) % 12 + 1;
    let values = any_case(input, value_count, depth);
    keyed_case(input, count, values)
}

/// A dictionary array of `count` rows whose keys, some null, name values
/// of a case (at least one): a row's bytes (and hole) are its key's
/// value's.
fn keyed_case(input: &mut Input, count: usize, (values, value_holes, array): Case) -> Case {
    let keys: Vec<Option<i32>> = (0..count)
        .map(|_| {
            let key = usize::from(input.byte()) % values.len();
            (!input.byte().is_multiple_of(7)).then_some(key as i32)
        })
        .collect();
    let rows = (keys.iter())
        .map(|key| key.and_then(|key| values[key as usize].clone()))
        .collect();
    let holes = (keys.iter())
        .map(|key| key.is_some_and(|key| value_holes[key as usize]))
        .collect();
    let keys = PrimitiveArray::<Int32Type>::from(keys);
    (rows, holes, Arc::new(DictionaryArray::new(keys, array)))
}

/// A list view of `count` rows of zero to four values each, anywhere in a
/// child of values of any kind (overlapping, in any order), some rows
/// null: a valid row's bytes are its values' as a list's (above).
fn list_view_case(input: &mut Input, count: usize, depth: usize) -> Case {
    let value_count = usize::from(input.byte()) % 24;
    let (values, value_holes, array) = any_case(input, value_count, depth);
    let unframed = is_unframed(array.data_type());
    let (mut rows, mut holes, mut offsets, mut sizes) =
        (Vec::new(), Vec::new(), Vec::new(), Vec::new());
    for _ in 0..count {
        let size = (usize::from(input.byte()) % 5).min(value_count);
        let offset = usize::from(input.byte()) % (value_count - size + 1);
        let valid = !input.byte().is_multiple_of(6);
        let (bytes, hole) = list_row(&values, &value_holes, unframed, offset..offset + size);
        holes.push(valid && hole);
        rows.push(valid.then_some(bytes));
        offsets.push(offset as i32);
        sizes.push(size as i32);
    }
    let item = Arc::new(Field::new("item", array.data_type().clone(), true));
    let nulls = Some(NullBuffer::from(
        rows.iter().map(Option::is_some).collect::<Vec<_>>(),
    ));
    let view = ListViewArray::new(item, offsets.into(), sizes.into(), array, nulls);
    (rows, holes, Arc::new(view))
}

/// A union of `count` rows, sparse or dense, of two or three members of
/// any kind at type ids 0, 3 and 6: a row's bytes are its type id, then
/// its member's value's (and its hole that value's); a row whose value is
/// null is null. Sparse members hold a value at every row, dense ones one
/// for each row that names them.
fn union_case(input: &mut Input, count: usize, depth: usize) -> Case {
    let member_count = usize::from(input.byte()) % 2 + 2;
    let dense = input.byte().is_multiple_of(2);
    let chosen: Vec<usize> = (0..count)
        .map(|_| usize::from(input.byte()) % member_count)
        .collect();
    let mut offsets = Vec::new();
    let mut counts = vec![0; member_count];
    for &member in &chosen {
        offsets.push(if dense { counts[member] } else { offsets.len() });
        counts[member] += 1;
    }
    let members: Vec<Case> = (0..member_count)
        .map(|member| any_case(input, if dense { counts[member] } else { count }, depth))
        .collect();
    let type_id = |member: usize| (member * 3) as i8;
    let (mut rows, mut holes) = (Vec::new(), Vec::new());
    for (&member, &at) in chosen.iter().zip(&offsets) {
        let (values, value_holes, _) = &members[member];
        let row = values[at].as_ref().map(|value| {
            let mut bytes = vec![type_id(member) as u8];
            bytes.extend_from_slice(value);
            bytes
        });
        holes.push(row.is_some() && value_holes[at]);
        rows.push(row);
    }
    let fields = members.iter().enumerate().map(|(member, (_, _, array))| {
        Field::new(format!("m{member}"), array.data_type().clone(), true)
    });
    let ids = (0..member_count).map(type_id);
    let fields = UnionFields::try_new(ids, fields).unwrap();
    let type_ids = chosen.iter().map(|&member| type_id(member)).collect();
    let offsets = dense.then(|| offsets.iter().map(|&at| at as i32).collect());
    let children = members.into_iter().map(|(_, _, array)| array).collect();
    let union = UnionArray::try_new(fields, type_ids, offsets, children).unwrap();
    (rows, holes, Arc::new(union))
}

/// A value framed as the crate documents it: `0x00` for a null; `0x01`,
/// the length as a little-endian u64, the bytes.
fn frame(value: &Option<Vec<u8>>, bytes: &mut Vec<u8>) {
    match value {
        None => bytes.push(0),
        Some(value) => {
            bytes.push(1);
            bytes.extend_from_slice(&(value.len() as u64).to_le_bytes());
            bytes.extend_from_slice(value);
        }
    }
}

/// A struct of one to three fields of any kind and `count` rows, some rows
/// null: a valid row's bytes are its fields' values framed. A field's hole
/// counts only in the struct's valid rows.
fn struct_case(input: &mut Input, count: usize, depth: usize) -> Case {
    let fields: Vec<Case> = (0..usize::from(input.byte()) % 3 + 1)
        .map(|_| any_case(input, count, depth))
        .collect();
    let valid: Vec<bool> = (0..count)
        .map(|_| !input.byte().is_multiple_of(6))
        .collect();
    let framed = |row: usize| {
        let mut bytes = Vec::new();
        for (values, _, _) in &fields {
            frame(&values[row], &mut bytes);
        }
        bytes
    };
    let rows = (0..count)
        .map(|row| valid[row].then(|| framed(row)))
        .collect();
    let holes = (0..count)
        .map(|row| valid[row] && fields.iter().any(|(_, holes, _)| holes[row]))
        .collect();
    let columns: Vec<ArrayRef> = fields.iter().map(|(_, _, array)| array.clone()).collect();
    let names: Fields = columns
        .iter()
        .enumerate()
        .map(|(i, column)| Field::new(format!("f{i}"), column.data_type().clone(), true))
        .collect();
    let nulls = Some(NullBuffer::from(valid));
    (
        rows,
        holes,
        Arc::new(StructArray::new(names, columns, nulls)),
    )
}

/// Whether a list's values of this type are back to back, unframed:
/// numbers, and fixed-size lists of them, whose length the type fixes.
fn is_unframed(data_type: &DataType) -> bool {
    match data_type {
        DataType::FixedSizeList(child, _) => is_unframed(child.data_type()),
        data_type => data_type.primitive_width().is_some(),
    }
}

/// The bytes of a list row of `values[range]` — framed, or back to back
/// where `unframed` — and whether it holds a hole (a value's own, or a
/// null value where they are unframed).
fn list_row(
    values: &[Option<Vec<u8>>],
    value_holes: &[bool],
    unframed: bool,
    range: std::ops::Range<usize>,
) -> (Vec<u8>, bool) {
    let mut bytes = Vec::new();
    for value in &values[range.clone()] {
        match unframed {
            true => bytes.extend_from_slice(value.as_deref().unwrap_or_default()),
            false => frame(value, &mut bytes),
        }
    }
    let hole = |value: usize| value_holes[value] || (unframed && values[value].is_none());
    (bytes, range.into_iter().any(hole))
}

/// A list of `count` rows of zero to four values of any kind, some rows
/// null: a valid row's bytes are its values framed, or, for numbers and
/// fixed-size lists of them, their bytes back to back (where a null value,
/// or a null number in one, is a hole of the row).
fn list_case(input: &mut Input, count: usize, depth: usize) -> Case {
    let lengths: Vec<usize> = (0..count).map(|_| usize::from(input.byte()) % 5).collect();
    let (values, value_holes, array) = any_case(input, lengths.iter().sum(), depth);
    let unframed = is_unframed(array.data_type());
    let valid: Vec<bool> = (0..count)
        .map(|_| !input.byte().is_multiple_of(6))
        .collect();
    let (mut rows, mut holes, mut first) = (Vec::new(), Vec::new(), 0);
    for (row, &length) in lengths.iter().enumerate() {
        let (bytes, hole) = list_row(&values, &value_holes, unframed, first..first + length);
        first += length;
        holes.push(valid[row] && hole);
        rows.push(valid[row].then_some(bytes));
    }
    let item = Arc::new(Field::new("item", array.data_type().clone(), true));
    let offsets = OffsetBuffer::from_lengths(lengths);
    let nulls = Some(NullBuffer::from(valid));
    (
        rows,
        holes,
        Arc::new(ListArray::new(item, offsets, array, nulls)),
    )
}

fn column_case(input: &mut Input, count: usize, kind: u8) -> Case {
    match kind % 7 {
        0 => {
            let rows = byte_rows(input, count, None);
            let slices: Vec<Option<&[u8]>> = rows.iter().map(|row| row.as_deref()).collect();
            let holes = vec![false; rows.len()];
            (rows.clone(), holes, Arc::new(BinaryArray::from(slices)))
        }
        1 | 2 => {
            let rows = byte_rows(input, count, None);
            let array: ArrayRef = if input.byte().is_multiple_of(2) {
                let mut builder = LargeBinaryBuilder::new();
                rows.iter()
                    .for_each(|row| builder.append_option(row.as_deref()));
                Arc::new(builder.finish())
            } else {
                let mut builder = BinaryViewBuilder::new();
                rows.iter()
                    .for_each(|row| builder.append_option(row.as_deref()));
                Arc::new(builder.finish())
            };
            (rows, vec![false; count], array)
        }
        3 => {
            let size = usize::from(input.byte()) % 70 + 1;
            let rows = byte_rows(input, count, Some(size));
            let mut builder = FixedSizeBinaryBuilder::new(size as i32);
            for row in &rows {
                match row {
                    Some(bytes) => builder.append_value(bytes).unwrap(),
                    None => builder.append_null(),
                }
            }
            (rows, vec![false; count], Arc::new(builder.finish()))
        }
        4 => {
            // Lists of u16: a value may be null, which a valid row refuses.
            let fixed = input.byte().is_multiple_of(2);
            // (A fixed-size list of size 0 built from rows has no rows in
            // arrow-rs: left to python/tests, which build one from its parts.)
            let size = usize::from(input.byte()) % 20 + 1;
            let lists: Vec<Option<Vec<Option<u16>>>> = (0..count)
                .map(|_| {
                    let null = input.byte().is_multiple_of(5);
                    let len = if fixed { size } else { input.length() % 700 };
                    let values = (0..len)
                        .map(|_| {
                            let value = input.u16();
                            (!value.is_multiple_of(97)).then_some(value)
                        })
                        .collect();
                    (!null).then_some(values)
                })
                .collect();
            let rows = lists
                .iter()
                .map(|row| {
                    row.as_ref().map(|values| {
                        values
                            .iter()
                            .flat_map(|v| v.unwrap_or(0).to_le_bytes())
                            .collect()
                    })
                })
                .collect();
            let holes = lists
                .iter()
                .map(|row| row.as_ref().is_some_and(|values| values.contains(&None)))
                .collect();
            let array: ArrayRef = if fixed {
                Arc::new(FixedSizeListArray::from_iter_primitive::<UInt16Type, _, _>(
                    lists,
                    size as i32,
                ))
            } else {
                Arc::new(ListArray::from_iter_primitive::<UInt16Type, _, _>(lists))
            };
            (rows, holes, array)
        }
        5 => {
            // Numbers: each row its value's little-endian bytes.
            let wide = input.byte().is_multiple_of(2);
            let values: Vec<Option<u64>> = (0..count)
                .map(|_| {
                    let null = input.byte().is_multiple_of(5);
                    let value = (0..8).fold(0u64, |v, _| v << 8 | u64::from(input.byte()));
                    (!null).then_some(value)
                })
                .collect();
            let (rows, array): (Vec<Option<Vec<u8>>>, ArrayRef) = if wide {
                let rows = values.iter().map(|v| v.map(|v| v.to_le_bytes().to_vec()));
                let array = values
                    .iter()
                    .map(|v| v.map(|v| v as i64))
                    .collect::<Int64Array>();
                (rows.collect(), Arc::new(array))
            } else {
                let rows = values
                    .iter()
                    .map(|v| v.map(|v| (v as u16).to_le_bytes().to_vec()));
                let array = values
                    .iter()
                    .map(|v| v.map(|v| v as u16))
                    .collect::<UInt16Array>();
                (rows.collect(), Arc::new(array))
            };
            (rows, vec![false; count], array)
        }
        _ => {
            // A dictionary of binary values.
            let value_count = usize::from(input.byte()) % 12 + 1;
            let values = byte_rows(input, value_count, None);
            let slices: Vec<Option<&[u8]>> = values.iter().map(|row| row.as_deref()).collect();
            let dictionary = Arc::new(BinaryArray::from(slices));
            keyed_case(input, count, (values, vec![false; value_count], dictionary))
        }
    }
}

fuzz_target!(|bytes: &[u8]| {
    let mut input = Input(bytes);
    let mode: Mode = mode(input.byte());
    let (rows, holes, array) = case(&mut input);
    let start = usize::from(input.byte()) % (rows.len() + 1);
    let len = usize::from(input.byte()) % (rows.len() - start + 1);
    let (rows, array) = (&rows[start..start + len], array.slice(start, len));
    let first_hole = holes[start..start + len].iter().position(|&hole| hole);
    let expected: Vec<Option<[u8; 32]>> = rows
        .iter()
        .map(|row| row.as_ref().map(|bytes| reference(mode, bytes)))
        .collect();
    for engine in engines() {
        match (engine.hash_arrow(mode, &array), first_hole) {
            (Ok(out), None) => {
                let got: Vec<Option<[u8; 32]>> = (0..out.len())
                    .map(|row| {
                        out.is_valid(row)
                            .then(|| out.value(row).try_into().unwrap())
                    })
                    .collect();
                assert_eq!(
                    got,
                    expected,
                    "{:?} on {:?}",
                    array.data_type(),
                    engine.cpu_backend()
                );
            }
            // A null value inside a valid list row: its bytes are undefined.
            (Err(error), Some(row)) => assert!(
                matches!(error.kind(), ErrorKind::ArrowNullValue { row: at } if *at == row),
                "{:?}: {error}",
                array.data_type()
            ),
            (result, hole) => panic!(
                "{:?}: {result:?} with a hole at {hole:?}",
                array.data_type()
            ),
        }
    }
});
