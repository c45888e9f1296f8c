import type { z } from "zod";
import type { AutoOptionsSchema } from "./auto/options";
import type { DataOptionsSchema } from "./data/options";
import type { HybridOptionsSchema, ModelOptionsSchema, PipelineOptionsSchema } from "./pipeline/options";
import type { PsOptionsSchema } from "./ps/options";

/** A literal no option takes: added to each union and taken out again (see Readable). */
type Marker = "\u0000";
type Walk<T> = T extends string | number | boolean | bigint | symbol | null | undefined
  ? T | Marker
  : T extends (...args: never[]) => unknown
    ? T
    : { [K in keyof T]: Readable<T[K]> };
/**
 * What a schema accepts, as a user reads it in an editor or a compiler error: zod's input
 * types name internal aliases (`$InferEnumInput<{ fp16: "fp16"; ... }>`), which a mistyped
 * option's error printed twice before its "Did you mean"; here they are the literal unions.
 * A union mapped onto itself keeps its alias, so each member gains Marker on the way.
 */
type Readable<T> = Exclude<Walk<T>, Marker>;

/**
 * A second, empty base for each interface below: TypeScript reports an interface with one base
 * and no members of its own as its base's expanded structure, so a mistyped option's error
 * would print that instead of the interface's name, which says the strategy.
 */
interface Named {}

/** Options of strategy("data") (docs/strategies.md#the-builder). */
export interface DataStrategyOptions extends Readable<z.input<typeof DataOptionsSchema>>, Named {}
/** Options of strategy("ps") (docs/strategies.md#the-builder). */
export interface PsStrategyOptions extends Readable<z.input<typeof PsOptionsSchema>>, Named {}
/** Options of strategy("model") (docs/strategies.md#the-builder). */
export interface ModelStrategyOptions extends Readable<z.input<typeof ModelOptionsSchema>>, Named {}
/** Options of strategy("pipeline") (docs/strategies.md#the-builder). */
export interface PipelineStrategyOptions extends Readable<z.input<typeof PipelineOptionsSchema>>, Named {}
/** Options of strategy("hybrid") (docs/strategies.md#the-builder). */
export interface HybridStrategyOptions extends Readable<z.input<typeof HybridOptionsSchema>>, Named {}
/** Options of strategy("auto") (docs/strategies.md#the-builder). */
export interface AutoStrategyOptions extends Readable<z.input<typeof AutoOptionsSchema>>, Named {}

/** Each built-in strategy's options, by the name strategy(name, options) takes. */
export interface StrategyOptionsByName {
  data: DataStrategyOptions;
  ps: PsStrategyOptions;
  model: ModelStrategyOptions;
  pipeline: PipelineStrategyOptions;
  hybrid: HybridStrategyOptions;
  auto: AutoStrategyOptions;
}
