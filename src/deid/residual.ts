/**
 * The residual scan: the last look at a de-identified prompt before it may leave. Outside the
 * replacements it looks for known identifiers and for identifiers whose shape is unmistakable: an
 * SSN with any one separator (or split by a line wrap), an e-mail address (also spelled out: "jo dot
 * kerr at mail dot com"), a URL, a North American phone number in any of its written forms, an
 * international number, an IP address, a labelled MRN, a full date (month or day first, dotted or
 * slashed, ISO, with a month name). Inside the replacements it checks that no surrogate happens to be a
 * real known identifier. The text is folded first (normalize.ts), so full-width digits, zero-width
 * characters and look-alike letters hide nothing; findings are offsets into the text as given.
 * Anything found blocks the prompt (fail closed). Findings carry a type and offsets only, never text.
 */
import { cards, coordinates, hosts } from './detect/shapes';
import type { KnownMatcher } from './known';
import { foreignRuns } from './scripts';
import { fold, originalRange } from './normalize';
import type { SpanType } from './types';

export interface Finding {
  type: SpanType;
  start: number;
  end: number;
}

const DAY = '(?:0?[1-9]|[12]\\d|3[01])';
const MONTH = '(?:0?[1-9]|1[0-2])';
const WRAP = '[ \\t]?(?:\\n[ \\t]*)?';

