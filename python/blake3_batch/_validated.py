"""pyarrow's own cheap validation of the pyarrow data about to cross the C
data interface.

arrow-rs imports each buffer at the length that the array's type and length
imply, without checking it, so an array whose buffer is shorter would be
read past its end: the digests of its last rows would come from whatever
memory follows. pyarrow can make such arrays itself (pyarrow 26 casts a
list view to a list with its offsets buffer one offset short). Here they
raise pyarrow's ``ArrowInvalid``, a ``ValueError`` that names the buffer,
instead. ``validate()`` without ``full`` reads no values, only lengths and
a few offsets, so it costs microseconds a chunk.
"""

from __future__ import annotations

from typing import Any

import pyarrow as pa


def validated(column: Any) -> Any:
    """``column`` itself, once pyarrow has found an array, chunked array,
    record batch or table sound; anything else as it is."""
    if isinstance(column, (pa.Array, pa.ChunkedArray, pa.RecordBatch, pa.Table)):
        column.validate()
    return column
