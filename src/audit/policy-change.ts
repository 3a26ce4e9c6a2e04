/**
 * Policy files are recorded before they take effect. Hospital IT edits principals.json, endpoints.json
 * and site-data.json (re-read live by a running daemon) and config.json (read at start) on the host; whoever can write them
 * can grant a role, repoint an endpoint, bind a file of notes to a public benchmark or move the
 * witnesses. Every load whose content the trail has not recorded yet becomes a `policy.change` event
 * (the file's sha256 and a short, PHI-free summary: ids added, removed, changed with the names of the
 * changed fields, and a few facts per id such as roles or an endpoint's host) and only then is the new
 * policy handed out. When the event cannot be recorded the new file is not applied: at start the
 * process does not open, on a reload the policy in force stays and the change is tried again.
 * The configuration and the site data file also keep each field's fingerprint
 * (table policy_versions, its digest in the event), so the next start can say which fields changed
 * since (`catalog[dataDirs]`, `benchmarks.pubmed_qa[source]`) rather than list everything again.
 */
import { readFileSync, statSync } from 'node:fs';
import { canonicalHash, sha256Hex } from '../canonical';
import type { Database } from '../db';
import { faultLocation, UserError } from '../errors';
import type { Logger } from '../log';
import type { AuditEventInput, AuditTrail } from './types';

export type PolicyKind = 'principals' | 'endpoints' | 'config' | 'site-data';

/** Kinds whose fields are kept (policy_versions), so a start can say which fields changed since the last one. */
const REMEMBERED: readonly PolicyKind[] = ['config', 'site-data'];

/**
 * One id of a policy: a fingerprint per field (what tells a change) and the facts recorded about it
 * when it is added or changed (e.g. roles: "researcher/compliance"). Ids and short tokens only.
 */
export interface PolicyEntry {
  fields: Record<string, string>;
  facts: Record<string, string>;
}
export type PolicySummary = Map<string, PolicyEntry>;

export interface PolicyVersion<T> {
  value: T;
  sha256: string;
  summary: PolicySummary;
}

export interface PolicySource<T> {
  kind: PolicyKind;
  file: string;
  /** Reads and validates the file (throws a one-line UserError when it is not valid). */
  load(file: string): T;
  summarize(value: T): PolicySummary;
}

/** Where a change is recorded and what records it. */
export interface PolicyRecorder {
  db: Database;
  audit: AuditTrail;
}

/**
 * The file's bytes hashed, then loaded, then hashed again: the policy summarised is the one whose
 * sha256 is recorded, unless the file changed in between (then it is read again, or refused).
 */
export function readPolicy<T>(source: PolicySource<T>): PolicyVersion<T> {
  for (let attempt = 0; attempt < 3; attempt++) {
    const before = fileSha256(source.file);
    const value = source.load(source.file);
    if (fileSha256(source.file) === before) return { value, sha256: before, summary: source.summarize(value) };
  }
  throw new UserError('policy.unstable', `${source.file}: the file kept changing while it was read; it was not applied, finish editing it (write a new file and rename it over the old one)`);
}

/** The file's sha256; `absent` for a file that does not exist (a site data file may not, binding nothing). */
function fileSha256(file: string): string {
  try {
    return sha256Hex(readFileSync(file));
  } catch (err) {
    // The loader reports a missing or unreadable file in its own words.
    return (err as NodeJS.ErrnoException).code === 'ENOENT' ? 'absent' : '';
  }
}

/** The sha256 of the newest policy.change of this kind that a load recorded, if any. */
async function lastRecorded(db: Pick<Database, 'query'>, kind: PolicyKind): Promise<string | undefined> {
  return (await lastEvent(db, kind))?.sha256;
}

type Fields = Record<string, Record<string, string>>;

/** The fields of a version: per id, each field's fingerprint. */
function fieldsOf(summary: PolicySummary): Fields {
  return Object.fromEntries([...summary].map(([id, e]) => [id, e.fields]));
}

/** What the event holds of the kept fields: a row of policy_versions changed since is not used. */
const fieldsDigest = (fields: Fields) => canonicalHash(fields).slice(0, 32);

/**
 * The newest policy.change of this kind: its sha256, and for a remembered kind the version's fields
 * as kept in policy_versions, when their digest is the one the event recorded.
 */
