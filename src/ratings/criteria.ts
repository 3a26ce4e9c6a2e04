/**
 * A jury benchmark's criteria as a clinician rates them: the names the judges score (the definition's
 * `jury.criteria`), the scale (`jury.scale`, 1-5 by default) and the description the judges read,
 * taken from the judge prompt (`Accuracy (1-5)` followed by `- Does the note ...`), so clinicians and
 * judges are asked the same question.
 */
import type { Benchmark } from '../catalog';

export interface Criterion {
  name: string;
  min: number;
  max: number;
  /** The judge prompt's description of the criterion; null when the prompt has none in the usual layout. */
  description: string | null;
}

export function criteriaOf(benchmark: Benchmark): Criterion[] {
  const jury = benchmark.definition.jury;
  if (!jury) return [];
  const scale = jury.scale ?? { min: 1, max: 5 };
  return jury.criteria.map((name) => ({ name, min: scale.min, max: scale.max, description: describe(benchmark.juryTemplate ?? '', name) }));
}

/** The lines after `Name (1-5)` up to the next blank line, their leading dashes dropped, as one sentence. */
function describe(template: string, name: string): string | null {
  const lines = template.split(/\r?\n/);
  const heading = new RegExp(`^\\s*${name.replace(/[^a-z0-9]/gi, '.')}\\s*\\(\\s*\\d+\\s*-\\s*\\d+\\s*\\)\\s*:?\\s*$`, 'i');
  const at = lines.findIndex((l) => heading.test(l));
  if (at < 0) return null;
  const body: string[] = [];
  for (const line of lines.slice(at + 1)) {
    if (line.trim() === '') break;
    body.push(line.trim().replace(/^-\s*/, ''));
  }
  return body.length ? body.join(' ') : null;
}
