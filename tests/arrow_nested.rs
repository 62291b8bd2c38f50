//! `Engine::hash_arrow` over booleans, lists and list views of anything,
//! maps, structs and run-end encoded arrays nested to any depth: each
//! row's encoding as the crate documents it (a boolean one byte; a list of
//! numbers or booleans, or of fixed-size lists of them (tensors), its
//! values back to back; a struct's fields and any other list's values
//! framed: a null `0x00`, any other value `0x01`, its length as a
//! little-endian u64, its encoding; a map the list of its entries; a list
//! view as a list of the same values; a run-end encoded row its run's
//! value, as a dictionary row is its key's, of any of these types; a
//! union row its type id as one byte, then its member's value), built here from the arrays'
//! values through arrow's own accessors and checked against the `blake3`
//! crate on random arrays of many nested types, with nulls at every
//! level, slices, extended output and every engine here; and the rows
//! that are refused, at the row of the caller's array.

mod common;

use std::sync::Arc;

use blake3_batch::arrow_array::cast::AsArray;
use blake3_batch::arrow_array::types::{Int16Type, Int32Type, Int64Type, Int8Type};
use blake3_batch::arrow_array::{
    Array, ArrayRef, BinaryArray, BooleanArray, DictionaryArray, FixedSizeBinaryArray,
    FixedSizeListArray, Int16Array, Int32Array, Int64Array, Int8Array, LargeListArray,
    LargeListViewArray, ListArray, ListViewArray, MapArray, NullArray, RunArray, StringArray,
    StringViewArray, StructArray, UnionArray,
};
use blake3_batch::{ErrorKind, Mode};
use common::{all_engines, arrow_outputs, reference_xof_at, vectors, xorshift};

use arrow_buffer::{BooleanBuffer, NullBuffer, OffsetBuffer};
use arrow_schema::{DataType, Field, Fields, UnionFields, UnionMode};

/// A value framed: `0x00` for a null, else `0x01`, its length as a
/// little-endian u64, its bytes.
fn frame(value: Option<Vec<u8>>) -> Vec<u8> {
    match value {
        None => vec![0],
        Some(bytes) => {
            let mut framed = vec![1];
            framed.extend_from_slice(&(bytes.len() as u64).to_le_bytes());
            framed.extend_from_slice(&bytes);
            framed
        }
    }
}

/// Whether a list of this type's values is them back to back, unframed:
/// numbers, booleans, and fixed-size lists of them (tensors).
fn is_unframed(data_type: &DataType) -> bool {
    match data_type {
        DataType::FixedSizeList(child, _) => is_unframed(child.data_type()),
        data_type => matches!(
            data_type,
            DataType::Boolean | DataType::Int8 | DataType::Int32 | DataType::Int64
        ),
    }
}

