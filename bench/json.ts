/** A line a benchmark's process printed, or a row of its results: JSON, read field by field. */
export interface Json {
  [key: string]: unknown;
}
