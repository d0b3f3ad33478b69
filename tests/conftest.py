from hypothesis import HealthCheck, settings

# Shared CI machines are noisy: a per-example deadline would make property tests flaky.
settings.register_profile("default", deadline=None, suppress_health_check=[HealthCheck.too_slow])
settings.load_profile("default")