/// Row `row`'s encoding as the crate documents it, from the array's
/// values (`None` where it is null), for the types this file builds.
fn encode(array: &dyn Array, row: usize) -> Option<Vec<u8>> {
    let is_valid = array
        .logical_nulls()
        .is_none_or(|nulls| nulls.is_valid(row));
    if !is_valid {
        return None;
    }
    let values_of = |values: ArrayRef| -> Vec<u8> {
        let unframed = is_unframed(values.data_type());
        (0..values.len())
            .flat_map(|value| match unframed {
                true => encode(&values, value).expect("no null in a list of numbers"),
                false => frame(encode(&values, value)),
            })
            .collect()
    };
    Some(match array.data_type() {
        DataType::Boolean => vec![u8::from(array.as_boolean().value(row))],
        DataType::Int8 => array
            .as_primitive::<Int8Type>()
            .value(row)
            .to_le_bytes()
            .to_vec(),
        DataType::Int32 => array
            .as_primitive::<Int32Type>()
            .value(row)
            .to_le_bytes()
            .to_vec(),
        DataType::Int64 => array
            .as_primitive::<Int64Type>()
            .value(row)
            .to_le_bytes()
            .to_vec(),
        DataType::Utf8 => array.as_string::<i32>().value(row).as_bytes().to_vec(),
        DataType::Utf8View => array.as_string_view().value(row).as_bytes().to_vec(),
        DataType::Binary => array.as_binary::<i32>().value(row).to_vec(),
        DataType::FixedSizeBinary(_) => array.as_fixed_size_binary().value(row).to_vec(),
        DataType::Dictionary(keys, _) => {
            let (values, key) = match keys.as_ref() {
                DataType::Int8 => {
                    let dictionary = array.as_dictionary::<Int8Type>();
                    (dictionary.values(), dictionary.keys().value(row) as usize)
                }
                _ => {
                    let dictionary = array.as_dictionary::<Int16Type>();
                    (dictionary.values(), dictionary.keys().value(row) as usize)
                }
            };
            encode(values.as_ref(), key).expect("a valid key's value")
        }
        DataType::List(_) => values_of(array.as_list::<i32>().value(row)),
        DataType::LargeList(_) => values_of(array.as_list::<i64>().value(row)),
        DataType::ListView(_) => values_of(array.as_list_view::<i32>().value(row)),
        DataType::LargeListView(_) => values_of(array.as_list_view::<i64>().value(row)),
        DataType::RunEndEncoded(ends, _) => {
            let (values, run) = match ends.data_type() {
                DataType::Int16 => {
                    let runs = array.as_run::<Int16Type>();
                    (runs.values(), runs.get_physical_index(row))
                }
                DataType::Int32 => {
                    let runs = array.as_run::<Int32Type>();
                    (runs.values(), runs.get_physical_index(row))
                }
                _ => {
                    let runs = array.as_run::<Int64Type>();
                    (runs.values(), runs.get_physical_index(row))
                }
            };
            encode(values.as_ref(), run).expect("a valid row's value")
        }
        DataType::FixedSizeList(_, _) => values_of(array.as_fixed_size_list().value(row)),
        DataType::Map(_, _) => values_of(Arc::new(array.as_map().value(row))),
        DataType::Struct(_) => (array.as_struct().columns().iter())
            .flat_map(|field| frame(encode(field.as_ref(), row)))
            .collect(),
        DataType::Union(_, _) => {
            let union = array.as_union();
            let type_id = union.type_id(row);
            let value = encode(union.child(type_id).as_ref(), union.value_offset(row));
            [vec![type_id as u8], value.expect("a valid row's value")].concat()
        }
        data_type => panic!("no reference encoding for {data_type}"),
    })
}

fn dictionary_of(keys: DataType, values: DataType) -> DataType {
    DataType::Dictionary(Box::new(keys), Box::new(values))
}

fn list_of(data_type: DataType) -> DataType {
    DataType::List(Arc::new(Field::new("item", data_type, true)))
}

fn list_view_of(data_type: DataType) -> DataType {
    DataType::ListView(Arc::new(Field::new("item", data_type, true)))
}

/// A run-end encoded type as `RunArray::try_new` names it.
fn runs_of(ends: DataType, values: DataType) -> DataType {
    DataType::RunEndEncoded(
        Arc::new(Field::new("run_ends", ends, false)),
        Arc::new(Field::new("values", values, true)),
    )
}

fn struct_of(fields: Vec<(&str, DataType)>) -> DataType {
    let fields: Fields = (fields.into_iter())
        .map(|(name, data_type)| Field::new(name, data_type, true))
        .collect();
    DataType::Struct(fields)
}

/// A union of these members, at these type ids.
fn union_of(mode: UnionMode, members: Vec<(i8, DataType)>) -> DataType {
    let (ids, fields): (Vec<i8>, Vec<Field>) = (members.into_iter().enumerate())
        .map(|(at, (id, data_type))| (id, Field::new(format!("m{at}"), data_type, true)))
        .unzip();
    DataType::Union(UnionFields::try_new(ids, fields).unwrap(), mode)
}

fn map_of(key: DataType, value: DataType) -> DataType {
    let entries = struct_of(vec![("key", key), ("value", value)]);
    let DataType::Struct(fields) = entries else {
        unreachable!()
    };
    let mut fields: Vec<Field> = fields.iter().map(|field| field.as_ref().clone()).collect();
    fields[0] = fields[0].clone().with_nullable(false);
    let entries = DataType::Struct(fields.into());
    DataType::Map(Arc::new(Field::new("entries", entries, false)), false)
}

