import asyncio
import inspect
from collections.abc import Callable, Mapping

import pytest
from hypothesis import HealthCheck, settings

from tests.fake_clock import FakeClockLoop

# kcpsim's fixtures (`kcpsim`, `kcpsim_factory`) for the integration tests.
pytest_plugins = ["kcpsim.fixtures"]

# Shared CI machines are noisy: a per-example deadline would make property tests flaky.
settings.register_profile("default", deadline=None, suppress_health_check=[HealthCheck.too_slow])
settings.load_profile("default")

# An async test that hangs (a task waiting for an event nobody sets) fails after this long
# instead of stalling the run; a test that needs longer says so with its own timeout mark.
ASYNC_TEST_TIMEOUT = 60


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    for item in items:
        if (
            isinstance(item, pytest.Function)
            and inspect.iscoroutinefunction(item.function)
            and item.get_closest_marker("timeout") is None
        ):
            item.add_marker(pytest.mark.timeout(ASYNC_TEST_TIMEOUT))


def pytest_configure(config: pytest.Config) -> None:
    config.addinivalue_line(
        "markers", "fake_clock: run this async test on an event loop with a fake clock (tests/fake_clock.py)"
    )


def pytest_asyncio_loop_factories(
    config: pytest.Config, item: pytest.Item
) -> Mapping[str, Callable[[], asyncio.AbstractEventLoop]]:
    if item.get_closest_marker("fake_clock") is not None:
        return {"fake-clock": FakeClockLoop}
    return {"asyncio": asyncio.new_event_loop}
