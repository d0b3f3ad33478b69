from hypothesis import HealthCheck, settings

# kcpsim's fixtures (`kcpsim`, `kcpsim_factory`) for the integration tests.
pytest_plugins = ["kcpsim.fixtures"]

# Shared CI machines are noisy: a per-example deadline would make property tests flaky.
settings.register_profile("default", deadline=None, suppress_health_check=[HealthCheck.too_slow])
settings.load_profile("default")
