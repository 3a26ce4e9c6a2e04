/**
 * The release workflow, the only door out:
 *   request  (the researcher, own completed runs)  -> content computed, checked, stored as a preview
 *   show     (compliance reviews exactly what would leave, after suppression)
 *   release  (compliance, never the requester)     -> checks again, audits export.release, seals a
 *            checkpoint over it, signs, records the cohort in the ledger and finalises the export
 *            (once), then writes the files atomically
 *   download (requester or compliance) the released bundle, byte for byte
 * Every refusal is audited as export.deny and names its rule. Roles are established by the caller
 * (src/operations); this module applies the rules that depend on the export itself.
 */
import { commandPrefix } from '../command-prefix';
import { randomUUID } from 'node:crypto';
import { type Approval, approvalStatusAt } from '../access';
import type { App } from '../app';
import { canonicalJson, sha256Hex } from '../canonical';
import { formatSchemaErrors, validatorFor } from '../schema';
import { PolicyDenied, UserError } from '../errors';
import type { Actor } from '../identity';
import { decide, type RuleId } from '../policy';
import { latestValidation } from '../ratings';
import { pinsOf, type RunRow } from '../runs';
import { pinDifferenceLine, pinDifferences } from '../contracts';
import { DAEMON_VERSION } from '../version';
import { signBundle } from './bundle';
import { buildContent, safeId, type ReleasedCohort } from './content';
import { buildPacket } from './packet-content';
import { dataRevisionReport, revisionsLine, versionReport, versionsLine } from './run-scores';
import type { DisclosureSettings } from './disclosure';
import { helmFilesFor } from './helm';
import { loadExportSigningKey } from './keys';
import { cellName, type ExportRow, ExportStore, RELEASE_LOCK_KEY } from './store';
import type { ExportContent, HelmFileRef, UnsignedBundle } from './types';
import { type ExportFiles, type WriteFile, writeDurably, writeExportFiles } from './write';
import type { Queryable } from '../db';

export type ExportFormat = 'bundle' | 'helm';

export interface ExportServiceOptions {
  writeFile?: WriteFile;
  clock?: () => Date;
}

/** Metric values and intervals are released with three decimals, as MedHELM's leaderboard shows them. */
const VALUE_DECIMALS = 3;

const day = (d: Date) => d.toISOString().slice(0, 10);

/** What a request may allow (runs whose pins differ) and ask for (the evidence packet). */
export interface RequestOptions {
  allowMixedData?: boolean;
  packet?: boolean;
}

export class ExportService {
  readonly store: ExportStore;
  private readonly writeFile: WriteFile;
  private readonly clock: () => Date;

  constructor(
    private readonly app: App,
    opts: ExportServiceOptions = {},
  ) {
    this.store = new ExportStore(app.db);
    this.writeFile = opts.writeFile ?? writeDurably;
    this.clock = opts.clock ?? (() => new Date());
  }

  get settings(): DisclosureSettings {
    return { k: this.app.config.export.minCellSize, width: this.app.config.export.countRangeWidth, decimals: VALUE_DECIMALS };
  }

  /** Audits a refusal (export.deny) and throws it. */
  private async refuse(actor: Actor, rule: RuleId, reason: string, exportId?: string): Promise<never> {
    await this.app.audit.record({
      type: 'export.deny',
      action: 'E',
      outcome: 'denied',
      rule,
      reason: reason.slice(0, 300),
      actor,
      ...(exportId ? { subject: { exportId } } : {}),
    });
    throw new PolicyDenied(rule, reason);
  }

