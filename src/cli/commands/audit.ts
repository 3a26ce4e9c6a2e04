import { closeSync, existsSync, openSync, renameSync, rmSync, writeSync } from 'node:fs';
import { join } from 'node:path';
import type { CommandModule } from 'yargs';
import type { App } from '../../app';
import {
  chainOf,
  AUDIT_EVENT_TYPES,
  type AuditRecord,
  csvHeader,
  csvRow,
  type ExportFormat,
  fhirAuditEvent,
  jsonlCheckpoint,
  jsonlEvent,
  loadCheckpoints,
  loadMacKeysIfPresent,
  loadWitnesses,
  type RecordFilter,
  type SignedCheckpoint,
  streamRecords,
  tailRecords,
  AuditUnavailable,
  MAC_KEY_FILE,
  PUBLIC_KEY_FILE,
  SIGNING_KEY_FILE,
  toSignedCheckpoint,
  trustedKeys,
  verifyAudit,
  type VerifyReport,
} from '../../audit';
import { loadConfig } from '../../config';
import { type Database, describeDatabase, openDatabase, pinnedDatabase } from '../../db';
import { describeError, UserError } from '../../errors';
import type { Actor } from '../../identity';
import { Operations } from '../../operations';
import { hostOperator } from '../../identity';
import { archiveName, archiveWitnesses, exportCheckpoints, exportEventPages, importExportedRows, type ImportResult, restoreWitnesses, type WitnessedLoss, witnessedLosses } from '../../audit';
import { CLIENT_OPTIONS, type ClientArgs, isRemote, localCaller } from '../client';
import { remoteExport, remoteSearch, remoteTail, remoteVerify, VERIFY_CLIENT_OPTIONS } from './audit-remote';
import { type GlobalArgs, withApp as withAnyApp } from '../context';
import { formatTable, type Io, printJson } from '../output';

/**
 * Every audit command that reads the trail from a store says which store: a verification of the
 * wrong one (an embedded store of a PostgreSQL site) reports a truncation that is not there, or an
 * intact trail that is not the site's.
 */
function withApp<T>(args: GlobalArgs, io: Io, fn: (app: App) => Promise<T>): Promise<T> {
  return withAnyApp(args, io, fn, { writes: false, announceStore: true });
}

interface VerifyArgs extends Omit<ClientArgs, 'key'> {
  key?: string[];
  witness?: string[];
  export?: string;
  mac?: boolean;
  allowMissingWitness?: boolean;
  threads?: number;
}

/** The most threads `audit verify --threads` takes: each holds a database connection. */
const MAX_VERIFY_THREADS = 32;

/**
 * --threads: how this process reads the store's chain (1: streamed; more: that many worker threads).
 * The daemon (--server) and an export file are verified their own way, so there it is refused.
 */
function verifyThreads(args: VerifyArgs, remote: boolean): number | undefined {
  const n = args.threads;
  if (n === undefined) return undefined;
  if (args.export || remote) throw new UserError('cli.usage', '--threads is for verifying the store on this host; not with --export or --server');
  if (!Number.isInteger(n) || n < 1 || n > MAX_VERIFY_THREADS) throw new UserError('cli.usage', `--threads must be a whole number from 1 to ${MAX_VERIFY_THREADS} (got ${String(n)})`);
  return n;
}

interface FilterArgs extends ClientArgs {
  since?: string;
  until?: string;
  actor?: string;
  type?: string;
  run?: string;
  limit?: number;
}

function isoOption(value: string | undefined, name: string): string | undefined {
  if (value === undefined) return undefined;
  const t = Date.parse(value);
  if (Number.isNaN(t)) throw new UserError('cli.usage', `--${name} must be a date or ISO-8601 time, e.g. 2026-11-01 or 2026-11-01T08:00:00Z`);
  return new Date(t).toISOString();
}

function filterOf(args: FilterArgs): RecordFilter {
  // An unknown type would match nothing and look like an empty trail.
  if (args.type !== undefined && !(AUDIT_EVENT_TYPES as readonly string[]).includes(args.type)) {
    throw new UserError('cli.usage', `--type ${args.type} is not an audit event type; one of: ${AUDIT_EVENT_TYPES.join(', ')}`);
  }
  const since = isoOption(args.since, 'since');
  const until = isoOption(args.until, 'until');
  return {
    ...(since ? { since } : {}),
    ...(until ? { until } : {}),
    ...(args.actor ? { actor: args.actor } : {}),
    ...(args.type ? { type: args.type } : {}),
    ...(args.run ? { runId: args.run } : {}),
  };
}

