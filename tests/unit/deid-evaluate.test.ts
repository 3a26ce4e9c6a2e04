/**
 * The sign-off figures (src/deid/evaluate): strict recall, precision of merged spans, masked share,
 * look-alike survival, misses and false positives; the gold file forms (src/deid/gold); and the
 * detection view's folding and its way back to the original offsets (src/deid/normalize).
 */
import { evaluate, type GoldDocument, parseGoldJsonl, parseMarked, type Span } from '../../src/deid';
import { fold, originalRange } from '../../src/deid/normalize';
import { UserError } from '../../src/errors';

const doc = (id: string, text: string, spans: GoldDocument['spans'], lookalikes?: GoldDocument['lookalikes']): GoldDocument => ({ id, text, spans, ...(lookalikes ? { lookalikes } : {}) });

describe('evaluate', () => {
  const text = 'Seen by Dr. Okafor on 7/22. Pain 5/10. Wife Ann called.';
  const gold = doc('n1', text, [
    { start: text.indexOf('Dr. Okafor'), end: text.indexOf('Dr. Okafor') + 10, type: 'NAME', subtype: 'clinician' },
    { start: text.indexOf('7/22'), end: text.indexOf('7/22') + 4, type: 'DATE' },
    { start: text.indexOf('Ann'), end: text.indexOf('Ann') + 3, type: 'NAME', subtype: 'relative' },
  ]);
  const at = (s: string, type: Span['type'], from = 0, to = s.length): Span => ({ start: text.indexOf(s) + from, end: text.indexOf(s) + to, type });

  it('counts a gold span found only when every letter and digit is covered (the title may be left)', () => {
    const e = evaluate([gold], () => [at('Okafor', 'NAME'), at('7/22', 'DATE', 0, 3), at('Ann', 'NAME')]);
    expect(e.byType.NAME).toMatchObject({ gold: 2, found: 2, recall: 1 });
    // "7/2" of "7/22": a date partly masked is missed
    expect(e.byType.DATE).toMatchObject({ gold: 1, found: 0, recall: 0 });
    expect(e.recall).toBeCloseTo(2 / 3);
    // two of its three digits covered
    expect(e.misses).toEqual([{ id: 'n1', type: 'DATE', start: text.indexOf('7/22'), end: text.indexOf('7/22') + 4, coveredShare: 2 / 3 }]);
    expect(e.bySubtype['NAME:relative']).toMatchObject({ gold: 1, found: 1 });
  });

  it('merges touching predicted spans before judging precision, and lists false positives by offsets only', () => {
    const e = evaluate([gold], () => [at('Okafor', 'NAME', 0, 3), at('Okafor', 'NAME', 3, 6), at('5/10', 'DATE'), at('Ann', 'NAME')]);
    expect(e.byType.NAME).toMatchObject({ predicted: 2, correct: 2 });
    expect(e.byType.DATE).toMatchObject({ predicted: 1, correct: 0 });
    expect(e.precision).toBeCloseTo(2 / 3);
    expect(e.falsePositives).toEqual([{ id: 'n1', type: 'DATE', start: text.indexOf('5/10'), end: text.indexOf('5/10') + 4 }]);
    expect(JSON.stringify(e)).not.toContain('Okafor');
  });

  it('measures the masked share and the look-alikes left untouched (listed, or by shape)', () => {
    const listed = doc('n2', text, gold.spans, [{ start: text.indexOf('5/10'), end: text.indexOf('5/10') + 4 }]);
    const masking5 = () => [at('5/10', 'DATE')];
    expect(evaluate([listed], masking5).lookalikes).toEqual({ total: 1, untouched: 0, survival: 0, source: 'gold' });
    expect(evaluate([listed], () => []).lookalikes).toMatchObject({ total: 1, untouched: 1, survival: 1 });
    // without a list, fractions and doses outside the gold spans are taken: "5/10" here, not "7/22"
    expect(evaluate([gold], () => []).lookalikes).toMatchObject({ total: 1, untouched: 1, source: 'shapes' });
    const e = evaluate([gold], () => [at('Okafor', 'NAME')]);
    expect(e.maskedShare).toBeCloseTo(6 / text.length);
    expect(e.overMaskedShare).toBe(0);
  });
});

