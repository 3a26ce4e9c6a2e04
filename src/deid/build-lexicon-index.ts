/**
 * Part of `npm run build`: the word-set index of every lexicon (src/deid/wordset.ts), written to
 * dist/deid/lexicon-index/<name>.bin after the sha256 of the list it indexes, so `ehrbench deid` reads
 * its vocabularies in milliseconds instead of building them at every start. A list edited after the
 * build no longer matches its index, and is built at start-up instead.
 */
import { mkdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { buildWordSet, INDEX_DIR, LEXICON_NAMES, listFile } from './lexicons';

mkdirSync(INDEX_DIR, { recursive: true });
for (const name of LEXICON_NAMES) {
  const { bytes, sha256 } = listFile(name);
  writeFileSync(join(INDEX_DIR, `${name}.bin`), Buffer.concat([Buffer.from(sha256, 'hex'), buildWordSet(name, bytes).index()]));
}
process.stdout.write(`${LEXICON_NAMES.length} lexicon indexes built\n`);
