"""Copies of the pyarrow data that arrow-rs cannot import as it is.

arrow-rs applies a slice's offset twice to a struct that lies inside a
sliced struct or fixed-size list (apache/arrow-rs#9235), and panics while
importing it: ``table.slice(1)`` with a column of structs of structs is
enough. Such a column is copied here, unsliced, before it crosses the C
data interface; everything else passes through as it is. Other producers'
slices of that shape raise ``ValueError`` at the import instead.
"""

from __future__ import annotations

from typing import Any

import pyarrow as pa


def _holds_a_struct_by_offset(data_type: pa.DataType) -> bool:
    """Whether a value of this type reaches a struct through structs and
    fixed-size lists alone, whose children arrow-rs slices by offset."""
    if pa.types.is_struct(data_type):
        children = [data_type.field(i).type for i in range(data_type.num_fields)]
    elif pa.types.is_fixed_size_list(data_type):
        children = [data_type.value_type]
    else:
        return False
    return any(pa.types.is_struct(child) or _holds_a_struct_by_offset(child) for child in children)


def _array(array: pa.Array) -> pa.Array:
    if array.offset and _holds_a_struct_by_offset(array.type):
        return pa.concat_arrays([array])  # a copy from offset 0
    return array


def _chunked(column: pa.ChunkedArray) -> pa.ChunkedArray:
    if not _holds_a_struct_by_offset(column.type):
        return column
    return pa.chunked_array([_array(chunk) for chunk in column.chunks], column.type)


def unsliced(column: Any) -> Any:
    """``column`` itself, or, where a pyarrow array, chunked array, record
    batch or table holds a column arrow-rs would panic on, a copy of it in
    which that column is unsliced."""
    if isinstance(column, pa.Array):
        return _array(column)
    if isinstance(column, pa.ChunkedArray):
        return _chunked(column)
    if isinstance(column, (pa.RecordBatch, pa.Table)):
        if not any(_holds_a_struct_by_offset(field.type) for field in column.schema):
            return column
        fix = _array if isinstance(column, pa.RecordBatch) else _chunked
        columns = [fix(c) for c in column.columns]
        return type(column).from_arrays(columns, schema=column.schema)
    return column
