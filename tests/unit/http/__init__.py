"""Unit tests of the HTTP API (turnkeeper/http)."""