/** The local principal in a role that may read the audit trail (compliance or auditor), or a refusal. */
function reader(app: App): Promise<Actor> {
  return new Operations(app).require(localCaller(app), 'audit.read');
}

/** Reading the trail is itself audited; no record, no read. */
async function recordRead(app: App, what: string, filter: RecordFilter, extra: Record<string, string | number | boolean> = {}): Promise<void> {
  await app.audit.record({
    type: 'audit.read',
    action: 'R',
    outcome: 'success',
    rule: 'audit.read.local-operator',
    reason: what,
    actor: await reader(app),
    detail: {
      ...(filter.since ? { since: filter.since } : {}),
      ...(filter.until ? { until: filter.until } : {}),
      ...(filter.actor ? { actor: filter.actor } : {}),
      ...(filter.type ? { eventType: filter.type } : {}),
      ...(filter.runId ? { runId: filter.runId } : {}),
      ...extra,
    },
  });
}

function printReport(io: Io, report: VerifyReport, json: boolean | undefined): void {
  if (json) return printJson(io, report);
  if (report.ok) {
    io.stdout(
      `audit trail intact: ${report.events} events (seq ${report.firstSeq ?? 0}..${report.headSeq ?? 0}), ${report.checkpoints} checkpoints` +
        `${report.lastCheckpointSeq ? ` (newest at seq ${report.lastCheckpointSeq})` : ''}, ${report.witnesses} witness file(s), ` +
        `${report.macChecked ? 'row MACs checked' : 'row MACs not checked (no MAC key here)'}\n`,
    );
  } else {
    for (const f of report.findings) io.stdout(`${f.seq === null ? 'trail' : `seq ${f.seq}`}: ${f.problem}\n`);
  }
  for (const w of report.warnings) io.stderr(`warning: ${w.seq === null ? '' : `seq ${w.seq}: `}${w.problem}\n`);
}

/** The witness histories to compare, and those that cannot be used (findings unless allowed). */
function witnessesOf(args: VerifyArgs, dirs: string[]) {
  const { witnesses, problems, notes } = loadWitnesses(dirs, args.witness ?? []);
  return { witnesses, witnessProblems: problems, witnessNotes: notes, allowMissingWitness: args.allowMissingWitness === true };
}

async function verifyCommand(args: VerifyArgs, io: Io): Promise<void> {
  const threads = verifyThreads(args, isRemote(args, io));
  if (args.export) {
    // Offline: no database, only the export file, the public key(s) and any witness copies.
    const keysDir = args.key?.length ? undefined : tryKeysDir(args, io);
    const keys = trustedKeys(keysDir, args.key ?? []);
    if (keys.size === 0) throw new UserError('audit.no-key', 'give the audit public key with --key FILE (keys/audit-signing.pub.pem of the site)');
    const { checkpoints, firstSeq } = await exportCheckpoints(args.export);
    const report = await verifyAudit({
      records: exportEventPages(args.export),
      checkpoints,
      ...witnessesOf(args, []),
      trustedKeys: keys,
      ...(args.mac !== false && keysDir ? { macKeys: loadMacKeysIfPresent(keysDir) as Map<string, Buffer> } : {}),
      partial: (firstSeq ?? 1) !== 1,
      snapshot: true,
    });
    printReport(io, report, args.json);
    if (!report.ok) process.exitCode = 1;
    return;
  }
  if (isRemote(args, io)) {
    // The daemon verifies its own store, keys and witnesses, and audits the verification.
    const report = await remoteVerify(args, io);
    printReport(io, report, args.json);
    if (!report.ok) process.exitCode = 1;
    return;
  }
  try {
    await withApp(args, io, async (app) => {
      let notRecorded: NotRecorded | undefined;
      // Verification is audited like any read; if the trail refuses the record, verify anyway (that is
      // exactly when a compliance officer needs the answer) and report the refusal.
      const actor = await reader(app);
      // A trail that stopped itself (keys lost, a rollback found) is not asked: it refuses every record.
      const stopped = app.audit.unavailable();
      if (stopped) notRecorded = { why: stopped.message, trailStopped: true };
      else {
        await app.audit.record({ type: 'audit.verify', action: 'E', outcome: 'success', rule: 'audit.verify.local-operator', actor }).catch((err: unknown) => {
          notRecorded = { why: describeError(err).message, trailStopped: app.audit.unavailable() !== undefined };
        });
      }
      await verifyStore(args, io, { db: app.db, keysDir: app.config.keysDir, witnessDirs: app.config.audit.witnessDirs, threads }, notRecorded);
    });
  } catch (err) {
    // The trail stopped itself (a rollback found, the keys lost) and a policy file changed since it
    // was last recorded: the app does not open, as it would use a policy the trail does not hold. The
    // chain is still verified, read-only, on the store alone: that is when the answer is needed. (Who
    // runs this holds the store's credentials, and could read the rows without ehrbench.)
    if (!(err instanceof AuditUnavailable)) throw err;
    await verifyStoreOnly(args, io, threads, { why: describeError(err).message, trailStopped: true });
  }
}