/// The nested types hashed here, each with something new in it.
fn nested_types() -> Vec<DataType> {
    let strings = || DataType::Utf8;
    let dictionary = || dictionary_of(DataType::Int8, DataType::Utf8);
    vec![
        DataType::Boolean,
        list_of(strings()),
        DataType::LargeList(Arc::new(Field::new("item", DataType::Binary, true))),
        DataType::FixedSizeList(Arc::new(Field::new("item", strings(), true)), 3),
        list_of(DataType::Boolean),
        DataType::FixedSizeList(Arc::new(Field::new("item", DataType::Boolean, true)), 2),
        list_of(list_of(DataType::Int32)),
        list_of(DataType::Null),
        list_of(dictionary()),
        // Dictionaries of values that are not bytes: lists of numbers read
        // in place, booleans, structs and other lists encoded; with few
        // values or more values than rows; in a list and a struct.
        dictionary_of(DataType::Int16, DataType::Utf8View),
        dictionary_of(DataType::Int8, list_of(DataType::Int32)),
        dictionary_of(DataType::Int16, list_of(DataType::Int64)),
        dictionary_of(DataType::Int8, DataType::Boolean),
        dictionary_of(
            DataType::Int16,
            struct_of(vec![("id", DataType::Int64), ("tags", list_of(strings()))]),
        ),
        dictionary_of(DataType::Int8, list_view_of(strings())),
        list_of(dictionary_of(DataType::Int16, DataType::Boolean)),
        struct_of(vec![
            (
                "pair",
                dictionary_of(DataType::Int8, fixed_size_list_of(DataType::Int8, 2)),
            ),
            (
                "runs",
                dictionary_of(DataType::Int16, runs_of(DataType::Int16, strings())),
            ),
        ]),
        list_of(struct_of(vec![
            ("id", DataType::Int64),
            ("tags", list_of(DataType::Utf8View)),
        ])),
        map_of(strings(), DataType::Int64),
        map_of(DataType::Int32, list_of(strings())),
        struct_of(vec![
            (
                "inner",
                struct_of(vec![("flag", DataType::Boolean), ("name", strings())]),
            ),
            ("names", list_of(strings())),
            ("nothing", DataType::Null),
            ("raw", DataType::FixedSizeBinary(5)),
        ]),
        list_of(list_of(list_of(strings()))),
        // Tensors: fixed-size lists of fixed-size lists of numbers or
        // booleans, alone, in a list and in a struct.
        fixed_size_list_of(fixed_size_list_of(DataType::Int32, 3), 2),
        list_of(fixed_size_list_of(DataType::Int8, 4)),
        fixed_size_list_of(fixed_size_list_of(DataType::Boolean, 2), 2),
        struct_of(vec![
            ("id", DataType::Int64),
            (
                "cube",
                fixed_size_list_of(
                    fixed_size_list_of(fixed_size_list_of(DataType::Int64, 2), 2),
                    2,
                ),
            ),
        ]),
        // Run-end encoded values of each kind: bytes and lists of numbers
        // read in place, booleans and structs encoded; in a list and a
        // struct.
        runs_of(DataType::Int32, strings()),
        runs_of(DataType::Int16, list_of(DataType::Int32)),
        runs_of(DataType::Int64, DataType::Boolean),
        runs_of(
            DataType::Int32,
            struct_of(vec![("id", DataType::Int64), ("name", strings())]),
        ),
        list_of(runs_of(DataType::Int32, DataType::Binary)),
        // List views, whose rows' values overlap and lie in any order: of
        // numbers (read in place), of strings, nested, and with runs.
        list_view_of(DataType::Int32),
        DataType::LargeListView(Arc::new(Field::new("item", strings(), true))),
        list_view_of(list_view_of(DataType::Int8)),
        struct_of(vec![
            ("runs", runs_of(DataType::Int32, DataType::Int64)),
            ("view", list_view_of(strings())),
        ]),
        // Unions, sparse and dense: of bytes and numbers, of one type
        // twice, at type ids that skip some, of nested values, nested in a
        // list, a struct, a dictionary, runs and another union.
        union_of(
            UnionMode::Sparse,
            vec![(0, strings()), (1, DataType::Int32)],
        ),
        union_of(UnionMode::Dense, vec![(0, strings()), (1, strings())]),
        union_of(
            UnionMode::Dense,
            vec![(3, DataType::Binary), (7, list_of(DataType::Int32))],
        ),
        union_of(
            UnionMode::Sparse,
            vec![(5, DataType::Boolean), (2, list_of(strings()))],
        ),
        list_of(union_of(
            UnionMode::Dense,
            vec![
                (
                    0,
                    struct_of(vec![("id", DataType::Int64), ("name", strings())]),
                ),
                (1, DataType::Boolean),
            ],
        )),
        struct_of(vec![
            ("id", DataType::Int64),
            (
                "either",
                union_of(UnionMode::Sparse, vec![(0, DataType::Int8), (1, strings())]),
            ),
        ]),
        dictionary_of(
            DataType::Int16,
            union_of(UnionMode::Dense, vec![(0, strings()), (1, DataType::Int64)]),
        ),
        runs_of(
            DataType::Int32,
            union_of(
                UnionMode::Sparse,
                vec![(0, DataType::Int32), (1, strings())],
            ),
        ),
        union_of(
            UnionMode::Dense,
            vec![
                (
                    0,
                    union_of(UnionMode::Sparse, vec![(0, strings()), (1, DataType::Int8)]),
                ),
                (1, list_view_of(DataType::Int32)),
            ],
        ),
    ]
}

