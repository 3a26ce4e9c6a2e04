/**
 * HealthBench's pieces one by one: the grader prompt (verbatim, filled as the reference fills it), the
 * reading of a grade, the instance score (simple-evals' own test case), the run's clipped statistics,
 * the JSONL adapter's refusals (file, line and field, never a value) against the JSONL's schema, and
 * the conversation as a sendable prompt.
 */
import { createHash } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { conversationText, criteriaMet, GRADER_TEMPLATE, graderPrompt, instanceScores, rubricItemText, rubricScore } from '../../src/annotate';
import { healthBenchInstance } from '../../src/catalog';
import { promptTokenBound } from '../../src/calls';
import { validatorFor } from '../../src/schema';
import { metricCell } from '../../src/export';
import { bootstrapStd, clippedMean, withClippedStats } from '../../src/metrics';
import { deidentifiedPrompt, plainPrompt, promptPayload } from '../../src/prompt';

const FIXTURE = join(__dirname, '..', 'fixtures', 'health-bench', 'synthetic.jsonl');

describe('the grader prompt', () => {
  it('is simple-evals GRADER_TEMPLATE word for word', () => {
    // sha256 of GRADER_TEMPLATE.strip() in healthbench_eval.py (simple-evals, MIT)
    expect(createHash('sha256').update(GRADER_TEMPLATE).digest('hex')).toBe('2adffd51fd259554ebcd036ad1072d4aa2b7ce3aec2bbffe36271f911632ed3c');
  });

  it('is filled as the reference fills it: "role: content" turns a blank line apart, the response last, "[points] criterion"', () => {
    const convo = conversationText(
      [
        { role: 'system', content: 'Be brief.' },
        { role: 'user', content: 'Is 38 C a fever?' },
      ],
      'Yes, mildly.',
    );
    expect(convo).toBe('system: Be brief.\n\nuser: Is 38 C a fever?\n\nassistant: Yes, mildly.');
    const prompt = graderPrompt(convo, rubricItemText({ criterion: 'Fails to say when to seek care.', points: -4, tags: [] }));
    expect(prompt).toContain('# Conversation\nsystem: Be brief.\n\nuser: Is 38 C a fever?\n\nassistant: Yes, mildly.\n\n# Rubric item\n[-4] Fails to say when to seek care.\n\n# Instructions');
    expect(prompt).not.toContain('<<');
  });

  it('replaces one placeholder after the other, everywhere, as str.replace does (a "$&" is text, not a pattern)', () => {
    const prompt = graderPrompt('user: what is <<rubric_item>>? costs $& today', '[1] X');
    expect(prompt).toContain('user: what is [1] X? costs $& today');
  });
});

describe('reading a grade', () => {
  it.each([
    ['{"explanation": "e", "criteria_met": true}', true],
    ['{"explanation": "e", "criteria_met": false}', false],
    ['```json\n{"explanation": "e", "criteria_met": true}\n```', true],
    ['  ```json {"criteria_met": false}```  \n', false],
  ])('reads %j', (answer, met) => expect(criteriaMet(answer)).toBe(met));

  it.each([
    ['"criteria_met" is a string', '{"criteria_met": "true"}'],
    ['"criteria_met" is a number', '{"criteria_met": 1}'],
    ['"criteria_met" is missing', '{"explanation": "met"}'],
    ['text before the fence (the reference strips only a leading fence)', 'Here you go:\n```json\n{"criteria_met": true}\n```'],
    ['not JSON', 'criteria met: yes'],
    ['a list', '[true]'],
  ])('finds no grade when %s', (_why, answer) => expect(criteriaMet(answer)).toBeUndefined());
});

