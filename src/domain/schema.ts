// Declarative JSON input schemas, shared by the HTTP layer and the CLI: each validates a parsed value (naming the field it refuses) and describes itself as JSON Schema.

import {
  customDataBytesMax, customDataDepthMax, emailCharsMax, emailLocalCharsMax, idCharsMax, tokenTtlSecondsMax, tokenTtlSecondsMin,
} from '../config/limits.js';
import { tokenAlgs, type JsonObject, type TokenSettings } from './entities.js';
import { emailCharacterProblem, normalizeEmail } from './email.js';
import { invalidField } from './errors.js';
import { roleNames, type Role } from './roles.js';
import { isWellFormedId } from './ids.js';

export interface Schema<T> {
  parse(value: unknown, field: string): T;
  /** JSON Schema (OpenAPI 3.1 dialect) of the accepted values. */
  describe(): Record<string, unknown>;
}

/** True when a string holds a UTF-16 surrogate without its partner: it has no UTF-8 form and would not survive the log. */
export function hasLoneSurrogate(s: string): boolean {
  for (let i = 0; i < s.length; i++) {
    const c = s.charCodeAt(i);
    if (c >= 0xd800 && c <= 0xdbff) {
      const next = s.charCodeAt(i + 1);
      if (next >= 0xdc00 && next <= 0xdfff) { i++; continue; }
      return true;
    }
    if (c >= 0xdc00 && c <= 0xdfff) return true;
  }
  return false;
}

