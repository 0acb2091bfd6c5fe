"""The model providers behind the model-call activity: one `ModelProvider` per API, and the
table of them a worker serves.

- `provider`: the seam: `ModelProvider`, `ModelRequest`, `ModelResponse`, classified failures.
- `anthropic_provider`: the Anthropic Messages API.
- `openai_provider`: any OpenAI-compatible Chat Completions endpoint.
- `openai_messages`: our conversation as Chat Completions messages, and back.
- `demo_provider`: the offline demo model, no key, no network.
- `endpoints`: the built-in providers and the named endpoints of `TURNKEEPER_PROVIDERS`.
- `redaction`: a provider's credentials kept out of the failures a call raises.
- `rotating_key`: a provider whose key comes from a file or a command, read again after a 401.
- `cassette_provider`: every provider behind a cassette that records or replays its calls;
  `cassette_key` (what identifies a call, the nearest difference) and `cassette_file` (the
  file format, locked appends) beside it.
"""
