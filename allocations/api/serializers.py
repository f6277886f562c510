"""Input and output serializers of the allocations API.

Workload profiles are validated by ``WorkloadProfile.from_mapping`` (the pure core), never re-implemented here: the
profile fields below are declared so the OpenAPI schema documents them, and ``ProfileInputSerializer`` hands them to
the core and answers its ``ProfileError`` in DRF's ``{"field": ["message"]}`` shape.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

from django.core.exceptions import ValidationError as DjangoValidationError
from django.db.models import QuerySet
from drf_spectacular.utils import extend_schema_field
from rest_framework import serializers
from rest_framework.fields import SkipField, get_error_detail
from rest_framework.settings import api_settings

from allocations.models import (
    Cluster,
    GpuRequest,
    RequestEvent,
    RequestTemplate,
    Team,
    WorkloadType,
)
from allocations.reference_data import with_default_replicas
from allocations.request_templates.selectors import request_template_request_values
from allocations.requests.run_time import request_run_time
from allocations.requests.waiting import request_waiting
from gpucore.decision import ProfileError, WorkloadProfile
from gpucore.profile import MAX_DECIMAL_PLACES, MAX_GPU_MEMORY_GB, MAX_GPUS_PER_REPLICA, MAX_NUMBER, MAX_REPLICAS
from infra.scoping import visible_to

_PROFILE_FIELD_NAMES = frozenset(WorkloadProfile.field_names())
# The core refuses a number with more decimal places than it keeps (a float's repr counts, e.g. 5e-324).
_DECIMAL_STEP = float(f"1e-{MAX_DECIMAL_PLACES}")
_POSITIVE_NUMBER = {
    "type": "number",
    "minimum": 0,
    "exclusiveMinimum": True,
    "maximum": int(MAX_NUMBER),
    "multipleOf": _DECIMAL_STEP,
}


@extend_schema_field(_POSITIVE_NUMBER)
class _PositiveNumberField(serializers.FloatField):
    """A number > 0 in the schema; the core parses it exactly as a Decimal."""


@extend_schema_field({**_POSITIVE_NUMBER, "maximum": int(MAX_GPU_MEMORY_GB)})
class _GpuMemoryField(_PositiveNumberField):
    """GB per replica > 0 and at most the core's documented bound; the core checks it (one message everywhere)."""


@extend_schema_field({"type": "number", "minimum": 0, "maximum": 100, "multipleOf": _DECIMAL_STEP})
class _PercentField(serializers.FloatField):
    """0 to 100 with the core's decimal places; the core checks it."""


# --- Workload profile in ----------------------------------------------------------------------------------------------


