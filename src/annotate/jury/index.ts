/**
 * The LLM jury annotator as MedHELM runs it (LLMAsJuryAnnotator; the metric reads its numbers): each judge endpoint reads the
 * clinical input, the model's answer and the gold answer, and scores every rubric criterion (accuracy,
 * completeness, clarity; 1-5); the instance score is the mean of all judge x criterion scores. A judge
 * whose answer cannot be read is dropped; an empty answer scores the floor of the scale without any
 * judge being asked, as does an instance no judge could score. Reported on the rubric's scale
 * (`jury_score`, HELM's <benchmark>_accuracy) and rescaled to 0-1 (`jury_score_normalized`).
 *
 * Judges are endpoints from the allowlist and see patient text, so each call goes through the outbound
 * gateway like the model's: allowed the run's tier and approval by the same rules (a refusal names
 * its rule and stops the run), charged to the approval's budget, bounded by the judge's concurrency
 * limit and audited before it is made; prompts of EHR tiers are de-identified first.
 * Judge explanations are never stored, logged or returned: only the numbers leave parse.ts.
 *
 * A judge call that fails (HTTP error, timeout) drops that judge in `helm` mode, as HELM does; in
 * `corrected` mode it fails the instance so it is retried, rather than quietly scoring it lower.
 */
import { renderTemplate } from '../../catalog';
import type { Benchmark, Instance } from '../../catalog';
import { type Completion, ModelCallError, type SendablePrompt } from '../../calls';
import { UserError } from '../../errors';
import { JURY_METRICS, type ScoringMode } from '../../metrics';
import { judgeScores, type Scale } from './parse';

export { judgeScores } from './parse';
export { JURY_METRICS };

/** HELM's judge request: temperature 0, up to 4,096 tokens. */
export const JUDGE_MAX_TOKENS = 4096;

/** The jury's only way to its judges: the run's outbound gateway (decision, budget, capacity, audit). */
export interface JudgePort {
  /** Throws PolicyDenied, naming the rule, unless every judge may receive this run's data. */
  check(endpointIds: string[]): Promise<void>;
  /** The judge prompt as it may leave: de-identified when the run de-identifies; undefined = blocked. */
  sendable(prompt: string): Promise<SendablePrompt | undefined>;
  complete(endpointId: string, prompt: SendablePrompt, detail: Record<string, number | string | boolean>): Promise<Completion>;
}

export interface JuryContext {
  mode: ScoringMode;
  benchmark: Benchmark;
  judges: JudgePort;
}

/** Fills {{QUESTION}}, {{RESPONSE}} and {{GOLD_RESPONSE}} in one pass, so text inside them is never re-read as a placeholder. */
export function judgePrompt(template: string, question: string, response: string, gold: string): string {
  const values: Record<string, string> = { QUESTION: question, RESPONSE: response, GOLD_RESPONSE: gold };
  return template.replace(/\{\{(QUESTION|RESPONSE|GOLD_RESPONSE)\}\}/g, (_m, key: string) => values[key] ?? '');
}

function scaleOf(b: Benchmark): Scale {
  return b.definition.jury?.scale ?? { min: 1, max: 5 };
}

export type JuryAnnotation = Record<string, number | null>;

function result(score: number, scale: Scale, used: number): JuryAnnotation {
  return { jury_score: score, jury_score_normalized: (score - scale.min) / (scale.max - scale.min), jury_judges_used: used };
}

export async function annotateWithJury(prediction: string, instance: Instance, ctx: JuryContext): Promise<JuryAnnotation> {
  const b = ctx.benchmark;
  const jury = b.definition.jury;
  if (!jury || b.juryTemplate === undefined) throw new UserError('benchmark.invalid', `benchmark ${b.definition.id}: jury metrics without a jury block`);
  const judges = b.judges ?? [];
  if (judges.length === 0) throw new UserError('jury.no-judges', `benchmark ${b.definition.id}: no judge endpoints configured; see "ehrbench benchmarks show ${b.definition.id}"`);
  // Every judge is checked before any is asked, so a refused one never sees a sibling's input either.
  await ctx.judges.check(judges);
  const scale = scaleOf(b);
  if (prediction.trim() === '') return result(scale.min, scale, 0);

  const prompt = await ctx.judges.sendable(judgePrompt(b.juryTemplate, questionOf(b, instance), prediction, instance.references[0] ?? ''));
  // Still carrying an identifier after de-identification: no judge sees it, and it is not scored.
  if (prompt === undefined) return { jury_score: null, jury_score_normalized: null, jury_judges_used: 0 };
  const scores: number[] = [];
  let used = 0;
  for (const [index, id] of judges.entries()) {
    let answer: string;
    try {
      answer = (await ctx.judges.complete(id, prompt, { metric: 'jury', judge: index + 1 })).text;
    } catch (err) {
      if (err instanceof ModelCallError && ctx.mode === 'helm') continue;
      throw err;
    }
    const judged = judgeScores(answer, jury.criteria, scale, ctx.mode);
    if (!judged) continue;
    used += 1;
    scores.push(...judged);
  }
  const mean = scores.length ? scores.reduce((a, s) => a + s, 0) / scores.length : scale.min;
  return result(mean, scale, used);
}

/** {{QUESTION}}: the definition's question template over the instance, else the prompt the model saw. */
function questionOf(b: Benchmark, instance: Instance): string {
  const label = `benchmark ${b.definition.id} (jury question)`;
  return renderTemplate(b.definition.jury?.question ?? b.template, instance, label);
}
