/**
 * ICD-10 code sets, ROUGE and the jury's answer parsing on hand-checked cases. Expected values are
 * worked out by hand in the comments.
 */
import type { Instance } from '../../src/catalog';
import { declineOf, isRefusal, judgePrompt, judgeScores, modelFamily, sameFamily } from '../../src/annotate';
import { HEDGED_ANSWERS, PLAIN_ANSWERS, PURE_REFUSALS } from '../helpers/jury-answers';
import { helmCodes, inProcessMetric, normalizedCodes, rougeTokens, type ScoringMode } from '../../src/metrics';

function instance(references: string[]): Instance {
  return { key: 'k', vars: {}, references };
}

function score(metric: string, prediction: string, refs: string[], mode: ScoringMode = 'corrected'): number | null {
  const m = inProcessMetric(metric);
  if (!m) throw new Error(`no metric ${metric}`);
  return m.score(prediction, instance(refs), { mode });
}

describe('ICD-10 code sets (MIMIC-IV billing)', () => {
  it('reads whole codes, dotted or not, with suffix letters, in corrected mode', () => {
    expect([...normalizedCodes('S72.001A, T81.4XXA; E1165 and E11.65, **I10**, O9A.211')]).toEqual(['S72001A', 'T814XXA', 'E1165', 'I10', 'O9A211']);
  });

  it('reproduces HELM: suffix-letter codes truncate to the category, undotted long codes vanish', () => {
    expect([...helmCodes('S72.001A, T81.4XXA; E1165 and E11.65, **I10**')]).toEqual(['S72', 'T81', 'E11.65', 'I10']);
  });

  it('scores precision, recall and F1 per note over the code sets', () => {
    // Reference {E1165, I10, N179}; prediction {E1165, I10, J189}: tp 2, P 2/3, R 2/3, F1 2/3.
    const ref = ['E11.65, I10, N17.9'];
    expect(score('mimiciv_billing_code_precision', 'E1165 I10 J18.9', ref)).toBeCloseTo(2 / 3, 10);
    expect(score('mimiciv_billing_code_recall', 'E1165 I10 J18.9', ref)).toBeCloseTo(2 / 3, 10);
    expect(score('mimiciv_billing_code_f1', 'E1165 I10 J18.9', ref)).toBeCloseTo(2 / 3, 10);
    // Duplicates count once: {I10} vs {I10, E1165}: P 1, R 1/2, F1 2/3.
    expect(score('mimiciv_billing_code_f1', 'I10, I10, I10', ['I10, E11.65'])).toBeCloseTo(2 / 3, 10);
  });

  it('tells a fracture episode apart in corrected mode but not in HELM mode', () => {
    // Initial vs subsequent encounter: different codes. HELM reads both as S72.
    expect(score('mimiciv_billing_code_f1', 'S72.001D', ['S72.001A'])).toBe(0);
    expect(score('mimiciv_billing_code_f1', 'S72.001D', ['S72.001A'], 'helm')).toBe(1);
  });

  it('matches an undotted reference in corrected mode only (HELM never sees E1165)', () => {
    expect(score('mimiciv_billing_code_f1', 'E11.65', ['E1165'])).toBe(1);
    expect(score('mimiciv_billing_code_f1', 'E11.65', ['E1165'], 'helm')).toBe(0);
  });

  it('scores 0 with nothing predicted or nothing to find (zero_division=0)', () => {
    expect(score('mimiciv_billing_code_f1', 'no codes apply', ['I10'])).toBe(0);
    expect(score('mimiciv_billing_code_precision', 'I10', [''])).toBe(0);
  });
});

describe('ROUGE (rouge_score tokenisation with Porter stemming)', () => {
  // prediction tokens: the patient was admit with chest pain (7); reference: patient admit for chest pain (5).
  const pred = 'The patient was admitted with chest pain.';
  const ref = 'Patient admitted for chest pain.';

  it('tokenises like rouge_score: lower case, non-alphanumerics split, words over 3 letters stemmed', () => {
    expect(rougeTokens(pred)).toEqual(['the', 'patient', 'was', 'admit', 'with', 'chest', 'pain']);
    expect(rougeTokens("Pt's BP: 120/80 -- stable!")).toEqual(['pt', 's', 'bp', '120', '80', 'stabl']);
  });

  it('ROUGE-1: 4 shared unigrams, P 4/7, R 4/5, F 2/3', () => {
    expect(score('rouge_1', pred, [ref])).toBeCloseTo(2 / 3, 10);
  });

  it('ROUGE-2: 1 shared bigram (chest pain) of 6 and 4, F 1/5', () => {
    expect(score('rouge_2', pred, [ref])).toBeCloseTo(0.2, 10);
  });

  it('ROUGE-L: LCS patient admit chest pain (4), F 2/3; order matters', () => {
    expect(score('rouge_l', pred, [ref])).toBeCloseTo(2 / 3, 10);
    // "pain chest" reversed: LCS 1 of 2 and 2 -> F 1/2, while ROUGE-1 stays 1.
    expect(score('rouge_l', 'pain chest', ['chest pain'])).toBeCloseTo(0.5, 10);
    expect(score('rouge_1', 'pain chest', ['chest pain'])).toBe(1);
  });

  it('takes the best reference, and scores empty text 0 as rouge_score does', () => {
    expect(score('rouge_1', 'chest pain', ['fever', 'chest pain'])).toBe(1);
    expect(score('rouge_1', '   ', [ref])).toBe(0);
    expect(score('rouge_1', '!!!', [ref])).toBe(0);
    expect(score('rouge_1', pred, [])).toBeNull();
  });
});

