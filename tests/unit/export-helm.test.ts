/** HELM files from released results: what helm-summarize reads, and nothing it should not see. */
import { Catalog } from '../../src/catalog';
import { helmFilesFor, type ExportResult } from '../../src/export';

const catalog = Catalog.load();
const HASH = 'b'.repeat(64);

function result(runId: string, n: ExportResult['n'], metrics: ExportResult['metrics']): ExportResult {
  return {
    runId,
    benchmark: {
      id: 'medcalc_bench',
      version: '1.0.0',
      category: 'Clinical Decision Support',
      subcategory: 'Supporting Diagnostic Decisions',
      tier: 'public',
      helmGroup: 'medcalc_bench',
      split: 'test',
      lowerIsBetter: false,
      definitionHash: HASH,
      templateHash: HASH,
    },
    model: { endpointId: 'aoai-east', provider: 'azure-openai', deployment: 'gpt-4o-2024-05-13', model: 'openai/gpt-4o', maxTokens: 10, temperature: 0 },
    scoring: 'corrected',
    deidVersion: null,
    mainMetric: 'medcalc_bench_accuracy',
    n,
    metrics,
    subgroups: [],
    usage: null,
  };
}

describe('HELM files', () => {
  const released = result('11111111-1111-4111-8111-111111111111', { low: 40, high: 49 }, [
    { name: 'medcalc_bench_accuracy', value: 0.35, n: { low: 40, high: 49 }, ci95: { low: 0.2, high: 0.5 } },
    { name: 'exact_match', suppressed: '<k' },
  ]);
  const sameModel = result('22222222-2222-4222-8222-222222222222', { low: 60, high: 69 }, [{ name: 'medcalc_bench_accuracy', value: 0.4, n: { low: 60, high: 69 } }]);
  const hidden = result('33333333-3333-4333-8333-333333333333', { suppressed: '<k' }, [{ name: 'medcalc_bench_accuracy', suppressed: '<k' }]);
  const files = helmFilesFor([released, sameModel, hidden], (id) => catalog.get(id));

  it('writes one directory per released run, with distinct names, and none for a suppressed run', () => {
    expect(files.map((f) => f.dir)).toEqual([
      'medcalc_bench:model=openai_gpt-4o,model_deployment=gpt-4o-2024-05-13',
      'medcalc_bench:model=openai_gpt-4o,model_deployment=gpt-4o-2024-05-13,ehrbench_run=22222222',
    ]);
  });

  it('run_spec.json: the HELM group, model and deployment, no paths', () => {
    const spec = JSON.parse(files[0]?.runSpec as string);
    expect(spec).toMatchObject({
      name: 'medcalc_bench:model=openai/gpt-4o,model_deployment=gpt-4o-2024-05-13',
      scenario_spec: { args: {} },
      adapter_spec: { model: 'openai/gpt-4o', model_deployment: 'gpt-4o-2024-05-13', max_tokens: 10, temperature: 0, num_train_trials: 1 },
      metric_specs: [],
      groups: ['medcalc_bench'],
    });
  });

  it('stats.json: trial means of released metrics only, and num_instances as the low end of the range', () => {
    const stats = JSON.parse(files[0]?.stats as string);
    expect(stats).toEqual([
      { name: { name: 'medcalc_bench_accuracy', split: 'test' }, count: 1, sum: 0.35, sum_squared: 0.35 * 0.35, min: 0.35, max: 0.35, mean: 0.35, variance: 0, stddev: 0 },
      { name: { name: 'num_instances', split: 'test' }, count: 1, sum: 40, sum_squared: 1600, min: 40, max: 40, mean: 40, variance: 0, stddev: 0 },
    ]);
  });

  it("stats.json: the token, efficiency and cost statistics of HELM's general-information columns, per instance, from the released usage", () => {
    const withUsage = { ...released, usage: { promptTokens: 12000, completionTokens: 1000, estimatedCostUsd: 0.5 } };
    const [run] = helmFilesFor([withUsage], (id) => catalog.get(id));
    const stats = JSON.parse(run?.stats as string) as { name: { name: string; split: string }; count: number; mean: number; min: number; max: number; stddev: number }[];
    const mean = (name: string) => stats.find((s) => s.name.name === name)?.mean;
    // Per-instance means over the released count (its low end, as num_instances): nothing finer than
    // the bundle's own usage (tokens rounded to thousands, cost to cents) can be derived from them.
    expect(mean('num_prompt_tokens')).toBe(300);
    expect(mean('num_completion_tokens')).toBe(25);
    expect(mean('num_output_tokens')).toBe(25);
    expect(mean('max_num_output_tokens')).toBe(10);
    expect(mean('num_train_instances')).toBe(0);
    expect(mean('prompt_truncated')).toBe(0);
    expect(mean('num_completions')).toBe(1);
    expect(mean('ehrbench_estimated_cost_usd_per_instance')).toBe(0.0125);
    for (const s of stats) expect(s).toMatchObject({ count: 1, min: s.mean, max: s.mean, stddev: 0, name: { split: 'test' } });
    // No price for the endpoint: no cost statistic rather than a zero.
    const [free] = helmFilesFor([{ ...withUsage, usage: { ...withUsage.usage, estimatedCostUsd: null } }], (id) => catalog.get(id));
    expect(free?.stats).not.toContain('ehrbench_estimated_cost_usd_per_instance');
  });
});
