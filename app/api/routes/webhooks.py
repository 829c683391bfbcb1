"""``/webhook-secret``: the caller's webhook signing secret (read it, rotate it)."""

from __future__ import annotations

from app.api.deps import WriteSessionDep
from app.api.errors import responses
from app.api.routes import resource_router
from app.api.security import TRAIN, PrincipalDep
from app.schemas import WebhookSecretPublic
from app.webhooks import owner_secret, rotate_secret

router = resource_router("webhook-secret", tag="webhooks")


@router.get("", name="get_secret", dependencies=[TRAIN], response_model=WebhookSecretPublic)
def get_webhook_secret(session: WriteSessionDep,
                       principal: PrincipalDep) -> WebhookSecretPublic:
    """The owner's webhook signing secret (made on first use): the key of the
    ``X-Svmsvc-Signature`` HMAC-SHA256 every event of its jobs carries."""
    row = owner_secret(session, principal.owner)
    return WebhookSecretPublic(secret=row.secret, created_at=row.created_at)


@router.post("", name="rotate_secret", dependencies=[TRAIN],
             response_model=WebhookSecretPublic, responses=responses(422))
def rotate_webhook_secret(session: WriteSessionDep,
                          principal: PrincipalDep) -> WebhookSecretPublic:
    """A new secret for the owner: every delivery from now on (retries of older events too)
    is signed with it; the old one stops verifying."""
    row = rotate_secret(session, principal.owner)
    return WebhookSecretPublic(secret=row.secret, created_at=row.created_at)
