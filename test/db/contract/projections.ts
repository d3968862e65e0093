/**
 * The Store contract: every projection equals its recomputation from the raw rows
 * (docs/decisions/033-projections.md). `sameAsRebuild` reads every projection's rows once the
 * projector has caught up, rebuilds them all from scratch (`rebuildProjections`, then batches
 * until the queue is empty) and compares table by table: counts and sums exactly, costs within
 * 1e-9 relative (doubles added in another order), a rollup's max_us at or above the rebuilt one
 * and in its histogram bucket (a duration taken out leaves its bucket's max: decision 026).
 */
import type { Test } from "tap";
import type { Store } from "../../../db/store.ts";
import { histogramBucket } from "../../../domain/analytics.ts";
import type { Opened } from "./fixture.ts";

/** Runs the projector until nothing is queued. */
export async function drain(store: Store) {
  while ((await store.projectBatch()) > 0) {}
}

/** Where `got` and `want` differ, as paths; numbers compared as the header says. */
export function differences(got: unknown, want: unknown, path = ""): string[] {
  if (typeof got === "number" && typeof want === "number") {
    if (path.endsWith(".max_us")) {
      return got >= want && histogramBucket(got) === histogramBucket(want) ? [] : [`${path}: ${got} for ${want}`];
    }
    return Math.abs(got - want) <= 1e-9 * Math.max(1, Math.abs(want)) ? [] : [`${path}: ${got} ≠ ${want}`];
  }
  if (typeof got === "string" && typeof want === "string" && path.endsWith(".share")) {
    return differences(JSON.parse(got), JSON.parse(want), `${path}(json)`);
  }
  if (Array.isArray(got) && Array.isArray(want)) {
    if (got.length !== want.length) return [`${path}: ${got.length} rows/items ≠ ${want.length}`];
    return got.flatMap((item, i) => differences(item, want[i], `${path}[${i}]`));
  }
  if (got !== null && want !== null && typeof got === "object" && typeof want === "object") {
    const keys = [...new Set([...Object.keys(got), ...Object.keys(want)])].sort();
    return keys.flatMap((key) =>
      differences((got as Record<string, unknown>)[key], (want as Record<string, unknown>)[key], `${path}.${key}`),
    );
  }
  return Object.is(got, want) ? [] : [`${path}: ${JSON.stringify(got)} ≠ ${JSON.stringify(want)}`];
}

/** Asserts that the projections, caught up, equal a rebuild from the raw rows (then left rebuilt). */
export async function sameAsRebuild(t: Test, store: Store, derived: Opened["derived"], what: string) {
  if (derived === undefined) return;
  await drain(store);
  const projected = await derived();
  await store.rebuildProjections();
  await drain(store);
  const rebuilt = await derived();
  const diff = differences(projected, rebuilt);
  t.strictSame(diff.slice(0, 10), [], `${what}: every projection equals a rebuild from the raw rows`);
}
