/**
 * The README's fidelity table: every remaining difference from HELM, per benchmark, generated from the
 * definitions (helm.note and helm.differences) so that the README cannot claim less or more than the
 * definitions do. It takes any definition: one without a HELM run spec is named as such, one with a run
 * spec and nothing listed is named as matching.
 */
import type { BenchmarkDefinition } from './types';

export const FIDELITY_TABLE_BEGIN = '<!-- fidelity: generated from benchmarks/*/benchmark.json (helm.note, helm.differences) by `npm run docs:fidelity`; edit the definitions, not this table -->';
export const FIDELITY_TABLE_END = '<!-- end of fidelity -->';

function cell(text: string): string {
  return text.replace(/\|/g, '\\|').replace(/\s*\n\s*/g, ' ');
}

/** What a definition lists as differing from HELM: its note first, then each difference. */
export function differencesOf(d: BenchmarkDefinition): string[] {
  if (!d.helm?.runSpec) return ['No HELM run spec: not a HELM benchmark, nothing to compare.'];
  const listed = [...(d.helm.note ? [d.helm.note] : []), ...(d.helm.differences ?? [])];
  return listed.length ? listed : ["None listed: prompt and instances as HELM's."];
}

/** The markdown table: one row per difference, benchmarks in id order, the id on the first row of each. */
export function fidelityTable(definitions: readonly BenchmarkDefinition[]): string {
  const rows = [...definitions]
    .sort((a, b) => a.id.localeCompare(b.id))
    .flatMap((d) => differencesOf(d).map((text, i) => `| ${i === 0 ? `\`${d.id}\` (${cell(d.displayName)})` : ''} | ${cell(text)} |`));
  return ['| Benchmark | Where it differs from HELM |', '|---|---|', ...rows].join('\n');
}

/** `readme` with the text between the markers replaced by the table of `definitions`. */
export function withFidelityTable(readme: string, definitions: readonly BenchmarkDefinition[]): string {
  const begin = readme.indexOf(FIDELITY_TABLE_BEGIN);
  const end = readme.indexOf(FIDELITY_TABLE_END);
  if (begin < 0 || end < begin) throw new Error(`README.md has no fidelity table markers (${FIDELITY_TABLE_BEGIN} ... ${FIDELITY_TABLE_END})`);
  return `${readme.slice(0, begin + FIDELITY_TABLE_BEGIN.length)}\n${fidelityTable(definitions)}\n${readme.slice(end)}`;
}
