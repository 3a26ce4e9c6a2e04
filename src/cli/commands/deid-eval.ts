/**
 * `ehrbench deid eval --gold FILE [--json] [--show-text] [--with-known] [--evidence dataset|subject|none]
 * [--holdout-by subject --proposal FILE]`: the privacy office's sign-off report on its own annotated
 * notes. Detection runs with the site's configuration, the gold file read as one dataset (as a run and
 * `ehrbench deid` read theirs: each subject's names, and the dataset's strong takes), and is scored by
 * src/deid/evaluate: strict recall and precision per type, subtype and style, masked shares, look-alike
 * survival, false positives per 10k characters, then every miss and false positive by document id, type
 * and offsets. The report states what was in force: the de-identification version, the site lexicons
 * (files, entries, sha256) and the evidence (its scope and version).
 *
 * With `--holdout-by subject`, the figures are those of the subjects whose annotations did not train
 * the proposal (`deid lexicons propose` names its training subjects, as hashes, in its manifest): a
 * sign-off must not measure the lists on the notes they were made from. The whole file is still read as
 * the dataset (that is how a run reads its data); only the scoring leaves the training subjects out.
 *
 * No text of the gold file appears in the output, except with --show-text on the terminal table (the
 * officer reviewing misses on their own screen). --json never carries text, so the two are refused
 * together rather than one being silently ignored.
 */
import { resolve } from 'node:path';
import type { CommandModule } from 'yargs';
import { createHash } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { loadConfig } from '../../config';
import { validateOrThrow } from '../../schema';
import {
  Deidentifier,
  type Evaluation,
  evaluate,
  type FalsePositive,
  type GoldDocument,
  type GoldRecord,
  loadSecret,
  type Miss,
  type EvidenceInForce,
  type EvidenceScope,
  type ProposalManifest,
  readGold,
  settingsFrom,
  settingsVersion,
  type SiteLexiconFiles,
  type SiteLexiconKind,
  type Span,
  subjectHash,
  type TypeFigures,
} from '../../deid';
import { UserError } from '../../errors';
import { type GlobalArgs, withApp } from '../context';
import { type DeidSignOff, localCaller, Operations } from '../../operations';
import { formatScore, formatTable, type Io, printJson } from '../output';

interface EvalArgs extends GlobalArgs {
  gold: string;
  'show-text'?: boolean;
  'with-known'?: boolean;
  evidence: EvidenceScope;
  'holdout-by'?: 'subject';
  proposal?: string;
  record?: boolean;
}

/** What a report was measured with: never a word of the lists or the evidence. */
export interface InForce {
  deidVersion: string;
  lexicons: Partial<Record<SiteLexiconKind, { file: string; entries: number; sha256: string }>>;
  evidence: EvidenceInForce;
  /** With --holdout-by subject: the proposal's manifest and the documents scored. */
  holdout?: { by: 'subject'; proposal: string; trainingSubjects: number; heldOutSubjects: number; heldOutDocuments: number };
}

/** Recall and precision of the documents of one style (nursing, discharge, portal...). */
export interface StyleFigures {
  documents: number;
  gold: number;
  found: number;
  recall: number | null;
  predicted: number;
  correct: number;
  precision: number | null;
}

/** What `--json` prints: the Evaluation (offsets and ids only) and the figures derived from it. */
export interface EvalReport extends Evaluation {
  withKnown: boolean;
  inForce: InForce;
  falsePositivesPer10k: number | null;
  byStyle: Record<string, StyleFigures>;
}

/** Characters of context shown on each side of a miss or false positive with --show-text. */
const CONTEXT_CHARS = 30;

/**
 * Predicted spans of every document, found with the records of one subject judged together: a name
 * found in one note of a subject is looked for in its others. Known identifiers only when asked for,
 * since the structured data a run would pass is not always there.
 */
function predictions(deid: Deidentifier, docs: GoldRecord[], withKnown: boolean, scope: EvidenceScope): { predicted: Map<GoldDocument, Span[]>; evidence: EvidenceInForce } {
  const records = docs.map((d) => ({ text: d.text, subject: d.subject ?? d.id, ...(withKnown && d.known ? { known: d.known } : {}) }));
  const found = deid.findAll(records, scope);
  return { predicted: new Map(docs.map((d, i) => [d, found.spans[i] ?? []])), evidence: found.evidence };
}

