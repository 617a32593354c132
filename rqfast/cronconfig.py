"""Cron configs (`rqfast cron CONFIG`): `register` (rqfast.cron.register), which a config calls to declare a
job, and importing a config by file path or dotted module path and registering what it declares, as RQ's
CronScheduler.load_config_from_file does."""

from __future__ import annotations

import importlib
import importlib.util
import logging
import os
import sys
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Any

from .as_rq import logger_name
from .defaults import DEFAULT_RESULT_TTL
from .imports import normalize_config_path, validate_absolute_path

if TYPE_CHECKING:
    from .webhook import Webhook

logger = logging.getLogger(logger_name('cron'))  # register logs as the scheduler does


def import_config(config_path: str, log: logging.Logger) -> None:
    """Run the config module: an absolute path is loaded as a file (module rq_cron_config_<name>, as RQ
    names it); anything else is made a dotted path and imported, or reloaded when imported already.
    ImportError (or the module's own exception, re-raised with the path) when it fails."""
    if os.path.isabs(config_path):
        log.debug(f'Loading absolute file path: {config_path}')
        validate_absolute_path(config_path)
        module_name = f'rq_cron_config_{os.path.basename(config_path).replace(".", "_")}'
        spec = importlib.util.spec_from_file_location(module_name, config_path)
        if spec is None or spec.loader is None:
            message = f'Could not create module spec for {config_path}'
            log.error(message)
            raise ImportError(message)
        module = importlib.util.module_from_spec(spec)
        sys.modules[module_name] = module
        try:
            spec.loader.exec_module(module)
        except Exception as exc:
            sys.modules.pop(module_name, None)
            message = f"Failed to load configuration file '{config_path}': {exc}"
            log.error(message)
            raise ImportError(message) from exc
        log.debug(f'Successfully loaded config from file: {config_path}')
        return
    dotted = normalize_config_path(config_path)
    log.debug(f'Normalized path: {dotted}')
    try:
        if dotted in sys.modules:
            importlib.reload(sys.modules[dotted])
        else:
            importlib.import_module(dotted)
        log.debug(f'Successfully loaded config from module: {dotted}')
    except ImportError as exc:
        message = f"Failed to import configuration module '{dotted}' (from '{config_path}'): {exc}"
        log.error(message)
        raise ImportError(message) from exc
    except Exception as exc:
        message = f"An error occurred while importing '{dotted}' (from '{config_path}'): {exc}"
        log.error(message)
        raise Exception(message) from exc


def register_config(config_path: str, register_job: Callable[..., Any], log: logging.Logger) -> int:
    """Import a cron config and hand each job it declares (with rqfast.cron.register, or rq.cron.register)
    to `register_job(**declaration)`; a job that fails to register is logged and skipped. How many registered."""
    _job_data_registry.clear()
    taken_from_rq()  # declarations left over in rq.cron are not this config's
    try:
        import_config(config_path, log)
        count = 0
        for data in _job_data_registry + taken_from_rq():
            log.debug(f'Registering job from config: {data["func"].__name__}')
            try:
                register_job(**data)
                count += 1
            except Exception as exc:  # noqa: BLE001 - RQ logs a bad entry and goes on
                log.error(f'Failed to register job {data["func"].__name__} from config: {exc}', exc_info=True)
    finally:
        _job_data_registry.clear()
    return count


def taken_from_rq() -> list[dict[str, Any]]:
    """The jobs a config written for RQ (`from rq import cron`) declared with rq.cron.register, taken
    from rq's list (when rq is imported): such a config runs unchanged under `rqfast cron`."""
    theirs = getattr(sys.modules.get('rq.cron'), '_job_data_registry', None)
    if not isinstance(theirs, list):
        return []
    taken = theirs[:]
    theirs.clear()
    return taken


# What `register` calls (in a config file) collect, until a scheduler takes them.
_job_data_registry: list[dict[str, Any]] = []


def register(
    func: Callable[..., Any],
    queue_name: str,
    args: tuple[Any, ...] | None = None,
    kwargs: dict[str, Any] | None = None,
    interval: int | None = None,
    cron: str | None = None,
    job_timeout: int | None = None,
    result_ttl: int = DEFAULT_RESULT_TTL,
    ttl: int | None = None,
    failure_ttl: int | None = None,
    meta: dict[str, Any] | None = None,
    webhooks: Sequence[Webhook] | None = None,
    name: str = '',
) -> dict[str, Any]:
    """Declare a cron job (in a config file: `cron.register(my_func, 'default', interval=60)`); the
    scheduler that loads the file, or create_cron, registers it. The declaration is returned."""
    data = dict(
        func=func, queue_name=queue_name, args=args, kwargs=kwargs, interval=interval, cron=cron,
        job_timeout=job_timeout, result_ttl=result_ttl, ttl=ttl, failure_ttl=failure_ttl, meta=meta,
        webhooks=webhooks, name=name,
    )  # fmt: skip
    _job_data_registry.append(data)
    logger.debug(f"Cron config: Adding job '{func.__module__}.{func.__name__}' to registry for queue {queue_name}")
    return data
