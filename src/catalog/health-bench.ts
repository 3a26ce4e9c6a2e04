/**
 * HealthBench's JSONL (OpenAI simple-evals; MedHELM's HealthBenchScenario reads the same file): one
 * example a line, a conversation (`prompt`: system/user/assistant turns, the model answers the last),
 * its rubric (`rubrics`: criterion, points, tags) and its tags (`example_tags`, e.g. theme:hedging).
 * schemas/health-bench.schema.json describes a line. A record that does not fit is refused naming the
 * file, the line and the field, never a value: every string in it is treated as patient text.
 */
import { UserError } from '../errors';
import type { RawRecord } from './sources/records';
import type { Instance } from './types';

export interface RubricCriterion {
  criterion: string;
  points: number;
  tags: string[];
}

const ROLES = new Set(['system', 'user', 'assistant']);

type Fail = (field: string, must: string) => UserError;

function failureAt(file: string, record: RawRecord): Fail {
  return (field, must) => new UserError('dataset.bad-column', `${file}: line ${record.position}: field "${field}" ${must}`);
}

function isObject(v: unknown): v is Record<string, unknown> {
  return typeof v === 'object' && v !== null && !Array.isArray(v);
}

function messagesOf(value: unknown, field: string, fail: Fail): NonNullable<Instance['messages']> {
  if (!Array.isArray(value) || value.length === 0) throw fail(field, 'must be a non-empty list of messages ({"role", "content"})');
  const messages = value.map((m: unknown, i) => {
    if (!isObject(m)) throw fail(`${field}[${i}]`, 'must be an object with "role" and "content"');
    if (typeof m.role !== 'string' || !ROLES.has(m.role)) throw fail(`${field}[${i}].role`, 'must be system, user or assistant');
    if (typeof m.content !== 'string') throw fail(`${field}[${i}].content`, 'must be text');
    return { role: m.role as 'system' | 'user' | 'assistant', content: m.content };
  });
  // The model answers the last turn: a conversation that ends with the assistant has nothing to answer.
  if (messages[messages.length - 1]?.role === 'assistant') throw fail(`${field}[${messages.length - 1}].role`, 'must not be assistant: the model answers the last turn');
  return messages;
}

function tagsOf(value: unknown, field: string, fail: Fail): string[] {
  if (!Array.isArray(value) || !value.every((t) => typeof t === 'string')) throw fail(field, 'must be a list of strings');
  // The reference asserts a tag is listed once (its per-tag scores would count it twice).
  if (new Set(value).size !== value.length) throw fail(field, 'must not list a tag twice');
  return value as string[];
}

function rubricOf(value: unknown, field: string, tagsRequired: boolean, fail: Fail): RubricCriterion[] {
  if (!Array.isArray(value) || value.length === 0) throw fail(field, 'must be a non-empty list of criteria ({"criterion", "points", "tags"})');
  const rubric = value.map((r: unknown, i): RubricCriterion => {
    if (!isObject(r)) throw fail(`${field}[${i}]`, 'must be an object with "criterion", "points" and "tags"');
    if (typeof r.criterion !== 'string' || r.criterion.trim() === '') throw fail(`${field}[${i}].criterion`, 'must be non-empty text');
    if (typeof r.points !== 'number' || !Number.isFinite(r.points)) throw fail(`${field}[${i}].points`, 'must be a number (negative for an undesirable criterion)');
    const tags = r.tags === undefined && !tagsRequired ? [] : tagsOf(r.tags, `${field}[${i}].tags`, fail);
    return { criterion: r.criterion, points: r.points, tags };
  });
  // The score divides by the positive points: a rubric without any cannot be scored (the reference asserts it).
  if (!rubric.some((r) => r.points > 0)) throw fail(field, 'must have at least one criterion with positive points');
  return rubric;
}

/** Where a layout keeps each part of a line (HealthBench Professional nests the turns and renames the fields). */
export type HealthBenchLayout = 'health_bench' | 'health_bench_professional';

const FIELDS: Record<HealthBenchLayout, { id: string; turns: string; rubric: string; tagsRequired: boolean }> = {
  health_bench: { id: 'prompt_id', turns: 'prompt', rubric: 'rubrics', tagsRequired: true },
  health_bench_professional: { id: 'id', turns: 'conversation.messages', rubric: 'rubric_items', tagsRequired: false },
};

/** One HealthBench line as an instance: the conversation to send, the rubric and tags for grading. */
export function healthBenchInstance(record: RawRecord, file: string, layout: HealthBenchLayout = 'health_bench'): Instance {
  const fail = failureAt(file, record);
  const f = record.fields;
  const names = FIELDS[layout];
  const id = f[names.id];
  if (typeof id !== 'string' || id.trim() === '') throw fail(names.id, 'must be non-empty text (the example id)');
  let turns: unknown = f.prompt;
  if (layout === 'health_bench_professional') {
    if (!isObject(f.conversation)) throw fail('conversation', 'must be an object holding "messages"');
    turns = f.conversation.messages;
  }
  const messages = messagesOf(turns, names.turns, fail);
  const rubric = rubricOf(f[names.rubric], names.rubric, names.tagsRequired, fail);
  const exampleTags = f.example_tags === undefined ? [] : tagsOf(f.example_tags, 'example_tags', fail);
  return {
    key: id,
    vars: {},
    messages,
    references: [],
    extra: { rubric: JSON.stringify(rubric), exampleTags: JSON.stringify(exampleTags) },
  };
}

/** The rubric and tags an instance carries (written by healthBenchInstance or a site's rubric file). */
export function rubricOfInstance(instance: Instance): { rubric: RubricCriterion[]; exampleTags: string[] } {
  const rubric = instance.extra?.rubric;
  const tags = instance.extra?.exampleTags;
  if (typeof rubric !== 'string') throw new UserError('benchmark.invalid', 'a rubric-graded instance carries no rubric (its adapter must be health_bench)');
  return { rubric: JSON.parse(rubric) as RubricCriterion[], exampleTags: typeof tags === 'string' ? (JSON.parse(tags) as string[]) : [] };
}