class ProfileInputSerializer(serializers.Serializer):
    """The workload profile (docs/api.md, "Workload profile"), validated by ``WorkloadProfile.from_mapping``.

    The declared fields document it.

    ``validated_data`` holds ``profile`` (the parsed ``WorkloadProfile``), ``profile_data`` (the raw profile fields, as
    the submit service takes them) and every other declared field, validated by DRF as usual. An unknown key is
    refused (the core names it), so the schema says ``additionalProperties: false``.
    """

    refuses_unknown_fields = True

    workload_type = serializers.ChoiceField(choices=WorkloadType.choices)
    gpu_memory_gb = _GpuMemoryField(
        help_text=(
            "Peak GPU memory one replica needs, in GiB (as nvidia-smi reports it), all its GPUs together. It must stay "
            "within 85 % of the usable memory of the GPU or MIG slice (a 3g.20gb offers 19.62 GiB)."
        )
    )
    gpu_count = serializers.IntegerField(
        required=False, min_value=1, max_value=MAX_GPUS_PER_REPLICA, help_text="GPUs per replica (default 1)."
    )
    replicas = serializers.IntegerField(
        required=False,
        min_value=1,
        max_value=MAX_REPLICAS,
        help_text=(
            "Pods of the workload (default 1). Left out, real-time inference on a tier promising 99.99 % (tier 1) "
            "gets 2, so one node's reboot cannot take it down; an explicit 1 there is refused. A training or HPC "
            "Job with more than 1 runs as one distributed job."
        ),
    )
    latency_sensitive = serializers.BooleanField(
        required=False, allow_null=True, help_text="Default: true for realtime_inference, else false."
    )
    latency_p99_ms = _PositiveNumberField(required=False, allow_null=True)
    isolation_required = serializers.BooleanField(
        required=False, help_text="Memory and fault isolation needed (default false)."
    )
    expected_utilization_pct = _PercentField(required=False, allow_null=True, min_value=0, max_value=100)
    sla_tier = serializers.CharField(required=False, allow_null=True, max_length=100, help_text="SLA tier slug.")
    gpu_model = serializers.CharField(
        required=False,
        allow_null=True,
        max_length=100,
        help_text="Catalog name, e.g. A100-40GB (null: the framework picks).",
    )
    duration_hours = _PositiveNumberField(required=False, allow_null=True)
    cluster = serializers.SlugRelatedField(
        slug_field="name",
        queryset=Cluster.objects.filter(is_active=True),
        required=False,
        allow_null=True,
        help_text="Place on this cluster only (name); default: any active cluster.",
    )

    def to_internal_value(self, data: Any) -> dict[str, Any]:
        if not isinstance(data, Mapping):
            message = f"Invalid data. Expected a dictionary, but got {type(data).__name__}."
            raise serializers.ValidationError({api_settings.NON_FIELD_ERRORS_KEY: [message]}, code="invalid")
        # The profile's fields only document the schema: the core validates them (one message everywhere). The
        # others (cluster, team, ...) are validated by DRF as usual.
        own = {name: field for name, field in self.fields.items() if name not in _PROFILE_FIELD_NAMES}
        # Unknown keys go to the core along with the profile fields, which names them in its answer.
        profile_data = with_default_replicas({key: data[key] for key in data if key not in own})
        errors: dict[str, Any] = {}
        validated: dict[str, Any] = {}
        try:
            validated["profile"] = WorkloadProfile.from_mapping(profile_data)
        except ProfileError as exc:
            errors.update(exc.errors)
        validated["profile_data"] = profile_data
        for name, field in own.items():
            if field.read_only:
                continue
            try:
                value = field.run_validation(field.get_value(data))
            except serializers.ValidationError as exc:
                errors[name] = exc.detail
            except DjangoValidationError as exc:
                errors[name] = get_error_detail(exc)
            except SkipField:
                continue
            else:
                self.set_value(validated, field.source_attrs, value)
        if errors:
            raise serializers.ValidationError(errors)
        return validated


class VisibleTeamField(serializers.SlugRelatedField):
    """A team slug, looked up only among the teams the user may see (others read as "does not exist")."""

    def get_queryset(self) -> QuerySet[Team]:
        return visible_to(self.context["request"].user, Team)


class GpuRequestCreateSerializer(ProfileInputSerializer):
    """A new request: the profile fields flat, plus the team, a name and what it is for."""

    team = VisibleTeamField(slug_field="slug", queryset=Team.objects.all(), help_text="Team slug.")
    name = serializers.CharField(max_length=100)
    purpose = serializers.CharField(required=False, allow_blank=True, default="")
    expires_at = serializers.DateTimeField(required=False, allow_null=True)
    image = serializers.CharField(required=False, allow_blank=True, max_length=255, default="")
    command = serializers.ListField(
        child=serializers.CharField(allow_blank=True),
        required=False,
        default=list,
        help_text=(
            'The container\'s command, e.g. ["torchrun", "train.py"]. Required with the default image (image empty), '
            "which runs nothing by itself (400 naming command), except for development, which then starts "
            "JupyterLab on port 8888. With an image of your own, empty runs its entrypoint."
        ),
    )
    template = serializers.IntegerField(
        required=False,
        min_value=1,
        help_text="A template's id (GET /api/v1/templates/): its values fill in the fields this body leaves out.",
    )

    def to_internal_value(self, data: Any) -> dict[str, Any]:
        if not isinstance(data, Mapping) or data.get("template") in (None, ""):
            return super().to_internal_value(data)
        template = self._template(data["template"])
        body = {key: data[key] for key in data if key != "template"}
        validated = super().to_internal_value({**request_template_request_values(template), **body})
        if template.team_id is not None and validated["team"].pk != template.team_id:
            raise serializers.ValidationError(
                {"template": [f"This template is team {template.team.slug}'s; choose that team or another template."]}
            )
        return validated

    def _template(self, value: Any) -> RequestTemplate:
        user = self.context["request"].user
        template = None
        if str(value).isdigit():
            template = visible_to(user, RequestTemplate).filter(pk=int(value)).first()
        if template is None:
            # An id that is well formed but names no template offered to the caller: a 422, as other unknown objects.
            raise serializers.ValidationError(
                {"template": [f"No template {value!r} among those offered to you."]}, code="does_not_exist"
            )
        return template