  /**
   * `allowMixedData`: runs of one benchmark may differ in data or another pin; the content then says so
   * (mixedDataRevisions, mixedPins). `packet`: the bundle carries the evidence packet of its one model
   * under its one approval (packet-content.ts).
   */
  async request(actor: Actor, runIds: string[], opts: RequestOptions = {}): Promise<ExportRow> {
    const exportId = randomUUID();
    const ids = [...new Set(runIds.map((id) => id.toLowerCase()))];
    if (ids.length === 0) throw new UserError('export.no-runs', 'name at least one run: --runs ID...');
    const runs: RunRow[] = [];
    for (const id of ids) {
      const run = await this.app.engine.store.getRun(id);
      if (!run || run.requested_by !== actor.principal) {
        await this.refuse(actor, 'export.run-not-owned', `run ${safeId(id)} does not exist or was not requested by ${actor.principal}; only your own runs can be exported`, exportId);
      }
      runs.push(run as RunRow);
    }
    const requestedAt = this.clock();
    const checked = await this.checkedContent(runs, exportId, actor.principal, day(requestedAt), { allowMixedData: opts.allowMixedData === true, packet: opts.packet === true });
    if (!checked.ok) return this.refuse(actor, checked.rule, checked.reason, exportId);
    const { content, cohorts } = checked;
    const text = canonicalJson(content);
    const contentSha256 = sha256Hex(text);
    await this.app.audit.record({
      type: 'export.request',
      action: 'C',
      outcome: 'success',
      rule: 'export.request.own-completed-runs',
      actor,
      ...(content.irbProtocol ? { irbProtocol: content.irbProtocol } : {}),
      subject: { exportId, tier: content.tier },
      detail: { runs: runs.length, releasedCells: cohorts.length, contentSha256 },
    });
    await this.store.insert({ exportId, requestedBy: actor.principal, requestedAt, runIds: runs.map((r) => r.run_id), content: text, contentSha256 });
    return (await this.store.get(exportId)) as ExportRow;
  }

  /**
   * The rules an export must pass when requested and again when released: completed runs of one
   * requester, under at most one IRB protocol, each approval still active; then the content, and no
   * released cohort that differs from an earlier one (or another in this export) by 1..k-1 instances.
   */
  private async checkedContent(runs: RunRow[], exportId: string, requestedBy: string, requestedOn: string, opts: { allowMixedData: boolean; packet: boolean }): Promise<Checked> {
    const { allowMixedData } = opts;
    const refusal = (rule: RuleId, reason: string): Checked => ({ ok: false, rule, reason });
    for (const run of runs) {
      if (run.status !== 'completed') return refusal('export.run-not-completed', `run ${run.run_id} is ${run.status}; only completed runs can be exported`);
      // A test endpoint's answers mean nothing: they never leave, so they can never pass for real ones.
      if (run.spec.endpoint.test === true) {
        return refusal(
          'export.test-endpoint',
          `run ${run.run_id} went to the test endpoint ${run.endpoint_id} (a loopback stand-in): its results mean nothing and are never released; run it on a real endpoint`,
        );
      }
    }
    if (new Set(runs.map((r) => r.spec.irbProtocol).filter(Boolean)).size > 1) {
      return refusal('export.mixed-protocols', 'the runs were made under different IRB protocols; request one export per protocol');
    }
    // Runs of one benchmark that read different data are not put side by side unless the requester said so.
    const { mixed } = dataRevisionReport(runs.map((r) => ({ runId: r.run_id, benchmarkId: r.benchmark_id, data: r.spec.data ?? null })));
    if (mixed.length > 0 && !allowMixedData) {
      return refusal(
        'export.data-revisions-differ',
        `runs of ${mixed.map(revisionsLine).join('; ')} read different data, so their results are not comparable; export runs of one data revision, or request again allowing mixed data (--allow-mixed-data), and the bundle then lists the revisions`,
      );
    }
    const [older] = versionReport(runs.map((r) => ({ runId: r.run_id, benchmarkId: r.benchmark_id, benchmarkVersion: r.benchmark_version })));
    if (older && !allowMixedData) {
      return refusal(
        'export.benchmark-versions-differ',
        `runs of ${versionsLine(older)} ran different versions of the benchmark (other prompts or scoring), so their results are not comparable; export runs of one version, or request again allowing mixed runs (--allow-mixed-data), and each result in the bundle names its version`,
      );
    }
    // The other pins (template, scorer, judges, definition): the same rule, and the bundle says which differ.
    const pins = pinDifferences(runs.map((r) => ({ runId: r.run_id, benchmarkId: r.benchmark_id, pins: pinsOf(r.spec) })));
    if (pins.length > 0 && !allowMixedData) {
      return refusal(
        'export.pins-differ',
        `${pins.map(pinDifferenceLine).join('; ')}: their results are not comparable; export runs with the same pins, or request again allowing mixed runs (--allow-mixed-data), and the bundle then lists what differs`,
      );
    }
    const approvals = new Map<string, Approval>();
    for (const run of runs) {
      if (!run.approval_id) {
        if (run.tier !== 'public') return refusal('export.approval-missing', `run ${run.run_id} is ${run.tier} but bound to no IRB approval`);
        continue;
      }
      const approval = approvals.get(run.approval_id) ?? (await this.app.approvals.get(run.approval_id));
      if (!approval) return refusal('export.approval-missing', `the approval of run ${run.run_id} does not exist`);
      approvals.set(approval.approvalId, approval);
      const problem = run.tier === 'public' ? undefined : inactive(approval, this.clock());
      if (problem) return refusal('export.approval-inactive', `approval ${safeId(approval.protocolNumber)} of run ${run.run_id} is ${problem}; results under it cannot be released`);
    }
    const built = await buildContent(
      {
        exports: this.store,
        runs: this.app.engine.store,
        catalog: this.app.catalog(),
        prices: this.app.config.export.prices,
        settings: this.settings,
        juryValidation: (benchmarkId) => latestValidation(this.app.ratings, this.app.engine.store, benchmarkId),
        // Ids and days only: the allowlisted headers stay in the store (their hash is in the fingerprint).
        fingerprints: async (runId) => (await this.app.fingerprints.ofRun(runId)).map(({ headers: _headers, ...f }) => f),
        staleApprovals: once(() => this.app.canary.staleApprovals()),
      },
      { exportId, siteId: this.app.config.site.id, requestedBy, requestedOn, runs, approvals },
    );
    const { cohorts } = built;
    const packetDeps = { db: this.app.db, runs: this.app.engine.store, exports: this.store, settings: this.settings, driftChecks: (id: string) => this.app.canary.checks([id]) };
    const packet = opts.packet ? await buildPacket(packetDeps, runs, approvals, built.content.results) : undefined;
    if (packet && !packet.ok) return refusal(packet.rule, packet.reason);
    const content: ExportContent = {
      ...built.content,
      ...(mixed.length > 0 ? { mixedDataRevisions: mixed } : {}),
      ...(pins.length > 0 ? { mixedPins: pins.map((d) => ({ benchmarkId: d.benchmarkId, differs: d.differs })) } : {}),
      ...(packet?.ok ? { packet: packet.packet } : {}),
    };
    // What cannot go into a bundle (a model name with spaces, say) is refused now, not after a release is audited.
    const validate = validatorFor('api/export-preview.schema.json');
    if (!validate(content)) {
      throw new UserError(
        'export.content-invalid',
        `the export cannot be represented in a bundle (${formatSchemaErrors(validate.errors).join('; ')}); fix the named field (endpoint or benchmark ids, model names) and request again`,
      );
    }
    const close = await this.differencing(this.app.db, cohorts, exportId);
    if (close) return refusal('disclosure.differencing', close);
    return { ok: true, content, cohorts };
  }

