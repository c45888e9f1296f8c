import type { OpBuilder } from "./layer-call";
import { conv } from "./ops/convolution";
import { dense } from "./ops/dense";
import { dot } from "./ops/dot";
import { dropout, dropoutRate } from "./ops/dropout";
import { activationLayer, masking, permute, prelu, repeatVector } from "./ops/activation-layers";
import { embedding } from "./ops/embedding";
import { concatenate, merge } from "./ops/merge";
import { batchNorm, layerNorm } from "./ops/norm";
import { globalPool, pool } from "./ops/pool";
import { attention } from "./ops/attention";
import { position } from "./ops/position";
import { separable } from "./ops/separable";
import { recurrent } from "./ops/recurrent";

/**
 * What a layer's call does to masks, as tfjs-layers' computeMask has it (for layers that support
 * masking; any other gives none): "pass" the first input's on, "none", "sequence" (RNNs: passed on
 * with returnSequences), "ids" (Embedding with maskZero: ids that are not 0), "values" (Masking:
 * positions not all maskValue), or "refuse": tfjs-layers' merge layers reshape a mask they are
 * given (expandDims on the batch axis), which no later layer reads as the same mask.
 */
export type MaskRule = "pass" | "none" | "sequence" | "ids" | "values" | "refuse";

export interface LayerEntry {
  /** The op, or "alias": the output is the input under another shape (or passed through), nothing computed. */
  build: OpBuilder | "alias";
  mask: MaskRule;
  /** When an op builder would only pass the input through (a Dropout of rate 0), it is an alias instead. */
  aliasIf?: (cfg: Record<string, unknown>) => boolean;
}

const MERGE: LayerEntry = { build: merge, mask: "refuse" };
const POOL: LayerEntry = { build: pool, mask: "none" };
const GLOBAL: LayerEntry = { build: globalPool, mask: "none" };
const RNN: LayerEntry = { build: recurrent, mask: "sequence" };
const ACTIVATION: LayerEntry = { build: activationLayer, mask: "pass" };
const CONV: LayerEntry = { build: conv, mask: "none" };

/** Every layer class the native step computes, by tfjs-layers' class name. */
export const LAYER_TABLE: Readonly<Record<string, LayerEntry>> = {
  Dense: { build: dense, mask: "pass" },
  Conv1D: CONV,
  Conv2D: CONV,
  DepthwiseConv2D: CONV,
  SeparableConv2D: { build: separable, mask: "none" },
  MaxPooling1D: POOL,
  MaxPooling2D: POOL,
  AveragePooling1D: POOL,
  AveragePooling2D: POOL,
  GlobalAveragePooling1D: GLOBAL,
  GlobalAveragePooling2D: GLOBAL,
  GlobalMaxPooling1D: GLOBAL,
  GlobalMaxPooling2D: GLOBAL,
  BatchNormalization: { build: batchNorm, mask: "pass" },
  LayerNormalization: { build: layerNorm, mask: "pass" },
  Embedding: { build: embedding, mask: "ids" },
  Dropout: {
    build: dropout,
    mask: "pass",
    aliasIf: (cfg) => dropoutRate({ cfg } as Parameters<typeof dropoutRate>[0]) === null,
  },
  SpatialDropout1D: {
    build: dropout,
    mask: "pass",
    aliasIf: (cfg) => dropoutRate({ cfg } as Parameters<typeof dropoutRate>[0]) === null,
  },
  Add: MERGE,
  Average: MERGE,
  Multiply: MERGE,
  Maximum: MERGE,
  Minimum: MERGE,
  Concatenate: { build: concatenate, mask: "refuse" },
  Dot: { build: dot, mask: "none" },
  Activation: ACTIVATION,
  ReLU: ACTIVATION,
  LeakyReLU: ACTIVATION,
  ELU: ACTIVATION,
  ThresholdedReLU: ACTIVATION,
  Softmax: ACTIVATION,
  PReLU: { build: prelu, mask: "pass" },
  Masking: { build: masking, mask: "values" },
  Flatten: { build: "alias", mask: "none" },
  Reshape: { build: "alias", mask: "none" },
  Permute: { build: permute, mask: "none" },
  RepeatVector: { build: repeatVector, mask: "none" },
  LSTM: RNN,
  GRU: RNN,
  SimpleRNN: RNN,
  MultiHeadAttention: { build: attention, mask: "pass" },
  PositionEmbedding: { build: position, mask: "pass" },
};

/** The classes the table holds, for messages. */
export function layerClasses(): string {
  return Object.keys(LAYER_TABLE).join(", ");
}
