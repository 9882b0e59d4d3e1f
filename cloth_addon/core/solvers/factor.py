"""Sparse symmetric positive definite factorisation: cholespy if present, else SuperLU.

cholespy (a small CHOLMOD-based wheel for Linux, Windows and macOS; the extension bundles
it) solves the three right-hand sides faster than scipy's SuperLU on cloth systems, and the
solve runs every iteration while the factorisation runs once (`python build.py bench` prints
both). SuperLU in symmetric mode
(diagonal pivots, minimum degree on A + A^T) is the fallback that always works.
"""

import numpy as np
import scipy.sparse as sp
from scipy.sparse.linalg import splu

try:
    from cholespy import CholeskySolverD, MatrixType
except ImportError:  # pragma: no cover - depends on the installation
    CholeskySolverD = None

BACKENDS = ("cholespy", "superlu") if CholeskySolverD is not None else ("superlu",)


def factorize(matrix: sp.spmatrix, backend: str | None = None):
    """Factor an SPD (f, f) matrix; returns solve(rhs (f, k) float64) -> (f, k) float64.

    backend: "cholespy", "superlu" or None for the fastest available.
    """
    backend = backend or BACKENDS[0]
    if backend not in BACKENDS:
        raise ValueError(f"factorisation backend {backend!r} is not available; have {BACKENDS}")
    size = matrix.shape[0]
    if size == 0:
        return lambda rhs: np.zeros_like(rhs)
    if backend == "cholespy":
        coo = sp.coo_matrix(matrix)
        solver = CholeskySolverD(size, coo.row.astype(np.int32), coo.col.astype(np.int32),
                                 coo.data.astype(np.float64), MatrixType.COO)

        def solve(rhs):
            if rhs.ndim == 2 and not rhs.flags.c_contiguous:
                # a (f, 3) view of coordinate rows (the fast solver's right-hand side) is copied
                # to row order column by column, several times faster than np.ascontiguousarray
                rows = np.empty(rhs.shape)
                for column in range(rhs.shape[1]):
                    rows[:, column] = rhs[:, column]
                rhs = rows
            rhs = np.ascontiguousarray(rhs, dtype=np.float64)
            out = np.empty_like(rhs)
            solver.solve(rhs, out)
            return out

        return solve
    lu = splu(sp.csc_matrix(matrix), permc_spec="MMD_AT_PLUS_A", diag_pivot_thresh=0.0,
              options={"SymmetricMode": True})
    return lu.solve
