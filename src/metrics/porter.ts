/**
 * The Porter stemmer as NLTK implements it in its default NLTK_EXTENSIONS mode
 * (nltk.stem.porter.PorterStemmer), which is what rouge_score stems with, so ROUGE here counts the same
 * tokens as HELM's. It departs from Porter's 1980 paper (and from the `stemmer` package) where NLTK
 * does: a short list of irregular forms (dying -> die, skies -> sky, news, innings, proceed ...);
 * four-letter -ies/-ied words keep "ie" (dies -> die, tied -> tie); y -> i only after a consonant that
 * is not the first letter (days -> day, eyes -> eye); a two-letter stem of vowel + consonant counts as
 * cvc; -alli is reduced before the other step-2 rules; and the -fulli and -logi rules. Checked
 * against NLTK on every ACI-Bench word (tests/fixtures/porter).
 */

/** NLTK's irregular forms: the form -> its stem, used as is. */
const IRREGULAR: Record<string, string> = {
  sky: 'sky',
  skies: 'sky',
  dying: 'die',
  lying: 'lie',
  tying: 'tie',
  news: 'news',
  innings: 'inning',
  inning: 'inning',
  outings: 'outing',
  outing: 'outing',
  cannings: 'canning',
  canning: 'canning',
  howe: 'howe',
  proceed: 'proceed',
  exceed: 'exceed',
  succeed: 'succeed',
};

const VOWELS = new Set(['a', 'e', 'i', 'o', 'u']);

function isConsonant(word: string, i: number): boolean {
  const c = word[i] as string;
  if (VOWELS.has(c)) return false;
  if (c === 'y') return i === 0 ? true : !isConsonant(word, i - 1);
  return true;
}

/** m in [C](VC)^m[V]: the number of vowel-consonant transitions. */
function measure(stem: string): number {
  let m = 0;
  for (let i = 1; i < stem.length; i++) if (!isConsonant(stem, i - 1) && isConsonant(stem, i)) m++;
  return m;
}

function containsVowel(stem: string): boolean {
  for (let i = 0; i < stem.length; i++) if (!isConsonant(stem, i)) return true;
  return false;
}

function endsDoubleConsonant(word: string): boolean {
  const n = word.length;
  return n >= 2 && word[n - 1] === word[n - 2] && isConsonant(word, n - 1);
}

/** *o: consonant-vowel-consonant, the last not w, x or y; NLTK also takes a two-letter vowel-consonant word. */
function endsCvc(word: string): boolean {
  const n = word.length;
  const cvc = n >= 3 && isConsonant(word, n - 3) && !isConsonant(word, n - 2) && isConsonant(word, n - 1) && !['w', 'x', 'y'].includes(word[n - 1] as string);
  return cvc || (n === 2 && !isConsonant(word, 0) && isConsonant(word, 1));
}

/** [suffix, replacement, condition on the stem]; '*d' is "ends in a double consonant". */
type Rule = [string, string, ((stem: string) => boolean) | null];

/** The first rule whose suffix the word has decides: applied if its condition holds, else the word stays. */
function applyRules(word: string, rules: Rule[]): string {
  for (const [suffix, replacement, condition] of rules) {
    if (suffix === '*d' && endsDoubleConsonant(word)) {
      const stem = word.slice(0, -2);
      return condition === null || condition(stem) ? stem + replacement : word;
    }
    if (word.endsWith(suffix)) {
      const stem = word.slice(0, word.length - suffix.length);
      return condition === null || condition(stem) ? stem + replacement : word;
    }
  }
  return word;
}

const positive = (stem: string) => measure(stem) > 0;
const aboveOne = (stem: string) => measure(stem) > 1;

function step1a(word: string): string {
  if (word.endsWith('ies') && word.length === 4) return `${word.slice(0, -3)}ie`;
  return applyRules(word, [
    ['sses', 'ss', null],
    ['ies', 'i', null],
    ['ss', 'ss', null],
    ['s', '', null],
  ]);
}

