/**
 * A line of HealthBench's meta-evaluation file (simple-evals' healthbench_meta_eval.py): a conversation
 * (`prompt`), a `completion`, one rubric criterion (`rubric`, plain text), the physicians' labels
 * (`binary_labels`) with their `anonymized_physician_ids`, and a `category`. As an instance, the model
 * under evaluation is the grader: its one prompt is GRADER_TEMPLATE about the conversation with the
 * completion as its last turn; the labels, ids and category ride along for the agreement figures
 * (src/annotate/rubric/meta-eval.ts), inside the run store only.
 */
import { UserError } from '../errors';
import { conversationText, graderPrompt } from './grader-template';
import type { RawRecord } from './sources/records';
import type { Instance } from './types';

export interface MetaEvalRow {
  prompt: { role: string; content: string }[];
  completion: string;
  rubric: string;
  binaryLabels: boolean[];
  physicianIds: string[];
  category: string;
}

function refuse(where: string, field: string, kind: string): never {
  throw new UserError('dataset.bad-column', `${where}: field "${field}" must be ${kind}`);
}

/** A meta-eval line checked field by field; refusals name the line and the field, never a value. */
export function metaEvalRow(value: unknown, where: string): MetaEvalRow {
  if (typeof value !== 'object' || value === null || Array.isArray(value)) refuse(where, '(line)', 'a JSON object');
  const v = value as Record<string, unknown>;
  if (!Array.isArray(v.prompt) || v.prompt.length === 0) refuse(where, 'prompt', 'a non-empty list of turns');
  const prompt = v.prompt.map((m: unknown, i: number) => {
    const t = m as Record<string, unknown> | null;
    if (typeof t !== 'object' || t === null || typeof t.role !== 'string' || typeof t.content !== 'string') refuse(where, `prompt[${i}]`, 'a turn {role, content}');
    return { role: t.role as string, content: t.content as string };
  });
  for (const f of ['completion', 'rubric', 'category'] as const) if (typeof v[f] !== 'string' || (v[f] as string).length === 0) refuse(where, f, 'a non-empty string');
  const labels = v.binary_labels;
  if (!Array.isArray(labels) || labels.length === 0 || !labels.every((l) => typeof l === 'boolean')) refuse(where, 'binary_labels', 'a non-empty list of booleans');
  const ids = v.anonymized_physician_ids;
  if (!Array.isArray(ids) || ids.length !== labels.length || !ids.every((id) => typeof id === 'string')) refuse(where, 'anonymized_physician_ids', 'a list of strings, one per binary label');
  return { prompt, completion: v.completion as string, rubric: v.rubric as string, binaryLabels: labels as boolean[], physicianIds: ids as string[], category: v.category as string };
}

/** The grader prompt of a row, as the reference fills it: the completion as the assistant's last turn, the rubric text as is. */
export function metaEvalGraderPrompt(row: MetaEvalRow): string {
  return graderPrompt(conversationText(row.prompt, row.completion), row.rubric);
}

/** One meta-eval line as an instance: the grader prompt as one user turn, the physicians' labels as data. */
export function healthBenchMetaInstance(record: RawRecord, file: string): Instance {
  const row = metaEvalRow(record.fields, `${file}: record ${record.position}`);
  return {
    key: String(record.position),
    vars: {},
    messages: [{ role: 'user', content: metaEvalGraderPrompt(row) }],
    references: [],
    extra: { physicianLabels: JSON.stringify(row.binaryLabels), physicianIds: JSON.stringify(row.physicianIds), category: row.category },
  };
}

/** What the agreement figures read back from a stored meta-eval instance. */
export function metaEvalLabelsOf(instance: Pick<Instance, 'extra'>): Pick<MetaEvalRow, 'binaryLabels' | 'physicianIds' | 'category'> | undefined {
  const e = instance.extra ?? {};
  if (typeof e.physicianLabels !== 'string' || typeof e.physicianIds !== 'string' || typeof e.category !== 'string') return undefined;
  return { binaryLabels: JSON.parse(e.physicianLabels) as boolean[], physicianIds: JSON.parse(e.physicianIds) as string[], category: e.category };
}
