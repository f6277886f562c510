"""The audit trail: who changed what, from where, with the values before and after (DESIGN.md, "Audit").

Below ``allocations`` in the layers (portal > billing > allocations > audit > gpucore), so every app's services record
their writes with ``audit_record`` inside their own transaction.
"""
