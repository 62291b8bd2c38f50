"""pandas objects as the pyarrow data the hashing reads.

A DataFrame's rows are its columns' values, as ``DataFrame.duplicated``
sees them: pandas' own Arrow export (``__arrow_c_stream__``, pandas 2.2 and
later) adds the index as a column wherever it is not a plain range (after
``sort_values``, ``set_index`` or a filter by labels), and hashing rows
with it would give every row its own digest. So the index is left out here
(``df.reset_index()`` puts it among the columns). A Series is converted as
pandas 3 exports it (``pyarrow.array``, nulls and NaN as nulls), so that
pandas 2, whose Series has no Arrow export, gives the same digests.
"""

from __future__ import annotations

from typing import Any


def as_arrow(data: Any) -> Any:
    """``data`` as pyarrow data if it is a pandas DataFrame or Series, else
    ``data`` itself."""
    import pandas as pd

    if isinstance(data, pd.DataFrame):
        import pyarrow as pa

        return pa.Table.from_pandas(data, preserve_index=False)
    if isinstance(data, pd.Series):
        import pyarrow as pa

        array = pa.array(data)
        return array if isinstance(array, pa.ChunkedArray) else pa.chunked_array([array], array.type)
    return data
