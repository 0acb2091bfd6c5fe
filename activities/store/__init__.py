"""The stored conversation, as activities (the content store itself is `turnkeeper.payloads`).

- `conversation_store`: the conversation as a chain of content-addressed nodes.
- `conversation_activity`: the activities that read and write it without a model call.
"""
