"""URL routes: the browser pages, the admin, the REST API under /api/v1/ and its OpenAPI schema."""

from django.contrib import admin
from django.contrib.auth import views as auth_views
from django.urls import include, path
from drf_spectacular.views import SpectacularAPIView, SpectacularSwaggerSplitView

from portal import views

admin.site.site_header = "GPU Portal administration"
admin.site.site_title = "GPU Portal admin"
admin.site.index_title = "Platform administration"

# The API first, under one prefix, so an API call is not matched against every page's pattern before its own. No
# page pattern matches a path that starts with api/, and no name is in both.
api_urlpatterns = [
    path("v1/", include("allocations.api.urls")),
    path("v1/", include("billing.api.urls")),
    path("v1/", include("portal.tokens.api_urls")),
    path("v1/", include("audit.api_urls")),
    path("schema/", SpectacularAPIView.as_view(), name="api-schema"),
    path("docs/", SpectacularSwaggerSplitView.as_view(url_name="api-schema"), name="api-docs"),
]

urlpatterns = [
    path("api/", include(api_urlpatterns)),
    path("", views.home, name="home"),
    path("healthz", views.healthz, name="healthz"),
    path("glossary/", views.glossary, name="glossary"),
    path("", include("allocations.urls")),
    path("", include("portal.tokens.urls")),
    path("", include("audit.urls")),
    path("billing/", include("billing.urls")),
    path("accounts/login/", views.PortalLoginView.as_view(redirect_authenticated_user=True), name="login"),
    # Single sign-on: /accounts/sso/login/oidc/ starts it; /accounts/sso/complete/oidc/ is the redirect URI.
    path("accounts/sso/", include("social_django.urls", namespace="social")),
    path("accounts/logout/", auth_views.LogoutView.as_view(), name="logout"),
    path("admin/", admin.site.urls),
]

# A BadRequest raised by a page (a malformed ?month=, a NUL in a form) is answered with its message.
handler400 = "portal.views.bad_request"
handler403 = "portal.views.permission_denied"
handler404 = "portal.views.page_not_found"
# An error raised outside a view (a middleware saving the session) while the database is away is a 503, not a 500.
handler500 = "portal.database_unavailable.server_error"