/**
 * Why this verification is not in the trail. A trail that stopped itself (keys lost, a rollback found)
 * refuses every record, and says why elsewhere (the notes on lost keys, the findings of a rollback):
 * that the verification is not recorded is then a warning beside a report that stands. A refusal of a
 * trail still recording (the store refused the row) is itself a finding.
 */
interface NotRecorded {
  why: string;
  trailStopped: boolean;
}

interface StoreToVerify {
  db: Database;
  keysDir: string;
  witnessDirs: string[];
  threads: number | undefined;
}

/** Verifies a store's chain, says which keys are lost and what that leaves proven, prints the report. */
async function verifyStore(args: VerifyArgs, io: Io, store: StoreToVerify, notRecorded: NotRecorded | undefined): Promise<void> {
  const report = await verifyAudit({
    // PostgreSQL on a host with 2 cores or more: read and checked in parallel segments (worker threads); otherwise streamed.
    ...chainOf(store.db, undefined, store.threads),
    checkpoints: await loadCheckpoints(store.db),
    ...witnessesOf(args, store.witnessDirs),
    trustedKeys: trustedKeys(store.keysDir, args.key ?? []),
    ...(args.mac !== false ? { macKeys: loadMacKeysIfPresent(store.keysDir) as Map<string, Buffer> } : {}),
  });
  if (notRecorded) (notRecorded.trailStopped ? report.warnings : report.findings).push({ seq: null, problem: `this verification could not be recorded: ${notRecorded.why}` });
  report.warnings.unshift(...lostKeyNotes(store.keysDir, report, (args.key ?? []).length > 0).map((problem) => ({ seq: null, problem })));
  report.ok = report.findings.length === 0;
  printReport(io, report, args.json);
  if (!report.ok) process.exitCode = 1;
}

/** The store named by the configuration, opened read-only (no migration, no policy, no trail). */
async function verifyStoreOnly(args: VerifyArgs, io: Io, threads: number | undefined, notRecorded: NotRecorded): Promise<void> {
  const config = loadConfig({ ...(args.config ? { file: args.config } : {}), env: io.env });
  const db = await openDatabase({ ...pinnedDatabase(config.database), migrate: 'require' });
  try {
    io.stderr(`store: ${describeDatabase(pinnedDatabase(config.database))} (read-only: the trail cannot record)\n`);
    await verifyStore(args, io, { db, keysDir: config.keysDir, witnessDirs: config.audit.witnessDirs, threads }, notRecorded);
  } finally {
    await db.close();
  }
}

/**
 * What a keys folder that lost files still lets this verification prove, one line per lost file:
 * a lost MAC key leaves the rows after the newest checkpoint proven only by their hash chain; a lost
 * public key (and no --key) leaves no checkpoint signature checkable; a lost private key stops recording.
 */
function lostKeyNotes(keysDir: string, report: VerifyReport, keyGiven: boolean): string[] {
  const notes: string[] = [];
  const lacks = (file: string) => !existsSync(join(keysDir, file));
  const newest = report.lastCheckpointSeq ? `seq ${report.lastCheckpointSeq}` : 'no checkpoint yet';
  if (lacks(MAC_KEY_FILE)) {
    notes.push(
      `${keysDir} lacks ${MAC_KEY_FILE}: row MACs are not checked; rows up to the newest checkpoint (${newest}) are proven by its signature, rows after it only by their hash chain, which whoever can write the database can rebuild`,
    );
  }
  if (lacks(PUBLIC_KEY_FILE) && !keyGiven) {
    notes.push(`${keysDir} lacks ${PUBLIC_KEY_FILE}: checkpoint signatures can be checked only with a public key; give the one kept in the site's key escrow with --key FILE`);
  }
  if (lacks(SIGNING_KEY_FILE)) notes.push(`${keysDir} lacks ${SIGNING_KEY_FILE}: nothing new can be recorded or sealed until the keys folder is restored (deploy/README.md, "A lost keys folder")`);
  return notes;
}

