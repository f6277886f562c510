"""A request name is one line, and its e-mails are never lost: a newline would break the subject header."""

from __future__ import annotations

import pytest
from django.core import mail
from django.core.exceptions import ValidationError

from allocations.models import GpuRequest
from allocations.requests.services import gpu_request_approve, gpu_request_submit

pytestmark = pytest.mark.django_db(transaction=True)  # the e-mails go out when the transaction commits
PROFILE = {"workload_type": "training", "gpu_memory_gb": 40}


@pytest.mark.parametrize("name", ["two\nlines", "carriage\rreturn", "tab\there", "line\u2028separator"])
def test_a_name_with_a_newline_or_control_character_is_refused(demo_org, name: str) -> None:
    with pytest.raises(ValidationError) as info:
        gpu_request_submit(
            command=["python", "main.py"],
            acting_user=demo_org.member,
            team=demo_org.team,
            name=name,
            profile_data=PROFILE,
        )
    assert "one line" in info.value.message_dict["name"][0]
    assert GpuRequest.objects.count() == 0


def test_an_older_name_with_a_newline_still_gets_its_emails(demo_org) -> None:
    demo_org.member.email = "member@example.com"
    demo_org.member.save()
    request = gpu_request_submit(
        command=["python", "main.py"],
        acting_user=demo_org.member,
        team=demo_org.team,
        name="fine",
        profile_data=PROFILE,
    )
    GpuRequest.objects.filter(pk=request.pk).update(name="injected\nBcc: attacker@example.com")
    mail.outbox.clear()
    gpu_request_approve(request=request, acting_user=demo_org.approver)
    (sent,) = [m for m in mail.outbox if m.to == ["member@example.com"]]
    assert "\n" not in sent.subject and "injected Bcc: attacker@example.com" in sent.subject
    assert sent.bcc == [] and "attacker@example.com" not in sent.message().get("Bcc", "")
