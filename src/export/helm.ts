/**
 * HELM-compatible files for a released bundle: per released run, a `run_spec.json` and an aggregate
 * `stats.json`, the only two files `helm-summarize` reads from a run directory (medhelm-catalog.md
 * sections 5 and 9.4). Both are derived from the bundle's released numbers alone:
 *  - run_spec.json carries no file or data path (scenario args are empty), the benchmark's HELM group,
 *    and the endpoint's model and deployment;
 *  - stats.json holds trial means as MedHELM writes them (count 1, sum = min = max = mean, variance and
 *    stddev 0) for every released metric, and num_instances as the low end of the released count range
 *    (so it obeys the minimum cell size and never states the exact count);
 *  - and, when the run's usage is released, the general-information statistics helm-summarize shows
 *    (see efficiencyStats).
 * Suppressed metrics are left out; runs whose count is suppressed get no HELM directory.
 */
import { createHash } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import type { Benchmark } from '../catalog';
import type { CountRange, ExportResult, ReleasedMetric } from './types';

export interface HelmRunFiles {
  runName: string;
  /** Directory name: the run name with "/" replaced by "_", as HELM does. */
  dir: string;
  runSpec: string;
  stats: string;
}

interface HelmStat {
  name: { name: string; split: string };
  count: 1;
  sum: number;
  sum_squared: number;
  min: number;
  max: number;
  mean: number;
  variance: 0;
  stddev: 0;
}

function trialMean(name: string, split: string, mean: number): HelmStat {
  return { name: { name, split }, count: 1, sum: mean, sum_squared: mean * mean, min: mean, max: mean, mean, variance: 0, stddev: 0 };
}

/**
 * HELM's per-instance token and efficiency statistics (the general-information columns of
 * schema_medhelm.yaml: num_prompt_tokens, num_output_tokens; with num_completion_tokens,
 * max_num_output_tokens, num_train_instances, prompt_truncated, num_completions), and the estimated
 * cost per instance, which HELM has no statistic for (ehrbench_ prefix: helm-summarize shows only the
 * statistics its schema names). Each is a mean per instance, as HELM's are, taken from the bundle's
 * released usage (tokens rounded to thousands, cost to cents) over the released num_instances (the low
 * end of the count range): a number the bundle already discloses, divided by another. So the means
 * are approximate (rounded totals, a count that may be up to the range width short) and reveal nothing
 * finer than the bundle. Not written: inference_runtime (the bundle carries no timing) and HELM's
 * finish_reason_* (not recorded).
 */
function efficiencyStats(r: ExportResult, split: string, instances: number): HelmStat[] {
  const usage = r.usage;
  if (!usage || instances <= 0) return [];
  const perInstance = (total: number) => total / instances;
  const stats = [
    trialMean('num_prompt_tokens', split, perInstance(usage.promptTokens)),
    trialMean('num_completion_tokens', split, perInstance(usage.completionTokens)),
    // One completion per request (num_outputs 1): HELM's output tokens are the completion tokens.
    trialMean('num_output_tokens', split, perInstance(usage.completionTokens)),
    trialMean('max_num_output_tokens', split, r.model.maxTokens),
    // Zero-shot everywhere, and a prompt is never truncated: over-long instances are left out instead.
    trialMean('num_train_instances', split, 0),
    trialMean('prompt_truncated', split, 0),
    trialMean('num_completions', split, 1),
  ];
  if (usage.estimatedCostUsd !== null) stats.push(trialMean('ehrbench_estimated_cost_usd_per_instance', split, perInstance(usage.estimatedCostUsd)));
  return stats;
}

export function helmRunName(result: ExportResult): string {
  const group = result.benchmark.helmGroup ?? result.benchmark.id;
  const model = result.model.model ?? result.model.deployment ?? result.model.endpointId;
  return `${group}:model=${model}${result.model.deployment ? `,model_deployment=${result.model.deployment}` : ''}`;
}

/** HELM's name of a metric: the benchmark's declared HELM main metric for the main one, else ours. */
function helmMetricName(result: ExportResult, metric: string, benchmark: Benchmark | undefined): string {
  return metric === result.mainMetric ? (benchmark?.definition.helm?.mainMetric ?? metric) : metric;
}

export function helmFilesFor(results: ExportResult[], benchmarkOf: (id: string) => Benchmark | undefined): HelmRunFiles[] {
  const files: HelmRunFiles[] = [];
  for (const r of results) {
    if ('suppressed' in r.n || (r.n as CountRange).high === 0) continue;
    const benchmark = benchmarkOf(r.benchmark.id);
    // Two runs of one benchmark on one model (different cohorts) would share HELM's name: tell them apart.
    const base = helmRunName(r);
    const runName = files.some((f) => f.runName === base) ? `${base},ehrbench_run=${r.runId.slice(0, 8)}` : base;
    const model = r.model.model ?? r.model.deployment ?? r.model.endpointId;
    const runSpec = {
      name: runName,
      scenario_spec: { class_name: `ehrbench.benchmarks.${r.benchmark.id}`, args: {} },
      adapter_spec: {
        method: 'generation',
        model,
        model_deployment: r.model.deployment ?? model,
        max_tokens: r.model.maxTokens,
        temperature: r.model.temperature,
        max_train_instances: 0,
        num_train_trials: 1,
        num_outputs: 1,
      },
      metric_specs: [],
      groups: [r.benchmark.helmGroup ?? r.benchmark.id],
    };
    const split = r.benchmark.split;
    const stats: HelmStat[] = r.metrics.filter((m): m is ReleasedMetric => 'value' in m).map((m) => trialMean(helmMetricName(r, m.name, benchmark), split, m.value));
    stats.push(trialMean('num_instances', split, (r.n as CountRange).low));
    stats.push(...efficiencyStats(r, split, (r.n as CountRange).low));
    files.push({ runName, dir: runName.replaceAll('/', '_'), runSpec: JSON.stringify(runSpec, null, 2) + '\n', stats: JSON.stringify(stats, null, 2) + '\n' });
  }
  return files;
}

/** Checks HELM files written with a bundle against the hashes the bundle signed (verify --helm DIR). */
export function helmFileProblems(refs: { runName: string; runSpecSha256: string; statsSha256: string }[], dir: string): string[] {
  const problems: string[] = [];
  for (const ref of refs) {
    const runDir = join(dir, ref.runName.replaceAll('/', '_'));
    for (const [file, expected] of [
      ['run_spec.json', ref.runSpecSha256],
      ['stats.json', ref.statsSha256],
    ] as const) {
      let text: Buffer;
      try {
        text = readFileSync(join(runDir, file));
      } catch (err) {
        problems.push(`helm: ${join(runDir, file)} cannot be read (${(err as NodeJS.ErrnoException).code ?? 'error'})`);
        continue;
      }
      if (createHash('sha256').update(text).digest('hex') !== expected) problems.push(`helm: ${join(runDir, file)} differs from the file the bundle signed`);
    }
  }
  return problems;
}