function tryKeysDir(args: GlobalArgs, io: Io): string | undefined {
  try {
    return loadConfig({ ...(args.config ? { file: args.config } : {}), env: io.env }).keysDir;
  } catch {
    return undefined;
  }
}

async function exportCommand(args: FilterArgs & { format: ExportFormat; out?: string }, io: Io): Promise<void> {
  const filter = filterOf(args);
  if (isRemote(args, io)) return remoteExport(args, io, filter, args.format);
  await withApp(args, io, async (app) => {
    await recordRead(app, `export as ${args.format}`, filter, { format: args.format });
    // Seal first, so every exported event up to this read is covered by a signed checkpoint and the
    // export can be verified offline with only the public key.
    await app.audit.seal();
    // Written to a temporary file and renamed: a failed export leaves nothing half-written.
    const tmp = args.out ? `${args.out}.${process.pid}.tmp` : undefined;
    const fd = tmp ? openSync(tmp, 'w', 0o600) : undefined;
    const write = (text: string) => (fd === undefined ? io.stdout(text) : void writeSync(fd, text));
    try {
      let count = 0;
      if (args.format === 'csv') write(csvHeader());
      if (args.format === 'fhir') write('{"resourceType":"Bundle","type":"collection","entry":[\n');
      for await (const r of streamRecords(app.db, filter)) {
        if (args.format === 'jsonl') write(jsonlEvent(r));
        else if (args.format === 'csv') write(csvRow(r));
        else write(`${count ? ',\n' : ''}${JSON.stringify({ resource: fhirAuditEvent(r) })}`);
        count += 1;
      }
      if (args.format === 'jsonl') for (const c of await loadCheckpoints(app.db)) write(jsonlCheckpoint(toSignedCheckpoint(c)));
      if (args.format === 'fhir') write('\n]}\n');
      if (fd !== undefined && tmp && args.out) {
        closeSync(fd);
        renameSync(tmp, args.out);
        io.stderr(`exported ${count} audit events to ${args.out}\n`);
      }
    } catch (err) {
      if (fd !== undefined && tmp) {
        closeSync(fd);
        rmSync(tmp, { force: true });
      }
      throw err;
    }
  });
}

function printRecords(io: Io, records: AuditRecord[], json: boolean | undefined): void {
  if (json) return printJson(io, records);
  io.stdout(
    formatTable(
      ['seq', 'recorded (UTC)', 'event', 'outcome', 'rule', 'actor', 'run', 'benchmark', 'endpoint'],
      records.map((r) => [r.seq, r.recorded_at, r.event_type, r.outcome, r.rule, `${r.actor_principal} (${r.actor_role})`, r.run_id?.slice(0, 8), r.benchmark_id, r.endpoint_id]),
    ),
  );
}

interface AcceptLossArgs extends GlobalArgs {
  reason: string;
  incident: string;
}

/**
 * Step 5 of the rollback alarm procedure, on the host: the rows the witnesses saw are lost for good and
 * the compliance office has decided to go on. Refused unless the chain really lost a witnessed
 * checkpoint; the witness histories are archived (never deleted) and the acceptance is recorded and
 * sealed, which starts new histories. If it cannot be recorded, the histories are put back.
 */
