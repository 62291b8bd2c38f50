//! Tables of one column — a pyarrow `Table` or `RecordBatch`, a Polars
//! `DataFrame`, a DuckDB relation such as `con.sql("select text from
//! docs")` — read as that column. Through the Arrow PyCapsule interface a
//! table is a struct whose fields are its columns, so a table's struct of
//! one field is its field; one of several is refused with their names,
//! unless its rows are asked for (`rows=True`): then each row is hashed
//! over all its columns. A struct *column* (a pyarrow `StructArray`, a
//! Polars `Series` of structs) is a column like any other, its values
//! hashed as the library hashes them (each field framed), as `rows=True`
//! does: only the Python type tells the two apart.

use arrow_array::cast::AsArray;
use arrow_array::{Array, ArrayRef};
use arrow_schema::{DataType, Field, FieldRef};
use pyo3::exceptions::PyTypeError;
use pyo3::prelude::*;
use pyo3::types::PyTuple;

/// Whether a Python object with the Arrow PyCapsule interface holds a
/// table (whose struct is its columns) or one column.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Shape {
    Table,
    Column,
}

/// The classes of one column: pyarrow's `Array` (a `StructArray` derives
/// from it) and `ChunkedArray`, arro3's and nanoarrow's `Array` and
/// `ChunkedArray`, Polars' and pandas' `Series`, pandas' `Index` and
/// NumPy's `ndarray`.
const COLUMN_CLASSES: [&str; 5] = ["Array", "ChunkedArray", "Series", "Index", "ndarray"];

/// The shape of `object`, by its class or a base class's name: a column
/// for the arrays and series of [`COLUMN_CLASSES`], a table for anything
/// else (tables, record batches and their readers, DataFrames, DuckDB
/// relations).
pub fn shape_of(object: &Bound<'_, PyAny>) -> PyResult<Shape> {
    let classes = object.get_type().getattr("__mro__")?;
    for class in classes.cast::<PyTuple>()?.iter() {
        let name: String = class.getattr("__name__")?.extract()?;
        if COLUMN_CLASSES.contains(&name.as_str()) {
            return Ok(Shape::Column);
        }
    }
    Ok(Shape::Table)
}

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
                "expected one column, got a table of {count} columns ({}): pass one \
                 of them, e.g. table[\"{first}\"], or a query that selects one; or pass \
                 rows=True to hash each row over all its columns",
                names.join(", ")
            )))
        }
    }
}

/// The column of one array of a one-column table (see [`one_column`]). A
/// struct whose rows may be null is not a table: its field alone would
/// lose those nulls, so it is refused.
pub fn column_of(table: &ArrayRef) -> PyResult<ArrayRef> {
    let table = table
        .as_struct_opt()
        .ok_or_else(|| PyTypeError::new_err("expected a table's columns (an Arrow struct)"))?;
    if table.null_count() > 0 {
        return Err(PyTypeError::new_err(
            "a table with null rows is a struct column: pass rows=True to hash each row over \
             its columns (a null row gets a null output), or pass it as an array \
             (pyarrow.array)",
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
             booleans, nulls, or dictionaries, lists, list views, maps, structs (of one field or \
             more), unions or run-end encoded columns of those (cast the others first, or drop \
             them)",
            unhashable.join(", ")
        ))),
    }
}
