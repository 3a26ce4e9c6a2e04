/**
 * The text of an SVG document, shared by every picture: the XML escape, number formatting, the root
 * element with its accessible name (role="img", <title>, <desc>), and colours whose text meets WCAG AA.
 * Presentation attributes only (fill, stroke, font-size, font-family): no style attribute, no <style>
 * element, no script, no reference to anything outside the document.
 */

/**
 * Text and attribute values for XML: the five markup characters become entities, and characters
 * XML 1.0 does not allow (controls, lone surrogates, U+FFFE/U+FFFF) become U+FFFD, so no name can
 * break the document or inject markup.
 */
export function xmlEscape(text: string): string {
  return text
    .replace(/[^\u0009\u000A\u000D\u0020-\uD7FF\uE000-\uFFFD\u{10000}-\u{10FFFF}]/gu, '\uFFFD')
    .replace(/&/g, '&amp;')
    .replace(/</g, '&lt;')
    .replace(/>/g, '&gt;')
    .replace(/"/g, '&quot;')
    .replace(/'/g, '&apos;');
}

export const FONT_FAMILY = 'Helvetica, Arial, sans-serif';
export const FONT_SIZE = 11;
/** Average advance of 11px sans-serif, for layout only. */
export const CHAR_W = 6.6;
/** Text on white: 17:1. */
export const INK = '#1a1a1a';
/** Secondary text on white: 7:1. */
export const MUTED = '#595959';
export const GRID = '#d9d9d9';

/** A coordinate or length: whole numbers as they are, others to one decimal. */
export function num(n: number): string {
  if (!Number.isFinite(n)) return '0';
  const r = Math.round(n * 10) / 10;
  return Number.isInteger(r) ? String(r) : r.toFixed(1);
}

/** A number from the caller, or null when it is missing or not finite (NaN never reaches a picture). */
export function finite(n: number | null | undefined): number | null {
  return typeof n === 'number' && Number.isFinite(n) ? n : null;
}

/** A text element: the content is escaped here, the attributes are the caller's (numbers, constants). */
export function text(x: number, y: number, content: string, attrs = ''): string {
  return `<text x="${num(x)}" y="${num(y)}"${attrs ? ` ${attrs}` : ''}>${xmlEscape(content)}</text>`;
}

/** The width `s` takes at the picture's font, for layout. */
export function textWidth(s: string, size = FONT_SIZE): number {
  return [...s].length * CHAR_W * (size / FONT_SIZE);
}

export interface Frame {
  width: number;
  height: number;
  /** The picture's accessible name (its <title>) and heading. */
  title: string;
  /** What the picture shows, in words (its <desc>), for a screen reader. */
  desc: string;
}

/** The standalone document: prolog, root with role="img", <title>, <desc>, a white ground, the body. */
export function svgDocument(frame: Frame, body: string[]): string {
  const w = num(frame.width);
  const h = num(frame.height);
  return (
    [
      '<?xml version="1.0" encoding="UTF-8"?>',
      `<svg xmlns="http://www.w3.org/2000/svg" version="1.1" role="img" width="${w}" height="${h}" viewBox="0 0 ${w} ${h}" font-family="${FONT_FAMILY}" font-size="${FONT_SIZE}" fill="${INK}">`,
      `<title>${xmlEscape(frame.title)}</title>`,
      `<desc>${xmlEscape(frame.desc)}</desc>`,
      `<rect width="100%" height="100%" fill="#ffffff"/>`,
      text(12, 22, frame.title, 'font-size="14" font-weight="bold"'),
      ...body,
      '</svg>',
    ].join('\n') + '\n'
  );
}

/** The picture of no data: the title and a sentence saying so, still a valid document. */
export function noDataSvg(title: string, why: string, next?: string): string {
  // Why there is nothing, and what would make something: "No data" alone left the reader stuck.
  const lines = [`No data: ${why}`, ...(next ? [next] : [])];
  const width = Math.max(360, Math.min(900, Math.max(textWidth(title, 14), ...lines.map((l) => textWidth(l))) + 24));
  return svgDocument(
    { width, height: 50 + 20 * lines.length, title, desc: lines.join('. ') },
    lines.map((l, i) => text(12, 50 + 20 * i, l, `fill="${MUTED}"`)),
  );
}

/** Relative luminance of a #rrggbb colour (WCAG 2.x). */
export function luminance(hex: string): number {
  const m = /^#([0-9a-f]{2})([0-9a-f]{2})([0-9a-f]{2})$/i.exec(hex);
  if (!m) throw new Error(`not a #rrggbb colour: ${hex}`);
  const [r, g, b] = [m[1], m[2], m[3]].map((c) => {
    const v = parseInt(c as string, 16) / 255;
    return v <= 0.03928 ? v / 12.92 : ((v + 0.055) / 1.055) ** 2.4;
  }) as [number, number, number];
  return 0.2126 * r + 0.7152 * g + 0.0722 * b;
}

/** WCAG contrast ratio of two #rrggbb colours, 1 to 21. */
export function contrastRatio(a: string, b: string): number {
  const [hi, lo] = [luminance(a), luminance(b)].sort((x, y) => y - x) as [number, number];
  return (hi + 0.05) / (lo + 0.05);
}

/** Black or white, whichever reads better on `fill`: at least 4.5:1 (WCAG AA) on any colour. */
export function inkOn(fill: string): '#000000' | '#ffffff' {
  return contrastRatio('#ffffff', fill) >= contrastRatio('#000000', fill) ? '#ffffff' : '#000000';
}

/**
 * Colours of series (models, outcomes), each at least 3:1 against white (WCAG 1.4.11 for graphics);
 * a series is always named by text in INK next to it, never by its colour alone.
 */
export const SERIES = ['#0b5fa5', '#b54a00', '#1b7837', '#8e3a8e', '#5c5c5c', '#9c6b00', '#00707a', '#b2182b'] as const;

export function seriesColour(i: number): string {
  return SERIES[i % SERIES.length] as string;
}

/** A round step for axis ticks: 1, 2 or 5 times a power of ten, giving about `count` ticks up to `max`. */
export function niceStep(max: number, count = 5): number {
  if (!(max > 0)) return 1;
  const raw = max / count;
  const p = 10 ** Math.floor(Math.log10(raw));
  const f = raw / p;
  return (f <= 1 ? 1 : f <= 2 ? 2 : f <= 5 ? 5 : 10) * p;
}

/** Breaks `s` into lines of at most `max` characters at spaces (a longer word stays whole). */
export function wrap(s: string, max: number): string[] {
  const lines: string[] = [];
  let line = '';
  for (const word of s.split(/\s+/).filter(Boolean)) {
    if (line && line.length + 1 + word.length > max) {
      lines.push(line);
      line = word;
    } else line = line ? `${line} ${word}` : word;
  }
  if (line || lines.length === 0) lines.push(line);
  return lines;
}
