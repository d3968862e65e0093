/** ajv's errors as contract G2 details: one entry per problem, paths like `events[3].init_timestamp`. */
import type { ErrorDetail } from "../domain/errors.ts";

export interface AjvError {
  instancePath: string;
  keyword: string;
  params: Record<string, unknown>;
  message?: string;
}

const IDENTIFIER = /^[A-Za-z_$][\w$]*$/;

/** A path one step further down, in dotted/bracket form: an array index, or an object key. */
export function childPath(path: string, segment: string | number): string {
  if (typeof segment === "number") return `${path}[${segment}]`;
  if (IDENTIFIER.test(segment)) return path === "" ? segment : `${path}.${segment}`;
  return `${path}[${JSON.stringify(segment)}]`;
}

/** A JSON pointer (`/events/3/init_timestamp`) in dotted/bracket form (`events[3].init_timestamp`). */
export function pointerToPath(pointer: string): string {
  if (pointer === "") return "";
  let path = "";
  for (const raw of pointer.slice(1).split("/")) {
    const segment = raw.replaceAll("~1", "/").replaceAll("~0", "~");
    // A pointer does not say whether a segment of digits is an index or a key: written as an index.
    path = /^(0|[1-9]\d*)$/.test(segment) ? `${path}[${segment}]` : childPath(path, segment);
  }
  return path;
}

const A: Record<string, string> = {
  string: "a string",
  integer: "an integer",
  number: "a number",
  object: "an object",
  array: "an array",
  boolean: "true or false",
  null: "null",
};

function describe(error: AjvError): string | undefined {
  const p = error.params;
  switch (error.keyword) {
    case "type":
      return `must be ${String(p.type)
        .split(",")
        .map((t) => A[t] ?? t)
        .join(" or ")}`;
    case "format":
      return "must be an ISO 8601 date-time with a time, such as 2026-11-22T05:09:43.640361Z";
    case "enum":
      return `must be one of: ${(p.allowedValues as unknown[]).filter((v) => v !== null).join(", ")}`;
    case "required":
      return "is required";
    case "minLength":
      return p.limit === 1 ? "must not be empty" : `must be at least ${p.limit} characters`;
    case "maxLength":
      return `must be at most ${p.limit} characters`;
    case "minItems":
      return `must have at least ${p.limit} item${p.limit === 1 ? "" : "s"}`;
    case "maxItems":
      return `must have at most ${p.limit} items`;
    case "minimum":
      return `must be >= ${p.limit}`;
    case "additionalProperties":
      return "is not a field of this request";
    case "if":
    case "anyOf":
    case "oneOf":
      return undefined; // the errors of the branch say what is wrong
    default:
      return error.message ?? "is not valid";
  }
}

export function detailsFromAjv(errors: AjvError[]): ErrorDetail[] {
  const seen = new Set<string>();
  const details: ErrorDetail[] = [];
  for (const error of errors) {
    const message = describe(error);
    if (message === undefined) continue;
    // The property itself: one that is missing, or one that the schema does not allow.
    const property = error.keyword === "required" ? error.params.missingProperty : error.params.additionalProperty;
    const pointer =
      error.keyword === "required" || error.keyword === "additionalProperties"
        ? `${error.instancePath}/${String(property).replaceAll("~", "~0").replaceAll("/", "~1")}`
        : error.instancePath;
    const path = pointerToPath(pointer);
    if (seen.has(path)) continue; // one entry per problem: a null-or-enum field fails twice
    seen.add(path);
    details.push({ path, message });
  }
  if (details.length === 0 && errors.length > 0) details.push({ path: "", message: "does not match the schema" });
  return details;
}
