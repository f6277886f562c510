"""Billing models: price book, utilization rollups and monthly reports (filled by the billing issues)."""
