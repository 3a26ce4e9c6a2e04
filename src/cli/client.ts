/**
 * How a CLI command reaches ehrbench: through the daemon over HTTPS with the user's client
 * certificate (--server/--cert/--key/--ca or EHRBENCH_SERVER/_CERT/_KEY/_CA), or, in local mode for the
 * embedded single-user setup, directly against the data directory as the principal mapped to the
 * operating-system account. Both go through the same operations and rules.
 */
import { readFileSync } from 'node:fs';
import { Agent, fetch } from 'undici';
import type { Approval, ApprovalChange, ApprovalInput } from '../access';
import type { AuditRecord, ExportFormat, VerifyReport } from '../audit';
import { openApp, type App } from '../app';
import { isErrorCode, PolicyDenied, UserError } from '../errors';
import { isRule } from '../policy';
import { assertKeyMatches, certificateProblem, type ClientCertificates, clientCertificates } from './certificates';
import {
  type Caller,
  type ExportDownload,
  type ExportView,
  type InstancesQuery,
  localCaller,
  Operations,
  type RunInstances,
  type RunMetaEvaluation,
  type RunRequestInput,
  type RunView,
  type StabilityView,
  type StoppedRunView,
  type StudyDetail,
  type StudyView,
} from '../operations';
import type { StudySpec } from '../ratings';
import type { ExportRequestOptions } from '../export';
import type { DriftCheckView } from '../runs';

export { localCaller };
import type { GlobalArgs } from './context';
import type { Io } from './output';

/** Options of every command that can talk to the daemon. */
export const CLIENT_OPTIONS = {
  server: { type: 'string', describe: 'Daemon URL, e.g. https://ehrbench.internal:8443 (or EHRBENCH_SERVER); without it, local mode' },
  cert: { type: 'string', describe: 'Your client certificate (or EHRBENCH_CERT)' },
  key: { type: 'string', describe: 'Your client key (or EHRBENCH_KEY)' },
  ca: { type: 'string', describe: "The daemon's CA certificate (or EHRBENCH_CA)" },
} as const;

export interface ClientArgs extends GlobalArgs {
  server?: string;
  cert?: string;
  key?: string;
  ca?: string;
}

export interface Whoami {
  principal: string;
  displayName: string | null;
  roles: string[];
  authMethod: string;
}

export interface ApprovalDetail {
  approval: Approval;
  history: { version: number; change: string; changedBy: string; changedAt: string }[];
}

export interface Client {
  whoami(): Promise<Whoami>;
  requestRun(input: RunRequestInput): Promise<RunView>;
  approveRun(id: string): Promise<RunView>;
  cancelRun(id: string, reason: string): Promise<StoppedRunView>;
  listRuns(limit: number): Promise<RunView[]>;
  showRun(id: string): Promise<RunView>;
  listInstances(id: string, query: InstancesQuery): Promise<RunInstances>;
  metaEvaluation(id: string): Promise<RunMetaEvaluation>;
  stability(id: string): Promise<StabilityView>;
  openStudy(spec: StudySpec): Promise<StudyDetail>;
  listStudies(): Promise<StudyView[]>;
  showStudy(id: string): Promise<StudyDetail>;
  closeStudy(id: string): Promise<StudyView>;
  createApproval(input: ApprovalInput): Promise<Approval>;
  listApprovals(): Promise<Approval[]>;
  showApproval(id: string): Promise<ApprovalDetail>;
  changeApproval(id: string, change: ApprovalChange, reason: string): Promise<Approval>;
  driftChecks(): Promise<DriftCheckView[]>;
  reviewDrift(id: string, note?: string): Promise<{ approvalId: string; reviewed: number }>;
  revokePrincipal(id: string, reason: string): Promise<{ principal: string; revoked: number }>;
  requestExport(runIds: string[], opts?: ExportRequestOptions): Promise<ExportView>;
  listExports(limit: number): Promise<ExportView[]>;
  showExport(id: string): Promise<ExportView>;
  releaseExport(id: string, format: 'bundle' | 'helm'): Promise<{ export: ExportView; files: ExportDownload }>;
  withdrawExport(id: string, reason: string): Promise<ExportView>;
  downloadExport(id: string): Promise<ExportDownload>;
  close(): Promise<void>;
}

