/**
 * Reading a judge's answer as HELM's LLMAsJuryAnnotator does: the span from the first "{" to the last
 * "}" (its greedy `\{.*\}`), parsed as JSON; on failure, parsed once more with one "}" appended (HELM
 * retries only after Python's "Expecting ',' delimiter"; a span that ends in "}" and parses once a
 * brace is added can only have failed that way, so the retry below accepts exactly what HELM's does).
 * The answer must hold every criterion as an object with `score` and `explanation`, or the judge is
 * dropped. Only the scores are returned: explanations are discarded here and never leave this function.
 */
import type { ScoringMode } from '../../metrics';

export interface Scale {
  min: number;
  max: number;
}

function firstObjectSpan(text: string): string {
  const start = text.indexOf('{');
  const end = text.lastIndexOf('}');
  return start >= 0 && end > start ? text.slice(start, end + 1) : text;
}

function parseLenient(span: string): unknown {
  try {
    return JSON.parse(span);
  } catch {
    try {
      return JSON.parse(`${span}}`);
    } catch {
      return undefined;
    }
  }
}

function isObject(v: unknown): v is Record<string, unknown> {
  return typeof v === 'object' && v !== null && !Array.isArray(v);
}

/** Python's int() of a JSON score: ints and floats truncate, digit strings parse, anything else fails. */
function pythonInt(v: unknown): number | undefined {
  if (typeof v === 'number' && Number.isFinite(v)) return Math.trunc(v);
  if (typeof v === 'boolean') return v ? 1 : 0;
  if (typeof v === 'string' && /^\s*[-+]?\d+\s*$/.test(v)) return Number.parseInt(v, 10);
  return undefined;
}

/**
 * The scores of one judge, or undefined when its answer is dropped. `helm` mode counts every entry of
 * the answer that has a score (HELM averages all of them) with int() truncation and no range check;
 * `corrected` mode counts the rubric's criteria only and drops a judge whose score is not an integer
 * on the scale.
 */
export function judgeScores(answer: string, criteria: readonly string[], scale: Scale, mode: ScoringMode): number[] | undefined {
  const parsed = parseLenient(firstObjectSpan(answer));
  if (!isObject(parsed)) return undefined;
  for (const c of criteria) {
    const entry = parsed[c];
    if (!isObject(entry) || !('score' in entry) || !('explanation' in entry)) return undefined;
  }
  const scores: number[] = [];
  if (mode === 'helm') {
    for (const entry of Object.values(parsed)) {
      const score = isObject(entry) ? pythonInt(entry.score) : undefined;
      if (score === undefined) return undefined; // HELM would fail on it; the judge is dropped
      scores.push(score);
    }
    return scores;
  }
  for (const c of criteria) {
    const raw = (parsed[c] as Record<string, unknown>).score;
    const score = typeof raw === 'number' ? raw : typeof raw === 'string' && /^\s*\d+\s*$/.test(raw) ? Number(raw) : Number.NaN;
    if (!Number.isInteger(score) || score < scale.min || score > scale.max) return undefined;
    scores.push(score);
  }
  return scores;
}
