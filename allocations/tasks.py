"""Celery's autodiscovery imports ``<app>.tasks``: the sub-domains' tasks are registered from here.

Each task keeps its explicit ``name=`` so messages already queued resolve wherever its module lives.
"""

from allocations.clusters import tasks as cluster_tasks  # noqa: F401
from allocations.mig_plans import tasks as mig_plan_tasks  # noqa: F401
