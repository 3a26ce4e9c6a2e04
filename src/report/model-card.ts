/**
 * A CHAI Applied Model Card (v0.2, schemas/chai-model-card/) from a verified bundle with an evidence
 * packet: what ehrbench knows about the model under the approval (intended use, scores with their
 * intervals, subgroup cells, stability, drift and fingerprints, de-identification, the signed evidence
 * trail) in CHAI's fields, and the fields it cannot know (COMMITTEE_FIELDS: developer, release, regulation,
 * training data, users, risks, consent) left for the AI committee: CHAI's "N/A" with a note where the
 * schema requires content, left out where it is optional, and listed in a comment at the top.
 *
 * The card is built by xmlbuilder2, which escapes every string and refuses characters XML cannot hold
 * (wellFormed), and validated against CHAI's XSD by libxml2 in WebAssembly (xmllint-wasm: no native
 * build, no network) before anyone may write it: a card that does not validate is refused in one line
 * naming the schema and the element. Only the bundle is read, and a bundle holds only released aggregates.
 */
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { create } from 'xmlbuilder2';
import type { XMLBuilder } from 'xmlbuilder2/lib/interfaces';
import { validateXML } from 'xmllint-wasm';
import { UserError } from '../errors';
import { type Bundle, COMMITTEE_FIELDS, type Count, type EvidencePacket, type ExportResult, type MetricCell, type ReleasedMetric } from '../export';
import { SCHEMA_DIR } from '../paths';
import { DAEMON_VERSION } from '../version';

const CHAI_NS = 'https://mc.chai.org/v0.2/schema.xsd';
/** How errors name the schema: the path in the product, not a machine's. */
export const MODEL_CARD_SCHEMA = 'schemas/chai-model-card/v0.2/schema.xsd';
const XMLDSIG_URL = 'http://www.w3.org/TR/xmldsig-core/xmldsig-core-schema.xsd';
const XMLDSIG_FILE = 'xmldsig-core-schema.xsd';

/** CHAI's examples write "N/A" where there is nothing; the note says it is the committee's to fill, not "not applicable". */
export const COMMITTEE_PLACEHOLDER = 'N/A: for the AI committee to complete (ehrbench cannot know this field).';

type Released = ReleasedMetric;

const rangeText = (c: Count): string => ('suppressed' in c ? `suppressed (${c.suppressed})` : c.high === 0 ? '0' : `${c.low}-${c.high}`);

/** CHAI's ValueJson: an estimate with its 95% interval where the bundle has one, else a single value. */
function valueJson(value: number, ci95?: { low: number; high: number }, unit?: string): string {
  const v = ci95 ? { kind: 'estimate_ci', estimate: value, lower: ci95.low, upper: ci95.high, level: 95 } : { kind: 'single', value };
  return JSON.stringify(unit ? { ...v, unit } : v);
}

interface MetricRow {
  label: string;
  json: string;
}

const released = (m: MetricCell): m is Released => 'value' in m;

function bulletList(lines: string[], none: string): string {
  return lines.length ? lines.map((l) => `- ${l}`).join('\n') : none;
}

/** The results of the packet's model: the packet is about one model, a bundle may hold others for comparison. */
function modelResults(b: Bundle, p: EvidencePacket): ExportResult[] {
  return b.results.filter((r) => r.model.endpointId === p.model.endpointId);
}

function direction(r: ExportResult): string {
  return r.benchmark.lowerIsBetter === null ? 'no better direction' : r.benchmark.lowerIsBetter ? 'lower is better' : 'higher is better';
}

function usefulnessRows(results: ExportResult[]): { rows: MetricRow[]; hidden: number } {
  const rows: MetricRow[] = [];
  let hidden = 0;
  for (const r of results) {
    for (const m of r.metrics) {
      if (!released(m)) {
        hidden++;
        continue;
      }
      rows.push({ label: `${r.benchmark.id} v${r.benchmark.version}: ${m.name}${m.name === r.mainMetric ? ' (main)' : ''}, n ${rangeText(m.n)}`, json: valueJson(m.value, m.ci95) });
    }
  }
  return { rows, hidden };
}

