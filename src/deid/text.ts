/** Word tokens with their shape, for the name and place detectors. */

export type Shape = 'initial' | 'upper' | 'title' | 'lower';

export interface Token {
  start: number;
  /** End of the word, without a possessive 's. */
  end: number;
  text: string;
  lower: string;
  shape: Shape;
  possessive: boolean;
  /** Index of the token in the token list. */
  index: number;
}

function isLetter(c: number): boolean {
  return (c >= 97 && c <= 122) || (c >= 65 && c <= 90) || (c >= 0xc0 && c <= 0x24f && c !== 0xd7 && c !== 0xf7);
}

function isUpper(c: number): boolean {
  return (c >= 65 && c <= 90) || (c >= 0xc0 && c <= 0xde && c !== 0xd7);
}

function shapeOf(text: string, start: number, end: number): Shape {
  const first = text.charCodeAt(start);
  if (!isUpper(first)) return 'lower';
  if (end - start === 1) return 'initial';
  let lowers = 0;
  let lastLower = -1;
  for (let i = start + 1; i < end; i++) {
    const c = text.charCodeAt(i);
    if (isLetter(c) && !isUpper(c)) {
      lowers++;
      lastLower = i;
    }
  }
  if (lowers === 0) return 'upper';
  // MIs, ANAs, CXRs: plural acronyms
  if (lowers === 1 && lastLower === end - 1 && text.charCodeAt(end - 1) === 115 && end - start >= 3 && isUpper(text.charCodeAt(end - 2))) return 'upper';
  return 'title';
}

/** Words: letters, with apostrophes and hyphens inside ("O'Brien", "Abernathy-Quist"). A scanner, not a regex: it runs on every prompt. */
export function tokenize(text: string): Token[] {
  const tokens: Token[] = [];
  const n = text.length;
  let i = 0;
  while (i < n) {
    if (!isLetter(text.charCodeAt(i))) {
      i++;
      continue;
    }
    const start = i;
    i++;
    for (;;) {
      if (i < n && isLetter(text.charCodeAt(i))) {
        i++;
        continue;
      }
      const c = text.charCodeAt(i);
      if ((c === 39 || c === 0x2019 || c === 45) && i + 1 < n && isLetter(text.charCodeAt(i + 1))) {
        i += 2;
        continue;
      }
      break;
    }
    let end = i;
    let possessive = false;
    const q = text.charCodeAt(end - 2);
    if (end - start > 3 && (q === 39 || q === 0x2019) && (text.charCodeAt(end - 1) === 115 || text.charCodeAt(end - 1) === 83)) {
      end -= 2;
      possessive = true;
    }
    const word = text.slice(start, end);
    tokens.push({ start, end, text: word, lower: word.toLowerCase(), shape: shapeOf(text, start, end), possessive, index: tokens.length });
  }
  return tokens;
}

/** Whether most letters are capitals: ICU shorthand written in ALL CAPS, where case says nothing. */
export function isAllCaps(text: string): boolean {
  let upper = 0;
  let lower = 0;
  for (let i = 0; i < text.length; i++) {
    const c = text.charCodeAt(i);
    if (c >= 65 && c <= 90) upper++;
    else if (c >= 97 && c <= 122) lower++;
  }
  return upper + lower > 20 && upper > 3 * lower;
}

/** Whether the token starts a sentence or a line (capitalisation there says little). */
export function sentenceInitial(text: string, token: Token): boolean {
  for (let i = token.start - 1; i >= 0; i--) {
    const c = text.charAt(i);
    if (c === ' ' || c === '\t' || c === '"' || c === '(' || c === '*' || c === '-') continue;
    return c === '.' || c === '!' || c === '?' || c === '\n' || c === ':' || c === '\r';
  }
  return true;
}

/** The text between two tokens. */
export function gap(text: string, a: Token, b: Token): string {
  return text.slice(a.end, b.start);
}
