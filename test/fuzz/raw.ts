/** Fuzz property: raw bodies, content types, encodings and credentials never get a 5xx. */
import { deflateSync, gzipSync } from "node:zlib";
import fc from "fast-check";
import type { Test } from "tap";
import type { Operation } from "../arbitraries/spec.ts";
import { textArb } from "../arbitraries/strings.ts";
import { isObject, pickFrom } from "../arbitraries/values.ts";
import { API_KEY } from "../helper.ts";
import { type Ctx, fuzzApp, send } from "./app.ts";
import { checkAnswer, fail, property, stillServes } from "./checks.ts";
import { hasPlan, validBodies } from "./plans.ts";
import { RUNS, withBody } from "./setup.ts";

interface RawCase {
  what: string;
  payload: string | Buffer;
  headers: Record<string, string | undefined>;
  /** The statuses the contract allows here, when it names them; otherwise any 2xx or 4xx. */
  statuses?: number[];
  /** A query string for the URL. */
  query?: string;
}

const NOT_JSON_TYPES = [
  "text/plain",
  "text/html",
  "application/x-www-form-urlencoded",
  "multipart/form-data; boundary=x",
  "application/xml",
  "application/yaml",
  "application/octet-stream",
  "application/jsonx",
  "json",
];

/** Bodies that are not a JSON object: random text and bytes, other JSON, nothing, a valid body cut short. */
function notObjects(valid: fc.Arbitrary<string>): fc.Arbitrary<RawCase>[] {
  return [
    fc
      .string({ unit: "binary", maxLength: 200 })
      .map((text): RawCase => ({ what: "random text", payload: text, headers: {} })),
    fc
      .uint8Array({ maxLength: 200 })
      .map((bytes): RawCase => ({ what: "random bytes", payload: Buffer.from(bytes), headers: {} })),
    fc
      .jsonValue()
      .filter((v) => !isObject(v))
      .map(
        (v): RawCase => ({
          what: "JSON that is not an object",
          payload: JSON.stringify(v),
          headers: {},
          statuses: [400],
        }),
      ),
    pickFrom("", " ", "\n", "\ufeff").map(
      (text): RawCase => ({ what: "an empty body", payload: text, headers: {}, statuses: [400] }),
    ),
    fc.tuple(valid, fc.noBias(fc.nat())).map(
      ([text, n]): RawCase => ({
        what: "a truncated body",
        payload: text.slice(0, n % text.length),
        headers: {},
        statuses: [400],
      }),
    ),
  ];
}

/** A valid body under a Content-Type that is not JSON, or none: 415. */
function notJsonTypes(valid: fc.Arbitrary<string>): fc.Arbitrary<RawCase>[] {
  return [
    fc.tuple(valid, pickFrom(...NOT_JSON_TYPES)).map(
      ([text, type]): RawCase => ({
        what: `Content-Type ${type}`,
        payload: text,
        headers: { "content-type": type },
        statuses: [415],
      }),
    ),
    valid.map(
      (text): RawCase => ({
        what: "no Content-Type",
        payload: text,
        headers: { "content-type": undefined },
        statuses: [415],
      }),
    ),
  ];
}

/**
 * A valid body in another accepted form: compressed, a Content-Type with parameters, the SDK's key
 * header, a query string beside it: 200.
 */
function acceptedForms(op: Operation, valid: fc.Arbitrary<string>): fc.Arbitrary<RawCase>[] {
  return [
    fc.tuple(valid, pickFrom("gzip", "x-gzip", "deflate", "GZIP", "identity, gzip")).map(
      ([text, coding]): RawCase => ({
        what: `a valid body, Content-Encoding ${coding}`,
        payload: /deflate/.test(coding) ? deflateSync(text) : gzipSync(text),
        headers: { "content-encoding": coding },
        statuses: [200],
      }),
    ),
    fc
      .tuple(valid, pickFrom("application/json; charset=utf-8", "application/json;charset=UTF-8", "Application/JSON"))
      .map(
        ([text, type]): RawCase => ({
          what: `a valid body, Content-Type ${type} (G4)`,
          payload: text,
          headers: { "content-type": type },
          statuses: [200],
        }),
      ),
    valid.map(
      (text): RawCase => ({
        what: "a valid body, the key under X-Agentops-Api-Key (4.2)",
        payload: text,
        headers: op.security === "apiKey" ? { "x-agentmon-api-key": undefined, "x-agentops-api-key": API_KEY } : {},
        statuses: [200],
      }),
    ),
    fc.tuple(valid, fc.array(fc.tuple(textArb(0, 10), textArb(0, 10)), { minLength: 1, maxLength: 3 })).map(
      ([text, pairs]): RawCase => ({
        what: "a valid body, a query string beside it",
        payload: text,
        headers: {},
        query: pairs.map(([k, v]) => `${encodeURIComponent(k)}=${encodeURIComponent(v)}`).join("&"),
        statuses: [200],
      }),
    ),
  ];
}