  /**
   * Why a released cell of this export is too close to another one, if it is: compared by the
   * instances they cover, whatever the cells are called, with each other and with every cell released
   * earlier of the same benchmark (the whole cohort of one run and a subgroup cell of another alike).
   */
  private async differencing(q: Queryable, cohorts: ReleasedCohort[], exportId: string): Promise<string | undefined> {
    const k = this.settings.k;
    const describe = (c: ReleasedCohort | undefined) => `run ${c?.runId} (${c?.cell.field ? `subgroup ${cellName(c.cell)}` : 'whole cohort'})`;
    const [close] = await this.store.closeCells(cohorts, k, { ledger: true, exceptExport: exportId }, q);
    if (!close) return undefined;
    if ('released' in close) {
      const r = close.released;
      return `${describe(cohorts[close.a])} differs from run ${r.runId} (${r.cell ? `subgroup ${r.cell}` : 'whole cohort'}) released in export ${r.exportId} by fewer than k = ${k} instances; releasing both would give those instances away: export runs whose cells match the released ones exactly or differ by at least k`;
    }
    return `${describe(cohorts[close.a])} and ${describe(cohorts[close.b])} differ by fewer than k = ${k} instances; releasing both would give those instances away: leave one of them out of the export`;
  }

  /** Withdraws a waiting export: recorded first (export.deny, rule export.withdrawn), then final. */
  async withdraw(actor: Actor, row: ExportRow, reason: string): Promise<ExportRow> {
    const exportId = row.export_id;
    if (row.state !== 'requested') await this.refuse(actor, 'export.not-waiting', `export ${exportId} is ${row.state}; only an export that waits for release can be withdrawn`, exportId);
    await this.app.db.transaction(async (tx) => {
      await this.app.audit.recordIn(tx, {
        type: 'export.deny',
        action: 'U',
        outcome: 'success',
        rule: 'export.withdrawn',
        reason: `withdrawn by ${actor.principal}: ${reason}`.slice(0, 300),
        actor,
        subject: { exportId },
      });
      if (!(await this.store.withdraw(tx, exportId))) throw new UserError('export.changed', `export ${exportId} was released or withdrawn meanwhile; see "${commandPrefix()} export show ${exportId}"`);
    });
    return (await this.store.get(exportId)) as ExportRow;
  }

