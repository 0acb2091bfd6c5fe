/**
 * The parts of turnkeeper's contract this client uses, typed from docs/reference.md ("Starting
 * a turn", "A running turn", "The report"). Every payload is plain JSON; fields left out take
 * the reference's defaults, and fields a caller sends that the turn does not know are refused.
 */

export const WORKFLOW_TYPE = 'AgentTurnWorkflow';
export const STATUS_QUERY = 'status';
export const DECIDE_UPDATE = 'decide';
/** The error type of an update the turn refuses (`ApplicationFailure.type`). */
export const DECISION_REFUSED = 'DecisionRefused';

/** `TurnRequest`: the agent and its task (the reference lists every other field). */
export interface TurnRequest {
  agent: { id: string; model: string; system_prompt?: string; [field: string]: unknown };
  task: { id: string; input: string; [field: string]: unknown };
  [field: string]: unknown;
}

export interface PendingCall {
  call_id: string;
  tool: string;
  input: Record<string, unknown>;
  kind: 'approval' | 'external' | 'elicitation';
  since: string;
}

export interface TurnStatus {
  state:
    | 'running'
    | 'awaiting_approval'
    | 'awaiting_external'
    | 'awaiting_budget'
    | 'completed'
    | 'interrupted'
    | 'failed'
    | 'cancelled';
  iteration: number;
  cost_usd: number;
  pending: PendingCall[];
}

/** `ApproveInput`, the `decide` update's payload. */
export interface Decision {
  call_id: string;
  approved: boolean;
  reason?: string;
  approver?: string;
  input?: Record<string, unknown> | null;
}

export interface DecisionRecord {
  call_id: string;
  tool: string;
  approved: boolean;
  approver: string;
  reason: string;
  at: string;
}

export interface DecideResult {
  decisions: DecisionRecord[];
}

export interface AgentReport {
  agent_id: string;
  task_id: string;
  outcome: 'completed' | 'max_tokens' | 'interrupted' | 'failed' | 'cancelled';
  output: string;
  cost_usd: number;
  llm_calls: number;
  tool_calls: number;
  decisions: DecisionRecord[];
}
