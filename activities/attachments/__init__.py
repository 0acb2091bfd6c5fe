"""Images and documents on the worker: stored on first sight (`store_activity`) and read back
for the provider (`resolve`)."""
