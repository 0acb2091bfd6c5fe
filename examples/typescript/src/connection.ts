/**
 * A Temporal client configured as turnkeeper's clients are: the server and namespace from
 * `TEMPORAL_ADDRESS` and `TEMPORAL_NAMESPACE`, and payloads encrypted either here, with the
 * deployment's keys (`TURNKEEPER_ENCRYPTION_KEYS`), or by a `turnkeeper codec-server`
 * (`TEMPORAL_CODEC_ENDPOINT`, with `TEMPORAL_CODEC_AUTH` when it has a token: the variables the
 * `temporal` CLI reads). Neither set: payloads travel as plain JSON.
 */
import { Client, Connection } from '@temporalio/client';
import type { PayloadCodec } from '@temporalio/common';

import { EncryptionCodec, parseKeys } from './codec.js';
import { RemoteCodec } from './remote-codec.js';

export interface Settings {
  address: string;
  namespace: string;
  taskQueue: string;
}

export function settings(env: NodeJS.ProcessEnv = process.env): Settings {
  return {
    address: env.TEMPORAL_ADDRESS || 'localhost:7233',
    namespace: env.TEMPORAL_NAMESPACE || 'default',
    taskQueue: env.AGENT_TASK_QUEUE || 'agent-turns',
  };
}

export function codecs(namespace: string, env: NodeJS.ProcessEnv = process.env): PayloadCodec[] {
  const keys = env.TURNKEEPER_ENCRYPTION_KEYS;
  const endpoint = env.TEMPORAL_CODEC_ENDPOINT;
  if (keys && endpoint) {
    throw new Error('set TURNKEEPER_ENCRYPTION_KEYS or TEMPORAL_CODEC_ENDPOINT, not both');
  }
  if (keys) return [new EncryptionCodec(parseKeys(keys))];
  if (endpoint) return [new RemoteCodec(endpoint, namespace, env.TEMPORAL_CODEC_AUTH)];
  return [];
}

export async function connect(
  env: NodeJS.ProcessEnv = process.env,
): Promise<{ client: Client; settings: Settings }> {
  const chosen = settings(env);
  const connection = await Connection.connect({ address: chosen.address });
  const client = new Client({
    connection,
    namespace: chosen.namespace,
    dataConverter: { payloadCodecs: codecs(chosen.namespace, env) },
  });
  return { client, settings: chosen };
}
