"""What tests/test_async_examples.py runs in a subprocess for the Django example (Django's settings are
process-wide, and other tests configure their own): requests through the example's ASGI application.

`python -m tests.django_async_run <redis url> <result timeout>` prints one JSON line: the answers.
"""

from __future__ import annotations

import asyncio
import json
import os
import sys


async def main() -> list[object]:
    import httpx

    from examples import django_async_view

    transport = httpx.ASGITransport(app=django_async_view.application)
    async with httpx.AsyncClient(transport=transport, base_url='http://example') as client:
        answer = await client.get('/add', params={'a': 20, 'b': 22})
        return [answer.status_code, answer.json()]


if __name__ == '__main__':
    os.environ['REDIS_URL'], os.environ['RESULT_TIMEOUT'] = sys.argv[1], sys.argv[2]
    print(json.dumps(asyncio.run(main())))
