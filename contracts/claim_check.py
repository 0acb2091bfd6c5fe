"""The marker of payloads that carry bulk conversation content.

Such a payload is kept out of workflow history by the data converter once it reaches a small
size (see `turnkeeper/payloads/payload_storage.py`): its content is in the content store, and a
person reads it in the final report, the `transcript` query or the event stream instead.
"""


class ClaimChecked:
    """Mixed into a model whose instances are claim-checked when large."""
