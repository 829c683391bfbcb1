"""The HTTP API: dependencies, error handling, one router per resource."""
