"""The application: CLI, daemon, controllers."""
