import { MultiHeadAttention, type LayerKwargs, type MultiHeadAttentionArgs } from "./multi-head-attention";
import type { Initializer, InitializerInput } from "./initializers";
import { PositionEmbedding, type PositionEmbeddingArgs } from "./position-embedding";

export {
  MultiHeadAttention,
  PositionEmbedding,
  type Initializer,
  type InitializerInput,
  type LayerKwargs,
  type MultiHeadAttentionArgs,
  type PositionEmbeddingArgs,
};

/**
 * Layers TF.js lacks, as tfjs-layers' factories make layers: registered by class name on import,
 * so models holding them serialize, travel to workers and train in model.fit on every backend.
 */
export const layers = {
  /** Keras 3's MultiHeadAttention: `apply(query | [query, value, key?], { attentionMask?, useCausalMask? })`. */
  multiHeadAttention: (args: MultiHeadAttentionArgs): MultiHeadAttention => new MultiHeadAttention(args),
  /** A learned embedding of each position, for adding to token embeddings. */
  positionEmbedding: (args: PositionEmbeddingArgs): PositionEmbedding => new PositionEmbedding(args),
};