/** Worst released cell over the best one of the main metric (seismometer's 0.8 bound); null without a direction or a positive best. */
function worstToBest(r: ExportResult, values: number[]): number | null {
  if (r.benchmark.lowerIsBetter === null || values.length < 2) return null;
  const lo = Math.min(...values);
  const hi = Math.max(...values);
  if (hi <= 0 || lo < 0) return null;
  return Math.floor((lo / hi) * 100) / 100;
}

function fairnessRows(results: ExportResult[]): { rows: MetricRow[]; fields: string[]; flagged: string[]; hidden: number } {
  const rows: MetricRow[] = [];
  const fields: string[] = [];
  const flagged: string[] = [];
  let shown = 0;
  let hidden = 0;
  for (const r of results) {
    for (const sg of r.subgroups) {
      fields.push(`${r.benchmark.id}: ${sg.field} (${sg.cells.map((c) => c.label).join(', ')})`);
      const values: number[] = [];
      for (const c of sg.cells) {
        // An empty cell (0 instances) has nothing to show and hides nothing.
        if (!('suppressed' in c) && c.n.high === 0) continue;
        const main = 'suppressed' in c ? undefined : c.metrics.find((m) => m.name === r.mainMetric);
        if ('suppressed' in c || !main || !released(main)) {
          hidden++;
          continue;
        }
        shown++;
        values.push(main.value);
        rows.push({ label: `${r.benchmark.id}: ${sg.field} = ${c.label}: ${main.name}, n ${rangeText(main.n)}`, json: valueJson(main.value, main.ci95) });
      }
      const ratio = worstToBest(r, values);
      if (ratio !== null) {
        rows.push({ label: `${r.benchmark.id}: ${sg.field}: worst over best cell of ${r.mainMetric}`, json: valueJson(ratio) });
        if (ratio < 0.8) flagged.push(`${r.benchmark.id}: ${sg.field} (${ratio.toFixed(2)})`);
      }
    }
  }
  // CHAI requires at least one result: the number of cells says whether there was anything to compare.
  rows.unshift({ label: 'Subgroup cells released (main metric)', json: valueJson(shown, undefined, 'cells') });
  return { rows, fields, flagged, hidden };
}

function safetyRows(p: EvidencePacket): MetricRow[] {
  const rows: MetricRow[] = [];
  for (const s of p.stability) {
    const n = rangeText(s.instances);
    if ('value' in s.exactAgreement) rows.push({ label: `${s.benchmarkId}: exact agreement of ${s.repeats} repeats, n ${n}`, json: valueJson(s.exactAgreement.value, s.exactAgreement.ci95) });
    if ('sd' in s.scoreSpread) {
      rows.push({ label: `${s.benchmarkId}: SD of the ${s.repeats} run means of ${s.metric}`, json: valueJson(s.scoreSpread.sd) });
      rows.push({ label: `${s.benchmarkId}: lowest run mean of ${s.metric}`, json: valueJson(s.scoreSpread.min) });
      rows.push({ label: `${s.benchmarkId}: highest run mean of ${s.metric}`, json: valueJson(s.scoreSpread.max) });
    }
  }
  for (const d of p.drift) {
    if (d.canary === null || d.baseline === null || d.pValue === null) continue;
    rows.push({ label: `${d.benchmarkId}: canary ${d.metric} on ${d.on}, baseline ${d.baseline}, ${d.outcome}, n ${rangeText(d.instances)}`, json: valueJson(d.canary) });
    rows.push({ label: `${d.benchmarkId}: ${d.test} p-value on ${d.on} (threshold ${d.threshold})`, json: valueJson(d.pValue) });
  }
  const gold = p.deid?.gold;
  if (gold) {
    rows.push({ label: `de-identification recall on the site's gold file (${gold.evaluatedOn}), PHI instances ${rangeText(gold.phiInstances)}`, json: valueJson(gold.recall) });
    rows.push({ label: `de-identification precision on the site's gold file (${gold.evaluatedOn})`, json: valueJson(gold.precision) });
  }
  rows.unshift({ label: 'Stability, drift and de-identification figures in the packet', json: valueJson(rows.length, undefined, 'figures') });
  return rows;
}

