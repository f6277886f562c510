"""Renderers of the allocations API beyond JSON: Kubernetes objects as one multi-document YAML stream."""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any

import yaml
from rest_framework.renderers import BaseRenderer
from rest_framework.utils.encoders import JSONEncoder

from gpucore.manifests import to_yaml


class KubernetesYamlRenderer(BaseRenderer):
    """``application/yaml`` (``?format=yaml``): a list of objects as ``kubectl apply -f`` reads it; errors as YAML."""

    media_type = "application/yaml"
    format = "yaml"
    charset = "utf-8"

    def render(
        self, data: Any, accepted_media_type: str | None = None, renderer_context: Mapping[str, Any] | None = None
    ) -> bytes:
        """Objects through ``gpucore.manifests.to_yaml``; anything else (an error body) as plain YAML."""
        if data is None:
            return b""
        if isinstance(data, list) and all(isinstance(item, Mapping) for item in data):
            return to_yaml(data).encode(self.charset)
        # Error bodies hold DRF's ErrorDetail (a str subclass the safe dumper refuses): round-trip through JSON first.
        plain = json.loads(json.dumps(data, cls=JSONEncoder))
        return yaml.safe_dump(plain, sort_keys=False, default_flow_style=False).encode(self.charset)
