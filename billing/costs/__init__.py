"""Costs: price books, imported usage, the chargeback with idle cost, monthly reports and the cost dashboards."""
