/**
 * The report's HTML: one self-contained page (inline CSS, the pictures as inline SVG), with no script
 * and nothing fetched from anywhere (a Content-Security-Policy meta of default-src 'none' says so to
 * the browser as well). Every string from the data passes through xmlEscape.
 */
import { xmlEscape } from '../pictures';

export const esc = xmlEscape;

const CSS = `
body { font-family: Helvetica, Arial, sans-serif; color: #1a1a1a; background: #ffffff; margin: 2rem auto; max-width: 60rem; padding: 0 1rem; line-height: 1.4; }
h1 { font-size: 1.5rem; margin-bottom: 0.25rem; }
h2 { font-size: 1.2rem; margin-top: 2rem; border-bottom: 1px solid #bdbdbd; padding-bottom: 0.2rem; }
h3 { font-size: 1rem; margin-top: 1.5rem; }
p.lead { color: #4a4a4a; margin-top: 0; }
p.note { color: #4a4a4a; font-size: 0.9rem; }
p.warning { border: 2px solid #b35806; padding: 0.5rem 0.75rem; font-weight: bold; }
table { border-collapse: collapse; margin: 0.5rem 0 1rem; }
th, td { border: 1px solid #bdbdbd; padding: 0.25rem 0.6rem; text-align: left; vertical-align: top; }
th { background: #f0f0f0; }
td.num { text-align: right; font-variant-numeric: tabular-nums; }
dl { display: grid; grid-template-columns: max-content 1fr; gap: 0.2rem 1rem; }
dt { font-weight: bold; }
dd { margin: 0; }
code { font-family: Menlo, Consolas, monospace; font-size: 0.9em; }
figure { margin: 1rem 0; overflow-x: auto; }
figure svg { max-width: 100%; height: auto; }
figcaption { color: #4a4a4a; font-size: 0.9rem; }
footer { margin-top: 3rem; color: #4a4a4a; font-size: 0.85rem; }
@media print { body { margin: 0; max-width: none; } figure { break-inside: avoid; } }
`;

/** A picture's SVG document as an element of the page: no XML prolog, no namespace (HTML gives it). */
export function inlineSvg(svg: string): string {
  return svg.replace(/^<\?xml[^>]*\?>\s*/, '').replace(/^<svg xmlns="http:\/\/www\.w3\.org\/2000\/svg" version="1\.1"/, '<svg');
}

export function figure(svg: string, caption: string): string {
  return `<figure>${inlineSvg(svg)}<figcaption>${esc(caption)}</figcaption></figure>`;
}

/** Rows of cells (already escaped HTML); cells that are numbers are right-aligned. */
export function table(head: string[], rows: (string | number)[][]): string {
  const cell = (c: string | number) => (typeof c === 'number' ? `<td class="num">${esc(String(c))}</td>` : `<td>${c}</td>`);
  return `<table><thead><tr>${head.map((h) => `<th scope="col">${esc(h)}</th>`).join('')}</tr></thead><tbody>${rows.map((r) => `<tr>${r.map(cell).join('')}</tr>`).join('')}</tbody></table>`;
}

/** A definition list of (term, escaped HTML) pairs; pairs whose value is null are left out. */
export function facts(pairs: [string, string | null][]): string {
  return `<dl>${pairs
    .filter((p): p is [string, string] => p[1] !== null)
    .map(([k, v]) => `<dt>${esc(k)}</dt><dd>${v}</dd>`)
    .join('')}</dl>`;
}

export function page(title: string, body: string[]): string {
  return [
    '<!DOCTYPE html>',
    '<html lang="en">',
    '<head>',
    '<meta charset="utf-8">',
    `<meta http-equiv="Content-Security-Policy" content="default-src 'none'; style-src 'unsafe-inline'">`,
    '<meta name="viewport" content="width=device-width, initial-scale=1">',
    `<title>${esc(title)}</title>`,
    `<style>${CSS}</style>`,
    '</head>',
    '<body>',
    '<main>',
    ...body,
    '</main>',
    '</body>',
    '</html>',
    '',
  ].join('\n');
}

export function score(v: number | null | undefined): string {
  return typeof v === 'number' && Number.isFinite(v) ? v.toFixed(3) : '-';
}
