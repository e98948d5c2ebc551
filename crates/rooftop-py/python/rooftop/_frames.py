"""Tables of a report's JSON as pandas DataFrames (pyarrow tables without pandas).

Every table is a list of JSON objects in the report the CLI writes with
``--format json``; one object is one row. Nested objects become columns named with dots
(``kernel_time_us.sum``, as :func:`pandas.json_normalize` names them); lists stay as
Python lists in one cell. A value the report has as ``null`` (not measured, not
computable) stays missing: ``NaN`` in a numeric pandas column, ``None`` otherwise; it is
never turned into 0.
"""

from __future__ import annotations

import json
from typing import Any, Dict, List, Optional, Sequence

_PANDAS: Optional[Any] = None
_ARROW: Optional[Any] = None


def flatten(row: Dict[str, Any], prefix: str = "") -> Dict[str, Any]:
    """One JSON object as one flat row: nested objects' keys joined with dots."""
    out: Dict[str, Any] = {}
    for key, value in row.items():
        name = f"{prefix}{key}"
        if isinstance(value, dict) and value:
            out.update(flatten(value, name + "."))
        else:
            out[name] = value
    return out


def columns_of(rows: Sequence[Dict[str, Any]]) -> List[str]:
    """The union of the rows' keys, in first-seen order."""
    seen: Dict[str, None] = {}
    for r in rows:
        for k in r:
            seen.setdefault(k, None)
    return list(seen)


def _pandas() -> Optional[Any]:
    global _PANDAS
    if _PANDAS is None:
        try:
            import pandas

            _PANDAS = pandas
        except ImportError:
            _PANDAS = False
    return _PANDAS or None


def _arrow() -> Optional[Any]:
    global _ARROW
    if _ARROW is None:
        try:
            import pyarrow

            _ARROW = pyarrow
        except ImportError:
            _ARROW = False
    return _ARROW or None


def frame(rows: Optional[Sequence[Dict[str, Any]]], columns: Optional[List[str]] = None) -> Any:
    """A pandas DataFrame of ``rows`` (JSON objects), else a pyarrow Table.

    ``columns`` names the columns of an empty table (a report with no such rows).
    """
    flat = [flatten(r) for r in rows or []]
    cols = columns_of(flat) or list(columns or [])
    # An object that is null in some rows has its fields as columns from the others;
    # its own name is not a column too.
    cols = [
        c
        for c in cols
        if not (
            any(o.startswith(c + ".") for o in cols) and all(r.get(c) is None for r in flat)
        )
    ]
    pd = _pandas()
    if pd is not None:
        return pd.DataFrame.from_records(flat, columns=cols)
    pa = _arrow()
    if pa is not None:
        return _arrow_table(pa, flat, cols)
    raise ImportError(
        "rooftop's tables are pandas DataFrames or pyarrow Tables: install one "
        "(pip install pandas); the report itself is there without them (.to_dict())"
    )


def _arrow_table(pa: Any, flat: List[Dict[str, Any]], cols: List[str]) -> Any:
    arrays = []
    for c in cols:
        values = [r.get(c) for r in flat]
        try:
            arrays.append(pa.array(values))
        except (pa.ArrowInvalid, pa.ArrowTypeError, TypeError):
            # A column whose cells mix types (a list here, a number there) has no Arrow
            # type: its cells are kept as their JSON text.
            arrays.append(pa.array([None if v is None else json.dumps(v) for v in values]))
    return pa.table(arrays, names=cols) if cols else pa.table({})
