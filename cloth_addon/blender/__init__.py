"""The Blender layer: the only code in the package that imports bpy."""