describe('gold files', () => {
  it('reads marked text: documents, subjects, known identifiers, subtypes and look-alikes', () => {
    const raw = '### subject S1\nknown: {"names": ["Ann Kerr"]}\n=== note A1 style=nursing\nwife {{NAME:relative|ann}} in, pain {{SAFE|5/10}}\n=== note A2\nseen {{DATE|7/22}}\n';
    const docs = parseMarked(raw, 'gold.txt');
    expect(docs.map((d) => [d.id, d.subject, d.style, d.text])).toEqual([
      ['A1', 'S1', 'nursing', 'wife ann in, pain 5/10'],
      ['A2', 'S1', undefined, 'seen 7/22'],
    ]);
    expect(docs[0]?.spans).toEqual([{ start: 5, end: 8, type: 'NAME', subtype: 'relative' }]);
    expect(docs[0]?.lookalikes).toEqual([{ start: 18, end: 22 }]);
    expect(docs[0]?.known).toEqual({ names: ['Ann Kerr'] });
  });

  it.each([
    ['an unknown type', '=== note A\nseen {{NAMEX|x}}\n', /note A \(line 1\): unknown mark type NAMEX/],
    ['an unclosed mark', '=== note A\nseen {{NAME|x\n', /a mark is not closed/],
  ])('refuses marked text with %s, naming the note', (_label, raw, message) => {
    expect(() => parseMarked(raw, 'gold.txt')).toThrow(message);
  });

  it.each([
    ['a line that is not JSON', '{"id": "a", "text": "x", "spans": []}\nnot json\n', /gold\.jsonl: line 2 is not valid JSON/],
    ['a span outside the text', '{"id": "a", "text": "abc", "spans": [{"start": 1, "end": 9, "type": "NAME"}]}\n', /line 1: span 1 \(1-9\) is empty or outside the text/],
    ['an unknown type', '{"id": "a", "text": "abc", "spans": [{"start": 0, "end": 1, "type": "PERSON"}]}\n', /gold\.jsonl: line 1/],
    ['an unknown field', '{"id": "a", "text": "abc", "spans": [], "note": "x"}\n', /gold\.jsonl: line 1/],
    ['a repeated id', '{"id": "a", "text": "x", "spans": []}\n{"id": "a", "text": "y", "spans": []}\n', /line 2: id occurs more than once/],
  ])('refuses JSON lines with %s, naming the line and never the text', (_label, raw, message) => {
    try {
      parseGoldJsonl(raw, 'gold.jsonl');
      throw new Error('expected an error');
    } catch (err) {
      expect(err).toBeInstanceOf(UserError);
      expect((err as Error).message).toMatch(message);
      expect((err as Error).message).not.toMatch(/abc|"x"/);
    }
  });
});

describe('the detection view (folding) and its way back', () => {
  it.each([
    ['plain ASCII, unchanged and without maps', 'BP 120/80', 'BP 120/80'],
    ['decomposed accents', 'Jose\u0301 Nun\u0303ez', 'Jose Nunez'],
    ['full-width letters and digits', '\uff2d\uff32\uff2e \uff11\uff12\uff13', 'MRN 123'],
    ['zero-width and format characters', '12\u200b34\u200d56\u00ad78', '12345678'],
    ['no-break and other spaces', 'a\u00a0b\u202fc\u3000d', 'a b c d'],
    ['dashes and quotes', 'O\u2019Brien \u2013 Smith\u2212Jones', "O'Brien - Smith-Jones"],
    ['digits of other scripts', '\u0663/\u0661\u0661 \u096a\u096b', '3/11 45'],
    ['look-alike letters inside a Latin word only', '\u0410nna \u041c\u043e\u0441\u043a\u0432\u0430', 'Anna \u041c\u043e\u0441\u043a\u0432\u0430'],
  ])('%s', (_label, input, folded) => {
    const f = fold(input);
    expect(f.text).toBe(folded);
    expect(f.changed).toBe(input !== folded);
  });

  it('maps a folded span back over whole original characters, zero-width ones inside included', () => {
    const input = 'MRN 00\u200b38\u200b41 ok';
    const f = fold(input);
    const at = f.text.indexOf('003841');
    const r = originalRange(f, at, at + 6);
    expect(input.slice(r.start, r.end)).toBe('00\u200b38\u200b41');
    const accents = 'Dr. Jose\u0301 said';
    const g = fold(accents);
    const back = originalRange(g, g.text.indexOf('Jose'), g.text.indexOf('Jose') + 4);
    expect(accents.slice(back.start, back.end)).toBe('Jose\u0301');
  });
});