fn fixed_size_list_of(data_type: DataType, size: i32) -> DataType {
    DataType::FixedSizeList(Arc::new(Field::new("item", data_type, true)), size)
}

/// A random array of `data_type` (one of those [`nested_types`] uses)
/// with `len` rows, about one in five null where `nulls`. Lists of
/// numbers or booleans hold no null values under valid rows.
fn random_array(
    next: &mut impl FnMut() -> u64,
    data_type: &DataType,
    len: usize,
    nulls: bool,
) -> ArrayRef {
    let valid: Vec<bool> = (0..len)
        .map(|_| !nulls || !next().is_multiple_of(5))
        .collect();
    let null_buffer = nulls.then(|| NullBuffer::from(valid.clone()));
    let text = |next: &mut dyn FnMut() -> u64| -> String {
        let length = next() % 12;
        (0..length)
            .map(|_| char::from(b'a' + (next() % 4) as u8))
            .collect()
    };
    let texts: Vec<Option<String>> = (0..len)
        .map(|row| {
            let value = text(next);
            valid[row].then_some(value)
        })
        .collect();
    let lengths = |next: &mut dyn FnMut() -> u64| -> Vec<usize> {
        (0..len).map(|_| (next() % 4) as usize).collect()
    };
    match data_type {
        DataType::Null => Arc::new(NullArray::new(len)),
        DataType::Boolean => {
            let values = BooleanBuffer::from_iter((0..len).map(|_| next().is_multiple_of(2)));
            Arc::new(BooleanArray::new(values, null_buffer))
        }
        DataType::Int8 => Arc::new(Int8Array::new(
            (0..len).map(|_| next() as i8).collect(),
            null_buffer,
        )),
        DataType::Int32 => Arc::new(Int32Array::new(
            (0..len).map(|_| next() as i32).collect(),
            null_buffer,
        )),
        DataType::Int64 => Arc::new(Int64Array::new(
            (0..len).map(|_| next() as i64).collect(),
            null_buffer,
        )),
        DataType::Utf8 => Arc::new(StringArray::from(texts)),
        DataType::Utf8View => Arc::new(StringViewArray::from_iter(texts)),
        DataType::Binary => {
            let blobs: Vec<Option<Vec<u8>>> = (0..len)
                .map(|row| {
                    // Some values past a chunk.
                    let length = if next().is_multiple_of(8) {
                        1000 + next() % 200
                    } else {
                        next() % 40
                    };
                    let bytes = (0..length).map(|_| next() as u8).collect();
                    valid[row].then_some(bytes)
                })
                .collect();
            Arc::new(BinaryArray::from_iter(blobs))
        }
        DataType::FixedSizeBinary(size) => {
            let values = (0..len).map(|row| {
                let bytes: Vec<u8> = (0..*size).map(|_| next() as u8).collect();
                valid[row].then_some(bytes)
            });
            let values: Vec<Option<Vec<u8>>> = values.collect();
            Arc::new(
                FixedSizeBinaryArray::try_from_sparse_iter_with_size(values.into_iter(), *size)
                    .unwrap(),
            )
        }
        DataType::Dictionary(keys, values) => {
            // With 8-bit keys a few values shared by many rows; with 16-bit
            // ones more values than rows, as a slice of a large shared
            // dictionary has. Some values are null, and some unused.
            let count = match keys.as_ref() {
                DataType::Int8 => 5,
                _ => len + 7,
            };
            let values = random_array(next, values, count, true);
            let keys = (0..len).map(|_| next() as usize % count);
            match data_type {
                DataType::Dictionary(keys_type, _) if **keys_type == DataType::Int8 => {
                    let keys = Int8Array::new(keys.map(|key| key as i8).collect(), null_buffer);
                    Arc::new(DictionaryArray::new(keys, values))
                }
                _ => {
                    let keys = Int16Array::new(keys.map(|key| key as i16).collect(), null_buffer);
                    Arc::new(DictionaryArray::new(keys, values))
                }
            }
        }
        DataType::List(child) | DataType::LargeList(child) => {
            let lengths = lengths(next);
            let total = lengths.iter().sum();
            let nulls = !is_unframed(child.data_type());
            let values = random_array(next, child.data_type(), total, nulls);
            match data_type {
                DataType::List(_) => Arc::new(ListArray::new(
                    child.clone(),
                    OffsetBuffer::from_lengths(lengths),
                    values,
                    null_buffer,
                )),
                _ => Arc::new(LargeListArray::new(
                    child.clone(),
                    OffsetBuffer::from_lengths(lengths),
                    values,
                    null_buffer,
                )),
            }
        }
        DataType::Map(entries, _) => {
            let lengths = lengths(next);
            let total = lengths.iter().sum();
            let DataType::Struct(fields) = entries.data_type() else {
                panic!("a map's entries are a struct")
            };
            // Keys are never null.
            let columns = vec![
                random_array(next, fields[0].data_type(), total, false),
                random_array(next, fields[1].data_type(), total, true),
            ];
            let entries_array = StructArray::new(fields.clone(), columns, None);
            let offsets = OffsetBuffer::from_lengths(lengths);
            Arc::new(MapArray::new(
                entries.clone(),
                offsets,
                entries_array,
                null_buffer,
                false,
            ))
        }
        DataType::FixedSizeList(child, size) => {
            let values = random_array(
                next,
                child.data_type(),
                len * *size as usize,
                !is_unframed(child.data_type()),
            );
            Arc::new(FixedSizeListArray::new(
                child.clone(),
                *size,
                values,
                null_buffer,
            ))
        }
        DataType::Struct(fields) => {
            let columns = fields
                .iter()
                .map(|field| random_array(next, field.data_type(), len, true))
                .collect();
            Arc::new(StructArray::new(fields.clone(), columns, null_buffer))
        }
        DataType::ListView(child) | DataType::LargeListView(child) => {
            // Each row some values anywhere in a child twice as long as the
            // array: overlapping, out of order, some empty.
            let values_len = 2 * len + 3;
            let nulls = !is_unframed(child.data_type());
            let values = random_array(next, child.data_type(), values_len, nulls);
            let (offsets, sizes): (Vec<usize>, Vec<usize>) = (0..len)
                .map(|_| {
                    let size = (next() % 4) as usize;
                    ((next() as usize) % (values_len - size + 1), size)
                })
                .unzip();
            match data_type {
                DataType::ListView(_) => Arc::new(ListViewArray::new(
                    child.clone(),
                    offsets.iter().map(|&offset| offset as i32).collect(),
                    sizes.iter().map(|&size| size as i32).collect(),
                    values,
                    null_buffer,
                )),
                _ => Arc::new(LargeListViewArray::new(
                    child.clone(),
                    offsets.iter().map(|&offset| offset as i64).collect(),
                    sizes.iter().map(|&size| size as i64).collect(),
                    values,
                    null_buffer,
                )),
            }
        }
        DataType::RunEndEncoded(ends, values) => {
            // Runs of one to four rows; a run's value may be null (and so
            // its rows).
            let mut run_ends = Vec::new();
            while run_ends.last().map_or(len > 0, |&end| end < len) {
                run_ends.push(run_ends.last().unwrap_or(&0) + 1 + (next() % 4) as usize);
            }
            if let Some(last) = run_ends.last_mut() {
                *last = len;
            }
            let values = random_array(next, values.data_type(), run_ends.len(), true);
            match ends_type(run_ends.iter().copied(), ends.data_type()) {
                Ends::I16(ends) => Arc::new(RunArray::try_new(&ends, &values).unwrap()),
                Ends::I32(ends) => Arc::new(RunArray::try_new(&ends, &values).unwrap()),
                Ends::I64(ends) => Arc::new(RunArray::try_new(&ends, &values).unwrap()),
            }
        }
        DataType::Union(members, mode) => {
            // Each row a value of a random member, which may be null (and
            // so the row: a union has no nulls of its own). Sparse members
            // hold a value at every row; dense ones the values of the rows
            // that name them, after two that none does.
            let ids: Vec<i8> = members.iter().map(|(id, _)| id).collect();
            let at: Vec<usize> = (0..len).map(|_| next() as usize % ids.len()).collect();
            let type_ids = at.iter().map(|&at| ids[at]).collect();
            let mut counts = vec![2; ids.len()];
            let offsets = at.iter().map(|&at| {
                counts[at] += 1;
                counts[at] as i32 - 1
            });
            let offsets = (*mode == UnionMode::Dense).then(|| offsets.collect());
            let children = (members.iter().zip(counts))
                .map(|((_, member), count)| {
                    let values = if offsets.is_some() { count } else { len };
                    random_array(next, member.data_type(), values, true)
                })
                .collect();
            Arc::new(UnionArray::try_new(members.clone(), type_ids, offsets, children).unwrap())
        }
        data_type => panic!("no random arrays of {data_type}"),
    }
}