function step1b(word: string): string {
  if (word.endsWith('ied')) return word.length === 4 ? `${word.slice(0, -3)}ie` : `${word.slice(0, -3)}i`;
  if (word.endsWith('eed')) {
    const stem = word.slice(0, -3);
    return measure(stem) > 0 ? `${stem}ee` : word;
  }
  let stem: string | undefined;
  for (const suffix of ['ed', 'ing']) {
    if (word.endsWith(suffix) && containsVowel(word.slice(0, -suffix.length))) {
      stem = word.slice(0, -suffix.length);
      break;
    }
  }
  if (stem === undefined) return word;
  const last = stem[stem.length - 1] as string;
  return applyRules(stem, [
    ['at', 'ate', null],
    ['bl', 'ble', null],
    ['iz', 'ize', null],
    ['*d', last, () => !['l', 's', 'z'].includes(last)],
    ['', 'e', (s) => measure(s) === 1 && endsCvc(s)],
  ]);
}

function step1c(word: string): string {
  return applyRules(word, [['y', 'i', (stem) => stem.length > 1 && isConsonant(stem, stem.length - 1)]]);
}

function step2(word: string): string {
  if (word.endsWith('alli') && positive(word.slice(0, -4))) return step2(`${word.slice(0, -4)}al`);
  return applyRules(word, [
    ['ational', 'ate', positive],
    ['tional', 'tion', positive],
    ['enci', 'ence', positive],
    ['anci', 'ance', positive],
    ['izer', 'ize', positive],
    ['bli', 'ble', positive],
    ['alli', 'al', positive],
    ['entli', 'ent', positive],
    ['eli', 'e', positive],
    ['ousli', 'ous', positive],
    ['ization', 'ize', positive],
    ['ation', 'ate', positive],
    ['ator', 'ate', positive],
    ['alism', 'al', positive],
    ['iveness', 'ive', positive],
    ['fulness', 'ful', positive],
    ['ousness', 'ous', positive],
    ['aliti', 'al', positive],
    ['iviti', 'ive', positive],
    ['biliti', 'ble', positive],
    ['fulli', 'ful', positive],
    // NLTK keeps the l of -logi with the stem, so short stems (geo-, theo-) are measured with it.
    ['logi', 'log', () => positive(word.slice(0, -3))],
  ]);
}

function step3(word: string): string {
  return applyRules(word, [
    ['icate', 'ic', positive],
    ['ative', '', positive],
    ['alize', 'al', positive],
    ['iciti', 'ic', positive],
    ['ical', 'ic', positive],
    ['ful', '', positive],
    ['ness', '', positive],
  ]);
}

function step4(word: string): string {
  return applyRules(word, [
    ['al', '', aboveOne],
    ['ance', '', aboveOne],
    ['ence', '', aboveOne],
    ['er', '', aboveOne],
    ['ic', '', aboveOne],
    ['able', '', aboveOne],
    ['ible', '', aboveOne],
    ['ant', '', aboveOne],
    ['ement', '', aboveOne],
    ['ment', '', aboveOne],
    ['ent', '', aboveOne],
    ['ion', '', (stem) => aboveOne(stem) && ['s', 't'].includes(stem[stem.length - 1] as string)],
    ['ou', '', aboveOne],
    ['ism', '', aboveOne],
    ['ate', '', aboveOne],
    ['iti', '', aboveOne],
    ['ous', '', aboveOne],
    ['ive', '', aboveOne],
    ['ize', '', aboveOne],
  ]);
}

function step5a(word: string): string {
  if (!word.endsWith('e')) return word;
  const stem = word.slice(0, -1);
  const m = measure(stem);
  return m > 1 || (m === 1 && !endsCvc(stem)) ? stem : word;
}

function step5b(word: string): string {
  return applyRules(word, [['ll', 'l', () => measure(word.slice(0, -1)) > 1]]);
}

/**
 * Stems already computed: ROUGE stems every token of every prediction and reference, and a note's
 * vocabulary repeats (a jury run spent a quarter of its CPU here). Bounded: emptied when full.
 */
const stems = new Map<string, string>();
const MAX_STEMS = 50_000;

/** NLTK's PorterStemmer().stem(word): lower-cased, irregular forms looked up, words of 1-2 letters kept. */
export function porterStem(word: string): string {
  let stem = stems.get(word);
  if (stem === undefined) {
    if (stems.size >= MAX_STEMS) stems.clear();
    stems.set(word, (stem = stemOnce(word)));
  }
  return stem;
}

function stemOnce(word: string): string {
  const lower = word.toLowerCase();
  const irregular = Object.prototype.hasOwnProperty.call(IRREGULAR, word) ? IRREGULAR[word] : undefined;
  if (irregular !== undefined) return irregular;
  if (word.length <= 2) return lower;
  return step5b(step5a(step4(step3(step2(step1c(step1b(step1a(lower))))))));
}
