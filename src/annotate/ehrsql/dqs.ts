/**
 * Double-quoted string literals, as the SQLite that HELM and EHRSQL's evaluate.py use accepts them.
 * Python's sqlite3 is built with SQLite's default (SQLITE_DQS=3): a double-quoted token that names no
 * column or table is read as a string, so `drugname = "aspirin"` works. better-sqlite3 is built with
 * SQLITE_DQS=0 and has no per-connection switch (it never calls sqlite3_db_config with
 * SQLITE_DBCONFIG_DQS_DML), so such a query fails here and a correct answer scores 0.
 *
 * The executor therefore prepares a query as written, and only when SQLite refuses it tries once more
 * with the double-quoted tokens that cannot be identifiers rewritten as single-quoted strings. A query
 * that prepares as written resolved every double-quoted token as an identifier, exactly as SQLite with
 * DQS on would, so it is never rewritten. SQLite reads a double-quoted token as a string when it
 * resolves to no column in scope; here a token stays an identifier when it names a column of a table
 * the query mentions (case-insensitively, as SQLite compares names), an alias or CTE of the query, or
 * stands where only an identifier can (before or after a `.`, after AS). A table name elsewhere is a
 * string, as in SQLite (`eventtype = "lab"` compares with 'lab'); in FROM, SQLite reads 'lab' as the
 * table anyway. Strings, comments, `backtick` and [bracket] identifiers are copied untouched. SQL the
 * tokenizer cannot read to its end (an unterminated quote or comment) is returned as it is, and SQLite
 * reports its own error.
 *
 * Scope is approximated: a column of any table the query names counts, in every subquery.
 */

type Token = { kind: 'dq' | 'word' | 'other'; text: string };

/** The end (exclusive) of a quoted run starting at `start`, where a doubled quote escapes it; -1 if unterminated. */
function quotedEnd(sql: string, start: number, quote: string): number {
  let i = start + 1;
  for (;;) {
    const next = sql.indexOf(quote, i);
    if (next < 0) return -1;
    if (sql[next + 1] === quote) {
      i = next + 2;
      continue;
    }
    return next + 1;
  }
}

/** The end (exclusive) of the lexeme at `i` that is not a double-quoted token or a word; -1 if unterminated. */
function otherEnd(sql: string, i: number): number {
  const c = sql[i] as string;
  if (c === "'" || c === '`') return quotedEnd(sql, i, c);
  if (c === '[') {
    const close = sql.indexOf(']', i + 1);
    return close < 0 ? -1 : close + 1;
  }
  if (c === '-' && sql[i + 1] === '-') {
    const nl = sql.indexOf('\n', i);
    return nl < 0 ? sql.length : nl;
  }
  if (c === '/' && sql[i + 1] === '*') {
    const close = sql.indexOf('*/', i + 2);
    return close < 0 ? -1 : close + 2;
  }
  return i + 1;
}

const WORD = /[A-Za-z0-9_$\u0080-\uffff]/;

/** The lexemes of `sql` that matter here, or undefined when it does not read to its end. */
function tokenize(sql: string): Token[] | undefined {
  const out: Token[] = [];
  let i = 0;
  while (i < sql.length) {
    const c = sql[i] as string;
    let end: number;
    let kind: Token['kind'] = 'other';
    if (c === '"') {
      end = quotedEnd(sql, i, '"');
      kind = 'dq';
    } else if (WORD.test(c)) {
      end = i + 1;
      while (end < sql.length && WORD.test(sql[end] as string)) end++;
      kind = 'word';
    } else {
      end = otherEnd(sql, i);
    }
    if (end < 0) return undefined;
    out.push({ kind, text: sql.slice(i, end) });
    i = end;
  }
  return out;
}

const isSpace = (t: Token) => t.kind === 'other' && /^\s+$/.test(t.text);

const isComment = (t: Token) => t.kind === 'other' && (t.text.startsWith('--') || t.text.startsWith('/*'));

/** The index of the nearest token before / after index `i` that is neither white space nor a comment; -1 if none. */
function neighbourIndex(tokens: Token[], i: number, step: 1 | -1): number {
  for (let j = i + step; j >= 0 && j < tokens.length; j += step) {
    const t = tokens[j] as Token;
    if (!isSpace(t) && !isComment(t)) return j;
  }
  return -1;
}

const neighbour = (tokens: Token[], i: number, step: 1 | -1): Token | undefined => tokens[neighbourIndex(tokens, i, step)];

const nameOf = (t: Token) => (t.kind === 'dq' ? t.text.slice(1, -1).split('""').join('"') : t.text).toLowerCase();
const isWord = (t: Token | undefined, word: string) => t?.kind === 'word' && t.text.toLowerCase() === word;

/** Names the query itself defines: aliases (after AS) and CTE names (before AS followed by `(`). */
function queryNames(tokens: Token[]): Set<string> {
  const names = new Set<string>();
  tokens.forEach((t, i) => {
    if (t.kind !== 'word' && t.kind !== 'dq') return;
    if (isWord(neighbour(tokens, i, -1), 'as')) names.add(nameOf(t));
    const after = neighbourIndex(tokens, i, 1);
    if (isWord(tokens[after], 'as') && neighbour(tokens, after, 1)?.text === '(') names.add(nameOf(t));
  });
  return names;
}

/** The columns of the tables the query names anywhere (as a word or a double-quoted token). */
function columnsInScope(tokens: Token[], schema: Schema): Set<string> {
  const columns = new Set<string>();
  for (const t of tokens) {
    if (t.kind !== 'word' && t.kind !== 'dq') continue;
    for (const c of schema.get(nameOf(t)) ?? []) columns.add(c);
  }
  return columns;
}

function mustBeIdentifier(tokens: Token[], i: number, known: ReadonlySet<string>, local: ReadonlySet<string>): boolean {
  const t = tokens[i] as Token;
  const name = nameOf(t);
  if (known.has(name) || local.has(name)) return true;
  const before = neighbour(tokens, i, -1);
  const after = neighbour(tokens, i, 1);
  return before?.text === '.' || after?.text === '.' || isWord(before, 'as');
}

function singleQuoted(dq: Token): string {
  const inner = dq.text.slice(1, -1).split('""').join('"');
  return `'${inner.split("'").join("''")}'`;
}

/** The database's tables and views, each with its column names, all lower-case. */
export type Schema = ReadonlyMap<string, readonly string[]>;

/** `sql` with its double-quoted tokens that cannot be identifiers written as single-quoted strings. */
export function rewriteDoubleQuotedLiterals(sql: string, schema: Schema): string {
  if (!sql.includes('"')) return sql;
  const tokens = tokenize(sql);
  if (!tokens) return sql;
  const columns = columnsInScope(tokens, schema);
  const local = queryNames(tokens);
  return tokens.map((t, i) => (t.kind === 'dq' && !mustBeIdentifier(tokens, i, columns, local) ? singleQuoted(t) : t.text)).join('');
}
