import numpy as np
import pytest


def make_grid(nx: int, ny: int, size: float = 1.0, plane: str = "xz"):
    """An nx x ny vertex grid of quads, size metres square, row 0 on top.

    plane "xz": hanging (row r at z = -r * spacing); "xy": lying flat at z = 0.
    Returns vertices (n, 3) float64, faces (m, 4) int64, index (ny, nx) int64.
    """
    xs, ys = np.meshgrid(np.linspace(0.0, size, nx), np.linspace(0.0, size, ny))
    zeros = np.zeros(nx * ny)
    if plane == "xz":
        vertices = np.stack([xs.ravel(), zeros, -ys.ravel()], axis=1)
    else:
        vertices = np.stack([xs.ravel(), ys.ravel(), zeros], axis=1)
    index = np.arange(nx * ny).reshape(ny, nx)
    faces = np.stack([index[:-1, :-1], index[:-1, 1:], index[1:, 1:], index[1:, :-1]], axis=-1).reshape(-1, 4)
    return vertices, faces, index


@pytest.fixture
def grid():
    return make_grid
