"""What a turn or a session accepts: its handlers' payloads decoded and validated,
payloads that arrived unencrypted at a worker requiring encryption refused, and where a turn may
run (its id, its parent), and which schedule started it.
"""