function isPlainObject(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

export function string(opts: { min?: number; max: number; trim?: boolean; pattern?: string }): Schema<string> {
  const min = opts.min ?? 0;
  return {
    parse(value, field) {
      if (typeof value !== 'string') throw invalidField(field, 'must be a string');
      if (hasLoneSurrogate(value)) throw invalidField(field, 'must be valid UTF-8 text (lone surrogate)');
      const s = opts.trim === true ? value.trim() : value;
      // Length in code points, so one emoji counts as one character.
      const length = s.length < min * 2 || s.length > opts.max ? [...s].length : s.length;
      if (length < min) throw invalidField(field, min === 1 ? 'must not be empty' : `must be at least ${min} characters`);
      if (length > opts.max) throw invalidField(field, `must be at most ${opts.max} characters`);
      return s;
    },
    describe: () => ({ type: 'string', minLength: min, maxLength: opts.max }),
  };
}

export function enumOf<T extends string>(values: readonly T[]): Schema<T> {
  return {
    parse(value, field) {
      if (typeof value !== 'string' || !(values as readonly string[]).includes(value)) {
        throw invalidField(field, `must be one of ${values.join(', ')}`);
      }
      return value as T;
    },
    describe: () => ({ type: 'string', enum: [...values] }),
  };
}

export function boolean(): Schema<boolean> {
  return {
    parse(value, field) {
      if (typeof value !== 'boolean') throw invalidField(field, 'must be true or false');
      return value;
    },
    describe: () => ({ type: 'boolean' }),
  };
}

/** A whole number within [min, max]. */
export function integer(opts: { min: number; max: number }): Schema<number> {
  return {
    parse(value, field) {
      if (typeof value !== 'number' || !Number.isInteger(value)) throw invalidField(field, 'must be a whole number');
      if (value < opts.min || value > opts.max) throw invalidField(field, `must be from ${opts.min} to ${opts.max}`);
      return value;
    },
    describe: () => ({ type: 'integer', minimum: opts.min, maximum: opts.max }),
  };
}

export function id(): Schema<string> {
  return {
    parse(value, field) {
      // The same rule as ids in paths (src/store/ids.ts).
      if (typeof value !== 'string' || !isWellFormedId(value)) {
        throw invalidField(field, 'must be an identifier (letters and digits)');
      }
      return value;
    },
    describe: () => ({ type: 'string', pattern: '^[0-9A-Za-z]+$', maxLength: idCharsMax }),
  };
}

export function arrayOf<T>(item: Schema<T>, opts: { max: number; unique?: boolean }): Schema<T[]> {
  return {
    parse(value, field) {
      if (!Array.isArray(value)) throw invalidField(field, 'must be an array');
      if (value.length > opts.max) throw invalidField(field, `must have at most ${opts.max} elements`);
      const out = value.map((v, i) => item.parse(v, `${field}[${i}]`));
      return opts.unique === true ? [...new Set(out)] : out;
    },
    describe: () => ({ type: 'array', items: item.describe(), maxItems: opts.max }),
  };
}

/**
 * An address as stored: ASCII spaces around it dropped, the characters src/domain/email.ts refuses
 * refused, then NFC, then a syntactic check written without regular expressions so no input can make it
 * backtrack. Only ASCII spaces are trimmed: String.trim would also drop a BOM or a no-break space
 * silently, which the character rule refuses instead.
 */
/** A list of roles without repeats (src/domain/roles.ts), as a User or an API Key carries them. */
export function roles(): Schema<Role[]> {
  return arrayOf(enumOf(roleNames), { max: roleNames.length, unique: true });
}

export function email(): Schema<string> {
  return {
    parse(value, field) {
      if (typeof value !== 'string') throw invalidField(field, 'must be a string');
      const raw = trimAsciiSpace(value);
      // NFC can shorten decomposed text (at most a few code units per character): refuse only what cannot fit, before normalising it.
      if (raw.length > emailCharsMax * 4) throw invalidField(field, `must be at most ${emailCharsMax} characters`);
      if (hasLoneSurrogate(raw)) throw invalidField(field, 'must be valid UTF-8 text (lone surrogate)');
      const characters = emailCharacterProblem(raw);
      if (characters !== undefined) throw invalidField(field, characters);
      const s = normalizeEmail(raw);
      const why = emailProblem(s);
      if (why !== undefined) throw invalidField(field, why);
      return s;
    },
    describe: () => ({ type: 'string', format: 'email', maxLength: emailCharsMax }),
  };
}

function trimAsciiSpace(s: string): string {
  let start = 0;
  let end = s.length;
  while (start < end && isAsciiSpace(s.charCodeAt(start))) start++;
  while (end > start && isAsciiSpace(s.charCodeAt(end - 1))) end--;
  return s.slice(start, end);
}

function isAsciiSpace(c: number): boolean {
  return c === 0x20 || c === 0x09 || c === 0x0a || c === 0x0d;
}

function emailProblem(s: string): string | undefined {
  if (s.length === 0) return 'must not be empty';
  if (s.length > emailCharsMax) return `must be at most ${emailCharsMax} characters`;
  if (hasLoneSurrogate(s)) return 'must be valid UTF-8 text (lone surrogate)';
  const at = s.lastIndexOf('@');
  if (at <= 0 || at === s.length - 1) return 'must be an email address (local@domain)';
  const local = s.slice(0, at);
  const domain = s.slice(at + 1);
  if (local.length > emailLocalCharsMax) return `local part must be at most ${emailLocalCharsMax} characters`;
  if (local.includes('@')) return 'must be an email address (one @)';
  for (const ch of s) {
    const c = ch.codePointAt(0)!;
    if (c <= 0x20 || c === 0x7f || ch === '"' || ch === '\\' || ch === ',' || ch === ';' || ch === '<' || ch === '>' || ch === '(' || ch === ')' || ch === '[' || ch === ']') {
      return 'must be an email address (no spaces, quotes or brackets)';
    }
  }
  if (local.startsWith('.') || local.endsWith('.') || local.includes('..')) return 'must be an email address (misplaced dot)';
  const labels = domain.split('.');
  if (labels.length < 2) return 'must be an email address (domain needs a dot)';
  for (const label of labels) {
    if (label.length === 0 || label.length > 63 || label.startsWith('-') || label.endsWith('-')) {
      return 'must be an email address (bad domain)';
    }
  }
  return undefined;
}

/** custom_data: a JSON object, bounded in encoded size and depth, without keys that could pollute prototypes. */
export function customData(opts: { nullable: false }): Schema<JsonObject>;
export function customData(opts: { nullable: true }): Schema<JsonObject | null>;
export function customData(opts: { nullable: boolean }): Schema<JsonObject | null> {
  return {
    parse(value, field) {
      if (value === null) {
        if (opts.nullable) return null;
        throw invalidField(field, 'must be an object');
      }
      if (!isPlainObject(value)) throw invalidField(field, opts.nullable ? 'must be an object or null' : 'must be an object');
      checkJson(value, field, 1);
      if (Buffer.byteLength(JSON.stringify(value)) > customDataBytesMax) {
        throw invalidField(field, `must be at most ${customDataBytesMax} bytes encoded`);
      }
      return value as JsonObject;
    },
    describe: () => ({ type: opts.nullable ? ['object', 'null'] : 'object', additionalProperties: true }),
  };
}

const forbiddenKeys = new Set(['__proto__', 'constructor', 'prototype']);

/** `depth` counts containers only: the custom_data object itself is level 1, a scalar adds none. */
function checkJson(value: unknown, field: string, depth: number): void {
  if (typeof value === 'string') {
    if (hasLoneSurrogate(value)) throw invalidField(field, 'must be valid UTF-8 text (lone surrogate)');
    return;
  }
  // JSON.parse turns 1e400 into Infinity, which JSON cannot carry back out: refuse rather than answer null.
  if (typeof value === 'number' && !Number.isFinite(value)) throw invalidField(field, 'numbers must be finite');
  if (typeof value !== 'object' || value === null) return;
  if (depth > customDataDepthMax) throw invalidField(field, `must be at most ${customDataDepthMax} levels deep`);
  if (Array.isArray(value)) {
    for (const v of value) checkJson(v, field, depth + 1);
    return;
  }
  for (const key of Object.keys(value)) {
    if (forbiddenKeys.has(key)) throw invalidField(field, `key "${key}" is not allowed`);
    if (hasLoneSurrogate(key)) throw invalidField(field, 'keys must be valid UTF-8 text (lone surrogate)');
    checkJson((value as Record<string, unknown>)[key], `${field}.${key.slice(0, 64)}`, depth + 1);
  }
}

type Fields = Record<string, { schema: Schema<unknown>; required: boolean }>;
type Parsed<F extends Fields> = { [K in keyof F]?: F[K]['schema'] extends Schema<infer T> ? T : never };

export function field<T>(schema: Schema<T>, required = false): { schema: Schema<T>; required: boolean } {
  return { schema, required };
}

/** A request body: a JSON object whose known fields are validated; unknown fields are ignored (clients echo whole objects back). */
export function body<F extends Fields>(fields: F): Schema<Parsed<F>> {
  // Listed once here, not per request: Object.entries made a new array of pairs on every parse.
  const specs = Object.entries(fields);
  return {
    parse(value, name) {
      if (!isPlainObject(value)) throw invalidField(name, 'must be a JSON object');
      const out: Record<string, unknown> = {};
      for (const [key, spec] of specs) {
        const v = Object.prototype.hasOwnProperty.call(value, key) ? value[key] : undefined;
        // A nested object's fields are named by their path (tokens.ttl); the top level's by themselves.
        const path = name === 'body' ? key : `${name}.${key}`;
        if (v === undefined) {
          if (spec.required) throw invalidField(path, 'is required');
          continue;
        }
        out[key] = spec.schema.parse(v, path);
      }
      return out as Parsed<F>;
    },
    describe: () => ({
      type: 'object',
      properties: Object.fromEntries(Object.entries(fields).map(([k, s]) => [k, s.schema.describe()])),
      required: Object.entries(fields).filter(([, s]) => s.required).map(([k]) => k),
    }),
  };
}

/** Nested object with its own fields, e.g. the credential of POST /authenticate. */
export const object = body;

export const status = enumOf(['ENABLED', 'DISABLED'] as const);
export const userStatus = enumOf(['UNVERIFIED', 'ENABLED', 'DISABLED'] as const);

/**
 * An Application's token settings, each checked against its limits: `complete`, all three (an export line);
 * else any subset (a request: what it leaves out keeps its value, or the default).
 */
export function tokenSettings(complete: true): Schema<TokenSettings>;
export function tokenSettings(complete: false): Schema<Partial<TokenSettings>>;
export function tokenSettings(complete: boolean): Schema<Partial<TokenSettings>> {
  return object({
    enabled: field(boolean(), complete),
    ttl: field(integer({ min: tokenTtlSecondsMin, max: tokenTtlSecondsMax }), complete),
    alg: field(enumOf(tokenAlgs), complete),
  });
}