function metricBlock(parent: XMLBuilder, name: string, m: { goal: string; rows: MetricRow[]; interpretation: string; testType: string; data: string; validation: string }): void {
  const el = parent.ele(name);
  el.ele('MetricGoal').txt(m.goal);
  const results = el.ele('Results');
  for (const row of m.rows) results.ele('MetricResult').ele('Label').txt(row.label).up().ele('ValueJson').txt(row.json);
  el.ele('Interpretation').txt(m.interpretation);
  el.ele('TestType').txt(m.testType);
  el.ele('TestingDataDescription').txt(m.data);
  el.ele('ValidationProcessAndJustification').txt(m.validation);
}

function juryLines(results: ExportResult[]): string[] {
  return results.flatMap((r) => {
    const v = r.juryValidation;
    if (!v) return [];
    if (!v.validated) return [`${r.benchmark.id}: the LLM jury was not validated by clinicians at the site`];
    const icc = v.icc ? `ICC ${v.icc.value}${v.icc.ci95 ? ` (95% interval ${v.icc.ci95.low} to ${v.icc.ci95.high})` : ''}` : 'no ICC (too few items)';
    return [`${r.benchmark.id}: LLM jury validated by rating study ${v.studyId} closed ${v.closedOn} (${v.clinicians} clinicians, items ${rangeText(v.items)}): ${icc}`];
  });
}

function maintenanceText(p: EvidencePacket): string {
  const prints = p.fingerprints.map((f) => `${f.endpointId}: model ${f.model ?? 'not stated'}, system fingerprint ${f.systemFingerprint ?? 'not stated'}, seen ${f.firstSeenOn} to ${f.lastSeenOn}`);
  const checks = p.drift.map(
    (d) =>
      `${d.on}: ${d.benchmarkId} canary (${d.test}, p < ${d.threshold}${d.minDifference !== null ? ` and a difference of at least ${d.minDifference}` : ''}): ${d.outcome}${d.reviewedOn ? `, reviewed ${d.reviewedOn}` : d.outcome === 'changed' ? ', not reviewed yet' : ''}`,
  );
  return [
    'ehrbench records what the endpoint says it served with every call, and re-runs a pinned canary sample under the approval on a schedule and when that changes, comparing it with the baseline on the same instances.',
    '',
    'Model fingerprints seen:',
    bulletList(prints, '- none recorded'),
    '',
    'Canary checks:',
    bulletList(checks, '- none recorded under this approval'),
  ].join('\n');
}

function evidenceText(b: Bundle, p: EvidencePacket): string {
  return [
    `ehrbench export ${b.exportId} of site ${b.siteId}, released by ${b.releasedBy} on ${b.createdOn}, signed (Ed25519, key ${b.signature.keyFingerprint}); audit checkpoint ${b.auditCheckpoint.checkpointId} at seq ${b.auditCheckpoint.seq}, head ${b.auditCheckpoint.headHash}.`,
    '',
    'Where each figure came from (JSON pointer into the bundle: audit event seq):',
    bulletList(
      p.evidence.map((e) => `${e.figure}: ${e.auditSeq}`),
      '- no figure references in the packet',
    ),
  ].join('\n');
}