async function lastEvent(db: Pick<Database, 'query'>, kind: PolicyKind): Promise<{ sha256: string; remembered?: Pick<PolicyVersion<unknown>, 'sha256' | 'summary'> } | undefined> {
  const rows = await db.query<{ sha256: string | null; digest: string | null }>(
    "SELECT detail->>'sha256' AS sha256, detail->>'fieldsDigest' AS digest FROM audit_events WHERE event_type = 'policy.change' AND detail->>'policy' = $1 ORDER BY seq DESC LIMIT 1",
    [kind],
  );
  const last = rows[0];
  if (!last?.sha256) return undefined;
  if (!REMEMBERED.includes(kind) || !last.digest) return { sha256: last.sha256 };
  const kept = await db.query<{ fields: Fields }>('SELECT fields FROM policy_versions WHERE kind = $1 AND sha256 = $2', [kind, last.sha256]);
  const fields = kept[0]?.fields;
  if (!fields || fieldsDigest(fields) !== last.digest) return { sha256: last.sha256 };
  const summary: PolicySummary = new Map(Object.entries(fields).map(([id, f]) => [id, { fields: f, facts: {} }]));
  return { sha256: last.sha256, remembered: { sha256: last.sha256, summary } };
}

/**
 * Records `next` unless the trail's newest event of its kind already holds this sha256 (the same
 * file, loaded again by this or another process). Resolves once the event is durable; rejects
 * (AuditUnavailable) when it is not, and then `next` must not be applied. The check is repeated under
 * the chain head's lock, so two processes loading the same new file record it once; the first look
 * takes no lock, so a process whose role may not write the trail can still load an unchanged policy.
 */
export async function recordPolicy<T>(to: PolicyRecorder, kind: PolicyKind, next: PolicyVersion<T>, previous: PolicyVersion<T> | undefined, trigger: 'start' | 'reload'): Promise<void> {
  if ((await lastRecorded(to.db, kind)) === next.sha256) return;
  await to.db.transaction(async (tx) => {
    await tx.query('SELECT seq FROM audit_head WHERE singleton FOR UPDATE');
    const last = await lastEvent(tx, kind);
    if (last?.sha256 === next.sha256) return;
    // At start, a remembered kind compares with the version its last event remembered.
    const before = previous ?? last?.remembered;
    if (REMEMBERED.includes(kind)) {
      await tx.query('INSERT INTO policy_versions (kind, sha256, fields) VALUES ($1, $2, $3::jsonb) ON CONFLICT DO NOTHING', [kind, next.sha256, JSON.stringify(fieldsOf(next.summary))]);
    }
    await to.audit.recordIn(tx, policyChangeEvent(kind, next, before, last?.sha256, trigger));
  });
}

/** Loads a policy file at start and records it when the trail does not hold it yet; then it may be used. */
export async function openPolicy<T>(source: PolicySource<T>, to: PolicyRecorder): Promise<PolicyVersion<T>> {
  const version = readPolicy(source);
  await recordPolicy(to, source.kind, version, undefined, 'start');
  return version;
}

/** The event: the sha256, what changed against `previous` (or every id when there is none), counts. */
export function policyChangeEvent<T>(
  kind: PolicyKind,
  next: PolicyVersion<T>,
  previous: Pick<PolicyVersion<unknown>, 'sha256' | 'summary'> | undefined,
  lastSha256: string | undefined,
  trigger: 'start' | 'reload',
): AuditEventInput {
  const base = previous?.sha256 ?? lastSha256;
  const detail: Record<string, string | number> = { policy: kind, sha256: next.sha256, ...(base ? { previousSha256: base } : {}), trigger, count: next.summary.size };
  let reason: string;
  if (previous) {
    const d = diffSummaries(previous.summary, next.summary);
    Object.assign(
      detail,
      listed('added', d.added),
      listed('removed', d.removed),
      listed(
        'changed',
        d.changed.map((c) => `${c.id}[${c.fields.join('/')}]`),
      ),
    );
    Object.assign(detail, factsOf(next.summary, [...d.added, ...d.changed.map((c) => c.id)]));
    reason = `${kind} policy ${trigger === 'reload' ? 'reloaded' : 'loaded at start, differing from the last recorded one'}: ${d.added.length} added, ${d.removed.length} removed, ${d.changed.length} changed`;
  } else {
    const ids = [...next.summary.keys()];
    detail.ids = compactList(ids);
    Object.assign(detail, factsOf(next.summary, ids));
    reason = `${kind} policy loaded at ${trigger} with ${ids.length} entries${lastSha256 ? ', differing from the last recorded one' : ''}`;
  }
  if (REMEMBERED.includes(kind)) detail.fieldsDigest = fieldsDigest(fieldsOf(next.summary));
  return { type: 'policy.change', action: 'U', outcome: 'success', rule: 'policy.file.loaded', reason, actor: { principal: 'service:policy', role: 'service', authMethod: 'service' }, detail };
}

