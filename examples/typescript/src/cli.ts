/**
 * `node dist/cli.js <command>`: one turn operation per command, each printing JSON on stdout.
 *
 *   start --request FILE [--id ID]             starts the TurnRequest in FILE; prints its id
 *   status ID                                  the status query
 *   wait ID --state STATE                      polls the status until the turn is in STATE
 *   decide ID --call CALL_ID (--approve | --reject) [--reason TEXT] [--approver NAME]
 *   result ID                                  waits for the AgentReport
 *   run --request FILE [--approver NAME]       start, approve every call it asks about, result
 *
 * Exit status: 0; 1 when the turn failed or something else went wrong; 2 when the turn refused
 * the decision. A failure is printed on stderr as {"error": {"type", "message"}}.
 */
import { readFileSync } from 'node:fs';
import { parseArgs } from 'node:util';

import type { Client } from '@temporalio/client';

import { connect } from './connection.js';
import type { TurnRequest, TurnStatus } from './contract.js';
import {
  DecisionRefused,
  TurnFailed,
  decide,
  startTurn,
  turnResult,
  turnStatus,
  waitForStatus,
} from './turns.js';

const ENDED = new Set(['completed', 'interrupted', 'failed', 'cancelled']);

async function main(argv: string[]): Promise<unknown> {
  const [command, ...rest] = argv;
  const { values, positionals } = parseArgs({
    args: rest,
    allowPositionals: true,
    options: {
      request: { type: 'string' },
      id: { type: 'string' },
      state: { type: 'string' },
      call: { type: 'string' },
      approve: { type: 'boolean' },
      reject: { type: 'boolean' },
      reason: { type: 'string' },
      approver: { type: 'string' },
    },
  });
  const { client, settings } = await connect();
  const workflowId = positionals[0];
  switch (command) {
    case 'start':
      return { workflow_id: await startTurn(client, settings.taskQueue, request(values.request), values.id) };
    case 'status':
      return turnStatus(client, required(workflowId, 'a workflow id'));
    case 'wait':
      return waitForStatus(client, required(workflowId, 'a workflow id'), (s) => s.state === values.state);
    case 'decide':
      if (values.approve === values.reject) throw new Error('decide needs --approve or --reject');
      return decide(client, required(workflowId, 'a workflow id'), {
        call_id: required(values.call, '--call'),
        approved: Boolean(values.approve),
        reason: values.reason ?? '',
        approver: values.approver ?? '',
      });
    case 'result':
      return turnResult(client, required(workflowId, 'a workflow id'));
    case 'run':
      return run(client, settings.taskQueue, request(values.request), values.approver ?? '');
    default:
      throw new Error(`unknown command ${JSON.stringify(command)}: start, status, wait, decide, result, run`);
  }
}

/** The whole loop: start, approve each call the turn waits for, then its report. */
async function run(client: Client, taskQueue: string, turn: TurnRequest, approver: string) {
  const workflowId = await startTurn(client, taskQueue, turn);
  const decided = new Set<string>();
  const undecided = (status: TurnStatus) =>
    status.pending.filter((call) => call.kind === 'approval' && !decided.has(call.call_id));
  for (;;) {
    // The status may still list a call just decided; only a new one is waited for.
    const status = await waitForStatus(
      client,
      workflowId,
      (s) => undecided(s).length > 0 || ENDED.has(s.state),
    );
    if (ENDED.has(status.state)) break;
    for (const call of undecided(status)) {
      const reason = 'approved from TypeScript';
      await decide(client, workflowId, { call_id: call.call_id, approved: true, reason, approver });
      decided.add(call.call_id);
    }
  }
  return { workflow_id: workflowId, report: await turnResult(client, workflowId) };
}

function request(path: string | undefined): TurnRequest {
  return JSON.parse(readFileSync(required(path, '--request FILE'), 'utf8')) as TurnRequest;
}

function required<T>(value: T | undefined, what: string): T {
  if (value === undefined) throw new Error(`missing ${what}`);
  return value;
}

main(process.argv.slice(2)).then(
  (answer) => {
    process.stdout.write(`${JSON.stringify(answer)}\n`);
    process.exit(0);
  },
  (error: unknown) => {
    const type = error instanceof DecisionRefused || error instanceof TurnFailed ? error.type : 'Error';
    const message = error instanceof Error ? error.message : String(error);
    const report = error instanceof TurnFailed ? error.report : undefined;
    process.stderr.write(`${JSON.stringify({ error: { type, message, report } })}\n`);
    process.exit(error instanceof DecisionRefused ? 2 : 1);
  },
);
