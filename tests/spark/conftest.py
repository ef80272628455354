"""Spark tests: one local SparkSession for the whole run, one server of each kind.

Every test module here marks its Spark tests ``xdist_group("spark")`` so that under
``pytest -n 2 --dist loadgroup`` they share one worker, hence one SparkSession (a JVM).
Servers are session-scoped and parametrized over both targets; tests use their own stream
names, so they never see each other's data.
"""

from __future__ import annotations

import itertools
import shutil
from collections.abc import Iterator
from pathlib import Path

import pytest

pytest.importorskip("pyspark")
pytest.importorskip("pyarrow")

from tests.support.targets import KINDS, Target, make_target

_names = itertools.count(1)


@pytest.hookimpl(wrapper=True)
def pytest_runtest_call(item: pytest.Item) -> Iterator[None]:
    """A test interrupted in the middle of a py4j call (pytest-timeout's ``Failed`` is a
    BaseException, which py4j's ``except Exception`` lets through) leaves the main thread's py4j
    connection with an answer still to come: every later call on it would read the answer of the
    call before (``KeyError: 'c'``, ``SparkSession does not exist in the JVM``) and the rest of the
    worker's Spark tests would fail. Drop that connection (py4j opens a fresh one on the next call),
    cancel the interrupted jobs and stop streaming queries the test left running."""
    try:
        return (yield)
    except BaseException as exc:
        if not isinstance(exc, Exception) and not isinstance(exc, pytest.skip.Exception):
            _recover_py4j()
        raise


def _recover_py4j() -> None:
    from pyspark import SparkContext
    from pyspark.sql import SparkSession

    context = SparkContext._active_spark_context
    if context is None or context._gateway is None:
        return
    client = context._gateway._gateway_client
    connection = client.get_thread_connection() if hasattr(client, "get_thread_connection") else None
    if connection is not None:
        connection.close(reset=True)
    context.cancelAllJobs()
    session = SparkSession.getActiveSession()
    if session is not None:
        for query in session.streams.active:
            query.stop()


@pytest.fixture(scope="session")
def spark() -> Iterator[object]:
    if shutil.which("java") is None:
        pytest.skip("java is not installed (scripts/setup.sh installs default-jre-headless)")
    from pyjetstream.spark import local_session

    # local[2,2]: a failed task is retried once, as on a cluster (the retry tests rely on it).
    session = local_session("pyjetstream-tests", cores=2, shuffle_partitions=2, max_task_failures=2)
    yield session
    session.stop()


@pytest.fixture(scope="session", params=KINDS)
def js_server(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Target]:
    """A JetStream server of each kind, shared by the Spark tests."""
    target = make_target(request.param, tmp_path_factory.mktemp(f"spark-{request.param}"))
    yield target
    target.stop()


@pytest.fixture
def stream_name() -> str:
    return f"SP{next(_names)}"


@pytest.fixture
def checkpoint(tmp_path: Path) -> str:
    return str(tmp_path / "checkpoint")
