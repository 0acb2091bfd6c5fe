"""The `store_attachments` activity's input and result: a request's images and documents that
arrived with their bytes, and the same blocks once stored."""

from __future__ import annotations

from pydantic import Field
from turnkeeper.contracts.attachments import DocumentBlock, ImageBlock
from turnkeeper.contracts.claim_check import ClaimChecked
from turnkeeper.contracts.contract_model import ContractModel

AttachmentBlocks = list[ImageBlock | DocumentBlock]


class StoreAttachmentsInput(ContractModel, ClaimChecked):
    """Claim-checked: the bytes it carries go to the content store, not into history again."""

    blocks: AttachmentBlocks
    """The request's image and document blocks, in order (stored ones pass through)."""
    providers: list[str] = Field(default_factory=list)
    """The kinds of API the turn's models speak (`anthropic`, `openai`): each must take every
    attachment's media type."""


class StoreAttachmentsResult(ContractModel):
    """The same blocks, each with a `stored` source."""

    blocks: AttachmentBlocks
    """In the input's order."""