describe('scoring', () => {
  it("scores simple-evals' own test case: (7 + 10 - 6) / (7 + 5 + 10)", () => {
    const items = [7, 5, 10, -6].map((points) => ({ criterion: 'test', points, tags: [] }));
    expect(rubricScore(items, [true, false, true, true])).toBe((7 + 0 + 10 - 6) / (7 + 5 + 10));
  });

  it('gives the themes the instance score and each axis the score of its own criteria; none where an axis has no positive points', () => {
    const items = [
      { criterion: 'a', points: 4, tags: ['axis:accuracy'] },
      { criterion: 'b', points: 2, tags: ['axis:completeness'] },
      { criterion: 'c', points: -3, tags: ['axis:communication_quality'] },
    ];
    const s = instanceScores(items, ['theme:hedging'], [true, false, true]);
    expect(s.rubric_score).toBeCloseTo((4 - 3) / 6, 12);
    expect(s.rubric_theme_hedging).toBe(s.rubric_score);
    expect(s.rubric_theme_global_health).toBeNull();
    expect(s).toMatchObject({ rubric_axis_accuracy: 1, rubric_axis_completeness: 0, rubric_axis_communication_quality: null, rubric_axis_context_awareness: null });
  });

  it('clips the mean, not the instances, and spreads the bootstrap only where the scores differ', () => {
    expect(clippedMean([-1, 0.5])).toBe(0);
    expect(clippedMean([1.5, 0.9])).toBe(1);
    expect(clippedMean([-0.2, 1])).toBeCloseTo(0.4, 12);
    expect(bootstrapStd([0.4, 0.4, 0.4])).toBeCloseTo(0, 12);
    expect(bootstrapStd([0, 1, 0, 1])).toBeGreaterThan(0.15);
    // seeded: the same scores give the same figure
    expect(bootstrapStd([0.1, 0.7, 0.3])).toBe(bootstrapStd([0.1, 0.7, 0.3]));
    const out = withClippedStats(
      [
        { metric: 'exact_match', value: 0.5, n: 2 },
        { metric: 'rubric_score', value: -0.25, n: 2 },
      ],
      new Map([['rubric_score', [-1, 0.5]]]),
      (m) => m === 'rubric_score',
    );
    expect(out.map((a) => [a.metric, a.value])).toEqual([
      ['exact_match', 0.5],
      ['rubric_score', 0],
      ['rubric_score_bootstrap_std', expect.any(Number)],
    ]);
  });
});

describe('an export of a rubric run', () => {
  const s = { k: 11, width: 10, decimals: 3 };
  it('releases the clipped mean, as the run shows it, and leaves other metrics as they are', () => {
    expect(metricCell({ name: 'rubric_score', n: 30, sum: -3, unit: false }, 'rubric_score', s)).toMatchObject({ value: 0 });
    expect(metricCell({ name: 'rubric_theme_hedging', n: 30, sum: 33, unit: false }, 'rubric_theme_hedging', s)).toMatchObject({ value: 1 });
    expect(metricCell({ name: 'rubric_score', n: 30, sum: 12, unit: true }, 'rubric_score', s)).toEqual({ name: 'rubric_score', value: 0.4, n: { low: 30, high: 39 } });
    expect(metricCell({ name: 'jury_score', n: 30, sum: -3, unit: false }, 'jury_score', s)).toMatchObject({ value: -0.1 });
  });
});

