/**
 * The same encryption done by `turnkeeper codec-server`, for a client that should not hold the
 * keys: Temporal's remote codec protocol, `POST /encode` and `POST /decode` with proto-JSON
 * `Payloads` (`{"payloads": [{"metadata": {"<name>": "<base64>"}, "data": "<base64>"}]}`), the
 * `X-Namespace` header, and `Authorization` when the server has a token. `/decode` also resolves
 * content-store references, so a report too large for history arrives whole.
 */
import type { Payload, PayloadCodec } from '@temporalio/common';
import proto from '@temporalio/proto';

const Payloads = proto.temporal.api.common.v1.Payloads;

export class RemoteCodec implements PayloadCodec {
  constructor(
    private readonly endpoint: string,
    private readonly namespace: string,
    private readonly authorization?: string,
  ) {}

  async encode(payloads: Payload[]): Promise<Payload[]> {
    return this.call('/encode', payloads);
  }

  async decode(payloads: Payload[]): Promise<Payload[]> {
    return this.call('/decode', payloads);
  }

  private async call(path: string, payloads: Payload[]): Promise<Payload[]> {
    if (payloads.length === 0) return payloads;
    const body = Payloads.toObject(Payloads.fromObject({ payloads }), { bytes: String });
    const headers: Record<string, string> = {
      'Content-Type': 'application/json',
      'X-Namespace': this.namespace,
    };
    if (this.authorization) headers.Authorization = this.authorization;
    const response = await fetch(new URL(path, this.endpoint), {
      method: 'POST',
      headers,
      body: JSON.stringify(body),
    });
    if (!response.ok) {
      throw new Error(`the codec server answered ${path} with ${response.status}: ${await response.text()}`);
    }
    return Payloads.fromObject(await response.json()).payloads;
  }
}