export interface PolicyDiff {
  added: string[];
  removed: string[];
  changed: { id: string; fields: string[] }[];
}

export function diffSummaries(before: PolicySummary, after: PolicySummary): PolicyDiff {
  const added = [...after.keys()].filter((id) => !before.has(id));
  const removed = [...before.keys()].filter((id) => !after.has(id));
  const changed: PolicyDiff['changed'] = [];
  for (const [id, entry] of after) {
    const old = before.get(id);
    if (!old) continue;
    const names = [...new Set([...Object.keys(old.fields), ...Object.keys(entry.fields)])].sort();
    const fields = names.filter((f) => old.fields[f] !== entry.fields[f]);
    if (fields.length) changed.push({ id, fields });
  }
  return { added, removed, changed };
}

/** `name` (the list, when not empty) and `nameCount`. */
function listed(name: string, items: string[]): Record<string, string | number> {
  return { ...(items.length ? { [name]: compactList(items) } : {}), [`${name}Count`]: items.length };
}

/** Per fact name, "id=value" for each of `ids` that has it (e.g. roles: "bob=researcher/compliance"). */
function factsOf(summary: PolicySummary, ids: string[]): Record<string, string> {
  const byFact = new Map<string, string[]>();
  for (const id of ids) {
    for (const [fact, value] of Object.entries(summary.get(id)?.facts ?? {})) byFact.set(fact, [...(byFact.get(fact) ?? []), `${id}=${value}`]);
  }
  return Object.fromEntries([...byFact].map(([fact, items]) => [fact, compactList(items)]));
}

/** An audit detail value holds 160 id characters: the list is cut there ("+..."); the counts are whole. */
const MAX_VALUE = 160;

export function compactList(items: string[]): string {
  let out = '';
  for (const raw of items) {
    const item = raw.replace(/[^A-Za-z0-9._:/=@[\]-]/g, '_');
    const next = out ? `${out}+${item}` : item;
    if (next.length > MAX_VALUE - 4) return `${out}+...`.slice(0, MAX_VALUE);
    out = next;
  }
  return out;
}

/**
 * What a live policy does while its file on disk is invalid (a broken edit):
 * - `refuse`: nothing is handed out until it is fixed (principals: an unreadable directory admits no one);
 * - `keep`: the last good version stays in force, the file and field are logged (site data, endpoints:
 *   a typo in one binding must not stop every run). A file invalid from the start gives nothing to
 *   keep: what needs it is refused (the file's own error) until it is fixed.
 */
export type WhileInvalid = 'refuse' | 'keep';

export interface LiveOptions {
  whileInvalid?: WhileInvalid;
  clock?: () => number;
}

/**
 * A policy file re-read when it changes, for policies consulted on every request (principals, site
 * data, endpoints). The file is looked at at most once a second (or now: `current`, `refresh`); a new
 * version is recorded, then handed out. `get` never waits for the trail: it returns the version in
 * force, or throws what is wrong with the file (see WhileInvalid).
 */
export class LivePolicy<T> {
  private appliedMtimeMs: number;
  private checkedAt: number;
  private pending: Promise<void> | undefined;
  private broken: unknown;
  /** The last invalid file logged (code, file, field): a broken edit is logged once, not every second. */
  private loggedProblem: string | undefined;
  /** The file as it was when it was found broken (statOf): read again only once it changes or the second is up. */
  private brokenSignature: string | undefined;

  private constructor(
    private readonly source: PolicySource<T>,
    private readonly to: PolicyRecorder,
    private readonly logger: Logger,
    private version: PolicyVersion<T> | undefined,
    mtimeMs: number,
    private readonly whileInvalid: WhileInvalid,
    private readonly clock: () => number,
  ) {
    this.appliedMtimeMs = mtimeMs;
    this.checkedAt = clock();
  }