class LocalClient implements Client {
  private readonly ops: Operations;
  private readonly caller: Caller;
  constructor(private readonly app: App) {
    this.ops = new Operations(app);
    this.caller = localCaller(app);
  }
  whoami = async () => this.ops.whoami(this.caller);
  requestRun = (input: RunRequestInput) => this.ops.requestRun(this.caller, input);
  approveRun = (id: string) => this.ops.approveRun(this.caller, id);
  cancelRun = (id: string, reason: string) => this.ops.cancelRun(this.caller, id, reason);
  listRuns = (limit: number) => this.ops.listRuns(this.caller, limit);
  showRun = (id: string) => this.ops.showRun(this.caller, id);
  listInstances = (id: string, query: InstancesQuery) => this.ops.listInstances(this.caller, id, query);
  metaEvaluation = (id: string) => this.ops.metaEvaluation(this.caller, id);
  stability = (id: string) => this.ops.stability(this.caller, id);
  openStudy = (spec: StudySpec) => this.ops.studies.open(this.caller, spec);
  listStudies = () => this.ops.studies.list(this.caller);
  showStudy = (id: string) => this.ops.studies.detail(this.caller, id);
  closeStudy = (id: string) => this.ops.studies.close(this.caller, id);
  createApproval = (input: ApprovalInput) => this.ops.createApproval(this.caller, input);
  listApprovals = () => this.ops.listApprovals(this.caller);
  showApproval = (id: string) => this.ops.showApproval(this.caller, id);
  changeApproval = (id: string, change: ApprovalChange, reason: string) => this.ops.changeApproval(this.caller, id, change, reason);
  driftChecks = () => this.ops.driftChecks(this.caller);
  reviewDrift = (id: string, note?: string) => this.ops.reviewDrift(this.caller, id, note);
  revokePrincipal = (id: string, reason: string) => this.ops.revokePrincipal(this.caller, id, reason);
  requestExport = (runIds: string[], opts: ExportRequestOptions = {}) => this.ops.requestExport(this.caller, runIds, opts);
  listExports = (limit: number) => this.ops.listExports(this.caller, limit);
  showExport = (id: string) => this.ops.showExport(this.caller, id);
  releaseExport = (id: string, format: 'bundle' | 'helm') => this.ops.releaseExport(this.caller, id, format);
  withdrawExport = (id: string, reason: string) => this.ops.withdrawExport(this.caller, id, reason);
  downloadExport = (id: string) => this.ops.downloadExport(this.caller, id);
  close = () => this.app.close();
}

function readFile(file: string, what: string): string {
  try {
    return readFileSync(file, 'utf8');
  } catch (err) {
    throw new UserError('client.file-missing', `${file}: ${what} cannot be read (${(err as NodeJS.ErrnoException).code ?? 'error'})`);
  }
}

/** What an audit query may name (the daemon's /v1/audit routes). */
export interface AuditQuery {
  since?: string;
  until?: string;
  actor?: string;
  type?: string;
  run?: string;
  limit?: number;
  format?: ExportFormat;
}

/** Audit review over the daemon, for compliance officers and auditors without a shell on the host. */
export interface AuditReviewClient {
  auditTail(n: number): Promise<AuditRecord[]>;
  auditSearch(query: AuditQuery): Promise<AuditRecord[]>;
  auditVerify(): Promise<VerifyReport>;
  /** The export's text as the daemon streams it, once the daemon accepted the request. */
  auditExport(query: AuditQuery): Promise<AsyncIterable<Uint8Array>>;
}

function queryString(query: AuditQuery | InstancesQuery): string {
  const params = new URLSearchParams();
  for (const [k, v] of Object.entries(query)) if (v !== undefined) params.set(k, String(v));
  const text = params.toString();
  return text ? `?${text}` : '';
}

class RemoteClient implements Client, AuditReviewClient {
  private readonly agent: Agent;
  constructor(
    private readonly base: string,
    tls: { cert: string; key: string; ca?: string },
    private readonly certs: ClientCertificates,
  ) {
    this.agent = new Agent({ connect: { cert: tls.cert, key: tls.key, ...(tls.ca ? { ca: tls.ca } : {}), rejectUnauthorized: true, minVersion: 'TLSv1.2' } });
  }

  /** One request to the daemon; a connection that fails is named by what the certificates say of it. */
  private async send(method: 'GET' | 'POST', path: string, body?: unknown) {
    try {
      return await fetch(new URL(path, this.base), {
        method,
        dispatcher: this.agent,
        redirect: 'error',
        headers: body === undefined ? {} : { 'content-type': 'application/json' },
        ...(body === undefined ? {} : { body: JSON.stringify(body) }),
      });
    } catch (err) {
      const code = (err as { cause?: { code?: string } }).cause?.code;
      // A certificate problem is named as one; only what the certificates do not explain is "unreachable".
      throw (
        certificateProblem(code, this.base, this.certs) ??
        new UserError('client.unreachable', `cannot reach the daemon at ${this.base} (${code ?? 'connection failed'}); check --server and your certificate`)
      );
    }
  }