class CommentSerializer(serializers.Serializer):
    """The body of a request action: an optional comment (a reason is required to reject)."""

    comment = serializers.CharField(required=False, allow_blank=True, default="", max_length=5000)


# --- Recommendation out -----------------------------------------------------------------------------------------------


class MoneySerializer(serializers.Serializer):
    """An amount of money: a decimal string rounded to the cent (null when no price is known) and its currency."""

    amount = serializers.CharField(allow_null=True)
    currency = serializers.CharField()


class DurationCostSerializer(MoneySerializer):
    """The cost of an allocation for the hours asked for (``duration_hours``, or until the request expires)."""

    hours = serializers.FloatField()


class _AllocationCoreSerializer(serializers.Serializer):
    """The fields a recommendation and its alternatives share (docs/api.md, "Recommendations")."""

    strategy = serializers.ChoiceField(choices=["dedicated", "mig", "time-slicing"])
    resource_name = serializers.CharField()
    quantity = serializers.IntegerField()
    replicas = serializers.IntegerField()
    gpu_model = serializers.CharField()
    mig_profile = serializers.CharField(allow_null=True)
    time_slice_replicas = serializers.IntegerField(allow_null=True)
    node_selector = serializers.DictField(child=serializers.CharField())
    expected_overhead_pct = serializers.ListField(child=serializers.IntegerField(), min_length=2, max_length=2)
    utilization_target_pct = serializers.ListField(child=serializers.IntegerField(), min_length=2, max_length=2)
    isolation = serializers.ChoiceField(choices=["full", "hardware", "none"])
    estimated_monthly_cost = MoneySerializer()
    saving_vs_dedicated_pct = serializers.FloatField()
    gpu_share = serializers.CharField(
        help_text="What one allocated unit bills, as a fraction of one GPU (decimal string): 1 dedicated, "
        "1/replicas time-sliced, max(compute, memory) slices of the GPU for MIG."
    )
    estimated_cost = DurationCostSerializer(
        allow_null=True,
        required=False,
        help_text="The cost for duration_hours (null without a duration); amount null when no price is known.",
    )


class AlternativeSerializer(_AllocationCoreSerializer):
    """Another way to run the workload, its tradeoffs, and whether policy permits it."""

    tradeoffs = serializers.ListField(child=serializers.CharField())
    permitted = serializers.BooleanField()
    reason = serializers.CharField(allow_null=True)


class RecommendationSerializer(_AllocationCoreSerializer):
    """The recommended allocation, why, and the alternatives."""

    rationale = serializers.ListField(child=serializers.CharField())
    alternatives = AlternativeSerializer(many=True)
    topology_aware = serializers.BooleanField()


# --- Requests out -----------------------------------------------------------------------------------------------------


