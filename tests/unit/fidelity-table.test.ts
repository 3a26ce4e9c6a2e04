/**
 * The README's fidelity table is the definitions' own list of differences from HELM (helm.note,
 * helm.differences): regenerate it with `npm run docs:fidelity` after editing a definition.
 */
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { Catalog } from '../../src/catalog';
import { differencesOf, FIDELITY_TABLE_BEGIN, FIDELITY_TABLE_END, fidelityTable, withFidelityTable } from '../../src/catalog/fidelity-table';
import type { BenchmarkDefinition } from '../../src/catalog/types';
import { ROOT } from '../helpers/paths';

describe("the README's fidelity table", () => {
  const readme = readFileSync(join(ROOT, 'README.md'), 'utf8');
  const definitions = Catalog.load()
    .list()
    .map((b) => b.definition);

  it('is what the definitions list, row for row (regenerate with npm run docs:fidelity)', () => {
    const begin = readme.indexOf(FIDELITY_TABLE_BEGIN);
    const end = readme.indexOf(FIDELITY_TABLE_END);
    expect(begin).toBeGreaterThan(0);
    expect(end).toBeGreaterThan(begin);
    expect(readme.slice(begin + FIDELITY_TABLE_BEGIN.length, end).trim()).toBe(fidelityTable(definitions));
    expect(withFidelityTable(readme, definitions)).toBe(readme);
  });

  it('fails when a definition lists a difference the README does not show', () => {
    const changed = definitions.map((d) => (d.id === 'pubmed_qa' ? { ...d, helm: { ...d.helm, differences: ['Prompt: a difference added after the README was written.'] } } : d));
    expect(withFidelityTable(readme, changed)).not.toBe(readme);
  });

  it('has a row for every difference of every benchmark, and names the benchmark once', () => {
    const rows = fidelityTable(definitions).split('\n').slice(2);
    expect(rows).toHaveLength(definitions.reduce((n, d) => n + differencesOf(d).length, 0));
    for (const d of definitions) expect(rows.filter((r) => r.startsWith(`| \`${d.id}\``))).toHaveLength(1);
    expect(rows).toContain(
      "| `race_based_med` (RaceBias) | Instances: HELM keys its instances by the final prompt text, so rows whose prompt is identical collapse into one (the last row's label wins); ehrbench keeps every row. |",
    );
    expect(rows).toContain('|  | Prompt: HELM strips leading and trailing whitespace from the note; ehrbench sends the text column as the site file holds it. |');
  });

  it('takes any definition: one without a HELM run spec, one with nothing listed, text with a pipe', () => {
    const base = definitions.find((d) => d.id === 'pubmed_qa') as BenchmarkDefinition;
    const site = { ...base, id: 'site_triage', displayName: 'Site triage', helm: undefined } as unknown as BenchmarkDefinition;
    const plain = { ...base, id: 'new_bench', displayName: 'New', helm: { runSpec: 'new_bench' } };
    const piped = { ...base, id: 'piped', displayName: 'Piped', helm: { runSpec: 'piped', differences: ['Prompt: "a | b" is sent as "a / b".'] } };
    const table = fidelityTable([site, plain, piped]);
    expect(table).toContain('| `site_triage` (Site triage) | No HELM run spec: not a HELM benchmark, nothing to compare. |');
    expect(table).toContain("| `new_bench` (New) | None listed: prompt and instances as HELM's. |");
    expect(table).toContain('| `piped` (Piped) | Prompt: "a \\| b" is sent as "a / b". |');
  });
});
