"""The pure core: every decision of the servlet, computed as data."""
