"""MIG plans: per-GPU layouts planned from demand (``gpucore.mig_planner``), previewed, and applied to a pool's nodes.

``selectors`` reads (previews, a pool's demand and current GPUs), ``services`` writes (plans, approval, application
steps), ``tasks`` holds the Celery task that reconfigures nodes through the GPU Operator's MIG manager.
"""
