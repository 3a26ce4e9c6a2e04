/**
 * Dataset-wide evidence (src/deid/evidence.ts): what strong rules take in one record is looked for in
 * every record of the dataset, weighed against the word's ordinary uses; kept sealed (keyed hashes) for
 * a run; a record read once (`read`) and finished with the evidence (`runRead`) ends as a full reading
 * does. Every name, place and number is invented.
 */
import { mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { deidentifyFile } from '../../src/cli/commands/deid';
import { Deidentifier, defaultSettings, EvidenceCollector, HashedEvidence, type Span } from '../../src/deid';
import { UserError } from '../../src/errors';

const deid = new Deidentifier(defaultSettings('/nonexistent/secret'), () => Buffer.alloc(32, 3));

function covered(text: string, part: string, spans: Span[]): boolean {
  const at = text.indexOf(part);
  if (at < 0) throw new Error(`test text lacks ${part}`);
  for (let i = at; i < at + part.length; i++) if (/[\p{L}\p{N}]/u.test(text.charAt(i)) && !spans.some((s) => s.start <= i && i < s.end)) return false;
  return true;
}

/** One record a subject, the dataset's spans of each, with the scope asked for. */
function read(texts: string[], scope: 'dataset' | 'subject' = 'dataset'): Span[][] {
  return deid.findAll(
    texts.map((text, i) => ({ text, subject: `s${i}` })),
    scope,
  ).spans;
}

describe('dataset-wide evidence', () => {
  it('looks for a name a strong rule took in one record in the records of other subjects', () => {
    const texts = ['Report given, -Oyelowo RN', 'Labs drawn by 0600; note for oyelowo on the desk.', 'Plan per team.'];
    expect(covered(texts[1]!, 'oyelowo', read(texts)[1]!)).toBe(true);
    expect(covered(texts[1]!, 'oyelowo', read(texts, 'subject')[1]!)).toBe(false);
  });

  it('looks for a facility acronym taken after a strong cue wherever it is written in capitals', () => {
    const texts = ['Transferred from QMVH ED after CT.', 'Records faxed to QMVH today.', 'qmvh is not the same word in lowercase.'];
    const spans = read(texts);
    expect(covered(texts[1]!, 'QMVH', spans[1]!)).toBe(true);
    expect(spans[2]).toEqual([]);
  });

  it('does not spread a word taken once among many ordinary uses', () => {
    const texts = ['Overnight paged Zorvitab re: pain.', ...[1, 2, 3, 4, 5].map((k) => `zorvitab ${k}0mg given at 0800.`)];
    expect(read(texts).slice(1)).toEqual([[], [], [], [], []]);
  });

  it('spreads a name that is also a word only capitalised inside a sentence, and only when taken three times', () => {
    const taken = ['Wife Hope at bedside.', 'Spoke with Dr. Kessler; wife Hope updated.', 'Daughter called; wife Hope to visit.'];
    const elsewhere = 'Pt resting. Left a message for Hope tonight.';
    const ordinary = 'We hope he improves. Hope is high.';
    const spans = read([...taken, elsewhere, ordinary]);
    expect(covered(elsewhere, 'Hope', spans[3]!)).toBe(true);
    expect(spans[4]).toEqual([]);
    // taken twice is not enough for a word that is also an English word
    const twice = read([...taken.slice(0, 2), elsewhere]);
    expect(twice[2]).toEqual([]);
  });

  it('never spreads an English word in capitals as an acronym', () => {
    const texts = ['Admitted from TAUNTON HOME HEALTH agency.', 'HOME HEALTH RN visit, LOG reviewed.'];
    expect(read(texts)[1]).toEqual([]);
  });

  it('keeps the run store copy sealed: keyed hashes only, answering as the plain words do', () => {
    const collector = new EvidenceCollector();
    for (const t of ['Report given, -Oyelowo RN', 'Transferred from QMVH ED.']) collector.add(undefined, deid.survey(t));
    const plain = collector.dataset();
    const secret = Buffer.alloc(32, 9);
    const sealed = plain.seal(secret);
    expect(JSON.stringify(sealed)).not.toMatch(/oyelowo|qmvh/i);
    expect(sealed.version).toBe(plain.version);
    const hashed = new HashedEvidence(sealed, secret);
    for (const [word, acronym] of [
      ['oyelowo', false],
      ['qmvh', true],
      ['report', false],
    ] as const) {
      expect([word, hashed.name(word), hashed.place(word, acronym)]).toEqual([word, plain.name(word), plain.place(word, acronym)]);
    }
    expect(plain.name('oyelowo')).toBe(true);
    // another site's key answers nothing
    expect(new HashedEvidence(sealed, Buffer.alloc(32, 1)).name('oyelowo')).toBe(false);
  });

  it('gives the same version for the same evidence, and another for other evidence', () => {
    const version = (texts: string[]) => {
      const c = new EvidenceCollector();
      for (const t of texts) c.add(undefined, deid.survey(t));
      return c.dataset().version;
    };
    expect(version(['-Oyelowo RN'])).toBe(version(['-Oyelowo RN']));
    expect(version(['-Oyelowo RN'])).not.toBe(version(['-Okafor RN']));
  });
});

describe('a record read once, finished with the evidence', () => {
  const texts = ['NPN: wife Zorbanna called; paged Dr. Kessler. Transferred from QMVH on 3/4.', 'Zorbanna brought clothes; back to QMVH 3/9.'];

  it('ends with the spans and text a full reading gives', () => {
    const collector = new EvidenceCollector();
    const reads = texts.map((t, i) => {
      const r = deid.read(t);
      collector.add(`s${i}`, r.survey);
      return r.found;
    });
    const dataset = collector.dataset();
    texts.forEach((text, i) => {
      const words = collector.subject(`s${i}`);
      const input = { text, subject: `s${i}`, ...(words ? { evidence: words } : {}), dataset };
      expect(deid.runRead(input, reads[i]!)).toEqual(deid.run(input));
    });
  });

  it('surveys alike with the name and place rules alone (planning) and with every detector (a file)', () => {
    for (const t of texts) {
      const full = deid.read(t).survey;
      const alone = deid.survey(t);
      expect({ ...alone, seen: [...alone.seen] }).toEqual({ ...full, seen: [...full.seen] });
    }
  });

  it('refuses to finish another text than the one read', () => {
    const found = deid.read(texts[0]!).found;
    expect(() => deid.runRead({ text: texts[1]!, subject: 's' }, found)).toThrow(UserError);
  });
});

describe('ehrbench deid on a file larger than the kept readings', () => {
  it('writes the same file when the second pass reads lines again as when every first reading was kept', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'deid-bound-'));
    const notes = [
      'Report given, -Oyelowo RN. Pt seen 03/14 at QMVH ED, call 555-0142 x231.',
      'Labs drawn by 0600; note for oyelowo on the desk. Transferred from QMVH.',
      'Wife Marisol Quintanilla-Baptiste at bedside, MRN 4417820.',
      'Plan per team; f/u Dr. Adaeze Okonkwo-Ferreira in 2 weeks.',
    ];
    const inFile = join(dir, 'in.jsonl');
    writeFileSync(inFile, notes.map((text, i) => JSON.stringify({ id: `n${i}`, text, subject: `s${i}` })).join('\n') + '\n');
    const all = await deidentifyFile(deid, inFile, join(dir, 'all.jsonl'), 'mark');
    // Room for the first line's reading only: the other three are read again in the second pass.
    const bounded = await deidentifyFile(deid, inFile, join(dir, 'bounded.jsonl'), 'mark', notes[0]!.length);
    expect(bounded).toEqual(all);
    expect(all.spans).toBeGreaterThan(8);
    expect(readFileSync(join(dir, 'bounded.jsonl'), 'utf8')).toBe(readFileSync(join(dir, 'all.jsonl'), 'utf8'));
  });
});
