/** `npm run lexicons:name-shape`: rebuilds lexicons/name-shape.txt from the lexicons (see name-shape.ts). */
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { LEXICON_DIR } from './lexicons';
import { NAME_SHAPE_FILE, renderNameShape, trainingWords, trainNameShape } from './name-shape';

const { names, others } = trainingWords();
const file = join(LEXICON_DIR, NAME_SHAPE_FILE);
writeFileSync(file, renderNameShape(trainNameShape(names, others)));
process.stdout.write(`${file}: trained on ${names.length} names and ${others.length} other words\n`);