/** The card's XML, not yet validated (modelCard validates it). */
export function modelCardXml(b: Bundle): string {
  const p = b.packet;
  if (!p) throw new UserError('report.no-packet', `export ${b.exportId} has no evidence packet; request one with "ehrbench export request --packet" to write a model card`);
  const results = modelResults(b, p);
  const place = COMMITTEE_PLACEHOLDER;
  const modelName = `${p.model.model ?? p.model.deployment ?? p.model.endpointId} (endpoint ${p.model.endpointId}, ${p.model.provider}${p.model.deployment ? `, deployment ${p.model.deployment}` : ''})`;
  const benchmarks = results.map(
    (r) =>
      `${r.benchmark.id} v${r.benchmark.version}: ${r.benchmark.category} / ${r.benchmark.subcategory}; tier ${r.benchmark.tier}; ${r.benchmark.split} split; n ${rangeText(r.n)}; definition sha256 ${r.benchmark.definitionHash}`,
  );
  const useful = usefulnessRows(results);
  const fair = fairnessRows(results);
  const d = b.disclosure;
  const disclosure = `Disclosure control ${d.policyId}: counts are ranges (k = ${d.k}, width ${d.countRangeWidth}); cells under k are suppressed, with complementary suppression; ${d.differencing}. Intervals: ${d.ci}.`;

  const doc = create({ version: '1.0', encoding: 'UTF-8' });
  const card = doc.ele(CHAI_NS, 'AppliedModelCard');
  card.com(
    ` Written by ehrbench ${DAEMON_VERSION} from export ${b.exportId} (approval ${p.approval.approvalId}). Fields ehrbench cannot know, for the AI committee (N/A with a note where CHAI requires content, left out where optional): ${COMMITTEE_FIELDS.join(', ')}. `,
  );
  card.ele('BasicInfo').ele('ModelName').txt(modelName).up().ele('ModelDeveloper').txt(place).up().ele('DeveloperContact').txt(place);
  card.ele('ReleaseInfo').ele('ReleaseStage').txt(place).up().ele('ReleaseDate').txt(place).up().ele('ReleaseVersion').txt(place).up().ele('GlobalAvailability').txt(place);
  const summary = card.ele('ModelSummary');
  summary.ele('Summary').txt(place);
  const keywords = summary.ele('Keywords');
  for (const k of [...new Set(results.flatMap((r) => [r.benchmark.category, r.benchmark.subcategory]))]) keywords.ele('Keyword').txt(k);
  card
    .ele('UsesAndDirections')
    .ele('IntendedUseAndWorkflow')
    .txt(
      `${p.approval.intendedUse}\n\n(The purpose of approval ${p.approval.approvalId} under protocol ${p.approval.protocol}, from ${p.approval.startsOn}${p.approval.expiresOn ? ` to ${p.approval.expiresOn}` : ''}.)`,
    )
    .up()
    .ele('PrimaryIntendedUsers')
    .txt(place)
    .up()
    .ele('HowToUse')
    .txt(place)
    .up()
    .ele('TargetedPatientPopulation')
    .txt(place)
    .up()
    .ele('CautionedOutOfScopeSettings')
    .txt(place);
  card.ele('Warnings').ele('KnownRisksAndLimitations').txt(place).up().ele('KnownBiasesOrEthicalConsiderations').txt(place).up().ele('ClinicalRiskLevel').txt(place);

  const trust = card.ele('TrustIngredients');
  const facts = trust.ele('AISystemFacts');
  facts.ele('OutcomesAndOutputs').txt(`Text answers to the tasks of the evaluated benchmarks, scored by ehrbench:\n${bulletList(benchmarks, '- none')}`);
  facts.ele('ModelType').txt(place);
  facts
    .ele('InputDataSource')
    .txt(
      `Instances of the approved benchmarks (${p.approval.benchmarks.join(', ') || 'every benchmark of its tiers'}; tiers ${p.approval.tiers.join(', ')}), read at the site; prompts from site data were de-identified before any call${results.some((r) => r.deidVersion) ? ` (de-identification ${[...new Set(results.map((r) => r.deidVersion).filter((v): v is string => v !== null))].join(', ')})` : ''}.`,
    );
  facts.ele('OutputAndInputDataTypes').txt('Input: text prompts built from benchmark instances (clinical notes, questions, conversations). Output: text.');
  facts.ele('DevelopmentDataCharacterization').txt(place);
  facts.ele('BiasMitigationApproaches').txt(place);
  facts.ele('OngoingMaintenance').txt(maintenanceText(p));
  facts.ele('Transparency').txt('Every figure of this card comes from a signed ehrbench export bundle and names the audit event it came from (Resources, EvaluationReferences).');
  trust.ele('TransparencyInformation').ele('FundingSource').txt(place).up().ele('StakeholdersConsulted').txt(place);

  const metrics = card.ele('KeyMetrics');
  metricBlock(metrics, 'UsefulnessUsabilityEfficacy', {
    goal: 'How well the model performs the approved benchmark tasks on data of this site.',
    rows: useful.rows.length ? useful.rows : [{ label: 'Released metrics', json: valueJson(0, undefined, 'metrics') }],
    interpretation: [
      ...results.map((r) => `${r.benchmark.id}: main metric ${r.mainMetric}, ${direction(r)}.`),
      disclosure,
      useful.hidden ? `${useful.hidden} metric(s) suppressed by disclosure control are not listed.` : '',
    ]
      .filter(Boolean)
      .join('\n'),
    testType: `Offline benchmark evaluation (MedHELM-style), run by ehrbench at the site under approval ${p.approval.approvalId}; scoring ${[...new Set(results.map((r) => r.scoring))].join(', ')}.`,
    data: bulletList(benchmarks, '- none'),
    validation: [
      bulletList(juryLines(results), '- no LLM jury benchmark in this export'),
      '',
      `Released by a compliance officer (${b.releasedBy}) other than the requester (${b.requestedBy}); aggregates only.`,
    ].join('\n'),
  });
  metricBlock(metrics, 'FairnessEquity', {
    goal: 'Whether performance differs between the subgroups that the benchmarks and the site declare.',
    rows: fair.rows,
    interpretation: [
      "Per subgroup cell: the main metric with its 95% interval. Worst over best: the lowest released cell value over the highest (below 0.8 is outside seismometer's bounds).",
      fair.flagged.length ? `Below 0.8: ${fair.flagged.join('; ')}.` : 'No released subgroup is below 0.8.',
      fair.hidden ? `${fair.hidden} cell(s) suppressed by disclosure control are not listed.` : '',
    ]
      .filter(Boolean)
      .join('\n'),
    testType: 'Stratified performance per declared subgroup, with the same disclosure control as every cell.',
    data: bulletList(fair.fields, '- no subgroup declared for these results'),
    validation: disclosure,
  });
  metricBlock(metrics, 'SafetyReliability', {
    goal: 'Whether answers are stable across repeated runs, whether the model behind the endpoint changed under the approval, and whether de-identification kept identifiers out of the prompts.',
    rows: safetyRows(p),
    interpretation: [
      'Exact agreement: the share of instances whose repeated answers were identical. SD: of the run means, never of instances.',
      'Canary: the paired test against the baseline on the same instances; "changed" when p is below the threshold and the difference is at least the stated minimum.',
    ].join('\n'),
    testType: 'Repeated runs of one sample on one endpoint; scheduled and fingerprint-triggered canary runs; residual identifier scan before every call.',
    data: [
      bulletList(
        p.stability.map((s) => `${s.benchmarkId}: ${s.repeats} repeats over ${rangeText(s.instances)} instances`),
        '- no repeated runs in the packet',
      ),
      p.deid
        ? `- residual scan: ${'suppressed' in p.deid.residualBlocked ? 'fewer than k (suppressed)' : rangeText(p.deid.residualBlocked)} instance(s) blocked before any call`
        : '- no de-identification figures in the packet',
    ].join('\n'),
    validation: disclosure,
  });

  card.ele('Resources').ele('EvaluationReferences').txt(evidenceText(b, p)).up().ele('PeerReviewedPublications').txt(place).up().ele('PatientConsentOrDisclosure').txt(place);
  card.ele('Bibliography');
  try {
    return doc.end({ prettyPrint: true, wellFormed: true }) + '\n';
  } catch {
    // The builder's message can quote the offending text; say where to look instead.
    throw new UserError('report.model-card-invalid', `export ${b.exportId}: the model card cannot be written as XML (a field holds a character XML 1.0 cannot hold); no card was written`);
  }
}