function sumFigures(byType: Record<string, TypeFigures>): { gold: number; found: number; predicted: number; correct: number } {
  const total = { gold: 0, found: 0, predicted: 0, correct: 0 };
  for (const f of Object.values(byType)) {
    total.gold += f.gold;
    total.found += f.found;
    total.predicted += f.predicted;
    total.correct += f.correct;
  }
  return total;
}

/** Per-style figures: each style's documents scored on their own (with the predictions made on all). */
function styleFigures(docs: GoldRecord[], predict: (d: GoldDocument) => Span[]): Record<string, StyleFigures> {
  const styles = [...new Set(docs.map((d) => d.style).filter((s): s is string => s !== undefined))].sort();
  const out: Record<string, StyleFigures> = {};
  for (const style of styles) {
    const subset = docs.filter((d) => d.style === style);
    const t = sumFigures(evaluate(subset, predict).byType);
    out[style] = { documents: subset.length, ...t, recall: t.gold ? t.found / t.gold : null, precision: t.predicted ? t.correct / t.predicted : null };
  }
  return out;
}

/**
 * Scores the gold documents with the site's detection: the whole file read as the dataset, the scoring on
 * `scored` (all of them, or the held-out subjects).
 */
export function evaluateGold(
  deid: Deidentifier,
  docs: GoldRecord[],
  withKnown: boolean,
  opts: { scope?: EvidenceScope; scored?: (d: GoldRecord) => boolean; inForce?: Omit<InForce, 'evidence'> } = {},
): EvalReport {
  const { predicted, evidence } = predictions(deid, docs, withKnown, opts.scope ?? 'dataset');
  const predict = (d: GoldDocument) => predicted.get(d) ?? [];
  const scored = opts.scored ? docs.filter(opts.scored) : docs;
  const evaluation = evaluate(scored, predict);
  return {
    ...evaluation,
    withKnown,
    inForce: {
      deidVersion: opts.inForce?.deidVersion ?? settingsVersion(deid.settings),
      lexicons: opts.inForce?.lexicons ?? {},
      evidence,
      ...(opts.inForce?.holdout ? { holdout: opts.inForce.holdout } : {}),
    },
    falsePositivesPer10k: evaluation.characters ? (evaluation.falsePositives.length / evaluation.characters) * 10_000 : null,
    byStyle: styleFigures(scored, predict),
  };
}

/** The text around a span, the span in [[...]], whitespace collapsed to keep one row per line. */
export function contextOf(text: string, start: number, end: number): string {
  const flat = (s: string) => s.replace(/\s+/g, ' ');
  const from = Math.max(0, start - CONTEXT_CHARS);
  const to = Math.min(text.length, end + CONTEXT_CHARS);
  return `${from > 0 ? '…' : ''}${flat(text.slice(from, start))}[[${flat(text.slice(start, end))}]]${flat(text.slice(end, to))}${to < text.length ? '…' : ''}`;
}

function percent(share: number | null): string {
  return share === null ? '-' : `${(share * 100).toFixed(1)}%`;
}

/** Rows per type, each followed by its subtypes (recall only: predictions carry no subtype). */
function typeTable(report: EvalReport): string {
  const rows: (string | number | null)[][] = [];
  for (const [type, f] of Object.entries(report.byType)) {
    rows.push([type, f.gold, formatScore(f.recall), f.predicted, formatScore(f.precision)]);
    for (const [key, s] of Object.entries(report.bySubtype)) {
      if (key.startsWith(`${type}:`)) rows.push([`  ${key}`, s.gold, formatScore(s.recall), null, null]);
    }
  }
  return formatTable(['type', 'gold', 'strict recall', 'predicted', 'precision'], rows);
}

