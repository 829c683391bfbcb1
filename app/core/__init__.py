"""Configuration and process-wide concerns of the service."""
