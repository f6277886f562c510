"""A user's Django permissions read in one query into the caches ModelBackend answers ``has_perm`` from (issue #15)."""

from __future__ import annotations

import functools

from django.conf import settings
from django.contrib.auth import get_user_model
from django.contrib.auth.backends import ModelBackend
from django.contrib.auth.models import AbstractBaseUser, Group, Permission, PermissionsMixin
from django.contrib.contenttypes.models import ContentType
from django.contrib.postgres.expressions import ArraySubquery
from django.db import connections, router
from django.db.models import OuterRef, QuerySet, Value
from django.db.models.functions import Concat
from django.utils.module_loading import import_string

from allocations.prepared_cursors import prepared_cursor


def read_permissions(user: AbstractBaseUser) -> None:
    """Read the permissions of an active, non-superuser user, held directly and through groups, in one query, into
    the caches ModelBackend reads them from, so ``has_perm`` answers from them as it would from its own reads.

    ModelBackend reads them in two queries (27 % of an API detail call, issue #15). Nothing outlives the user object:
    the next request reads the user, and so the permissions, afresh. Where a configured backend answers permissions
    its own way (not ModelBackend's code) this does nothing and ``has_perm`` asks it.
    """
    if not _permissions_are_model_backends(user.__class__):  # __class__ sees through a lazy user
        return
    with prepared_cursor(connections[router.db_for_read(Permission)]) as cursor:
        cursor.execute(_permissions_sql(), [user.pk, user.pk])
        rows = cursor.fetchall()
    held: dict[str, set[str]] = {"user": set(), "group": set()}
    for source, app_label, codename in rows:
        held[source].add(f"{app_label}.{codename}")
    _keep(user, direct=held["user"], through_groups=held["group"])


def _keep(user: AbstractBaseUser, *, direct: set[str], through_groups: set[str]) -> None:
    # ModelBackend._get_permissions and get_all_permissions keep these three on the user object.
    user._user_perm_cache = direct
    user._group_perm_cache = through_groups
    user._perm_cache = direct | through_groups


# The annotations ``with_held_permissions`` adds: the names ("app_label.codename") held directly and through groups.
HELD_USER_PERMISSIONS = "held_user_permissions"
HELD_GROUP_PERMISSIONS = "held_group_permissions"


def with_held_permissions(queryset: QuerySet, *, user_id: str = "pk") -> QuerySet:
    """``queryset`` whose rows carry, on PostgreSQL, the permissions of the user whose id is the field ``user_id``, in
    the same query (``keep_held_permissions`` then puts them where ``has_perm`` reads them): the session's or token's
    user and the approver check of every page and API call in one round trip instead of two (issue #15). Elsewhere
    ``queryset`` as it is, and ``read_permissions`` reads them when first asked."""
    if connections[router.db_for_read(queryset.model)].vendor != "postgresql":
        return queryset
    name = Concat("content_type__app_label", Value("."), "codename")
    held = Permission.objects.order_by().annotate(held=name).values("held")
    return queryset.annotate(
        **{
            HELD_USER_PERMISSIONS: ArraySubquery(held.filter(user=OuterRef(user_id))),
            HELD_GROUP_PERMISSIONS: ArraySubquery(held.filter(group__user=OuterRef(user_id))),
        }
    )


def keep_held_permissions(user: AbstractBaseUser, carrier: object | None = None) -> None:
    """Put the permissions ``with_held_permissions`` read (on ``carrier``, the user itself by default) into the caches
    ``read_permissions`` fills, as it would; nothing when they were not read or do not mean ModelBackend's."""
    carrier = user if carrier is None else carrier
    held_user = getattr(carrier, HELD_USER_PERMISSIONS, None)
    held_group = getattr(carrier, HELD_GROUP_PERMISSIONS, None)
    if held_user is None or held_group is None or user.is_superuser:
        return  # a superuser's caches hold every permission (ModelBackend reads them all): has_perm needs none
    if not _permissions_are_model_backends(user.__class__):
        return
    _keep(user, direct=set(held_user), through_groups=set(held_group))


@functools.cache
def _permissions_sql() -> str:
    user_model = get_user_model()
    user_permissions = user_model._meta.get_field("user_permissions").remote_field.through._meta.db_table
    user_groups = user_model._meta.get_field("groups").remote_field.through._meta.db_table
    group_permissions = Group._meta.get_field("permissions").remote_field.through._meta.db_table
    permissions, content_types = Permission._meta.db_table, ContentType._meta.db_table
    held = f"{permissions} p JOIN {content_types} ct ON ct.id = p.content_type_id"
    # Table names from the models' own metadata; the user id is a bound parameter.
    return (
        f"SELECT 'user', ct.app_label, p.codename FROM {held} JOIN {user_permissions} up "  # noqa: S608
        "ON up.permission_id = p.id WHERE up.user_id = %s "
        f"UNION ALL SELECT 'group', ct.app_label, p.codename FROM {held} JOIN {group_permissions} gp "
        f"ON gp.permission_id = p.id JOIN {user_groups} ug ON ug.group_id = gp.group_id WHERE ug.user_id = %s"
    )


def _permissions_are_model_backends(user_class: type) -> bool:
    """Whether ``has_perm`` means what ModelBackend reads (the user's and their groups' permissions): the user model's
    is Django's, and every configured backend that answers permissions is ModelBackend's own code."""
    return getattr(user_class, "has_perm", None) is PermissionsMixin.has_perm and _model_backends(
        tuple(settings.AUTHENTICATION_BACKENDS)
    )


@functools.lru_cache(maxsize=8)
def _model_backends(paths: tuple[str, ...]) -> bool:
    methods = ("has_perm", "get_all_permissions", "_get_permissions", "get_user_permissions", "get_group_permissions")
    methods += ("_get_user_permissions", "_get_group_permissions", "with_perm")
    for path in paths:
        backend = import_string(path)
        if not hasattr(backend, "has_perm"):
            continue
        if not issubclass(backend, ModelBackend) or any(
            getattr(backend, name) is not getattr(ModelBackend, name) for name in methods
        ):
            return False
    return True
