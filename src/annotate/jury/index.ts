/**
 * The LLM jury annotator as MedHELM runs it (LLMAsJuryAnnotator; the metric reads its numbers): each judge endpoint reads the
 * clinical input, the model's answer and the gold answer, and scores every rubric criterion (accuracy,
 * completeness, clarity; 1-5); the instance score is the mean of all judge x criterion scores. A judge
 * whose answer cannot be read is dropped; an empty answer scores the floor of the scale without any
 * judge being asked (as HELM), as does an instance no judge could score. `corrected` mode also floors
 * an answer that is a refusal and nothing else, and leaves out judges of the model's own family;
 * `helm` mode does neither (juryPolicy). The prompt is HELM's (benchmarks/<id>/jury.txt, HELM's
 * PROMPT_TEMPLATE word for word), filled as HELM fills it. Reported on the rubric's scale
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
import { commandPrefix } from '../../command-prefix';
import { fillJuryTemplate, renderTemplate } from '../../catalog';
import type { Benchmark, Instance } from '../../catalog';
import { type Completion, ModelCallError, type SendablePrompt } from '../../calls';
import type { JuryPolicy } from '../../contracts';
import { UserError } from '../../errors';
import { JURY_METRICS, MAX_JUDGES, type ScoringMode } from '../../metrics';
import { judgeScores, type Scale } from './parse';
import { type Decline, declineOf } from './refusal';

export { judgeScores } from './parse';
export { modelFamily, sameFamily } from './family';
export { declineOf, type Decline } from './refusal';
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
  /** Whether the judge endpoint is of the evaluated model's own family (see family.ts). */
  sameFamily(endpointId: string): boolean;
}

export interface JuryContext {
  mode: ScoringMode;
  benchmark: Benchmark;
  judges: JudgePort;
  /** The policy the run recorded when it was requested (RunSpec.jury); without one, it is worked out now. */
  policy?: JuryPolicy;
}

/**
 * The judge prompt as HELM's _interpolate_prompt fills it (src/catalog/jury-template.ts: HELM's
 * `{QUESTION}` placeholders, Python's string.Template rules for `$`, ehrbench's `{{QUESTION}}` read as
 * HELM's `{QUESTION}`), in one pass, so text inside a value is never re-read as a placeholder.
 */
export function judgePrompt(template: string, question: string, response: string, gold: string): string {
  return fillJuryTemplate(template, { QUESTION: question, RESPONSE: response, GOLD_RESPONSE: gold });
}

function scaleOf(b: Benchmark): Scale {
  return b.definition.jury?.scale ?? { min: 1, max: 5 };
}

export type JuryAnnotation = Record<string, number | null>;

/** Kept for callers that ask only "is this a refusal and nothing else" (see refusal.ts). */
export function isRefusal(prediction: string): boolean {
  return declineOf(prediction) === 'refusal';
}

/** Whom the jury asks and what it floors (the recorded policy's shape is the engine's contract, src/contracts). */
export function juryPolicy(mode: ScoringMode, b: Pick<Benchmark, 'judges' | 'jurySameFamily'>, isSameFamily: (endpointId: string) => boolean): JuryPolicy {
  const listed = b.judges ?? [];
  const sameFamily = mode === 'helm' ? 'helm-asks-all' : (b.jurySameFamily ?? 'exclude');
  const leftOut = sameFamily === 'exclude' ? listed.filter((id) => isSameFamily(id)) : [];
  return {
    judgesAsked: listed.filter((id) => !leftOut.includes(id)),
    judgesLeftOut: leftOut,
    sameFamily,
    floor: mode === 'helm' ? 'empty-answer' : 'empty-answer-or-refusal',
  };
}

/** The run's recorded policy, when it still names only judges of the benchmark (a changed judge list is the definition's hash's to catch). */
function recordedPolicy(policy: JuryPolicy | undefined, listed: readonly string[]): JuryPolicy | undefined {
  return policy && policy.judgesAsked.every((id) => listed.includes(id)) ? policy : undefined;
}

interface Verdicts {
  /** Each asked judge's mean over the criteria (undefined: failed or unreadable), in the order asked. */
  perJudge: (number | undefined)[];
  failed: number;
  /** Every criterion score of every surviving judge (HELM's mean is over these). */
  scores: number[];
}