/** Each shape, and what a text must hold for the shape to be in it (digits, when not said). */
const HIGH_PRECISION: [SpanType, RegExp, RegExp?][] = [
  ['SSN', new RegExp(`(?<![\\w./-])\\d{3}([ ./-])${WRAP}\\d{2}\\1${WRAP}\\d{4}(?![\\w-]|[./]\\d)`, 'g')],
  ['SSN', new RegExp(`(?<![\\w./-])\\d{3}-${WRAP}\\d{2}-${WRAP}\\d{4}(?![\\w-])`, 'g')],
  // anchored on "@" so a long run of letters is not rescanned from every position
  ['EMAIL', /(?<![A-Za-z0-9._%+-])[A-Za-z0-9._%+-]{1,64}@[A-Za-z0-9.-]{1,253}\.[A-Za-z]{2,}/g, /@/],
  [
    'EMAIL',
    /(?<![\w.-])[a-z0-9][a-z0-9._-]{0,40}\s*(?:\[at\]|\(at\)|\{at\}|\bat\b)\s*[a-z0-9-]{1,40}(?:\s*(?:\.|\bdot\b|\[dot\]|\(dot\))\s*[a-z0-9-]{1,40}){0,3}\s*(?:\bdot\b|\[dot\]|\(dot\))\s*(?:com|net|org|edu|gov|io|co|us|uk|ca|de|info|biz)\b/gi,
    /\bdot\b|\[dot\]|\(dot\)/i,
  ],
  ['URL', /\b(?:https?|ftp):\/\/[^\s<>"')\]]+|\bwww\.[a-z0-9-]+\.[a-z]{2,}/gi, /:\/\/|www\./i],
  ['PHONE', new RegExp(`(?<![\\w-])(?:\\+?1[\\s.-]?)?(?:\\(\\d{3}\\)${WRAP}|\\d{3}[ \\t]?[./-]${WRAP})\\d{3}[ \\t]?[.-]${WRAP}\\d{4}(?![\\w-]|\\.\\d)`, 'g')],
  ['PHONE', /(?<![\w-])\(\d{3}\)\d{7}(?![\w-])/g],
  ['PHONE', /(?<![\w+])\+[1-9]\d{0,2}[ .-](?:\(0\)[ ]?)?\d{1,5}(?:[ .-]\d{2,6}){1,4}(?![\w-]|\.\d)/g, /\+\d/],
  ['IP', /(?<![\d.])(?:(?:25[0-5]|2[0-4]\d|1\d\d|[1-9]?\d)\.){3}(?:25[0-5]|2[0-4]\d|1\d\d|[1-9]?\d)(?!\d|\.\d)/g, /\d\.\d{1,3}\.\d/],
  ['MRN', /\b(?:MRN|MR#|Medical Record (?:Number|No\.?|#))\s*[:#]?\s*[A-Z0-9-]*\d{3,}(?![\d.]*\.\d)/gi, /\bm(?:rn|r#|edical record)/i],
  // a full date, month first or day first, with a two- or four-digit year
  // a line wrap may fall after either separator ("03/14/" and "1931" on the next line)
  ['DATE', new RegExp(`(?<![\\d/.-])${MONTH}([/.-])${WRAP}${DAY}\\1(?:\\d{4}|\\d{2}|[ \\t]*\\n[ \\t]*\\d{4})(?![\\d/]|\\.\\d)`, 'g')],
  ['DATE', new RegExp(`(?<![\\d/.-])${DAY}([/.-])${WRAP}${MONTH}\\1(?:\\d{4}|\\d{2}|[ \\t]*\\n[ \\t]*\\d{4})(?![\\d/]|\\.\\d)`, 'g')],
  ['DATE', /(?<![\d/.-])(?:18|19|20|21)\d\d[-/.](?:0[1-9]|1[0-2])[-/.](?:0[1-9]|[12]\d|3[01])(?!\d)/g],
  ['DATE', /\b(?:Jan|Feb|Mar|Apr|May|Jun|Jul|Aug|Sep|Sept|Oct|Nov|Dec)[a-z]*\.?\s+\d{1,2}(?:st|nd|rd|th)?,?\s+\d{4}\b/gi, /\d{4}/],
  ['DATE', /\b\d{1,2}(?:st|nd|rd|th)?\s+(?:of\s+)?(?:Jan|Feb|Mar|Apr|May|Jun|Jul|Aug|Sep|Sept|Oct|Nov|Dec)[a-z]*\.?,?\s+\d{4}\b/gi, /\d{4}/],
];

export function residualScan(text: string, regions: { start: number; end: number }[], known: KnownMatcher): Finding[] {
  const folded = fold(text);
  const view = folded.text;
  const findings: Finding[] = [];
  const inside = (s: number, e: number) => regions.some((r) => s >= r.start && e <= r.end);
  const touches = (s: number, e: number) => regions.some((r) => s < r.end && e > r.start);
  const back = (s: number, e: number) => originalRange(folded, s, e);
  const digits = /\d/.test(view);
  for (const [type, re, needs] of HIGH_PRECISION) {
    // a shape is looked for only in a text that has what it cannot do without (digits, an "@"...)
    if (needs ? !needs.test(view) : !digits) continue;
    re.lastIndex = 0;
    for (const m of view.matchAll(re)) {
      const { start, end } = back(m.index, m.index + m[0].length);
      if (touches(start, end)) continue;
      // a date shape is a date only if its numbers are one ("13/45/2021" is not)
      if (type === 'DATE' && !plausibleDate(m[0])) continue;
      findings.push({ type, start, end });
    }
  }
  // Shapes shared with the detectors: hosts without a scheme, card numbers, coordinates, other-script words.
  const shapes: [SpanType, [number, number][]][] = [
    ['URL', hosts(view)],
    ['ACCOUNT', digits ? cards(view) : []],
    ['LOCATION', digits ? coordinates(view) : []],
    ['NAME', foreignRuns(view)],
  ];
  for (const [type, ranges] of shapes) {
    for (const [s, e] of ranges) {
      const { start, end } = back(s, e);
      if (!touches(start, end)) findings.push({ type, start, end });
    }
  }
  // Known identifiers anywhere: a leftover outside, or a surrogate that equals a real identifier inside.
  for (const d of known.find(view)) {
    const { start, end } = back(d.start, d.end);
    if (inside(start, end)) {
      // A shifted date that happens to read like a known one stands for another date; a fake name
      // counts only if it is exactly a real name part.
      if (d.type === 'DATE') continue;
      if (d.type === 'NAME' && !(d.canonical && isExactKnown(view.slice(d.start, d.end), d.canonical))) continue;
    }
    findings.push({ type: d.type, start, end });
  }
  // two shapes of one kind may match the same characters: report each place once
  const seen = new Set<string>();
  return findings.filter((f) => {
    const key = `${f.type}:${f.start}:${f.end}`;
    if (seen.has(key)) return false;
    seen.add(key);
    return true;
  });
}

function plausibleDate(s: string): boolean {
  const nums = s.match(/\d+/g);
  if (!nums || nums.length < 3) return true; // month-name forms
  const [a, b] = [Number(nums[0]), Number(nums[1])];
  if (String(nums[0]).length === 4) return b >= 1 && b <= 12;
  return (a >= 1 && a <= 12 && b >= 1 && b <= 31) || (b >= 1 && b <= 12 && a >= 1 && a <= 31);
}

/** Inside a surrogate, only an exact known name counts (a fake one edit away from a real name is not the name). */
function isExactKnown(value: string, canonical: string[]): boolean {
  return canonical.includes(value.toLowerCase());
}
