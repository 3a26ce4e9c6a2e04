/**
 * The residual scan: the last look at a de-identified prompt before it may leave. Outside the
 * replacements it looks for known identifiers and for identifiers whose shape is unmistakable (SSN,
 * e-mail, URL, formatted phone, IP address, labelled MRN, a full date); inside them it checks that no
 * surrogate happens to be a real known identifier. Anything found blocks the prompt (fail closed).
 * Findings carry a type and offsets only, never text.
 */
import type { KnownMatcher } from './known';
import type { SpanType } from './types';

export interface Finding {
  type: SpanType;
  start: number;
  end: number;
}

const HIGH_PRECISION: [SpanType, RegExp][] = [
  ['SSN', /(?<![\w-])\d{3}-\d{2}-\d{4}(?![\w-])/g],
  // anchored on "@" so a long run of letters is not rescanned from every position
  ['EMAIL', /(?<![A-Za-z0-9._%+-])[A-Za-z0-9._%+-]{1,64}@[A-Za-z0-9.-]{1,253}\.[A-Za-z]{2,}/g],
  ['URL', /\b(?:https?|ftp):\/\/[^\s<>"')\]]+|\bwww\.[a-z0-9-]+\.[a-z]{2,}/gi],
  ['PHONE', /(?<![\w-])(?:\(\d{3}\)\s?|\d{3}[.-])\d{3}[.-]\d{4}(?![\w-])/g],
  ['IP', /(?<![\d.])(?:(?:25[0-5]|2[0-4]\d|1\d\d|[1-9]?\d)\.){3}(?:25[0-5]|2[0-4]\d|1\d\d|[1-9]?\d)(?!\d|\.\d)/g],
  ['MRN', /\b(?:MRN|MR#|Medical Record (?:Number|No\.?|#))\s*[:#]?\s*[A-Z0-9-]*\d{3,}/gi],
  ['DATE', /(?<![\d/.-])(?:0?[1-9]|1[0-2])[/-](?:0?[1-9]|[12]\d|3[01])[/-](?:\d{4}|\d{2})(?![\d/])/g],
  ['DATE', /(?<![\d/.-])(?:18|19|20|21)\d\d-(?:0[1-9]|1[0-2])-(?:0[1-9]|[12]\d|3[01])(?!\d)/g],
  ['DATE', /\b(?:Jan|Feb|Mar|Apr|May|Jun|Jul|Aug|Sep|Sept|Oct|Nov|Dec)[a-z]*\.?\s+\d{1,2}(?:st|nd|rd|th)?,?\s+\d{4}\b/g],
];

export function residualScan(text: string, regions: { start: number; end: number }[], known: KnownMatcher): Finding[] {
  const findings: Finding[] = [];
  const inside = (s: number, e: number) => regions.some((r) => s < r.end && e > r.start && s >= r.start && e <= r.end);
  const touches = (s: number, e: number) => regions.some((r) => s < r.end && e > r.start);
  for (const [type, re] of HIGH_PRECISION) {
    re.lastIndex = 0;
    for (const m of text.matchAll(re)) {
      const s = m.index;
      const e = s + m[0].length;
      if (touches(s, e)) continue;
      findings.push({ type, start: s, end: e });
    }
  }
  // Known identifiers anywhere: a leftover outside, or a surrogate that equals a real identifier inside.
  for (const d of known.find(text)) {
    if (inside(d.start, d.end)) {
      // A shifted date that happens to read like a known one stands for another date; a fake name
      // counts only if it is exactly a real name part.
      if (d.type === 'DATE') continue;
      if (d.type === 'NAME' && !(d.canonical && isExactKnown(text.slice(d.start, d.end), d.canonical))) continue;
    }
    findings.push({ type: d.type, start: d.start, end: d.end });
  }
  return findings;
}

/** Inside a surrogate, only an exact known name counts (a fake one edit away from a real name is not the name). */
function isExactKnown(value: string, canonical: string[]): boolean {
  return canonical.includes(value.toLowerCase());
}
