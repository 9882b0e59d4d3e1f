"""Self-contact: the cloth's layers (and other cloth objects) kept a gap apart, never crossing."""

from .contact import PASSES, SelfContact

__all__ = ["PASSES", "SelfContact"]
