"""The dispatch-free sparse product equals scipy's."""

import numpy as np
import scipy.sparse as sp

from cloth_addon.core import sparse_ops
from cloth_addon.core.sparse_ops import MatVec


def test_matvec_adds_into_its_output_like_scipy():
    rng = np.random.default_rng(3)
    matrix = sp.random(40, 25, density=0.2, random_state=4, format="coo")
    x = rng.normal(size=25)
    out = rng.normal(size=40)
    expected = out + matrix @ x
    op = MatVec(matrix)
    assert op.add_into(x, out) is out
    np.testing.assert_allclose(out, expected, rtol=1e-14)
    np.testing.assert_allclose(op(x), matrix @ x, rtol=1e-14)


def test_fallback_without_the_private_kernel(monkeypatch):
    monkeypatch.setattr(sparse_ops, "_csr_matvec", None)
    matrix = sp.random(10, 6, density=0.5, random_state=1)
    x = np.arange(6.0)
    np.testing.assert_allclose(MatVec(matrix)(x), matrix @ x)