describe('the HealthBench JSONL', () => {
  const validate = validatorFor('health-bench.schema.json');
  const lines = readFileSync(FIXTURE, 'utf8').trim().split('\n');
  const record = (fields: Record<string, unknown>, position = 7) => ({ position, fields });
  const good = JSON.parse(lines[1] as string) as Record<string, unknown>;

  it('reads every line of the fixture into a conversation with its rubric, and the schema accepts them', () => {
    for (const [i, line] of lines.entries()) {
      const fields = JSON.parse(line) as Record<string, unknown>;
      expect(validate(fields)).toBe(true);
      const instance = healthBenchInstance(record(fields, i + 1), 'hb.jsonl');
      expect(instance.key).toBe(fields.prompt_id);
      expect(instance.messages).toEqual(fields.prompt);
      expect(JSON.parse(instance.extra?.rubric as string)).toEqual(fields.rubrics);
    }
  });

  const SECRET = 'Marguerite Hollis 00384157';
  it.each([
    ['prompt', { prompt: [] }, 'must be a non-empty list'],
    [
      'prompt[1].role',
      {
        prompt: [
          { role: 'user', content: 'a' },
          { role: 'doctor', content: SECRET },
        ],
      },
      'must be system, user or assistant',
    ],
    ['prompt[0].content', { prompt: [{ role: 'user', content: 5 }] }, 'must be text'],
    [
      'prompt[1].role',
      {
        prompt: [
          { role: 'user', content: SECRET },
          { role: 'assistant', content: SECRET },
        ],
      },
      'must not be assistant',
    ],
    ['rubrics[0].points', { rubrics: [{ criterion: SECRET, points: '5', tags: [] }] }, 'must be a number'],
    ['rubrics', { rubrics: [{ criterion: SECRET, points: -5, tags: [] }] }, 'at least one criterion with positive points'],
    ['rubrics[0].tags', { rubrics: [{ criterion: SECRET, points: 5 }] }, 'must be a list of strings'],
    ['example_tags', { example_tags: ['theme:hedging', 'theme:hedging'] }, 'must not list a tag twice'],
    ['prompt_id', { prompt_id: '' }, 'must be non-empty text'],
  ])('refuses a bad %s naming the file, the line and the field, never a value; the schema refuses it too', (field, change, must) => {
    const fields = { ...good, ...change };
    let err: Error | undefined;
    try {
      healthBenchInstance(record(fields), '/secure/hb.jsonl');
    } catch (e) {
      err = e as Error;
    }
    expect(err?.message.startsWith(`/secure/hb.jsonl: line 7: field "${field}" `)).toBe(true);
    expect(err?.message).toContain(must);
    expect(err?.message).not.toMatch(/Hollis|00384157|theme:hedging/);
    expect((err as { code?: string }).code).toBe('dataset.bad-column');
    // The schema refuses what the adapter refuses (except the last turn's role, which it cannot say).
    if (!must.includes('must not be assistant')) expect(validate(fields)).toBe(false);
  });

  it('reads the professional layout: the turns under conversation.messages, the rubric under rubric_items, tags optional', () => {
    const fields = {
      id: 'p1',
      conversation: { messages: [{ role: 'user', content: 'Draft a discharge note.' }] },
      rubric_items: [{ criterion: 'Lists medicines', points: 3 }],
      physician_response: 'x',
    };
    expect(validate(fields)).toBe(true);
    const instance = healthBenchInstance(record(fields), 'pro.jsonl', 'health_bench_professional');
    expect(instance).toMatchObject({ key: 'p1', messages: [{ role: 'user', content: 'Draft a discharge note.' }] });
    expect(JSON.parse(instance.extra?.rubric as string)).toEqual([{ criterion: 'Lists medicines', points: 3, tags: [] }]);
    expect(() => healthBenchInstance(record({ ...fields, conversation: [] }), 'pro.jsonl', 'health_bench_professional')).toThrow('pro.jsonl: line 7: field "conversation" must be an object');
  });
});

describe('a conversation as a sendable prompt', () => {
  const turns = [
    { role: 'system' as const, content: 'Be brief.' },
    { role: 'user' as const, content: 'Héllo, is 38 C a fever?' },
  ];

  it('leaves a single prompt as it was: its text, no turns', () => {
    const p = plainPrompt('public', 'Question: x\nAnswer:');
    expect(p.text).toBe('Question: x\nAnswer:');
    expect(p.messages).toBeUndefined();
    expect(promptPayload('abc')).toBe('abc');
  });

  it('keeps its own frozen copy of the turns, measured over all of them', () => {
    const mine = turns.map((t) => ({ ...t }));
    const p = deidentifiedPrompt(mine);
    (mine[1] as { content: string }).content = 'changed after the check';
    expect(p.messages).toEqual(turns);
    expect(Object.isFrozen(p.messages)).toBe(true);
    expect(p.text).toBe(JSON.stringify(turns));
    // the budget's bound covers every turn's bytes
    expect(promptTokenBound(p.text)).toBeGreaterThan(turns.reduce((a, t) => a + Buffer.byteLength(t.content), 0) + turns.length * 4);
  });

  it('refuses an EHR tier without de-identification, for a conversation as for a text', () => {
    expect(() => plainPrompt('approval-required', turns)).toThrow('sent only after de-identification');
  });
});
