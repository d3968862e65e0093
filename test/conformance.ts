/**
 * The conformance layer (decision 030): every answer a test receives is checked against its
 * operation in openapi.yaml, found by method and path template; its status must be one the
 * operation documents, its media type one that status documents, and a JSON body must be valid
 * against that media type's schema *closed*: an object schema that does not say
 * `additionalProperties` is taken as `additionalProperties: false` (`unevaluatedProperties: false`
 * where it is composed of `allOf`/`oneOf`/`anyOf` branches, which stay open so that each branch
 * sees the whole object), so a field the document does not name is refused. Schemas that document
 * a free-form object (`additionalProperties: true`, or `type: object` naming no property) stay
 * free. Other bodies (ndjson, csv, protobuf, html, text, yaml) are checked for status and media
 * type only. test/helper.ts build() runs it on every app.inject; checkAnswer serves the tests that
 * talk to a real server.
 *
 * `seen` records every property path the checked JSON answers held, by schema
 * (`ListSessionsResponse.sessions[].session.conversation_id`), for test/conformance.fields.test.ts.
 */
import { Ajv2020, type ValidateFunction } from "ajv/dist/2020.js";
import addFormats from "ajv-formats";
import { isTimestamp } from "../domain/timestamps.ts";
import { loadSpec } from "../lib/spec.ts";

type Schema = Record<string, unknown>;
interface Response {
  $ref?: string;
  content?: Record<string, { schema?: Schema }>;
}
interface Operation {
  operationId?: string;
  responses?: Record<string, Response>;
}
interface Spec {
  paths: Record<string, Record<string, Operation>>;
  components: { schemas: Record<string, Schema>; responses?: Record<string, Response> };
}

const { spec } = loadSpec<Spec>();
const METHODS = new Set(["get", "put", "post", "delete", "patch", "head", "options"]);

