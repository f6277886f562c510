"""The token reads' compiled lookup: it lives in ``allocations.compiled_lookup`` so that the apps below ``portal``
may use it too (the approval queue's pending extensions, issue #15)."""

from allocations.compiled_lookup import CompiledLookup

__all__ = ["CompiledLookup"]
