"""Utilization insights from the rollups: alerts, right-sizing advice and the capacity forecast per pool."""