/// Run ends of one of the three types Arrow allows.
enum Ends {
    I16(Int16Array),
    I32(Int32Array),
    I64(Int64Array),
}

fn ends_type(ends: impl Iterator<Item = usize>, data_type: &DataType) -> Ends {
    match data_type {
        DataType::Int16 => Ends::I16(ends.map(|end| end as i16).collect()),
        DataType::Int32 => Ends::I32(ends.map(|end| end as i32).collect()),
        _ => Ends::I64(ends.map(|end| end as i64).collect()),
    }
}

/// `length` bytes from `seek` of each row's output, from [`encode`].
fn expected(mode: Mode, array: &dyn Array, length: usize, seek: u64) -> Vec<Option<Vec<u8>>> {
    (0..array.len())
        .map(|row| encode(array, row).map(|input| reference_xof_at(mode, &input, length, seek)))
        .collect()
}

#[test]
fn nested_rows_hash_their_encodings_on_every_engine() {
    let mut next = xorshift(44);
    let vectors = vectors();
    for data_type in nested_types() {
        assert!(
            blake3_batch::is_hashable_arrow_type(&data_type),
            "{data_type}"
        );
        let array = random_array(&mut next, &data_type, 300, true);
        for (name, engine) in all_engines() {
            for mode in vectors.modes() {
                let what = format!("{name} {mode:?} {data_type}");
                let digests = engine.hash_arrow(mode, &array).unwrap();
                assert_eq!(
                    arrow_outputs(&digests),
                    expected(mode, &array, 32, 0),
                    "{what}"
                );
            }
            let what = format!("{name} {data_type}");
            let slice = array.slice(37, 200);
            let digests = engine.hash_arrow(Mode::Hash, &slice).unwrap();
            assert_eq!(
                arrow_outputs(&digests),
                expected(Mode::Hash, &slice, 32, 0),
                "{what}, sliced"
            );
            let far = engine
                .hash_arrow_xof_at(Mode::Hash, &array, 70, 900)
                .unwrap();
            assert_eq!(
                arrow_outputs(&far),
                expected(Mode::Hash, &array, 70, 900),
                "{what}, extended"
            );
        }
    }
}

