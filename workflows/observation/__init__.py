"""How a turn and a session are seen from outside, each channel replay-safe on its own.

`turn_observer.py` is the one place the loop reports a step; it feeds every channel: the turn
record (`turn_record.py`, structured log lines), the event stream, search attributes and current
details (`turn_view.py`, its stream kept bounded by `stream_retention.py`), the span
(`turn_tracing.py`), the metrics (`turn_metrics.py`) and the session's note of the turn's waits
(`session_notes.py`). `session_view.py` is the session's own search attributes and details.
"""
