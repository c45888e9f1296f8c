import type * as tf from "@tensorflow/tfjs";
import type { Op, ParamSlot } from "./op";

export type Config = Record<string, unknown>;

/** One layer call as an op builder sees it: shapes per sample, fixed for the op it makes. */
export interface LayerCall {
  layer: tf.layers.Layer;
  /** "name (Class)". */
  name: string;
  cls: string;
  cfg: Config;
  inShapes: number[][];
  outShapes: number[][];
  /** Whether a mask reaches the call (tfjs-layers passes its layer the first input's mask). */
  masked: boolean;
  /** The layer's weight of this name ("kernel", "bias", ...) and where its gradient goes, or null when it has none. */
  param(name: string): ParamSlot | null;
}

/** Makes a layer call's op, or says why the native step cannot compute it. */
export type OpBuilder = (call: LayerCall) => Op | string;

/** A pair from a config's number-or-pair field. */
export function pair(v: unknown, fallback = 1): [number, number] {
  if (v === undefined || v === null) return [fallback, fallback];
  return Array.isArray(v) ? [Number(v[0]), Number(v[1] ?? v[0])] : [Number(v), Number(v)];
}

/** A config's single number, which tfjs-layers sometimes keeps as a one-element list. */
export function single(v: unknown, fallback: number): number {
  if (v === undefined || v === null) return fallback;
  return Array.isArray(v) ? Number(v[0]) : Number(v);
}
