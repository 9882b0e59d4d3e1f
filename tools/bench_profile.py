"""`python build.py bench --profile SCENE [--frames N]`: where a frame of a contact scene goes, in the
core (no Blender), and how many candidate pairs self-contact keeps against the pairs in contact.

Scenes (the bench's, built in the core as the add-on builds them: Blender's default Collision is
2 cm outer thickness and friction 0.5; spheres as SphereCollider, other bodies as MeshCollider):
    pile, folds   tools/bench_pile.py's
    twist         30 x 30 sheet (1 m) hanging, left and right columns pinned, the right one turned
                  two turns about the sheet's axis over 96 frames, self-collision on, 24 fps
    tablecloth    60 x 60 (1.6 m) onto a 1 x 1 x 0.75 m box on a floor
    drape         50 x 50 (1.6 m) onto a 0.45 m ball on a floor
    suzanne       50 x 50 (1.4 m) onto Suzanne lying face-up on a floor (her mesh from bpy)
    suzanne2      the same, Suzanne subdivided twice (Catmull-Clark, as a Subdivision modifier)

Each phase's time is exclusive (a phase called inside another counts only in the inner one):
    solve        the solver's own iterations
    broad        candidate search and upkeep (self-contact's kept candidates, a mesh collider's
                 triangles near each particle)
    narrow       exact gaps and closest points of the candidates
    continuous   the continuous check (self-contact's times of impact and impact zones, a mesh
                 collider's crossings)
    response     pushes, friction, carried contact forces
    other        forces, prediction, everything else of the frame
Prints ms/frame (median over the frames after the first 3) per phase; with self-collision, the
candidate pairs against the pairs within the gap at each frame's end (the cloth's own rest
neighbourhood left out of both).
"""

import argparse
import sys
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parent.parent
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

from cloth_addon.core import MeshCollider, PlaneCollider, Settings, Simulation, SphereCollider  # noqa: E402
from cloth_addon.core.contact import analytic, stage  # noqa: E402
from cloth_addon.core.contact.mesh import broad_phase as mesh_broad  # noqa: E402
from cloth_addon.core.contact.mesh import narrow_phase as mesh_narrow  # noqa: E402
from cloth_addon.core.contact.mesh import response as mesh_response  # noqa: E402
from cloth_addon.core.contact.mesh import sharp_features  # noqa: E402
from cloth_addon.core.contact.self_contact import broad_phase, contact, narrow_phase, response  # noqa: E402
from tools.scenes import grid  # noqa: E402

SCENES = ("pile", "folds", "twist", "tablecloth", "drape", "suzanne", "suzanne2")
PHASES = ("solve", "broad", "narrow", "continuous", "response", "other")
FLOOR = dict(thickness=0.02, friction=0.5)  # Blender's default Collision, as the add-on maps it


class Phases:
    """Exclusive seconds per phase (a phase called inside another counts only in the inner one),
    from wrapping functions and methods (observers from outside: the solver keeps no clocks)."""

    def __init__(self, phases=PHASES):
        self.seconds = dict.fromkeys(phases, 0.0)
        self._stack = []  # [phase, start, seconds spent in nested phases]

    def wrap(self, owner, name, phase):
        original = getattr(owner, name)

        def timed(*args, **kwargs):
            self._stack.append([phase, time.perf_counter(), 0.0])
            try:
                return original(*args, **kwargs)
            finally:
                _, start, nested = self._stack.pop()
                spent = time.perf_counter() - start
                self.seconds[phase] += spent - nested
                if self._stack:
                    self._stack[-1][2] += spent

        setattr(owner, name, timed)

    def wrap_all(self, sim):
        self.wrap(sim.solver, "advance", "solve")
        for owner, names, phase in (
                (broad_phase.BroadPhase, ("cover",), "broad"),
                (mesh_broad.MeshBroadPhase, ("remember_near", "select"), "broad"),
                (broad_phase.BroadPhase, ("shortlist",), "narrow"),
                (narrow_phase, ("vf_contacts", "ee_contacts"), "narrow"),
                (mesh_narrow.NarrowPhase, ("nearest", "plane_coordinates"), "narrow"),
                (contact.SelfContact, ("untangle",), "continuous"),
                (mesh_response.VertexResponse, ("crossings",), "continuous"),
                (response, ("push", "scatter"), "response"),
                (mesh_response.VertexResponse, ("proximity",), "response"),
                (analytic.PlaneCollider, ("resolve",), "response"),
                (analytic.SphereCollider, ("resolve",), "response"),
                (sharp_features.SharpFeatures, ("resolve",), "response"),
                (stage.ContactStage, ("_friction", "_carry"), "response")):
            for name in names:
                self.wrap(owner, name, phase)


