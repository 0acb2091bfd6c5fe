/**
 * turnkeeper's payload encryption, written from its reference alone (docs/other-languages.md):
 * an encrypted payload has metadata `encoding: binary/encrypted` and `encryption-key-id: <id>`,
 * and its data is `nonce (12 bytes) | AES-256-GCM ciphertext | tag (16 bytes)` of the original
 * payload serialized as the protobuf `temporal.api.common.v1.Payload`, with no associated data.
 * The keys come as `TURNKEEPER_ENCRYPTION_KEYS="<id>:<base64 of 32 bytes>,…"`: the first key
 * encrypts, every key listed decrypts.
 */
import { createCipheriv, createDecipheriv, randomBytes } from 'node:crypto';

import type { Payload, PayloadCodec } from '@temporalio/common';
import proto from '@temporalio/proto';

const ProtoPayload = proto.temporal.api.common.v1.Payload;

export const ENCODING = 'binary/encrypted';
export const KEY_ID_METADATA = 'encryption-key-id';
const NONCE_BYTES = 12;
const TAG_BYTES = 16;
const KEY_BYTES = 32;

/** The keys of `TURNKEEPER_ENCRYPTION_KEYS`, in order: the first one encrypts. */
export function parseKeys(text: string): Map<string, Buffer> {
  const keys = new Map<string, Buffer>();
  for (const entry of text.split(',').map((e) => e.trim()).filter(Boolean)) {
    const colon = entry.indexOf(':');
    const id = entry.slice(0, colon);
    const secret = Buffer.from(entry.slice(colon + 1), 'base64');
    if (colon < 1 || secret.length !== KEY_BYTES) {
      // Names the entry's position only: an entry may be a key.
      throw new Error(`TURNKEEPER_ENCRYPTION_KEYS: entry ${keys.size + 1} is not <id>:<base64 of 32 bytes>`);
    }
    keys.set(id, secret);
  }
  return keys;
}

export class EncryptionCodec implements PayloadCodec {
  private readonly keyId: string;

  constructor(private readonly keys: Map<string, Buffer>) {
    const [first] = keys.keys();
    if (first === undefined) throw new Error('TURNKEEPER_ENCRYPTION_KEYS holds no key');
    this.keyId = first;
  }

  async encode(payloads: Payload[]): Promise<Payload[]> {
    return payloads.map((payload) => this.encrypt(payload));
  }

  async decode(payloads: Payload[]): Promise<Payload[]> {
    return payloads.map((payload) => this.decrypt(payload));
  }

  encrypt(payload: Payload): Payload {
    const nonce = randomBytes(NONCE_BYTES);
    const cipher = createCipheriv('aes-256-gcm', this.keys.get(this.keyId)!, nonce);
    const plain = ProtoPayload.encode(payload).finish();
    const sealed = Buffer.concat([nonce, cipher.update(plain), cipher.final(), cipher.getAuthTag()]);
    return {
      metadata: { encoding: utf8(ENCODING), [KEY_ID_METADATA]: utf8(this.keyId) },
      data: sealed,
    };
  }

  decrypt(payload: Payload): Payload {
    const metadata = payload.metadata ?? {};
    if (text(metadata.encoding) !== ENCODING) return payload; // written before encryption was on
    const keyId = text(metadata[KEY_ID_METADATA]);
    const key = this.keys.get(keyId);
    if (key === undefined) {
      throw new Error(
        `content is encrypted with key '${keyId}', which TURNKEEPER_ENCRYPTION_KEYS does not list here`,
      );
    }
    const data = Buffer.from(payload.data ?? new Uint8Array());
    const decipher = createDecipheriv('aes-256-gcm', key, data.subarray(0, NONCE_BYTES));
    decipher.setAuthTag(data.subarray(data.length - TAG_BYTES));
    const plain = Buffer.concat([
      decipher.update(data.subarray(NONCE_BYTES, data.length - TAG_BYTES)),
      decipher.final(), // throws when the key or the bytes are not the ones it was sealed with
    ]);
    return ProtoPayload.decode(plain);
  }
}

function utf8(value: string): Uint8Array {
  return new TextEncoder().encode(value);
}

function text(value: Uint8Array | null | undefined): string {
  return value ? new TextDecoder().decode(value) : '';
}
