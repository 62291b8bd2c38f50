"""Ray Data's extension columns as the bytes that identify their rows.

Ray stores a column of NumPy tensors as an Arrow extension type: tensors
of one shape as a list of each tensor's values in C order, tensors of
varying shape as a struct of those values (``data``) and the shape. Which
of the two a block gets depends on the shapes that happen to meet in it,
and concatenating blocks turns one into the other, so a tensor's digest
must not depend on it: in both, a row is hashed as its values, the bytes
of ``tensor.tobytes()``, and the shape is not part of the digest (as it is
not where every row has the same shape). A tensor of strings (dtype
``U``), whose elements Ray keeps as ``fixed_size_binary`` UTF-32 of the
block's widest string, is a list of its strings, as
:mod:`blake3_batch._converted` makes a NumPy batch's: a ``"pyarrow"`` and
a ``"numpy"`` batch of the same rows give the same digests, and a tensor
one digest whatever the strings that meet it in a block.

A column of Python objects, which Ray stores pickled (tensors of different
numbers of dimensions, or of a dtype Arrow has no type for, among them), is
refused: a pickle's bytes are not the object's.

The columns are replaced by their values before they cross the Arrow C
interface, which also keeps Ray's extension metadata (pickled bytes in
some versions, which arrow-rs refuses) out of it.
"""

from __future__ import annotations

from typing import Any

import pyarrow as pa

_FIXED_SHAPE = ("ray.data.arrow_tensor", "ray.data.arrow_tensor_v2")
_VARYING_SHAPE = "ray.data.arrow_variable_shaped_tensor"
_PICKLED_OBJECTS = "ray.data.arrow_pickled_object"


def is_ray_type(data_type: pa.DataType) -> bool:
    """Whether ``data_type`` is one of Ray's tensor or object extension types."""
    return getattr(data_type, "extension_name", None) in (*_FIXED_SHAPE, _VARYING_SHAPE, _PICKLED_OBJECTS)


def _values_type(data_type: pa.DataType) -> pa.DataType:
    """The type :func:`tensor_values` gives a Ray tensor type's arrays."""
    storage = data_type.storage_type
    lists = storage.field("data").type if pa.types.is_struct(storage) else storage
    return pa.large_list(pa.string()) if pa.types.is_fixed_size_binary(lists.value_type) else lists


def tensor_values(array: pa.Array) -> pa.Array:
    """A Ray tensor array's rows as lists of their values (a null row
    stays null), of strings where the tensors hold strings."""
    storage = array.storage
    if pa.types.is_struct(storage.type):
        # flatten() applies the struct's offset and nulls to its fields.
        storage = storage.flatten()[storage.type.get_field_index("data")]
    if pa.types.is_fixed_size_binary(storage.type.value_type):
        return _string_lists(storage)
    return storage


def _string_lists(lists: pa.Array) -> pa.Array:
    """A list array of ``fixed_size_binary(4 * w)`` elements, Ray's
    string tensors' UTF-32 values (NumPy's ``<Uw``), as a ``large_list`` of
    their strings, nulls kept."""
    import numpy as np

    from ._converted import numpy_strings

    width = lists.type.value_type.byte_width
    elements = lists.values  # the whole child, before the array's offset
    if width % 4 or elements.null_count:
        raise TypeError(
            f"cannot hash a Ray tensor column of {lists.type.value_type} values"
            f"{' with null values' if elements.null_count else ''}: Ray makes them of NumPy "
            "strings (UTF-32, 4 bytes a character, none null); convert the tensors to one "
            "Arrow type first"
        )
    starts = lists.offsets.cast(pa.int64())  # Ray's storage: a list or a large_list
    if width and len(elements):
        strings = np.frombuffer(
            elements.buffers()[1], dtype=f"<U{width // 4}", count=len(elements), offset=elements.offset * width
        )
    else:
        strings = np.zeros(len(elements), "<U1")
    mask = lists.is_null() if lists.null_count else None
    return pa.LargeListArray.from_arrays(starts, numpy_strings(strings), mask=mask)


def _chunked(column: pa.ChunkedArray) -> pa.ChunkedArray:
    return pa.chunked_array([tensor_values(chunk) for chunk in column.chunks], _values_type(column.type))


def column_values(column: Any, name: str = "the column") -> Any:
    """A pyarrow array or chunked array as it is, or, where it is a Ray
    tensor column, as its values; a column of Ray's pickled objects raises
    ``TypeError`` (see the module's docs). ``name`` is for messages."""
    if not is_ray_type(column.type):
        return column
    if column.type.extension_name == _PICKLED_OBJECTS:
        raise TypeError(
            f"cannot hash {name}: Ray stored it as pickled Python objects (values of mixed types, "
            "tensors of different numbers of dimensions, or of a dtype Arrow has no type for, "
            "such as bytes, complex or structured), and a pickle's bytes are not the "
            'object\'s; take the batches with batch_format="numpy" (arrays are hashed by their '
            "values) or convert the values to one Arrow type first"
        )
    if isinstance(column, pa.ChunkedArray):
        return _chunked(column)
    return tensor_values(column)


def ray_columns_as_values(data: Any) -> Any:
    """``data`` itself, or, where a pyarrow array, chunked array, record
    batch or table is or holds a Ray tensor column, a copy in which that
    column is its values (see :func:`column_values`)."""
    if isinstance(data, (pa.Array, pa.ChunkedArray)):
        return column_values(data)
    if isinstance(data, (pa.RecordBatch, pa.Table)):
        if not any(is_ray_type(field.type) for field in data.schema):
            return data
        columns = [column_values(column, f"column {name!r}") for column, name in zip(data.columns, data.schema.names)]
        return type(data).from_arrays(columns, names=data.schema.names)
    return data
