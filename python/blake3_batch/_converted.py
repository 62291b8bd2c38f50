"""pandas objects and NumPy arrays as the pyarrow data the hashing reads.

Complex numbers, in a Series or a DataFrame's column, are each hashed as
its bytes, as in a NumPy array. A MultiIndex is the table of its levels,
each entry a row: as pandas objects are columns, each tuple is hashed as
a struct column's row (its levels framed, as ``rows=True`` frames a
table's columns). Sparse columns are their dense values.

A DataFrame's rows are its columns' values, as ``DataFrame.duplicated``
sees them: pandas' own Arrow export (``__arrow_c_stream__``, pandas 2.2 and
later) adds the index as a column wherever it is not a plain range (after
``sort_values``, ``set_index`` or a filter by labels), and hashing rows
with it would give every row its own digest. So the index is left out here
(``df.reset_index()`` puts it among the columns). A Series or Index is
converted as pandas 3 exports a Series (``pyarrow.array``: nulls and NaN
as nulls), so that pandas 2, whose Series has no Arrow export, gives the
same digests.

A 1-D NumPy array is the Arrow column ``pyarrow.array`` makes of it (but
one of single bytes, most likely bytes not yet cut into blobs, is
refused, as ``hash_records`` refuses it; numbers are their values in
either byte order; complex numbers and structured records, which have no
Arrow type, are each its bytes, as ``hash_records`` hashes them); an
array of more dimensions is a column of its rows, each hashed as its
values' bytes (``row.tobytes()``, as ``hash_records`` hashes it), and so
is each array of a 1-D array of arrays of any shapes (a tensor column in
a pandas or numpy batch), None a null.

Strings (dtype ``U``) and byte strings (``S``) are hashed as their values,
as NumPy gives them: the NUL padding up to the dtype's width is not part
of a value (``np.array(["ab"], "<U5")[0] == "ab"``), and a NUL inside one
is (pyarrow's own conversion cuts a value at its first NUL). A tensor of
them is a list of its strings, framed as any Arrow list of strings: its
``tobytes()`` would depend on the width, which NumPy and Ray choose by the
longest string that meets it in an array or a block. So is an array of
Python ``str`` (or ``bytes``) and None: a row of a Ray numpy batch's
list of strings.
"""

from __future__ import annotations

from typing import Any

# Ray's numpy batches hold nested lists, structs and maps as Python objects:
# its pyarrow batches keep their Arrow types.
_FROM_RAY = ' (or, from Ray Data, take the batches with batch_format="pyarrow")'


def as_arrow(data: Any) -> Any:
    """``data`` as pyarrow data if it is a pandas DataFrame, Series or
    Index or a NumPy array, else ``data`` itself."""
    module = type(data).__module__
    if module.startswith("pandas"):
        import pandas as pd
        import pyarrow as pa

        if isinstance(data, pd.MultiIndex):
            # Its entries are tuples: the rows of a table of its levels.
            return _frame(data.to_frame(index=False))
        if isinstance(data, pd.DataFrame):
            return _frame(_dense(data))
        if isinstance(data, (pd.Series, pd.Index)):
            if _complex(data.dtype):
                return pa.chunked_array([numpy_column(data.to_numpy(), "the series")])
            array = pa.array(_dense(data))
            return array if isinstance(array, pa.ChunkedArray) else pa.chunked_array([array], array.type)
    elif module == "numpy":
        import numpy as np

        if isinstance(data, np.ndarray):
            if data.ndim == 0 or (data.ndim == 1 and data.dtype.kind in "iuSV" and data.dtype.itemsize == 1):
                # Most likely bytes not yet cut into blobs (as hash_records
                # refuses them): a digest of each byte would be a mistake.
                raise TypeError(
                    f"a NumPy array of {data.ndim} dimension(s) of dtype {data.dtype} is not a column "
                    "of blobs: reshape bytes to (blobs, blob_size) for a digest of each row, or pass "
                    "pyarrow.array(array) for an Arrow column of one byte a row"
                )
            return numpy_column(data, "the array")
    return data


def _dense(data: Any) -> Any:
    """A pandas Series, Index or DataFrame with its sparse columns (which
    pyarrow does not convert) as the dense values they stand for."""
    import pandas as pd

    if isinstance(data, pd.DataFrame):
        sparse = {name: dtype.subtype for name, dtype in data.dtypes.items() if isinstance(dtype, pd.SparseDtype)}
        return data.astype(sparse) if sparse else data
    return data.astype(data.dtype.subtype) if isinstance(data.dtype, pd.SparseDtype) else data


def _complex(dtype: Any) -> bool:
    """Whether a pandas column of ``dtype`` holds complex numbers, which
    have no Arrow type (:func:`numpy_column` hashes each as its bytes)."""
    return getattr(dtype, "kind", None) == "c"