def _sheet(n, size, height, colliders, **settings):
    vertices, faces, _ = grid(n, n, size, "xy")
    vertices = vertices - (0.5 * size, 0.5 * size, 0.0) + (0.0, 0.0, height)
    return Simulation(vertices, faces, Settings(**settings), colliders=colliders), lambda: None


def _box(size, centre):
    corners = np.array([[x, y, z] for x in (-0.5, 0.5) for y in (-0.5, 0.5) for z in (-0.5, 0.5)])
    quads = [(0, 1, 3, 2), (4, 6, 7, 5), (0, 4, 5, 1), (2, 3, 7, 6), (0, 2, 6, 4), (1, 5, 7, 3)]
    triangles = [t for a, b, c, d in quads for t in ((a, b, c), (a, c, d))]
    return MeshCollider(corners * size + centre, np.array(triangles), **FLOOR)


def suzanne(levels: int):
    """(vertices, triangles) of Blender's Suzanne lying face-up, 1.4 m wide, resting on z = 0,
    subdivided `levels` times (bpy, as a Subdivision Surface modifier)."""
    import bpy

    bpy.ops.wm.read_factory_settings(use_empty=True)
    bpy.ops.mesh.primitive_monkey_add(size=2.0, rotation=(-np.pi / 2, 0.0, 0.0))
    monkey = bpy.context.active_object
    if levels:
        modifier = monkey.modifiers.new("Subdivision", "SUBSURF")
        modifier.levels = levels
    mesh = monkey.evaluated_get(bpy.context.evaluated_depsgraph_get()).to_mesh()
    mesh.calc_loop_triangles()
    vertices = np.array([v.co for v in mesh.vertices]) @ np.array(monkey.matrix_world)[:3, :3].T
    triangles = np.array([t.vertices for t in mesh.loop_triangles], dtype=np.int64)
    vertices *= 1.4 / np.ptp(vertices[:, 0])
    vertices -= (vertices[:, 0].mean(), vertices[:, 1].mean(), vertices[:, 2].min())
    return vertices, triangles


def twist():
    vertices, faces, index = grid(30, 30, 1.0, "xz")
    vertices = vertices - (0.5, 0.0, -1.0)
    right = index[:, -1]
    sim = Simulation(vertices, faces, Settings(self_collision=True),
                     pinned=np.concatenate([index[:, 0], right]))

    def turn():
        angle = 4.0 * np.pi * min(sim.frame + 1, 96) / 96
        turned = vertices.copy()
        z = vertices[right, 2] - 0.5
        turned[right, 1] = -np.sin(angle) * z
        turned[right, 2] = 0.5 + np.cos(angle) * z
        sim.move_pins(turned)

    return sim, turn