function styleTable(report: EvalReport): string {
  const styles = Object.entries(report.byStyle);
  if (styles.length === 0) return '';
  return (
    '\nBy style:\n' +
    formatTable(
      ['style', 'documents', 'gold', 'strict recall', 'predicted', 'precision'],
      styles.map(([s, f]) => [s, f.documents, f.gold, formatScore(f.recall), f.predicted, formatScore(f.precision)]),
    )
  );
}

const LOOKALIKE_SOURCE: Record<Evaluation['lookalikes']['source'], string> = {
  gold: 'listed in the gold',
  shapes: 'fractions, ranges and doses outside the gold spans',
  mixed: 'listed in the gold for some documents, shapes for the others',
};

function overall(report: EvalReport): string {
  const t = sumFigures(report.byType);
  const look = report.lookalikes;
  const rows: [string, string][] = [
    ['strict recall', `${formatScore(report.recall)}  (${t.found} of ${t.gold} gold spans wholly masked)`],
    ['precision', `${formatScore(report.precision)}  (${t.correct} of ${t.predicted} predicted spans touch a gold span)`],
    ['masked share', `${percent(report.maskedShare)} of all characters`],
    ['masked outside gold', `${percent(report.overMaskedShare)} of all characters`],
    ['look-alikes untouched', `${look.untouched} / ${look.total}  (${formatScore(look.survival)}; ${look.total ? LOOKALIKE_SOURCE[look.source] : 'none found'})`],
    ['false positives', `${report.falsePositivesPer10k === null ? '-' : report.falsePositivesPer10k.toFixed(1)} per 10k characters (${report.falsePositives.length})`],
  ];
  const width = Math.max(...rows.map(([k]) => k.length));
  return rows.map(([k, v]) => `${k.padEnd(width)}  ${v}\n`).join('');
}

function missTable(misses: Miss[], textOf: ((id: string) => string) | undefined): string {
  if (misses.length === 0) return 'Misses: none\n';
  const rows = misses.map((m) => {
    const row: (string | number)[] = [m.id, m.subtype ? `${m.type}:${m.subtype}` : m.type, `${m.start}-${m.end}`, percent(m.coveredShare)];
    if (textOf) row.push(contextOf(textOf(m.id), m.start, m.end));
    return row;
  });
  return `Misses (${misses.length}):\n` + formatTable(['id', 'type', 'offsets', 'covered', ...(textOf ? ['text'] : [])], rows);
}

function falsePositiveTable(fps: FalsePositive[], textOf: ((id: string) => string) | undefined): string {
  if (fps.length === 0) return 'False positives: none\n';
  const rows = fps.map((f) => {
    const row: (string | number)[] = [f.id, f.type, `${f.start}-${f.end}`];
    if (textOf) row.push(contextOf(textOf(f.id), f.start, f.end));
    return row;
  });
  return `False positives (${fps.length}):\n` + formatTable(['id', 'type', 'offsets', ...(textOf ? ['text'] : [])], rows);
}

/** The terminal report. `textOf` is given only with --show-text; without it no gold text is printed. */
export function formatReport(report: EvalReport, file: string, textOf?: (id: string) => string): string {
  const head = `${file}: ${report.documents} documents, ${report.characters} characters; detection with the site configuration${report.withKnown ? ' and the known identifiers' : ', without known identifiers'}\n`;
  return [
    head,
    inForceText(report.inForce),
    '\n',
    typeTable(report),
    styleTable(report),
    '\n',
    overall(report),
    '\n',
    missTable(report.misses, textOf),
    '\n',
    falsePositiveTable(report.falsePositives, textOf),
  ].join('');
}

/** What was in force, in a few lines: the version, the lists (or none), the evidence, the hold-out. */
function inForceText(f: InForce): string {
  const lists = Object.entries(f.lexicons);
  const lines = [
    `de-identification ${f.deidVersion}`,
    `site lexicons: ${lists.length ? lists.map(([k, l]) => `${k} ${l.file} (${l.entries} entries, sha256 ${l.sha256.slice(0, 12)})`).join('; ') : 'none'}`,
    `evidence: ${
      f.evidence.scope === 'dataset'
        ? `the gold file read as one dataset (${f.evidence.version}: ${f.evidence.names ?? 0} names, ${f.evidence.places ?? 0} places, ${f.evidence.acronyms ?? 0} acronyms spread)`
        : f.evidence.scope === 'subject'
          ? "each subject's own records only"
          : 'none (each note alone)'
    }`,
  ];
  if (f.holdout)
    lines.push(
      `held out by subject: figures on ${f.holdout.heldOutSubjects} subjects (${f.holdout.heldOutDocuments} documents) that did not train ${f.holdout.proposal} (${f.holdout.trainingSubjects} training subjects left out)`,
    );
  return lines.join('\n') + '\n';
}

