"""Tests of turnkeeper.payloads: the content store, encryption and the data converter."""
