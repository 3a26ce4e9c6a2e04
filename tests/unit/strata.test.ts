/**
 * Strata of a site binding: the age band at a note's date (birthdays, 29 February, a birth month or
 * day the CDM leaves out), concept and value maps with their "(other)", how the binding is checked
 * (one line naming the file and field, never a value of the data), the labels a CSV source's records
 * get, and the disparity an export states per subgroup field (worst group, ratio to the best, flag
 * outside seismometer's 0.8-1.25), which `export verify` recomputes.
 */
import { writeFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { ageBandAt, bandLabels, bandOf, Catalog, instancesOf, loadSiteData, mappedLabel, OMOP_DEFAULT_MAPS, resolveStrata, strataRecord, type Instance } from '../../src/catalog';
import { stratumValues } from '../../src/catalog/strata';
import { createPublicKey, generateKeyPairSync, sign } from 'node:crypto';
import { canonicalJson } from '../../src/canonical';
import { disparityLine } from '../../src/cli/commands/export';
import { metricDisparity } from '../../src/export/disparity';
import { type Bundle, keyFingerprint, signBundle, type SubgroupCell, type UnsignedBundle, verifyBundle } from '../../src/export';
import { tempDir } from '../helpers/db';
import { failure } from '../helpers/errors';

const EDGES = [18, 45, 65, 80];
const day = (s: string) => {
  const [year, month, d] = s.split('-').map(Number);
  return { year: year as number, month: month as number, day: d as number };
};

describe('age band at the note date', () => {
  it('labels the bands by their edges, the one under the first edge its own', () => {
    expect(bandLabels(EDGES)).toEqual(['0-17', '18-44', '45-64', '65-79', '80+']);
    expect(bandLabels([0, 18])).toEqual(['0-17', '18+']);
    expect([0, 17, 18, 44, 45, 64, 65, 79, 80, 104].map((a) => bandOf(a, EDGES))).toEqual(['0-17', '0-17', '18-44', '18-44', '45-64', '45-64', '65-79', '65-79', '80+', '80+']);
    expect(bandOf(-1, EDGES)).toBe('(other)');
    expect(bandOf(undefined, EDGES)).toBe('(other)');
  });

  it('counts a year from the birthday itself: the day before is still the younger band', () => {
    const born = { year: 1960, month: 6, day: 15 };
    expect(ageBandAt(born, day('2025-06-14'), EDGES)).toBe('45-64'); // 64 on the eve of 65
    expect(ageBandAt(born, day('2025-06-15'), EDGES)).toBe('65-79');
    expect(ageBandAt(born, day('2025-12-31'), EDGES)).toBe('65-79');
    expect(ageBandAt({ year: 2006, month: 3, day: 1 }, day('2024-02-29'), EDGES)).toBe('0-17');
    expect(ageBandAt({ year: 2006, month: 3, day: 1 }, day('2024-03-01'), EDGES)).toBe('18-44');
  });

  it('turns a 29 February birthday over on 1 March in other years', () => {
    const leap = { year: 2000, month: 2, day: 29 };
    expect(ageBandAt(leap, day('2018-02-28'), EDGES)).toBe('0-17');
    expect(ageBandAt(leap, day('2018-03-01'), EDGES)).toBe('18-44');
    expect(ageBandAt(leap, day('2016-02-29'), [16])).toBe('16+');
  });

  it('without month or day, gives the band only when every possible birth date falls in it', () => {
    // Born in 1980, note in 2025: 44 or 45 depending on the birthday: "(other)".
    expect(ageBandAt({ year: 1980 }, day('2025-07-01'), EDGES)).toBe('(other)');
    // Born in 1990, note in 2025: 34 or 35, both 18-44.
    expect(ageBandAt({ year: 1990, month: null, day: null }, day('2025-07-01'), EDGES)).toBe('18-44');
    // Month known, day not: decided unless the note falls in the birth month.
    expect(ageBandAt({ year: 1980, month: 3 }, day('2025-07-01'), EDGES)).toBe('45-64');
    expect(ageBandAt({ year: 1980, month: 9 }, day('2025-07-01'), EDGES)).toBe('18-44');
    expect(ageBandAt({ year: 1980, month: 7 }, day('2025-07-15'), EDGES)).toBe('(other)');
    // A month or day out of range is not known.
    expect(ageBandAt({ year: 1980, month: 13, day: 1 }, day('2025-07-01'), EDGES)).toBe('(other)');
    expect(ageBandAt({ year: 1980, month: 2, day: 30 }, day('2025-02-15'), EDGES)).toBe('(other)');
  });

  it('puts a person with no year of birth, or a note with no date, in "(other)"', () => {
    expect(ageBandAt({ year: null, month: 3, day: 9 }, day('2025-07-01'), EDGES)).toBe('(other)');
    expect(ageBandAt({ year: 1980, month: 3, day: 9 }, undefined, EDGES)).toBe('(other)');
    // Born after the note (a data error): no band.
    expect(ageBandAt({ year: 2030, month: 1, day: 1 }, day('2025-07-01'), EDGES)).toBe('(other)');
  });
});

describe('concept and value maps', () => {
  it('labels the standard OMOP concepts by default and everything else "(other)"', () => {
    const [sex, race, ethnicity] = resolveStrata([
      { name: 'sex', omop: 'sex' },
      { name: 'race', omop: 'race' },
      { name: 'ethnicity', omop: 'ethnicity' },
    ]);
    expect([8507, '8532', 0, null, '', ' 8507 '].map((v) => mappedLabel(v, sex?.map))).toEqual(['male', 'female', '(other)', '(other)', '(other)', 'male']);
    expect(mappedLabel('8516', race?.map)).toBe('Black or African American');
    expect(mappedLabel('8527', race?.map)).toBe('White');
    expect(mappedLabel('38003563', ethnicity?.map)).toBe('Hispanic or Latino');
    expect(mappedLabel('38003564', ethnicity?.map)).toBe('Not Hispanic or Latino');
    expect(OMOP_DEFAULT_MAPS.payer).toBeUndefined();
    // A key the map does not own (an inherited one) is no label.
    expect(mappedLabel('constructor', { en: 'English' })).toBe('(other)');
  });

  it("computes a record's strata from its columns and its OMOP demographics, never another value", () => {
    const strata = resolveStrata([
      { name: 'language', column: 'lang', map: { en: 'English', eng: 'English', es: 'Spanish' } },
      { name: 'age_file', column: 'age_years', edges: [18, 65] },
      { name: 'age', omop: 'age', edges: EDGES },
      { name: 'sex', omop: 'sex' },
      { name: 'setting', omop: 'visit_type' },
      { name: 'payer', omop: 'payer', map: { '280': 'private', '289': 'medicare' } },
    ]);
    const demographics = {
      year_of_birth: 1950,
      month_of_birth: 1,
      day_of_birth: 2,
      note_date: '2021-01-01',
      gender_concept_id: '8532',
      race_concept_id: '0',
      ethnicity_concept_id: null,
      visit_concept_id: '9203',
      place_of_service_concept_id: null,
      payer_concept_id: '999',
    };
    expect(stratumValues(strata, { lang: 'tl', age_years: '70' }, demographics)).toEqual({
      language: '(other)',
      age_file: '65+',
      age: '65-79', // 70 the next day
      sex: 'female',
      setting: 'emergency',
      payer: '(other)',
    });
    expect(stratumValues(strata, { lang: 'eng', age_years: 'forty' }, undefined)).toMatchObject({ language: 'English', age_file: '(other)', age: '(other)', sex: '(other)' });
  });

  it('records the names and a hash of the resolved declaration: moved edges or a changed default are another record', () => {
    const a = strataRecord([{ name: 'age', omop: 'age', edges: EDGES }]);
    const b = strataRecord([{ name: 'age', omop: 'age', edges: [18, 46, 65, 80] }]);
    expect(a?.names).toEqual(['age']);
    expect(a?.sha256).toMatch(/^[0-9a-f]{64}$/);
    expect(b?.sha256).not.toBe(a?.sha256);
    expect(strataRecord([{ name: 'sex', omop: 'sex' }])?.sha256).toBe(strataRecord([{ name: 'sex', omop: 'sex', map: { '8507': 'male', '8532': 'female' } }])?.sha256);
    expect(strataRecord(undefined)).toBeUndefined();
  });
});

describe('strata in the site data file', () => {
  const CSV = 'prompt,context,label,lang,age\nQ?,Synthetic note one,A,en,30\nQ?,Synthetic note two,B,xx,\nQ?,Synthetic note three,A,,91\n';

  function siteFile(strata: unknown, source: Record<string, unknown> = { type: 'csv', path: 'notes.csv' }): string {
    const dir = tempDir('strata');
    writeFileSync(join(dir, 'notes.csv'), CSV);
    const file = join(dir, 'site-data.json');
    writeFileSync(file, JSON.stringify({ benchmarks: { shc_ptbm_med: { source, strata } } }));
    return file;
  }

  const refused = (strata: unknown, source?: Record<string, unknown>) => {
    const file = siteFile(strata, source);
    try {
      loadSiteData(file);
    } catch (err) {
      return (err as Error).message.replace(file, 'FILE');
    }
    return 'loaded';
  };

  it('refuses a declaration it cannot use, naming the file, the field and the fix', () => {
    expect(refused([{ name: 'age', omop: 'age', edges: EDGES }])).toBe(
      'FILE: /benchmarks/shc_ptbm_med/strata/0/omop: OMOP demographics need an omop-note source; for a csv or jsonl source use "column" with "map" or "edges"',
    );
    expect(refused([{ name: 'lang', column: 'lang' }])).toBe('FILE: /benchmarks/shc_ptbm_med/strata/0: a column stratum takes exactly one of "map" (value -> label) and "edges" (age bands)');
    expect(refused([{ name: 'x', column: 'a', omop: 'sex', map: { a: 'b' } }])).toMatch(/strata\/0: give exactly one of "column"/);
    const omop = { type: 'omop-note', connection: { env: 'X' } };
    expect(refused([{ name: 'age', omop: 'age' }], omop)).toMatch(/strata\/0: omop "age" takes "edges"/);
    expect(refused([{ name: 'payer', omop: 'payer' }], omop)).toMatch(/strata\/0: omop "payer" has no standard labels; declare its "map"/);
    expect(refused([{ name: 'sex', omop: 'sex', map: { male: 'male' } }], omop)).toMatch(/strata\/0\/map: key 1 is not a concept id/);
    expect(refused([{ name: 'age', omop: 'age', edges: [18, 18] }], omop)).toMatch(/strata\/0\/edges: edges must be strictly ascending/);
    expect(
      refused(
        [
          { name: 'sex', omop: 'sex' },
          { name: 'sex', omop: 'race' },
        ],
        omop,
      ),
    ).toMatch(/strata\/1\/name: "sex" is declared twice/);
    // The schema: an unknown field, a label that is not a short label, a name that is not an id.
    expect(refused([{ name: 'sex', omop: 'sex', colour: 'x' }], omop)).toMatch(/strata\/0.*colour/);
    expect(refused([{ name: 'lang', column: 'lang', map: { en: 'English <script>' } }])).toMatch(/strata\/0\/map\/en.*pattern/);
    expect(refused([{ name: 'Lang', column: 'lang', map: { en: 'English' } }])).toMatch(/strata\/0\/name.*pattern/);
    expect(refused([{ name: 'sex', omop: 'sex' }], omop)).toBe('loaded');
  });

  it("refuses a stratum named like a field of the benchmark's own instances", async () => {
    const dir = tempDir('strata');
    writeFileSync(
      join(dir, 'site-data.json'),
      JSON.stringify({ benchmarks: { medcalc_bench: { source: { type: 'csv', path: 'x.csv' }, strata: [{ name: 'category', column: 'a', map: { a: 'b' } }] } } }),
    );
    // MedCalc-Bench declares subgroups on category.
    expect(() => Catalog.load([], { siteDataFile: join(dir, 'site-data.json') })).toThrow(/strata\/0\/name: "category" is a field of medcalc_bench's own instances/);
  });

  it("labels each record of a CSV source with the declared labels, and names a stratum's missing column without a value", async () => {
    const file = siteFile([
      { name: 'language', column: 'lang', map: { en: 'English' } },
      { name: 'age', column: 'age', edges: [18, 65, 90] },
    ]);
    const b = Catalog.load([], { siteDataFile: file }).get('shc_ptbm_med');
    const got: Instance[] = [];
    for await (const i of instancesOf(b)) got.push(i);
    expect(got.map((i) => i.extra)).toEqual([
      { language: 'English', age: '18-64' },
      { language: '(other)', age: '(other)' },
      { language: '(other)', age: '90+' },
    ]);
    // The strata are outside the definition's hash: declaring them leaves the benchmark's own subgroups exportable.
    const plain = join(dirname(file), 'plain-site-data.json');
    writeFileSync(plain, JSON.stringify({ benchmarks: { shc_ptbm_med: { source: { type: 'csv', path: 'notes.csv' } } } }));
    expect(Catalog.load([], { siteDataFile: plain }).get('shc_ptbm_med').definitionHash).toBe(b.definitionHash);

    const misspelt = Catalog.load([], { siteDataFile: siteFile([{ name: 'language', column: 'language', map: { en: 'English' } }]) }).get('shc_ptbm_med');
    const err = await failure(
      (async () => {
        for await (const _ of instancesOf(misspelt)) void _;
      })(),
    );
    expect(err.code).toBe('dataset.missing-column');
    expect(err.message).toMatch(/notes\.csv: record 1: has no column "language" \(stratum "language" of benchmarks\.shc_ptbm_med in .*site-data\.json\); fix the column name/);
    expect(err.message).not.toMatch(/Synthetic|English/);
  });
});

describe('disparity of a subgroup field', () => {
  const cell = (label: string, value: number | null, low = 20): SubgroupCell =>
    value === null ? { label, suppressed: '<k' } : { label, n: { low, high: low + 9 }, metrics: [{ name: 'exact_match', value, n: { low, high: low + 9 } }] };

  it('names the worst and best released groups and flags ratios outside 0.8-1.25', () => {
    const d = metricDisparity([cell('a', 0.9), cell('b', 0.7), cell('c', 0.75), cell('d', null), cell('e', 0.72)], 'exact_match', false);
    expect(d).toEqual({
      metric: 'exact_match',
      lowerIsBetter: false,
      worst: 'b',
      best: 'a',
      ratios: [
        { label: 'a', ratio: 1, flagged: false },
        { label: 'b', ratio: 0.78, flagged: true },
        { label: 'c', ratio: 0.83, flagged: false },
        { label: 'd', ratio: null, flagged: false },
        { label: 'e', ratio: 0.8, flagged: false },
      ],
    });
  });

  it('flags on the exact ratio, not its rounding, and takes lower-is-better the other way', () => {
    // 0.795 / 1 rounds to 0.8 but is under it.
    expect(metricDisparity([cell('a', 1, 1000), cell('b', 0.795, 1000)], 'exact_match', false)?.ratios[1]).toEqual({ label: 'b', ratio: 0.8, flagged: true });
    const lower = metricDisparity([cell('a', 0.2), cell('b', 0.3), cell('c', 0.25)], 'exact_match', true);
    expect(lower).toMatchObject({
      worst: 'b',
      best: 'a',
      ratios: [
        { ratio: 1, flagged: false },
        { ratio: 1.5, flagged: true },
        { ratio: 1.25, flagged: false },
      ],
    });
  });

  it('reads as one line in `export show`', () => {
    const d = metricDisparity([cell('a', 0.9), cell('b', 0.7), cell('d', null)], 'exact_match', false);
    expect(disparityLine(d as NonNullable<typeof d>)).toBe('exact_match: worst b, best a (higher is better); ratio to best: a 1.00, b 0.78 (outside 0.8-1.25)');
  });

  it('gives no ratio against a best of 0, and nothing when no cell releases the metric', () => {
    expect(metricDisparity([cell('a', 0), cell('b', 0)], 'exact_match', false)?.ratios.map((r) => r.ratio)).toEqual([null, null]);
    expect(metricDisparity([cell('a', 0), cell('b', 0.1)], 'exact_match', true)?.ratios.map((r) => r.ratio)).toEqual([null, null]);
    expect(metricDisparity([cell('a', null), cell('b', null)], 'exact_match', false)).toBeUndefined();
  });
});

describe('disparity in a signed bundle', () => {
  const HASH = 'a'.repeat(64);
  const RUN = '7d1c2b3a-4e5f-4a6b-8c7d-9e0f1a2b3c4d';
  const released = (value: number) => ({ n: { low: 20, high: 29 }, metrics: [{ name: 'exact_match', value, n: { low: 20, high: 29 } }] });
  const cells: SubgroupCell[] = [
    { label: '18-44', ...released(0.9) },
    { label: '45-64', ...released(0.65) },
    { label: '65-79', suppressed: 'complementary' },
    { label: '80+', suppressed: '<k' },
  ];

  function unsigned(disparity: unknown): UnsignedBundle {
    return {
      format: 'ehrbench.export-bundle',
      schemaVersion: 1,
      exportId: '0b6f7c52-8f0e-4d43-9d4a-3f3d2b1c0a99',
      siteId: 'test-site',
      runIds: [RUN],
      tier: 'private',
      irbProtocol: 'IRB-2026-0001',
      duaId: null,
      requestedBy: 'alice',
      requestedOn: '2026-03-14',
      disclosure: {
        policyId: 'ehrbench.min-cell-size.v2',
        k: 11,
        countRangeWidth: 10,
        complementarySuppression: true,
        valueDecimals: 3,
        valueResolution: '1/D, D the largest of 1000, 500, 200, 100, 50, 20, 10, 5, 2, 1 at most the low end of the count range',
        ci: 'widest wilson-95 over the count range and the values that round to the released one ([0, 1] metrics); none (others)',
        differencing: 'every released cell of a benchmark differs from every other by 0 or at least k instances, whatever its name',
      },
      results: [
        {
          runId: RUN,
          benchmark: {
            id: 'shc_ptbm_med',
            version: '1.0.0',
            category: 'Administration and Workflow',
            subcategory: 'Care Coordination and Planning',
            tier: 'private',
            helmGroup: null,
            split: 'test',
            lowerIsBetter: false,
            definitionHash: HASH,
            templateHash: HASH,
          },
          model: { endpointId: 'vpc-private', provider: 'openai-compatible', deployment: null, model: 'standin', maxTokens: 1, temperature: 0 },
          scoring: 'corrected',
          deidVersion: null,
          mainMetric: 'exact_match',
          n: { low: 70, high: 79 },
          metrics: [{ name: 'exact_match', value: 0.8, n: { low: 70, high: 79 } }],
          subgroups: [{ field: 'age', stratum: true, cells, disparity } as never],
          usage: null,
        },
      ],
      totals: { promptTokens: 0, completionTokens: 0, estimatedCostUsd: 0 },
      createdOn: '2026-03-15',
      releasedBy: 'carol',
      daemonVersion: '0.1.0',
      auditCheckpoint: { checkpointId: 4, seq: 120, headHash: HASH, keyFingerprint: HASH, releaseEventSeq: 119 },
      helm: [],
    };
  }

  const { privateKey } = generateKeyPairSync('ed25519');
  const publicKey = createPublicKey(privateKey);
  const key = { privateKey, publicKey, fingerprint: keyFingerprint(publicKey) };
  /** Signed as a forger with the key would, past signBundle's own checks. */
  const forged = (u: UnsignedBundle): string => {
    const bundle: Bundle = { ...u, signature: { algorithm: 'Ed25519', keyFingerprint: key.fingerprint, value: sign(null, Buffer.from(canonicalJson(u)), privateKey).toString('hex') } };
    return canonicalJson(bundle) + '\n';
  };

  it('verifies a disparity that is what the released cells give, and refuses one that is not', () => {
    const right = [metricDisparity(cells, 'exact_match', false)];
    expect(right[0]).toMatchObject({ worst: '45-64', best: '18-44', ratios: [{ ratio: 1 }, { ratio: 0.72, flagged: true }, { ratio: null }, { ratio: null }] });
    expect(verifyBundle(signBundle(unsigned(right), key).text, publicKey)).toMatchObject({ ok: true, problems: [] });
    // A disparity that names a hidden cell as the worst group (it would tell its value's order) is refused, at signing and at verification.
    const leaking = [{ ...right[0], worst: '65-79' }];
    expect(() => signBundle(unsigned(leaking), key)).toThrow(/subgroup age disparity of exact_match is not what its released cells give/);
    expect(verifyBundle(forged(unsigned(leaking)), publicKey).problems).toEqual(['disclosure: results[0] subgroup age disparity of exact_match is not what its released cells give']);
    // A ratio for a hidden cell, or a ratio that is not a ratio, fails the schema or the recomputation.
    const hiddenRatio = [{ ...right[0], ratios: right[0]?.ratios.map((r) => (r.label === '80+' ? { ...r, ratio: 0.5 } : r)) }];
    expect(verifyBundle(forged(unsigned(hiddenRatio)), publicKey).ok).toBe(false);
    expect(verifyBundle(forged(unsigned([{ ...right[0], note: 'x' }])), publicKey).problems.join()).toMatch(/schema: .*disparity\/0.*note/);
  });
});
