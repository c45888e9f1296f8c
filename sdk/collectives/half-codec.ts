import { loadAddon } from "../backends/native/addon";
import { jsHalfCodec, type HalfCodec } from "../protocol/wire-formats";

/** The addon's codec where it was built (a gradient can hold millions of values), else the JavaScript one. */
export function bestHalfCodec(): HalfCodec {
  const load = loadAddon();
  if (!load.ok) return jsHalfCodec;
  const a = load.addon;
  return { encode: a.halfEncode, decode: a.halfDecode, round: a.halfRound, feedback: a.halfFeedback };
}
