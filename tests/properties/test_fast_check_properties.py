"""The per-round fast checks never accept what the full checks refuse (issue 23, item 1).

``is_checked_contexts``/``is_checked_vector`` let ``select``/``update`` skip
``check_contexts``/``check_vector`` when the input already is what those return. The
property: whenever a fast check says yes, the full check accepts the very same object and
returns it unchanged; so skipping the full check can never let a bad input through.
"""

from __future__ import annotations

import numpy as np
from hypothesis import given
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp

from glmbandits._validation import (MAX_MAGNITUDE, check_contexts, check_vector,
                                    is_checked_contexts, is_checked_vector)

# entries from every regime the checks distinguish: ordinary, huge but legal, beyond the
# bound, infinite and NaN
ENTRIES = st.one_of(
    st.floats(-2.0, 2.0),
    st.sampled_from([MAX_MAGNITUDE, -MAX_MAGNITUDE, 1e49, 1e51, -1e300, np.inf, -np.inf,
                     np.nan, 0.0, 5e-324]),
)
DTYPES = st.sampled_from([np.float64, np.float32, np.int64, np.bool_, np.complex128])


def _cast(array: np.ndarray, dtype: type) -> np.ndarray:
    with np.errstate(all="ignore"):  # 1e300 as float32 or int64: the checks' business
        cast: np.ndarray = array.astype(dtype)
    return cast


@given(st.data(), DTYPES, st.integers(0, 4), st.integers(1, 4), st.booleans())
def test_a_matrix_the_fast_check_accepts_is_returned_unchanged_by_the_full_check(
        data, dtype, k, d, transpose):
    shape = (d, k) if transpose else (k, d)
    X = _cast(data.draw(hnp.arrays(np.float64, shape, elements=ENTRIES)), dtype)
    X = X.T if transpose else X  # also non-contiguous views
    for n_features in (d, d + 1):
        if is_checked_contexts(X, n_features):
            assert check_contexts(X, n_features, "owner") is X
            assert np.all(np.abs(X) <= MAX_MAGNITUDE)  # finite and within the bound
        elif X.dtype == np.float64 and X.shape[0] and X.shape[1] == n_features and np.all(
                np.abs(X) <= 1.0):
            raise AssertionError("the fast check refused ordinary contexts")


@given(st.data(), DTYPES, st.integers(0, 4), st.integers(1, 4))
def test_a_vector_the_fast_check_accepts_is_returned_unchanged_by_the_full_check(
        data, dtype, size, expected):
    x = _cast(data.draw(hnp.arrays(np.float64, (size,), elements=ENTRIES)), dtype)
    if is_checked_vector(x, expected):
        assert check_vector(x, expected, "owner", "x") is x
        assert np.all(np.abs(x) <= MAX_MAGNITUDE)
    for wrong in (x.reshape(1, -1), list(x)):
        assert not is_checked_vector(wrong, expected)
