import { FORMAT_CODE, type Compression, type HalfCodec, type WireFormat } from "../protocol/wire-formats";
import { bestHalfCodec } from "../collectives/half-codec";

/**
 * A worker's side of gradient compression: before each all-reduce or push, its gradient plus
 * the residual (what rounding to 16 bits left out of the last one) is rounded to the format,
 * and the new residual kept. Over many steps nothing is lost but the last residual, which is
 * why a gradient too small for fp16 on its own still moves the weights (Seide et al.'s 1-bit
 * SGD; Karimireddy et al., "Error feedback fixes SignSGD").
 */
export class ErrorFeedback {
  private readonly residual: Float32Array;
  private readonly format: number;

  constructor(
    readonly compression: Compression,
    length: number,
    private readonly codec: HalfCodec = bestHalfCodec(),
  ) {
    this.residual = new Float32Array(length);
    this.format = FORMAT_CODE[compression];
  }

  /**
   * Rounds `gradient` in place to values the format holds exactly, carrying the error to the
   * next call; `offset`: where it lies in the whole gradient (a bucket of it).
   */
  compress(gradient: Float32Array, offset = 0): void {
    this.codec.feedback(this.format, gradient, this.residual.subarray(offset, offset + gradient.length));
  }

  /**
   * A dropped step (a replica's non-finite slice, or a compressed sum that overflowed) sent
   * nothing that counts, and its residual may hold Infinity: start again from none.
   */
  clear(): void {
    this.residual.fill(0);
  }

  /** How an all-reduce of [gradient | rest] sends it: the gradient's values in 16 bits. */
  wire(gradientLength: number): WireFormat {
    return { compression: this.compression, packed: gradientLength };
  }
}
