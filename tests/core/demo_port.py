"""The JavaScript cloth demo (docs/PHYSICS.md §3), ported literally: the reference for our Verlet."""

import itertools


def demo_constraints(cols: int, rows: int) -> list[tuple[int, int]]:
    """The constraints of the demo's Cloth constructor, in its order (particle r * cols + c)."""
    at = lambda r, c: r * cols + c  # noqa: E731
    constraints = []
    for r, c in itertools.product(range(rows), range(cols)):
        if c < cols - 1:
            constraints.append((at(r, c), at(r, c + 1)))  # structural, horizontal
        if r < rows - 1:
            constraints.append((at(r, c), at(r + 1, c)))  # structural, vertical
        if c < cols - 1 and r < rows - 1:
            constraints += [(at(r, c), at(r + 1, c + 1)), (at(r, c + 1), at(r + 1, c))]  # shear
        if c < cols - 2:
            constraints.append((at(r, c), at(r, c + 2)))  # bending, horizontal
        if r < rows - 2:
            constraints.append((at(r, c), at(r + 2, c)))  # bending, vertical
    return constraints
