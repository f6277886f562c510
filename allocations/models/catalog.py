"""The GPU catalog: models and their MIG profiles (seeded from the reference data, editable by admins)."""

from __future__ import annotations

from decimal import Decimal

from django.core.exceptions import ValidationError
from django.core.validators import MinValueValidator
from django.db import models

from gpucore.catalog import CatalogError, GpuModelSpec, MigProfile


class GpuModel(models.Model):
    """A GPU model in the catalog: memory, the node label that selects it, power, prices and MIG geometry."""

    name = models.CharField(max_length=40, unique=True)
    family = models.CharField(max_length=20, blank=True)
    memory_gb = models.PositiveIntegerField()
    product_label = models.CharField(
        max_length=63, help_text="Value of the nvidia.com/gpu.product node label (GPU Feature Discovery)."
    )
    mig_capable = models.BooleanField(default=False)
    mig_compute_slices = models.PositiveSmallIntegerField(default=0)
    mig_memory_slices = models.PositiveSmallIntegerField(default=0)
    tdp_watts = models.PositiveIntegerField()
    purchase_price = models.DecimalField(
        max_digits=12, decimal_places=2, null=True, blank=True, validators=[MinValueValidator(Decimal("0"))]
    )
    list_hourly_price = models.DecimalField(
        max_digits=10,
        decimal_places=4,
        null=True,
        blank=True,
        validators=[MinValueValidator(Decimal("0"))],
        help_text="Cloud on-demand list price per GPU-hour: the price of every model when no price book lists it.",
    )
    price_source = models.TextField(
        blank=True, help_text="Where the list price comes from, or why the model has none (then pools show 'no price')."
    )
    dense_fp16_tflops = models.DecimalField(
        max_digits=8,
        decimal_places=2,
        null=True,
        blank=True,
        validators=[MinValueValidator(Decimal("0"))],
        help_text="Dense FP16/BF16 tensor TFLOPS from NVIDIA's datasheet: the what-if's relative-throughput estimate.",
    )
    throughput_source = models.TextField(blank=True, help_text="The datasheet the TFLOPS figure comes from.")
    dcgm_model_names = models.JSONField(default=list, blank=True, help_text="DCGM modelName label values.")
    aliases = models.JSONField(default=list, blank=True)
    notes = models.TextField(blank=True)

    class Meta:
        ordering = ["name"]
        verbose_name = "GPU model"

    def __str__(self) -> str:
        return self.name

    def to_spec(self) -> GpuModelSpec:
        """This row (with its MIG profiles) as the pure GpuModelSpec the framework and manifests take."""
        profiles = tuple(
            MigProfile(
                name=p.name,
                memory_gb=p.memory_gb,
                compute_slices=p.compute_slices,
                memory_slices=p.memory_slices,
                max_instances=p.max_instances,
                placement_starts=tuple(p.placement_starts or ()),
                recommendable=p.recommendable,
            )
            for p in self.mig_profiles.all()
        )
        return GpuModelSpec(
            name=self.name,
            memory_gb=self.memory_gb,
            product_label=self.product_label,
            tdp_watts=self.tdp_watts,
            family=self.family,
            purchase_price_usd=self.purchase_price,
            list_hourly_usd=self.list_hourly_price,
            mig_compute_slices=self.mig_compute_slices,
            mig_memory_slices=self.mig_memory_slices,
            mig_profiles=profiles if self.mig_capable else (),
            dcgm_model_names=tuple(self.dcgm_model_names or ()),
            aliases=tuple(self.aliases or ()),
            notes=self.notes,
            price_source=self.price_source,
            dense_fp16_tflops=self.dense_fp16_tflops,
            throughput_source=self.throughput_source,
        )


class MigProfileDefinition(models.Model):
    """A MIG profile a GPU model supports, with its memory and compute slices (NVIDIA's MIG user guide)."""

    gpu_model = models.ForeignKey(GpuModel, on_delete=models.CASCADE, related_name="mig_profiles")
    name = models.CharField(max_length=20)
    memory_gb = models.PositiveIntegerField()
    compute_slices = models.PositiveSmallIntegerField()
    memory_slices = models.PositiveSmallIntegerField()
    max_instances = models.PositiveSmallIntegerField()
    placement_starts = models.JSONField(default=list, blank=True)
    recommendable = models.BooleanField(default=True)

    class Meta:
        constraints = [models.UniqueConstraint(fields=["gpu_model", "name"], name="unique_mig_profile")]
        ordering = ["gpu_model__name", "memory_slices", "compute_slices", "name"]
        verbose_name = "MIG profile"

    def __str__(self) -> str:
        return f"{self.gpu_model.name} {self.name}"

    def clean(self) -> None:
        try:
            compute, memory = MigProfile.parse_name(self.name.removesuffix("+me"))
        except CatalogError as exc:
            raise ValidationError({"name": str(exc)}) from exc
        if compute != self.compute_slices:
            raise ValidationError({"compute_slices": f"'{self.name}' has {compute} compute slices."})
        if memory != self.memory_gb:
            raise ValidationError({"memory_gb": f"'{self.name}' has {memory} GB."})
