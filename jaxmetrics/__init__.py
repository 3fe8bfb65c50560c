"""jaxmetrics."""
