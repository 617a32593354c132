"""Who may look and who may act: basic auth or a token, and the CSRF check on every action.

- Basic auth: `Authorization: Basic ...` with the configured user and password.
- A token: `Authorization: Bearer <token>`, or the login form (or `?token=` once), which sets a cookie
  holding an HMAC of the token, never the token itself.
- CSRF: a random id in a SameSite=Strict, HttpOnly cookie; each form carries HMAC(secret, id), which a
  page of another site can neither read nor make. A request whose Origin is another host, or that the
  browser marks cross-site (Sec-Fetch-Site), is refused as well.
"""

from __future__ import annotations

import base64
import binascii
import hashlib
import hmac
import secrets
from urllib.parse import urlsplit

from starlette.requests import Request

from .settings import Settings

CSRF_COOKIE = 'rqfast_dashboard_csrf'
TOKEN_COOKIE = 'rqfast_dashboard_token'


def _mac(settings: Settings, purpose: str, value: str) -> str:
    return hmac.new(settings.secret, f'{purpose}:{value}'.encode(), hashlib.sha256).hexdigest()


def _same(a: str, b: str) -> bool:
    return hmac.compare_digest(a.encode(), b.encode())


# --- who is asking


def token_cookie(settings: Settings) -> str:
    """The login cookie's value for the configured token."""
    return _mac(settings, 'token', settings.token or '')


def token_matches(settings: Settings, given: str) -> bool:
    return settings.token is not None and _same(given, settings.token)


def allowed(settings: Settings, request: Request) -> bool:
    """Whether the request shows the basic auth or the token (always, when neither is configured)."""
    if not settings.protected:
        return True
    header = request.headers.get('authorization', '')
    scheme, _, credentials = header.partition(' ')
    if settings.basic_auth is not None and scheme.lower() == 'basic':
        try:
            user, _, password = base64.b64decode(credentials, validate=True).decode().partition(':')
        except (binascii.Error, UnicodeDecodeError):
            return False
        expected_user, expected_password = settings.basic_auth
        return _same(user, expected_user) & _same(password, expected_password)
    if settings.token is not None:
        if scheme.lower() == 'bearer':
            return token_matches(settings, credentials.strip())
        cookie = request.cookies.get(TOKEN_COOKIE, '')
        return bool(cookie) and _same(cookie, token_cookie(settings))
    return False


# --- forged requests


def csrf_id(request: Request) -> tuple[str, bool]:
    """The request's CSRF id, and whether it is new (the response must set the cookie)."""
    found = request.cookies.get(CSRF_COOKIE, '')
    if len(found) == 32 and all(c in '0123456789abcdef' for c in found):
        return found, False
    return secrets.token_hex(16), True


def csrf_token(settings: Settings, identity: str) -> str:
    return _mac(settings, 'csrf', identity)


def csrf_problem(settings: Settings, request: Request, form_token: str) -> str | None:
    """Why an action request may be forged (None: it is not)."""
    origin = request.headers.get('origin')
    hosts = {request.headers.get('host', ''), request.headers.get('x-forwarded-host', '')} - {''}
    if origin and origin != 'null' and urlsplit(origin).netloc not in hosts:
        return f'the request came from another site ({origin})'
    if request.headers.get('sec-fetch-site', 'same-origin') not in ('same-origin', 'none'):
        return 'the browser says the request came from another site'
    identity = request.cookies.get(CSRF_COOKIE, '')
    if not identity:
        return 'the form has no session cookie: reload the page and try again'
    if not form_token or not _same(form_token, csrf_token(settings, identity)):
        return 'the form is stale or forged (its CSRF token does not match): reload the page and try again'
    return None
