"""The public vocabulary of turnkeeper: request/report models, messages, signal payloads,
activity inputs and results, and error-type constants. No I/O lives here, so workflows,
activities, the console command and the tests can all import it.
"""
