//! Tables of one column — a pyarrow `Table` or `RecordBatch`, a Polars
//! `DataFrame`, a DuckDB relation such as `con.sql("select text from
//! docs")` — read as that column. Through the Arrow PyCapsule interface a
//! table is a struct whose fields are its columns, so a struct of one field
//! is its field; a struct of several is refused with their names, unless
//! its rows are asked for (`rows=True`): then each row is hashed over all
//! its columns.

use arrow_array::cast::AsArray;
use arrow_array::{Array, ArrayRef};
use arrow_schema::{DataType, Field, FieldRef};
use pyo3::exceptions::PyTypeError;
use pyo3::PyResult;

/// The one column's field where `field` is a table's (a struct of one
/// field); `None` for any other field, and for an extension type stored as
/// a struct (Ray's tensors of varying shape: not a table); the error that
/// names the columns for a struct of several (or none).
pub fn one_column(field: &Field) -> PyResult<Option<FieldRef>> {
    let DataType::Struct(fields) = field.data_type() else {
        return Ok(None);
    };
    if field.extension_type_name().is_some() {
        return Ok(None);
    }
    match fields.len() {
        1 => Ok(Some(fields[0].clone())),
        count => {
            let names: Vec<&str> = fields.iter().map(|field| field.name().as_str()).collect();
            let first = names.first().copied().unwrap_or("text");
            Err(PyTypeError::new_err(format!(
                "expected one column, got a table (or struct) of {count} columns ({}): pass one \
                 of them, e.g. table[\"{first}\"], or a query that selects one; or pass \
                 rows=True to hash each row over all its columns",
                names.join(", ")
            )))
        }
    }
}

/// The column of one array of a one-column table (see [`one_column`]). A
/// struct column whose rows may be null is not a table: its field alone
/// would lose those nulls, so it is refused.
pub fn column_of(table: &ArrayRef) -> PyResult<ArrayRef> {
    let table = table
        .as_struct_opt()
        .ok_or_else(|| PyTypeError::new_err("expected a table's columns (an Arrow struct)"))?;
    if table.null_count() > 0 {
        return Err(PyTypeError::new_err(
            "a struct column with null rows: hash its field (pyarrow.compute.struct_field) \
             and handle the null rows yourself",
        ));
    }
    Ok(table.column(0).clone())
}

/// Checks that `field` is a table's (or a struct column's) whose rows can
/// be hashed over all their columns (`rows=True`): a struct of one field
/// or more, each of a type a column can be (structs among them). The error
/// names the columns that cannot be, with their types.
pub fn table_rows(field: &Field) -> PyResult<()> {
    let fields = match field.data_type() {
        DataType::Struct(fields) if field.extension_type_name().is_none() => fields,
        data_type => {
            return Err(PyTypeError::new_err(format!(
                "rows=True hashes each row of a table (or struct column) over all its columns, \
                 not a column of type {data_type}: leave rows= out to hash each value"
            )))
        }
    };
    if fields.is_empty() {
        return Err(PyTypeError::new_err(
            "cannot hash the rows of a table with no columns",
        ));
    }
    let unhashable: Vec<String> = fields
        .iter()
        .filter(|field| !blake3_batch::is_hashable_arrow_type(field.data_type()))
        .map(|field| format!("{} ({})", field.name(), field.data_type()))
        .collect();
    match unhashable.is_empty() {
        true => Ok(()),
        false => Err(PyTypeError::new_err(format!(
            "cannot hash the rows of this table: its columns {} have no bytes to hash; each \
             column must be binary, string or fixed-size binary, fixed-width numbers, \
             booleans, nulls, a dictionary of binary, strings or numbers, or lists, maps or \
             structs of those (cast the others first, or drop them)",
            unhashable.join(", ")
        ))),
    }
}
