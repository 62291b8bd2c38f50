//! The rows that have no digest to give, found before anything is hashed:
//! a row that is not null but holds, at any depth (in a field, in a list
//! value, in its run's, its key's or its union member's value), a list of
//! numbers or booleans with a null value in it (the bytes under a null are
//! whatever its producer left there), or a dictionary key past its values
//! (a malformed array). Values the row never reads — under a null row,
//! field or list value, or a dictionary value no row's key names — are not
//! checked.

use arrow_array::cast::AsArray;
use arrow_array::Array;

use super::dictionary::{key_of_row, rows_with_bad_keys};
use super::encoding::{is_unframed_value, list_parts, Offsets};
use super::runs::Runs;
use super::unions::Union;
use crate::{Error, ErrorKind};

/// The error for the first row of `array` that has no digest to give.
pub(super) fn check(array: &dyn Array) -> Result<(), Error> {
    match bad_rows(array).and_then(|bad| bad.iter().position(|&bad| bad)) {
        Some(row) => Err(problem(array, row, row).into()),
        None => Ok(()),
    }
}

/// Which rows of `array` that are not null have no digest to give; `None`
/// where every one has (so arrays without problems allocate nothing).
fn bad_rows(array: &dyn Array) -> Option<Vec<bool>> {
    let nulls = array.logical_nulls();
    let is_valid = |row: usize| nulls.as_ref().is_none_or(|nulls| nulls.is_valid(row));
    let bad: Vec<bool> = if let Some(dictionary) = array.as_any_dictionary_opt() {
        let bad_keys = rows_with_bad_keys(array);
        let bad_values = bad_rows(dictionary.values().as_ref());
        if bad_keys.is_none() && bad_values.is_none() {
            return None;
        }
        // A bad key is clamped into the values here, and found first.
        let keys = dictionary.normalized_keys();
        (keys.into_iter().enumerate())
            .map(|(row, key)| {
                let bad_key = bad_keys.as_ref().is_some_and(|bad| bad[row]);
                let bad_value = bad_values.as_ref().is_some_and(|bad| bad[key]);
                bad_key || (is_valid(row) && bad_value)
            })
            .collect()
    } else if let Some(runs) = Runs::of(array) {
        let bad_values = bad_rows(runs.values())?;
        (runs.keys().into_iter().enumerate())
            .map(|(row, run)| is_valid(row) && bad_values[run])
            .collect()
    } else if let Some(fields) = array.as_struct_opt() {
        let fields: Vec<Vec<bool>> = fields
            .columns()
            .iter()
            .filter_map(|field| bad_rows(field.as_ref()))
            .collect();
        (0..array.len())
            .map(|row| is_valid(row) && fields.iter().any(|bad| bad[row]))
            .collect()
    } else if let Some(union) = Union::of(array) {
        let members = union.members().iter();
        let bad_values: Vec<Option<Vec<bool>>> =
            members.map(|member| member.and_then(bad_rows)).collect();
        if bad_values.iter().all(Option::is_none) {
            return None;
        }
        (0..array.len())
            .map(|row| {
                let (type_id, value) = union.value_of(row);
                let bad = &bad_values[usize::from(type_id)];
                is_valid(row) && bad.as_ref().is_some_and(|bad| bad[value])
            })
            .collect()
    } else if let Some((offsets, values)) = list_parts(array) {
        let bad_values = bad_values(values)?;
        (0..array.len())
            .map(|row| {
                let values = offsets.clamped_values(row, bad_values.len());
                is_valid(row) && bad_values[values].contains(&true)
            })
            .collect()
    } else {
        return None;
    };
    bad.contains(&true).then_some(bad)
}

/// Which values of a list's child array make the row that holds them have
/// no digest: where the list's values are unframed, null ones and
/// fixed-size lists that hold one (at any depth), else those with
/// problems of their own.
fn bad_values(values: &dyn Array) -> Option<Vec<bool>> {
    if !is_unframed_value(values.data_type()) {
        return bad_rows(values);
    }
    let nulls = values
        .logical_nulls()
        .filter(|nulls| nulls.null_count() > 0);
    let inner = list_parts(values).and_then(|(offsets, child)| Some((offsets, bad_values(child)?)));
    if nulls.is_none() && inner.is_none() {
        return None;
    }
    let bad = (0..values.len()).map(|value| {
        let is_null = nulls.as_ref().is_some_and(|nulls| nulls.is_null(value));
        let holds_null = inner.as_ref().is_some_and(|(offsets, bad)| {
            bad[offsets.clamped_values(value, bad.len())].contains(&true)
        });
        is_null || holds_null
    });
    Some(bad.collect())
}

/// Why row `row` of `array`, one of [`bad_rows`], has no digest, reported
/// as row `shown_row` (the caller's).
fn problem(array: &dyn Array, row: usize, shown_row: usize) -> ErrorKind {
    let is_bad = |array: &dyn Array, row: usize| bad_rows(array).is_some_and(|bad| bad[row]);
    if let Some(dictionary) = array.as_any_dictionary_opt() {
        return match key_of_row(array, row, shown_row) {
            Ok(key) => problem(dictionary.values().as_ref(), key, shown_row),
            Err(bad_key) => bad_key,
        };
    } else if let Some(runs) = Runs::of(array) {
        return problem(runs.values(), runs.run_of(row), shown_row);
    } else if let Some(fields) = array.as_struct_opt() {
        let mut fields = fields.columns().iter().map(|field| field.as_ref());
        let field = fields.find(|field| is_bad(*field, row));
        return problem(field.expect("a bad row has a bad field"), row, shown_row);
    } else if let Some(union) = Union::of(array) {
        let (type_id, value) = union.value_of(row);
        let member = union.member(type_id).expect("a bad row has a member");
        return problem(member, value, shown_row);
    }
    let (offsets, values): (Offsets, _) = list_parts(array).expect("a bad row is a list's");
    if is_unframed_value(values.data_type()) {
        return ErrorKind::ArrowNullValue { row: shown_row };
    }
    let bad_values = bad_rows(values).expect("a bad row has bad values");
    let mut row_values = offsets.clamped_values(row, bad_values.len());
    let value = row_values.find(|&value| bad_values[value]);
    problem(values, value.expect("a bad row has a bad value"), shown_row)
}
