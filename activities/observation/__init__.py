"""How activities are seen from outside: OpenInference spans of model and tool calls, the
matching OpenTelemetry metrics, and message contents as span attributes.
"""
