/**
 * A read-only set of words over the bytes of a word list, built in one pass without a string per
 * entry: an open-addressing hash table of offsets into the list itself. The vocabularies hold about
 * 400,000 entries; JavaScript Sets of them cost a third of a second at every start of `ehrbench deid`,
 * this a few tens of milliseconds. Lists are ASCII (one lowercase entry a line, or several words a
 * line); lookups hash the word (FNV-1a) and compare in place.
 */

const OFFSET_BASIS = 0x811c9dc5;
const PRIME = 0x01000193;

export interface WordListOptions {
  /** One entry a line (entries may hold spaces: "new york"); otherwise every whitespace-separated word is an entry. */
  byLine?: boolean;
}

function isSpace(c: number): boolean {
  return c === 32 || c === 9 || c === 10 || c === 13;
}

function hashBytes(b: Uint8Array, start: number, end: number): number {
  let h = OFFSET_BASIS;
  for (let i = start; i < end; i++) h = Math.imul(h ^ (b[i] as number), PRIME);
  return h >>> 0;
}

function hashString(s: string): number {
  let h = OFFSET_BASIS;
  for (let i = 0; i < s.length; i++) h = Math.imul(h ^ s.charCodeAt(i), PRIME);
  return h >>> 0;
}

/** The hash state after each prefix of a word (entry i: its first i characters), for `hasSplice`. */
export function prefixHashes(word: string): Uint32Array {
  const out = new Uint32Array(word.length + 1);
  let h = OFFSET_BASIS;
  out[0] = h;
  for (let i = 0; i < word.length; i++) out[i + 1] = h = Math.imul(h ^ word.charCodeAt(i), PRIME) >>> 0;
  return out;
}

/** An upper bound of the entries: newlines, or whitespace runs for a list of several words a line. */
function countEntries(b: Uint8Array, byLine: boolean): number {
  let count = 1;
  for (let i = 0; i < b.length; i++) {
    const c = b[i] as number;
    if (c === 10 || (!byLine && isSpace(c))) count++;
  }
  return count;
}

interface Table {
  slots: Int32Array;
  source: Uint8Array;
  starts: Int32Array;
  ends: Int32Array;
  size: number;
}

/** Header of a serialised index: a magic word, then the slot count and the entry count. */
const MAGIC = 0x45425753; // "EBWS"

export class WordSet {
  /** Slot -> entry number + 1 (0: empty). */
  private readonly slots: Int32Array;
  private readonly mask: number;
  /** Per entry: which list, where it starts and ends. */
  private readonly source: Uint8Array;
  private readonly starts: Int32Array;
  private readonly ends: Int32Array;
  private count: number;

  private constructor(
    private readonly lists: Uint8Array[],
    table: Table,
  ) {
    this.slots = table.slots;
    this.mask = table.slots.length - 1;
    this.source = table.source;
    this.starts = table.starts;
    this.ends = table.ends;
    this.count = table.size;
  }

  get size(): number {
    return this.count;
  }

  /** Builds the table over the lists (one pass; a few tens of milliseconds for the largest list). */
  static build(lists: { bytes: Uint8Array; options?: WordListOptions }[]): WordSet {
    const count = lists.reduce((a, l) => a + countEntries(l.bytes, l.options?.byLine ?? false), 0);
    let size = 16;
    while (size < count * 2) size *= 2;
    const table: Table = { slots: new Int32Array(size), source: new Uint8Array(count), starts: new Int32Array(count), ends: new Int32Array(count), size: 0 };
    const set = new WordSet(
      lists.map((l) => l.bytes),
      table,
    );
    set.fill(lists);
    return set;
  }

  /** The set over the lists from a table `index()` wrote for exactly these lists. */
  static fromIndex(lists: Uint8Array[], index: Buffer): WordSet {
    const head = new Int32Array(index.buffer, index.byteOffset, 3);
    if (head[0] !== MAGIC) throw new Error('not a word-set index');
    const slotCount = head[1] as number;
    const count = head[2] as number;
    // typed arrays need aligned memory: a buffer at an odd offset is copied first
    let copy = index;
    if (index.byteOffset % 4 !== 0) {
      copy = Buffer.alloc(index.length);
      index.copy(copy);
    }
    let at = 12;
    const b = copy.buffer as ArrayBuffer;
    const base = copy.byteOffset;
    const ints = (n: number) => {
      const v = new Int32Array(b, base + at, n);
      at += n * 4;
      return v;
    };
    const slots = ints(slotCount);
    const starts = ints(count);
    const ends = ints(count);
    const source = new Uint8Array(b, base + at, count);
    return new WordSet(lists, { slots, source, starts, ends, size: count });
  }