/** The spec's paths as patterns, the literal ones first (`/v1/traces/` before a template could take it). */
const routes = Object.entries(spec.paths)
  .map(([path, item]) => ({
    path,
    item,
    params: (path.match(/\{/g) ?? []).length,
    pattern: new RegExp(`^${path.replace(/[.]/g, "\\.").replace(/\{[^}]+\}/g, "[^/]+")}$`),
  }))
  .sort((a, b) => a.params - b.params);

/** The operation a request went to: undefined for a path or method openapi.yaml has not (a 404 or 405 of the router). */
export function operationOf(
  method: string,
  url: string,
): { path: string; method: string; operation: Operation } | undefined {
  const pathname = new URL(url, "http://x").pathname;
  const verb = method.toLowerCase() === "head" ? "get" : method.toLowerCase();
  for (const route of routes) {
    if (!route.pattern.test(pathname)) continue;
    const operation = route.item[verb];
    if (operation !== undefined && METHODS.has(verb)) return { path: route.path, method: verb, operation };
  }
  return undefined;
}

const resolveResponse = (response: Response): Response =>
  response.$ref === undefined ? response : (spec.components.responses?.[response.$ref.split("/").pop() ?? ""] ?? {});

// ----------------------------------------------------------------------------- closing the schemas

const COMPOSED = ["allOf", "anyOf", "oneOf"] as const;
const refName = (ref: string) => ref.replace(/^#\/components\/schemas\//, "");

/** A part of the document left as written, its references pointed at the whole document (added to ajv as `openapi`). */
function asWritten(node: unknown): unknown {
  if (Array.isArray(node)) return node.map(asWritten);
  if (node === null || typeof node !== "object") return node;
  const out: Schema = {};
  for (const [key, value] of Object.entries(node)) {
    out[key] =
      key === "$ref" && typeof value === "string" && value.startsWith("#/") ? `openapi${value}` : asWritten(value);
  }
  return out;
}

/** Whether a schema speaks of an object's properties (so that closing it means something). */
function namesProperties(node: Schema): boolean {
  return node.properties !== undefined || COMPOSED.some((key) => Array.isArray(node[key]));
}

/**
 * The schema closed, its `$ref`s inlined (a schema met again inside itself stays a reference to
 * the document as written). `open`: a branch of a composition, left open (its parent is closed).
 */
function closed(node: unknown, open = false, seen: string[] = []): unknown {
  if (Array.isArray(node)) return node.map((item) => closed(item, open, seen));
  if (node === null || typeof node !== "object") return node;
  const schema = node as Schema;
  if (typeof schema.$ref === "string") {
    const name = refName(schema.$ref);
    if (seen.includes(name)) return { $ref: `openapi${schema.$ref}` };
    const { $ref: _ref, ...siblings } = schema;
    return closed({ ...spec.components.schemas[name], ...siblings }, open, [...seen, name]);
  }
  const out: Schema = {};
  for (const [key, value] of Object.entries(schema)) {
    if (key === "properties" || key === "patternProperties") {
      out[key] = Object.fromEntries(
        Object.entries(value as Schema).map(([name, child]) => [name, closed(child, false, seen)]),
      );
    } else if ((COMPOSED as readonly string[]).includes(key)) {
      out[key] = (value as unknown[]).map((branch) => closed(branch, true, seen));
    } else if (key === "items" || key === "prefixItems" || key === "contains") {
      out[key] = closed(value, false, seen);
    } else if (key === "additionalProperties" && typeof value === "object") {
      out[key] = closed(value, false, seen);
    } else if (key === "discriminator") {
      // ajv would need its own option and refuses `mapping`; oneOf decides alone.
    } else {
      out[key] = asWritten(value);
    }
  }
  if (!open && namesProperties(schema) && schema.additionalProperties === undefined) {
    if (schema.unevaluatedProperties === undefined) {
      if (COMPOSED.some((key) => Array.isArray(schema[key]))) out.unevaluatedProperties = false;
      else out.additionalProperties = false;
    }
  }
  return out;
}

const ajv = new Ajv2020({ strict: false, allErrors: true, validateFormats: true });
addFormats.default(ajv);
// G6: the document's date-time is the server's (http/schemas.ts), wider than RFC 3339.
ajv.addFormat("date-time", { type: "string", validate: isTimestamp });
ajv.addSchema(asWritten({ components: spec.components }) as Schema, "openapi");

const validators = new Map<string, ValidateFunction>();
function validatorFor(key: string, schema: Schema): ValidateFunction {
  let validate = validators.get(key);
  if (validate === undefined) {
    validate = ajv.compile(closed(schema) as Schema);
    validators.set(key, validate);
  }
  return validate;
}

// ----------------------------------------------------------------------------- the check

export interface Answer {
  method: string;
  url: string;
  status: number;
  contentType: string | undefined;
  body: string;
}

const isJson = (mediaType: string) => mediaType === "application/json" || mediaType.endsWith("+json");

/** Every property path of a JSON value (`a.b[].c`), for coverage. */
function pathsOf(value: unknown, prefix: string, into: Set<string>) {
  if (Array.isArray(value)) {
    for (const item of value) pathsOf(item, `${prefix}[]`, into);
  } else if (value !== null && typeof value === "object") {
    for (const [key, child] of Object.entries(value)) {
      const path = prefix === "" ? key : `${prefix}.${key}`;
      into.add(path);
      pathsOf(child, path, into);
    }
  }
}

/**
 * Every property path seen in the checked JSON answers, by schemaKey (`GetSessionResponse`,
 * `Error`), once recordPaths() was called: walking every answer cost ~3 ms a 50-row page, more
 * than its check, so only the coverage test asks for it.
 */
export const seen = new Map<string, Set<string>>();
let recording = false;
export const recordPaths = () => {
  recording = true;
};

/** Why an answer does not conform to openapi.yaml, or undefined when it does (or names no operation). */
export function conformanceProblem(answer: Answer): string | undefined {
  const found = operationOf(answer.method, answer.url);
  if (found === undefined) return undefined;
  const name = `${found.operation.operationId ?? ""} (${found.method.toUpperCase()} ${found.path})`;
  const responses = found.operation.responses ?? {};
  const status = String(answer.status);
  const documented = responses[status] ?? responses[`${status[0]}XX`] ?? responses.default;
  if (documented === undefined) {
    return `${name} answered status ${status}, which openapi.yaml does not document for it (documented: ${Object.keys(responses).join(", ")}); body: ${answer.body.slice(0, 300)}`;
  }
  const response = resolveResponse(documented);
  const content = response.content ?? {};
  const mediaType = (answer.contentType ?? "").split(";")[0]?.trim().toLowerCase() ?? "";
  if (Object.keys(content).length === 0) {
    if (answer.body.length === 0) return undefined;
    return `${name} ${status} documents no body, but answered ${mediaType || "no media type"}: ${answer.body.slice(0, 300)}`;
  }
  // Parameters aside, on both sides (`text/plain; version=0.0.4` documents Prometheus' text format).
  const key = Object.keys(content).find((type) => (type.split(";")[0] ?? "").trim().toLowerCase() === mediaType);
  if (key === undefined) {
    return `${name} ${status} answered media type "${mediaType}", which openapi.yaml does not document for it (documented: ${Object.keys(content).join(", ")})`;
  }
  const schema = content[key]?.schema;
  if (!isJson(mediaType) || schema === undefined || answer.method.toUpperCase() === "HEAD") return undefined;
  let body: unknown;
  try {
    body = JSON.parse(answer.body);
  } catch {
    return `${name} ${status} answered ${mediaType} that is not JSON: ${answer.body.slice(0, 300)}`;
  }
  const validate = validatorFor(`${found.method} ${found.path} ${status} ${key}`, schema);
  if (recording) {
    const coverage = schemaKey(found.operation.operationId ?? name, status, schema);
    const paths = seen.get(coverage) ?? new Set<string>();
    seen.set(coverage, paths);
    pathsOf(body, "", paths);
  }
  if (validate(body)) return undefined;
  const errors = (validate.errors ?? [])
    .slice(0, 8)
    .map((e) => {
      const extra = (e.params as { additionalProperty?: string; unevaluatedProperty?: string }) ?? {};
      const property = extra.additionalProperty ?? extra.unevaluatedProperty;
      return `  ${e.instancePath || "/"} ${e.message}${property === undefined ? "" : ` "${property}"`} (schema ${e.schemaPath})`;
    })
    .join("\n");
  return `${name} ${status} ${key}: the body does not match openapi.yaml (undocumented properties refused):\n${errors}\nbody: ${answer.body.slice(0, 500)}`;
}

/** Throws when the answer does not conform: the test that received it fails with the reason. */
export function checkAnswer(answer: Answer): void {
  const problem = conformanceProblem(answer);
  if (problem !== undefined) throw new Error(`conformance (decision 030): ${problem}`);
}

/** A fetch Response, read once and checked; answers its text, for the caller to read again. */
export async function checkFetched(method: string, url: string, res: globalThis.Response): Promise<string> {
  const body = await res.clone().text();
  checkAnswer({ method, url, status: res.status, contentType: res.headers.get("content-type") ?? undefined, body });
  return body;
}

// ----------------------------------------------------------------------------- optional fields

/** Where a JSON answer's schema comes from: the top schema's name when it is a reference, else the operation and status. */
export function schemaKey(operationId: string, status: string, schema: Schema): string {
  return typeof schema.$ref === "string" ? refName(schema.$ref) : `${operationId} ${status}`;
}

/**
 * Every optional property path of a schema (`sessions[].session.conversation_id`): a property its
 * object does not require, and every property below one; the branches of allOf/oneOf/anyOf
 * each (a property of a oneOf branch is optional whatever the branch requires: the answer may take
 * another branch). A schema met again inside itself is not walked again.
 */
export function optionalPaths(schema: unknown, prefix = "", optional = false, stack: string[] = []): Set<string> {
  const out = new Set<string>();
  if (schema === null || typeof schema !== "object") return out;
  const node = schema as Schema;
  if (typeof node.$ref === "string") {
    const name = refName(node.$ref);
    if (stack.includes(name)) return out;
    return optionalPaths(spec.components.schemas[name], prefix, optional, [...stack, name]);
  }
  const required = new Set(Array.isArray(node.required) ? (node.required as string[]) : []);
  for (const [name, child] of Object.entries((node.properties as Record<string, unknown>) ?? {})) {
    const path = prefix === "" ? name : `${prefix}.${name}`;
    const isOptional = optional || !required.has(name);
    if (isOptional) out.add(path);
    for (const p of optionalPaths(child, path, isOptional, stack)) out.add(p);
  }
  if (node.items !== undefined) for (const p of optionalPaths(node.items, `${prefix}[]`, optional, stack)) out.add(p);
  for (const key of COMPOSED) {
    for (const branch of (node[key] as unknown[] | undefined) ?? []) {
      for (const p of optionalPaths(branch, prefix, optional || key !== "allOf", stack)) out.add(p);
    }
  }
  return out;
}

/** Every JSON response schema of openapi.yaml, by schemaKey, with the operations that answer it. */
export function jsonResponseSchemas(): Map<string, { schema: Schema; operations: Set<string> }> {
  const out = new Map<string, { schema: Schema; operations: Set<string> }>();
  for (const [path, item] of Object.entries(spec.paths)) {
    for (const [method, operation] of Object.entries(item)) {
      if (!METHODS.has(method)) continue;
      for (const [status, documented] of Object.entries(operation.responses ?? {})) {
        for (const [type, media] of Object.entries(resolveResponse(documented).content ?? {})) {
          if (!isJson(type) || media.schema === undefined) continue;
          const key = schemaKey(operation.operationId ?? `${method} ${path}`, status, media.schema);
          const entry = out.get(key) ?? { schema: media.schema, operations: new Set<string>() };
          entry.operations.add(`${operation.operationId} ${status}`);
          out.set(key, entry);
        }
      }
    }
  }
  return out;
}
