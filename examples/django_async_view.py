"""A Django async view that enqueues a job and awaits its result (docs/async.md), as one file.

    pip install django 'rqfast[examples]'
    rqfast worker --url redis://localhost:6379/0 &          # runs the jobs
    uvicorn examples.django_async_view:application           # from the repository's root (ASGI)
    curl 'localhost:8000/add?a=1&b=2'                         # {"job_id": "...", "result": 3}

In a project of your own, the view goes in a views.py and the queue helper in any module: a redis.asyncio
client belongs to the event loop it runs in, so there is one AsyncQueue per loop (an ASGI server runs
one; `runserver` under WSGI runs each async view in a loop of its thread).
"""

from __future__ import annotations

import asyncio
import os
import sys
import weakref

import django
import redis.asyncio as aredis
from django.conf import settings
from django.core.asgi import get_asgi_application
from django.http import HttpRequest, JsonResponse
from django.urls import path

from examples.quickstart_jobs import add
from rqfast.asyncio import AsyncQueue, JobFailedError

if not settings.configured:
    settings.configure(
        DEBUG=False,
        SECRET_KEY='an example: use your own',
        ROOT_URLCONF=__name__,
        ALLOWED_HOSTS=['*'],
        INSTALLED_APPS=[],
        MIDDLEWARE=[],
    )
    django.setup()

REDIS_URL = os.environ.get('REDIS_URL', 'redis://localhost:6379/0')
RESULT_TIMEOUT = float(os.environ.get('RESULT_TIMEOUT', '10'))

_queues: weakref.WeakKeyDictionary[asyncio.AbstractEventLoop, AsyncQueue] = weakref.WeakKeyDictionary()


def queue() -> AsyncQueue:
    """This loop's AsyncQueue (made on first use in the loop)."""
    loop = asyncio.get_running_loop()
    found = _queues.get(loop)
    if found is None:
        found = _queues[loop] = AsyncQueue('default', connection=aredis.Redis.from_url(REDIS_URL))
    return found


async def add_numbers(request: HttpRequest) -> JsonResponse:
    job = await queue().enqueue(add, int(request.GET['a']), int(request.GET['b']), result_ttl=60)
    try:
        result = await job.result(timeout=RESULT_TIMEOUT)
    except TimeoutError:
        return JsonResponse({'job_id': job.id, 'error': 'no result yet'}, status=504)
    except JobFailedError as exc:
        return JsonResponse({'job_id': job.id, 'error': str(exc)}, status=500)
    return JsonResponse({'job_id': job.id, 'result': result})


urlpatterns = [path('add', add_numbers)]

application = get_asgi_application()

if __name__ == '__main__':
    from django.core.management import execute_from_command_line

    execute_from_command_line(sys.argv)
