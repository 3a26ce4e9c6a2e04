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
import { commandPrefix } from '../../command-prefix';
import { renderTemplate } from '../../catalog';
import type { Benchmark, Instance } from '../../catalog';
import { type Completion, ModelCallError, type SendablePrompt } from '../../calls';
import { UserError } from '../../errors';
import { JURY_METRICS, MAX_JUDGES, type ScoringMode } from '../../metrics';
import { judgeScores, type Scale } from './parse';

export { judgeScores } from './parse';
export { modelFamily, sameFamily } from './family';
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

/**
 * An answer that declines the task ("I'm sorry, but I can't help with that", "As an AI ..."): the
 * leaderboard scores it at the floor instead of asking judges. Only declines of the task count: "I'm
 * sorry to hear that" in a reply to a patient is an answer.
 */
const REFUSAL = [
  /^(?:i['’]m sorry|i am sorry|i apologi[sz]e|sorry)[,.!]?\s+(?:but\s+)?(?:i|as an ai)\b[^.]{0,60}?\b(?:can(?:not|['’]t)|unable|not able|won['’]t|will not)\b/i,
  /^i\s+(?:can(?:not|['’]t)|am unable to|['’]m unable to|am not able to|won['’]t|will not)\s+(?:help|assist|provide|answer|comply|do that|fulfil|complete|write|generate)/i,
  /^as an ai(?: language model)?\b/i,
];

export function isRefusal(prediction: string): boolean {
  const head = prediction.trim().slice(0, 300);
  return REFUSAL.some((re) => re.test(head));
}

interface Verdicts {
  /** Each asked judge's mean over the criteria (undefined: failed or unreadable), in the order asked. */
  perJudge: (number | undefined)[];
  failed: number;
  /** Every criterion score of every surviving judge (HELM's mean is over these). */
  scores: number[];
}

function result(scale: Scale, v: Verdicts, extra: { excluded: number; refusal: boolean; positions: number[] }): JuryAnnotation {
  const means = v.perJudge.filter((m): m is number => m !== undefined);
  const all = v.scores;
  // The leaderboard's floor: no surviving judge, or a refusal, scores the scale's minimum (HELM's default_score).
  const score = all.length ? Math.max(scale.min, all.reduce((a, x) => a + x, 0) / all.length) : scale.min;
  const out: JuryAnnotation = {
    jury_score: score,
    jury_score_normalized: (score - scale.min) / (scale.max - scale.min),
    jury_judges_used: means.length,
    jury_judges_failed: v.failed,
    jury_judges_excluded: extra.excluded,
    jury_refusal: extra.refusal ? 1 : 0,
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
  // Judges of the evaluated model's own family are left out (unless the site allows them).
  const positions = listed.map((_, i) => i).filter((i) => b.jurySameFamily === 'allow' || !ctx.judges.sameFamily(listed[i] as string));
  const judges = positions.map((i) => listed[i] as string);
  const excluded = listed.length - judges.length;
  // Every judge is checked before any is asked, so a refused one never sees a sibling's input either.
  await ctx.judges.check(judges);
  const scale = scaleOf(b);
  const none = (refusal: boolean) => result(scale, { perJudge: [], failed: 0, scores: [] }, { excluded, refusal, positions: [] });
  if (prediction.trim() === '') return none(false);
  if (isRefusal(prediction)) return none(true);
  if (judges.length === 0) return none(false);

  const prompt = await ctx.judges.sendable(judgePrompt(b.juryTemplate, questionOf(b, instance), prediction, instance.references[0] ?? ''));
  // Still carrying an identifier after de-identification: no judge sees it, and it is not scored.
  if (prompt === undefined) return { jury_score: null, jury_score_normalized: null, jury_judges_used: 0 };
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
  return result(scale, verdicts, { excluded, refusal: false, positions });
}

/** {{QUESTION}}: the definition's question template over the instance, else the prompt the model saw. */
function questionOf(b: Benchmark, instance: Instance): string {
  const label = `benchmark ${b.definition.id} (jury question)`;
  return renderTemplate(b.definition.jury?.question ?? b.template, instance, label);
}