async function acceptLossCommand(args: AcceptLossArgs, io: Io): Promise<void> {
  if (!args.reason.trim() || !args.incident.trim()) throw new UserError('cli.usage', 'audit accept-loss: --reason and --incident must not be empty');
  const { lost, witnessDirs } = await withApp(args, io, async (app) => ({ lost: await app.audit.witnessedLosses(), witnessDirs: app.config.audit.witnessDirs }));
  if (lost.length === 0) {
    throw new UserError('audit.no-loss', 'audit accept-loss: the chain holds every witnessed checkpoint, so there is no loss to accept; "ehrbench audit verify" shows what it found');
  }
  const archive = archiveName(new Date());
  const archived = archiveWitnesses(witnessDirs, archive);
  try {
    await withAnyApp(
      args,
      io,
      async (app) => {
        const head = await app.db.query<{ seq: number }>('SELECT seq FROM audit_head WHERE singleton');
        await app.audit.record({
          type: 'audit.loss-accepted',
          action: 'U',
          outcome: 'success',
          rule: 'audit.loss-accepted',
          reason: `incident ${args.incident}: ${args.reason}`.slice(0, 300),
          actor: hostOperator(),
          detail: {
            chainHeadSeq: Number(head[0]?.seq ?? 0),
            witnessedUpToSeq: Math.max(...lost.map((l) => l.seq)),
            newestLostCheckpoint: Math.max(...lost.map((l) => l.checkpointId)),
            lostWitnessHeads: lost.length,
            witnessArchive: archive,
            witnessFolders: archived.length,
          },
        });
        await app.audit.seal();
      },
      { writes: true },
    );
  } catch (err) {
    restoreWitnesses(archived);
    throw err;
  }
  if (args.json) return printJson(io, { lost, archived });
  for (const l of lost) io.stdout(`lost: ${l.file} witnessed checkpoint ${l.checkpointId} at seq ${l.seq}, which the chain ${l.held === 'no' ? 'no longer holds' : 'holds with another row'}\n`);
  for (const a of archived) io.stdout(`archived: ${a.files.join(', ')} of ${a.dir} in ${a.archive}\n`);
  io.stdout('the loss is recorded (audit.loss-accepted) and sealed; new witness histories start at that checkpoint. Restart the daemon and workers, and report the gap in audit coverage\n');
}

/**
 * Step 4 of the rollback alarm procedure, on the host with every ehrbench process stopped: the rows a
 * restore lost are put back from an earlier `audit export --format jsonl` (only what verifies and
 * continues the chain at its head). Opened on the store alone, since the trail it repairs has stopped
 * itself; the import is recorded once the trail can record again.
 */
async function importCommand(args: GlobalArgs & { file: string }, io: Io): Promise<void> {
  const config = loadConfig({ ...(args.config ? { file: args.config } : {}), env: io.env });
  const trusted = trustedKeys(config.keysDir, []);
  if (trusted.size === 0) throw new UserError('audit.no-key', `${config.keysDir} holds no audit public key: restore ${PUBLIC_KEY_FILE} (or audit-trusted/) from the escrow first`);
  const macKeys = loadMacKeysIfPresent(config.keysDir) as Map<string, Buffer> | undefined;
  const db = await openDatabase({ ...pinnedDatabase(config.database), migrate: 'require' });
  let result: ImportResult;
  let lost: WitnessedLoss[];
  try {
    io.stderr(`store: ${describeDatabase(pinnedDatabase(config.database))}\n`);
    result = await importExportedRows(db, args.file, { trusted, ...(macKeys ? { macKeys } : {}) });
    lost = await witnessedLosses(db, config.audit.witnessDirs, trusted);
  } finally {
    await db.close();
  }
  let recorded = 'not recorded: the trail still misses a witnessed checkpoint';
  if (lost.length === 0) {
    recorded = await withAnyApp(
      args,
      io,
      async (app) => {
        await app.audit.record({
          type: 'audit.import',
          action: 'C',
          outcome: 'success',
          rule: 'audit.rows-restored',
          actor: hostOperator(),
          detail: { fromSeq: result.fromSeq, toSeq: result.toSeq, rows: result.rows, checkpoints: result.checkpoints },
        });
        return 'recorded (audit.import)';
      },
      { writes: true },
    );
  }
  if (args.json) return printJson(io, { ...result, stillLost: lost, recorded });
  io.stdout(`imported seq ${result.fromSeq}..${result.toSeq}: ${result.rows} rows, ${result.checkpoints} checkpoints; ${recorded}\n`);
  for (const l of lost) io.stdout(`still lost: ${l.file} witnessed checkpoint ${l.checkpointId} at seq ${l.seq}; import a newer export, or see "ehrbench audit accept-loss"\n`);
  if (lost.length === 0) io.stdout('the chain holds every witnessed checkpoint again: run "ehrbench audit verify", then start the daemon and workers\n');
  else process.exitCode = 1;
}

const filterOptions = {
  since: { type: 'string', describe: 'From this time (ISO-8601, inclusive)' },
  until: { type: 'string', describe: 'Until this time (exclusive)' },
  actor: { type: 'string', describe: 'Only this principal' },
  type: { type: 'string', describe: 'Only this event type, e.g. endpoint.call' },
  run: { type: 'string', describe: 'Only events of this run id' },
} as const;

