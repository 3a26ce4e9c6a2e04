/**
 * Part of `npm run build`: the word-set index of every lexicon (src/deid/wordset.ts), written to
 * dist/deid/lexicon-index/<name>.bin after the sha256 of the list it indexes, so `ehrbench deid` reads
 * its vocabularies in milliseconds instead of building them at every start. A list edited after the
 * build no longer matches its index, and is built at start-up instead.
 */
import { mkdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { buildSafeSet, buildWordSet, INDEX_DIR, LEXICON_NAMES, type LexiconName, listFile, safeSha256 } from './lexicons';

mkdirSync(INDEX_DIR, { recursive: true });
const bytes = {} as Record<LexiconName, Buffer>;
const hashes = {} as Record<LexiconName, string>;
for (const name of LEXICON_NAMES) {
  const { bytes: b, sha256 } = listFile(name);
  bytes[name] = b;
  hashes[name] = sha256;
  writeFileSync(join(INDEX_DIR, `${name}.bin`), Buffer.concat([Buffer.from(sha256, 'hex'), buildWordSet(name, b).index()]));
}
// the safe vocabulary's lists in one table
writeFileSync(join(INDEX_DIR, 'safe.bin'), Buffer.concat([Buffer.from(safeSha256(hashes), 'hex'), buildSafeSet(bytes).index()]));
process.stdout.write(`${LEXICON_NAMES.length + 1} lexicon indexes built\n`);
