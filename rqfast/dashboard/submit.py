"""POST /actions/<name>: checked (read-only mode, CSRF, the target), asked (a confirmation page), then done.

The first POST of an action only renders its question: nothing is written until the confirmation
form (the same fields, `confirm=yes` and a fresh CSRF token) comes back. Then the action runs and
the browser goes back where it came from (303), where a notice says what was done.
"""

from __future__ import annotations

from urllib.parse import parse_qs, quote

from starlette.concurrency import run_in_threadpool
from starlette.requests import Request
from starlette.responses import RedirectResponse, Response

from ..text import as_text
from . import guard
from .actions import ACTIONS, Action, ActionError, Target, check
from .state import NOTICE_COOKIE, Dashboard, dashboard_of, href

FORM_LIMIT = 16 * 1024  # bytes of a form: a few short fields


async def action(request: Request) -> Response:
    dashboard = dashboard_of(request)
    found = ACTIONS.get(request.path_params['action'])
    if found is None:
        return _refused(dashboard, request, 'No such action.', 404)
    if dashboard.settings.read_only:
        return _refused(dashboard, request, 'This dashboard is read-only: it changes nothing.', 403)
    body = await request.body()
    if len(body) > FORM_LIMIT:
        return _refused(dashboard, request, 'The form is too large.', 413)
    form = {name: values[0] for name, values in parse_qs(as_text(body)).items()}
    problem = guard.csrf_problem(dashboard.settings, request, form.get('csrf', ''))
    if problem:
        return _refused(dashboard, request, f'Refused: {problem}.', 403)
    target = Target(queue=form.get('queue', ''), job_id=form.get('job_id', ''))
    back = _back(request, form.get('next', ''))
    return await run_in_threadpool(_answer, dashboard, request, found, target, form.get('confirm') == 'yes', back)


def _answer(
    dashboard: Dashboard, request: Request, found: Action, target: Target, confirmed: bool, back: str
) -> Response:
    try:
        check(found, target, dashboard.queue_names())
        if not confirmed:
            context = {'action': found, 'target': target, 'question': found.question(dashboard.settings, target)}
            return dashboard.render(request, 'confirm.html', {**context, 'next': back})
        message = found.perform(dashboard.settings, target)
    except ActionError as exc:
        return _refused(dashboard, request, str(exc), 409)
    response = RedirectResponse(back, status_code=303)
    path = request.scope.get('root_path', '') or '/'
    response.set_cookie(NOTICE_COOKIE, quote(message), max_age=60, httponly=True, samesite='strict', path=path)
    return response


def _back(request: Request, wanted: str) -> str:
    """Where to go after the action: the page it was asked from, if it is one of this dashboard's."""
    root = str(request.scope.get('root_path', '')).rstrip('/')
    if wanted.startswith(root + '/') and not wanted.startswith('//') and '\\' not in wanted and '\n' not in wanted:
        return wanted
    return href(request, 'overview')


def _refused(dashboard: Dashboard, request: Request, message: str, status: int) -> Response:
    return dashboard.render(request, 'message.html', {'title': 'Not done', 'message': message}, status)
