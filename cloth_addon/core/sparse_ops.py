"""out += A @ x for a fixed CSR matrix, without scipy's per-call Python dispatch.

The solvers do a few hundred small sparse products per frame (Verlet: two per colour per
iteration). scipy's `A @ x` decides in Python what x is before its C++ kernel runs, and
on small products that dispatch costs more than the product. `csr_matvec` is that kernel; it
adds into its output, which is exactly what a scatter of corrections needs. It lives in a
private scipy module, so the public operator is the fallback should it ever move.
"""

import numpy as np
import scipy.sparse as sp

try:
    from scipy.sparse._sparsetools import csr_matvec as _csr_matvec
except ImportError:  # pragma: no cover - depends on the scipy version
    _csr_matvec = None


class MatVec:
    """A fixed sparse matrix A (rows, cols) applied to flat float64 vectors."""

    def __init__(self, matrix: sp.spmatrix):
        csr = sp.csr_matrix(matrix, dtype=np.float64)
        self.matrix = csr
        self.rows, self.cols = csr.shape
        self.indptr, self.indices, self.data = csr.indptr, csr.indices, csr.data

    def add_into(self, x: np.ndarray, out: np.ndarray) -> np.ndarray:
        """out += A @ x, in place; x (cols,) and out (rows,) contiguous float64. Returns out."""
        if _csr_matvec is None:
            out += self.matrix @ x
        else:
            _csr_matvec(self.rows, self.cols, self.indptr, self.indices, self.data, x, out)
        return out

    def __call__(self, x: np.ndarray) -> np.ndarray:
        """A @ x as a new (rows,) array."""
        return self.add_into(x, np.zeros(self.rows))
