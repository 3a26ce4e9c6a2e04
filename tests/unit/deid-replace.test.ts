/**
 * Known identifiers and their variants; replacement (consistent surrogates, date shifting, 90+, ZIP,
 * typed tags); the residual scan; the pipeline stage. Every name and number here is invented.
 */
import { plainPrompt } from '../../src/prompt';
import { statSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import type { Benchmark, Instance } from '../../src/catalog';
import { createDeidStage, Deidentifier, defaultSettings, type DeidSettings, loadSecret, RESIDUAL_RULE, settingsVersion, withinOneEdit } from '../../src/deid';
import type { RunContext } from '../../src/contracts';
import { keepsCalendarDay } from '../../src/deid/replace';
import { tempDir } from '../helpers/db';

const SECRET = Buffer.alloc(32, 9);
const settings = (over: Partial<DeidSettings> = {}): DeidSettings => ({ ...defaultSettings('/nonexistent/secret'), ...over });
const deid = (over: Partial<DeidSettings> = {}, secret = SECRET) => new Deidentifier(settings(over), () => secret);

const known = {
  names: ['Marguerite Hollis', 'Tobias Renwick'],
  mrns: ['00384157'],
  dates: ['1994-04-09'],
  addresses: ['214 Pellham Road, Framingham, MA 01702'],
  facilities: ["St. Aldric's Hospital"],
};

function coveredBy(text: string, part: string, spans: { start: number; end: number }[]): boolean {
  const at = text.indexOf(part);
  if (at < 0) throw new Error(`test text lacks ${part}`);
  for (let i = at; i < at + part.length; i++) if (/[A-Za-z0-9]/.test(text.charAt(i)) && !spans.some((s) => s.start <= i && i < s.end)) return false;
  return true;
}

describe('known identifiers from structured data', () => {
  it.each([
    ['the last name alone, in any case', 'pt hollis resting comfortably', 'hollis'],
    ['capitals', 'HOLLIS, MARGUERITE admitted', 'HOLLIS, MARGUERITE'],
    ['an initial and the surname', 'M. Hollis doing well', 'M. Hollis'],
    ['initials with dots', 'Pt M.H. seen today', 'M.H.'],
    ['a misspelling within one edit', 'Hollsi seen at bedside', 'Hollsi'],
    ['a dropped letter', 'Margurite was asleep', 'Margurite'],
    ['the MRN with separators', 'MR 0038-4157 verified', '0038-4157'],
    ['the MRN without its leading zeros', 'chart 384157 reviewed', '384157'],
    ['the birth date in another format', 'born April 9, 1994 in town', 'April 9, 1994'],
    ['the birthday without the year', 'birthday 4/9 celebrated', '4/9'],
    ['an address part', 'moved back to Framingham last year', 'Framingham'],
    ['the street without its number', 'house on Pellham Road sold', 'Pellham Road'],
    ['the facility in short', 'seen at St. Aldric’s last week', 'Aldric'],
  ])('finds %s', (_label, text, part) => {
    const spans = deid().find(text, known);
    expect(coveredBy(text, part, spans)).toBe(true);
  });

  it('does not take an ordinary lowercase word for a misspelt name', () => {
    // "many" is one edit from "Mary", "rose" is a name part here but a verb in lowercase
    const text = 'BP rose to 180; many visitors today';
    expect(deid().find(text, { names: ['Mary Rose'] })).toEqual([]);
  });

  it('counts one edit as Damerau-Levenshtein distance', () => {
    expect(withinOneEdit('hollis', 'hollsi')).toBe(true); // transposition
    expect(withinOneEdit('hollis', 'holis')).toBe(true); // deletion
    expect(withinOneEdit('hollis', 'hollies')).toBe(true); // insertion
    expect(withinOneEdit('hollis', 'hallas')).toBe(false);
  });
});

describe('surrogates', () => {
  const note = 'Marguerite Hollis seen by Dr. Renwick. Mrs. Hollis asked for Renwick again. HOLLIS, MARGUERITE.';

  it('replaces the same real name with the same fake name, in every case and form', () => {
    const out = deid().run({ text: note, subject: 'p-1', known });
    expect(out.text).not.toMatch(/hollis|marguerite|renwick/i);
    const m = /^(\w+) (\w+) seen by Dr\. (\w+)\. Mrs\. (\w+) asked for (\w+) again\. (\w+), (\w+)\.$/.exec(out.text);
    expect(m).not.toBeNull();
    const [, first, last, doc, last2, doc2, lastCaps, firstCaps] = m as RegExpExecArray;
    expect(last2).toBe(last);
    expect(doc2).toBe(doc);
    expect(lastCaps).toBe((last as string).toUpperCase());
    expect(firstCaps).toBe((first as string).toUpperCase());
  });

  it('gives a misspelling the surrogate of the name it stands for', () => {
    const out = deid().run({ text: 'Hollis and Hollsi', subject: 'p-1', known });
    const [a, b] = out.text.split(' and ');
    expect(b).toBe(a);
  });

  it('is the same across texts of one subject, and differs between subjects and between site secrets', () => {
    const a = deid().run({ text: note, subject: 'p-1', known }).text;
    const again = deid().run({ text: note, subject: 'p-1', known }).text;
    const other = deid().run({ text: note, subject: 'p-2', known }).text;
    const otherSite = deid({}, Buffer.alloc(32, 4)).run({ text: note, subject: 'p-1', known }).text;
    expect(again).toBe(a);
    expect(other).not.toBe(a);
    expect(otherSite).not.toBe(a);
  });

  it('shifts every date of a subject by the same number of days, so intervals and order survive', () => {
    const text = 'Admitted 3/11/2087, extubated 2087-03-13, discharged March 17, 2087.';
    const out = deid().run({ text, subject: 'p-1' }).text;
    const a = /Admitted (\d+)\/(\d+)\/(\d{4})/.exec(out) as RegExpExecArray;
    const b = /extubated (\d{4})-(\d{2})-(\d{2})/.exec(out) as RegExpExecArray;
    const c = /discharged ([A-Z][a-z]+) (\d+), (\d{4})/.exec(out) as RegExpExecArray;
    expect(a && b && c).toBeTruthy();
    const months = ['January', 'February', 'March', 'April', 'May', 'June', 'July', 'August', 'September', 'October', 'November', 'December'];
    const day = (y: string, m: number, d: string) => Date.UTC(Number(y), m - 1, Number(d)) / 86_400_000;
    const da = day(a[3] as string, Number(a[1]), a[2] as string);
    const db = day(b[1] as string, Number(b[2]), b[3] as string);
    const dc = day(c[3] as string, months.indexOf(c[1] as string) + 1, c[2] as string);
    expect(db - da).toBe(2);
    expect(dc - da).toBe(6);
    const shift = da - day('2087', 3, '11');
    expect(shift).not.toBe(0);
    expect(Math.abs(shift)).toBeLessThanOrEqual(365);
    // the same subject's dates in another text move by the same shift
    const other = deid().run({ text: 'Seen 1/1/2090.', subject: 'p-1' }).text;
    const o = /Seen (\d+)\/(\d+)\/(\d{4})/.exec(other) as RegExpExecArray;
    expect(day(o[3] as string, Number(o[1]), o[2] as string) - day('2090', 1, '1')).toBe(shift);
  });

  it('never moves a date onto its own month and day, for any subject or shift range', () => {
    // A shift of a whole number of years would leave "admitted 12/2" as "12/2" and a birthday on its day.
    for (const maxShiftDays of [365, 3650]) {
      for (let i = 0; i < 1500; i++) {
        const out = deid({ maxShiftDays }).run({ text: 'ADMITTED 12/2 W/ UROSEPSIS. DOB 4/9/1994.', subject: `p-${i}` }).text;
        const m = /ADMITTED (\d+)\/(\d+) W\/ UROSEPSIS\. DOB (\d+)\/(\d+)\/(\d{4})\./.exec(out) as RegExpExecArray;
        expect(m).not.toBeNull();
        expect({ subject: i, admitted: `${m[1]}/${m[2]}` }).not.toEqual({ subject: i, admitted: '12/2' });
        expect({ subject: i, born: `${m[3]}/${m[4]}` }).not.toEqual({ subject: i, born: '4/9' });
      }
    }
  });

  it('refuses exactly the shifts that keep some date of 1800-2199 on its month and day', () => {
    const keeping = new Set<number>();
    for (let year = 1800; year < 2190; year++) {
      for (let t = Date.UTC(year, 0, 1); t < Date.UTC(year + 1, 0, 1); t += 86_400_000) {
        const d = new Date(t);
        for (let k = 1; k <= 10; k++) {
          const later = Date.UTC(year + k, d.getUTCMonth(), d.getUTCDate());
          if (new Date(later).getUTCDate() === d.getUTCDate()) keeping.add((later - t) / 86_400_000); // no 29 February that year
        }
      }
    }
    const refused = new Set<number>();
    for (let m = 1; m <= 3650; m++) if (keepsCalendarDay(m)) refused.add(m);
    expect([...refused].sort((a, b) => a - b)).toEqual([...keeping].filter((m) => m <= 3650).sort((a, b) => a - b));
  });

  it('writes ages over 89 as 90+ and keeps younger ages', () => {
    expect(deid().run({ text: 'A 93 yo woman and her 71 yo husband.', subject: 'p' }).text).toBe('A 90+ yo woman and her 71 yo husband.');
  });

  it('keeps three ZIP digits, and writes 000 for the restricted prefixes', () => {
    const out = deid().run({ text: 'Framingham, MA 01702 and Hanover, NH 03608', subject: 'p' }).text;
    expect(out).toContain('017XX');
    expect(out).toContain('000XX'); // 036 is one of the 2000 Census prefixes of 20,000 people or fewer
    expect(out).not.toMatch(/01702|03608/);
  });

  it('never issues a real SSN as a surrogate (area 9xx is never assigned)', () => {
    expect(deid().run({ text: 'SSN 031-44-9182', subject: 'p' }).text).toMatch(/SSN 9\d\d-\d\d-\d{4}/);
  });

  it('writes typed tags in tag mode', () => {
    const out = deid({ mode: 'tag' }).run({ text: 'Dr. Renwick saw Marguerite Hollis on 3/11/2087, MRN 00384157.', subject: 'p', known });
    expect(out.text).toBe('Dr. [NAME] saw [NAME] on [DATE], MRN [MRN].');
  });
});

describe('residual scan', () => {
  it('finds what the detectors missed and says only where and what kind', () => {
    const blind = new Deidentifier(settings(), () => SECRET, []);
    const out = blind.run({ text: 'Call 508-555-0187, SSN 031-44-9182, Hollis at bedside', subject: 'p', known: { names: ['Ann Hollis'] } });
    // the known name was replaced even without detectors; the phone and SSN were not
    expect(out.text).not.toContain('Hollis');
    expect(out.residual.map((f) => f.type).sort()).toEqual(['PHONE', 'SSN']);
    expect(JSON.stringify(out.residual)).not.toContain('555');
  });

  it('finds nothing when detection did its work', () => {
    const out = deid().run({ text: 'Call 508-555-0187, SSN 031-44-9182, seen 3/11/2087, Hollis at bedside', subject: 'p', known: { names: ['Ann Hollis'] } });
    expect(out.residual).toEqual([]);
  });
});

describe('the de-identification stage', () => {
  const ctx = (deidentify: boolean) =>
    ({
      deidentify,
      tier: deidentify ? 'private' : 'public',
      benchmark: { dataTier: deidentify ? 'private' : 'public', definition: { id: 'b', tier: deidentify ? 'private' : 'public' } } as Benchmark,
    }) as unknown as RunContext;
  const instance: Instance = { key: 'k1', vars: {}, references: [], known: { names: ['Ann Hollis'] }, subjectId: 'p-9' };

  it('passes public prompts through untouched', async () => {
    const stage = createDeidStage(settings(), { secret: () => SECRET });
    expect(await stage.apply(ctx(false), instance, 'Ann Hollis 508-555-0187')).toEqual({ ok: true, prompt: plainPrompt('public', 'Ann Hollis 508-555-0187'), spans: 0 });
  });

  it('de-identifies EHR-tier prompts and counts the spans', async () => {
    const stage = createDeidStage(settings(), { secret: () => SECRET });
    const out = await stage.apply(ctx(true), instance, 'Ann Hollis 508-555-0187');
    expect(out.ok).toBe(true);
    if (out.ok) {
      expect(out.prompt.deidentified).toBe(true);
      expect(out.prompt.text).not.toMatch(/Hollis|555-0187/);
      expect(out.spans).toBe(2);
    }
  });

  it('will not pass an EHR-tier prompt through as plain text', () => {
    expect(() => plainPrompt('approval-required', 'Ann Hollis')).toThrow(/only after de-identification/);
  });

  it('blocks a prompt the residual scan objects to, with a named rule', async () => {
    const stage = createDeidStage(settings(), { secret: () => SECRET, detectors: [] });
    expect(await stage.apply(ctx(true), instance, 'SSN 031-44-9182')).toEqual({ ok: false, rule: RESIDUAL_RULE });
  });

  it('fails closed, naming a rule and no text, when de-identification itself fails', async () => {
    const stage = createDeidStage(settings(), {
      secret: () => {
        throw new Error('Ann Hollis secret unavailable');
      },
    });
    expect(await stage.apply(ctx(true), instance, 'Ann Hollis')).toEqual({ ok: false, rule: 'deid.failed' });
  });

  it('has a version that changes with the configuration but not with the secret', () => {
    const v = settingsVersion(settings());
    expect(v).toMatch(/^ehrbench-deid\/[0-9]+:[0-9a-f]{16}$/);
    expect(settingsVersion(settings({ mode: 'tag' }))).not.toBe(v);
    expect(settingsVersion(settings({ maxShiftDays: 30 }))).not.toBe(v);
    expect(settingsVersion(settings({ restrictedZip3: ['036'] }))).not.toBe(v);
    expect(settingsVersion(settings({ secretFile: '/elsewhere' }))).toBe(v);
  });
});

describe('the site secret', () => {
  it('is created once with mode 0600 and read back the same', () => {
    const file = join(tempDir('deid-secret'), 'keys', 'deid-secret.hex');
    const a = loadSecret(file);
    expect(a.length).toBe(32);
    expect(statSync(file).mode & 0o777).toBe(0o600);
    expect(loadSecret(file).equals(a)).toBe(true);
  });

  it('is refused when others can read it', () => {
    const file = join(tempDir('deid-secret'), 'deid-secret.hex');
    writeFileSync(file, 'ab'.repeat(32), { mode: 0o644 });
    expect(() => loadSecret(file)).toThrow(/chmod 600/);
  });
});
