"""The Celery application: configured from Django settings (``CELERY_*``) with the periodic schedule below."""

import os

from celery import Celery
from celery.schedules import crontab

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "portal.settings.base")

app = Celery("portal")
app.config_from_object("django.conf:settings", namespace="CELERY")
app.autodiscover_tasks()

# Periodic work run by `celery -A portal beat`. Tasks are registered by the apps under these names.
app.conf.beat_schedule = {
    "reconcile-requests": {"task": "allocations.reconcile_requests", "schedule": 60.0},
    # A MIG plan rollout whose worker died is picked up again within about three minutes.
    "resume-mig-plans": {"task": "allocations.resume_mig_plans", "schedule": 60.0},
    "expire-requests": {"task": "allocations.expire_requests", "schedule": 300.0},
    "sync-inventory": {"task": "allocations.sync_inventory", "schedule": 600.0},
    # PriorityClasses, GPU Operator ConfigMaps and Kueue queues follow pool and quota edits within five minutes.
    "apply-cluster-objects": {"task": "allocations.apply_cluster_objects", "schedule": 300.0},
    # A reservation window's quota reaches (and leaves) a Kueue cluster's queues within a minute of its edges.
    "reconcile-reservation-quotas": {"task": "allocations.reconcile_reservation_quotas", "schedule": 60.0},
    "pull-utilization": {"task": "billing.pull_utilization_all", "schedule": 300.0},
    # The audit trail keeps AUDIT_RETENTION_DAYS; older events are deleted once a day.
    "prune-audit-events": {"task": "audit.prune_events", "schedule": crontab(minute=15, hour=3)},
    # Next months' partitions of the hourly tables created ahead; months past HOURLY_RETENTION_MONTHS dropped.
    "maintain-hourly-partitions": {
        "task": "billing.maintain_hourly_partitions",
        "schedule": crontab(minute=5, hour=3),
    },
    # Expired sessions (Django's clearsessions), once a day.
    "clear-expired-sessions": {"task": "portal.clear_expired_sessions", "schedule": crontab(minute=45, hour=3)},
    # Idempotency-Keys past IDEMPOTENCY_KEY_TTL_HOURS, once a day.
    "purge-idempotency-keys": {"task": "allocations.purge_idempotency_keys", "schedule": crontab(minute=50, hour=3)},
    # Money budgets: a threshold crossed notifies within the hour, once a month (billing.costs.budget_alerts).
    "check-team-budgets": {"task": "billing.check_team_budgets", "schedule": crontab(minute=20)},
    # Each day over priced once and stored, so the cost dashboards read a month not closed yet as sums.
    "price-past-days": {"task": "billing.price_past_days", "schedule": crontab(minute=40)},
    # The capacity forecast stored, so the cost dashboards read it instead of a week of every request's spans.
    "store-capacity-forecast": {"task": "billing.store_capacity_forecast", "schedule": crontab(minute=10)},
    # Idle reclaim: warn, then suspend, idle development workloads, after the hour's utilization is pulled.
    "reclaim-idle-workloads": {"task": "billing.reclaim_idle_workloads", "schedule": crontab(minute=25)},
    "close-monthly-reports": {
        "task": "billing.close_previous_month",
        "schedule": crontab(minute=30, hour=2, day_of_month=1),
    },
}