describe('jury answers (HELM LLMAsJuryAnnotator parse rules)', () => {
  const criteria = ['accuracy', 'completeness', 'clarity'];
  const scale = { min: 1, max: 5 };
  const valid = '{"accuracy": {"score": 4, "explanation": "ok"}, "completeness": {"score": 5, "explanation": "x"}, "clarity": {"score": 3, "explanation": "y {z}"}}';

  it('reads the first {...} span of the answer, around any prose', () => {
    expect(judgeScores(`Here is my evaluation:\n${valid}\nThanks.`, criteria, scale, 'corrected')).toEqual([4, 5, 3]);
  });

  it('retries once with a closing brace appended (the "Expecting \',\' delimiter" case)', () => {
    const missingBrace = valid.slice(0, -1); // the outer object is not closed; the span ends at clarity's "}"
    expect(judgeScores(missingBrace, criteria, scale, 'corrected')).toEqual([4, 5, 3]);
    // Two braces missing: one retry is not enough, the judge is dropped.
    expect(judgeScores(valid.slice(0, -2), criteria, scale, 'corrected')).toBeUndefined();
  });

  it('drops a judge whose answer is not JSON, misses a criterion or a score/explanation key', () => {
    expect(judgeScores('I would rate this note highly.', criteria, scale, 'corrected')).toBeUndefined();
    expect(judgeScores('{"accuracy": {"score": 4, "explanation": "a"}, "clarity": {"score": 3, "explanation": "c"}}', criteria, scale, 'corrected')).toBeUndefined();
    expect(judgeScores(valid.replace('"explanation": "ok"', '"why": "ok"'), criteria, scale, 'helm')).toBeUndefined();
  });

  it('corrected mode drops scores off the 1-5 scale; HELM mode truncates with int() and counts every entry', () => {
    const odd =
      '{"accuracy": {"score": 4.7, "explanation": "a"}, "completeness": {"score": "5", "explanation": "b"}, "clarity": {"score": 3, "explanation": "c"}, "overall": {"score": 9, "explanation": "d"}}';
    expect(judgeScores(odd, criteria, scale, 'corrected')).toBeUndefined();
    expect(judgeScores(odd, criteria, scale, 'helm')).toEqual([4, 5, 3, 9]);
    expect(judgeScores(valid.replace('"score": 4', '"score": 7'), criteria, scale, 'corrected')).toBeUndefined();
  });

  it('returns numbers only: no explanation text leaves the parser', () => {
    const out = judgeScores(valid.replace('"ok"', '"EXPLANATION-CANARY"'), criteria, scale, 'corrected');
    expect(JSON.stringify(out)).not.toContain('CANARY');
  });

  it('fills the judge prompt in one pass, so a response cannot inject another placeholder', () => {
    const p = judgePrompt('<q>{{QUESTION}}</q><r>{{RESPONSE}}</r><g>{{GOLD_RESPONSE}}</g>', 'Q', 'says {{GOLD_RESPONSE}}', 'G');
    expect(p).toBe('<q>Q</q><r>says {{GOLD_RESPONSE}}</r><g>G</g>');
  });
});

describe('the jury as the leaderboard ran it', () => {
  it.each(HEDGED_ANSWERS)('a disclaimer followed by an answer is hedged, not a refusal: %j', (text) => {
    expect(declineOf(text)).toBe('hedged');
    expect(isRefusal(text)).toBe(false);
  });

  it.each(PURE_REFUSALS)('a decline with nothing but apologies, referrals and courtesies is a refusal: %j', (text) => {
    expect(declineOf(text)).toBe('refusal');
    expect(isRefusal(text)).toBe(true);
  });

  it.each(PLAIN_ANSWERS)('an answer that only sounds like a decline is none: %j', (text) => {
    expect(declineOf(text)).toBe('none');
  });

  it('a refusal with one substantive sentence added is hedged', () => {
    expect(declineOf(`${PURE_REFUSALS[1]} Most adults can take 500 mg of acetaminophen every six hours.`)).toBe('hedged');
  });

  it.each([
    [{ model: 'gpt-4o-2024-05-13' }, 'gpt'],
    [{ deployment: 'o3-mini' }, 'gpt'],
    [{ model: 'meta/llama-3.3-70b-instruct' }, 'llama'],
    [{ model: 'anthropic/claude-3-7-sonnet-20250219' }, 'claude'],
    [{ model: 'deepseek-ai/DeepSeek-R1' }, 'deepseek'],
    [{ model: 'site-model', family: 'qwen' }, 'qwen'],
    [{ model: 'ehrbench-demo-standin' }, undefined],
  ])('family of %j: %s', (endpoint, family) => {
    expect(modelFamily(endpoint)).toBe(family);
  });

  it('never leaves a judge out on a guess: unknown families are not the same family', () => {
    expect(sameFamily({ model: 'ehrbench-demo-standin' }, { model: 'another-unknown' })).toBe(false);
    expect(sameFamily({ model: 'gpt-4o' }, { deployment: 'gpt-4.1-judge' })).toBe(true);
  });
});