def scene(name):
    """(simulation, a callable run before each frame, default frame count)."""
    import bench_pile

    if name == "pile":
        return bench_pile.pile(), lambda: None, 90
    if name == "folds":
        return (*bench_pile.folds(), 8)
    if name == "twist":
        return (*twist(), 120)
    floor = PlaneCollider(**FLOOR)
    if name == "tablecloth":
        return (*_sheet(60, 1.6, 1.05, [floor, _box((1.0, 1.0, 0.75), (0.0, 0.0, 0.375))]), 100)
    if name == "drape":
        return (*_sheet(50, 1.6, 1.2, [floor, SphereCollider((0.0, 0.0, 0.45), 0.45, **FLOOR)]), 100)
    if name in ("suzanne", "suzanne2"):
        body = MeshCollider(*suzanne(0 if name == "suzanne" else 2), **FLOOR)
        top = body.vertices[:, 2].max()
        return (*_sheet(50, 1.4, top + 0.3, [floor, body]), 100)
    raise SystemExit(f"unknown scene {name!r}")


def pairs_in_contact(sim):
    """(vertex-triangle, edge-edge) pairs closer than the gap at the current positions, the
    cloth's rest neighbourhood left out; (candidates vf, ee) that proximity may push."""
    self_contact = sim.contact.self_contact
    x = np.array(sim.positions)
    p, t, vf_gap, a, b, ee_gap = self_contact.search.near(x, np.zeros(len(x)))
    d = self_contact.distance
    near = self_contact.neighbourhood
    vf = int(np.sum((vf_gap < d) & near.vf_pushable(p, t)))
    ee = int(np.sum((ee_gap < d) & near.ee_pushable(a, b)))
    kept = self_contact.candidates
    listed = (0, 0) if kept is None else (int(kept.vf_pushable.sum()), int(kept.ee_pushable.sum()))
    return (vf, ee), listed


def run(argv) -> int:
    parser = argparse.ArgumentParser(prog="bench --profile")
    parser.add_argument("scene", choices=SCENES)
    parser.add_argument("--frames", type=int, default=None)
    args = parser.parse_args(argv)
    sys.path.insert(0, str(ROOT / "tools"))
    sim, before, frames = scene(args.scene)
    frames = args.frames or frames
    phases = Phases()
    phases.wrap_all(sim)
    rows, counts = [], []
    for _ in range(frames):
        before()
        for phase in PHASES:
            phases.seconds[phase] = 0.0
        start = time.perf_counter()
        sim.step(1)
        total = time.perf_counter() - start
        spent = dict(phases.seconds)
        spent["other"] = total - sum(spent.values())
        rows.append([1e3 * spent[p] for p in PHASES] + [1e3 * total])
        if sim.settings.self_collision:
            counts.append(pairs_in_contact(sim))
    table = np.array(rows[3:] if len(rows) > 3 else rows)
    print(f"{args.scene}: {frames} frames, ms/frame (median over frames {min(4, frames)}-{frames}):")
    print("  " + "".join(f"{p:>12}" for p in (*PHASES, "frame")))
    print("  " + "".join(f"{v:>12.1f}" for v in np.median(table, axis=0)))
    print("  mean " + "".join(f"{v:>12.1f}" for v in table.mean(axis=0)))
    if counts:
        contact_pairs = np.array([c[0] for c in counts])
        listed = np.array([c[1] for c in counts])
        total_contact, total_listed = contact_pairs.sum(axis=1), listed.sum(axis=1)
        ratio = total_listed / np.maximum(total_contact, 1)
        print(f"  self-contact pairs within the gap at the frames' ends (vf + ee), median "
              f"{np.median(contact_pairs[:, 0]):.0f} + {np.median(contact_pairs[:, 1]):.0f}, max "
              f"{total_contact.max()}; candidates proximity may push, median {np.median(listed[:, 0]):.0f} + "
              f"{np.median(listed[:, 1]):.0f}, max {total_listed.max()}; candidates per pair in contact: "
              f"median {np.median(ratio):.1f}, last {ratio[-1]:.1f}")
        print(f"  self-contact stats at the end: {sim.contact.self_contact.stats}")
    return 0


if __name__ == "__main__":
    sys.exit(run(sys.argv[1:]))
