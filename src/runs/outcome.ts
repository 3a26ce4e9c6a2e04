/**
 * What happened to a run, in the words every place shows it: `ehrbench run`, `runs show`, `runs watch`,
 * the API (RunView.outcome) and the console all read this one function, and the README's table of
 * outcomes is checked against OUTCOME_LABELS (tests/unit/run-outcome.test.ts). A run whose every
 * instance failed is not "completed": the store gives it the status `failed` (rule
 * run.no-instance-finished), and a completed run with failed instances says so.
 */
import { errorEntry } from '../errors';
import { isRule, RULES } from '../policy';

export type RunOutcomeKind = 'awaiting-approval' | 'queued' | 'running' | 'completed' | 'completed-with-failures' | 'failed' | 'halted' | 'cancelled';

/** The short label of each outcome, as the run lists and the console's status badge show it. */
export const OUTCOME_LABELS: Record<RunOutcomeKind, string> = {
  'awaiting-approval': 'awaiting approval',
  queued: 'approved, waiting for a worker',
  running: 'running',
  completed: 'completed',
  'completed-with-failures': 'completed with failures',
  failed: 'failed',
  halted: 'halted',
  cancelled: 'cancelled',
};

/** Why instances ended without a result, one entry per code or rule (most first). */
export interface RunCause {
  /** An error code (src/error-codes.ts) or a rule id (src/policy/rules.ts). */
  code: string;
  state: 'failed' | 'blocked';
  instances: number;
  meaning: string;
}

export interface RunOutcome {
  kind: RunOutcomeKind;
  label: string;
  /** One sentence: what happened and what to do. */
  summary: string;
  /** The run ended and has results worth exporting (at least one instance done). */
  hasResults: boolean;
  /** A script may treat the run as a success: completed, no instance failed. */
  success: boolean;
  causes: RunCause[];
}

export interface OutcomeInput {
  status: string;
  errorCode: string | null;
  counts: { done: number; blocked: number; failed: number; pending: number; claimed: number };
  causes: RunCause[];
}

/** The meaning of an instance's outcome code: a rule's, else the error catalogue's. */
export function causeMeaning(code: string): string {
  return isRule(code) ? RULES[code] : errorEntry(code).meaning;
}

function plural(n: number, word: string): string {
  return `${n} ${word}${n === 1 ? '' : 's'}`;
}

function kindOf(status: string, failed: number): RunOutcomeKind {
  switch (status) {
    case 'requested':
      return 'awaiting-approval';
    case 'approved':
      return 'queued';
    case 'running':
      return 'running';
    case 'completed':
      return failed > 0 ? 'completed-with-failures' : 'completed';
    case 'halted':
      return 'halted';
    case 'cancelled':
      return 'cancelled';
    default:
      // 'failed', and any status this build does not know: never shown as a success.
      return 'failed';
  }
}

function summaryOf(kind: RunOutcomeKind, input: OutcomeInput): string {
  const c = input.counts;
  const total = c.done + c.blocked + c.failed;
  const blocked = c.blocked > 0 ? `; ${plural(c.blocked, 'instance')} blocked by policy and never sent` : '';
  switch (kind) {
    case 'completed':
      return `all ${plural(total, 'instance')} finished: ${c.done} done${blocked}`;
    case 'completed-with-failures':
      return `${c.done} of ${plural(total, 'instance')} done, ${c.failed} failed for good${blocked}: the scores cover the done ones only; fix the cause, then request a new run`;
    case 'failed':
      return input.errorCode === 'run.no-instance-finished' || input.errorCode === null
        ? `no instance finished (${c.failed} failed, ${c.blocked} blocked): there are no results; fix the cause, then request a new run`
        : `the run stopped on ${input.errorCode} (${causeMeaning(input.errorCode)}); ${c.done} instances were done before it stopped`;
    case 'halted':
      return `halted${input.errorCode ? ` by rule ${input.errorCode}` : ''}: no new call of it starts`;
    case 'cancelled':
      return 'cancelled by its requester: no new call of it starts';
    case 'running':
      return `${c.done + c.blocked + c.failed} instances finished so far`;
    case 'awaiting-approval':
      return "the run waits for a compliance officer's approval; nothing is sent before";
    case 'queued':
      return 'approved; a worker starts it shortly';
  }
}

export function runOutcome(input: OutcomeInput): RunOutcome {
  const kind = kindOf(input.status, input.counts.failed);
  return {
    kind,
    label: OUTCOME_LABELS[kind],
    summary: summaryOf(kind, input),
    hasResults: (kind === 'completed' || kind === 'completed-with-failures') && input.counts.done > 0,
    success: kind === 'completed',
    causes: input.causes,
  };
}