  private async call<T>(method: 'GET' | 'POST', path: string, body?: unknown): Promise<T> {
    const res = await this.send(method, path, body);
    const text = await res.text();
    let payload: unknown;
    try {
      payload = text ? JSON.parse(text) : undefined;
    } catch {
      throw new UserError('client.bad-answer', `the daemon answered HTTP ${res.status} with something that is not JSON`);
    }
    if (res.ok) return payload as T;
    throw this.refusal(res.status, payload);
  }

  /** A streamed answer: its body, a piece at a time, once the daemon accepted the request. */
  private async stream(path: string): Promise<AsyncIterable<Uint8Array>> {
    const res = await this.send('GET', path);
    if (res.ok && res.body) return res.body as unknown as AsyncIterable<Uint8Array>;
    let payload: unknown;
    try {
      payload = JSON.parse(await res.text());
    } catch {
      payload = undefined;
    }
    throw this.refusal(res.status, payload);
  }

  /** The daemon's refusal as the error the same call in local mode would throw. */
  private refusal(status: number, payload: unknown): Error {
    const e = (payload ?? {}) as { error?: string; rule?: string; message?: string };
    if (status === 403 && e.rule) return new PolicyDenied(isRule(e.rule) ? e.rule : 'access.unnamed-rule', (e.message ?? '').replace(/^denied by rule [^:]+: /, ''));
    // The daemon's code, so the exit code is the one a local call would give; a code this client
    // does not know (a newer daemon) is named in the message instead.
    const code = isErrorCode(e.error) ? e.error : 'client.http-error';
    const unknown = code === 'client.http-error' && e.error ? ` [${String(e.error).slice(0, 80)}]` : '';
    return new UserError(code, `${e.message ?? `HTTP ${status}`} (HTTP ${status})${unknown}`);
  }

  whoami = () => this.call<Whoami>('GET', '/v1/whoami');
  requestRun = (input: RunRequestInput) => this.call<RunView>('POST', '/v1/runs', input);
  approveRun = (id: string) => this.call<RunView>('POST', `/v1/runs/${encodeURIComponent(id)}/approve`, {});
  cancelRun = (id: string, reason: string) => this.call<StoppedRunView>('POST', `/v1/runs/${encodeURIComponent(id)}/cancel`, { reason });
  listRuns = (limit: number) => this.call<RunView[]>('GET', `/v1/runs?limit=${limit}`);
  showRun = (id: string) => this.call<RunView>('GET', `/v1/runs/${encodeURIComponent(id)}`);
  listInstances = (id: string, query: InstancesQuery) => this.call<RunInstances>('GET', `/v1/runs/${encodeURIComponent(id)}/instances${queryString(query)}`);
  metaEvaluation = (id: string) => this.call<RunMetaEvaluation>('GET', `/v1/runs/${encodeURIComponent(id)}/meta-evaluation`);
  stability = (id: string) => this.call<StabilityView>('GET', `/v1/runs/${encodeURIComponent(id)}/stability`);
  openStudy = (spec: StudySpec) => this.call<StudyDetail>('POST', '/v1/studies', spec);
  listStudies = () => this.call<StudyView[]>('GET', '/v1/studies');
  showStudy = (id: string) => this.call<StudyDetail>('GET', `/v1/studies/${encodeURIComponent(id)}`);
  closeStudy = (id: string) => this.call<StudyView>('POST', `/v1/studies/${encodeURIComponent(id)}/close`, {});
  createApproval = (input: ApprovalInput) => this.call<Approval>('POST', '/v1/approvals', input);
  listApprovals = () => this.call<Approval[]>('GET', '/v1/approvals');
  showApproval = (id: string) => this.call<ApprovalDetail>('GET', `/v1/approvals/${encodeURIComponent(id)}`);
  changeApproval = (id: string, change: ApprovalChange, reason: string) => this.call<Approval>('POST', `/v1/approvals/${encodeURIComponent(id)}/${change}`, { reason });
  driftChecks = () => this.call<DriftCheckView[]>('GET', '/v1/drift');
  reviewDrift = (id: string, note?: string) => this.call<{ approvalId: string; reviewed: number }>('POST', `/v1/approvals/${encodeURIComponent(id)}/review-drift`, note ? { note } : {});
  revokePrincipal = (id: string, reason: string) => this.call<{ principal: string; revoked: number }>('POST', `/v1/principals/${encodeURIComponent(id)}/revoke`, { reason });
  requestExport = (runIds: string[], opts: ExportRequestOptions = {}) =>
    this.call<ExportView>('POST', '/v1/exports', { runIds, ...(opts.allowMixedData ? { allowMixedData: true } : {}), ...(opts.packet ? { packet: true } : {}) });
  listExports = (limit: number) => this.call<ExportView[]>('GET', `/v1/exports?limit=${limit}`);
  showExport = (id: string) => this.call<ExportView>('GET', `/v1/exports/${encodeURIComponent(id)}`);
  releaseExport = (id: string, format: 'bundle' | 'helm') => this.call<{ export: ExportView; files: ExportDownload }>('POST', `/v1/exports/${encodeURIComponent(id)}/release`, { format });
  withdrawExport = (id: string, reason: string) => this.call<ExportView>('POST', `/v1/exports/${encodeURIComponent(id)}/withdraw`, { reason });
  downloadExport = (id: string) => this.call<ExportDownload>('GET', `/v1/exports/${encodeURIComponent(id)}/files`);
  auditTail = (n: number) => this.call<AuditRecord[]>('GET', `/v1/audit/tail?n=${encodeURIComponent(n)}`);
  auditSearch = (query: AuditQuery) => this.call<AuditRecord[]>('GET', `/v1/audit/events${queryString(query)}`);
  auditVerify = () => this.call<VerifyReport>('GET', '/v1/audit/verify');
  auditExport = (query: AuditQuery) => this.stream(`/v1/audit/export${queryString(query)}`);
  close = () => this.agent.close();
}

