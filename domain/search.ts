/**
 * Full-text search (`q=`, docs/decisions/023-search.md): the query as terms, what of a session and
 * its events is searched, and the snippet of a match. Both adapters index the same text (the
 * string and number values of an event's SEARCHED_FIELDS, and a session's end_state_reason and
 * tags) and compute the snippet here, from the stored value of the field that matched.
 */

/** A word, or a phrase (several words, adjacent and in order); a prefix term matches words that start with it. */
export interface SearchTerm {
  /** As typed (each engine folds case and accents itself). */
  words: string[];
  prefix: boolean;
}

/** Every term must match, in one document: one event, or the session's own fields. */
export interface SearchQuery {
  terms: SearchTerm[];
}

/** Where a listed session matched: the field, its event (null: the session's own field), a snippet. */
export interface SearchMatch {
  field: SearchField;
  event_id: string | null;
  /** Plain text, at most SNIPPET_LENGTH characters (UTF-16 code units). */
  snippet: string;
  /** [start, end) offsets in `snippet` (UTF-16 code units) of each matched word or phrase, in order. */
  highlights: [number, number][];
}

/** The event fields searched, in the order a snippet prefers them. */
export const SEARCHED_FIELDS = ["prompt", "completion", "input", "output", "error_type", "code", "details"] as const;
export type SearchField = (typeof SEARCHED_FIELDS)[number] | "end_state_reason" | "tags";
/** Characters of one document that are indexed; the rest of a longer one is not searched. */
export const INDEXED_CHARACTERS = 200_000;
export const SNIPPET_LENGTH = 160;

/** A word: letters, digits, private-use characters and combining marks, as SQLite's unicode61 tokenizer reads them. */
const WORD = /[\p{L}\p{N}\p{Co}\p{M}]+/gu;

/**
 * `q` as terms: words (ANDed); "a phrase" in double quotes; a word followed by `*`, and the last
 * word outside quotes, match as prefixes. Everything else (operators, punctuation, a lone quote)
 * separates words. Undefined when there is no word.
 */
export function parseSearch(q: string): SearchQuery | undefined {
  const terms: SearchTerm[] = [];
  let last: SearchTerm | undefined; // the last bare word, a prefix unless a phrase follows it
  const parts = q.split('"');
  parts.forEach((part, index) => {
    // Odd parts are inside quotes; an unclosed quote's text is a phrase too.
    if (index % 2 === 1) {
      const words = (part.match(WORD) ?? []).filter(isWord);
      if (words.length > 0) {
        terms.push({ words, prefix: false });
        last = undefined;
      }
      return;
    }
    for (const found of part.matchAll(WORD)) {
      if (!isWord(found[0])) continue;
      const term = { words: [found[0]], prefix: part[(found.index ?? 0) + found[0].length] === "*" };
      terms.push(term);
      last = term;
    }
  });
  if (last) last.prefix = true;
  return terms.length === 0 ? undefined : { terms: terms.slice(0, MAX_TERMS) };
}

/** Combining marks alone are no word: folding removes them, as the engines' tokenizers do. */
const isWord = (word: string) => fold(word) !== "";

/** More terms than this are dropped (q is at most 256 characters anyway). */
const MAX_TERMS = 64;

/** Case and accents folded, for comparing words in JavaScript (the engines fold their own). */
export const fold = (word: string) =>
  word
    .normalize("NFD")
    .replace(/\p{M}+/gu, "")
    .toLowerCase();

/** A word once folded: no combining mark is left to hold one together. */
const FOLDED_WORD = /[\p{L}\p{N}\p{Co}]+/gu;
/** ASCII's separators: whitespace, punctuation, controls. */
// biome-ignore lint/suspicious/noControlCharactersInRegex: control characters separate words, as in unicode61
const ASCII_SEPARATORS = /[\x00-\x2f\x3a-\x40\x5b-\x60\x7b-\x7f]+/;
// biome-ignore lint/suspicious/noControlCharactersInRegex: the whole ASCII range, controls included
const NOT_ASCII = /[^\x00-\x7f]/;

/**
 * The words of a text folded as distinctWords folds them, in their order, repeats kept: what
 * SQLite's sessions' index receives (it keeps positions, for phrases), so that its words are
 * spelled as the queries' are (unicode61 alone folds some letters otherwise).
 */
export function foldedText(text: string): string {
  const words: string[] = [];
  for (const piece of text.toLowerCase().split(ASCII_SEPARATORS)) {
    if (!NOT_ASCII.test(piece)) {
      if (piece !== "") words.push(piece);
      continue;
    }
    for (const word of fold(piece).match(FOLDED_WORD) ?? []) words.push(word);
  }
  return words.join(" ");
}

/**
 * The distinct words of a text, folded, space-separated: what SQLite's event index receives. It
 * keeps no positions (detail=none), so a word said twice adds nothing but tokenizing work, and an
 * llm event's prompt repeats most of its words (docs/decisions/023-search.md measures it). The
 * text is cut at ASCII separators first and each distinct piece that holds another character is
 * folded and cut again as a word: the same words as folding the whole text, at a fraction of the
 * cost on text that is mostly ASCII.
 */