function result(scale: Scale, v: Verdicts, extra: { excluded: number; decline: Decline; positions: number[] }): JuryAnnotation {
  const means = v.perJudge.filter((m): m is number => m !== undefined);
  const all = v.scores;
  // No surviving judge (or a floored refusal) scores the scale's minimum, HELM's default_score. A mean
  // is not clamped: in helm mode a judge's 0 counts as HELM counts it; corrected mode drops off-scale judges.
  const score = all.length ? all.reduce((a, x) => a + x, 0) / all.length : scale.min;
  const out: JuryAnnotation = {
    jury_score: score,
    jury_score_normalized: (score - scale.min) / (scale.max - scale.min),
    jury_judges_used: means.length,
    jury_judges_failed: v.failed,
    jury_judges_excluded: extra.excluded,
    jury_refusal: extra.decline === 'refusal' ? 1 : 0,
    jury_hedged: extra.decline === 'hedged' ? 1 : 0,
    jury_judge_spread: means.length >= 2 ? Math.max(...means) - Math.min(...means) : null,
  };
  // Per judge, by its position in the benchmark's judge list (null: left out, failed or not asked).
  for (let i = 0; i < MAX_JUDGES; i++) out[`jury_judge_${i + 1}`] = null;
  extra.positions.forEach((pos, k) => (out[`jury_judge_${pos + 1}`] = v.perJudge[k] ?? null));
  return out;
}

export async function annotateWithJury(prediction: string, instance: Instance, ctx: JuryContext): Promise<JuryAnnotation> {
  const b = ctx.benchmark;
  const jury = b.definition.jury;
  if (!jury || b.juryTemplate === undefined) throw new UserError('benchmark.invalid', `benchmark ${b.definition.id}: jury metrics without a jury block`);
  const listed = b.judges ?? [];
  if (listed.length === 0) throw new UserError('jury.no-judges', `benchmark ${b.definition.id}: no judge endpoints configured; see "${commandPrefix()} benchmarks show ${b.definition.id}"`);
  const policy = recordedPolicy(ctx.policy, listed) ?? juryPolicy(ctx.mode, b, (id) => ctx.judges.sameFamily(id));
  const judges = policy.judgesAsked;
  const positions = judges.map((id) => listed.indexOf(id));
  const excluded = policy.judgesLeftOut.length;
  // Every judge is checked before any is asked, so a refused one never sees a sibling's input either.
  await ctx.judges.check(judges);
  const scale = scaleOf(b);
  const none = (decline: Decline) => result(scale, { perJudge: [], failed: 0, scores: [] }, { excluded, decline, positions: [] });
  // As HELM: an empty answer is never sent to a judge.
  if (prediction.trim() === '') return none('none');
  const decline = declineOf(prediction);
  if (decline === 'refusal' && policy.floor === 'empty-answer-or-refusal') return none(decline);
  if (judges.length === 0) return none(decline);

  const prompt = await ctx.judges.sendable(judgePrompt(b.juryTemplate, questionOf(b, instance), prediction, instance.references[0] ?? ''));
  // Still carrying an identifier after de-identification: no judge sees it, and it is not scored.
  if (prompt === undefined) return { jury_score: null, jury_score_normalized: null, jury_judges_used: 0, jury_refusal: decline === 'refusal' ? 1 : 0, jury_hedged: decline === 'hedged' ? 1 : 0 };
  const verdicts: Verdicts & { scores: number[] } = { perJudge: [], failed: 0, scores: [] };
  for (const [k, id] of judges.entries()) {
    let answer: string;
    try {
      answer = (await ctx.judges.complete(id, prompt, { metric: 'jury', judge: (positions[k] as number) + 1 })).text;
    } catch (err) {
      if (!(err instanceof ModelCallError) || ctx.mode !== 'helm') throw err;
      // helm mode drops the judge, as HELM does; it is counted as failed
      verdicts.perJudge.push(undefined);
      verdicts.failed += 1;
      continue;
    }
    const judged = judgeScores(answer, jury.criteria, scale, ctx.mode);
    if (!judged) {
      verdicts.perJudge.push(undefined);
      verdicts.failed += 1;
      continue;
    }
    verdicts.perJudge.push(judged.reduce((a, x) => a + x, 0) / judged.length);
    verdicts.scores.push(...judged);
  }
  return result(scale, verdicts, { excluded, decline, positions });
}

/** {{QUESTION}}: the definition's question template over the instance, else the prompt the model saw. */
function questionOf(b: Benchmark, instance: Instance): string {
  const label = `benchmark ${b.definition.id} (jury question)`;
  return renderTemplate(b.definition.jury?.question ?? b.template, instance, label);
}