  /** The table as bytes, for `fromIndex` (slot and entry arrays after a three-word header). */
  index(): Buffer {
    const out = Buffer.alloc(12 + 4 * (this.slots.length + 2 * this.size) + this.size);
    out.writeInt32LE(MAGIC, 0);
    out.writeInt32LE(this.slots.length, 4);
    out.writeInt32LE(this.size, 8);
    let at = 12;
    for (const arr of [this.slots, this.starts.subarray(0, this.size), this.ends.subarray(0, this.size)]) {
      Buffer.from(arr.buffer, arr.byteOffset, arr.byteLength).copy(out, at);
      at += arr.byteLength;
    }
    Buffer.from(this.source.buffer, this.source.byteOffset, this.size).copy(out, at);
    return out;
  }

  private fill(lists: { bytes: Uint8Array; options?: WordListOptions }[]): void {
    let entry = 0;
    const add = (t: number, b: Uint8Array, start: number, end: number) => {
      let slot = hashBytes(b, start, end) & this.mask;
      for (let e = this.slots[slot] as number; e !== 0; e = this.slots[slot] as number) {
        if (this.equalsBytes(e - 1, b, start, end)) return; // a duplicate adds nothing
        slot = (slot + 1) & this.mask;
      }
      this.source[entry] = t;
      this.starts[entry] = start;
      this.ends[entry] = end;
      this.slots[slot] = entry + 1;
      entry++;
    };

    lists.forEach((list, t) => {
      const b = list.bytes;
      const byLine = list.options?.byLine ?? false;
      const n = b.length;
      let i = 0;
      while (i < n) {
        let lineEnd = i;
        while (lineEnd < n && b[lineEnd] !== 10) lineEnd++;
        let s = i;
        let e = lineEnd;
        while (s < e && isSpace(b[s] as number)) s++;
        while (e > s && isSpace(b[e - 1] as number)) e--;
        if (e > s && b[s] !== 35 /* # */) {
          if (byLine) add(t, b, s, e);
          else {
            let j = s;
            while (j < e) {
              while (j < e && isSpace(b[j] as number)) j++;
              const w = j;
              while (j < e && !isSpace(b[j] as number)) j++;
              if (j > w) add(t, b, w, j);
            }
          }
        }
        i = lineEnd + 1;
      }
    });
    this.count = entry;
  }

  private equalsBytes(e: number, b: Uint8Array, start: number, end: number): boolean {
    const es = this.starts[e] as number;
    const len = end - start;
    if ((this.ends[e] as number) - es !== len) return false;
    const list = this.lists[this.source[e] as number] as Uint8Array;
    for (let k = 0; k < len; k++) if (list[es + k] !== b[start + k]) return false;
    return true;
  }

  has(word: string): boolean {
    const len = word.length;
    if (len === 0) return false;
    let slot = hashString(word) & this.mask;
    for (;;) {
      const e = (this.slots[slot] as number) - 1;
      if (e < 0) return false;
      const es = this.starts[e] as number;
      if ((this.ends[e] as number) - es === len) {
        const list = this.lists[this.source[e] as number] as Uint8Array;
        let k = 0;
        while (k < len && list[es + k] === word.charCodeAt(k)) k++;
        if (k === len) return true;
      }
      slot = (slot + 1) & this.mask;
    }
  }

  /**
   * Whether `word` with `remove` characters at `at` replaced by `insert` is in the set, without building
   * that string: a misspelling check tries hundreds of such variants of one word. `prefix` is
   * `prefixHashes(word)`, computed once for all of them.
   */
  hasSplice(word: string, prefix: Uint32Array, at: number, remove: number, insert: string): boolean {
    const tail = at + remove;
    const len = word.length - remove + insert.length;
    if (len <= 0) return false;
    let h = prefix[at] as number;
    for (let k = 0; k < insert.length; k++) h = Math.imul(h ^ insert.charCodeAt(k), PRIME);
    for (let k = tail; k < word.length; k++) h = Math.imul(h ^ word.charCodeAt(k), PRIME);
    let slot = (h >>> 0) & this.mask;
    const ins = insert.length;
    for (;;) {
      const e = (this.slots[slot] as number) - 1;
      if (e < 0) return false;
      const es = this.starts[e] as number;
      if ((this.ends[e] as number) - es === len) {
        const list = this.lists[this.source[e] as number] as Uint8Array;
        let k = 0;
        for (; k < len; k++) {
          const c = k < at ? word.charCodeAt(k) : k < at + ins ? insert.charCodeAt(k - at) : word.charCodeAt(k - ins + remove);
          if (list[es + k] !== c) break;
        }
        if (k === len) return true;
      }
      slot = (slot + 1) & this.mask;
    }
  }

  /** Entry i (0 <= i < size), as a string. */
  at(i: number): string {
    const list = this.lists[this.source[i] as number] as Uint8Array;
    return Buffer.from(list.buffer, list.byteOffset, list.byteLength).toString('latin1', this.starts[i], this.ends[i]);
  }

  /** The entries in list order (first list first), as strings. */
  *[Symbol.iterator](): IterableIterator<string> {
    const views = this.lists.map((l) => Buffer.from(l.buffer, l.byteOffset, l.byteLength));
    for (let e = 0; e < this.count; e++) yield (views[this.source[e] as number] as Buffer).toString('latin1', this.starts[e], this.ends[e]);
  }
}
