"""The database: engine and sessions, SQLAlchemy models, migrations."""