/// Every nested type as a field of one table, whose rows are encoded a
/// field at a time, in several pieces on every thread.
#[test]
fn a_table_of_every_nested_type_in_several_pieces() {
    let mut next = xorshift(7);
    let fields: Vec<(String, DataType)> = (nested_types().into_iter().enumerate())
        .map(|(index, data_type)| (format!("f{index}"), data_type))
        .collect();
    let table = struct_of(
        fields
            .iter()
            .map(|(name, data_type)| (name.as_str(), data_type.clone()))
            .collect(),
    );
    let array = random_array(&mut next, &table, 9000, true);
    for (name, engine) in all_engines() {
        let digests = engine.hash_arrow(Mode::Hash, &array).unwrap();
        assert_eq!(
            arrow_outputs(&digests),
            expected(Mode::Hash, &array, 32, 0),
            "{name}"
        );
    }
}

#[test]
fn nesting_keeps_different_values_apart() {
    let engine = &all_engines()[0].1;
    let lists = |rows: Vec<Option<Vec<Option<&str>>>>| {
        let values: Vec<Option<&str>> = rows.iter().flatten().flatten().copied().collect();
        let lengths = rows.iter().map(|row| row.as_ref().map_or(0, Vec::len));
        let nulls = NullBuffer::from(rows.iter().map(Option::is_some).collect::<Vec<_>>());
        let field = Arc::new(Field::new("item", DataType::Utf8, true));
        ListArray::new(
            field,
            OffsetBuffer::from_lengths(lengths),
            Arc::new(StringArray::from(values)),
            Some(nulls),
        )
    };
    let array = lists(vec![
        Some(vec![Some("ab"), Some("c")]),
        Some(vec![Some("a"), Some("bc")]),
        Some(vec![Some("abc")]),
        Some(vec![]),
        Some(vec![Some("")]),
        Some(vec![None]),
        None,
    ]);
    let digests = arrow_outputs(&engine.hash_arrow(Mode::Hash, &array).unwrap());
    let valid: Vec<&Vec<u8>> = digests.iter().flatten().collect();
    for (index, digest) in valid.iter().enumerate() {
        assert!(
            !valid[..index].contains(digest),
            "row {index} repeats an earlier row"
        );
    }
    assert_eq!(
        digests[3].as_deref(),
        Some(blake3::hash(b"").as_bytes().as_slice())
    );
    assert_eq!(digests[6], None);
    // A boolean is one byte, as a column and as a list's value.
    let flags = BooleanArray::from(vec![Some(true), Some(false), None]);
    let digests = arrow_outputs(&engine.hash_arrow(Mode::Hash, &flags).unwrap());
    assert_eq!(
        digests[..2],
        [
            Some(blake3::hash(&[1]).as_bytes().to_vec()),
            Some(blake3::hash(&[0]).as_bytes().to_vec())
        ]
    );
    assert_eq!(digests[2], None);
}

