//! Arrays whose buffers contradict their type at any depth — run ends that
//! do not describe the rows, list views that reach past their values,
//! union rows that name no member or reach past its values —
//! found before any other pass reads them: arrays from the C data
//! interface are not validated, and arrow-rs's own accessors (a run-end
//! encoded array's nulls, say) would panic on them.

use arrow_array::cast::AsArray;
use arrow_array::Array;

use super::encoding::list_parts;
use super::runs::Runs;
use super::unions::Union;
use crate::Error;

/// The error for the first malformed run-end encoded array, list view or
/// union in `array`, itself or nested in it.
pub(super) fn check(array: &dyn Array) -> Result<(), Error> {
    if let Some(runs) = Runs::of(array) {
        runs.check()?;
        return check(runs.values());
    } else if let Some(dictionary) = array.as_any_dictionary_opt() {
        return check(dictionary.values().as_ref());
    } else if let Some(fields) = array.as_struct_opt() {
        return (fields.columns().iter()).try_for_each(|field| check(field.as_ref()));
    } else if let Some(union) = Union::of(array) {
        union.check()?;
        return (union.members().iter().flatten()).try_for_each(|member| check(*member));
    }
    match list_parts(array) {
        Some((offsets, values)) => {
            if !offsets.follow_one_another() {
                offsets.check(array.len(), values.len())?;
            }
            check(values)
        }
        // Other arrays nest nothing that can be malformed this way.
        None => Ok(()),
    }
}