  async release(actor: Actor, exportId: string, format: ExportFormat): Promise<{ row: ExportRow; files: ExportFiles; path: string }> {
    const row = await this.store.get(exportId);
    if (!row) throw new UserError('export.not-found', `export ${exportId} does not exist`);
    if (row.state === 'released') await this.refuse(actor, 'export.already-released', `export ${exportId} was released by ${row.released_by}; a bundle is released once`, exportId);
    if (row.state === 'withdrawn') await this.refuse(actor, 'export.withdrawn', `export ${exportId} was withdrawn; the requester requests a new export`, exportId);
    // The gate again (operations asked it already), on the actor as it reaches the service.
    const gate = decide({ id: actor.principal, roles: actor.role === 'service' ? [] : [actor.role] }, 'export.release', { requestedBy: row.requested_by });
    if (!gate.allowed) {
      const why = gate.rule === 'sod.releaser-is-requester' ? `export ${exportId} was requested by ${actor.principal}; a different compliance officer must release it` : gate.reason;
      await this.refuse(actor, gate.rule, why, exportId);
    }
    const runs: RunRow[] = [];
    for (const id of row.run_ids) {
      const run = await this.app.engine.store.getRun(id);
      if (!run) await this.refuse(actor, 'export.run-missing', `run ${id} of export ${exportId} no longer exists`, exportId);
      runs.push(run as RunRow);
    }
    // What the request allowed and asked for is in its stored content: the same content is rebuilt and compared.
    const stored = JSON.parse(row.content) as Partial<ExportContent>;
    const allowedMixed = stored.mixedDataRevisions !== undefined || stored.mixedPins !== undefined;
    const checked = await this.checkedContent(runs, exportId, row.requested_by, day(row.requested_at), { allowMixedData: allowedMixed, packet: stored.packet !== undefined });
    if (!checked.ok) return this.refuse(actor, checked.rule, checked.reason, exportId);
    const { content, cohorts } = checked;
    const text = canonicalJson(content);
    if (sha256Hex(text) !== row.content_sha256) {
      await this.refuse(
        actor,
        'export.preview-stale',
        `the aggregates of export ${exportId} differ from the preview that was reviewed (runs, disclosure settings or, after an upgrade, the preview's format changed); withdraw it ("${commandPrefix()} export withdraw ${exportId} --reason ...") and request a new export`,
        exportId,
      );
    }
    const key = loadExportSigningKey(this.app.config.keysDir);

    // The release is in the audit trail, and a signed checkpoint covers it, before anything is written.
    await this.app.audit.record({
      type: 'export.release',
      action: 'E',
      outcome: 'success',
      rule: 'sod.compliance-release',
      reason: `released by ${actor.principal} for requester ${row.requested_by}`,
      actor,
      ...(content.irbProtocol ? { irbProtocol: content.irbProtocol } : {}),
      subject: { exportId, tier: content.tier },
      detail: { runs: runs.length, contentSha256: row.content_sha256, format },
    });
    const releaseEventSeq = await this.store.releaseEventSeq(exportId);
    const checkpoint = await this.app.audit.sealCovering();
    if (releaseEventSeq === undefined || !checkpoint || checkpoint.seq < releaseEventSeq) {
      throw new UserError('export.audit-not-sealed', `no signed checkpoint covers the release of export ${exportId}; nothing was written`);
    }

    const helm = format === 'helm' ? helmFilesFor(content.results, (id) => this.app.catalog().get(id)) : [];
    const helmRefs: HelmFileRef[] = helm.map((h) => ({ runName: h.runName, runSpecSha256: sha256Hex(h.runSpec), statsSha256: sha256Hex(h.stats) }));
    const unsigned: UnsignedBundle = {
      ...content,
      format: 'ehrbench.export-bundle',
      schemaVersion: 1,
      createdOn: day(this.clock()),
      releasedBy: actor.principal,
      daemonVersion: DAEMON_VERSION,
      auditCheckpoint: { ...checkpoint, releaseEventSeq },
      helm: helmRefs,
    };
    const signed = signBundle(unsigned, key);
    const files: ExportFiles = { exportId, bundle: signed.text, helm: helm.map((h) => ({ dir: h.dir, runSpec: h.runSpec, stats: h.stats })) };

    const outcome = await this.store
      .transaction(async (tx): Promise<Refusal | undefined> => {
        await tx.query('SELECT pg_advisory_xact_lock($1)', [RELEASE_LOCK_KEY]);
        const close = await this.differencing(tx, cohorts, exportId);
        if (close) return { rule: 'disclosure.differencing', reason: close };
        for (const c of cohorts) await this.store.recordCohort(tx, exportId, c.runId, c.benchmarkId, c.cell);
        const done = await this.store.finalize(tx, {
          exportId,
          releasedBy: actor.principal,
          format,
          bundle: signed.text,
          bundleSha256: sha256Hex(signed.text),
          helmFiles: helm.map((h) => ({ runName: h.runName, dir: h.dir, runSpec: h.runSpec, stats: h.stats })),
        });
        if (!done) throw new RaceLost();
        return undefined;
      })
      .catch((err: unknown): Refusal => {
        if (err instanceof RaceLost) return { rule: 'export.already-released', reason: `export ${exportId} was released by someone else meanwhile; a bundle is released once` };
        throw err;
      });
    if (outcome) await this.refuse(actor, outcome.rule, outcome.reason, exportId);

    let path: string;
    try {
      path = writeExportFiles(this.app.config.export.dir, files, this.writeFile);
    } catch (err) {
      const code = (err as NodeJS.ErrnoException).code ?? (err instanceof UserError ? err.code : 'error');
      await this.app.audit.record({
        type: 'export.release',
        action: 'E',
        outcome: 'failed',
        rule: 'export.write-failed',
        reason: `writing the bundle of export ${exportId} failed (${code}); no partial file was left`,
        actor,
        subject: { exportId },
        detail: { errorCode: safeId(String(code)) },
      });
      throw new UserError(
        'export.write-failed',
        `${this.app.config.export.dir}: writing export ${exportId} failed (${code}); nothing partial was left. The export is released and kept: "${commandPrefix()} export download ${exportId} --out DIR" writes it`,
      );
    }
    this.app.logger.info('export.released', { exportId, runs: runs.length, format });
    return { row: (await this.store.get(exportId)) as ExportRow, files, path };
  }