def _frame(frame: Any) -> Any:
    """A DataFrame's columns as a pyarrow table, its tensor columns (rows
    of arrays) and complex ones, which pyarrow does not convert, as
    :func:`numpy_column` makes them."""
    import pyarrow as pa

    # Only object columns can hold arrays: others are not turned into
    # NumPy (a pandas 3 string column would become Python objects).
    tensors = [
        i
        for i in range(frame.shape[1])
        if _complex(frame.dtypes.iloc[i])
        or (frame.dtypes.iloc[i] == object and _holds_arrays(frame.iloc[:, i].to_numpy()))
    ]
    if not tensors:
        return pa.Table.from_pandas(frame, preserve_index=False)
    others = iter(pa.Table.from_pandas(frame.drop(columns=frame.columns[tensors]), preserve_index=False).columns)
    names = [str(name) for name in frame.columns]
    columns = [
        pa.chunked_array([numpy_column(frame.iloc[:, i].to_numpy(), f"column {names[i]!r}")])
        if i in tensors
        else next(others)
        for i in range(len(names))
    ]
    return pa.Table.from_arrays(columns, names=names)


def _holds_arrays(values: Any) -> bool:
    """Whether a 1-D array holds Python objects that are arrays, by its
    first value that is not None."""
    import numpy as np

    if values.dtype != object:
        return False
    first = next((value for value in values if value is not None), None)
    return isinstance(first, np.ndarray)


def numpy_column(values: Any, name: str) -> Any:
    """A NumPy array as a pyarrow array: of more than one dimension, a
    column of its rows, each the bytes of ``row.tobytes()`` (as Ray's
    pyarrow tensors hash), or of strings, a list of its strings; a 1-D
    array of arrays (of one shape or not, and None for a null row), each
    the same; a 1-D array of strings as :func:`numpy_strings` makes it;
    any other 1-D array as :func:`_numpy_values` makes it. ``name`` is for
    messages."""
    import numpy as np
    import pyarrow as pa

    values = np.asarray(values)
    if values.ndim > 1:
        rows = np.ascontiguousarray(values)
        kind = _kind_of(rows, name)
        if kind != "number":
            per_row = int(np.prod(rows.shape[1:]))
            offsets = pa.array(np.arange(len(rows) + 1, dtype=np.int64) * per_row)
            return pa.LargeListArray.from_arrays(offsets, _strings_of([rows], kind))
        width = rows.itemsize * int(np.prod(rows.shape[1:]))
        if width == 0:
            # Rows of no bytes: pyarrow has no fixed-size list of size 0.
            return pa.LargeListArray.from_arrays(pa.array(np.zeros(len(rows) + 1, np.int64)), pa.array([], pa.uint8()))
        return pa.FixedSizeListArray.from_arrays(pa.array(_bytes_of(rows)), width)
    if _holds_arrays(values):
        return _tensor_rows(values, name)
    if values.dtype.kind in "US":
        return numpy_strings(values)
    return _numpy_values(values, name)


def _numpy_values(values: Any, name: str) -> Any:
    """A 1-D NumPy array of anything but strings as a pyarrow array:
    numbers as their values, whatever their byte order; complex numbers and
    structured records, which have no Arrow type, each as its bytes (as
    ``hash_records`` hashes them); any other as ``pyarrow.array`` makes
    it."""
    import pyarrow as pa

    dtype = values.dtype
    if dtype.kind in "fc" and dtype.itemsize > {"f": 8, "c": 16}[dtype.kind]:
        # x86's long double fills 10 bytes of its 16: the rest is not part
        # of the value and may hold anything.
        raise TypeError(
            f"cannot hash {name}: its dtype {dtype} has no Arrow type, and its bytes hold padding "
            "that is not part of its values; convert it first (e.g. .astype(numpy.float64))"
        )
    if dtype.kind in "iufcmM" and not dtype.isnative:
        # pyarrow takes this machine's byte order only; a number is its
        # value, whichever order NumPy stored it in.
        values = values.astype(dtype.newbyteorder("="))
    if values.dtype.kind in "cV":
        return numpy_column(values.reshape(len(values), 1), name)
    try:
        return pa.array(values)
    except (pa.ArrowInvalid, pa.ArrowTypeError) as error:
        if values.dtype != object:
            raise
        raise TypeError(
            f"cannot hash {name}: pyarrow finds no one Arrow type for its Python objects ({error}); "
            f"convert them to one type first{_FROM_RAY}"
        ) from error


