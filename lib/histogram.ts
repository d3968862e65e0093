/**
 * A histogram as plain numbers: fixed bucket bounds, a count per bucket, a sum and a count. It
 * costs one short loop per observation and nothing else, and its snapshot is plain data that can
 * cross a thread (the storage thread keeps its group-commit figures in these; services/metrics.ts
 * turns a snapshot into Prometheus's histogram lines at scrape time).
 */
export interface HistogramSnapshot {
  /** The buckets' upper bounds, ascending; a last bucket, +Inf, is implied. */
  bounds: readonly number[];
  /** Observations per bucket (not cumulative): one entry per bound, then the +Inf bucket. */
  counts: number[];
  sum: number;
  count: number;
}

export class Histogram {
  readonly #bounds: readonly number[];
  readonly #counts: number[];
  #sum = 0;
  #count = 0;

  constructor(bounds: readonly number[]) {
    this.#bounds = bounds;
    this.#counts = new Array<number>(bounds.length + 1).fill(0);
  }

  observe(value: number) {
    let bucket = 0;
    while (bucket < this.#bounds.length && value > (this.#bounds[bucket] as number)) bucket++;
    this.#counts[bucket] = (this.#counts[bucket] as number) + 1;
    this.#sum += value;
    this.#count++;
  }

  snapshot(): HistogramSnapshot {
    return { bounds: this.#bounds, counts: [...this.#counts], sum: this.#sum, count: this.#count };
  }
}
