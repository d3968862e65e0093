// The span behind an event made from OpenTelemetry (otlp.md T15 keeps it under `otel`): its
// name, kind, status and instrumentation scope, then its attributes, span events, links and its
// resource's attributes, as OTLP/JSON holds them (ingest/otlp/types.ts). All as text: attribute
// keys and values are whatever the client sent.
import { formatDuration, h } from "./common.js";

const SPAN_KINDS = ["UNSPECIFIED", "INTERNAL", "SERVER", "CLIENT", "PRODUCER", "CONSUMER"];
const STATUS_CODES = ["UNSET", "OK", "ERROR"];

const isObject = (value) => typeof value === "object" && value !== null && !Array.isArray(value);
const list = (value) => (Array.isArray(value) ? value : []);

/** The span kept with an event, or null when `otel` is not one (a v2 client's own field, say). */
export const spanOf = (event) => (isObject(event.otel) ? event.otel : null);

/** An OTLP enum as a word: 3 → CLIENT; "SPAN_KIND_CLIENT" → CLIENT; unknown numbers as they are. */
function enumWord(value, words, prefix) {
  if (typeof value === "number") return words[value] ?? String(value);
  if (typeof value === "string" && value !== "") return value.toUpperCase().replace(prefix, "");
  return undefined;
}

/** An AnyValue as a plain value: arrays and kvlists become arrays and objects. */
function plain(value) {
  if (!isObject(value)) return value;
  if ("stringValue" in value) return value.stringValue;
  if ("boolValue" in value) return value.boolValue;
  if ("intValue" in value) return value.intValue;
  if ("doubleValue" in value) return value.doubleValue;
  if ("bytesValue" in value) return value.bytesValue;
  if ("arrayValue" in value) return list(value.arrayValue?.values).map(plain);
  if ("kvlistValue" in value) {
    return Object.fromEntries(list(value.kvlistValue?.values).map((kv) => [String(kv?.key), plain(kv?.value)]));
  }
  return Object.keys(value).length === 0 ? null : value;
}

/** An attribute's value as one line of text: scalars as they are, the rest as compact JSON. */
export function attributeText(value) {
  const v = plain(value);
  if (v === null || v === undefined) return "";
  if (typeof v === "string") return v;
  if (isObject(value) && "bytesValue" in value) return `base64:${v}`;
  return typeof v === "object" ? JSON.stringify(v) : String(v);
}

/** A table of key → value, or a line saying there is none. */
function attributes(attrs, id) {
  const rows = list(attrs);
  if (rows.length === 0) return h("p", { class: "muted" }, "None.");
  return h(
    "table",
    { class: "attrs", id },
    h(
      "tbody",
      {},
      rows.map((kv) =>
        h("tr", {}, h("th", { scope: "row" }, String(kv?.key ?? "")), h("td", {}, attributeText(kv?.value))),
      ),
    ),
  );
}

/** OTLP nanoseconds (a decimal string or a number) as µs since the epoch, or NaN. */
function nanosToMicros(nanos) {
  const digits = typeof nanos === "number" ? String(Math.trunc(nanos)) : nanos;
  if (typeof digits !== "string" || !/^\d{4,}$/.test(digits)) return Number.NaN;
  return Number(digits.slice(0, -3));
}

/** "2026-11-22 09:00:02.500000 (+1.5 s)": the UTC time, and its offset from the span's start. */
function spanTime(nanos, startUs) {
  const us = nanosToMicros(nanos);
  if (!Number.isFinite(us)) return String(nanos ?? "—");
  const iso = new Date(Math.floor(us / 1000)).toISOString();
  const time = `${iso.slice(0, 10)} ${iso.slice(11, 19)}.${String(us % 1_000_000).padStart(6, "0")}`;
  return Number.isFinite(startUs) ? `${time} (+${formatDuration((us - startUs) / 1000)})` : time;
}

/** The span's facts (name, kind, status, scope) and sections, for the detail panel. */
export function spanSection(span, facts, startUs) {
  const status = isObject(span.status) ? span.status : {};
  const code = enumWord(status.code, STATUS_CODES, /^STATUS_CODE_/) ?? "UNSET";
  const statusText = h(
    "span",
    { class: code === "ERROR" ? "status-error" : undefined, id: "span-status" },
    typeof status.message === "string" && status.message !== "" ? `${code}: ${status.message}` : code,
  );
  const scope = isObject(span.scope) ? span.scope : {};
  const scopeText = [scope.name, scope.version].filter((part) => typeof part === "string" && part !== "").join(" ");
  const events = list(span.events);
  const links = list(span.links);
  const resource = list(isObject(span.resource) ? span.resource.attributes : undefined);
  return [
    h("h3", {}, "Span"),
    facts([
      ["Span name", typeof span.name === "string" ? span.name : undefined],
      ["Span kind", enumWord(span.kind, SPAN_KINDS, /^SPAN_KIND_/)],
      ["Status", statusText],
      ["Scope", scopeText],
    ]),
    h("h3", {}, `Attributes (${list(span.attributes).length})`),
    attributes(span.attributes, "span-attributes"),
    events.length > 0
      ? [
          h("h3", {}, `Span events (${events.length})`),
          h(
            "ol",
            { class: "span-events", id: "span-events" },
            events.map((event) =>
              h(
                "li",
                { class: "span-event" },
                h(
                  "div",
                  { class: "span-event-head" },
                  h("strong", {}, String(event?.name ?? "")),
                  h("span", { class: "muted" }, spanTime(event?.timeUnixNano, startUs)),
                ),
                list(event?.attributes).length > 0 ? attributes(event.attributes) : null,
              ),
            ),
          ),
        ]
      : null,
    links.length > 0
      ? [
          h("h3", {}, `Links (${links.length})`),
          h(
            "ol",
            { class: "span-events", id: "span-links" },
            links.map((link) =>
              h(
                "li",
                {},
                h(
                  "div",
                  { class: "span-event-head" },
                  h("span", {}, "trace ", h("code", {}, String(link?.traceId ?? ""))),
                  h("span", {}, "span ", h("code", {}, String(link?.spanId ?? ""))),
                ),
                list(link?.attributes).length > 0 ? attributes(link.attributes) : null,
              ),
            ),
          ),
        ]
      : null,
    resource.length > 0
      ? h(
          "details",
          { class: "resource", id: "span-resource" },
          h("summary", {}, `Resource (${resource.length} attributes)`),
          attributes(resource),
        )
      : null,
  ];
}
