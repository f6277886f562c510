"""Celery's autodiscovery imports ``<app>.tasks``: the sub-domains' tasks are registered from here.

Each task keeps its explicit ``name=`` so messages already queued resolve wherever its module lives.
"""

from celery import shared_task

from allocations.clusters import tasks as cluster_tasks  # noqa: F401
from allocations.mig_plans import tasks as mig_plan_tasks  # noqa: F401
from allocations.reservations import tasks as reservation_tasks  # noqa: F401


@shared_task(name="allocations.purge_idempotency_keys")
def purge_idempotency_keys() -> int:
    """Forget the Idempotency-Keys past their lifetime (``IDEMPOTENCY_KEY_TTL_HOURS``)."""
    from allocations.requests.idempotency import purge_expired_idempotency_keys

    return purge_expired_idempotency_keys()