export function auditCommand(io: Io): CommandModule<GlobalArgs, GlobalArgs> {
  return {
    command: 'audit <command>',
    describe: 'The tamper-evident audit trail: verify, export, tail, search',
    builder: (y) =>
      y
        .command<VerifyArgs>({
          command: 'verify',
          describe: 'Check the chain, row MACs, signed checkpoints and witness copies; exit 0 only when intact',
          builder: (b) =>
            b
              .options(VERIFY_CLIENT_OPTIONS)
              .option('key', { type: 'string', array: true, describe: 'Trusted audit public key(s) (default: the data directory keys); with --server, your client key (or EHRBENCH_KEY)' })
              .option('witness', { type: 'string', array: true, describe: 'Extra witness file(s) to compare (audit-witness.jsonl, or audit-witness.json of earlier versions)' })
              .option('allow-missing-witness', {
                type: 'boolean',
                default: false,
                describe: 'Report a witness that cannot be read as a warning instead of a failure (a missing witness hides a rollback)',
              })
              .option('export', { type: 'string', describe: 'Verify a JSON-lines export offline instead of the database' })
              .option('mac', { type: 'boolean', default: true, describe: 'Check row MACs when the MAC key is present (--no-mac to skip)' })
              .option('threads', {
                type: 'number',
                describe: 'Threads that read and check a PostgreSQL store (1: streamed by one; default: the cores, at most 4); the embedded store is always streamed',
              }),
          handler: (args) => verifyCommand(args, io),
        })
        .command<FilterArgs & { format: ExportFormat; out?: string }>({
          command: 'export',
          describe: 'Export audit events as JSON lines (verifiable offline), CSV, or FHIR AuditEvent',
          builder: (b) =>
            b
              .options(filterOptions)
              .options(CLIENT_OPTIONS)
              .option('format', { choices: ['jsonl', 'csv', 'fhir'] as const, default: 'jsonl' as const })
              .option('out', { type: 'string', describe: 'Write to this file (default: stdout)' }),
          handler: (args) => exportCommand(args, io),
        })
        .command<FilterArgs & { n: number }>({
          command: 'tail',
          describe: 'Show the newest audit events',
          builder: (b) => b.options(CLIENT_OPTIONS).option('n', { type: 'number', default: 20, describe: 'How many' }),
          handler: async (args) => {
            if (isRemote(args, io)) return printRecords(io, await remoteTail(args, io, args.n), args.json);
            const records = await withApp(args, io, async (app) => {
              await recordRead(app, `tail ${args.n}`, {});
              return tailRecords(app.db, args.n);
            });
            printRecords(io, records, args.json);
          },
        })
        .command<FilterArgs>({
          command: 'search',
          describe: 'Find audit events by actor, type, run and time',
          builder: (b) => b.options(filterOptions).options(CLIENT_OPTIONS).option('limit', { type: 'number', default: 100 }),
          handler: async (args) => {
            const filter = filterOf(args);
            if (isRemote(args, io)) return printRecords(io, await remoteSearch(args, io, filter, args.limit), args.json);
            const records = await withApp(args, io, async (app) => {
              await recordRead(app, 'search', filter);
              const found: AuditRecord[] = [];
              for await (const r of streamRecords(app.db, filter)) {
                found.push(r);
                if (found.length >= (args.limit ?? 100)) break;
              }
              return found;
            });
            printRecords(io, records, args.json);
          },
        })
        .command<GlobalArgs & { file: string }>({
          command: 'import <file>',
          describe: 'After a rollback alarm: put back the rows a restore lost from an earlier audit export (jsonl; host only, every process stopped)',
          builder: (b) => b.positional('file', { type: 'string', demandOption: true, describe: 'A file written by "audit export --format jsonl"' }),
          handler: (args) => importCommand(args, io),
        })
        .command<AcceptLossArgs>({
          command: 'accept-loss',
          describe: 'After a rollback alarm whose rows are lost for good: archive the witness histories and record the loss (host only)',
          builder: (b) =>
            b
              .option('reason', { type: 'string', demandOption: true, describe: "The compliance office's decision, as recorded in the trail (no patient data)" })
              .option('incident', { type: 'string', demandOption: true, describe: 'The incident log entry of the loss' }),
          handler: (args) => acceptLossCommand(args, io),
        })
        .demandCommand(1, 'name a subcommand: verify, export, tail, search, import or accept-loss'),
    handler: () => undefined,
  };
}
