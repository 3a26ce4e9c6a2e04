/**
 * Site lexicons: a hospital's staff roster, facilities, local places and streets (config
 * deid.siteLexicons), found in every record in any case and with one-edit misspellings, hashed into the
 * de-identification version, validated line by line. Every name and place here is invented.
 */
import { existsSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { loadConfig } from '../../src/config';
import { Deidentifier, defaultSettings, type DeidSettings, settingsFrom, settingsVersion, type Span } from '../../src/deid';
import { UserError } from '../../src/errors';
import { initHome } from '../../src/setup/init';
import { tempDir } from '../helpers/db';

function covered(text: string, part: string, spans: Span[]): boolean {
  const at = text.indexOf(part);
  if (at < 0) throw new Error(`test text lacks ${part}`);
  for (let i = at; i < at + part.length; i++) if (/[A-Za-z0-9]/.test(text.charAt(i)) && !spans.some((s) => s.start <= i && i < s.end)) return false;
  return true;
}

function withLexicons(files: Record<string, string>): { deid: Deidentifier; settings: DeidSettings; dir: string } {
  const dir = tempDir('site-lexicons');
  const siteLexicons: Record<string, string> = {};
  for (const [kind, content] of Object.entries(files)) {
    const file = join(dir, `${kind}.txt`);
    writeFileSync(file, content);
    siteLexicons[kind] = file;
  }
  const settings: DeidSettings = { ...defaultSettings('/nonexistent/secret'), siteLexicons };
  return { deid: new Deidentifier(settings, () => Buffer.alloc(32, 2)), settings, dir };
}

const ROSTER = '# staff\nAnn Kowalczyk\nDESROCHERS, PIERRE\nTobiah Vanterpool-Ng\n';
const FACILITIES = 'Larchmere Manor\nthe Pines\nWCH\n';
const PLACES = 'Pell Harbor\nQuonnipaug\n';
const STREETS = 'Tanager Road\n';

describe('site lexicons', () => {
  const { deid } = withLexicons({ staff: ROSTER, facilities: FACILITIES, places: PLACES, streets: STREETS });
  const plain = new Deidentifier(defaultSettings('/nonexistent/secret'), () => Buffer.alloc(32, 2));

  it.each([
    ['a staff surname alone, in lowercase', 'spoke w/ kowalczyk about the plan', 'kowalczyk'],
    ['a staff name misspelt', 'Desrocher aware of the K', 'Desrocher'],
    ['a staff name in capitals', 'CALLED VANTERPOOL-NG, NO ANSWER', 'VANTERPOOL-NG'],
    ['a facility without any cue', 'Larchmere Manor faxed the MAR', 'Larchmere Manor'],
    ['a facility acronym', 'records requested from WCH', 'WCH'],
    ['a town', 'son drives up from Quonnipaug on weekends', 'Quonnipaug'],
    ['a two-word town', 'she grew up in Pell Harbor', 'Pell Harbor'],
    ['a street', 'lives on Tanager Road with her sister', 'Tanager Road'],
  ])('finds %s', (_label, text, part) => {
    expect(covered(text, part, deid.find(text))).toBe(true);
  });

  it('finds what the detectors alone miss (the entries are chosen so)', () => {
    for (const [text, part] of [
      ['plan: desrocher to round at 10', 'desrocher'],
      ['discharged back to Pines today', 'Pines'],
      ['Quonnipaug ferry late again', 'Quonnipaug'],
    ] as const) {
      expect({ text, plain: covered(text, part, plain.find(text)), site: covered(text, part, deid.find(text)) }).toEqual({ text, plain: false, site: true });
    }
  });

  it('a roster word that is also a common word counts only where it is capitalised', () => {
    const { deid: d } = withLexicons({ staff: 'Hope Marsh\n' });
    expect(d.find('no hope of weaning today, marsh gas smell')).toEqual([]);
    expect(covered('Hope aware, per Marsh', 'Hope', d.find('Hope aware, per Marsh'))).toBe(true);
  });

  it('changes the de-identification version when a list changes', () => {
    const a = withLexicons({ staff: ROSTER });
    const before = settingsVersion(a.settings);
    writeFileSync(a.settings.siteLexicons?.staff as string, ROSTER + 'Oriel Szabo-Banda\n');
    expect(settingsVersion(a.settings)).not.toBe(before);
    expect(settingsVersion(defaultSettings('/x'))).not.toBe(before);
  });

  it.each([
    ['a line without a letter', 'Ann Kowalczyk\n12345\n', /staff\.txt: line 2 has no letter/],
    ['a control character', 'Ann\u0007Kowalczyk\n', /staff\.txt: line 1 holds a control character/],
    ['a line too long', `${'A'.repeat(201)}\n`, /staff\.txt: line 1 is longer than 200 characters/],
  ])('refuses %s, naming the file and line and never the entry', (_label, content, message) => {
    try {
      withLexicons({ staff: content });
      throw new Error('expected an error');
    } catch (err) {
      expect(err).toBeInstanceOf(UserError);
      expect((err as Error).message).toMatch(message);
      expect((err as Error).message).not.toContain('Kowalczyk');
    }
  });

  it('a configured file that is missing is an error naming it and the setting', () => {
    const settings: DeidSettings = { ...defaultSettings('/nonexistent/secret'), siteLexicons: { facilities: '/nonexistent/facilities.txt' } };
    expect(() => new Deidentifier(settings, () => Buffer.alloc(32))).toThrow(/\/nonexistent\/facilities\.txt: cannot read the facilities lexicon .*deid\.siteLexicons\.facilities/);
  });

  it('ehrbench init writes empty lists with a header, and the configuration points at them', () => {
    const home = tempDir('site-lexicons-init');
    initHome({ home });
    const config = loadConfig({ file: join(home, 'config.json') });
    for (const kind of ['staff', 'facilities', 'places', 'streets'] as const) {
      const file = config.deid.siteLexicons?.[kind] as string;
      expect(file).toBe(join(home, 'lexicons', `${kind}.txt`));
      expect(existsSync(file)).toBe(true);
      expect(
        readFileSync(file, 'utf8')
          .split('\n')
          .filter((l) => l && !l.startsWith('#')),
      ).toEqual([]);
    }
    // an empty list adds nothing and breaks nothing
    const d = new Deidentifier(settingsFrom(config.deid), () => Buffer.alloc(32));
    expect(d.find('Pt resting comfortably.')).toEqual([]);
  });
});

describe('site lexicon entries that are ordinary words need a cue', () => {
  const { deid } = withLexicons({ staff: 'Will Okafor # seen 4\nHope\nMo # seen 2; needs a cue\n', facilities: 'LMC # seen 14\nLakeside\n' });

  it.each([
    ['a staff first name that is a word, after a role', 'RN will at bedside, aware of plan', 'will'],
    ['the same after a hand-off', 'report given to hope on the floor', 'hope'],
    ['a two-letter name after a role', 'coordinator Mo met w/ family', 'Mo'],
    ['the whole entry, without a cue', 'will okafor drew the labs', 'will okafor'],
    ['an acronym written in capitals, without a cue', 'LMC faxed the records', 'LMC'],
    ['a facility word after a place cue', 'transferred from Lakeside this am', 'Lakeside'],
  ])('finds %s', (_label, text, part) => {
    expect(covered(text, part, deid.find(text))).toBe(true);
  });

  it.each([
    ['the word as a verb', 'pt will need a PT eval tomorrow', 'will'],
    ['the word as a noun', 'family has hope for recovery', 'hope'],
    ['the word capitalised at a sentence start', 'Hope is the family word today.', 'Hope'],
    ['an acronym entry in lowercase', 'lmc was the old name of the unit', 'lmc'],
  ])('leaves %s', (_label, text, part) => {
    const at = text.indexOf(part);
    expect(deid.find(text).some((s) => s.start < at + part.length && at < s.end)).toBe(false);
  });
});
