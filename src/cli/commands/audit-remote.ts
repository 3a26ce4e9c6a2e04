/**
 * `ehrbench audit tail | search | verify | export --server ...`: the same review through the daemon,
 * as the principal of the client certificate, so an auditor needs no shell on the host, no database
 * URL and no keys. The daemon checks the role and audits every read; printing is audit.ts's, as in
 * local mode.
 */
import { closeSync, openSync, renameSync, rmSync, writeSync } from 'node:fs';
import type { AuditRecord, ExportFormat, RecordFilter, VerifyReport } from '../../audit';
import { UserError } from '../../errors';
import { type AuditQuery, CLIENT_OPTIONS, type ClientArgs, withDaemon } from '../client';
import type { Io } from '../output';

function query(filter: RecordFilter): AuditQuery {
  return {
    ...(filter.since ? { since: filter.since } : {}),
    ...(filter.until ? { until: filter.until } : {}),
    ...(filter.actor ? { actor: filter.actor } : {}),
    ...(filter.type ? { type: filter.type } : {}),
    ...(filter.runId ? { run: filter.runId } : {}),
  };
}

function positive(value: number | undefined, name: string): number | undefined {
  if (value === undefined) return undefined;
  if (!Number.isInteger(value) || value < 1 || value > 10_000) throw new UserError('cli.usage', `--${name} must be a whole number from 1 to 10000 (got ${String(value)})`);
  return value;
}

export function remoteTail(args: ClientArgs, io: Io, n: number): Promise<AuditRecord[]> {
  const count = positive(n, 'n') ?? 20;
  return withDaemon(args, io, (c) => c.auditTail(count));
}

export function remoteSearch(args: ClientArgs, io: Io, filter: RecordFilter, limit: number | undefined): Promise<AuditRecord[]> {
  const max = positive(limit, 'limit');
  return withDaemon(args, io, (c) => c.auditSearch({ ...query(filter), ...(max ? { limit: max } : {}) }));
}

/**
 * `audit verify` has its own --key (trusted audit public keys, for a verification here); with --server
 * that option is the client key, as on every other command, so only --server, --cert and --ca are added.
 */
export const VERIFY_CLIENT_OPTIONS = { server: CLIENT_OPTIONS.server, cert: CLIENT_OPTIONS.cert, ca: CLIENT_OPTIONS.ca };

export interface RemoteVerifyArgs extends Omit<ClientArgs, 'key'> {
  /** With --server: the client key (one); without: trusted audit public keys. */
  key?: string[];
  witness?: string[];
  mac?: boolean;
  allowMissingWitness?: boolean;
}

/** The daemon verifies with its own keys and witnesses: options that name files here do not apply. */
export function remoteVerify(args: RemoteVerifyArgs, io: Io): Promise<VerifyReport> {
  if ((args.key?.length ?? 0) > 1) throw new UserError('cli.usage', 'with --server, --key is your client key: give it once');
  const local = [args.witness?.length ? '--witness' : undefined, args.allowMissingWitness ? '--allow-missing-witness' : undefined, args.mac === false ? '--no-mac' : undefined].find(Boolean);
  if (local) throw new UserError('cli.usage', `${local} is for a verification on this machine; over --server the daemon verifies with its own keys and witnesses`);
  const { key, ...rest } = args;
  return withDaemon({ ...rest, ...(key?.[0] ? { key: key[0] } : {}) }, io, (c) => c.auditVerify());
}

/** Events in a piece of export text, by format: what the line that carries one starts with. */
function countEvents(text: string, format: ExportFormat): number {
  const lines = text.split('\n');
  if (format === 'jsonl') return lines.filter((l) => l.startsWith('{"kind":"event"')).length;
  if (format === 'fhir') return lines.filter((l) => l.startsWith('{"resource"')).length;
  return lines.filter((l) => l.length > 0).length;
}

/**
 * Streams the daemon's export to --out (a temporary file, renamed when complete: an export that breaks
 * off leaves nothing) or to stdout.
 */
export async function remoteExport(args: ClientArgs & { out?: string }, io: Io, filter: RecordFilter, format: ExportFormat): Promise<void> {
  await withDaemon(args, io, async (c) => {
    const body = await c.auditExport({ ...query(filter), format });
    const tmp = args.out ? `${args.out}.${process.pid}.tmp` : undefined;
    const fd = tmp ? openSync(tmp, 'w', 0o600) : undefined;
    const decoder = new TextDecoder();
    let count = 0;
    let partial = '';
    try {
      for await (const chunk of body) {
        const text = partial + decoder.decode(chunk, { stream: true });
        const cut = text.lastIndexOf('\n') + 1;
        count += countEvents(text.slice(0, cut), format);
        partial = text.slice(cut);
        if (fd === undefined) io.stdout(text.slice(0, cut));
        else writeSync(fd, text.slice(0, cut));
      }
      partial += decoder.decode();
      count += countEvents(partial, format);
      if (fd === undefined) io.stdout(partial);
      else writeSync(fd, partial);
    } catch (err) {
      if (fd !== undefined && tmp) {
        closeSync(fd);
        rmSync(tmp, { force: true });
      }
      const code = (err as { code?: string; cause?: { code?: string } }).cause?.code ?? (err as { code?: string }).code ?? 'error';
      throw new UserError('client.unreachable', `the export from the daemon broke off (${String(code).slice(0, 40)}); nothing was written${args.out ? ` to ${args.out}` : ''}`);
    }
    if (fd !== undefined && tmp && args.out) {
      closeSync(fd);
      renameSync(tmp, args.out);
      // CSV: the header line is not an event.
      io.stderr(`exported ${format === 'csv' ? Math.max(0, count - 1) : count} audit events to ${args.out}\n`);
    }
  });
}
