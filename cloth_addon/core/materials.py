"""Fabric presets: Settings fields of common materials (SI units, see settings.py).

Bending stiffness k_b (N m) follows from a fabric's bending length c, the overhang whose
weight bends a cantilever strip of it by about 41.5 degrees (Peirce's cantilever test):
k_b = w c^3 with w = density * g the weight per area. Typical bending lengths: silk
1-1.5 cm, cotton shirting 2-2.5 cm, denim 4-5 cm, garment leather 6-8 cm. k_b below is
w c^3 for the c given, rounded. The Blender layer offers these as its Presets menu.

    preset    density kg/m^2   c (cm)   k_b (N m)
    SILK      0.06             1.2      1e-6
    COTTON    0.15             2.4      2e-5
    RUBBER    0.5              2.2      5e-5
    DENIM     0.4              4.2      3e-4
    LEATHER   0.6              7.0      2e-3
Compression is the fraction of the stretch and shear stiffness a spring keeps when squeezed
along itself: a woven fabric's yarns bend and slide under in-plane compression, so it buckles at
once (silk most readily), leather is a sheet of matted fibres that resists more, rubber resists
squeezing as it resists stretching.
Air drag depends on the air and the cloth's shape, hardly on the fabric: one value for all
(settings.AIR_DRAG), so the heavier fabrics fall faster, as they should.
Damping (a fraction of the velocity per frame) stands for what the quadratic drag hardly gives
at walking speeds: the air's and the weave's friction that stops a hanging flap swinging. 5% a
frame lets a sheet dropped on a ball settle within 4 s (at 1% its hem still swung 15 mm a frame
after 5 s), and costs a falling sheet little (its speed from damping alone would level off at
8 m/s). Silk and rubber keep 3%: light and springy, they move longer.
"""

from .settings import AIR_DRAG

FABRICS = {
    "COTTON": dict(density=0.15, stretch_stiffness=500.0, shear_stiffness=50.0, bend_stiffness=2e-5,
                   compression=0.3, damping=0.05, air_drag=AIR_DRAG),
    "SILK": dict(density=0.06, stretch_stiffness=200.0, shear_stiffness=10.0, bend_stiffness=1e-6,
                 compression=0.1, damping=0.03, air_drag=AIR_DRAG),
    "DENIM": dict(density=0.4, stretch_stiffness=2000.0, shear_stiffness=200.0, bend_stiffness=3e-4,
                  compression=0.3, damping=0.05, air_drag=AIR_DRAG),
    "LEATHER": dict(density=0.6, stretch_stiffness=4000.0, shear_stiffness=800.0, bend_stiffness=2e-3,
                    compression=0.6, damping=0.05, air_drag=AIR_DRAG),
    "RUBBER": dict(density=0.5, stretch_stiffness=100.0, shear_stiffness=50.0, bend_stiffness=5e-5,
                   compression=1.0, damping=0.03, air_drag=AIR_DRAG),
}