#[test]
fn a_null_inside_a_nested_list_of_numbers_is_refused_at_the_callers_row() {
    let engine = &all_engines()[0].1;
    let numbers = Int32Array::from(vec![Some(1), Some(2), None, Some(4), None]);
    let item = Arc::new(Field::new("item", DataType::Int32, true));
    // Inner lists: [1], [2, null], [4], [null].
    let inner = ListArray::new(
        item,
        OffsetBuffer::from_lengths([1, 2, 1, 1]),
        Arc::new(numbers),
        None,
    );
    let inner_field = Arc::new(Field::new("item", inner.data_type().clone(), true));
    // Outer rows: [[1]], [[2, null]] (null), [[4]], [[null]].
    let outer = |valid: Vec<bool>| {
        ListArray::new(
            inner_field.clone(),
            OffsetBuffer::from_lengths([1, 1, 1, 1]),
            Arc::new(inner.clone()),
            Some(NullBuffer::from(valid)),
        )
    };
    let error = engine
        .hash_arrow(Mode::Hash, &outer(vec![true, false, true, true]))
        .unwrap_err();
    assert!(
        matches!(error.kind(), ErrorKind::ArrowNullValue { row: 3 }),
        "{error}"
    );
    let error = engine
        .hash_arrow(Mode::Hash, &outer(vec![true, true, true, true]))
        .unwrap_err();
    assert!(
        matches!(error.kind(), ErrorKind::ArrowNullValue { row: 1 }),
        "{error}"
    );
    // Under null rows only, the nulls are never read.
    let fine = outer(vec![true, false, true, false]);
    let digests = engine.hash_arrow(Mode::Hash, &fine).unwrap();
    assert_eq!(arrow_outputs(&digests), expected(Mode::Hash, &fine, 32, 0));

    // In a table, at the table's row, and not under a null row.
    let outer = Arc::new(outer(vec![true, true, true, true])) as ArrayRef;
    let fields = Fields::from(vec![Field::new("lists", outer.data_type().clone(), true)]);
    let table = |valid: Vec<bool>| {
        StructArray::new(
            fields.clone(),
            vec![outer.clone()],
            Some(NullBuffer::from(valid)),
        )
    };
    let error = engine
        .hash_arrow(Mode::Hash, &table(vec![true, true, true, true]))
        .unwrap_err();
    assert!(
        matches!(error.kind(), ErrorKind::ArrowNullValue { row: 1 }),
        "{error}"
    );
    let error = engine
        .hash_arrow(Mode::Hash, &table(vec![true, false, true, true]))
        .unwrap_err();
    assert!(
        matches!(error.kind(), ErrorKind::ArrowNullValue { row: 3 }),
        "{error}"
    );
    assert!(engine
        .hash_arrow(Mode::Hash, &table(vec![true, false, true, false]))
        .is_ok());
}

/// A dictionary value holding a null inside a list of numbers is refused
/// at the first row whose key names it, at any depth; where only null
/// rows or no row name it, it is never read.
#[test]
fn a_null_inside_a_dictionary_value_is_refused_only_where_a_row_uses_it() {
    let engine = &all_engines()[0].1;
    let item = Arc::new(Field::new("item", DataType::Int32, true));
    // Values: [1, 2], [null], [3].
    let values = ListArray::new(
        item,
        OffsetBuffer::from_lengths([2, 1, 1]),
        Arc::new(Int32Array::from(vec![Some(1), Some(2), None, Some(3)])),
        None,
    );
    let dictionary = |keys: Vec<Option<i8>>| {
        DictionaryArray::new(Int8Array::from(keys), Arc::new(values.clone()) as ArrayRef)
    };
    let error = engine
        .hash_arrow(
            Mode::Hash,
            &dictionary(vec![Some(0), Some(2), Some(1), Some(1)]),
        )
        .unwrap_err();
    assert!(
        matches!(error.kind(), ErrorKind::ArrowNullValue { row: 2 }),
        "{error}"
    );
    let fine = dictionary(vec![Some(0), None, Some(2), Some(0)]);
    let digests = engine.hash_arrow(Mode::Hash, &fine).unwrap();
    assert_eq!(arrow_outputs(&digests), expected(Mode::Hash, &fine, 32, 0));

    // In a list, at the list's row.
    let keys = Arc::new(dictionary(vec![Some(0), Some(2), Some(1)])) as ArrayRef;
    let field = Arc::new(Field::new("item", keys.data_type().clone(), true));
    let lists = ListArray::new(field, OffsetBuffer::from_lengths([2, 0, 1]), keys, None);
    let error = engine.hash_arrow(Mode::Hash, &lists).unwrap_err();
    assert!(
        matches!(error.kind(), ErrorKind::ArrowNullValue { row: 2 }),
        "{error}"
    );
}

