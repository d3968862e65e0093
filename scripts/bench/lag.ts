/**
 * The projector's lag as GET /metrics shows it (issue 24): `agentmon_projection_backlog` (changes
 * committed but not projected yet) and `agentmon_projection_lag_seconds` (the age of the oldest
 * of them), scraped once a second while a load runs. A scrape without them (a server from before
 * the projector, or one that failed) counts as "n/a" rather than as zero: zero would read as "no
 * lag", which nobody measured.
 */

export const LAG_GAUGES = ["agentmon_projection_backlog", "agentmon_projection_lag_seconds"] as const;
export type LagGauge = (typeof LAG_GAUGES)[number];

/**
 * The value of each sample named `name` in a Prometheus text exposition (format 0.0.4), summed
 * over its label sets (the gauges may be labelled by projection; the lag that matters is all of
 * it, so the backlog is summed; for `max: true` the largest is taken, as for an age). Undefined
 * when no sample has that name. Comments, other metrics and malformed lines are skipped.
 */
export function sampleOf(text: string, name: string, how: "sum" | "max" = "sum"): number | undefined {
  let found: number | undefined;
  for (const line of text.split("\n")) {
    if (!line.startsWith(name)) continue;
    const rest = line.slice(name.length);
    // `name 3`, `name{label="x"} 3`, optionally followed by a timestamp; not `name_total 3`.
    let value: string | undefined;
    if (rest.startsWith(" ")) value = rest.trim().split(/\s+/)[0];
    else if (rest.startsWith("{")) {
      const close = rest.lastIndexOf("}");
      if (close < 0) continue;
      value = rest
        .slice(close + 1)
        .trim()
        .split(/\s+/)[0];
    } else continue;
    const number = parseValue(value);
    if (number === undefined) continue;
    found = found === undefined ? number : how === "sum" ? found + number : Math.max(found, number);
  }
  return found;
}

/** A sample value as Prometheus writes it (`+Inf`, `-Inf` and `NaN` included). */
function parseValue(text: string | undefined): number | undefined {
  if (text === undefined || text === "") return undefined;
  if (text === "+Inf" || text === "Inf") return Number.POSITIVE_INFINITY;
  if (text === "-Inf") return Number.NEGATIVE_INFINITY;
  if (text === "NaN") return Number.NaN;
  const number = Number(text);
  return Number.isNaN(number) ? undefined : number;
}

/** One scrape's figures: undefined where the scrape lacked the gauge (or failed). */
export type LagSample = Record<LagGauge, number | undefined>;

export function lagOf(text: string): LagSample {
  return {
    agentmon_projection_backlog: sampleOf(text, "agentmon_projection_backlog", "sum"),
    agentmon_projection_lag_seconds: sampleOf(text, "agentmon_projection_lag_seconds", "max"),
  };
}

/** Max and nearest-rank p99 of what the scrapes had, and how many scrapes lacked the gauge. */
export interface LagSummary {
  scrapes: number;
  missing: number;
  max: number | undefined;
  p99: number | undefined;
}

export function summarize(samples: LagSample[], gauge: LagGauge): LagSummary {
  const values = samples.map((s) => s[gauge]).filter((v): v is number => v !== undefined && !Number.isNaN(v));
  values.sort((a, b) => a - b);
  return {
    scrapes: samples.length,
    missing: samples.length - values.length,
    max: values.length ? values[values.length - 1] : undefined,
    p99: values.length ? values[Math.max(0, Math.ceil(0.99 * values.length) - 1)] : undefined,
  };
}

/** "12 345" or "n/a", for the printed table. */
export const orNa = (value: number | undefined, digits = 0) =>
  value === undefined ? "n/a" : value.toLocaleString("en-US", { maximumFractionDigits: digits });

/**
 * Scrapes `url` (GET /metrics, with the bearer `token` when given) every `everyMs` until `stop()`;
 * `stop()` answers the samples, one per scrape (a failed scrape is a sample of n/a).
 */
export function scrapeLag(url: string, token: string | undefined, everyMs = 1000) {
  const samples: LagSample[] = [];
  let running = true;
  const headers: Record<string, string> = token ? { authorization: `Bearer ${token}` } : {};
  const none: LagSample = { agentmon_projection_backlog: undefined, agentmon_projection_lag_seconds: undefined };
  const loop = (async () => {
    while (running) {
      const started = Date.now();
      try {
        const res = await fetch(url, { headers, signal: AbortSignal.timeout(5000) });
        samples.push(res.status === 200 ? lagOf(await res.text()) : none);
        if (res.status !== 200) await res.arrayBuffer();
      } catch {
        samples.push(none);
      }
      await new Promise((resolve) => setTimeout(resolve, Math.max(0, everyMs - (Date.now() - started))));
    }
  })();
  return {
    stop: async () => {
      running = false;
      await loop;
      return samples;
    },
  };
}
