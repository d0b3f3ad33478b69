"""End-to-end tests: the servlet daemon as a real subprocess against an in-process kcpsim."""
