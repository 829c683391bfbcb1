"""svmsvc's service: the FastAPI application, its database, job execution and the CLI."""
