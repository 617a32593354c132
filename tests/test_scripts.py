"""The script loader: EVALSHA, and a reload when Redis has forgotten a script (restart, SCRIPT FLUSH)."""

from __future__ import annotations

import redis

from rqfast import Queue, SimpleWorker, scripts
from rqfast.job import JobStatus


def test_a_flushed_script_is_loaded_again(connection: redis.Redis) -> None:
    queue = Queue('flush', connection=connection)
    first = queue.enqueue('operator.add', 1, 2)
    connection.script_flush()

    second = queue.enqueue('operator.add', 3, 4)

    assert queue.job_ids == [first.id, second.id]


def test_the_worker_line_reloads_a_flushed_script(redis_conn: redis.Redis) -> None:
    line = scripts.DirectLine(redis_conn)
    queue = Queue('flush', connection=redis_conn)
    job = queue.enqueue('operator.add', 1, 2)
    redis_conn.script_flush()

    answer = scripts.script('empty_queue')(line, ['flush'])
    line.close()

    assert answer == 1
    assert not redis_conn.exists(job.key)


def test_a_worker_goes_on_after_its_scripts_are_flushed(redis_conn: redis.Redis) -> None:
    queue = Queue('flush', connection=redis_conn)
    jobs = [queue.enqueue('operator.add', i, 1) for i in range(3)]
    redis_conn.script_flush()

    SimpleWorker([queue], connection=redis_conn).work(burst=True, logging_level='WARNING')

    assert [job.get_status() for job in jobs] == [JobStatus.FINISHED] * 3
    assert [job.return_value() for job in jobs] == [1, 2, 3]


def test_a_spliced_command_is_the_command_packed_whole() -> None:
    """What the worker line sends for pre-packed runs of arguments is byte for byte execute_command's."""
    from hiredis import pack_command

    from rqfast.scriptload import Packed, packed

    sent: list[bytes] = []

    class Line:
        def send_packed_command(self, chunks: list[bytes], check_health: bool = True) -> None:
            sent.extend(chunks)

        def read_response(self) -> str:
            return 'ok'

    line = scripts.DirectLine.__new__(scripts.DirectLine)
    line._pack = pack_command
    line._client = type('Client', (), {'connection': Line()})()
    runs: list[list[object]] = [['EVALSHA', 'f' * 40, 0], ['é', 1, 2.5, b'\x80\x04N.', ''], [], ['last', 7]]
    pieces: list[object] = [runs[0], packed(runs[1]), runs[2], packed(runs[3])]

    assert isinstance(pieces[1], Packed)
    assert line.execute_spliced(pieces) == 'ok'
    assert sent == [pack_command(tuple(a for run in runs for a in run))]