let schemaFiles: { schema: string; xmldsig: string } | undefined;

/**
 * CHAI's schema as shipped, with its import of the XML-Signature schema pointed at the local copy
 * (the validator is given that file; it fetches nothing). A schema without that import is not the one
 * this code was written for: refuse rather than validate against something else.
 */
function chaiSchema(): { schema: string; xmldsig: string } {
  if (schemaFiles) return schemaFiles;
  const dir = join(SCHEMA_DIR, 'chai-model-card', 'v0.2');
  const schema = readFileSync(join(dir, 'schema.xsd'), 'utf8');
  if (schema.split(`schemaLocation="${XMLDSIG_URL}"`).length !== 2) throw new Error(`${MODEL_CARD_SCHEMA}: its import of the XML-Signature schema is not the expected one`);
  schemaFiles = { schema: schema.replace(`schemaLocation="${XMLDSIG_URL}"`, `schemaLocation="${XMLDSIG_FILE}"`), xmldsig: readFileSync(join(dir, XMLDSIG_FILE), 'utf8') };
  return schemaFiles;
}

/** The element path (AppliedModelCard/BasicInfo/...) of the elements open at the start of `line` of `xml`. */
export function openElementsAt(xml: string, line: number): string[] {
  const before = xml
    .split('\n')
    .slice(0, Math.max(0, line - 1))
    .join('\n')
    .replace(/<!--[\s\S]*?-->/g, '')
    .replace(/<\?[\s\S]*?\?>/g, '');
  const stack: string[] = [];
  for (const m of before.matchAll(/<(\/?)([A-Za-z_][\w.-]*)[^>]*?(\/?)>/g)) {
    if (m[1]) stack.pop();
    else if (!m[3]) stack.push(m[2] as string);
  }
  return stack;
}

