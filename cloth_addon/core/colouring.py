"""Edge colouring: split springs into groups that share no particle.

Within one colour every particle is touched at most once, so a whole colour can be
projected at once with fancy indexing and the result equals a sequential Gauss-Seidel
pass over the springs in colour order.
"""

import numpy as np


def colour_springs(pairs: np.ndarray, n: int) -> np.ndarray:
    """(s,) int32 colour of every spring; springs of one colour share no particle.

    Greedy maximal matchings, vectorised: in each round, a spring joins the current colour
    when it is the lowest-numbered candidate at both of its particles; repeat until no
    candidate is left, then start the next colour. Uses about 2x the maximum degree colours.
    """
    s = len(pairs)
    colour = np.full(s, -1, dtype=np.int32)
    a, b = pairs[:, 0], pairs[:, 1]
    ids = np.arange(s)
    current = 0
    while np.any(colour < 0):
        used = np.zeros(n, dtype=bool)
        while True:
            cand = ids[(colour < 0) & ~used[a] & ~used[b]]
            if not len(cand):
                break
            lowest = np.full(n, s, dtype=np.int64)
            np.minimum.at(lowest, a[cand], cand)
            np.minimum.at(lowest, b[cand], cand)
            chosen = cand[(lowest[a[cand]] == cand) & (lowest[b[cand]] == cand)]
            colour[chosen] = current
            used[a[chosen]] = True
            used[b[chosen]] = True
        current += 1
    return colour
