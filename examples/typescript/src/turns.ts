/**
 * Start, read, decide and wait for a turn with `@temporalio/client` alone: the workflow type,
 * query and update names and payloads of turnkeeper's reference, nothing of its Python library.
 */
import { randomBytes } from 'node:crypto';

import { Client, WorkflowFailedError, WorkflowUpdateFailedError } from '@temporalio/client';
import { ApplicationFailure } from '@temporalio/common';

import {
  AgentReport,
  DECIDE_UPDATE,
  DECISION_REFUSED,
  DecideResult,
  Decision,
  STATUS_QUERY,
  TurnRequest,
  TurnStatus,
  WORKFLOW_TYPE,
} from './contract.js';

/** The turn refused a decision (no such call waits, an approver it does not accept, …). */
export class DecisionRefused extends Error {
  readonly type = DECISION_REFUSED;
}

/** The turn failed; `type` is one of the reference's error types, `report` the partial report. */
export class TurnFailed extends Error {
  constructor(
    readonly type: string,
    message: string,
    readonly report: AgentReport | undefined,
  ) {
    super(message);
  }
}

/** Starts `request` as a turn; its workflow id (by default `turn-<agent id>-<8 hex digits>`). */
export async function startTurn(
  client: Client,
  taskQueue: string,
  request: TurnRequest,
  id?: string,
): Promise<string> {
  // Characters a turn id may not have become `-`, as turnkeeper's own clients do it.
  const agent = request.agent.id.replace(/[^A-Za-z0-9._:@-]/g, '-');
  const workflowId = id ?? `turn-${agent}-${randomBytes(4).toString('hex')}`;
  await client.workflow.start(WORKFLOW_TYPE, { taskQueue, workflowId, args: [request] });
  return workflowId;
}

export async function turnStatus(client: Client, workflowId: string): Promise<TurnStatus> {
  return client.workflow.getHandle(workflowId).query<TurnStatus>(STATUS_QUERY);
}

/** Polls the status until `done` holds for it (every 250 ms, at most `timeoutMs`: a real model
 * may think for minutes between two approvals). */
export async function waitForStatus(
  client: Client,
  workflowId: string,
  done: (status: TurnStatus) => boolean,
  timeoutMs = 600_000,
): Promise<TurnStatus> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const status = await turnStatus(client, workflowId);
    if (done(status)) return status;
    if (Date.now() > deadline) throw new Error(`turn ${workflowId} is still ${status.state}`);
    await new Promise((resolve) => setTimeout(resolve, 250));
  }
}

/** The `decide` update: the decisions as the turn applied them, or `DecisionRefused`. */
export async function decide(client: Client, workflowId: string, decision: Decision): Promise<DecideResult> {
  try {
    return await client.workflow
      .getHandle(workflowId)
      .executeUpdate<DecideResult, [Decision]>(DECIDE_UPDATE, { args: [decision] });
  } catch (error) {
    const cause = error instanceof WorkflowUpdateFailedError ? error.cause : undefined;
    if (cause instanceof ApplicationFailure && cause.type === DECISION_REFUSED) {
      throw new DecisionRefused(cause.message);
    }
    throw error;
  }
}

/** The turn's `AgentReport` once it ends, or `TurnFailed` with its error type. */
export async function turnResult(client: Client, workflowId: string): Promise<AgentReport> {
  try {
    return await client.workflow.getHandle(workflowId).result();
  } catch (error) {
    const cause = error instanceof WorkflowFailedError ? error.cause : undefined;
    if (cause instanceof ApplicationFailure) {
      const report = cause.details?.[0] as AgentReport | undefined;
      throw new TurnFailed(cause.type ?? 'ApplicationFailure', cause.message, report);
    }
    throw error;
  }
}
