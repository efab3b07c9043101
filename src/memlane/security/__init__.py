"""Input validation and, later, injection detection and audit."""
