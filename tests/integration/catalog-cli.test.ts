/**
 * The catalog through the real `ehrbench` binary (list, show, import-helm) and EHRSQL end to end
 * through the run engine with a site SQLite database, in both scoring modes.
 */
import { spawnSync } from 'node:child_process';
import { mkdirSync, readdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import Database from 'better-sqlite3';
import { openApp } from '../../src/app';
import { startModelServer } from '../../src/demo/model-server';
import { approveRun, executeRun, requestRun } from '../../src/runs/engine';
import { DEMO_ENDPOINT_ID, initHome } from '../../src/setup/init';
import { researcher } from '../helpers/app';
import { builtInCategoryHeadings, builtInSummaryLine, builtInWithTier, MEDHELM_BENCHMARK_COUNT } from '../helpers/catalog-counts';
import { tempDir } from '../helpers/db';
import { makeHome } from '../helpers/home';
import { ROOT } from '../helpers/paths';

jest.setTimeout(120_000);

function cli(args: string[], env: NodeJS.ProcessEnv = {}) {
  const r = spawnSync(process.execPath, [join(ROOT, 'bin', 'ehrbench.js'), ...args], {
    encoding: 'utf8',
    env: { PATH: process.env.PATH, HOME: process.env.HOME, ...env },
    timeout: 60_000,
  });
  return { code: r.status, stdout: r.stdout, stderr: r.stderr };
}

function home(): string {
  const h = tempDir('cli');
  initHome({ home: h });
  return h;
}

describe('ehrbench benchmarks', () => {
  it('lists every built-in benchmark grouped by the 5 categories, with their tiers', () => {
    const h = home();
    const r = cli(['benchmarks', 'list'], { EHRBENCH_HOME: h });
    expect(r.code).toBe(0);
    for (const c of builtInCategoryHeadings()) {
      expect(r.stdout).toContain(c);
    }
    expect(r.stdout).toContain(builtInSummaryLine());
    expect(r.stdout).toMatch(/mimiciv_billing_code\s+MIMIC-IV Billing Code\s+Overseeing Financial Activities\s+approval-required\s+mimiciv_billing_code_f1\s+site must supply/);
    expect(r.stdout).toMatch(/aci_bench\s+ACI-Bench\s+Documenting Patient Visits\s+public\s+jury_score\s+shipped/);
    const json = JSON.parse(cli(['benchmarks', 'list', '--json'], { EHRBENCH_HOME: h }).stdout) as { id: string; tier: string }[];
    expect(json).toHaveLength(MEDHELM_BENCHMARK_COUNT);
    const priv = JSON.parse(cli(['benchmarks', 'list', '--tier', 'private', '--json'], { EHRBENCH_HOME: h }).stdout) as { tier: string }[];
    expect(priv).toHaveLength(builtInWithTier('private'));
    const cng = JSON.parse(cli(['benchmarks', 'list', '--category', 'clinical note', '--json'], { EHRBENCH_HOME: h }).stdout) as { category: string }[];
    expect(new Set(cng.map((b) => b.category))).toEqual(new Set(['Clinical Note Generation']));
    expect(cli(['benchmarks', 'list', '--category', 'c'], { EHRBENCH_HOME: h }).stderr).toMatch(/--category must name one of/);
  });

  it('shows what data a site must supply, in which format, and how to point ehrbench at it', () => {
    const h = home();
    const r = cli(['benchmarks', 'show', 'clear'], { EHRBENCH_HOME: h });
    expect(r.code).toBe(0);
    expect(r.stdout).toContain('Data: NOT CONFIGURED');
    expect(r.stdout).toContain('accepted formats: csv, jsonl, omop-note');
    expect(r.stdout).toMatch(/result_human: The human label: 1 = has a history, 0 = no history, 2 = uncertain\./);
    expect(r.stdout).toContain(`Configure it in ${join(h, 'site-data.json')}`);
    expect(r.stdout).toContain('"type": "omop-note"');
    // The columns holding a record's patient and known identifiers can be bound, and the OMOP options are named.
    expect(r.stdout).toContain('"subject": "patient_id"');
    expect(r.stdout).toMatch(/"known": \{ "names": \["patient_name", "nok_name"\], "mrns": \["mrn"\]/);
    expect(r.stdout).toContain('"personSourceValue": "mrn" (default) | "pseudonym" | "ignore"; "identifierTables"');

    // Following what show says makes the benchmark readable.
    writeFileSync(join(h, 'clear.csv'), 'text,condition,result_human\nnote,chronic pain,1\n');
    writeFileSync(join(h, 'site-data.json'), JSON.stringify({ benchmarks: { clear: { source: { type: 'csv', path: 'clear.csv' } } } }));
    const bound = cli(['benchmarks', 'show', 'clear'], { EHRBENCH_HOME: h });
    expect(bound.stdout).toContain(`Data: bound by ${join(h, 'site-data.json')} (csv): ${join(h, 'clear.csv')}`);
    expect(cli(['benchmarks', 'list', '--tier', 'private'], { EHRBENCH_HOME: h }).stdout).toMatch(/clear\s+CLEAR\s+.*site data/);
  });

  it('imports a HELM configurable benchmark (YAML, {column} template, CSV) as a site benchmark', () => {
    const h = home();
    const src = tempDir('helm');
    writeFileSync(join(src, 'demo_prompt.txt'), 'You are a clinical assistant.\n\nPatient Note:\n{note}\n\nQuestion:\n{question}\n\nAnswer with "Yes" or "No".\n');
    writeFileSync(
      join(src, 'demo.csv'),
      'patient_id,note,question,correct_answer,incorrect_answers\n001,"Patient with hypertension.","Hypertension?","Yes","[""No""]"\n002,"Denies smoking.","Smokes?","No","[""Yes""]"\n',
    );
    writeFileSync(
      join(src, 'judge.txt'),
      'Judge.\n<Q>{QUESTION}</Q>\n<R>{RESPONSE}</R>\n<rubric_criteria>\n{"faithfulness": {"score": 0, "explanation": "x"}, "clarity": {"score": 0, "explanation": "y"}}\n</rubric_criteria>\n',
    );
    writeFileSync(
      join(src, 'demo.yaml'),
      'name: EXACT-MATCH-DEMO\ndescription: Yes/no questions on notes.\nprompt_file: demo_prompt.txt\ndataset_file: demo.csv\nmax_tokens: 1\nmetrics:\n  - name: exact_match\n  - name: BERTScore-F\n  - name: jury_score\n    prompt_file: judge.txt\n    judges:\n      - name: huggingface/qwen2.5-7b-instruct\n        model_name: qwen/qwen2.5-7b-instruct\n',
    );
    const out = join(h, 'site-benchmarks');
    mkdirSync(out);
    const config = JSON.parse(readFileSync(join(h, 'config.json'), 'utf8'));
    config.catalog = { dirs: ['site-benchmarks'] };
    writeFileSync(join(h, 'config.json'), JSON.stringify(config));
    // The import names the dataset where it is, so its folder must be one the catalog reads from.
    const outside = cli(['benchmarks', 'import-helm', join(src, 'demo.yaml'), '--out', out, '--category', 'Clinical Decision', '--subcategory', 'Supporting Diagnostic Decisions'], {
      EHRBENCH_HOME: h,
    });
    expect(outside.code).toBe(1);
    expect(outside.stderr).toMatch(/dataset_file: .*demo\.csv is outside the benchmark's folder .*catalog\.dataDirs \(rule benchmark\.file-outside-folder\)\n$/);
    expect(readdirSync(out)).toEqual([]);
    config.catalog = { dirs: ['site-benchmarks'], dataDirs: [src] };
    writeFileSync(join(h, 'config.json'), JSON.stringify(config));

    const r = cli(['benchmarks', 'import-helm', join(src, 'demo.yaml'), '--out', out, '--category', 'Clinical Decision', '--subcategory', 'Supporting Diagnostic Decisions'], { EHRBENCH_HOME: h });
    expect(r.stderr).toBe('');
    expect(r.code).toBe(0);
    expect(r.stdout).toContain('imported exact_match_demo');
    expect(r.stdout).toContain('not available here: BERTScore-F');
    expect(readFileSync(join(out, 'exact_match_demo', 'prompt.txt'), 'utf8')).toContain('Patient Note:\n{{note}}\n\nQuestion:\n{{question}}');
    const def = JSON.parse(readFileSync(join(out, 'exact_match_demo', 'benchmark.json'), 'utf8'));
    expect(def.tier).toBe('private');
    expect(def.metrics).toEqual({ main: 'exact_match', secondary: ['jury_score', 'jury_score_normalized', 'jury_judges_used'] });
    expect(def.jury).toMatchObject({ criteria: ['faithfulness', 'clarity'], scale: { min: 0, max: 5 } });
    expect(readFileSync(join(out, 'exact_match_demo', 'jury.txt'), 'utf8')).toContain('<Q>{{QUESTION}}</Q>');

    const list = JSON.parse(cli(['benchmarks', 'list', '--json'], { EHRBENCH_HOME: h }).stdout) as { id: string }[];
    expect(list.map((b) => b.id)).toContain('exact_match_demo');
    expect(cli(['benchmarks', 'show', 'exact_match_demo'], { EHRBENCH_HOME: h }).stdout).toContain('jury: criteria faithfulness, clarity on 0-5; judges NOT CONFIGURED');

    // A placeholder the CSV lacks is refused by name, without reading data values.
    writeFileSync(join(src, 'demo_prompt.txt'), '{note} {age}');
    const bad = cli(['benchmarks', 'import-helm', join(src, 'demo.yaml'), '--out', out, '--id', 'other', '--category', 'Clinical Decision', '--subcategory', 'Supporting Diagnostic Decisions'], {
      EHRBENCH_HOME: h,
    });
    expect(bad.code).toBe(1);
    expect(bad.stderr).toBe(`ehrbench: ${join(src, 'demo.csv')}: missing column "age" (used by demo_prompt.txt)\n`);
  });
});

describe('ehrbench benchmarks import-helm --run-entries (HELM run-entry files)', () => {
  const conf = join(ROOT, 'tests', 'fixtures', 'helm', 'run_entries_medhelm_gated.conf');

  it("prints, per entry of HELM's gated MedHELM file, the benchmark, deployment, eval cap, settings and what to configure", () => {
    const h = home();
    const r = cli(['benchmarks', 'import-helm', '--run-entries', conf], { EHRBENCH_HOME: h });
    expect(r.stderr).toBe('');
    expect(r.code).toBe(0);
    expect(r.stdout).toMatch(/^line\s+run spec\s+benchmark\s+model deployment\s+max_eval_instances\s+settings\s+configure here\n/);
    expect(r.stdout).toMatch(
      /\n\d+\s+ehrshot\s+ehrshot\s+stanfordhealthcare\/deepseek-r1\s+-\s+num_output_tokens=4000 max_length=100000 subject=guo_readmission data_path=\S+\s+an endpoint serving deepseek-ai\/deepseek-r1 .*; run with --max-output-tokens 4000; run with --max-instances 1000, MedHELM's leaderboard cap \(or --preset medhelm-leaderboard for all its settings\); subject guo_readmission: one site data file per subject/,
    );
    expect(r.stdout).toContain(`143 entries in ${conf}: 143 map to 7 catalog benchmarks, 0 do not\n`);
    const json = JSON.parse(cli(['benchmarks', 'import-helm', '--run-entries', conf, '--json'], { EHRBENCH_HOME: h }).stdout) as { entries: { benchmarkId: string }[] };
    expect(json.entries).toHaveLength(143);
    // Once the site binds EHRSHOT's data, that is no longer something to configure.
    writeFileSync(join(h, 'ehrshot.csv'), 'id,prompt,label\n');
    writeFileSync(join(h, 'site-data.json'), JSON.stringify({ benchmarks: { ehrshot: { source: { type: 'csv', path: 'ehrshot.csv' } } } }));
    const after = JSON.parse(cli(['benchmarks', 'import-helm', '--run-entries', conf, '--json'], { EHRBENCH_HOME: h }).stdout) as { entries: { benchmarkId: string; configure: string[] }[] };
    expect(after.entries.filter((e) => e.benchmarkId === 'ehrshot').every((e) => !e.configure.some((c) => c.startsWith('benchmarks.ehrshot.source')))).toBe(true);
  });

  it('says what the YAML import needs when neither a config nor --run-entries is given, and shows differences from HELM', () => {
    const h = home();
    const r = cli(['benchmarks', 'import-helm'], { EHRBENCH_HOME: h });
    expect(r.code).toBe(2);
    expect(r.stderr).toBe('ehrbench: import-helm needs CONFIG.yaml, --out, --category, --subcategory (or --run-entries FILE.conf to map HELM run entries)\n');
    const show = cli(['benchmarks', 'show', 'head_qa'], { EHRBENCH_HOME: h });
    expect(show.stdout).toContain('differs from HELM: Instances: a question with an image is left out and counted (dataset.skip.image-question)');
  });
});

describe('EHRSQL end to end with a site database', () => {
  it('is a private run: refused on a public endpoint; approved, it runs in both scoring modes and executes SQL only after every model call', async () => {
    const h = await makeHome('pglite');
    const modelRequestsAt: number[] = [];
    const server = await startModelServer({
      certPem: readFileSync(join(h.home, 'keys', 'demo-model-server.pem'), 'utf8'),
      keyPem: readFileSync(join(h.home, 'keys', 'demo-model-server.key.pem'), 'utf8'),
      port: h.port,
      // Answers every question with the same query; abstains when the question mentions "appointment".
      behaviour: (_n, prompt) => {
        modelRequestsAt.push(performance.now());
        return { kind: 'answer', text: /appointment|schedule/.test(prompt.split('-- Question:')[1] ?? '') ? '' : 'select count(*) from patient;' };
      },
    });
    const db = join(h.home, 'eicu.sqlite');
    const w = new Database(db);
    w.exec(readFileSync(join(ROOT, 'datasets', 'ehr_sql', 'eicu_eicu.sql'), 'utf8'));
    w.close();
    // 20 answerable and 20 unanswerable questions of the shipped valid file, bound as the site's own JSONL.
    const valid = JSON.parse(readFileSync(join(ROOT, 'datasets', 'ehr_sql', 'eicu_valid.json'), 'utf8')) as { is_impossible: boolean }[];
    const picked = [...valid.filter((q) => !q.is_impossible).slice(0, 20), ...valid.filter((q) => q.is_impossible).slice(0, 20)];
    writeFileSync(join(h.home, 'questions.jsonl'), picked.map((q) => JSON.stringify(q)).join('\n'));
    writeFileSync(join(h.home, 'site-data.json'), JSON.stringify({ benchmarks: { ehr_sql: { source: { type: 'jsonl', path: 'questions.jsonl' }, database: 'eicu.sqlite' } } }));
    // A loopback endpoint classified for private data (the demo endpoint takes public data only).
    const policyFile = join(h.home, 'access-policies', 'endpoints.json');
    const policy = JSON.parse(readFileSync(policyFile, 'utf8')) as { endpoints: Record<string, unknown>[] };
    policy.endpoints.push({ ...policy.endpoints[0], id: 'site-private', description: 'private loopback', classification: { inVpc: true, baa: true, maxTier: 'private', development: false } });
    writeFileSync(policyFile, JSON.stringify(policy, null, 2));
    const app = await openApp({ file: h.configFile, env: h.env });
    try {
      // The site's database makes it a private run, whatever the questions' own tier.
      expect(app.catalog().get('ehr_sql').tier).toBe('private');
      await expect(requestRun(app.engine, { benchmarkId: 'ehr_sql', endpointId: DEMO_ENDPOINT_ID, requester: researcher })).rejects.toMatchObject({ rule: 'endpoint.development-not-private' });

      const approval = await app.approvals.create({ protocolNumber: 'IRB-EHRSQL', principalInvestigator: 'alice', personnel: ['alice'], benchmarks: ['ehr_sql'], purpose: 'EHRSQL' }, 'carol');
      // When the deferred pass starts (SQL on the site database), and whether any model call came after.
      const annotate = app.engine.annotate;
      const deferredAt: number[] = [];
      app.engine.annotate = {
        needed: (ctx, phase) => annotate.needed(ctx, phase),
        annotate: (ctx, instance, prediction, judges, phase) => {
          if (phase === 'deferred') deferredAt.push(performance.now());
          return annotate.annotate(ctx, instance, prediction, judges, phase);
        },
      };
      const results: Record<string, Record<string, number | null>> = {};
      for (const scoring of ['corrected', 'helm'] as const) {
        const run = await requestRun(app.engine, { benchmarkId: 'ehr_sql', endpointId: 'site-private', requester: researcher, scoring, approvalId: approval.approvalId });
        expect(run.status).toBe('requested');
        await approveRun(app.engine, run.run_id, { principal: 'carol', role: 'compliance', authMethod: 'mtls' });
        modelRequestsAt.length = 0;
        deferredAt.length = 0;
        const summary = await executeRun(app.engine, run.run_id);
        expect(summary.status).toBe('completed');
        expect(summary.counts.done).toBe(40);
        // No SQL ran while the endpoint could still time the daemon: every model call came first.
        expect(modelRequestsAt).toHaveLength(40);
        expect(deferredAt).toHaveLength(40);
        expect(Math.max(...modelRequestsAt)).toBeLessThan(Math.min(...deferredAt));
        results[scoring] = Object.fromEntries(summary.aggregates.map((a) => [a.metric, a.value]));
      }
      // Both modes read is_impossible (HELM's metric from the instance's extra data): half are unanswerable.
      expect(results.helm?.ehr_sql_total_ground_truth_answerable).toBe(0.5);
      expect(results.corrected?.ehr_sql_total_ground_truth_answerable).toBe(0.5);
      expect(results.corrected?.ehr_sql_query_validity).toBe(1);
      for (const mode of ['corrected', 'helm']) expect(results[mode]?.ehr_sql_execution_accuracy).toEqual(expect.any(Number));
    } finally {
      await app.close();
      await server.close();
      await h.cleanup();
    }
  });
});
