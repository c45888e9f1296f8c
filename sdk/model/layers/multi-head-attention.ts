import * as tf from "@tensorflow/tfjs";
import { ModelError } from "../../errors/errors";
import { positiveInteger } from "./checks";
import {
  deserializeInitializer,
  initializerOf,
  serializeInitializer,
  type InitializerInput as Init,
} from "./initializers";

/** The options of a layer's `apply` (here `attentionMask` and `useCausalMask`), as tfjs-layers passes them on. */
export type LayerKwargs = Record<string, unknown>;

/** What `layers.multiHeadAttention` takes: Keras 3's MultiHeadAttention's options, in camelCase. */
export interface MultiHeadAttentionArgs {
  /** Attention heads. */
  numHeads: number;
  /** Size of each head's query and key. */
  keyDim: number;
  /** Size of each head's value (default keyDim). */
  valueDim?: number;
  /** Dropout rate on the attention probabilities, in training. */
  dropout?: number;
  /** Whether the projections have biases (default true). */
  useBias?: boolean;
  /** The output's last dimension (default: the query's). */
  outputShape?: number;
  /** Whether a position attends only to itself and earlier ones, whatever the call says (a call's `useCausalMask` sets it too). */
  useCausalMask?: boolean;
  kernelInitializer?: Init;
  biasInitializer?: Init;
  name?: string;
  /** Set by `apply`'s `attentionMask` (and kept in the config): the last input is an attention mask. */
  hasAttentionMask?: boolean;
  trainable?: boolean;
  inputShape?: Array<number | null>;
  batchInputShape?: Array<number | null>;
}

/** The large negative number added to masked scores before the softmax (Keras' for float32). */
export const MASKED = -1e9;

/**
 * Keras' MultiHeadAttention, which TF.js lacks: query, key and value projected to `numHeads`
 * heads (the query scaled by 1/sqrt(keyDim)), scaled dot-product attention with an optional
 * attention mask, causal mask and the query's mask, dropout on the probabilities in training,
 * and the heads projected back. Called as Keras 3 calls it, `apply(query)` (self-attention),
 * `apply([query, value])`, `apply([query, value, key])`, with `{ attentionMask, useCausalMask }`
 * as the call's options; the options become part of the layer's config (TF.js runs a layer with
 * its inputs and mask only), so it serializes by class name like any layer. The weights have
 * Keras' shapes: query, key, value kernels [dim, heads, keyDim]; output kernel [heads, valueDim, out].
 */
export class MultiHeadAttention extends tf.layers.Layer {
  static className = "MultiHeadAttention";
  readonly numHeads: number;
  readonly keyDim: number;
  readonly valueDim: number;
  readonly dropout: number;
  readonly useBias: boolean;
  readonly outputDim: number | null;
  useCausalMask: boolean;
  hasAttentionMask: boolean;
  private readonly kernelInit: Init;
  private readonly biasInit: Init;
  private w: Record<string, tf.LayerVariable> = {};

  /** Checks the sizes and keeps the options; the weights are made when the layer is first applied. */
  constructor(args: MultiHeadAttentionArgs) {
    super(args as unknown as ConstructorParameters<typeof tf.layers.Layer>[0]);
    positiveInteger("MultiHeadAttention", "numHeads", args.numHeads);
    positiveInteger("MultiHeadAttention", "keyDim", args.keyDim);
    this.numHeads = args.numHeads;
    this.keyDim = args.keyDim;
    this.valueDim = args.valueDim ?? args.keyDim;
    this.dropout = args.dropout ?? 0;
    if (!(this.dropout >= 0 && this.dropout < 1))
      throw new ModelError(`MultiHeadAttention: dropout must be in [0, 1), not ${this.dropout}`);
    this.useBias = args.useBias ?? true;
    this.outputDim = args.outputShape ?? null;
    this.useCausalMask = args.useCausalMask ?? false;
    this.hasAttentionMask = args.hasAttentionMask ?? false;
    this.kernelInit = args.kernelInitializer ?? "glorotUniform";
    this.biasInit = args.biasInitializer ?? "zeros";
    this.supportsMasking = true;
  }

  /** Which of query, value, key, attention mask `inputs` holds, by position. */
  parts<T>(inputs: T | T[]): { query: T; value: T; key: T; mask: T | null } {
    const list = Array.isArray(inputs) ? inputs : [inputs];
    const mask = this.hasAttentionMask ? list[list.length - 1]! : null;
    const qvk = this.hasAttentionMask ? list.slice(0, -1) : list;
    const query = qvk[0]!;
    const value = qvk[1] ?? query;
    return { query, value, key: qvk[2] ?? value, mask };
  }

