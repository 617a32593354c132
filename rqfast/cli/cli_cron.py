"""`rqfast cron CONFIG_PATH`: RQ's `rq cron` (same options and output), running rqfast's CronScheduler."""

from __future__ import annotations

import logging
import logging.config
import sys

import click

from ..as_rq import logger_name
from ..cron import CronScheduler
from .config import CliConfig, pass_cli_config
from .errors import CliError
from .settings import read_settings

__all__ = ['CronScheduler', 'cron']  # CronScheduler: looked up here when the command runs (tests patch it)


@click.command()
@click.option(
    '--logging-level',
    '-l',
    type=click.Choice(['DEBUG', 'INFO', 'WARNING', 'ERROR', 'CRITICAL'], case_sensitive=False),
    default='INFO',
    show_default=True,
    help='Set logging level.',
)
@click.argument('config_path')
@pass_cli_config
def cron(cli_config: CliConfig, logging_level: str, config_path: str) -> None:
    """Starts the RQ cron scheduler (rqfast's).

    Requires a configuration file or module path defining the cron jobs (`rqfast.cron.register` or
    `rq.cron.register` calls). Logging level is controlled by the --logging-level option.
    """
    settings = read_settings(cli_config.config) if cli_config.config else {}
    dict_config = settings.get('DICT_CONFIG')
    if dict_config:
        logging.config.dictConfig(dict_config)
        logging.getLogger(logger_name('cron')).info('Logging configured via DICT_CONFIG setting.')
    try:
        scheduler = CronScheduler(connection=cli_config.connection, logging_level=logging_level)
        try:
            scheduler.load_config_from_file(config_path)
        except Exception as exc:  # a missing file or a config that fails: rq's traceback, as one line
            raise CliError(str(exc) or type(exc).__name__) from exc
        scheduler.start()
    except KeyboardInterrupt:
        click.echo('\nShutting down cron scheduler...')
        sys.exit(0)
