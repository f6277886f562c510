"""Small, strict readers for settings taken from the environment."""

from __future__ import annotations

import os

from django.core.exceptions import ImproperlyConfigured

_TRUE = {"1", "true", "yes", "on"}
_FALSE = {"0", "false", "no", "off", ""}


def env_str(name: str, default: str | None = None) -> str | None:
    """The variable's value, or ``default`` when it is unset."""
    return os.environ.get(name, default)


def env_bool(name: str, default: bool) -> bool:
    """A boolean variable; anything but a recognised yes/no word is a configuration error."""
    raw = os.environ.get(name)
    if raw is None:
        return default
    value = raw.strip().lower()
    if value in _TRUE:
        return True
    if value in _FALSE:
        return False
    raise ImproperlyConfigured(f"{name}={raw!r} is not a boolean: use 1/0, true/false, yes/no or on/off.")


def env_int(name: str, default: int) -> int:
    """An integer variable."""
    raw = os.environ.get(name)
    if raw is None or raw.strip() == "":
        return default
    try:
        return int(raw)
    except ValueError:
        raise ImproperlyConfigured(f"{name}={raw!r} is not an integer.") from None


def env_list(name: str, default: list[str]) -> list[str]:
    """A comma-separated list; blanks are dropped."""
    raw = os.environ.get(name)
    if raw is None:
        return list(default)
    return [item.strip() for item in raw.split(",") if item.strip()]


def env_required(name: str) -> str:
    """A variable that must be set and non-empty (production settings)."""
    value = os.environ.get(name, "").strip()
    if not value:
        raise ImproperlyConfigured(f"The environment variable {name} must be set in production.")
    return value


def secret_from_ref(ref: str, *, what: str) -> str:
    """The secret a reference points at: ``env:VARIABLE`` or ``file:/path`` (a mounted Kubernetes Secret).

    Settings keep references, never values, so a secret can live in a Secret volume or a vault-injected variable and
    rotate without a settings change; ``what`` names the setting in the error.
    """
    ref = ref.strip()
    if ref.startswith("env:"):
        variable = ref.removeprefix("env:")
        value = os.environ.get(variable, "").strip()
        if not value:
            raise ImproperlyConfigured(f"{what} points at the environment variable {variable}, which is not set.")
        return value
    if ref.startswith("file:"):
        path = ref.removeprefix("file:")
        try:
            with open(path, encoding="utf-8") as handle:
                value = handle.read().strip()
        except OSError as error:
            raise ImproperlyConfigured(f"{what} points at {path}, which cannot be read ({error.strerror}).") from None
        if not value:
            raise ImproperlyConfigured(f"{what} points at {path}, which is empty.")
        return value
    raise ImproperlyConfigured(f"{what} must be a reference, 'env:VARIABLE' or 'file:/path', never the secret itself.")


def env_labels(name: str, default: str) -> dict[str, str]:
    """Kubernetes labels as ``key=value[,key=value]``; empty means none. A pair without '=' is a configuration error."""
    raw = os.environ.get(name, default)
    labels = {}
    for pair in (item.strip() for item in raw.split(",") if item.strip()):
        key, sep, value = pair.partition("=")
        if not sep or not key.strip():
            raise ImproperlyConfigured(
                f"{name}={raw!r}: write labels as key=value, e.g. gpu-portal/inference-caller=true."
            )
        labels[key.strip()] = value.strip()
    return labels
