"""The one rule that decides whether an option is open to a profile. Pure: no Django.

The recommendation walks only permitted options, its alternatives mark each option with this answer, and the
what-if table marks each (model, strategy) with it, so the three never disagree: an option the what-if shows as
allowed is one the alternatives list as permitted, and the recommendation is the intent's first choice among them.
"""

from __future__ import annotations

from gpucore.decision.options import DecisionContext, Option


def why_not_permitted(ctx: DecisionContext, option: Option) -> str | None:
    """Why policy (isolation, latency, SLA tier, GPUs per replica) or the node pools rule the option out; None when
    it is permitted."""
    reason = ctx.forbidden.get(option.strategy)
    if reason is None and not ctx.is_offered(option):
        reason = f"No node pool here offers {option.resource_name} on {option.model.name}."
    return reason