  /** A released export's files, byte for byte as released; the download is audited. */
  async download(actor: Actor, row: ExportRow): Promise<ExportFiles> {
    if (row.state !== 'released' || !row.bundle) throw new UserError('export.not-released', `export ${row.export_id} has not been released`);
    await this.app.audit.record({ type: 'export.release', action: 'R', outcome: 'success', rule: 'export.download', actor, subject: { exportId: row.export_id } });
    return { exportId: row.export_id, bundle: row.bundle, helm: (row.helm_files ?? []).map((h) => ({ dir: h.dir, runSpec: h.runSpec, stats: h.stats })) };
  }
}

class RaceLost extends Error {}

type Refusal = { rule: RuleId; reason: string };
type Checked = { ok: true; content: ExportContent; cohorts: ReleasedCohort[] } | ({ ok: false } & Refusal);

/** Why an approval no longer allows its results out (its status in the words everyone reads), or undefined while it is active. */
function inactive(a: Approval, now: Date): string | undefined {
  const status = approvalStatusAt(a, now);
  return status === 'active' ? undefined : status;
}

/** The result of `f`, computed at its first call and shared by the later ones (one read per export). */
function once<T>(f: () => Promise<T>): () => Promise<T> {
  let value: Promise<T> | undefined;
  return () => (value ??= f());
}
