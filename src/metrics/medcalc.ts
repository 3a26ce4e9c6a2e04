/**
 * MedCalc-Bench accuracy. In `corrected` mode the answer type decides: decimals are range-checked
 * between the dataset's Lower and Upper Limit (±5% of the truth), integer scores must equal the truth,
 * gestational ages compare as (weeks, days), dates compare as calendar dates. In `helm` mode HELM's
 * published behaviour is reproduced, including its bug: the `lab` and `dosage` categories (≈35% of
 * the set) never score, because HELM looks for a category named "dosage conversion". Its date rules
 * too: a date must read as `%m/%d/%Y` (strptime: no ISO dates, nothing after the year), a gestational
 * age must start with exactly `('X weeks', 'Y days')` (re.match: plural, one space after the comma,
 * anything may follow).
 */
import type { Instance } from '../catalog';
import type { Metric, ScoreContext } from './types';

const NUMBER = /^[-+]?(\d+(\.\d*)?|\.\d+)([eE][-+]?\d+)?$/;
const GESTATION_TUPLE = /^\(\s*'(\d+) weeks?'\s*,\s*'(\d+) days?'\s*\)$/;

function parseNumber(s: string): number | undefined {
  const t = s.trim();
  return NUMBER.test(t) ? Number(t) : undefined;
}

/** Python's float(): also accepts inf/nan and underscores between digits. */
function pythonFloat(s: string): number | undefined {
  const t = s.trim().toLowerCase();
  if (/^[-+]?(inf|infinity)$/.test(t)) return t.startsWith('-') ? -Infinity : Infinity;
  if (/^[-+]?nan$/.test(t)) return Number.NaN;
  return parseNumber(t.replace(/(\d)_(?=\d)/g, '$1'));
}

/** Days since 1970 for M/D/YYYY or YYYY-MM-DD; undefined for anything else or an impossible date. */
export function parseCalendarDate(s: string): number | undefined {
  const t = s.trim();
  let y: number, m: number, d: number;
  let match = /^(\d{1,2})\/(\d{1,2})\/(\d{4})$/.exec(t);
  if (match) [m, d, y] = [Number(match[1]), Number(match[2]), Number(match[3])];
  else if ((match = /^(\d{4})-(\d{2})-(\d{2})$/.exec(t))) [y, m, d] = [Number(match[1]), Number(match[2]), Number(match[3])];
  else return undefined;
  const date = new Date(Date.UTC(y, m - 1, d));
  if (date.getUTCFullYear() !== y || date.getUTCMonth() !== m - 1 || date.getUTCDate() !== d) return undefined;
  return date.getTime() / 86_400_000;
}

/** Total days of a gestational age written as a tuple, "4 weeks, 2 days", or "(4, 2)". */
export function parseGestation(s: string, strict: boolean): number | undefined {
  const t = s.trim();
  const tuple = GESTATION_TUPLE.exec(t);
  if (tuple) return Number(tuple[1]) * 7 + Number(tuple[2]);
  if (strict) return undefined;
  const weeks = /(\d+)\s*(weeks?|wks?|w)\b/i.exec(t);
  const days = /(\d+)\s*(days?|d)\b/i.exec(t);
  if (weeks || days) return Number(weeks?.[1] ?? 0) * 7 + Number(days?.[1] ?? 0);
  const pair = /^\(?\s*(\d+)\s*,\s*(\d+)\s*\)?$/.exec(t);
  return pair ? Number(pair[1]) * 7 + Number(pair[2]) : undefined;
}

function within(value: number | undefined, lower: number | undefined, upper: number | undefined): number {
  if (value === undefined || lower === undefined || upper === undefined || Number.isNaN(value)) return 0;
  return lower <= value && value <= upper ? 1 : 0;
}

function str(instance: Instance, key: string): string {
  const v = instance.extra?.[key];
  return v === undefined || v === null ? '' : String(v);
}

