"""SQL shared by the SQLite and PostgreSQL stores, written once over a dialect (``dialect.py``)."""
