/**
 * The deferred annotation pass: annotators that must not run while the run still calls its model
 * (EHRSQL executes the model's SQL on the site's database; a hostile endpoint would read data from
 * how long the daemon takes before its next request). Once no instance of the run is pending or
 * claimed, every finished instance with such annotators pending is annotated and rescored here, and
 * only then can the run complete. An interrupted pass resumes with the next execution of the run.
 */
import type { JudgePort } from '../annotate';
import { PolicyDenied } from '../errors';
import { type AnnotatorName, scoreInstance } from '../metrics';
import type { Engine } from './engine';
import type { RunContext } from '../contracts';

const PAGE = 50;

/** Deferred annotators never call out: a port that refuses, should one try. */
const NO_CALLS: JudgePort = {
  check: () => Promise.reject(new PolicyDenied('annotate.deferred-no-calls', 'a deferred annotator may not call an endpoint')),
  sendable: () => Promise.resolve(undefined),
  complete: () => Promise.reject(new PolicyDenied('annotate.deferred-no-calls', 'a deferred annotator may not call an endpoint')),
  sameFamily: () => false,
};

/** Runs the pending annotators of a run whose model calls are all made; false when calls remain (another worker's). */
export async function annotateDeferred(engine: Engine, ctx: RunContext, signal?: AbortSignal): Promise<boolean> {
  if (engine.annotate.needed(ctx, 'deferred').length === 0) return true;
  if (!(await engine.store.allCallsMade(ctx.runId))) return false;
  const m = ctx.benchmark.definition.metrics;
  const all = [m.main, ...(m.secondary ?? [])];
  for (;;) {
    const page = await engine.store.pendingAnnotations(ctx.runId, PAGE);
    if (page.length === 0) return true;
    for (const item of page) {
      if (signal?.aborted) return false;
      const annotations = await engine.annotate.annotate(ctx, item.instance, item.prediction, NO_CALLS, 'deferred');
      const names = all.filter((name) => item.pending.some((a) => annotations[a as AnnotatorName]?.[name] !== undefined));
      const scores = { ...item.scores, ...scoreInstance(names, item.instance, item.prediction, annotations, ctx.scoring) };
      await engine.store.saveAnnotatedScores(ctx.runId, item.itemKey, scores);
    }
  }
}
