"""The audit trail: who changed what, from where, with the values before and after (docs/security.md, "Audit trail").

Below ``allocations`` in the layers (portal > billing > allocations > audit > gpucore), so every app's services record
their writes with ``audit_record`` inside their own transaction.
"""