def numpy_strings(values: Any) -> Any:
    """A 1-D NumPy array of dtype ``U`` or ``S`` as a pyarrow ``string`` or
    ``binary`` array of its values as NumPy gives them: without the NUL
    padding after each, with the NULs inside it."""
    import numpy as np
    import pyarrow as pa
    import pyarrow.compute as pc

    strings = values.dtype.kind == "U"
    kind = pa.string() if strings else pa.binary()
    if len(values) and values.itemsize and values.dtype.isnative:
        # pyarrow's own conversion, without a Python object per value, is
        # right unless it cut a value at a NUL inside it: then its length
        # falls short of NumPy's.
        converted = pa.array(values, kind)
        lengths = pc.utf8_length(converted) if strings else pc.binary_length(converted)
        if np.array_equal(np.char.str_len(values), lengths.to_numpy(zero_copy_only=False)):
            return converted
    return pa.array(values.tolist(), kind)


def _tensor_rows(values: Any, name: str) -> Any:
    """A 1-D array of arrays (any shapes, None for null) as a ``large_list``
    of bytes, row ``i`` the bytes of ``values[i].tobytes()``, or, where the
    arrays hold strings, of their strings: a tensor's identity is its
    values, whatever its shape, as a column of tensors of one shape hashes
    them (Ray makes one block's tensors of one shape and another's of
    varying shape from the same rows, and their digests must not depend on
    which)."""
    import numpy as np
    import pyarrow as pa

    rows = list(values)
    kinds = set()
    for i, row in enumerate(rows):
        if row is None:
            continue
        if not isinstance(row, np.ndarray):
            raise TypeError(
                f"cannot hash {name}: it holds arrays, but row {i} is a {type(row).__name__}; "
                "make every row an array (or None)"
            )
        kinds.add(_kind_of(row, name))
    present = [row for row in rows if row is not None]
    # Arrays of Python objects that hold no value (empty, or None alone)
    # go with strings or bytes, not with numbers.
    none = "none" in kinds
    kinds.discard("none")
    if (none and "number" in kinds) or len(kinds) > 1:
        raise TypeError(
            f"cannot hash {name}: its arrays mix strings, byte strings, numbers or arrays of Python "
            "objects, which have no one Arrow type; make them all one kind"
        )
    if none or kinds & {"U", "S"}:
        lengths = np.array([0 if row is None else row.size for row in rows], dtype=np.int64)
        data = _strings_of(present, kinds.pop() if kinds else "none")
    else:
        lengths = np.array([0 if row is None else row.nbytes for row in rows], dtype=np.int64)
        data = pa.array(np.concatenate([_bytes_of(row) for row in present] or [np.empty(0, np.uint8)]))
    offsets = np.zeros(len(rows) + 1, dtype=np.int64)
    np.cumsum(lengths, out=offsets[1:])
    mask = np.array([row is None for row in rows])
    return pa.LargeListArray.from_arrays(pa.array(offsets), data, mask=pa.array(mask) if mask.any() else None)


def _bytes_of(array: Any) -> Any:
    """The bytes of ``array.tobytes()`` as a 1-D ``uint8`` array (a view
    where the array is C-contiguous)."""
    import numpy as np

    return np.ascontiguousarray(array).reshape(-1).view(np.uint8)


def _kind_of(array: Any, name: str) -> str:
    """``"U"`` for an array of strings (dtype ``U``, or Python ``str`` and
    None, as a Ray numpy batch holds a list of strings), ``"S"`` for one of
    byte strings (dtype ``S``, or ``bytes`` and None), ``"none"`` for an
    array of Python objects without either (empty, or None alone),
    ``"number"`` for any other whose bytes are its values; ``TypeError``
    for other Python objects, whose bytes are pointers."""
    if array.dtype.kind in "US":
        return str(array.dtype.kind)
    if not array.dtype.hasobject:
        return "number"
    if array.dtype == object:
        found = {type(value) for value in array.reshape(-1).tolist()} - {type(None)}
        if not found:
            return "none"
        if found == {str}:
            return "U"
        if found == {bytes}:
            return "S"
    raise TypeError(
        f"cannot hash {name}: its rows are arrays of Python objects (dtype {array.dtype}) other than "
        f"strings, whose bytes are pointers; convert them to numbers, strings or bytes first{_FROM_RAY}"
    )


def _strings_of(arrays: Any, kind: str) -> Any:
    """The byte strings (``kind`` ``"S"``) or strings (``"U"``, or
    ``"none"``: no value to tell) of ``arrays``, one after another in C
    order, as one pyarrow array."""
    import numpy as np
    import pyarrow as pa

    flat = [array.reshape(-1) for array in arrays]
    values = flat[0] if len(flat) == 1 else np.concatenate(flat)
    if values.dtype != object:
        return numpy_strings(values)
    # pyarrow reads the objects in place, with no Python list between;
    # Python strings keep the NULs inside them.
    return pa.array(values, pa.binary() if kind == "S" else pa.string())