function scoreDate(prediction: string, instance: Instance, strict: boolean): number {
  const truth = instance.references[0] ?? '';
  if (GESTATION_TUPLE.test(truth.trim())) {
    return within(parseGestation(prediction, strict), parseGestation(str(instance, 'lowerLimit'), true), parseGestation(str(instance, 'upperLimit'), true));
  }
  return within(parseCalendarDate(prediction), parseCalendarDate(str(instance, 'lowerLimit')), parseCalendarDate(str(instance, 'upperLimit')));
}

/**
 * HELM's `re.match(r"\('(\d+) weeks', '(\d+) days'\)", s)`: anchored at the start only, so text after
 * the tuple is accepted; exact spelling otherwise ("1 week" or "('4 weeks','2 days')" is not).
 */
const HELM_GESTATION = /^\('(\d+) weeks', '(\d+) days'\)/;

function helmDuration(s: string): number | undefined {
  const m = HELM_GESTATION.exec(s);
  return m ? Number(m[1]) * 7 + Number(m[2]) : undefined;
}

/**
 * Python's `datetime.strptime(s, "%m/%d/%Y")`: month 1-12 with or without a leading zero, day 1-31 with
 * a leading zero, none, or a leading space, a four-digit year from 0001, the whole string and no more,
 * and a real calendar date. Days since 1970, or undefined where Python raises ValueError.
 */
export function helmStrptimeDate(s: string): number | undefined {
  const m = /^(1[0-2]|0[1-9]|[1-9])\/(3[01]|[12]\d|0[1-9]|[1-9]| [1-9])\/(\d\d\d\d)$/.exec(s);
  if (!m) return undefined;
  const [month, day, year] = [Number(m[1]), Number((m[2] as string).trim()), Number(m[3])];
  if (year < 1) return undefined;
  const date = new Date(Date.UTC(2000, month - 1, day));
  date.setUTCFullYear(year);
  if (date.getUTCFullYear() !== year || date.getUTCMonth() !== month - 1 || date.getUTCDate() !== day) return undefined;
  return date.getTime() / 86_400_000;
}

/** HELM's check_date: the prediction (stripped), the limits as they are in the data. */
function helmDate(answer: string, instance: Instance): number {
  const reference = instance.references[0] ?? '';
  const parse = HELM_GESTATION.test(reference) ? helmDuration : helmStrptimeDate;
  return within(parse(answer), parse(str(instance, 'lowerLimit')), parse(str(instance, 'upperLimit')));
}

function corrected(prediction: string, instance: Instance): number {
  const truth = (instance.references[0] ?? '').trim();
  const outputType = str(instance, 'outputType');
  if (outputType === 'date' || GESTATION_TUPLE.test(truth)) return scoreDate(prediction, instance, false);
  if (outputType === 'decimal') {
    return within(parseNumber(prediction), parseNumber(str(instance, 'lowerLimit')), parseNumber(str(instance, 'upperLimit')));
  }
  // Integer scores (risk, severity, diagnosis): the value must equal the truth.
  const value = parseNumber(prediction);
  const expected = parseNumber(truth);
  return value !== undefined && expected !== undefined && value === expected ? 1 : 0;
}

function helm(prediction: string, instance: Instance): number {
  const category = str(instance, 'category');
  const answer = prediction.trim();
  switch (category) {
    case 'risk':
    case 'severity':
    case 'diagnosis':
      // HELM compares the stripped completion with the reference as it is.
      return answer === (instance.references[0] ?? '') ? 1 : 0;
    case 'physical':
    case 'dosage conversion':
      return within(pythonFloat(answer), pythonFloat(str(instance, 'lowerLimit')), pythonFloat(str(instance, 'upperLimit')));
    case 'date':
      return helmDate(answer, instance);
    default:
      return 0; // HELM's bug: `lab` and `dosage` fall through here.
  }
}

export const medcalcAccuracy: Metric = {
  name: 'medcalc_bench_accuracy',
  lowerIsBetter: false,
  score: (prediction: string, instance: Instance, ctx: ScoreContext) => (ctx.mode === 'helm' ? helm(prediction, instance) : corrected(prediction, instance)),
};