/// A tensor as nested fixed-size lists (Polars' `Array` of several
/// dimensions, DuckDB's `INTEGER[3][2]`) is its numbers in row-major order,
/// as a flat fixed-size list of them is; a null anywhere inside a row that
/// is not null is refused.
#[test]
fn a_tensor_of_nested_fixed_size_lists_is_its_numbers_in_order() {
    let engine = &all_engines()[0].1;
    let numbers = |values: Vec<Option<i32>>| Arc::new(Int32Array::from(values)) as ArrayRef;
    let int_field = Arc::new(Field::new("item", DataType::Int32, true));
    let rows = |values: ArrayRef, inner_nulls: Option<NullBuffer>, nulls: Option<NullBuffer>| {
        let inner = FixedSizeListArray::new(int_field.clone(), 3, values, inner_nulls);
        let inner_field = Arc::new(Field::new("item", inner.data_type().clone(), true));
        FixedSizeListArray::new(inner_field, 2, Arc::new(inner), nulls)
    };
    // Two rows of 2 × 3 numbers, 0..12.
    let tensors = rows(numbers((0..12).map(Some).collect()), None, None);
    let flat = FixedSizeListArray::new(
        int_field.clone(),
        6,
        numbers((0..12).map(Some).collect()),
        None,
    );
    let expected: Vec<Option<Vec<u8>>> = (0..2)
        .map(|row| {
            let bytes: Vec<u8> = (6 * row..6 * row + 6)
                .flat_map(|n: i32| n.to_le_bytes())
                .collect();
            Some(blake3::hash(&bytes).as_bytes().to_vec())
        })
        .collect();
    for (name, engine) in all_engines() {
        let digests = engine.hash_arrow(Mode::Hash, &tensors).unwrap();
        assert_eq!(arrow_outputs(&digests), expected, "{name}");
        let digests = engine.hash_arrow(Mode::Hash, &flat).unwrap();
        assert_eq!(arrow_outputs(&digests), expected, "{name}, flat");
        let digests = engine.hash_arrow(Mode::Hash, &tensors.slice(1, 1)).unwrap();
        assert_eq!(arrow_outputs(&digests), expected[1..], "{name}, sliced");
    }
    // In a table, its bytes framed once, as any column's value.
    let fields = Fields::from(vec![Field::new("t", tensors.data_type().clone(), true)]);
    let table = StructArray::new(fields, vec![Arc::new(tensors.clone())], None);
    let digests = arrow_outputs(&engine.hash_arrow(Mode::Hash, &table).unwrap());
    let row: Vec<u8> = (6..12).flat_map(|n: i32| n.to_le_bytes()).collect();
    assert_eq!(
        digests[1].as_deref(),
        Some(blake3::hash(&frame(Some(row))).as_bytes().as_slice())
    );

    // A null number, or a null inner list, in row 1; under a null row it is
    // never read.
    let with_null_number = |nulls| {
        rows(
            numbers((0..12).map(|n| (n != 8).then_some(n)).collect()),
            None,
            nulls,
        )
    };
    let inner_nulls = Some(NullBuffer::from(vec![true, true, true, false]));
    let with_null_list = |nulls| {
        rows(
            numbers((0..12).map(Some).collect()),
            inner_nulls.clone(),
            nulls,
        )
    };
    for array in [with_null_number(None), with_null_list(None)] {
        let error = engine.hash_arrow(Mode::Hash, &array).unwrap_err();
        assert!(
            matches!(error.kind(), ErrorKind::ArrowNullValue { row: 1 }),
            "{error}"
        );
    }
    let row_1_null = || Some(NullBuffer::from(vec![true, false]));
    for array in [with_null_number(row_1_null()), with_null_list(row_1_null())] {
        let digests = arrow_outputs(&engine.hash_arrow(Mode::Hash, &array).unwrap());
        assert_eq!(digests, vec![expected[0].clone(), None]);
    }
}
