/**
 * The LLM jury as MedHELM runs it (LLMAsJuryAnnotator + LLMJuryMetric): each judge endpoint reads the
 * clinical input, the model's answer and the gold answer, and scores every rubric criterion (accuracy,
 * completeness, clarity; 1-5); the instance score is the mean of all judge x criterion scores. A judge
 * whose answer cannot be read is dropped; an empty answer scores the floor of the scale without any
 * judge being asked, as does an instance no judge could score. Reported on the rubric's scale
 * (`jury_score`, HELM's <benchmark>_accuracy) and rescaled to 0-1 (`jury_score_normalized`).
 *
 * Judges are endpoints from the allowlist and see patient text, so each must be allowed the
 * benchmark's tier by the same rules as the model under test (a refusal names its rule and stops the
 * run), prompts of EHR tiers are de-identified first, and each call is audited before it is made.
 * Judge explanations are never stored, logged or returned: only the numbers leave parse.ts.
 *
 * A judge call that fails (HTTP error, timeout) drops that judge in `helm` mode, as HELM does; in
 * `corrected` mode it fails the instance so it is retried, rather than quietly scoring it lower.
 */
import { createHash } from 'node:crypto';
import { renderTemplate } from '../../catalog/template';
import type { Benchmark, Instance } from '../../catalog/types';
import type { EndpointPolicy } from '../../egress';
import { PolicyDenied, UserError } from '../../errors';
import { ModelCallError } from '../../models';
import { endpointDecision } from '../../access/rules';
import type { Tier } from '../../tiers';
import type { MetricInfo, Scorer, ScoringMode } from '../types';
import type { JudgeCaller } from './clients';
import { judgeScores, type Scale } from './parse';

export { JudgeClients, type JudgeCaller } from './clients';
export { judgeScores } from './parse';

export const JURY_METRICS: MetricInfo[] = [
  { name: 'jury_score', lowerIsBetter: false },
  { name: 'jury_score_normalized', lowerIsBetter: false },
  { name: 'jury_judges_used', lowerIsBetter: null },
];

/** HELM's judge request: temperature 0, up to 4,096 tokens. */
export const JUDGE_MAX_TOKENS = 4096;

export interface JuryContext {
  mode: ScoringMode;
  benchmark: Benchmark;
  tier: Tier;
  endpoints: EndpointPolicy;
  judges: JudgeCaller;
  /** Awaited before every judge attempt: writes the audit event; if it throws, no call is made. */
  beforeCall(endpointId: string, detail: Record<string, number | string | boolean>): Promise<void>;
  /** De-identifies the judge prompt of an EHR-tier instance; undefined result = blocked. */
  deidentify?: (prompt: string) => Promise<string | undefined>;
  signal?: AbortSignal;
}

/** Fills {{QUESTION}}, {{RESPONSE}} and {{GOLD_RESPONSE}} in one pass, so text inside them is never re-read as a placeholder. */
export function judgePrompt(template: string, question: string, response: string, gold: string): string {
  const values: Record<string, string> = { QUESTION: question, RESPONSE: response, GOLD_RESPONSE: gold };
  return template.replace(/\{\{(QUESTION|RESPONSE|GOLD_RESPONSE)\}\}/g, (_m, key: string) => values[key] ?? '');
}

/** Refuses a judge endpoint that may not receive this benchmark's data, naming the rule. */
export function checkJudge(endpointId: string, tier: Tier, endpoints: EndpointPolicy): void {
  const endpoint = endpoints.get(endpointId);
  const denied = endpointDecision(tier, endpoint);
  if (denied) throw new PolicyDenied(`jury.${denied.rule}`, `judge ${denied.reason}`);
}

function scaleOf(b: Benchmark): Scale {
  return b.definition.jury?.scale ?? { min: 1, max: 5 };
}

function result(score: number, scale: Scale, used: number): Record<string, number> {
  return { jury_score: score, jury_score_normalized: (score - scale.min) / (scale.max - scale.min), jury_judges_used: used };
}

export const juryScorer: Scorer<JuryContext> = {
  name: 'jury',
  metrics: JURY_METRICS,
  async score(prediction, instance, ctx) {
    const b = ctx.benchmark;
    const jury = b.definition.jury;
    if (!jury || b.juryTemplate === undefined) throw new UserError('benchmark.invalid', `benchmark ${b.definition.id}: jury metrics without a jury block`);
    const judges = b.judges ?? [];
    if (judges.length === 0) throw new UserError('jury.no-judges', `benchmark ${b.definition.id}: no judge endpoints configured; see "ehrbench benchmarks show ${b.definition.id}"`);
    // Every judge is checked before any is asked, so a refused one never sees a sibling's input either.
    for (const id of judges) checkJudge(id, ctx.tier, ctx.endpoints);
    const scale = scaleOf(b);
    if (prediction.trim() === '') return result(scale.min, scale, 0);

    let prompt = judgePrompt(b.juryTemplate, questionOf(b, instance), prediction, instance.references[0] ?? '');
    if (ctx.deidentify) {
      const clean = await ctx.deidentify(prompt);
      // Still carrying an identifier after de-identification: no judge sees it, and it is not scored.
      if (clean === undefined) return { jury_score: null, jury_score_normalized: null, jury_judges_used: 0 };
      prompt = clean;
    }
    const requestBytes = Buffer.byteLength(prompt);
    const requestSha256 = createHash('sha256').update(prompt).digest('hex');
    const scores: number[] = [];
    let used = 0;
    for (const [index, id] of judges.entries()) {
      let answer: string;
      try {
        const completion = await ctx.judges.complete(
          ctx.endpoints.get(id),
          { prompt, maxTokens: JUDGE_MAX_TOKENS, temperature: 0 },
          {
            ...(ctx.signal ? { signal: ctx.signal } : {}),
            beforeAttempt: (attempt) => ctx.beforeCall(id, { metric: 'jury', judge: index + 1, attempt, requestBytes, requestSha256 }),
          },
        );
        answer = completion.text;
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
  },
};

/** {{QUESTION}}: the definition's question template over the instance, else the prompt the model saw. */
function questionOf(b: Benchmark, instance: Instance): string {
  const label = `benchmark ${b.definition.id} (jury question)`;
  return renderTemplate(b.definition.jury?.question ?? b.template, instance, label);
}