  /** Called with the query alone: its mask (the one TF.js passes) is the keys' too. */
  private selfAttention(inputs: tf.Tensor | tf.Tensor[]): boolean {
    return !Array.isArray(inputs) || inputs.length === (this.hasAttentionMask ? 2 : 1);
  }

  /** Keras' call: `attentionMask` and `useCausalMask` as options; they are kept in the layer's config. */
  override apply(
    inputs: tf.Tensor | tf.Tensor[] | tf.SymbolicTensor | tf.SymbolicTensor[],
    kwargs: LayerKwargs = {},
  ): tf.Tensor | tf.Tensor[] | tf.SymbolicTensor | tf.SymbolicTensor[] {
    const { attentionMask, useCausalMask, ...rest } = kwargs;
    const list = (Array.isArray(inputs) ? [...inputs] : [inputs]) as Array<tf.Tensor | tf.SymbolicTensor>;
    if (useCausalMask !== undefined) {
      if (this.inboundNodes.length > 0 && this.useCausalMask !== useCausalMask)
        throw new ModelError(
          `${this.name} was called with useCausalMask ${this.useCausalMask} before; one layer keeps one`,
        );
      this.useCausalMask = useCausalMask === true;
    }
    if (attentionMask !== undefined && attentionMask !== null) {
      if (this.inboundNodes.length > 0 && !this.hasAttentionMask)
        throw new ModelError(`${this.name} was called without an attention mask before; one layer is called one way`);
      this.hasAttentionMask = true;
      list.push(attentionMask as tf.Tensor | tf.SymbolicTensor);
    }
    return super.apply((list.length === 1 ? list[0]! : list) as tf.Tensor, rest);
  }

  override build(inputShape: tf.Shape | tf.Shape[]): void {
    const shapes = (Array.isArray(inputShape[0]) ? inputShape : [inputShape]) as tf.Shape[];
    const { query, value, key } = this.parts(shapes);
    const dim = (s: tf.Shape): number => s[s.length - 1] as number;
    const out = this.outputDim ?? dim(query);
    const H = this.numHeads;
    const add = (name: string, shape: number[], init: Init): tf.LayerVariable =>
      this.addWeight(name, shape, "float32", initializerOf(init));
    this.w = {
      query_kernel: add("query_kernel", [dim(query), H, this.keyDim], this.kernelInit),
      key_kernel: add("key_kernel", [dim(key), H, this.keyDim], this.kernelInit),
      value_kernel: add("value_kernel", [dim(value), H, this.valueDim], this.kernelInit),
      output_kernel: add("output_kernel", [H, this.valueDim, out], this.kernelInit),
    };
    if (this.useBias) {
      this.w.query_bias = add("query_bias", [H, this.keyDim], this.biasInit);
      this.w.key_bias = add("key_bias", [H, this.keyDim], this.biasInit);
      this.w.value_bias = add("value_bias", [H, this.valueDim], this.biasInit);
      this.w.output_bias = add("output_bias", [out], this.biasInit);
    }
    this.built = true;
  }

  override computeOutputShape(inputShape: tf.Shape | tf.Shape[]): tf.Shape {
    const shapes = (Array.isArray(inputShape[0]) ? inputShape : [inputShape]) as tf.Shape[];
    const q = this.parts(shapes).query;
    return [...q.slice(0, -1), this.outputDim ?? (q[q.length - 1] as number)];
  }

  /** The query's mask, as Keras' layer gives it (tfjs-layers reads null as none). */
  override computeMask(inputs: tf.Tensor | tf.Tensor[], mask?: tf.Tensor | tf.Tensor[]): tf.Tensor {
    void inputs;
    const m = Array.isArray(mask) ? mask[0] : mask;
    return (m ?? null) as tf.Tensor;
  }

  /** x [B, T, d] times kernel [d, H, k] (+ bias [H, k]): [B, H, T, k]. */
  private project(x: tf.Tensor, kernel: string, bias: string, k: number): tf.Tensor {
    const [B, T, d] = x.shape as [number, number, number];
    let y = tf.matMul(tf.reshape(x, [B * T, d]), tf.reshape(this.w[kernel]!.read(), [d, this.numHeads * k]));
    if (this.useBias) y = tf.add(y, tf.reshape(this.w[bias]!.read(), [this.numHeads * k]));
    return tf.transpose(tf.reshape(y, [B, T, this.numHeads, k]), [0, 2, 1, 3]);
  }

