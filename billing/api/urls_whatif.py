"""REST API route of the what-if comparison."""

from django.urls import path

from billing.api.whatif import WhatIfView

urlpatterns = [
    path("what-if/", WhatIfView.as_view(), name="what-if"),
]
