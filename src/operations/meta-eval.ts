/**
 * HealthBench's meta-evaluation of a finished run (`runs meta-eval ID`): the run's model was a grader,
 * asked about one rubric criterion per instance (adapter health_bench_meta); its labels are compared
 * with the physicians' stored with each instance, as simple-evals' healthbench_meta_eval.py compares
 * them (src/annotate/rubric/meta-eval.ts). Only figures leave: no text, no physician id.
 */
import { type GradedRow, metaEvaluation, type MetaEvaluation } from '../annotate';
import type { App } from '../app';
import { metaEvalLabelsOf } from '../catalog';
import { UserError } from '../errors';
import type { RunRow } from '../runs';

export interface RunMetaEvaluation extends MetaEvaluation {
  runId: string;
  /** Instances that did not finish (failed or blocked): not graded, left out of every figure. */
  notDone: number;
}

export async function readMetaEvaluation(app: App, run: RunRow): Promise<RunMetaEvaluation> {
  if (run.status !== 'completed') throw new UserError('run.not-completed', `run ${run.run_id} is ${run.status}; its meta-evaluation is computed once it has completed`);
  const items = await app.engine.store.instanceExtras(run.run_id);
  const graded: GradedRow[] = [];
  for (const item of items) {
    const row = metaEvalLabelsOf({ extra: item.extra ?? {} });
    if (!row) {
      throw new UserError(
        'run.not-meta-eval',
        `run ${run.run_id} (${run.benchmark_id}) is not a meta-evaluation: its instances carry no physician labels; see "HealthBench" in benchmarks/README.md (adapter health_bench_meta)`,
      );
    }
    if (item.state !== 'done') continue;
    const label = item.scores?.meta_grader_criteria_met;
    graded.push({ row, graderLabel: label === 1 ? true : label === 0 ? false : undefined });
  }
  return { runId: run.run_id, notDone: items.length - graded.length, ...metaEvaluation(graded) };
}