/** xmllint's message without namespaces and without any quoted value (a value could be data). */
function cleanMessage(message: string): string {
  return message
    .replace(/\{[^}]*\}/g, '')
    .replace(/^.*?Schemas validity error\s*:\s*/, '')
    .replace(/value '[^']*'/g, 'value (withheld)')
    .replace(/\s+/g, ' ')
    .trim();
}

/** Resolves when `xml` validates against CHAI's v0.2 schema; otherwise a one-line UserError naming the schema and the element. */
export async function validateModelCard(xml: string): Promise<void> {
  const { schema, xmldsig } = chaiSchema();
  let result: Awaited<ReturnType<typeof validateXML>>;
  try {
    result = await validateXML({
      xml: [{ fileName: 'card.xml', contents: xml }],
      schema: [{ fileName: 'schema.xsd', contents: schema }],
      preload: [{ fileName: XMLDSIG_FILE, contents: xmldsig }],
      // Belt and braces: libxml2 must not try the network for anything the schema or card names.
      modifyArguments: (args) => ['--nonet', ...args],
    });
  } catch (err) {
    // xmllint's output for a document it cannot parse quotes the document: give its exit code only.
    const code = (err as { code?: unknown }).code;
    throw new UserError(
      'report.model-card-invalid',
      `the model card cannot be checked against ${MODEL_CARD_SCHEMA} (not well-formed XML, or the validator failed${typeof code === 'number' ? `: xmllint exit ${code}` : ''}); no card was written`,
    );
  }
  if (result.valid) return;
  const first = result.errors[0];
  const element = /Element '(?:\{[^}]*\})?([A-Za-z_][\w.-]*)'/.exec(first?.message ?? '')?.[1];
  const path = first?.loc ? [...openElementsAt(xml, first.loc.lineNumber), ...(element ? [element] : [])].join('/') : (element ?? 'the document');
  const more = result.errors.length > 1 ? ` and ${result.errors.length - 1} more` : '';
  throw new UserError(
    'report.model-card-invalid',
    `the model card does not validate against ${MODEL_CARD_SCHEMA} at ${path}${first?.loc ? ` (line ${first.loc.lineNumber})` : ''}: ${cleanMessage(first?.message ?? 'no detail')}${more}; no card was written (a fault of ehrbench's mapping: report it)`,
  );
}

/** The model card of a verified bundle with a packet, validated against CHAI's schema: write it only after this resolves. */
export async function modelCard(b: Bundle): Promise<string> {
  const xml = modelCardXml(b);
  await validateModelCard(xml);
  return xml;
}