/** The site lexicons in force, by file, entries and sha256 (never their contents). */
function lexiconsInForce(files: SiteLexiconFiles | undefined): InForce['lexicons'] {
  const out: InForce['lexicons'] = {};
  for (const [kind, file] of Object.entries(files ?? {}) as [SiteLexiconKind, string][]) {
    const bytes = readFileSync(file);
    const entries = bytes
      .toString('utf8')
      .split('\n')
      .filter((l) => l.replace(/\s+#\s.*$/, '').trim() !== '' && !l.trim().startsWith('#')).length;
    out[kind] = { file, entries, sha256: createHash('sha256').update(bytes).digest('hex') };
  }
  return out;
}

/** The proposal's manifest, checked: it must be one `deid lexicons propose` wrote. */
function readManifest(file: string): ProposalManifest {
  let value: unknown;
  try {
    value = JSON.parse(readFileSync(file, 'utf8'));
  } catch (err) {
    const code = (err as NodeJS.ErrnoException).code;
    throw new UserError('deid.proposal-invalid', `${file}: ${code ? `cannot read (${code})` : 'not valid JSON'}; give the proposal.json that deid lexicons propose wrote`);
  }
  return validateOrThrow<ProposalManifest>('deid-proposal.schema.json', value, file, 'deid.proposal-invalid');
}

/**
 * Reads the gold file. An empty one is refused (a sign-off on no notes would sign off nothing), and so
 * are repeated note ids (misses are reported by id, which must then name one note).
 */
function readGoldFile(file: string): GoldRecord[] {
  const docs = readGold(file);
  if (docs.length === 0) throw new UserError('deid.gold-invalid', `${file}: no documents; write one JSON line per note or "=== note ID" sections of marked text`);
  const seen = new Set<string>();
  for (const d of docs) {
    if (seen.has(d.id)) throw new UserError('deid.gold-invalid', `${file}: note ${d.id} occurs more than once; note ids must be unique`);
    seen.add(d.id);
  }
  return docs;
}

/** `--record`: the report's headline figures as the sign-off event (the gold file by its sha256, never its text). */
async function recordSignOff(args: EvalArgs, io: Io, file: string, report: EvalReport): Promise<void> {
  const t = sumFigures(report.byType);
  const round = (v: number | null) => (v === null ? null : Math.round(v * 10_000) / 10_000);
  const figures: DeidSignOff = {
    deidVersion: report.inForce.deidVersion,
    goldSha256: createHash('sha256').update(readFileSync(file)).digest('hex'),
    documents: report.documents,
    goldSpans: t.gold,
    recall: round(report.recall),
    precision: round(report.precision),
    withKnown: report.withKnown,
    heldOut: report.inForce.holdout !== undefined,
  };
  const { seq } = await withApp(args, io, (app) => new Operations(app).recordDeidSignOff(localCaller(app), figures), { writes: true });
  io.stderr(`sign-off recorded in the audit trail as event ${seq} (deid.signoff)\n`);
}

export function deidEvalCommand(io: Io): CommandModule<GlobalArgs, EvalArgs> {
  return {
    command: 'eval',
    describe: "Score detection on the site's own annotated notes (strict recall, precision, misses): the privacy office's sign-off report",
    builder: (y) =>
      y
        .usage('$0 deid eval --gold FILE [--json] [--show-text] [--with-known] [--evidence dataset|subject|none] [--holdout-by subject --proposal FILE]')
        .option('gold', {
          type: 'string',
          demandOption: true,
          describe:
            'Annotated notes: JSON lines {"id", "text", "spans": [{"start", "end", "type", "subtype"?}], "lookalikes"?, "subject"?, "known"?, "style"?} (schemas/deid-gold.schema.json), or marked text (.txt, .md) with {{TYPE|text}}, {{TYPE:subtype|text}}, {{SAFE|text}} and "=== note ID [style=S]" lines',
        })
        .option('show-text', { type: 'boolean', describe: 'Show the text around each miss and false positive (the terminal table only; refused with --json, which never carries text)' })
        .option('with-known', { type: 'boolean', describe: 'Give detection each document\'s "known" identifiers, as a run with structured data would (default: measured without them)' })
        .option('evidence', {
          choices: ['dataset', 'subject', 'none'] as const,
          default: 'dataset' as EvidenceScope,
          describe: "What the notes are read with: the gold file as one dataset (as a run reads its data), each subject's own notes only, or each note alone",
        })
        .option('holdout-by', { choices: ['subject'] as const, describe: 'Score only the subjects that did not train the proposal named by --proposal' })
        .option('proposal', { type: 'string', describe: 'The proposal.json that deid lexicons propose wrote (with --holdout-by subject)' })
        .option('record', {
          type: 'boolean',
          describe: "Record the figures as the privacy office's sign-off in the audit trail (compliance; numbers and ids only), where evidence packets (export request --packet) cite them",
        })
        .epilog(
          'Without --show-text no text of the gold file is printed: misses and false positives are given by document id, type and offsets.\nExit codes: 0 the report was produced (whatever the figures); 1 the gold file is unreadable or invalid (the error names the line); 2 usage.',
        ),
    handler: async (args) => {
      if (args.json && args['show-text'])
        throw new UserError('cli.usage', '--json and --show-text cannot be combined: --show-text applies to the table only and --json never carries text; drop one of them');
      if (args['holdout-by'] && !args.proposal)
        throw new UserError('cli.usage', '--holdout-by subject needs --proposal FILE: the proposal.json that deid lexicons propose wrote names the subjects it was made from');
      if (args.proposal && !args['holdout-by']) throw new UserError('cli.usage', '--proposal is read only with --holdout-by subject; add it, or drop --proposal');
      const file = resolve(args.gold);
      const docs = readGoldFile(file);
      const config = loadConfig({ ...(args.config ? { file: args.config } : {}), env: io.env });
      const settings = settingsFrom(config.deid);
      // Finding spans needs no secret (only replacement does); it is read only if ever asked for.
      let secret: Buffer | undefined;
      const deid = new Deidentifier(settings, () => (secret ??= loadSecret(settings.secretFile)));
      let scored: ((d: GoldRecord) => boolean) | undefined;
      let holdout: InForce['holdout'];
      if (args.proposal) {
        const manifest = readManifest(resolve(args.proposal));
        const training = new Set(manifest.trainingSubjects);
        const isTraining = (d: GoldRecord) => training.has(subjectHash(manifest.split.seed, d.subject ?? d.id));
        const held = docs.filter((d) => !isTraining(d));
        if (held.length === 0)
          throw new UserError('deid.holdout-empty', `${args.gold}: every subject of the file trained ${args.proposal}; annotate other subjects to measure the lists on, or propose from part of them`);
        scored = (d) => !isTraining(d);
        holdout = {
          by: 'subject',
          proposal: args.proposal,
          trainingSubjects: new Set(docs.filter(isTraining).map((d) => d.subject ?? d.id)).size,
          heldOutSubjects: new Set(held.map((d) => d.subject ?? d.id)).size,
          heldOutDocuments: held.length,
        };
      }
      const report = evaluateGold(deid, docs, args['with-known'] === true, {
        scope: args.evidence,
        ...(scored ? { scored } : {}),
        inForce: { deidVersion: settingsVersion(settings), lexicons: lexiconsInForce(settings.siteLexicons), ...(holdout ? { holdout } : {}) },
      });
      if (args.record) await recordSignOff(args, io, file, report);
      if (args.json) return printJson(io, report);
      const texts = new Map(docs.map((d) => [d.id, d.text]));
      io.stdout(formatReport(report, args.gold, args['show-text'] ? (id) => texts.get(id) ?? '' : undefined));
    },
  };
}
