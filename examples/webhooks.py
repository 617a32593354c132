"""Webhooks: a job that finishes and one that fails, each telling a local HTTP endpoint.

Run from the repository root after `python -m pip install .`:

    python examples/webhooks.py

It starts a small HTTP receiver on a free loopback port (standing in for your service), enqueues
two jobs with webhooks, works them with a forking rqfast Worker and prints what the receiver got.
Redis as in examples/quickstart.py ($REDIS_URL, else a private redis-server).
"""

from __future__ import annotations

import json
import sys
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

import quickstart  # noqa: E402
import quickstart_jobs  # noqa: E402

from rqfast import Queue, Webhook, Worker  # noqa: E402


class Receiver(BaseHTTPRequestHandler):
    def do_POST(self) -> None:
        body = self.rfile.read(int(self.headers.get('Content-Length') or 0))
        payload = json.loads(body)
        if 'exc_info' in payload:
            payload['exc_info'] = payload['exc_info'].strip().splitlines()[-1]  # the traceback's last line
        print(f'received {self.command} {self.path}: {json.dumps(payload, indent=2)}')
        self.send_response(204)
        self.end_headers()

    do_GET = do_POST

    def log_message(self, format: str, *args: Any) -> None:
        pass


def main() -> int:
    server = ThreadingHTTPServer(('127.0.0.1', 0), Receiver)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    url = f'http://127.0.0.1:{server.server_address[1]}'
    hooks = [
        Webhook(f'{url}/done', 'finished', method='POST', headers={'Authorization': 'Bearer demo'}),
        Webhook(f'{url}/failed', 'failed', method='POST', timeout=5),
    ]
    queue = Queue('webhooks-example', connection=quickstart.connect())
    queue.enqueue(quickstart_jobs.add, 2, 3, webhooks=hooks)
    queue.enqueue(quickstart_jobs.add, 2, 'three', webhooks=hooks)  # TypeError: the failed webhook
    worker = Worker([queue], connection=queue.connection)
    worker.work(burst=True, logging_level='CRITICAL')  # quiet: the receiver prints; sent before work() returns
    server.shutdown()
    return 0


if __name__ == '__main__':
    sys.exit(main())
