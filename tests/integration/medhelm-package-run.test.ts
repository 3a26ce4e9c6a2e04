/**
 * The two MedHELM package benchmarks end to end, through `ehrbench run` in local mode: the site binds
 * its file (synthetic records in the dataset's own layout, tests/fixtures/medhelm-package), the run
 * holds it to approval-required (an IRB approval, an in-VPC endpoint, de-identified prompts), the
 * loopback model server answers as a test model would, and the run's figures are the package's
 * metrics over those answers, worked out by hand.
 */
import { copyFileSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { openApp } from '../../src/app';
import { main } from '../../src/cli/main';
import { type ModelServer, startModelServer } from '../../src/demo/model-server';
import type { RunSummary } from '../../src/runs/engine';
import { makeHome, type TestHome } from '../helpers/home';
import { ROOT } from '../helpers/paths';

jest.setTimeout(180_000);

const FIXTURES = join(ROOT, 'tests', 'fixtures', 'medhelm-package');
const SITE_ENDPOINT = 'site-vpc';

/** What the test model answers, by a phrase of the case it was sent (de-identification leaves these alone). */
const ANSWERS: [RegExp, string][] = [
  [/pulmonary embolism/, 'Rating: -1'], // panel 0,1,3,6,0: 1/6, chosen by one expert
  [/streptococcal antigen/, 'Rating: +1\nExudate makes streptococcal pharyngitis more likely.'], // tie 0,0,4,4,2: 1
  [/non-contrast head/, 'Rating: 1'], // unanimous +2, but "1" does not parse: 0
  [/septic arthritis/, 'Rating: +2'], // shares .5,.3,.2,0,0: nobody chose +2: 0
  [/free T4/, 'A'], // right
  [/cherry-red spot/, 'C'], // wrong (B)
  [/resting tremor/, 'c'], // not an option letter: 0
];

let home: TestHome;
let server: ModelServer;

beforeAll(async () => {
  home = await makeHome('pglite');
  // Data the site binds is held to approval-required: an in-VPC endpoint and an IRB approval covering both benchmarks.
  const endpointsFile = join(home.home, 'access-policies', 'endpoints.json');
  const policy = JSON.parse(readFileSync(endpointsFile, 'utf8')) as { endpoints: Record<string, unknown>[] };
  policy.endpoints.push({ ...policy.endpoints[0], id: SITE_ENDPOINT, classification: { inVpc: true, baa: false, maxTier: 'approval-required', development: false } });
  writeFileSync(endpointsFile, JSON.stringify(policy, null, 2));
  const local = (JSON.parse(readFileSync(join(home.home, 'access-policies', 'principals.json'), 'utf8')) as { principals: { id: string }[] }).principals[0]?.id as string;
  const app = await openApp({ file: home.configFile, env: home.env });
  try {
    await app.approvals.create(
      { protocolNumber: 'IRB-MEDHELM-PKG-1', principalInvestigator: local, personnel: [local], benchmarks: ['sct_bench', 'medxpert_qa_text'], purpose: 'package benchmarks' },
      'carol',
    );
  } finally {
    await app.close();
  }
  copyFileSync(join(FIXTURES, 'sct_bench.csv'), join(home.home, 'sct_cleaned_full.csv'));
  copyFileSync(join(FIXTURES, 'medxpert_qa_text.jsonl'), join(home.home, 'medxpert_text_test.jsonl'));
  writeFileSync(
    join(home.home, 'site-data.json'),
    JSON.stringify({
      benchmarks: {
        sct_bench: { source: { type: 'csv', path: 'sct_cleaned_full.csv' } },
        medxpert_qa_text: { source: { type: 'jsonl', path: 'medxpert_text_test.jsonl' }, columns: { answer: 'label' } },
      },
    }),
  );
  server = await startModelServer({
    certPem: readFileSync(join(home.home, 'keys', 'demo-model-server.pem'), 'utf8'),
    keyPem: readFileSync(join(home.home, 'keys', 'demo-model-server.key.pem'), 'utf8'),
    port: home.port,
    record: true,
    behaviour: (_n, prompt) => ({ kind: 'answer', text: ANSWERS.find(([phrase]) => phrase.test(prompt))?.[1] ?? 'no answer for this prompt' }),
  });
});

afterAll(async () => {
  await server?.close();
  await home?.cleanup();
});

/** An ehrbench command in this process, on the test's data directory. */
async function ehrbench(args: string[]): Promise<{ code: number; stdout: string; stderr: string }> {
  const out: string[] = [];
  const err: string[] = [];
  const io = { stdout: (s: string) => void out.push(s), stderr: (s: string) => void err.push(s), env: home.env };
  const code = await main([...args, '--config', home.configFile], io);
  return { code, stdout: out.join(''), stderr: err.join('') };
}

async function run(benchmark: string): Promise<{ code: number; summary: RunSummary; output: string }> {
  const out: string[] = [];
  const err: string[] = [];
  const io = { stdout: (s: string) => void out.push(s), stderr: (s: string) => void err.push(s), env: home.env };
  const code = await main(['run', '--config', home.configFile, '--benchmark', benchmark, '--endpoint', SITE_ENDPOINT, '--json'], io);
  if (code !== 0) throw new Error(`ehrbench run ${benchmark} exited ${code}: ${err.join('')}`);
  return { code, summary: JSON.parse(out.join('')) as RunSummary, output: out.join('') + err.join('') };
}

const aggregate = (s: RunSummary, metric: string) => s.aggregates.find((a) => a.metric === metric);
const sentFor = (phrase: RegExp) => server.received.filter((r) => phrase.test(r.prompt));

describe('a local run of the MedHELM package benchmarks on site data', () => {
  it('show says where each file comes from and what it holds; check passes the bound fixtures and counts what is left out', async () => {
    const show = await ehrbench(['benchmarks', 'show', 'sct_bench']);
    expect(show.code).toBe(0);
    expect(show.stdout).toContain('https://raw.githubusercontent.com/SCT-Bench/sctpublic/c2843137b36218eac3f47e76eaa559c9fe7973e9/data/sct_cleaned_full.csv');
    expect(show.stdout).toMatch(/^ {4}-2: The expert panel's weight of -2/m);
    expect(show.stdout).toContain("differs from HELM: Run spec: the MedHELM package's default run");
    const mx = await ehrbench(['benchmarks', 'show', 'medxpert_qa_text']);
    expect(mx.stdout).toContain('Text/test.jsonl from https://huggingface.co/datasets/TsinghuaC3I/MedXpertQA');
    const sct = await ehrbench(['benchmarks', 'check', 'sct_bench']);
    expect(sct.code).toBe(0);
    expect(sct.stdout).toMatch(/^ok +records +5 records, 4 instances \(1 left out: dataset\.skip\.empty-column\)$/m);
    const check = await ehrbench(['benchmarks', 'check', 'medxpert_qa_text']);
    expect(check.stdout).toMatch(/^ok +columns +id, question, options, label$/m);
    expect(check.stdout).toContain('medxpert_qa_text: ready to run');
  });

  it('sct_bench: sends the package prompt, scores the ratings against each panel, and counts the case without its finding', async () => {
    const { summary, output } = await run('sct_bench');
    expect(summary).toMatchObject({ status: 'completed', tier: 'approval-required', mainMetric: 'sct_score', counts: { done: 4, failed: 0 } });
    expect(summary.skipped).toEqual({ 'dataset.skip.empty-column': 1 });
    // (1/6 + 1 + 0 + 0) / 4 and (1 + 1 + 0 + 0) / 4
    expect(summary.mainScore).toBeCloseTo(7 / 24, 12);
    expect(aggregate(summary, 'sct_score')).toMatchObject({ n: 4 });
    expect(aggregate(summary, 'sct_expert_set_membership')).toMatchObject({ value: 0.5, n: 4 });

    const [sent] = sentFor(/pulmonary embolism/);
    expect(sent?.prompt).toMatch(/^# Script Concordance Testing\n\nYou are taking a Script Concordance Test/);
    expect(sent?.prompt).toContain('Respond with "Rating: " followed by a rating (-2, -1, 0, +1, +2).\n\nThis is an exam, and you are required to provide a valid answer.\n## Scenario\n\n');
    expect(sent?.prompt).toContain('\n\n## Hypothesis\n\nIf you were thinking of: pulmonary embolism\n\n## Additional Information\n\nAnd then you find: a normal D-dimer');
    expect(sent?.prompt).toMatch(/\n\n## Response\n?$/);
    expect(JSON.parse(sent?.body ?? '{}')).toMatchObject({ max_tokens: 200, temperature: 0 });
    expect(sentFor(/peptic ulcer/)).toHaveLength(0);
    // What the command printed holds numbers, never the cases.
    expect(output).not.toMatch(/embolism|D-dimer|streptococcal|warfarin/);
  });

  it("medxpert_qa_text: letters the dataset's options after its question and scores the letter by exact match", async () => {
    const { summary } = await run('medxpert_qa_text');
    expect(summary).toMatchObject({ status: 'completed', mainMetric: 'exact_match', counts: { done: 3, failed: 0 } });
    expect(summary.mainScore).toBeCloseTo(1 / 3, 12);
    const [sent] = sentFor(/cherry-red spot/);
    expect(sent?.prompt).toMatch(
      /^You are a medical expert assistant\. Answer the following medical question with single letter from options\.\n\nQuestion: A 30-year-old man .*\(E\) Vortex vein\nA\. Central retinal vein\nB\. Central retinal artery\nC\. Posterior ciliary artery\nD\. Ophthalmic vein\nE\. Vortex vein\nAnswer:\n?$/s,
    );
    expect(JSON.parse(sent?.body ?? '{}')).toMatchObject({ max_tokens: 1 });
  });
});