  override call(inputs: tf.Tensor | tf.Tensor[], kwargs: LayerKwargs): tf.Tensor {
    return tf.tidy(() => {
      const { query, value, key, mask: attention } = this.parts(inputs);
      const training = kwargs.training === true;
      const [B, Tq] = query.shape as [number, number, number];
      const Tk = key.shape[1]!;
      const q = tf.mul(this.project(query, "query_kernel", "query_bias", this.keyDim), 1 / Math.sqrt(this.keyDim));
      const k = this.project(key, "key_kernel", "key_bias", this.keyDim);
      const v = this.project(value, "value_kernel", "value_bias", this.valueDim);
      let scores = tf.matMul(q, k, false, true);
      const allowed = attendMask(
        B,
        Tq,
        Tk,
        attention,
        kwargs.mask as tf.Tensor | tf.Tensor[] | undefined,
        this.useCausalMask,
        this.selfAttention(inputs),
      );
      if (allowed) scores = tf.add(scores, tf.mul(tf.sub(1, tf.expandDims(allowed, 1)), MASKED));
      let probs = tf.softmax(scores, -1);
      if (training && this.dropout > 0) probs = tf.dropout(probs, this.dropout);
      const ctx = tf.reshape(tf.transpose(tf.matMul(probs, v), [0, 2, 1, 3]), [B * Tq, this.numHeads * this.valueDim]);
      const out = this.outputDim ?? (query.shape[2] as number);
      let y = tf.matMul(ctx, tf.reshape(this.w.output_kernel!.read(), [this.numHeads * this.valueDim, out]));
      if (this.useBias) y = tf.add(y, this.w.output_bias!.read());
      return tf.reshape(y, [B, Tq, out]);
    });
  }

  override getConfig(): tf.serialization.ConfigDict {
    return {
      ...super.getConfig(),
      numHeads: this.numHeads,
      keyDim: this.keyDim,
      valueDim: this.valueDim,
      dropout: this.dropout,
      useBias: this.useBias,
      outputShape: this.outputDim,
      useCausalMask: this.useCausalMask,
      hasAttentionMask: this.hasAttentionMask,
      kernelInitializer: serializeInitializer(this.kernelInit),
      biasInitializer: serializeInitializer(this.biasInit),
    };
  }

  static override fromConfig<T extends tf.serialization.Serializable>(
    cls: tf.serialization.SerializableConstructor<T>,
    config: tf.serialization.ConfigDict,
  ): T {
    const c = { ...config } as Record<string, unknown>;
    for (const k of ["kernelInitializer", "biasInitializer"]) c[k] = deserializeInitializer(c[k]);
    if (c.outputShape === null) delete c.outputShape;
    return new cls(c as never);
  }
}

/**
 * Where each query may attend ([B, Tq, Tk], 1 or 0), as Keras combines its masks: the attention
 * mask given, the causal mask, and the query's mask (the mask TF.js passes a layer: its first
 * input's), which in self-attention (the layer called with the query alone) is the keys' too.
 * Null when nothing is masked.
 */
export function attendMask(
  B: number,
  Tq: number,
  Tk: number,
  attention: tf.Tensor | null,
  mask: tf.Tensor | tf.Tensor[] | undefined,
  causal: boolean,
  self: boolean,
): tf.Tensor | null {
  let m: tf.Tensor | null = attention ? tf.cast(tf.greater(attention, 0), "float32") : null;
  const and = (a: tf.Tensor | null, b: tf.Tensor): tf.Tensor => (a ? tf.mul(a, b) : b);
  const qmask = Array.isArray(mask) ? mask[0] : mask;
  if (qmask) {
    const q = tf.cast(tf.greater(tf.cast(qmask, "float32"), 0), "float32");
    m = and(m, tf.broadcastTo(tf.reshape(q, [B, Tq, 1]), [B, Tq, Tk]));
    if (self) m = and(m, tf.broadcastTo(tf.reshape(q, [B, 1, Tk]), [B, Tq, Tk]));
  }
  if (causal) m = and(m, tf.broadcastTo(tf.linalg.bandPart(tf.ones([Tq, Tk]), -1, 0), [B, Tq, Tk]));
  return m;
}

tf.serialization.registerClass(MultiHeadAttention);