/** Compressed garbage, a truncated gzip stream (400), and encodings the server does not take (415). */
function badEncodings(valid: fc.Arbitrary<string>): fc.Arbitrary<RawCase>[] {
  return [
    fc.tuple(fc.uint8Array({ maxLength: 100 }), pickFrom("gzip", "deflate")).map(
      ([bytes, coding]): RawCase => ({
        what: `garbage as ${coding}`,
        payload: Buffer.from(bytes),
        headers: { "content-encoding": coding },
        statuses: [400],
      }),
    ),
    fc.tuple(valid, fc.noBias(fc.nat())).map(([text, n]): RawCase => {
      const zipped = gzipSync(text);
      return {
        what: "truncated gzip",
        payload: zipped.subarray(0, n % zipped.length),
        headers: { "content-encoding": "gzip" },
        statuses: [400],
      };
    }),
    fc.tuple(valid, pickFrom("br", "compress", "zstd", "gzip, gzip", "bogus")).map(
      ([text, coding]): RawCase => ({
        what: `Content-Encoding ${coding}`,
        payload: text,
        headers: { "content-encoding": coding },
        statuses: [415],
      }),
    ),
  ];
}

/** An odd number token in an unknown field, and random text for a credential. */
function oddTokens(op: Operation, valid: fc.Arbitrary<string>): fc.Arbitrary<RawCase>[] {
  const placeholder = '"@@raw-token@@"';
  // A bad credential must get 401 (or 429 once an address has failed too often, 4.6).
  // A person's cookie stays in the case: random text in a key header changes nothing for it.
  const refusedKey = op.security === "none" || op.security === "person" ? undefined : [401, 429];
  return [
    fc
      .tuple(valid, pickFrom("1e999", "-1e999", "1e-999", "-0", "1E400", "123456789012345678901234567890", "0.1e1"))
      .map(
        ([text, token]): RawCase => ({
          what: `an unknown field holding the number ${token}`,
          payload: text.replace(/^\{/, `{"odd-number":${placeholder},`).replace(placeholder, token),
          headers: {},
        }),
      ),
    fc
      .tuple(valid, fc.string({ maxLength: 60 }), pickFrom("authorization", "x-agentmon-api-key", "x-agentops-api-key"))
      .map(
        ([text, value, header]): RawCase => ({
          what: `${header}: random text`,
          payload: text,
          headers: { authorization: undefined, "x-agentmon-api-key": undefined, [header]: value },
          ...(refusedKey ? { statuses: refusedKey } : {}),
        }),
      ),
  ];
}

function rawCases(op: Operation, ctx: Ctx): fc.Arbitrary<RawCase> {
  const valid = validBodies(op, ctx).map((body) => JSON.stringify(body));
  return fc.oneof(
    ...notObjects(valid),
    ...notJsonTypes(valid),
    ...acceptedForms(op, valid),
    ...badEncodings(valid),
    ...oddTokens(op, valid),
  );
}

export async function rawBodiesNever5xx(t: Test) {
  for (const op of withBody) {
    t.test(`${op.operationId}: ${op.method} ${op.path}`, async (t) => {
      const ctx = await fuzzApp(t);
      let address = 0;
      await property(
        t,
        `${op.operationId} raw`,
        rawCases(op, ctx),
        RUNS.raw,
        async (c) => {
          const label = `${op.operationId}, ${c.what}`;
          // Each case from its own address, so failed credentials (4.6) do not spill into the next.
          const from = `10.0.${(++address >> 8) & 255}.${address & 255}`;
          const before = ctx.digest();
          const res = await send(ctx, op, c.payload, c.headers, from, c.query);
          checkAnswer(res, label);
          const allowed = c.statuses?.filter((s) => s !== 200 || hasPlan(op));
          if (allowed !== undefined && allowed.length > 0 && !allowed.includes(res.statusCode)) {
            fail(`${label}: expected ${allowed.join(" or ")}, got ${res.statusCode} ${res.body.slice(0, 300)}`);
          }
          if (res.statusCode >= 400 && ctx.digest() !== before) fail(`${label}: a refused call changed the database`);
        },
        op,
      );
      await stillServes(t, ctx);
    });
  }
}
