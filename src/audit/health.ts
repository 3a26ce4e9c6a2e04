/**
 * The chain's health at a glance, for the console's audit review: how far the trail goes, how much
 * of it signed checkpoints cover, what each witness last saw, and when someone last verified it.
 * Counts, sequence numbers, times and principal ids only. This is a summary, not a verification:
 * `verifyAudit` is.
 */
import { basename, dirname } from 'node:path';
import type { Queryable } from '../db';
import { loadWitnesses } from './witness';

export interface ChainHealth {
  headSeq: number | null;
  events: number;
  checkpoints: number;
  lastCheckpoint: { seq: number; at: string | null } | null;
  /**
   * The last verification: when, by whom, and what it found (`verified` or `broken`, from its outcome
   * event; null for one whose outcome the trail does not hold: a verification on the host, or one
   * recorded before outcomes were).
   */
  lastVerify: { at: string; actor: string; rule: string | null; outcome: 'verified' | 'broken' | null } | null;
  /** Each witness folder by its position and last path segment (the daemon host's paths stay in its config). */
  witnesses: { dir: string; seq: number | null; problem: string | null }[];
}

export async function chainHealth(db: Queryable, witnessDirs: string[]): Promise<ChainHealth> {
  const [head] = await db.query<{ n: string | number; head: string | number | null }>('SELECT count(*) AS n, max(seq) AS head FROM audit_events');
  const [cp] = await db.query<{ n: string | number }>('SELECT count(*) AS n FROM audit_checkpoints');
  const [last] = await db.query<{ seq: string | number; signed_at: string }>('SELECT seq, signed_at FROM audit_checkpoints ORDER BY checkpoint_id DESC LIMIT 1');
  const [verify] = await db.query<{ recorded_at: Date | string; actor_principal: string; rule: string | null; outcome: string }>(
    "SELECT recorded_at, actor_principal, rule, outcome FROM audit_events WHERE event_type = 'audit.verify' ORDER BY seq DESC LIMIT 1",
  );
  const { witnesses, problems } = loadWitnesses(witnessDirs);
  const seen = new Map<string, number>();
  for (const w of witnesses) seen.set(dirname(w.file), Math.max(seen.get(dirname(w.file)) ?? 0, w.checkpoint.statement.seq));
  return {
    headSeq: head?.head === null || head?.head === undefined ? null : Number(head.head),
    events: Number(head?.n ?? 0),
    checkpoints: Number(cp?.n ?? 0),
    lastCheckpoint: last ? { seq: Number(last.seq), at: last.signed_at ?? null } : null,
    lastVerify: verify ? { at: new Date(verify.recorded_at).toISOString(), actor: verify.actor_principal, rule: verify.rule, outcome: verifyOutcome(verify) } : null,
    witnesses: witnessDirs.map((dir, i) => {
      const problem = problems.find((p) => dirname(p.file) === dir);
      return { dir: `${i + 1}: .../${basename(dir)}`, seq: seen.get(dir) ?? null, problem: problem ? (problem.unreadable ? 'cannot be read' : 'invalid') : null };
    }),
  };
}

function verifyOutcome(e: { rule: string | null; outcome: string }): 'verified' | 'broken' | null {
  if (e.rule !== 'audit.verify.outcome') return null;
  return e.outcome === 'success' ? 'verified' : 'broken';
}

/** When each endpoint was last probed (`ehrbench endpoints probe`: a call outside any run). */
export async function lastProbes(db: Queryable): Promise<Map<string, string>> {
  const rows = await db.query<{ endpoint_id: string; at: Date | string }>(
    "SELECT endpoint_id, max(recorded_at) AS at FROM audit_events WHERE event_type = 'endpoint.call' AND run_id IS NULL AND endpoint_id IS NOT NULL GROUP BY endpoint_id",
  );
  return new Map(rows.map((r) => [r.endpoint_id, new Date(r.at).toISOString()]));
}
