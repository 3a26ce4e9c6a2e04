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
});