  /**
   * Loads and records the file (at start); rejects, opening nothing, when it cannot be recorded. A
   * file that is invalid rejects too, unless the policy keeps its last good version: then it opens
   * with none (what needs it is refused) and is looked at again like any edit.
   */
  static async open<T>(source: PolicySource<T>, to: PolicyRecorder, logger: Logger, opts: LiveOptions = {}): Promise<LivePolicy<T>> {
    const whileInvalid = opts.whileInvalid ?? 'refuse';
    const mtimeMs = mtimeOf(source.file);
    let version: PolicyVersion<T>;
    try {
      version = readPolicy(source);
    } catch (err) {
      if (whileInvalid === 'refuse') throw err;
      const live = new LivePolicy<T>(source, to, logger, undefined, mtimeMs, whileInvalid, opts.clock ?? Date.now);
      live.brokenSignature = statOf(source.file).signature;
      live.invalid(err);
      return live;
    }
    await recordPolicy(to, source.kind, version, undefined, 'start');
    return new LivePolicy(source, to, logger, version, mtimeMs, whileInvalid, opts.clock ?? Date.now);
  }

  get(): T {
    this.check();
    if (this.broken && (this.whileInvalid === 'refuse' || !this.version)) throw this.broken;
    if (!this.version) throw this.broken ?? new UserError('policy.invalid', `${this.source.file}: no valid version of this file has been loaded`);
    return this.version.value;
  }

  /** The version in force after looking at the file now: for a request that must see the last edit. */
  async current(): Promise<T> {
    await this.refresh();
    return this.get();
  }

  /** Waits for a change being recorded (before the store closes). */
  async settled(): Promise<void> {
    await this.pending;
  }

  /**
   * Looks at the file now rather than within the second, and waits until a new version is recorded
   * and in force (or refused and logged: the version in force stays, as on any look). For a change
   * this process just wrote (a certificate signed through the API), so it holds from the next request.
   */
  async refresh(): Promise<void> {
    await this.pending;
    this.check(true);
    await this.pending;
  }

  /** Looks at the file when the second is up, or `now`; reads it when it changed (or is broken). */
  private check(now = false): void {
    const at = this.clock();
    const due = at - this.checkedAt >= 1000;
    if (this.pending || (!due && !now)) return;
    const stat = statOf(this.source.file);
    // A broken file is read again when it changes, else once a second (it may name a data file IT is
    // still copying in): not on every request, the catalog is rebuilt on each read.
    if (this.broken && !due && stat.signature === this.brokenSignature) return;
    this.checkedAt = at;
    if (stat.mtimeMs === this.appliedMtimeMs && !this.broken) return;
    const mtimeMs = stat.mtimeMs;
    let next: PolicyVersion<T>;
    try {
      next = readPolicy(this.source);
      this.broken = undefined;
      this.loggedProblem = undefined;
    } catch (err) {
      this.brokenSignature = stat.signature;
      this.invalid(err);
      return;
    }
    if (next.sha256 === this.version?.sha256) {
      this.appliedMtimeMs = mtimeMs;
      return;
    }
    this.pending = this.apply(next, mtimeMs).finally(() => (this.pending = undefined));
  }

  /**
   * The file is invalid: said in the log with its file and field (never its content), once per
   * distinct problem. The message's first words name the file and the field (faultLocation).
   */
  private invalid(err: unknown): void {
    this.broken = err;
    const code = err instanceof UserError ? err.code : 'internal';
    const where = err instanceof UserError ? faultLocation(err.message) : {};
    const key = `${code}\u0000${where.file ?? ''}\u0000${where.field ?? ''}`;
    if (key === this.loggedProblem) return;
    this.loggedProblem = key;
    const kept = this.whileInvalid === 'keep' && this.version !== undefined;
    this.logger.error(kept ? 'policy.invalid-kept-last' : 'policy.invalid', {
      policy: this.source.kind,
      file: where.file ?? this.source.file,
      ...(where.field ? { field: where.field } : {}),
      errorCode: code,
      ...(kept ? { keptSha256: this.version?.sha256 } : {}),
    });
  }

  /** Record first, then apply; a refusal keeps the version in force and is retried on the next look. */
  private async apply(next: PolicyVersion<T>, mtimeMs: number): Promise<void> {
    try {
      await recordPolicy(this.to, this.source.kind, next, this.version, this.version ? 'reload' : 'start');
      this.version = next;
      this.appliedMtimeMs = mtimeMs;
    } catch (err) {
      this.logger.error('policy.change-not-recorded', { file: this.source.file, err });
    }
  }
}

function mtimeOf(file: string): number {
  return statOf(file).mtimeMs;
}

/** The file's modification time, and what tells any change of it (content, mode, replacement). */
function statOf(file: string): { mtimeMs: number; signature: string } {
  const st = statSync(file, { throwIfNoEntry: false });
  if (!st) return { mtimeMs: -1, signature: 'absent' };
  return { mtimeMs: st.mtimeMs, signature: `${st.mtimeMs}:${st.ctimeMs}:${st.size}:${st.ino}` };
}
