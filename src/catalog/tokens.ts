/**
 * Token counts as HELM takes them where it filters instances by length: tiktoken's cl100k_base (the
 * encoding of `tiktoken.encoding_for_model("gpt-4")` in EHRSHOT and of `get_encoding("cl100k_base")` in
 * MedAlign), here through js-tiktoken, the JavaScript port with the same ranks. The ranks (about 1 MB)
 * are loaded on first use, so listing the catalog never loads them.
 *
 * One difference: text that spells a special token ("<|endoftext|>") is counted as ordinary text;
 * Python's tiktoken refuses such text by default, and HELM's run would stop there.
 */
import type { Tiktoken } from 'js-tiktoken/lite';

let encoder: Tiktoken | undefined;

function cl100k(): Tiktoken {
  if (!encoder) {
    // Loaded here, not at import: require keeps the ranks out of every command that never counts.
    const { Tiktoken: Encoder } = require('js-tiktoken/lite') as typeof import('js-tiktoken/lite');
    type Ranks = ConstructorParameters<typeof Encoder>[0];
    // The CommonJS build exports the ranks object itself; an ES-module interop wraps it in `default`.
    const ranks = require('js-tiktoken/ranks/cl100k_base') as Ranks | { default: Ranks };
    encoder = new Encoder('default' in ranks ? ranks.default : ranks);
  }
  return encoder;
}

/** The number of cl100k_base tokens of `text`, special-token spellings counted as plain text. */
export function countCl100kTokens(text: string): number {
  return cl100k().encode(text, [], []).length;
}

/**
 * Whether `text` has at most `limit` cl100k_base tokens. Every token of a byte-level BPE covers at least
 * one byte, so text of at most `limit` UTF-8 bytes fits without being encoded: most records are decided
 * that way, and only long ones are counted.
 */
export function fitsCl100k(text: string, limit: number): boolean {
  return Buffer.byteLength(text, 'utf8') <= limit || countCl100kTokens(text) <= limit;
}