class GpuRequestSerializer(serializers.ModelSerializer):
    """A GPU request as the API shows it: who, what was asked, the spec frozen at submission, status and times.

    ``fields`` keeps only the named fields (the view's ``?brief=``, ``?fields=`` and ``?omit=``, as NetBox does).
    """

    BRIEF_FIELDS = (
        "id",
        "name",
        "status",
        "team",
        "requester",
        "workload_type",
        "gpu_model",
        "resource_name",
        "resource_units",
        "cluster",
        "node_pool",
        "created_at",
        "updated_at",
    )

    team = serializers.SlugRelatedField(slug_field="slug", read_only=True)
    requester = serializers.SlugRelatedField(slug_field="username", read_only=True)
    cluster = serializers.SlugRelatedField(slug_field="name", read_only=True, allow_null=True)
    node_pool = serializers.SlugRelatedField(slug_field="name", read_only=True, allow_null=True)
    sla_tier = serializers.SlugRelatedField(slug_field="slug", read_only=True, allow_null=True)
    gpu_model = serializers.CharField(source="gpu_model_requested", read_only=True)
    spec = serializers.SerializerMethodField()

    class Meta:
        model = GpuRequest
        fields = [
            "id",
            "name",
            "purpose",
            "status",
            "status_detail",
            "team",
            "requester",
            "workload_type",
            "gpu_memory_gb",
            "gpu_count",
            "replicas",
            "latency_sensitive",
            "latency_p99_ms",
            "isolation_required",
            "expected_utilization_pct",
            "sla_tier",
            "gpu_model",
            "duration_hours",
            "expires_at",
            "image",
            "command",
            "cluster",
            "node_pool",
            "resource_name",
            "resource_units",
            "borrowed",
            "spec",
            "created_at",
            "updated_at",
            "submitted_at",
            "approved_at",
            "activated_at",
            "ended_at",
        ]
        read_only_fields = fields
        extra_kwargs = {
            name: {"coerce_to_string": False}
            for name in ("gpu_memory_gb", "latency_p99_ms", "expected_utilization_pct", "duration_hours")
        }

    def __init__(self, *args: Any, fields: Iterable[str] | None = None, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        if fields is not None:
            keep = set(fields)
            for name in [name for name in self.fields if name not in keep]:
                self.fields.pop(name)

    @extend_schema_field(RecommendationSerializer)
    def get_spec(self, obj: GpuRequest) -> dict[str, Any]:
        # The spec is stored as the framework wrote it at submission; it is shown as frozen, never recomputed.
        return obj.spec


class WaitingSerializer(serializers.Serializer):
    """Where a request that is not running waits, and until when (DESIGN.md "Waiting")."""

    stage = serializers.ChoiceField(choices=["approval", "capacity", "kueue", "provisioning"])
    position = serializers.IntegerField(
        allow_null=True, help_text="Its place in the approval queue, oldest first (1: next); null past approval."
    )
    ahead_gpu_units = serializers.IntegerField(
        allow_null=True, help_text="Units of the same pool and resource asked for by requests ahead of it."
    )
    eta = serializers.DateTimeField(
        allow_null=True,
        help_text="When enough of the pool frees as current allocations expire (capacity); null when unknown.",
    )
    reasons = serializers.ListField(child=serializers.CharField())


class RunTimeSerializer(serializers.Serializer):
    """Time asked for against time run (``allocations.requests.run_time``)."""

    requested_hours = serializers.FloatField(
        allow_null=True, help_text="duration_hours, else the hours from activation to expiry; null: neither."
    )
    ran_seconds = serializers.IntegerField(help_text="Seconds it held GPUs: from activation to its end, or to now.")
    ended_at = serializers.DateTimeField(allow_null=True, help_text="When it ended; null while it runs.")
    ended_as = serializers.CharField(
        allow_null=True, help_text="How: the Job's condition (Complete, Failed) or the status it ended in."
    )
    summary = serializers.CharField(help_text='E.g. "Requested 72 h, ran 5 h 12 min, ended Complete at ...".')


class GpuRequestDetailSerializer(GpuRequestSerializer):
    """One request as its detail answers it: every field of the list's items, ``waiting`` and ``run_time``."""

    waiting = serializers.SerializerMethodField(
        help_text="Where the request waits and until when; null once it runs (or ended, or is a draft)."
    )
    run_time = serializers.SerializerMethodField(
        help_text="Requested against run time once it began holding GPUs; null before."
    )

    class Meta(GpuRequestSerializer.Meta):
        fields = [*GpuRequestSerializer.Meta.fields, "waiting", "run_time"]
        read_only_fields = fields

    @extend_schema_field(RunTimeSerializer(allow_null=True))
    def get_run_time(self, obj: GpuRequest) -> dict[str, Any] | None:
        run_time = request_run_time(obj)
        return run_time.to_dict() if run_time is not None else None

    @extend_schema_field(WaitingSerializer(allow_null=True))
    def get_waiting(self, obj: GpuRequest) -> dict[str, Any] | None:
        waiting = request_waiting(obj)
        return waiting.to_dict() if waiting is not None else None


# Both refer to the request's status enum (named in SPECTACULAR_SETTINGS["ENUM_NAME_OVERRIDES"]): spectacular would
# otherwise name the same choice set three times. tests/allocations/api/test_schema.py checks that no $ref dangles.
_STATUS_REF = {"$ref": "#/components/schemas/RequestStatusEnum"}


@extend_schema_field(_STATUS_REF)
class EventStatusField(serializers.CharField):
    """A request status in an event."""


@extend_schema_field({"oneOf": [_STATUS_REF, {"type": "string", "maxLength": 0}]})
class _EventFromStatusField(serializers.CharField):
    """The status an event moved from; blank for the first event."""


class RequestEventSerializer(serializers.ModelSerializer):
    """One status change of a request: who, when, from, to and why."""

    actor = serializers.CharField(source="actor_label", read_only=True)
    from_status = _EventFromStatusField(read_only=True)
    to_status = EventStatusField(read_only=True)

    class Meta:
        model = RequestEvent
        fields = ["id", "at", "actor", "from_status", "to_status", "comment", "details"]
        read_only_fields = fields


# --- Teams out --------------------------------------------------------------------------------------------------------
