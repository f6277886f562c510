"""Idle reclaim: read each running development workload's hourly rollups, let the policy decide, warn or suspend."""
