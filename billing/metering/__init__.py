"""Metering: DCGM utilization pulled from each cluster's Prometheus into hourly rollups, and the reads of them."""
