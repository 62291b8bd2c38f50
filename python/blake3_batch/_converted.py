"""pandas objects and NumPy arrays as the pyarrow data the hashing reads.

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
refused, as ``hash_records`` refuses it); an
array of more dimensions is a column of its rows, each hashed as its
values' bytes (``row.tobytes()``, as ``hash_records`` hashes it), and so
is a 1-D array of arrays of one shape (a tensor column in a pandas batch).
"""

from __future__ import annotations

from typing import Any


def as_arrow(data: Any) -> Any:
    """``data`` as pyarrow data if it is a pandas DataFrame, Series or
    Index or a NumPy array, else ``data`` itself."""
    module = type(data).__module__
    if module.startswith("pandas"):
        import pandas as pd
        import pyarrow as pa

        if isinstance(data, pd.DataFrame):
            return _frame(data)
        if isinstance(data, (pd.Series, pd.Index)):
            array = pa.array(data)
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


def _frame(frame: Any) -> Any:
    """A DataFrame's columns as a pyarrow table, its tensor columns (rows
    of arrays, which pyarrow does not convert) as :func:`numpy_column`
    makes them."""
    import pyarrow as pa

    # Only object columns can hold arrays: others are not turned into
    # NumPy (a pandas 3 string column would become Python objects).
    tensors = [
        i for i in range(frame.shape[1]) if frame.dtypes.iloc[i] == object and _holds_arrays(frame.iloc[:, i].to_numpy())
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
    fixed-size list of each row's values, whose bytes are the row's
    ``tobytes()`` (as Ray's pyarrow tensors are); a 1-D array of arrays of
    one shape, those stacked; any other 1-D array as ``pyarrow.array``
    makes it. ``name`` is for messages."""
    import numpy as np
    import pyarrow as pa

    values = np.asarray(values)
    if values.ndim > 1:
        rows = np.ascontiguousarray(values)
        width = int(np.prod(rows.shape[1:]))
        return pa.FixedSizeListArray.from_arrays(pa.array(rows.reshape(-1)), width)
    if _holds_arrays(values):
        if len({getattr(value, "shape", None) for value in values}) != 1:
            raise TypeError(
                f"cannot hash {name}: its rows are arrays of varying shape (or missing); say "
                "which bytes make a row's identity (e.g. each row's tobytes()) and hash those"
            )
        return numpy_column(np.stack(list(values)), name)
    return pa.array(values)
