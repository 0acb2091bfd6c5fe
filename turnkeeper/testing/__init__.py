"""Fake provider servers for tests and benchmarks: local HTTP stand-ins for the Anthropic Messages
API (`fake_anthropic`) and the OpenAI Chat Completions API (`fake_openai`), scripted per turn, that
answer, bill and refuse as the real APIs document and check every request the runtime sends.

Both the test suite and `bench/` import them from here (neither imports the other); nothing here
imports pytest, the tests or the bench. `turn_outcomes` holds what a test asserts a turn ended in.
"""