/** The daemon's URL when the command talks to the daemon (--server or EHRBENCH_SERVER), else undefined: local mode. */
function serverOf(args: Pick<ClientArgs, 'server'>, io: Io): string | undefined {
  return args.server ?? io.env.EHRBENCH_SERVER;
}

export function isRemote(args: Pick<ClientArgs, 'server'>, io: Io): boolean {
  return serverOf(args, io) !== undefined;
}

/** What a command does with the store it reaches; only a command that writes may migrate a local one. */
export interface ClientUse {
  writes: boolean;
}

export async function openClient(args: ClientArgs, io: Io, use: ClientUse): Promise<Client> {
  const server = serverOf(args, io);
  if (!server) {
    const app = await openApp({ ...(args.config ? { file: args.config } : {}), env: io.env, consoleLog: false, migrate: use.writes });
    try {
      return new LocalClient(app);
    } catch (err) {
      await app.close();
      throw err;
    }
  }
  return openRemote(server, args, io);
}

function openRemote(server: string, args: ClientArgs, io: Io): RemoteClient {
  const cert = args.cert ?? io.env.EHRBENCH_CERT;
  const key = args.key ?? io.env.EHRBENCH_KEY;
  const ca = args.ca ?? io.env.EHRBENCH_CA;
  if (!cert || !key) throw new UserError('client.no-certificate', 'talking to the daemon needs your client certificate: --cert FILE --key FILE (or EHRBENCH_CERT, EHRBENCH_KEY)');
  let url: URL;
  try {
    url = new URL(server);
  } catch {
    throw new UserError('client.bad-server', `--server must be an https URL, e.g. https://ehrbench.hospital.internal:8443`);
  }
  if (url.protocol !== 'https:') throw new UserError('client.bad-server', '--server must use https');
  const tls = { cert: readFile(cert, 'client certificate'), key: readFile(key, 'client key'), ...(ca ? { ca: readFile(ca, 'daemon CA') } : {}) };
  if (!/-----BEGIN (RSA |EC |ENCRYPTED )?PRIVATE KEY-----/.test(tls.key)) {
    throw new UserError('client.certificate-invalid', `${key}: not a private key (PEM); give your client key with --key (the .key.pem file that goes with --cert)`);
  }
  // Read before any connection: an expired certificate is named, not reported as a network failure.
  const certs = clientCertificates(cert, tls.cert, ca && tls.ca ? { file: ca, pem: tls.ca } : undefined);
  assertKeyMatches(certs, key, tls.key);
  return new RemoteClient(url.origin, tls, certs);
}

/** Audit review over the daemon: --server (or EHRBENCH_SERVER) is required. */
export async function withDaemon<T>(args: ClientArgs, io: Io, fn: (c: AuditReviewClient) => Promise<T>): Promise<T> {
  const server = serverOf(args, io);
  if (!server) throw new UserError('cli.usage', 'this needs the daemon: give --server https://host:8443 (or EHRBENCH_SERVER)');
  const client = openRemote(server, args, io);
  try {
    return await fn(client);
  } finally {
    await client.close();
  }
}

/** Opens the daemon's API, or the local store (local mode) for one command: `use.writes` says whether it writes. */
export async function withClient<T>(args: ClientArgs, io: Io, fn: (c: Client) => Promise<T>, use: ClientUse): Promise<T> {
  const client = await openClient(args, io, use);
  try {
    return await fn(client);
  } finally {
    await client.close();
  }
}
