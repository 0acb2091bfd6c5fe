"""How a turn's payloads are stored and read, the one home of what clients, workers and
activities all need to read them: the content store, encryption and the data converter.
Activities may import it; workflows may not (they see only what the converter hands them).

- `content_store`: the content-addressed store (the claim check), on a local folder.
- `s3_store`: the content store on S3 or an S3-compatible service.
- `encrypted_store`: a content store that keeps only ciphertext.
- `stores`: the store a deployment names: its variables (`StoreSettings`), and the store opened.
- `keyring`: the deployment's encryption keys (`TURNKEEPER_ENCRYPTION_KEYS`).
- `encryption_codec`: the payload codec that encrypts what a turn sends to the server.
- `payload_driver`: Temporal's external storage over the content store.
- `payload_storage`: what stays out of history, and the data converter that keeps it out.
"""
