import * as tf from "@tensorflow/tfjs";
import { ModelError } from "../../errors/errors";
import { positiveInteger } from "./checks";
import { deserializeInitializer, initializerOf, serializeInitializer, type InitializerInput } from "./initializers";

/** What `layers.positionEmbedding` takes (KerasNLP's PositionEmbedding). */
export interface PositionEmbeddingArgs {
  /** The longest sequence it embeds. */
  sequenceLength: number;
  initializer?: InitializerInput;
  name?: string;
  trainable?: boolean;
  inputShape?: Array<number | null>;
}

/**
 * A learned embedding of each position (KerasNLP's PositionEmbedding): given a sequence
 * [B, T, d] it returns the first T rows of its [sequenceLength, d] table for every sample, to be
 * added to token embeddings (`layers.add`), the input of a GPT-style model.
 */
export class PositionEmbedding extends tf.layers.Layer {
  static className = "PositionEmbedding";
  readonly sequenceLength: number;
  private readonly init: NonNullable<PositionEmbeddingArgs["initializer"]>;
  private table: tf.LayerVariable | null = null;

  /** Checks the sequence length and keeps the options; the table is made when the layer is first applied. */
  constructor(args: PositionEmbeddingArgs) {
    super(args as unknown as ConstructorParameters<typeof tf.layers.Layer>[0]);
    positiveInteger("PositionEmbedding", "sequenceLength", args.sequenceLength);
    this.sequenceLength = args.sequenceLength;
    this.init = args.initializer ?? "glorotUniform";
    this.supportsMasking = true;
  }

  override build(inputShape: tf.Shape | tf.Shape[]): void {
    const s = (Array.isArray(inputShape[0]) ? inputShape[0] : inputShape) as tf.Shape;
    this.table = this.addWeight(
      "embeddings",
      [this.sequenceLength, s[s.length - 1] as number],
      "float32",
      initializerOf(this.init),
    );
    this.built = true;
  }

  override computeOutputShape(inputShape: tf.Shape | tf.Shape[]): tf.Shape {
    return (Array.isArray(inputShape[0]) ? inputShape[0] : inputShape) as tf.Shape;
  }

  override call(inputs: tf.Tensor | tf.Tensor[]): tf.Tensor {
    return tf.tidy(() => {
      const x = Array.isArray(inputs) ? inputs[0]! : inputs;
      const [B, T, d] = x.shape as [number, number, number];
      if (T > this.sequenceLength)
        throw new ModelError(
          `${this.name}: a sequence of ${T} is longer than its sequenceLength ${this.sequenceLength}`,
        );
      const rows = tf.slice(this.table!.read(), [0, 0], [T, d]);
      return tf.broadcastTo(tf.expandDims(rows, 0), [B, T, d]);
    });
  }

  override getConfig(): tf.serialization.ConfigDict {
    return { ...super.getConfig(), sequenceLength: this.sequenceLength, initializer: serializeInitializer(this.init) };
  }

  static override fromConfig<T extends tf.serialization.Serializable>(
    cls: tf.serialization.SerializableConstructor<T>,
    config: tf.serialization.ConfigDict,
  ): T {
    const c = { ...config } as Record<string, unknown>;
    c.initializer = deserializeInitializer(c.initializer);
    return new cls(c as never);
  }
}

tf.serialization.registerClass(PositionEmbedding);
