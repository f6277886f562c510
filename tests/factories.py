"""factory_boy factories for every model, and the role matrix the permission tests use."""

from __future__ import annotations

import uuid
from dataclasses import dataclass
from decimal import Decimal

import factory
from django.contrib.auth.models import Group, User
from factory.django import DjangoModelFactory

from allocations.models import (
    Cluster,
    ClusterBackend,
    GpuModel,
    GpuRequest,
    Membership,
    NodePool,
    Quota,
    RequestStatus,
    Role,
    SharingMode,
    SlaTier,
    Team,
    WorkloadType,
)
from allocations.selectors import APPROVERS_GROUP
from billing.models import TeamBudget
from portal.tokens.services import NewToken


class UserFactory(DjangoModelFactory):
    class Meta:
        model = User
        django_get_or_create = ("username",)
        skip_postgeneration_save = True

    username = factory.Sequence(lambda n: f"user{n}")
    email = factory.LazyAttribute(lambda u: f"{u.username}@example.com")
    first_name = factory.Faker("first_name")
    password = factory.PostGenerationMethodCall("set_password", "demo")

    @factory.post_generation
    def save_password(obj: User, create: bool, extracted: object, **kwargs: object) -> None:
        if create:
            obj.save()


class TeamFactory(DjangoModelFactory):
    class Meta:
        model = Team
        django_get_or_create = ("slug",)

    slug = factory.Sequence(lambda n: f"team{n}")
    name = factory.LazyAttribute(lambda t: t.slug.title())
    cost_center = factory.Sequence(lambda n: f"CC-{1000 + n}")


class MembershipFactory(DjangoModelFactory):
    class Meta:
        model = Membership

    user = factory.SubFactory(UserFactory)
    team = factory.SubFactory(TeamFactory)
    role = Role.MEMBER


class ClusterFactory(DjangoModelFactory):
    class Meta:
        model = Cluster
        django_get_or_create = ("name",)

    name = factory.Sequence(lambda n: f"cluster-{n}")
    backend = ClusterBackend.GITOPS
    gitops_path = factory.LazyAttribute(lambda c: c.name)


class NodePoolFactory(DjangoModelFactory):
    class Meta:
        model = NodePool

    cluster = factory.SubFactory(ClusterFactory)
    name = factory.Sequence(lambda n: f"pool-{n}")
    gpu_model = factory.LazyFunction(lambda: GpuModel.objects.get(name="H100-80GB"))
    node_count = 2
    gpus_per_node = 8
    sharing_mode = SharingMode.NONE
    taints = factory.LazyFunction(lambda: [{"key": "nvidia.com/gpu", "value": "present", "effect": "NoSchedule"}])


class QuotaFactory(DjangoModelFactory):
    class Meta:
        model = Quota

    team = factory.SubFactory(TeamFactory)
    resource_name = "nvidia.com/gpu"
    limit = 8


def dedicated_spec(gpu_model: str = "H100-80GB", quantity: int = 1, replicas: int = 1) -> dict[str, object]:
    """A frozen spec of the shape the decision framework produces, for a dedicated GPU."""
    label = GpuModel.objects.get(name=gpu_model).product_label
    return {
        "strategy": "dedicated",
        "resource_name": "nvidia.com/gpu",
        "quantity": quantity,
        "replicas": replicas,
        "gpu_model": gpu_model,
        "mig_profile": None,
        "time_slice_replicas": None,
        "node_selector": {"nvidia.com/gpu.product": label},
    }


class GpuRequestFactory(DjangoModelFactory):
    class Meta:
        model = GpuRequest

    team = factory.SubFactory(TeamFactory)
    requester = factory.SubFactory(UserFactory)
    name = factory.Sequence(lambda n: f"request-{n}")
    # Not Faker text: a random English word would match the quick-search tests' queries now and then.
    purpose = factory.Sequence(lambda n: f"Purpose {n}")
    workload_type = WorkloadType.TRAINING
    gpu_memory_gb = Decimal("40")
    gpu_count = 1
    replicas = 1
    sla_tier = factory.LazyFunction(lambda: SlaTier.objects.get(slug="tier2_batch"))
    spec = factory.LazyFunction(dedicated_spec)
    resource_name = "nvidia.com/gpu"
    resource_units = 1
    status = RequestStatus.PENDING_APPROVAL


class TeamBudgetFactory(DjangoModelFactory):
    class Meta:
        model = TeamBudget
        django_get_or_create = ("team",)

    team = factory.SubFactory(TeamFactory)
    monthly_amount = Decimal("1000.00")
    thresholds_pct = factory.LazyFunction(lambda: [50, 80, 100])


@dataclass
class DemoOrg:
    """The role matrix: one user per role, two teams, one cluster with a dedicated H100 pool."""

    team: Team
    other_team: Team
    member: User
    team_lead: User
    outsider: User
    approver: User
    platform_admin: User
    cluster: Cluster
    pool: NodePool

    def user(self, role: str) -> User:
        return getattr(self, role)


ROLES = ("platform_admin", "approver", "team_lead", "member", "outsider")


def build_demo_org() -> DemoOrg:
    team = TeamFactory(slug="vision", name="Vision")
    other = TeamFactory(slug="nlp", name="NLP")
    member = UserFactory(username="member")
    lead = UserFactory(username="lead")
    outsider = UserFactory(username="outsider")
    approver = UserFactory(username="approver")
    admin = UserFactory(username="platform_admin", is_staff=True, is_superuser=True)
    MembershipFactory(user=member, team=team, role=Role.MEMBER)
    MembershipFactory(user=lead, team=team, role=Role.LEAD)
    MembershipFactory(user=outsider, team=other, role=Role.MEMBER)
    approver.groups.add(Group.objects.get(name=APPROVERS_GROUP))
    cluster = ClusterFactory(name="demo")
    pool = NodePoolFactory(cluster=cluster, name="h100")
    QuotaFactory(team=team, resource_name="nvidia.com/gpu", limit=8)
    QuotaFactory(team=other, resource_name="nvidia.com/gpu", limit=4)
    return DemoOrg(team, other, member, lead, outsider, approver, admin, cluster, pool)


def api_key_for(*, user: User) -> NewToken:
    """A new named API token of the user (``.key`` to send, ``.token`` the row); each call makes another."""
    from portal.tokens.services import api_token_create

    return api_token_create(acting_user=user, name=f"test {uuid.uuid4().hex[:8]}", expires_in_days=7)


def legacy_key_for(*, user: User) -> NewToken:
    """A DRF plain-text key of the user as the data migration leaves it: hashed into a named, expiring token."""
    import importlib

    from django.apps import apps
    from rest_framework.authtoken.models import Token

    from portal.tokens.legacy import legacy_public_id
    from portal.tokens.models import ApiToken

    key = Token.objects.create(user=user).key
    importlib.import_module("portal.tokens.migrations.0002_migrate_legacy_keys").migrate_legacy_keys(apps, None)
    return NewToken(token=ApiToken.objects.get(public_id=legacy_public_id(key)), key=key)