export function distinctWords(text: string): string {
  const pieces = new Set(text.toLowerCase().split(ASCII_SEPARATORS));
  const words = new Set<string>();
  for (const piece of pieces) {
    if (!NOT_ASCII.test(piece)) {
      if (piece !== "") words.add(piece);
      continue;
    }
    for (const word of fold(piece).match(FOLDED_WORD) ?? []) words.add(word);
  }
  return [...words].join(" ");
}

/** An event's searched text, as both engines index it: its searched fields' text, in order, cut at INDEXED_CHARACTERS. */
export const eventText = (fields: Record<string, unknown>) =>
  eventFields(fields)
    .map(([, text]) => text)
    .join(" ")
    .slice(0, INDEXED_CHARACTERS);

/** Strings at least this long have their words remembered (WordCache). */
const CACHED_LENGTH = 64;
const CACHE_ENTRIES = 2_000;

/**
 * The distinct words of each long string value seen lately. An agent's llm calls resend the same
 * system prompt and the conversation so far with every call, so most of an event's text was in an
 * event before it: its words are found once.
 */
export class WordCache {
  readonly #words = new Map<string, string[]>();

  /** The distinct folded words of `text` (distinctWords), as an array. */
  of(text: string): string[] {
    if (text.length < CACHED_LENGTH) return distinctWords(text).split(" ");
    let words = this.#words.get(text);
    if (words === undefined) {
      words = distinctWords(text).split(" ");
      if (this.#words.size >= CACHE_ENTRIES) this.#words.clear();
      this.#words.set(text, words);
    }
    return words;
  }
}

/**
 * The distinct folded words of an event's searched text (eventText), space-separated: what SQLite's
 * index receives. Word by string value, so that a string seen lately costs a lookup; the value
 * that crosses INDEXED_CHARACTERS is cut there as eventText cuts it.
 */
export function eventWords(fields: Record<string, unknown>, cache: WordCache): string {
  const words = new Set<string>();
  let room = INDEXED_CHARACTERS;
  const add = (text: string) => {
    if (room <= 0) return;
    const cut = text.length > room ? text.slice(0, room) : text;
    room -= text.length + 1; // the space eventText puts between values
    for (const word of cut === text ? cache.of(text) : distinctWords(cut).split(" ")) words.add(word);
  };
  const walk = (v: unknown) => {
    if (typeof v === "string") add(v);
    else if (typeof v === "number") add(String(v));
    else if (Array.isArray(v)) for (const item of v) walk(item);
    else if (v !== null && typeof v === "object") {
      for (const [key, item] of Object.entries(v)) if (key !== "role") walk(item);
    }
  };
  for (const name of SEARCHED_FIELDS) {
    const value = fields[name];
    if (value !== undefined && value !== null) walk(value);
  }
  words.delete("");
  return [...words].join(" ");
}

/** The words both engines' indexes receive (eventWords), one cache per thread. */
const indexCache = new WordCache();
/** The words of an event's fields (its body's JSON, parsed). */
export const fieldWords = (fields: Record<string, unknown>) => eventWords(fields, indexCache);
/** The words of each of these events, in order. */
export const wordsOf = (events: { fields: Record<string, unknown> }[]) =>
  events.map((event) => fieldWords(event.fields));

/**
 * Whether a document with these words (eventWords / distinctWords, as a set) and these fields
 * matches the query as the index does: each term's words all among them (a prefix term's last word
 * as a prefix of one), and each phrase in one of its fields (hasPhrases).
 */
export function matchesWords(words: Set<string>, fields: () => [SearchField, string][], query: SearchQuery): boolean {
  const all = [...words];
  for (const term of query.terms) {
    const folded = term.words.map(fold);
    const ok = folded.every((word, i) =>
      term.prefix && i === folded.length - 1 ? all.some((w) => w.startsWith(word)) : words.has(word),
    );
    if (!ok) return false;
  }
  return !query.terms.some((term) => term.words.length > 1) || hasPhrases(fields(), query);
}

/**
 * Whether every phrase (a term of several words) of the query occurs, words adjacent and in order,
 * within one field of the document (decision 030): a phrase never runs from the end of one field
 * (a tool event's `input`) into the start of the next (its `output`), nor from one event into
 * another. Different phrases may be in different fields of the document. Within a field it may
 * run from one of its values into the next (two messages of a `prompt`), as the snippet joins
 * them.
 */
export function hasPhrases(fields: [SearchField, string][], query: SearchQuery): boolean {
  return query.terms
    .filter((term) => term.words.length > 1)
    .every((term) => fields.some(([, text]) => hitsIn(text, { terms: [term] }).length > 0));
}

/**
 * A document's fields as far as they are indexed: the text past INDEXED_CHARACTERS of the whole
 * (its fields joined by a space, eventText) cut off, so that a phrase is looked for in the text
 * whose words the index holds.
 */
export function indexedFields(fields: [SearchField, string][]): [SearchField, string][] {
  const out: [SearchField, string][] = [];
  let room = INDEXED_CHARACTERS;
  for (const [name, text] of fields) {
    if (room <= 0) break;
    out.push([name, text.length > room ? text.slice(0, room) : text]);
    room -= text.length + 1;
  }
  return out;
}

/** The text of a field's value: its strings and numbers (not object keys, nor `role` members), space-separated. */
export function textOf(value: unknown): string {
  const out: string[] = [];
  const walk = (v: unknown) => {
    if (typeof v === "string") out.push(v);
    else if (typeof v === "number") out.push(String(v));
    else if (Array.isArray(v)) for (const item of v) walk(item);
    else if (v !== null && typeof v === "object") {
      for (const [key, item] of Object.entries(v)) if (key !== "role") walk(item);
    }
  };
  walk(value);
  return out.join(" ");
}

interface Hit {
  start: number;
  end: number;
  term: number;
}

/** Where the terms occur in a text: each word or whole phrase, with its term's index. */
function hitsIn(text: string, query: SearchQuery): Hit[] {
  const tokens = [...text.matchAll(WORD)].map((m) => ({
    start: m.index ?? 0,
    end: (m.index ?? 0) + m[0].length,
    word: fold(m[0]),
  }));
  const hits: Hit[] = [];
  query.terms.forEach((term, index) => {
    const words = term.words.map(fold);
    for (let i = 0; i + words.length <= tokens.length; i++) {
      const ok = words.every((w, k) => {
        const token = tokens[i + k]?.word ?? "";
        return term.prefix && k === words.length - 1 ? token.startsWith(w) : token === w;
      });
      if (ok) {
        hits.push({
          start: tokens[i]?.start ?? 0,
          end: tokens[i + words.length - 1]?.end ?? 0,
          term: index,
        });
      }
    }
  });
  return hits.sort((a, b) => a.start - b.start || b.end - a.end);
}

/** A cut at `i` that does not split a surrogate pair. */
const safe = (text: string, i: number) => {
  const code = text.charCodeAt(i);
  return i > 0 && i < text.length && code >= 0xdc00 && code <= 0xdfff ? i - 1 : i;
};

/**
 * The match of a document: of its fields (name, text), the one where the most terms occur (the
 * first such), and up to SNIPPET_LENGTH characters of it around the first occurrence, whitespace
 * collapsed, with "…" where it was cut; the first field when no term is found in any (a word past
 * INDEXED_CHARACTERS, or an engine's tokenizer that read a word differently).
 */
export function snippetOf(fields: [SearchField, string][], query: SearchQuery, eventId: string | null): SearchMatch {
  let best: { field: SearchField; text: string; hits: Hit[]; terms: number } | undefined;
  for (const [field, raw] of fields) {
    const text = raw.replace(/\s+/g, " ").trim();
    if (text === "") continue;
    const hits = hitsIn(text, query);
    const terms = new Set(hits.map((hit) => hit.term)).size;
    if (!best || terms > best.terms) best = { field, text, hits, terms };
  }
  if (!best) return { field: fields[0]?.[0] ?? "prompt", event_id: eventId, snippet: "", highlights: [] };
  const { text, hits } = best;
  const room = SNIPPET_LENGTH - 2; // two for the ellipses
  let start = 0;
  const first = hits[0];
  if (first && text.length > room) {
    // Some context before the first hit, starting at a word.
    start = Math.max(0, Math.min(first.start - 40, text.length - room));
    if (start > 0) {
      const space = text.indexOf(" ", start);
      if (space !== -1 && space < first.start) start = space + 1;
    }
  }
  start = safe(text, start);
  let end = Math.min(text.length, start + room);
  if (end < text.length) {
    const space = text.lastIndexOf(" ", end);
    if (space > start && space >= (first?.end ?? 0)) end = space;
  }
  end = safe(text, end);
  const head = start > 0 ? "…" : "";
  const snippet = head + text.slice(start, end) + (end < text.length ? "…" : "");
  const shift = head.length - start;
  const highlights: [number, number][] = [];
  for (const hit of hits) {
    if (hit.start < start || hit.end > end) continue;
    const previous = highlights[highlights.length - 1];
    // Overlapping hits (a word inside a phrase found too) are one highlight.
    if (previous && hit.start + shift <= previous[1]) previous[1] = Math.max(previous[1], hit.end + shift);
    else highlights.push([hit.start + shift, hit.end + shift]);
  }
  return { field: best.field, event_id: eventId, snippet, highlights };
}

/** The fields of an event's stored `fields` bag that are searched, as text. */
export const eventFields = (fields: Record<string, unknown>): [SearchField, string][] =>
  SEARCHED_FIELDS.filter((name) => fields[name] !== undefined && fields[name] !== null).map((name) => [
    name,
    textOf(fields[name]),
  ]);

/** A session's own searched fields, as text. */
export const sessionFields = (reason: string | null, tags: string[] | null): [SearchField, string][] => [
  ["end_state_reason", reason ?? ""],
  ["tags", (tags ?? []).join(" ")],
];
